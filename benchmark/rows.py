"""The typed rows of the tables in ``leaderboard.json`` and ``summary.json``, and an indexed table.

Each row stays the JSON object as written; a :class:`~typing.TypedDict` names its keys so mypy checks
every consumer's reads against the format (prose: docs/LEADERBOARD_JSON.md). :class:`Table` indexes its
rows on first lookup, so a page that looks up every cell costs one pass over the table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, NotRequired, TypedDict, TypeVar


class MarkerRow(TypedDict):
    """``markers[]``: the symbol of the first row whose ``below`` exceeds the Holm-adjusted p."""

    symbol: str
    below: float


class MeasureRow(TypedDict):
    """``measures[]``: one measure of one axis, in schema order."""

    name: str
    axis: str
    scale: float
    paper: bool
    headline: bool
    description: str


class AggregateRow(TypedDict):
    """``aggregates[]``: the paper SGS and the extended one, and the rewrite families each pools."""

    name: str
    label: str
    headline: bool
    families: list[str]


class ClaimRow(TypedDict):
    """``claims[]``: one results sentence generated from the file (``headline``: the site lists it first)."""

    id: str
    text: str
    headline: bool
    plain: NotRequired[str]
    """the finding as one short sentence (its labels included); ``text`` adds the test, n and correction."""


class TruncationRow(TypedDict):
    """``models[].run.truncated[]``: responses that stopped at the token cap in one dataset."""

    dataset: str
    cut: int
    total: int
    degenerate: NotRequired[int]
    """cut responses that end in a loop (``benchmark.stats.validity.degenerate``); absent in older files."""
    unanswered: NotRequired[int]
    """cut baseline responses not graded correct (the answer may not have fitted); absent in older files."""


class RunRow(TypedDict):
    """``models[].run``: what a complete model is and how its result was made (docs/LEADERBOARD_JSON.md)."""

    tuning: str | None
    tuning_declared: bool
    prompt_format: str | None
    quantisation: str | None
    dtype: str | None
    profile: str | None
    items_per_dataset: int | None
    token_cap: int | None
    engine: str | None
    batch_size: int | None
    threads: int | None
    wall_seconds: float | None
    model_seconds: float | None
    peak_rss_mib: float | None
    truncated: list[TruncationRow]


class ModelRow(TypedDict):
    """``models[]``: one submission folder, complete or pending."""

    slug: str
    name: str
    source: dict[str, str]
    status: str
    parameters: int
    dtype: str
    chat_template: str
    license: str
    contact: str
    url: str | None
    notes: str | None
    summary: str | None
    n_items: int | None
    run: RunRow | None


class CellFields(TypedDict):
    """The keys that name one cell (model, dataset, measure): the rows about a cell begin with them."""

    model: str
    dataset: str
    measure: str


class OneSidedTestRow(TypedDict):
    """``cells[].tests[]``: the one-sided tests of one cell at one ε (the exact test decides)."""

    epsilon: float
    n_items: int
    t: float | None
    p_t: float | None
    marker_uncorrected: str
    p_t_holm: float | None
    marker_t: str
    p_exact: float | None
    p_floor: float | None
    p_holm: float | None
    p_bh: float | None
    p_floor_holm: float | None
    family_size: int
    testable: bool
    verdict: str
    marker: str
    significant: bool


class ExtendedRow(TypedDict):
    """``cells[].extended``: the cell over every rewrite family (SGS-ext)."""

    n_items: int
    sgs: float | None
    ci_low: float | None
    ci_high: float | None
    marker: str
    verdict: str
    tests: list[OneSidedTestRow]


class SummaryCellRow(CellFields):
    """``summary.json`` ``cells[]``: one (model, dataset, measure) of one submission."""

    n_items: int
    sgs: float | None
    ci_low: float | None
    ci_high: float | None
    noise_floor: float | None
    marker: str
    verdict: str
    tests: list[OneSidedTestRow]
    extended: ExtendedRow


class CellRow(SummaryCellRow):
    """``cells[]``: the main table, a summary cell plus its rank among the complete models."""

    rank: int | None
    rank_low: int | None
    rank_high: int | None
    tie_group: int | None
    validity: NotRequired[list[str]]
    """labels of docs/METHOD.md "Validity labels" (``benchmark.stats.validity``); absent in older files."""


class FamilyRow(CellFields):
    """``per_family[]``: SGS of one rewrite family."""

    family: str
    n_items: int
    sgs: float | None
    ci_low: float | None
    ci_high: float | None


class NoiseFloorRow(CellFields):
    """``noise_floor[]``: measured noise per control."""

    control: str
    n_items: int
    value: float | None


class AccuracyRow(TypedDict):
    """``accuracy[]``: baseline accuracy (null, with 0 items, when a dataset has no gold answers)."""

    model: str
    dataset: str
    n_items: int
    accuracy: float | None
    n_cut: NotRequired[int]
    """baseline responses cut at the cap and not graded correct: counted "cut", not wrong."""
    accuracy_answered: NotRequired[float | None]
    """correct answers over the baseline responses not counted "cut"."""
    baseline: NotRequired[float | None]
    """trivial baseline: share of these items whose reference answer is the most common one."""
    validity: NotRequired[list[str]]
    """"cut" and/or "≤ baseline" (docs/METHOD.md §6.1)."""


class AccuracyVsSgsRow(TypedDict):
    """``accuracy_vs_sgs[]``: Spearman ρ of accuracy against SGS over (model, dataset) pairs."""

    measure: str
    n_pairs: int
    rho: float | None
    p: float | None


class PairwiseRow(TypedDict):
    """``pairwise[]``: one model pair on one (dataset, measure), tested exactly and corrected."""

    dataset: str
    measure: str
    model_a: str
    model_b: str
    n_items: int
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_exact: float | None
    p_floor: float | None
    p_holm: float | None
    p_floor_holm: float | None
    family_size: int
    testable: bool
    verdict: str
    n_tied: NotRequired[int]
    """items equal on both models (zero paired difference); absent in older files."""
    validity: NotRequired[list[str]]
    """both cells' labels, plus "tied" (docs/METHOD.md "Validity labels"); absent in older files."""


class ProportionalRow(TypedDict):
    """``proportional_measures[]``: two measures that are one quantity up to a factor on a model's items."""

    model: str
    dataset: str
    measure_a: str
    measure_b: str
    n_items: int
    factor: float


class FriedmanRow(TypedDict):
    """``friedman[]``: the Friedman test across models on one (dataset, measure)."""

    dataset: str
    measure: str
    n_models: int
    n_items: int
    statistic: float | None
    p: float | None
    note: str


class KendallTauRow(TypedDict):
    """``kendall_tau[]``: agreement of the model rankings of two datasets."""

    measure: str
    dataset_a: str
    dataset_b: str
    n_models: int
    tau_b: float | None
    p: float | None
    note: str


class KendallWRow(TypedDict):
    """``kendall_w[]``: agreement of the model rankings over all datasets."""

    measure: str
    n_models: int
    n_datasets: int
    w: float | None
    chi2: float | None
    p_chi2: float | None
    p: float | None
    p_method: str


class ReversalRow(TypedDict):
    """``reversals[]``: a model pair whose order flips between two datasets."""

    measure: str
    model_a: str
    model_b: str
    dataset_a: str
    dataset_b: str
    n_items_a: int
    n_items_b: int
    diff_a: float | None
    ci_low_a: float | None
    ci_high_a: float | None
    diff_b: float | None
    ci_low_b: float | None
    ci_high_b: float | None
    p_a: float | None
    p_b: float | None
    p: float | None
    p_holm: float | None
    family_size: int
    p_floor_holm: float | None
    testable: bool
    verdict: str
    significant: bool
    candidates: NotRequired[int]
    """every candidate of the Holm family, testable or not (``family_size`` counts the testable ones)."""


class IndependenceRow(TypedDict):
    """``independence[]``: Spearman ρ between two measures, per model or combined."""

    scope: str
    model: str | None
    measure_a: str
    measure_b: str
    n_models: int
    n_items: int
    rho: float | None
    p: float | None
    method: str


class ParetoRow(TypedDict):
    """``pareto[]``: generation against mirroring SGS of one model."""

    dataset: str
    model: str
    generation: float | None
    mirroring: float | None
    pareto_optimal: bool


class SampleSizeRow(CellFields):
    """``sample_size[]``: SGS deviation of random item subsets of size n."""

    n: int
    n_available: int
    mean_rel_dev: float | None
    p95_rel_dev: float | None


class SmallestNRow(CellFields):
    """``sample_size_smallest_n[]``: the smallest n within 15 % (null when SGS is 0 or null)."""

    n_available: int
    smallest_n: int | None


class SampleRankingRow(TypedDict):
    """``sample_size_ranking[]``: how often n shared items reproduce the model ordering."""

    dataset: str
    measure: str
    n: int
    n_available: int
    n_models: int
    mean_tau: float | None
    same_order: float | None


class PerItemRow(TypedDict):
    """``summary.json`` ``per_item[]``: s_X(i) of one item, paper and extended."""

    dataset: str
    item_id: str
    measure: str
    s: float | None
    s_extended: float | None


class ProfileCutRow(TypedDict):
    """``profile_comparison.cut[]``: one model's responses cut at each profile's cap on one dataset
    (``_a``: the board profile, ``_b``: this board's profile; null where that profile has no row)."""

    model: str
    dataset: str
    cut_a: int | None
    total_a: int | None
    share_a: float | None
    cut_b: int | None
    total_b: int | None
    share_b: float | None


class ProfileChangeRow(CellFields):
    """``profile_comparison.rows[]``: one (model, dataset, headline measure) in both profiles, and the
    exact paired test of its per-item instability change, Holm-corrected over the comparison."""

    sgs_a: float | None
    ci_low_a: float | None
    ci_high_a: float | None
    n_items_a: int | None
    rank_low_a: int | None
    rank_high_a: int | None
    validity_a: list[str]
    sgs_b: float | None
    ci_low_b: float | None
    ci_high_b: float | None
    n_items_b: int | None
    rank_low_b: int | None
    rank_high_b: int | None
    validity_b: list[str]
    n_shared: int
    n_tied: int
    mean_diff: float | None
    p_exact: float | None
    p_floor: float
    p_holm: float | None
    p_floor_holm: float | None
    testable: bool
    family_size: int
    verdict: str
    validity: list[str]


class ProfileRankingRow(TypedDict):
    """``profile_comparison.rankings[]``: one (dataset, headline measure): the models each profile's board
    ranks, whether the rankings can be compared, and each board's significant reversals there."""

    dataset: str
    measure: str
    models_a: int
    models_b: int
    comparable: bool
    flips_a: int
    flips_b: int
    candidates_a: int
    candidates_b: int


class ProfileVariantRow(TypedDict):
    """``profile_comparison.cap_only.variants[]``: one model's deltas rows on one dataset in each profile,
    and how many (dataset, item_id, variant_id) both ran (``shared_paper``: those of the paper families,
    the rows s(i) pools)."""

    model: str
    dataset: str
    rows_a: int
    rows_b: int
    shared: int
    shared_paper: int


class ProfileControlRow(CellFields):
    """``profile_comparison.cap_only.control[]``: a prompt-only measure on the shared variants, where the
    cap cannot act: the largest per-item difference and the same exact test, Holm over the control rows."""

    n_shared: int
    n_tied: int
    max_abs_diff: float | None
    mean_diff: float | None
    p_exact: float | None
    p_holm: float | None
    testable: bool
    family_size: int
    verdict: str


class CapOnlyComparison(TypedDict):
    """``profile_comparison.cap_only``: the change on the variants both profiles ran (the cap alone)."""

    correction: str
    """the correction family of ``rows[]``."""
    control_correction: str
    """the correction family of ``control[]``."""
    control_measures: list[str]
    """the prompt-only measures of ``control[]``."""
    control_max_abs_diff: float | None
    """the largest |s_b(i) − s_a(i)| of any control row (null when no item is shared)."""
    variants: list[ProfileVariantRow]
    cut: NotRequired[list[ProfileCutRow]]
    """as ``profile_comparison.cut[]``, but counted only on the (dataset, item, variant) prompts both
    profiles answered, so the two shares differ by the cap alone (absent in files written before it)."""
    rows: list[ProfileChangeRow]
    """as ``profile_comparison.rows[]``, but s(i) re-reduced from the shared variants: ``sgs_*`` is its
    mean over the items, without interval or rank (null); ``validity_*`` the board cells' labels."""
    control: list[ProfileControlRow]


class ProfileComparison(TypedDict):
    """``profile_comparison``: another profile's board beside the board profile's (never pooled)."""

    profiles: list[str]
    """[board profile, this board's profile]: the ``_a`` and ``_b`` of every row."""
    max_new_tokens: list[int]
    """their token caps, in the same order."""
    models: list[str]
    """complete in both."""
    measures: list[str]
    """the headline measures compared."""
    correction: str
    """the correction family of ``rows[]``."""
    cut: list[ProfileCutRow]
    rows: list[ProfileChangeRow]
    rankings: list[ProfileRankingRow]
    cap_only: NotRequired[CapOnlyComparison]
    """``rows[]`` mixes the cap with the variant mix (the profiles run different levels); this block
    compares only the variants both ran (absent in files written before it)."""


R = TypeVar("R", bound=Mapping[str, object])


@dataclass(frozen=True)
class Table(Generic[R]):
    """The rows of one table, in the file's order, with lookups by field values.

    >>> table = Table(({"model": "a", "sgs": 1}, {"model": "b", "sgs": 2}))
    >>> table.where(model="b"), table.first(model="c"), len(table)
    ([{'model': 'b', 'sgs': 2}], None, 2)
    """

    rows: tuple[R, ...] = ()
    _indexes: dict[tuple[str, ...], dict[tuple[object, ...], list[R]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """fields -> rows by the values of those fields; filled on first lookup."""

    def __iter__(self) -> Iterator[R]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, **match: object) -> list[R]:
        """Rows whose fields equal every keyword given (the file's order is kept)."""
        fields = tuple(sorted(match))
        return list(self._index(fields).get(tuple(match[f] for f in fields), ()))

    def first(self, **match: object) -> R | None:
        """The first row matching ``match``, or None."""
        found = self.where(**match)
        return found[0] if found else None

    def _index(self, fields: tuple[str, ...]) -> dict[tuple[object, ...], list[R]]:
        index = self._indexes.get(fields)
        if index is None:
            index = {}
            for row in self.rows:
                index.setdefault(tuple(row.get(f) for f in fields), []).append(row)
            self._indexes[fields] = index
        return index
