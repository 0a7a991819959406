"""The politeness-mirroring judges, by name: ``$SAGO_POLITENESS_JUDGE`` and ``sago analyze --judge``.

A judge is one :class:`JudgeSpec` in :data:`JUDGES`; its builder imports the judge's module only when
that judge is chosen (a function-level import, which tests/test_import_graph.py sees), so reading the
names (a ``--help``) loads no model code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmark.errors import SagoError
from benchmark.registry import Registry

if TYPE_CHECKING:
    from benchmark.axes.politeness import PolitenessJudge

Built = tuple["PolitenessJudge", str]
"""a judge and the label the deltas' settings record for it."""


@dataclass(frozen=True)
class JudgeSpec:
    """One politeness judge: its name, what builds it, and what it is."""

    name: str
    """what ``$SAGO_POLITENESS_JUDGE`` names it by (the part before any ``:``)."""
    make: Callable[[str], Built]
    """its builder: (:attr:`argument`'s value, "" when it takes none) -> (judge, label)."""
    about: str
    """what it is, in ``--judge``'s help."""
    argument: str = ""
    """what follows the ``:`` (``"<model>"``); empty: the judge takes none."""

    @property
    def form(self) -> str:
        """How it is written: ``llm``, ``openai:<model>``."""
        return f"{self.name}:{self.argument}" if self.argument else self.name

    def build(self, argument: str = "") -> Built:
        """The judge, built now (its module imported on this first use).

        Raises:
            SagoError: an argument is missing or not taken, or the builder refuses it.
        """
        if bool(argument) != bool(self.argument):
            raise SagoError(f"judge {self.name!r} is written {self.form}")
        return self.make(argument)


def _markers(_: str) -> Built:
    from benchmark.axes.politeness import CourtesyMarkerJudge

    return CourtesyMarkerJudge(), "CourtesyMarkerJudge"


def _packaged(_: str) -> Built:
    from benchmark.axes.llm_judge import packaged_judge

    return packaged_judge()


def _endpoint(model: str) -> Built:
    from benchmark.axes.api_judge import api_judge

    judge = api_judge(model)
    return judge, judge.label


DEFAULT_JUDGE = "courtesy-markers"
JUDGES: Registry[JudgeSpec] = Registry("politeness judge")
JUDGES.add(JudgeSpec(DEFAULT_JUDGE, _markers, "the default: the kinds of courtesy marker in each response"))
JUDGES.add(
    JudgeSpec(
        "llm",
        _packaged,
        "the packaged local judge, Qwen2.5-Coder-1.5B-Instruct read through its YES/NO logits, loaded on the "
        "first row it judges",
    )
)
JUDGES.add(
    JudgeSpec(
        "openai",
        _endpoint,
        "the authors' gpt-4o-mini judge through any OpenAI-compatible endpoint ($SAGO_JUDGE_BASE_URL, "
        "default https://api.openai.com; key in the variable $SAGO_JUDGE_KEY_ENV names, default "
        "OPENAI_API_KEY)",
        argument="<model>",
    )
)


def build_judge(value: str) -> Built:
    """The judge ``value`` names (``courtesy-markers``, ``llm``, ``openai:gpt-4o-mini``), built.

    >>> build_judge("courtesy-markers")[1]
    'CourtesyMarkerJudge'
    >>> build_judge("openia:gpt-4o-mini")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    benchmark.errors.SagoError: unknown politeness judge 'openia'; did you mean 'openai'? (known: ...)
    """
    kind, _, argument = value.partition(":")
    return JUDGES.get(kind).build(argument)


def judges_help() -> str:
    """``--judge``'s help: every judge as it is written, with what it is."""
    return "; ".join(f"{spec.form} ({spec.about})" for spec in JUDGES.entries()) + "."
