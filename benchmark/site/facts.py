"""What each model is: size, base or instruct, prompt format, quantisation, token cap and truncation.

``leaderboard.json`` carries them: ``models[].run`` (written by ``sago analyze`` from submission.yaml,
run.json and the records: :mod:`benchmark.stats.facts`). This module turns that block into the site's
``ModelFacts``; it counts from the files itself only for a model row without it (a pending model, whose
declared facts come from submission.yaml).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.errors import SagoError
from benchmark.rows import ModelRow, RunRow
from benchmark.site.board import Board
from benchmark.stats.facts import prompt_format, quantisation, tuning_of
from benchmark.submissions import Submission, load_submission


@dataclass(frozen=True)
class Truncation:
    """How many responses stopped at the token cap instead of an end-of-sequence token."""

    cut: int
    """responses that reached ``max_new_tokens``."""
    total: int
    """responses recorded."""
    degenerate: int | None = None
    """cut responses that end in a loop (``benchmark.stats.validity.degenerate``; None: not recorded)."""

    @property
    def share(self) -> float | None:
        """``cut / total`` (None without responses)."""
        return self.cut / self.total if self.total else None


@dataclass(frozen=True)
class ModelFacts:
    """One model's description for the leaderboard table and its page."""

    slug: str
    parameters: int | None
    """parameter count from submission.yaml."""
    tuning: str | None
    """``"base"`` or ``"instruct"`` (None: neither declared nor evident from the name)."""
    tuning_declared: bool
    """``tuning`` comes from submission.yaml (else from the model's name)."""
    prompt_format: str | None
    """``"chat template"``, ``"raw"`` or, before a run, what the setting asks for."""
    quantisation: str | None
    """e.g. ``"GGUF Q4_1"`` or ``"none"`` (None: not recorded)."""
    dtype: str | None
    """dtype the weights ran in (run.json, else submission.yaml)."""
    token_cap: int | None
    """``max_new_tokens`` of the run's profile."""
    truncation: Mapping[str, Truncation] = field(default_factory=dict)
    """per dataset, and ``"all"`` for every dataset together."""

    @property
    def size(self) -> str:
        """The parameter count in words: ``135M``, ``7.62B``."""
        return readable_count(self.parameters)


def readable_count(value: int | None) -> str:
    """A parameter count as people write it (three significant digits).

    >>> readable_count(134515008), readable_count(7615616512), readable_count(10**9), readable_count(None)
    ('135M', '7.62B', '1B', '–')
    """
    if value is None or value <= 0:
        return "\u2013"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return str(value)


def _parameters(model: ModelRow) -> int | None:
    value = model.get("parameters")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _from_run(model: ModelRow, run: RunRow) -> ModelFacts:
    """The facts ``sago analyze`` stored in the row."""
    return ModelFacts(
        model["slug"],
        _parameters(model),
        run["tuning"],
        run["tuning_declared"],
        run["prompt_format"],
        run["quantisation"],
        run["dtype"],
        run["token_cap"],
        {t["dataset"]: Truncation(t["cut"], t["total"], t.get("degenerate")) for t in run["truncated"]},
    )


def _declared(model: ModelRow, submissions_root: Path) -> ModelFacts:
    """What submission.yaml and the model's names say, for a row without a ``run`` block."""
    submission: Submission | None
    try:
        submission = load_submission(model["slug"], submissions_root)
    except SagoError:
        submission = None  # `sago submissions validate` reports it
    tuning, declared = tuning_of(submission, (str(model.get("name") or ""), model["slug"]))
    dtype = model.get("dtype")
    return ModelFacts(
        model["slug"],
        _parameters(model),
        tuning,
        declared,
        prompt_format(None, str(model.get("chat_template") or "")),
        quantisation(submission),
        str(dtype) if dtype else None,
        None,
    )


def model_facts(board: Board, model: ModelRow, submissions_root: Path) -> ModelFacts:
    """The facts of one model of ``board``: its stored ``run`` block, else what it declares."""
    run = model.get("run")
    if model.get("status") == "complete" and isinstance(run, Mapping):
        try:
            return _from_run(model, run)
        except (KeyError, TypeError, AttributeError):
            pass  # a block of another shape: show what the model declares (facts "not recorded")
    return _declared(model, submissions_root)


def all_facts(board: Board, submissions_root: Path) -> dict[str, ModelFacts]:
    """:func:`model_facts` of every model of the board, by slug."""
    return {m["slug"]: model_facts(board, m, submissions_root) for m in board.models}


def percent(share: float | None) -> str:
    """A share in per cent for a table cell.

    >>> percent(0.0), percent(0.123456), percent(1.0), percent(None), percent(0.0004)
    ('0 %', '12.3 %', '100 %', '–', '0.04 %')
    """
    if share is None or not math.isfinite(share):
        return "\u2013"
    value = 100 * share
    return f"{value:.0f} %" if value in (0, 100) else f"{value:.3g} %"
