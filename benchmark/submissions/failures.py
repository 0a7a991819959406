"""The one-line problem report shared by the submission and results validators."""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.errors import visible


@dataclass(frozen=True)
class Failure:
    """One problem found by the validator."""

    path: str
    """file or folder, relative to the folder that holds ``submissions/``."""
    problem: str
    """what is wrong, in a few words."""
    fix: str
    """what the submitter should do about it."""

    def line(self) -> str:
        r"""The one-line form printed by the CLI.

        >>> Failure("submissions/a__b", "no submission.yaml", "add one").line()
        'submissions/a__b: no submission.yaml — add one'

        A path comes from a pull request, and a problem may quote a value from it, so the whole line's
        control and format characters are escaped: a newline in a folder name cannot start a line of its
        own (a forged ``ok:``), nor can a bidi control reorder what a reader sees.

        >>> Failure("a\nok: b\u202e", "stray 'x\ry'", "remove it").line()
        "a\\nok: b\\u202e: stray 'x\\ry' — remove it"
        """
        return visible(f"{self.path}: {self.problem} — {self.fix}")
