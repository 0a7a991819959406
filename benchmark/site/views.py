"""View models: the rows each page shows, picked out of the leaderboard without computing anything.

Every function here is pure (a :class:`Board` in, plain data out) so the templates stay free of
lookups and the selection logic is testable without rendering HTML.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from markupsafe import Markup

from benchmark.axes.measures import measure_label
from benchmark.documents import DatasetEntry
from benchmark.rows import CellRow, MeasureRow, PairwiseRow, PerItemRow
from benchmark.schema import AXES
from benchmark.site import plots
from benchmark.site.board import ALL, Board, CellKey
from benchmark.site.findings import pair_verdict

HEATMAP_MIN_MODELS = 3
"""With two models a τ heatmap carries one bit per cell (same order or not): the sentences say it better."""


@dataclass(frozen=True)
class RankedModel:
    """One model's row in a ranking table: its cells keyed by measure name."""

    slug: str
    name: str
    cells: dict[str, CellRow]
    """``cells[]`` rows of the leaderboard, by measure."""


@dataclass(frozen=True)
class AxisTable:
    """A ranking table for one axis on one dataset."""

    axis: str
    """activations, generation, confidence or mirroring."""
    measures: list[MeasureRow]
    """the axis's measures (columns)."""
    models: list[RankedModel]
    """rows, ordered by rank on the axis's first measure."""


def _order_key(cell: CellRow | None) -> tuple[float, float]:
    rank, sgs = (cell.get("rank"), cell.get("sgs")) if cell else (None, None)
    return (math.inf if rank is None else float(rank), math.inf if sgs is None else float(sgs))


def ranked_models(board: Board, dataset: str, measures: Sequence[MeasureRow]) -> list[RankedModel]:
    """Complete models with their cells on ``dataset``, most stable on the first measure first."""
    ranked = [
        RankedModel(
            slug,
            board.name(slug),
            {m["name"]: c for m in measures if (c := board.cell(CellKey(slug, dataset, m["name"])))},
        )
        for slug in (model["slug"] for model in board.complete)
    ]
    first = measures[0]["name"] if measures else ""
    return sorted(ranked, key=lambda r: (_order_key(r.cells.get(first)), r.slug))


def cells_by_rank(board: Board, dataset: str, measure: str) -> list[CellRow]:
    """The cells of one (dataset, measure), most stable first (unranked cells last)."""
    return sorted(
        board.document.cells.where(dataset=dataset, measure=measure),
        key=lambda c: (_order_key(c), c["model"]),
    )


def axis_tables(board: Board, dataset: str) -> list[AxisTable]:
    """One ranking table per axis for ``dataset`` (deliberately no cross-axis total)."""
    return [AxisTable(a, ms, ranked_models(board, dataset, ms)) for a in AXES if (ms := board.measures_of(a))]


def dataset_choices(board: Board) -> list[str]:
    """``"all"`` first, then the datasets proper."""
    return [ALL, *board.datasets] if board.datasets else []


def headline_measures(board: Board) -> list[MeasureRow]:
    """The first paper measure of each axis: the one shown where space allows only four."""
    chosen = (
        [m for m in board.measures_of(axis) if m.get("paper")] or board.measures_of(axis) for axis in AXES
    )
    return [measures[0] for measures in chosen if measures]


def _pair_matrix(
    rows: Sequence[Mapping[str, object]], labels: Sequence[str], a: str, b: str, value: str
) -> list[list[float | None]]:
    """Symmetric matrix of ``value`` over label pairs; the diagonal and missing pairs stay None."""
    index = {label: i for i, label in enumerate(labels)}
    matrix: list[list[float | None]] = [[None] * len(labels) for _ in labels]
    for row in rows:
        i, j = index.get(str(row[a])), index.get(str(row[b]))
        number = row.get(value)
        if i is not None and j is not None:
            matrix[i][j] = matrix[j][i] = float(number) if isinstance(number, int | float) else None
    return matrix


@dataclass(frozen=True)
class Figure:
    """A plot drawn twice, for wide screens and for phones, plus the measure or scope it belongs to."""

    label: str
    """what the figure is about (a measure name, a dataset)."""
    wide: Markup
    """the inline ``<svg>`` for screens wider than a phone."""
    narrow: Markup
    """the same plot :data:`plots.NARROW_WIDTH` wide, so its text stays legible on a 390 px phone."""

    @property
    def svg(self) -> Markup:
        """Both variants; the stylesheet shows the one that fits the screen."""
        return Markup('<div class="plot-wide">{}</div><div class="plot-narrow">{}</div>').format(
            self.wide, self.narrow
        )


def _both(label: str, draw: Callable[..., Markup], *args: Any, key: str, **kwargs: Any) -> Figure:
    """``draw`` at its normal size and as the narrow variant (its own SVG ids)."""
    return Figure(
        label, draw(*args, key=key, **kwargs), draw(*args, key=f"{key}-narrow", narrow=True, **kwargs)
    )


def tau_heatmaps(board: Board) -> list[Figure]:
    """Kendall τ_b between datasets, one heatmap per measure (only with ≥ ``HEATMAP_MIN_MODELS`` models)."""
    figures: list[Figure] = []
    if len(board.complete) < HEATMAP_MIN_MODELS:
        return figures
    for measure in board.measures:
        rows = board.document.kendall_tau.where(measure=measure["name"])
        if all(r.get("tau_b") is None for r in rows):
            continue  # an empty grid says nothing; the page lists these measures in words
        matrix = _pair_matrix(rows, board.datasets, "dataset_a", "dataset_b", "tau_b")
        label = measure_label(measure["name"])
        desc = (
            f"Kendall tau-b between the model rankings of each pair of datasets on {label}; "
            "1 = same order, -1 = reversed; the same numbers are in the table below."
        )
        title = f"Ranking agreement between datasets: {label}"
        key = f"tau-{measure['name']}"
        figure = _both(
            measure["name"], plots.pair_heatmap, matrix, board.datasets, key=key, title=title, desc=desc
        )
        figures.append(figure)
    return figures


def measures_without_tau(board: Board) -> list[str]:
    """Measures that have τ rows but none computable (e.g. every model tied on every dataset)."""
    rows = {m["name"]: board.document.kendall_tau.where(measure=m["name"]) for m in board.measures}
    return [name for name, found in rows.items() if found and all(r.get("tau_b") is None for r in found)]


def independence_heatmap(board: Board) -> Figure | None:
    """Spearman ρ of per-item instability between measures over all models: the per-model ρ combined
    (``scope="combined"``, schema 2) or, in older files, all models' items pooled."""
    combined = bool(board.document.independence.where(scope="combined"))
    scope = "combined" if combined else "pooled"
    rows = board.document.independence.where(scope=scope)
    if not rows:
        return None
    names = [m["name"] for m in board.measures]
    matrix = _pair_matrix(rows, names, "measure_a", "measure_b", "rho")
    how = "each model's rho combined on Fisher's z scale" if combined else "items of all models pooled"
    desc = (
        f"Spearman rho between the per-item instability of every two measures, {how}; "
        "1 = the two measures rank items the same way, 0 = unrelated."
    )
    title = "How much do two measures agree about which items are unstable?"
    labels = [measure_label(n) for n in names]
    return _both(scope, plots.pair_heatmap, matrix, labels, key="independence", title=title, desc=desc)


def pareto_plot(board: Board, dataset: str = ALL) -> Figure | None:
    """Generation (BERTScore SGS) against mirroring SGS, Pareto-optimal models ringed."""
    points = [
        plots.Point(board.name(r["model"]), generation, mirroring, bool(r.get("pareto_optimal")))
        for r in board.document.pareto.where(dataset=dataset)
        if (generation := r.get("generation")) is not None and (mirroring := r.get("mirroring")) is not None
    ]
    if not points:
        return None
    desc = (
        f"Each model's SGS on generation (BERTScore) against its SGS on response mirroring, "
        f"{'all datasets pooled' if dataset == ALL else dataset}; lower is steadier on both; ringed "
        "points are Pareto-optimal. Table below."
    )
    return _both(
        dataset,
        plots.scatter,
        points,
        key=f"pareto-{dataset}",
        title="Is the steadier generator the worse mirror?",
        desc=desc,
        xlabel="SGS meaning (BERTScore), lower = steadier",
        ylabel="SGS style mirroring, lower = steadier",
    )


def profile_plot(board: Board, slug: str) -> Figure | None:
    """One model's SGS with CI on every measure, one row per measure, one marker per dataset."""
    series = {
        "all datasets" if dataset == ALL else dataset: [
            _interval(board.cell(CellKey(slug, dataset, m["name"])), measure_label(m["name"]))
            for m in board.measures
        ]
        for dataset in dataset_choices(board)
    }
    if not any(i.value is not None for rows in series.values() for i in rows):
        return None
    desc = (
        f"SGS of {board.name(slug)} on every measure (rows) and dataset (marker shape and colour), with 95% "
        "bootstrap intervals; SGS is the mean instability of an item divided by the measure's scale R, so "
        "measures share one axis; lower is steadier. The profile table lists every number."
    )
    return _both(
        slug,
        plots.intervals,
        series,
        key=f"profile-{slug}",
        title=f"Instability of {board.name(slug)}",
        desc=desc,
        xlabel="SGS (instability divided by the measure's scale; lower = steadier)",
    )


def _interval(cell: CellRow | None, label: str) -> plots.Interval:
    if cell is None:
        return plots.Interval(label, None, None, None)
    return plots.Interval(label, cell.get("sgs"), cell.get("ci_low"), cell.get("ci_high"))


@dataclass(frozen=True)
class CompareRow:
    """One (dataset, measure) of a two-model comparison."""

    dataset: str
    """dataset name or ``"all"``."""
    measure: MeasureRow
    """the measure's row of ``measures[]``."""
    cell_a: CellRow | None
    cell_b: CellRow | None
    pair: PairwiseRow | None
    """the ``pairwise[]`` row of the two (its diff is SGS of the file's model_a minus model_b)."""
    verdict: tuple[str, str | None]
    """(status, steadier slug) of the paired test of the two (findings.pair_verdict)."""
    diff: Difference
    """SGS of the page's first model minus its second, with its interval (the pair row, read that way)."""


class Difference(NamedTuple):
    """A difference of two models' SGS with its 95 % interval, in the order a page shows them."""

    value: float | None
    low: float | None
    high: float | None


def oriented(pair: PairwiseRow | None, first: str) -> Difference:
    """The pair row's difference as ``first`` minus the other model: a pair row stores model_a − model_b
    (slugs sorted), so for the other order the difference and its interval change sign.

    >>> row = {"model_a": "a", "model_b": "b", "diff": -0.5, "ci_low": -0.75, "ci_high": -0.25}
    >>> oriented(row, "a"), oriented(row, "b")
    (Difference(value=-0.5, low=-0.75, high=-0.25), Difference(value=0.5, low=0.25, high=0.75))
    """
    if pair is None:
        return Difference(None, None, None)
    value, low, high = pair.get("diff"), pair.get("ci_low"), pair.get("ci_high")
    if pair.get("model_a") == first:
        return Difference(value, low, high)
    return Difference(*(None if v is None else -float(v) for v in (value, high, low)))


@dataclass(frozen=True)
class ItemDifference:
    """An item on which two models' instability differs much."""

    dataset: str
    item_id: str
    """item id (free text)."""
    rank: int | None
    """item rank, for the link to its page (None when the set is not available)."""
    measure: str
    s_a: float
    """s_X(i) of model A."""
    s_b: float
    """s_X(i) of model B."""


@dataclass(frozen=True)
class Comparison:
    """Everything the page of one model pair shows."""

    slug_a: str
    """the model the reader picked first (shown first everywhere on the page)."""
    slug_b: str
    """the model picked second."""
    rows: list[CompareRow]
    """every dataset (then all) × measure."""
    items: list[ItemDifference]
    """items where the two differ most, per dataset."""

    @property
    def page(self) -> str:
        """File name of the pair's page under ``compare/``."""
        return f"{self.slug_a}--{self.slug_b}.html"


def model_pairs(board: Board, *, both_orders: bool = False) -> list[tuple[str, str]]:
    """Every pair of complete models, sorted slugs (with ``both_orders``, each pair both ways round)."""
    slugs = sorted(m["slug"] for m in board.complete)
    pairs = [(a, b) for i, a in enumerate(slugs) for b in slugs[i + 1 :]]
    return [*pairs, *((b, a) for a, b in pairs)] if both_orders else pairs


def comparison(
    board: Board,
    slug_a: str,
    slug_b: str,
    per_item_a: Sequence[PerItemRow],
    per_item_b: Sequence[PerItemRow],
    ranks: dict[tuple[str, str], int],
    *,
    per_dataset: int = 5,
) -> Comparison:
    """Two models side by side on every dataset × measure, and the items where they differ most.

    ``per_item_*`` are the ``per_item`` rows of each model's summary.json (s_X(i) per item and measure);
    the items listed are those with the largest |s_A(i) − s_B(i)| per dataset (the two published numbers
    side by side, sorted; nothing is estimated).
    """
    low, high = sorted((slug_a, slug_b))
    rows = []
    for dataset in dataset_choices(board):
        for m in board.measures:
            pair = board.document.pairwise.first(
                dataset=dataset, measure=m["name"], model_a=low, model_b=high
            )
            a, b = (board.cell(CellKey(slug, dataset, m["name"])) for slug in (slug_a, slug_b))
            rows.append(CompareRow(dataset, m, a, b, pair, pair_verdict(pair), oriented(pair, slug_a)))
    b_values = {(r["dataset"], r["item_id"], r["measure"]): r.get("s") for r in per_item_b}
    found: dict[str, list[ItemDifference]] = {}
    for r in per_item_a:
        dataset, item = r["dataset"], str(r["item_id"])
        s_a, s_b = r.get("s"), b_values.get((dataset, r["item_id"], r["measure"]))
        if isinstance(s_a, (int, float)) and isinstance(s_b, (int, float)):
            difference = ItemDifference(dataset, item, ranks.get((dataset, item)), r["measure"], s_a, s_b)
            found.setdefault(dataset, []).append(difference)
    items: list[ItemDifference] = []
    for dataset in sorted(found):
        items += sorted(found[dataset], key=lambda d: (-abs(d.s_a - d.s_b), d.item_id, d.measure))[
            :per_dataset
        ]
    return Comparison(slug_a, slug_b, rows, items)


@dataclass(frozen=True)
class DatasetInfo:
    """Where a dataset comes from, from the variant set's manifest."""

    name: str
    source: str
    """archive and member the items were read from."""
    license: str
    """licence as the manifest states it."""
    items: int | None
    """items in the variant set."""
    rows: int | None
    """variant rows (prompts) in the set."""
    stands_in_for: str
    """the paper's dataset it replaces."""


def dataset_info(name: str, entry: DatasetEntry | None) -> DatasetInfo | None:
    """The manifest's description of one dataset, or None when the set (or the dataset) is absent.

    >>> source = {"archive": "a==1", "member": "x.json", "stands_in_for": "TruthfulQA"}
    >>> e = DatasetEntry(file="data/x.parquet", rows=900, items=64, license="MIT", source=source)
    >>> dataset_info("x", e).stands_in_for, dataset_info("x", e).source, dataset_info("x", None)
    ('TruthfulQA', 'a==1 · x.json', None)
    """
    if entry is None:
        return None
    where = " · ".join(part for part in (entry.archive, entry.member) if part)
    return DatasetInfo(
        name,
        where or "not recorded",
        entry.license or "not recorded",
        entry.items,
        entry.rows,
        entry.stands_in_for or "not recorded",
    )


def pareto_sentence(board: Board) -> str | None:
    """Whether this data shows the paper's trade-off (the steadier generator mirrors more), in words.

    >>> b = Board.of({"models": [{"slug": "a", "name": "A"}, {"slug": "b", "name": "B"}], "pareto": [
    ...   {"dataset": "all", "model": "a", "generation": 0.1, "mirroring": 0.5, "pareto_optimal": True},
    ...   {"dataset": "all", "model": "b", "generation": 0.3, "mirroring": 0.2, "pareto_optimal": True}]})
    >>> pareto_sentence(b).split(": ", 1)
    ['Here, all datasets pooled', 'A has the steadiest generation and B the steadiest mirroring, the \
trade-off the paper reports.']
    """
    rows = [
        r
        for r in board.document.pareto.where(dataset=ALL)
        if None not in (r.get("generation"), r.get("mirroring"))
    ]
    if len(rows) < 2:
        return None
    gen = min(rows, key=lambda r: (r["generation"], r["model"]))["model"]
    mir = min(rows, key=lambda r: (r["mirroring"], r["model"]))["model"]
    if gen == mir:
        return (
            f"Here, all datasets pooled: {board.name(gen)} is steadiest on both generation and mirroring, so "
            "this data does not show the paper's trade-off (differences may not be significant; see the "
            "dataset pages)."
        )
    return (
        f"Here, all datasets pooled: {board.name(gen)} has the steadiest generation and {board.name(mir)} "
        "the steadiest mirroring, the trade-off the paper reports."
    )
