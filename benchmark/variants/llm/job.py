"""One cell the model rewriter is asked for (a :class:`Job`), and how its rewrite becomes a prompt."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    """One LLM variant (a cell) to make."""

    dataset: str
    item_id: str
    rank: int
    original: str
    """the baseline prompt the rewriter sees (wrapper included)."""
    answers: tuple[str, ...]
    family: str
    strength: float
    item_text: str = ""
    """the item's own text: its numbers, names and quotations must survive (defaults to ``original``)."""
    template: str = "{text}"
    """the item's wrapper: a length rewrite edits the item's text and is put back into it."""
    keep: tuple[str, ...] = ()
    """wrapper content a form rewrite of the whole request must keep too (e.g. a Jeopardy category)."""

    def __post_init__(self) -> None:
        if not self.item_text:
            object.__setattr__(self, "item_text", self.original)

    @property
    def source(self) -> str:
        """What the rewriter rewrites: the item's own text for length, the whole request for form."""
        return self.item_text if self.family == "length" else self.original

    def prompt(self, rewrite: str) -> str:
        """The variant's prompt from a cleaned rewrite of :attr:`source`."""
        return variant_prompt(self.family, self.template, rewrite)

    @property
    def variant_id(self) -> str:
        return f"{self.family}/global/{self.strength:g}"

    @property
    def cell(self) -> tuple[str, str, str]:
        return (self.dataset, self.item_id, self.variant_id)


def variant_prompt(family: str, template: str, rewrite: str) -> str:
    """A length rewrite is of the item's own text and goes back into its wrapper; form rewrites all of it.

    >>> variant_prompt("length", "Q: {text}", "Who?"), variant_prompt("form", "Q: {text}", "Tell me who.")
    ('Q: Who?', 'Tell me who.')
    """
    return template.replace("{text}", rewrite) if family == "length" else rewrite
