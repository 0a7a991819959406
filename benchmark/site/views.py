"""View models: the rows each page shows, picked out of the leaderboard without computing anything.

Every function here is pure (a :class:`Board` in, plain data out) so the templates stay free of
lookups and the selection logic is testable without rendering HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from benchmark.schema import AXES
from benchmark.site import plots
from benchmark.site.board import ALL, Board, Row


@dataclass(frozen=True)
class RankedModel:
    """One model's row in a ranking table: its cells keyed by measure name."""

    slug: str
    """submission slug."""
    name: str
    """display name."""
    cells: dict[str, Row]
    """``cells[]`` rows of the leaderboard, by measure."""


@dataclass(frozen=True)
class AxisTable:
    """A ranking table for one axis on one dataset."""

    axis: str
    """activations, generation, confidence or mirroring."""
    measures: list[Row]
    """the axis's measures (columns)."""
    models: list[RankedModel]
    """rows, ordered by rank on the axis's first measure."""


def _order_key(cell: Row | None) -> tuple[float, float]:
    if cell is None:
        return (float("inf"), float("inf"))
    rank, sgs = cell.get("rank"), cell.get("sgs")
    return (float(rank) if rank is not None else float("inf"), float(sgs) if sgs is not None else float("inf"))


def ranked_models(board: Board, dataset: str, measures: Sequence[Row]) -> list[RankedModel]:
    """Complete models with their cells on ``dataset``, most stable on the first measure first."""
    ranked = []
    for model in board.complete:
        cells = {m["name"]: c for m in measures
                 if (c := board.one("cells", model=model["slug"], dataset=dataset, measure=m["name"]))}
        ranked.append(RankedModel(model["slug"], board.name(model["slug"]), cells))
    first = measures[0]["name"] if measures else ""
    return sorted(ranked, key=lambda r: (_order_key(r.cells.get(first)), r.slug))


def cells_by_rank(board: Board, dataset: str, measure: str) -> list[Row]:
    """The cells of one (dataset, measure), most stable first (unranked cells last)."""
    return sorted(board.rows("cells", dataset=dataset, measure=measure), key=lambda c: (_order_key(c), c["model"]))


def axis_tables(board: Board, dataset: str) -> list[AxisTable]:
    """One ranking table per axis for ``dataset`` (deliberately no cross-axis total)."""
    tables = []
    for axis in AXES:
        measures = board.measures_of(axis)
        if measures:
            tables.append(AxisTable(axis, measures, ranked_models(board, dataset, measures)))
    return tables


def dataset_choices(board: Board) -> list[str]:
    """``"all"`` first, then the datasets proper."""
    return [ALL, *board.datasets] if board.datasets else []


def headline_measures(board: Board) -> list[Row]:
    """The first paper measure of each axis: the one shown where space allows only four."""
    chosen = []
    for axis in AXES:
        paper = [m for m in board.measures_of(axis) if m.get("paper")] or board.measures_of(axis)
        if paper:
            chosen.append(paper[0])
    return chosen


def _pair_matrix(rows: Sequence[Row], labels: Sequence[str], a: str, b: str,
                 value: str) -> list[list[float | None]]:
    """Symmetric matrix of ``value`` over label pairs; the diagonal and missing pairs stay None."""
    index = {label: i for i, label in enumerate(labels)}
    matrix: list[list[float | None]] = [[None] * len(labels) for _ in labels]
    for row in rows:
        i, j = index.get(row[a]), index.get(row[b])
        if i is not None and j is not None:
            matrix[i][j] = matrix[j][i] = row.get(value)
    return matrix


@dataclass(frozen=True)
class Figure:
    """An inline SVG plus the measure or scope it belongs to."""

    label: str
    """what the figure is about (a measure name, a dataset)."""
    svg: Markup
    """the inline ``<svg>`` element."""


def tau_heatmaps(board: Board) -> list[Figure]:
    """Kendall τ_b between datasets, one heatmap per measure."""
    figures = []
    for measure in board.measures:
        rows = board.rows("kendall_tau", measure=measure["name"])
        if all(r.get("tau_b") is None for r in rows):
            continue  # an empty grid says nothing; the page lists these measures in words
        matrix = _pair_matrix(rows, board.datasets, "dataset_a", "dataset_b", "tau_b")
        desc = (f"Kendall tau-b between the model rankings of each pair of datasets on {measure['name']}; "
                "the same numbers are in the table below.")
        svg = plots.pair_heatmap(matrix, board.datasets, key=f"tau-{measure['name']}", title=measure["name"],
                                 desc=desc)
        figures.append(Figure(measure["name"], svg))
    return figures


def measures_without_tau(board: Board) -> list[str]:
    """Measures that have τ rows but none computable (e.g. every model tied on every dataset)."""
    names = []
    for measure in board.measures:
        rows = board.rows("kendall_tau", measure=measure["name"])
        if rows and all(r.get("tau_b") is None for r in rows):
            names.append(measure["name"])
    return names


def independence_heatmap(board: Board) -> Figure | None:
    """Spearman ρ of per-item instability between measures, all models' items pooled."""
    rows = board.rows("independence", scope="pooled")
    if not rows:
        return None
    names = [m["name"] for m in board.measures]
    matrix = _pair_matrix(rows, names, "measure_a", "measure_b", "rho")
    desc = "Spearman rho between the per-item instability of two measures, items of all models pooled."
    return Figure("pooled", plots.pair_heatmap(matrix, names, key="independence",
                                               title="Axis independence (Spearman ρ)", desc=desc))


def pareto_plot(board: Board, dataset: str = ALL) -> Figure | None:
    """Generation (BERTScore SGS) against mirroring SGS, Pareto-optimal models ringed."""
    points = [plots.Point(r["model"], r["generation"], r["mirroring"], bool(r.get("pareto_optimal")))
              for r in board.rows("pareto", dataset=dataset)
              if r.get("generation") is not None and r.get("mirroring") is not None]
    if not points:
        return None
    desc = (f"Each model's SGS on generation (BERTScore) against its SGS on response mirroring, dataset "
            f"{dataset}; lower is more stable on both; ringed points are Pareto-optimal. Table below.")
    return Figure(dataset, plots.scatter(points, key=f"pareto-{dataset}", title="Generation vs mirroring",
                                         desc=desc, xlabel="SGS bertscore (generation)",
                                         ylabel="SGS mirroring"))


def profile_plot(board: Board, slug: str) -> Figure | None:
    """One model's SGS with CI per dataset, for the headline measure of each axis."""
    series: dict[str, list[plots.Interval]] = {}
    for measure in headline_measures(board):
        series[measure["name"]] = [_interval(board.one("cells", model=slug, dataset=d, measure=measure["name"]), d)
                                   for d in dataset_choices(board)]
    if not any(i.value is not None for rows in series.values() for i in rows):
        return None
    desc = (f"SGS of {slug} on each dataset with its 95% bootstrap interval, one colour per measure; "
            "lower is more stable. The profile table lists every number.")
    return Figure(slug, plots.intervals(series, key=f"profile-{slug}", title="Instability profile", desc=desc,
                                        xlabel="SGS (scaled, lower = more stable)"))


def _interval(cell: Row | None, label: str) -> plots.Interval:
    if cell is None:
        return plots.Interval(label, None, None, None)
    return plots.Interval(label, cell.get("sgs"), cell.get("ci_low"), cell.get("ci_high"))


def significant_first(rows: Sequence[Row]) -> list[Row]:
    """Reversal rows with the significant ones first (the file's order otherwise kept)."""
    return sorted(rows, key=lambda r: not r.get("significant"))

