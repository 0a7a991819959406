"""Who is steadier where: verdicts read off the corrected tests of ``leaderboard.json``, never recomputed.

``pair_verdict``, ``verdict``, ``grid_cell``/``grid`` and ``reversals`` turn stored rows
(``pairwise[].verdict``, ``reversals[].verdict``) into typed verdicts; :mod:`benchmark.stats.claims` words
them, and the site shows the same objects (grid cells, reversal sentences), so no view can disagree with a
sentence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from benchmark.axes.measures import measure_label
from benchmark.documents import LeaderboardDocument
from benchmark.rows import PairwiseRow, ReversalRow
from benchmark.schema import AXES
from benchmark.stats import validity
from benchmark.stats.sgs import ALL

ALPHA = 0.05
"""Level of every verdict when the file states none."""
STEADIER, NO_SINGLE, NO_DIFFERENCE, NOT_TESTABLE, MIXED, NO_DATA = (
    "steadier",
    "no single steadiest model",
    "no significant difference",
    "not testable",
    "mixed",
    "no data",
)
"""A cell's status. NO_SINGLE: no model is significantly steadier than *every* other, yet some pairs do
differ significantly (``Verdict.pairs`` lists them); NO_DIFFERENCE: no pair differs significantly."""
SIGNIFICANT = "significant"


@dataclass(frozen=True)
class Verdict:
    """Which model is steadier on one (dataset, measure), or why none is named."""

    dataset: str
    measure: str
    status: str
    """STEADIER, NO_SINGLE, NO_DIFFERENCE, NOT_TESTABLE or NO_DATA."""
    leader: str | None
    """slug of the model steadier than every other one (status STEADIER), else None."""
    p: float | None
    """largest corrected p of the leader's (or the most stable model's) comparisons."""
    n_items: int | None
    """fewest shared items behind those comparisons."""
    pairs: tuple[tuple[str, str, float], ...] = ()
    """every significant pair of (dataset, measure): (steadier slug, other slug, corrected p)."""
    labels: tuple[str, ...] = ()
    """validity labels of the candidate's comparisons (``pairwise[].validity``; docs/METHOD.md)."""


@dataclass(frozen=True)
class GridCell:
    """One cell of the dataset × axis grid: the verdicts of the axis's measures, summarised."""

    dataset: str
    axis: str
    status: str
    """the headline measure's status (STEADIER, NO_SINGLE, NO_DIFFERENCE, NOT_TESTABLE, NO_DATA; MIXED
    without one)."""
    leader: str | None
    """the steadier model when status is STEADIER."""
    wins: int
    """measures of the axis on which ``leader`` is significantly steadier."""
    verdicts: tuple[Verdict, ...]
    """one per measure of the axis, schema order."""
    pairs: tuple[tuple[str, str, float], ...] = ()
    """the significant pairs of the deciding verdict (the headline measure's), shown in a NO_SINGLE cell."""
    labels: tuple[str, ...] = ()
    """validity labels of the deciding verdict (docs/METHOD.md "Validity labels")."""


@dataclass(frozen=True)
class Reversal:
    """A pair of models whose order flips between two datasets, told in words."""

    measure: str
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
    labels_first: tuple[str, ...] = ()
    """validity labels of the pair on ``dataset_first`` (``pairwise[].validity``)."""
    labels_second: tuple[str, ...] = ()
    """validity labels of the pair on ``dataset_second``."""

    @property
    def clear(self) -> bool:
        """Both gaps' 95 % intervals lie above 0 (uncorrected: a flip may be clear and still not
        significant after the correction over every candidate)."""
        return all(low is not None and low > 0 for low in (self.ci_first[0], self.ci_second[0]))


def alpha(document: LeaderboardDocument) -> float:
    """The level of every verdict: the file's ``alpha``, else ``ALPHA``."""
    return document.alpha if document.alpha is not None else ALPHA


def pair_verdict(row: PairwiseRow | None) -> tuple[str, str | None]:
    """(status, steadier slug) of one ``pairwise[]`` row.

    >>> pair_verdict({"model_a": "a", "model_b": "b", "diff": 0.2, "verdict": "significant"})
    ('steadier', 'b')
    >>> pair_verdict({"model_a": "a", "model_b": "b", "diff": 0.2, "verdict": "not testable"})
    ('not testable', None)
    """
    if row is None:
        return NO_DATA, None
    status, p = row.get("verdict"), row.get("p_holm")
    if not (isinstance(status, str) and status):  # files and examples without ``verdict``
        tested = SIGNIFICANT if p is not None and p < ALPHA else "not significant"
        status = NOT_TESTABLE if not row.get("testable", True) or p is None else tested
    if status == NOT_TESTABLE:
        return NOT_TESTABLE, None
    diff = row.get("diff")
    if status == SIGNIFICANT and diff:
        return STEADIER, row["model_a"] if diff < 0 else row["model_b"]
    return NO_DIFFERENCE, None


def _steadiest(document: LeaderboardDocument, dataset: str, measure: str) -> str | None:
    """The model with the lowest SGS (the one a "steadier than every other" claim would name)."""
    cells = [
        (sgs, c["model"])
        for c in document.cells.where(dataset=dataset, measure=measure)
        if (sgs := c.get("sgs")) is not None
    ]
    return min(cells)[1] if cells else None


def verdict(document: LeaderboardDocument, dataset: str, measure: str) -> Verdict:
    """The model steadier than every other on (dataset, measure), judged by the corrected paired tests.

    The candidate is the model with the lowest SGS; it is named only when each of its comparisons is
    significant in its favour. Otherwise "not testable" when any of them cannot reach α, else "no single
    steadiest model" when some pair (of any two models) differs significantly, else "no significant
    difference".
    """
    candidate = _steadiest(document, dataset, measure)
    every = list(document.pairwise.where(dataset=dataset, measure=measure))
    pairs = [r for r in every if candidate in (r["model_a"], r["model_b"])]
    if candidate is None or not pairs:
        return Verdict(dataset, measure, NO_DATA, None, None, None)
    ps = [p for r in pairs if (p := r.get("p_holm")) is not None]
    n = min((int(r["n_items"]) for r in pairs if r.get("n_items") is not None), default=None)
    significant = tuple(_significant_pair(r) for r in every if pair_verdict(r)[0] == STEADIER)
    outcomes = [pair_verdict(r) for r in pairs]
    labels = tuple(validity.ordered(label for r in pairs for label in r.get("validity", [])))
    if all(o == (STEADIER, candidate) for o in outcomes):
        return Verdict(dataset, measure, STEADIER, candidate, max(ps, default=None), n, significant, labels)
    if any(s == NOT_TESTABLE for s, _ in outcomes):
        status = NOT_TESTABLE
    else:
        status = NO_SINGLE if significant else NO_DIFFERENCE
    return Verdict(dataset, measure, status, None, max(ps, default=None), n, significant, labels)


def _significant_pair(row: PairwiseRow) -> tuple[str, str, float]:
    """(steadier, other, corrected p) of a significant ``pairwise[]`` row."""
    _, steadier = pair_verdict(row)
    other = row["model_b"] if steadier == row["model_a"] else row["model_a"]
    p = row.get("p_holm")
    return str(steadier), other, float(p) if p is not None else float("nan")


def headline_measure(document: LeaderboardDocument, axis: str) -> str | None:
    """The axis's headline measure (``headline_measures`` of the file; None in files without them)."""
    names = document.headline_measures
    return next((m["name"] for m in document.measures_of(axis) if m["name"] in names), None)


def grid_cell(document: LeaderboardDocument, dataset: str, axis: str) -> GridCell:
    """The verdict of one axis on one dataset: its headline measure decides; ``wins`` counts the axis's
    measures on which the same model is significantly steadier (without headline measures the measures
    vote: one model on every significant measure, or "mixed")."""
    verdicts = tuple(verdict(document, dataset, m["name"]) for m in document.measures_of(axis))
    headline_name = headline_measure(document, axis)
    if headline_name is not None:
        main = next(v for v in verdicts if v.measure == headline_name)
        wins = sum(v.status == STEADIER and v.leader == main.leader for v in verdicts) if main.leader else 0
        return GridCell(dataset, axis, main.status, main.leader, wins, verdicts, main.pairs, main.labels)
    leaders = Counter(v.leader for v in verdicts if v.status == STEADIER)
    if len(leaders) == 1:
        ((leader, wins),) = leaders.items()
        return GridCell(dataset, axis, STEADIER, leader, wins, verdicts)
    if leaders:
        return GridCell(dataset, axis, MIXED, None, 0, verdicts)
    statuses = {v.status for v in verdicts}
    status = next((s for s in (NO_SINGLE, NO_DIFFERENCE, NOT_TESTABLE) if s in statuses), NO_DATA)
    deciding = next((v.pairs for v in verdicts if v.status == status), ())
    return GridCell(dataset, axis, status, None, 0, verdicts, deciding)


def grid(document: LeaderboardDocument) -> list[list[GridCell]]:
    """Rows of the dataset × axis grid: one per dataset, then all datasets pooled; one cell per axis."""
    axes = [a for a in AXES if document.measures_of(a)]
    datasets = [*document.datasets, ALL] if document.datasets else []
    return [[grid_cell(document, d, a) for a in axes] for d in datasets]


def _interval(low: float | None, high: float | None, sign: float) -> tuple[float | None, float | None]:
    if low is None or high is None:
        return (None, None)
    return (low, high) if sign > 0 else (-high, -low)


def reversals(document: LeaderboardDocument) -> list[Reversal]:
    """Every reversal in words: significant ones first, then by the smaller of the two gaps, largest first."""
    told = []
    for row in document.reversals:
        diff_a, diff_b = row.get("diff_a"), row.get("diff_b")
        if diff_a is None or diff_b is None:
            continue
        a, b = row["model_a"], row["model_b"]
        # diff = SGS(a) − SGS(b): negative where a is steadier; a gap is the other model's SGS minus the
        # steadier one's, so its interval is the diff's interval with the sign flipped where a leads
        first, second = (a, b) if diff_a < 0 else (b, a)
        flip = -1.0 if diff_a < 0 else 1.0
        testable = bool(row.get("testable", True)) and row.get("verdict") != NOT_TESTABLE
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
                testable,
                _interval(row.get("ci_low_a"), row.get("ci_high_a"), flip),
                _interval(row.get("ci_low_b"), row.get("ci_high_b"), -flip),
                row,
                _pair_labels(document, row, row["dataset_a" if first == a else "dataset_b"]),
                _pair_labels(document, row, row["dataset_b" if first == a else "dataset_a"]),
            )
        )
    return sorted(told, key=lambda r: (not r.significant, not r.testable, -min(r.gap_first, r.gap_second)))


def _pair_labels(document: LeaderboardDocument, row: ReversalRow, dataset: str) -> tuple[str, ...]:
    """``pairwise[].validity`` of the reversal's model pair on one of its datasets."""
    pair = document.pairwise.first(
        dataset=dataset, measure=row["measure"], model_a=row["model_a"], model_b=row["model_b"]
    )
    return tuple(pair.get("validity", [])) if pair else ()


def lower_first(label: str) -> str:
    return label[0].lower() + label[1:] if label[:2] != label[:2].upper() else label


def reversal_sentence(document: LeaderboardDocument, reversal: Reversal) -> str:
    """One reversal as a sentence a newcomer can read: stated as a fact only when it is significant,
    otherwise as what the data look like.

    >>> d = LeaderboardDocument.from_json({"schema_version": 4, "models": [{"slug": "a", "name": "A"},
    ...     {"slug": "b", "name": "B"}]})
    >>> r = Reversal("entropy", "a", "b", "gsm8k", "jeopardy", 0.0059, 0.0144, True, True,
    ...              (None, None), (None, None), {})
    >>> reversal_sentence(d, r)
    'On next-token entropy, A is steadier on gsm8k and B on jeopardy.'
    >>> from dataclasses import replace
    >>> reversal_sentence(d, replace(r, significant=False))
    'On next-token entropy, A looks steadier on gsm8k and B on jeopardy (not significant).'
    """
    verb, caveat = ("is", "") if reversal.significant else ("looks", " (not significant)")
    first = validity.labelled(reversal.dataset_first, reversal.labels_first)
    second = validity.labelled(reversal.dataset_second, reversal.labels_second)
    return (
        f"On {lower_first(measure_label(reversal.measure))}, {document.name(reversal.first)} {verb} steadier "
        f"on {first} and {document.name(reversal.second)} on {second}{caveat}."
    )
