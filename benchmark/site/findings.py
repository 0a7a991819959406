"""What the leaderboard found, in words: the dataset × axis grid, the reversals and the headline.

Pure functions of ``leaderboard.json`` (a :class:`Board`): every verdict here is a test result the file
already holds, corrected for multiple comparisons by ``sago analyze``; this module only selects, counts
and words them. The site's overview shows :func:`headline`, so a sentence about the results is never
written by hand (the README's results prose comes from the leaderboard's ``claims``, written by
:mod:`benchmark.stats.claims`).

Significance is read only from corrected p-values (``pairwise[].p_holm``, ``reversals[].significant``,
``cells[].tests[].significant_holm``) at the file's ``alpha``; a comparison ``sago analyze`` marks as not
testable (too few items for the test to reach ``alpha``) says so instead of "no difference". Each axis is
judged on its headline measure (``headline_measures``), the one the reversal tests use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmark.axes.measures import measure_label
from benchmark.rows import PairwiseRow, ReversalRow
from benchmark.schema import AXES
from benchmark.site.board import ALL, Board
from benchmark.site.labels import axis_label

ALPHA = 0.05
"""Significance level of every verdict (on corrected p-values)."""
STEADIER, NO_DIFFERENCE, NOT_TESTABLE, MIXED, NO_DATA = (
    "steadier",
    "no significant difference",
    "not testable",
    "mixed",
    "no data",
)


@dataclass(frozen=True)
class Verdict:
    """Which model is steadier on one (dataset, measure), or why none is named."""

    dataset: str
    """dataset name or ``"all"``."""
    measure: str
    """measure name."""
    status: str
    """STEADIER, NO_DIFFERENCE, NOT_TESTABLE or NO_DATA."""
    leader: str | None
    """slug of the model steadier than every other one (status STEADIER), else None."""
    p: float | None
    """largest corrected p of the leader's (or the most stable model's) comparisons."""
    n_items: int | None
    """fewest shared items behind those comparisons."""


@dataclass(frozen=True)
class GridCell:
    """One cell of the dataset × axis grid: the verdicts of the axis's measures, summarised."""

    dataset: str
    """dataset name or ``"all"``."""
    axis: str
    """axis name."""
    status: str
    """STEADIER (one model on every significant measure), MIXED, NO_DIFFERENCE, NOT_TESTABLE or NO_DATA."""
    leader: str | None
    """the steadier model when status is STEADIER."""
    wins: int
    """measures of the axis on which ``leader`` is significantly steadier."""
    verdicts: tuple[Verdict, ...]
    """one per measure of the axis, schema order."""


@dataclass(frozen=True)
class Reversal:
    """A pair of models whose order flips between two datasets, told in words."""

    measure: str
    """measure name."""
    first: str
    """slug of the model steadier on ``dataset_first``."""
    second: str
    """slug of the model steadier on ``dataset_second``."""
    dataset_first: str
    """dataset where ``first`` is steadier."""
    dataset_second: str
    """dataset where ``second`` is steadier."""
    gap_first: float
    """SGS(second) − SGS(first) on ``dataset_first`` (positive)."""
    gap_second: float
    """SGS(first) − SGS(second) on ``dataset_second`` (positive)."""
    significant: bool
    """the leaderboard calls the reversal significant."""
    testable: bool
    """the item counts allow a significant result at all."""
    ci_first: tuple[float | None, float | None]
    """95 % CI of ``gap_first``."""
    ci_second: tuple[float | None, float | None]
    """95 % CI of ``gap_second``."""
    row: ReversalRow
    """the ``reversals[]`` row (CIs, p-values) for detail views."""


def _corrected_p(row: Mapping[str, object]) -> float | None:
    value = row.get("p_holm")
    return float(value) if isinstance(value, (int, float)) else None


def _testable(row: Mapping[str, object]) -> bool:
    # `testable` / verdict "not testable" (too few items for the test to reach alpha) are written by
    # `sago analyze` where the schema has them; without them a comparison with a p-value counts as testable.
    return (
        bool(row.get("testable", True))
        and row.get("verdict") != NOT_TESTABLE
        and _corrected_p(row) is not None
    )


def alpha(board: Board) -> float:
    """The level of every verdict: the file's ``alpha`` (schema 2), else ``ALPHA``."""
    value = board.document.alpha
    return value if value is not None else ALPHA


def _most_stable(board: Board, dataset: str, measure: str) -> str | None:
    cells = [
        (float(rank) if (rank := c.get("rank")) is not None else 1e9, sgs, c["model"])
        for c in board.document.cells.where(dataset=dataset, measure=measure)
        if (sgs := c.get("sgs")) is not None
    ]
    return min(cells)[2] if cells else None


def pair_verdict(row: PairwiseRow | None, level: float = ALPHA) -> tuple[str, str | None]:
    """(status, steadier slug) of one ``pairwise[]`` row.

    >>> pair_verdict({"model_a": "a", "model_b": "b", "diff": 0.2, "p_holm": 0.01})
    ('steadier', 'b')
    >>> pair_verdict({"model_a": "a", "model_b": "b", "diff": 0.2, "p_holm": 0.2})
    ('no significant difference', None)
    """
    if row is None:
        return NO_DATA, None
    if not _testable(row):
        return NOT_TESTABLE, None
    diff = row.get("diff")
    if (_corrected_p(row) or 1.0) < level and diff:
        return STEADIER, row["model_a"] if diff < 0 else row["model_b"]
    return NO_DIFFERENCE, None


def verdict(board: Board, dataset: str, measure: str) -> Verdict:
    """The model steadier than every other on (dataset, measure), judged by corrected paired tests.

    The candidate is the most stable model (rank 1); it is named only when each of its comparisons is
    significant (corrected p < ``ALPHA``) in its favour.
    """
    candidate = _most_stable(board, dataset, measure)
    pairs = [
        r
        for r in board.document.pairwise.where(dataset=dataset, measure=measure)
        if candidate in (r["model_a"], r["model_b"])
    ]
    if candidate is None or not pairs:
        return Verdict(dataset, measure, NO_DATA, None, None, None)
    ps = [_corrected_p(r) for r in pairs]
    p = max((x for x in ps if x is not None), default=None)
    n = min((int(r["n_items"]) for r in pairs if r.get("n_items") is not None), default=None)
    if not any(_testable(r) for r in pairs):
        return Verdict(dataset, measure, NOT_TESTABLE, None, p, n)
    won = all(pair_verdict(r, alpha(board)) == (STEADIER, candidate) for r in pairs)
    return Verdict(dataset, measure, STEADIER if won else NO_DIFFERENCE, candidate if won else None, p, n)


def headline_measure(board: Board, axis: str) -> str | None:
    """The axis's headline measure (``headline_measures`` of the file; None in files without them)."""
    names = board.document.headline_measures
    return next((m["name"] for m in board.measures_of(axis) if m["name"] in names), None)


def grid_cell(board: Board, dataset: str, axis: str) -> GridCell:
    """The verdict of one axis on one dataset.

    With ``headline_measures`` in the file the axis's headline measure decides, and ``wins`` counts the
    axis's measures on which the same model is significantly steadier; without them the measures vote:
    one model on every significant measure, or "mixed".
    """
    verdicts = tuple(verdict(board, dataset, m["name"]) for m in board.measures_of(axis))
    headline_name = headline_measure(board, axis)
    if headline_name is not None:
        main = next(v for v in verdicts if v.measure == headline_name)
        wins = sum(v.status == STEADIER and v.leader == main.leader for v in verdicts)
        return GridCell(dataset, axis, main.status, main.leader, wins if main.leader else 0, verdicts)
    leaders = Counter(v.leader for v in verdicts if v.status == STEADIER)
    if len(leaders) == 1:
        ((leader, wins),) = leaders.items()
        return GridCell(dataset, axis, STEADIER, leader, wins, verdicts)
    if leaders:
        return GridCell(dataset, axis, MIXED, None, 0, verdicts)
    statuses = {v.status for v in verdicts}
    status = (
        NO_DIFFERENCE
        if NO_DIFFERENCE in statuses
        else (NOT_TESTABLE if NOT_TESTABLE in statuses else NO_DATA)
    )
    return GridCell(dataset, axis, status, None, 0, verdicts)


def grid(board: Board) -> list[list[GridCell]]:
    """Rows of the dataset × axis grid: one per dataset, then all datasets pooled; one cell per axis."""
    axes = [a for a in AXES if board.measures_of(a)]
    datasets = [*board.datasets, ALL] if board.datasets else []
    return [[grid_cell(board, d, a) for a in axes] for d in datasets]


def _interval(low: float | None, high: float | None, sign: float) -> tuple[float | None, float | None]:
    if low is None or high is None:
        return (None, None)
    return (low, high) if sign > 0 else (-high, -low)


def _testable_reversal(row: ReversalRow) -> bool:
    return bool(row.get("testable", True)) and row.get("verdict") != NOT_TESTABLE


def reversals(board: Board) -> list[Reversal]:
    """Every reversal in words: significant ones first, then by the smaller of the two gaps, largest first."""
    told = []
    for row in board.document.reversals:
        diff_a, diff_b = row.get("diff_a"), row.get("diff_b")
        if diff_a is None or diff_b is None:
            continue
        a, b = row["model_a"], row["model_b"]
        # diff = SGS(a) − SGS(b): negative where a is steadier; a gap is the other model's SGS minus the
        # steadier one's, so its interval is the diff's interval with the sign flipped where a leads
        first, second = (a, b) if diff_a < 0 else (b, a)
        flip = -1.0 if diff_a < 0 else 1.0
        told.append(
            Reversal(
                row["measure"],
                first,
                second,
                row["dataset_a"],
                row["dataset_b"],
                abs(diff_a),
                abs(diff_b),
                bool(row.get("significant")),
                _testable_reversal(row),
                _interval(row.get("ci_low_a"), row.get("ci_high_a"), flip),
                _interval(row.get("ci_low_b"), row.get("ci_high_b"), -flip),
                row,
            )
        )
    return sorted(told, key=lambda r: (not r.significant, not r.testable, -min(r.gap_first, r.gap_second)))


def reversal_sentence(board: Board, reversal: Reversal) -> str:
    """One reversal as a sentence a newcomer can read.

    >>> b = Board.of({"models": [{"slug": "a", "name": "A"}, {"slug": "b", "name": "B"}]})
    >>> r = Reversal("entropy", "a", "b", "gsm8k", "jeopardy", 0.0059, 0.0144, True, True,
    ...              (None, None), (None, None), {})
    >>> reversal_sentence(b, r)
    'On next-token entropy, A is steadier on gsm8k and B on jeopardy.'
    """
    label = measure_label(reversal.measure)
    label = label[0].lower() + label[1:] if label[:2] != label[:2].upper() else label
    return (
        f"On {label}, {board.name(reversal.first)} is steadier on {reversal.dataset_first} and "
        f"{board.name(reversal.second)} on {reversal.dataset_second}."
    )


def _names(board: Board, slugs: Sequence[str]) -> str:
    names = [board.name(s) for s in slugs]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _instability_sentence(board: Board) -> str | None:
    eps = board.document.primary_epsilon
    tested = [
        t
        for c in board.document.cells
        if c["dataset"] != ALL
        for t in c.get("tests", [])
        if t.get("epsilon") == eps and t.get("significant_holm") is not None
    ]
    if not tested:
        return None
    above = sum(bool(t["significant_holm"]) for t in tested)
    return (
        f"Instability is significantly above the threshold ε = {eps} (one-sided tests, Holm-corrected) in "
        f"{above} of the {len(tested)} model × dataset × measure cells."
    )


def _grid_sentences(board: Board, cells: list[GridCell]) -> list[str]:
    wins = Counter(c.leader for c in cells if c.status == STEADIER and c.leader)
    other = Counter(c.status for c in cells if c.status not in (STEADIER, NO_DATA))
    rest = ", ".join(
        f"{n} show {status}" if status == NO_DIFFERENCE else f"{n} are {status}"
        for status, n in sorted(other.items(), key=lambda kv: -kv[1])
    )
    ns = sorted({v.n_items for c in cells for v in c.verdicts if v.n_items is not None})
    items = (
        ""
        if not ns
        else f", with {ns[0]} items per dataset"
        if len(ns) == 1
        else f", with {ns[0]}–{ns[-1]} items"
    )
    if not wins:
        return [
            f"Dataset by dataset, no model is significantly steadier than another in any of the {len(cells)} "
            f"dataset × axis cells after correction{items}"
            + (f" ({rest})." if set(other) - {NO_DIFFERENCE} else ".")
        ]
    won = ", ".join(f"{board.name(slug)} in {n}" for slug, n in wins.most_common())
    sentences = [
        f"Dataset by dataset, one model is significantly steadier than every other (corrected paired tests, "
        f"p < {alpha(board)}) in {sum(wins.values())} of the {len(cells)} dataset × axis cells ({won})"
        + (f"; of the others, {rest}." if rest else ".")
    ]
    for slug, _ in wins.most_common():
        by_axis: dict[str, list[str]] = {}
        for c in cells:
            if c.leader == slug:
                by_axis.setdefault(c.axis, []).append(c.dataset)
        where = [f"{axis_label(a).lower()} ({', '.join(ds)})" for a, ds in by_axis.items()]
        listed = where[0] if len(where) == 1 else ", ".join(where[:-1]) + " and " + where[-1]
        sentences.append(f"{board.name(slug)} is steadier in {listed}.")
    return sentences


def _pooled_sentence(board: Board, pooled: Sequence[GridCell]) -> str | None:
    wins = [c for c in pooled if c.status == STEADIER]
    if not pooled:
        return None
    if not wins:
        return "With all datasets pooled, no model is significantly steadier on any axis."
    by_model: dict[str, list[str]] = {}
    for c in wins:
        by_model.setdefault(c.leader or "", []).append(axis_label(c.axis).lower())
    said = "; ".join(f"{board.name(s)} in {', '.join(axes)}" for s, axes in by_model.items())
    return f"With all datasets pooled, the significantly steadier model is {said}."


def _reversal_sentence(board: Board) -> str | None:
    told = reversals(board)
    if not told:
        n = len(board.complete)
        return None if n < 2 else "No pair of models changes order between datasets on any measure."
    significant = [r for r in told if r.significant]
    untestable = sum(not r.testable for r in told)
    if untestable == len(told):
        how_sure = "none of which can be tested for significance with so few items per dataset"
    else:
        how_sure = f"{len(significant) or 'none'} of them significant on both datasets after correction"
        if untestable:
            how_sure += f" ({untestable} cannot be tested with so few items)"
    head = (
        f"The order of a model pair flips between two datasets in {_count(len(told), 'case')} "
        f"(measure × model pair × dataset pair), {how_sure}"
    )
    example = significant[0] if significant else told[0]
    said = reversal_sentence(board, example)
    return f"{head}; the largest{' significant one' if significant else ''}: {said[0].lower()}{said[1:]}"


def headline(board: Board) -> list[str]:
    """Three to six sentences: who is steadier where, how sure, where the order flips.

    Empty when fewer than two models have results (nothing to compare).
    """
    if len(board.complete) < 2 or not board.datasets:
        return []
    rows = grid(board)
    cells = [c for row in rows for c in row if c.dataset != ALL]
    pooled = [c for row in rows for c in row if c.dataset == ALL]
    sentences = [s for s in (_instability_sentence(board),) if s]
    sentences += _grid_sentences(board, cells)[:3]
    sentences += [s for s in (_pooled_sentence(board, pooled), _reversal_sentence(board)) if s]
    leaders = {c.leader for c in cells if c.status == STEADIER and c.leader}
    if len(leaders) > 1:
        sentences.append(
            f"There is no overall winner: {_names(board, sorted(leaders))} each lead somewhere, "
            "and the axes are not added up into one score."
        )
    return sentences[:6]
