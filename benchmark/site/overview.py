"""The overview's leaderboard table: one row per model, one table per dataset choice.

Each row holds the model's headline measure of every axis with its interval, its baseline accuracy, the
items it was evaluated on and what the model is (:mod:`benchmark.site.facts`). Every number is a value
of ``leaderboard.json`` picked out for that dataset (``"all"`` pools every item); nothing is summed
across axes, so the table has no overall score to sort by (see :data:`NO_COMPOSITE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchmark.rows import CellRow, MeasureRow
from benchmark.site.board import ALL, Board, CellKey
from benchmark.site.facts import ModelFacts, Truncation
from benchmark.site.views import dataset_choices, headline_measures

NO_COMPOSITE = (
    "There is no overall score and no overall rank: the four axes measure different things, and a sum or "
    "average of them would hide both the trade-offs between axes and the reversals between datasets. "
    "Sort by the column that matters for your use."
)
"""Why the table has no composite column (the methodology's "no overall winner")."""


@dataclass(frozen=True)
class TableRow:
    """One model on one dataset choice."""

    slug: str
    name: str
    complete: bool
    """has results (a pending model shows its facts and no numbers)."""
    cells: Mapping[str, CellRow | None]
    """the ``cells[]`` row of each headline measure, by measure name."""
    accuracy: float | None
    """share of baseline responses judged correct (``accuracy[]``)."""
    items: int | None
    """items the model was evaluated on here (largest ``n_items`` of its cells)."""
    facts: ModelFacts
    """what the model is."""
    truncation: Truncation | None
    """responses cut at the token cap on this dataset choice."""


@dataclass(frozen=True)
class DatasetTable:
    """The table for one dataset choice."""

    dataset: str
    """dataset name or ``"all"``."""
    rows: list[TableRow]
    """every model, by display name."""

    @property
    def evaluated(self) -> list[TableRow]:
        """Rows with at least one number."""
        return [r for r in self.rows if r.items is not None]

    @property
    def item_range(self) -> tuple[int, int] | None:
        """Fewest and most items behind a model's numbers (None when no model has any)."""
        counts = [r.items for r in self.evaluated if r.items is not None]
        return (min(counts), max(counts)) if counts else None


@dataclass(frozen=True)
class LeaderboardTable:
    """Everything the overview's table shows."""

    measures: list[MeasureRow]
    """the headline measure of each axis (columns)."""
    tables: list[DatasetTable]
    """``"all"`` first, then each dataset."""
    pending: int
    """models submitted but not evaluated."""


def table_measures(board: Board) -> list[MeasureRow]:
    """The file's ``headline_measures`` (one per axis), else the first paper measure of each axis."""
    named = [str(n) for n in board.data.get("headline_measures") or []]
    found = [m for n in named if (m := board.measures.first(name=n)) is not None]
    return found or headline_measures(board)


def _row(board: Board, dataset: str, slug: str, measures: list[MeasureRow], facts: ModelFacts) -> TableRow:
    cells = {m["name"]: board.cell(CellKey(slug, dataset, m["name"])) for m in measures}
    counts = [c["n_items"] for c in cells.values() if c is not None and c.get("n_items") is not None]
    accuracy = board.document.accuracy.first(model=slug, dataset=dataset)
    model = board.models.first(slug=slug)
    complete = bool(model and model.get("status") == "complete")
    share, items = accuracy.get("accuracy") if accuracy else None, max(counts) if counts else None
    return TableRow(
        slug, board.name(slug), complete, cells, share, items, facts, facts.truncation.get(dataset)
    )


def leaderboard_table(board: Board, facts: Mapping[str, ModelFacts]) -> LeaderboardTable:
    """One table per dataset choice (``"all"`` first), one row per model of the board; ``facts`` is
    :func:`benchmark.site.facts.all_facts` of the board."""
    measures = table_measures(board)
    slugs = sorted((m["slug"] for m in board.models), key=lambda s: (board.name(s).lower(), s))
    tables = [
        DatasetTable(dataset, [_row(board, dataset, slug, measures, facts[slug]) for slug in slugs])
        for dataset in dataset_choices(board) or [ALL]  # a board with no results still lists its models
    ]
    pending = sum(1 for m in board.models if m.get("status") != "complete")
    return LeaderboardTable(measures, tables, pending)


CUT_FLAG = 0.9
"""A model × dataset cell whose responses are cut at the token cap more often than this is flagged: its
generation and mirroring numbers compare truncated answers."""


@dataclass(frozen=True)
class ModelTrust:
    """What limits one model's numbers."""

    name: str
    slug: str
    """submission slug (the key of its ``accuracy[]`` rows)."""
    cut: Truncation | None
    """responses cut at the token cap, over every dataset."""
    accuracy: float | None
    """share of baseline answers judged correct, over every dataset."""
    items: int | None
    """items behind ``accuracy`` (and every pooled number)."""
    flagged: tuple[str, ...]
    """datasets where more than ``CUT_FLAG`` of its responses are cut."""


@dataclass(frozen=True)
class Trust:
    """How far to trust the board, stated above its table."""

    stand_ins: tuple[tuple[str, str], ...]
    """(dataset, the authors' dataset it replaces) for every dataset that is not one of the paper's."""
    datasets: int
    items_per_dataset: tuple[int, int] | None
    """fewest and most items per dataset behind a model's numbers."""
    models: tuple[ModelTrust, ...]
    """one per evaluated model, by display name."""
    pairs: tuple[int, int] = (0, 0)
    """(not significant, tested) pairwise comparisons: model pair × dataset × measure."""

    @property
    def between_models(self) -> str:
        """:func:`between_models` of this board."""
        return between_models(len(self.models), *self.pairs)


def between_models(evaluated: int, not_significant: int = 0, tested: int = 0) -> str:
    """What the board's small samples mean for comparing its models, counted from its pairwise verdicts
    (a share, never "most" by assumption: on the paper board most are significant); a board of one model
    has no difference between models to be or not be significant.

    >>> print(between_models(4, 201, 378))  # doctest: +NORMALIZE_WHITESPACE
    intervals are wide: 201 of 378 differences between models (pair × dataset × measure) are not
    significant (see the grid below).
    >>> between_models(1)
    'intervals are wide; with one model on this board there is nothing to compare between models yet.'
    """
    if evaluated >= 2 and tested:
        return (
            f"intervals are wide: {not_significant:,} of {tested:,} differences between models (pair × "
            "dataset × measure) are not significant (see the grid below)."
        )
    count = "no model" if evaluated == 0 else "one model" if evaluated == 1 else f"{evaluated} models"
    return f"intervals are wide; with {count} on this board there is nothing to compare between models yet."


def pair_verdicts(rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(not significant, tested) over leaderboard.json's ``pairwise`` rows (an untested row counts in
    neither).

    >>> pair_verdicts([{"verdict": "significant"}, {"verdict": "not significant"}, {"verdict": None}])
    (1, 2)
    """
    verdicts = [r.get("verdict") for r in rows]
    tested = sum(v in ("significant", "not significant") for v in verdicts)
    return sum(v == "not significant" for v in verdicts), tested


def trust(
    table: LeaderboardTable, stands_in_for: Mapping[str, str | None], pairs: tuple[int, int] = (0, 0)
) -> Trust:
    """The limits of the board, from its own tables: stand-in datasets (``stands_in_for``: dataset -> the
    variant set's ``stands_in_for``), items per dataset, and per model the share of responses cut at the
    token cap, baseline accuracy with its n, and the datasets where nearly every response is cut."""
    pooled = next((t for t in table.tables if t.dataset == ALL), table.tables[0])
    per_dataset = [t for t in table.tables if t.dataset != ALL]
    counts = [r.items for t in per_dataset for r in t.evaluated if r.items is not None]
    models = []
    for row in pooled.evaluated:
        flagged = tuple(
            t.dataset
            for t in per_dataset
            for r in t.rows
            if r.slug == row.slug and r.truncation is not None and (r.truncation.share or 0.0) > CUT_FLAG
        )
        models.append(ModelTrust(row.name, row.slug, row.truncation, row.accuracy, row.items, flagged))
    stand_ins = tuple((d, s) for d, s in sorted(stands_in_for.items()) if s and not s.startswith("itself"))
    span = (min(counts), max(counts)) if counts else None
    return Trust(stand_ins, len(stands_in_for), span, tuple(models), pairs)
