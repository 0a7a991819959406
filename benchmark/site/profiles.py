"""Another profile's board beside the published one, and the page that compares the two token caps.

The published board ranks runs of its version's board profile; a board of another profile (``sago
analyze --profile paper``) is rendered as a complete board of its own under ``profiles/<profile>/``, with
one more page, ``comparison.html`` ("48 vs 100 tokens"), that reads the ``profile_comparison`` block of
that board's leaderboard.json. Every number on it is that block's; this module only words it, and every
sentence carries the validity labels of the rows it states (:mod:`benchmark.stats.validity`).

The profiles run different variant mixes, so only the ``cap_only`` rows (the variants both ran) may say
what the cap changes; the rows as run are worded as the cap and the variant mix together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchmark.axes.measures import measure_label
from benchmark.paths import check_name
from benchmark.rows import (
    CapOnlyComparison,
    ProfileChangeRow,
    ProfileComparison,
    ProfileControlRow,
    ProfileCutRow,
    ProfileRankingRow,
    ProfileVariantRow,
)
from benchmark.site.board import Board
from benchmark.site.render import num, p_is
from benchmark.stats import validity
from benchmark.stats.claims import carried
from benchmark.stats.significance import SIGNIFICANT

PROFILES_DIR = "profiles"
"""Folder of the site that holds the boards of other profiles."""
COMPARISON_PAGE = "comparison.html"
"""The side-by-side page inside a profile board's folder."""


def profile_folder(profile: str) -> str:
    """Where another profile's board lives inside the site.

    >>> profile_folder("paper")
    'profiles/paper/'
    """
    return f"{PROFILES_DIR}/{check_name(profile, 'profile')}/"


def comparison_title(comparison: ProfileComparison) -> str:
    """The page's name: the two caps, the board profile's first.

    >>> comparison_title({"max_new_tokens": [48, 100]})  # type: ignore[typeddict-item]
    '48 vs 100 tokens'
    """
    cap_a, cap_b = comparison["max_new_tokens"]
    return f"{cap_a} vs {cap_b} tokens"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


CUT_AS_RUN, CUT_SHARED = "as run", "on the prompts both ran"
"""The two scopes of a cut share: every response each profile generated (different prompt mixes), and
only the responses to the (dataset, item, variant) prompts both profiles ran (the cap alone)."""


def cut_sentence(
    row: ProfileCutRow, name: str, comparison: ProfileComparison, scope: str = CUT_AS_RUN
) -> str:
    """One line: how many responses each cap cut, and over which prompts.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"cut_a": 15, "total_a": 16, "share_a": 0.9375, "cut_b": 4, "total_b": 16, "share_b": 0.25}
    >>> cut_sentence(r, "M", c)  # type: ignore[arg-type]
    'M, as run: 15 of 16 responses cut at 48 tokens (94 %) [cut], 4 of 16 at 100 tokens (25 %).'
    """
    cap_a, cap_b = comparison["max_new_tokens"]
    first = _cut_part(row["cut_a"], row["total_a"], row["share_a"], cap_a, " responses cut")
    second = _cut_part(row["cut_b"], row["total_b"], row["share_b"], cap_b, "")
    return f"{name}, {scope}: {first}, {second}."


def _cut_part(cut: int | None, total: int | None, share: float | None, cap: int, lead: str) -> str:
    if cut is None or total is None:
        return f"no run at {cap} tokens"
    labels = [validity.CUT] if validity.at_least_half(cut, total) else []
    return validity.labelled(f"{cut} of {total}{lead} at {cap} tokens ({_share(share)})", labels)


_OUTCOMES = {SIGNIFICANT: "significantly changed", "not significant": "no significant change"}
"""A change row's verdict in words when the row gives no direction (any other verdict is said as is)."""
AS_RUN, CAP_ONLY = "as run, cap and variant mix", "shared variants, cap alone"
"""The two scopes of a change row: every variant each profile ran (the cap and the variant mix together),
and only the variants both ran (the cap alone)."""


def change_sentence(
    row: ProfileChangeRow, name: str, comparison: ProfileComparison, scope: str = AS_RUN
) -> str:
    """The plain sentence of one row (at most 25 words with a three-word name, labels included); the test,
    n and correction are :func:`change_detail`. Only a ``CAP_ONLY`` row attributes a change to the cap.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"measure": "bertscore", "sgs_a": 0.2, "sgs_b": 0.1, "verdict": "significant", "mean_diff": -0.1,
    ...      "validity_a": ["cut"], "validity_b": [], "validity": ["cut"]}
    >>> print(change_sentence(r, "M", c))  # doctest: +NORMALIZE_WHITESPACE
    M, Meaning (BERTScore), as run, cap and variant mix: SGS 0.2 at 48 [cut], 0.1 at 100; significantly
    lower at 100 [cut].
    >>> cap_only = r | {"verdict": "not significant"}
    >>> print(change_sentence(cap_only, "M", c, CAP_ONLY))  # doctest: +NORMALIZE_WHITESPACE
    M, Meaning (BERTScore), shared variants, cap alone: SGS 0.2 at 48 [cut], 0.1 at 100; no significant
    change [cut].
    """
    cap_a, cap_b = comparison["max_new_tokens"]
    at_a = validity.labelled(f"{_sgs(row['sgs_a'])} at {cap_a}", row["validity_a"])
    # the caps are the page's subject (its title names them in tokens): no unit here, so that a row with a
    # three-word model name and a two-word measure name still reads in at most 25 words
    at_b = validity.labelled(f"{_sgs(row['sgs_b'])} at {cap_b}", row["validity_b"])
    outcome = _OUTCOMES.get(row["verdict"] or "", row["verdict"] or "no test")
    if row["verdict"] == SIGNIFICANT and row["mean_diff"] is not None:
        outcome = f"significantly {'higher' if row['mean_diff'] > 0 else 'lower'} at {cap_b}"
    outcome = validity.labelled(outcome, row["validity"])
    # the display name the tables show, so a sentence and its table row read alike
    return f"{name}, {measure_label(row['measure'])}, {scope}: SGS {at_a}, {at_b}; {outcome}."


def labelled_share(rows: list[ProfileChangeRow]) -> str:
    """The end of a verdict lead: how many of its significant rows carry a validity label, and which, so
    that a count of changes is never read without the cut responses it rests on.

    >>> rows = [{"verdict": "significant", "validity": ["cut"]}, {"verdict": "significant", "validity": []},
    ...         {"verdict": "not significant", "validity": ["cut"]}]
    >>> labelled_share(rows)  # type: ignore[arg-type]
    '; 1 of them is labelled [cut].'
    """
    return carried([r["validity"] for r in rows if r["verdict"] == SIGNIFICANT])


FEW_RANKED = 2
"""A rank range needs this many ranked models: among fewer it is 1–1 whatever the data."""


def rank_range(row: ProfileChangeRow, side: str, rankings: list[ProfileRankingRow]) -> str:
    """One profile's rank range of a row ("a" or "b"), "—" when that board ranks fewer than two models on
    the row's (dataset, measure) or gives no rank.

    >>> r = {"dataset": "d", "measure": "x", "rank_low_a": 1, "rank_high_a": 2, "rank_low_b": 1,
    ...      "rank_high_b": 1}
    >>> k = [{"dataset": "d", "measure": "x", "models_a": 4, "models_b": 1}]
    >>> rank_range(r, "a", k), rank_range(r, "b", k)  # type: ignore[arg-type]
    ('1–2', '—')
    """
    low, high = row[f"rank_low_{side}"], row[f"rank_high_{side}"]  # type: ignore[literal-required]
    ranked = [int(r[f"models_{side}"]) for r in rankings if _of(r, row["dataset"], row["measure"])]  # type: ignore[literal-required]
    if low is None or high is None or not ranked or ranked[0] < FEW_RANKED:
        return "—"
    return f"{low}–{high}"


def _of(row: Mapping[str, object], dataset: str, measure: str | None = None) -> bool:
    """Whether a row of the comparison is about ``dataset`` (and ``measure``, when given)."""
    return row["dataset"] == dataset and (measure is None or row["measure"] == measure)


def few_ranked_note(comparison: ProfileComparison) -> str:
    """Under the table of rows as run: which board's rank ranges are left out and why ("" when none).

    >>> c = {"profiles": ["evidence", "paper"], "rankings": [{"models_a": 4, "models_b": 1}]}
    >>> few_ranked_note(c)  # type: ignore[arg-type]
    'The paper board ranks fewer than two models, so its rank range says nothing and shows —.'
    """
    few = [
        profile
        for profile, side in zip(comparison["profiles"], ("a", "b"), strict=True)
        if comparison["rankings"] and all(r[f"models_{side}"] < FEW_RANKED for r in comparison["rankings"])  # type: ignore[literal-required]
    ]
    if not few:
        return ""
    if len(few) > 1:
        return f"The {' and the '.join(few)} boards rank fewer than two models, so their rank ranges show —."
    return f"The {few[0]} board ranks fewer than two models, so its rank range says nothing and shows —."


def change_detail(row: ProfileChangeRow, correction: str) -> str:
    """The test, n and correction behind a change sentence.

    >>> r = {"n_shared": 16, "n_tied": 2, "p_exact": 0.0002, "p_holm": 0.0041, "family_size": 24,
    ...      "testable": True}
    >>> print(change_detail(r, "Holm over every row"))  # doctest: +NORMALIZE_WHITESPACE
    Exact two-sided sign-flip test of s(i) over 16 shared items (2 tied), p < 0.001.
    Holm over every row: 24 testable rows, adjusted p = 0.004.
    """
    test = (
        f"Exact two-sided sign-flip test of s(i) over {row['n_shared']} shared items ({row['n_tied']} tied)"
    )
    if row["p_exact"] is None:
        return f"{test}: no item changed, no test. {correction}."
    held = f"adjusted {p_is(row['p_holm'])}" if row["testable"] else "not testable (its floor cannot reach α)"
    rows = f"{row['family_size']} testable row{'s' if row['family_size'] != 1 else ''}"
    return f"{test}, {p_is(row['p_exact'])}. {correction}: {rows}, {held}."


def control_sentence(cap: CapOnlyComparison) -> str:
    """Whether the cut to the shared variants worked: the prompt-only measures must not move.

    >>> c = {"control": [{"verdict": "not significant"}] * 12, "control_max_abs_diff": 2.4e-07,
    ...      "control_measures": ["act_cos_last", "act_cos_mean"]}
    >>> print(control_sentence(c))  # doctest: +NORMALIZE_WHITESPACE
    Control: on the shared variants, Last-layer state and All-layer state differ by at most 2.40 × 10⁻⁷
    per item; none of 12 rows changes significantly.
    """
    rows, largest = cap["control"], cap["control_max_abs_diff"]
    measures = " and ".join(measure_label(m) for m in cap["control_measures"])
    if largest is None:
        return f"Control: no item is shared, so {measures} cannot check the cut."
    moved = sum(r["verdict"] == SIGNIFICANT for r in rows)
    if moved:
        return (
            f"Control failed: {measures} change significantly in {moved} of {len(rows)} rows on the shared "
            "variants."
        )
    return (
        f"Control: on the shared variants, {measures} differ by at most {num(largest)} per item; "
        f"none of {len(rows)} rows changes significantly."
    )


def variant_sentence(row: ProfileVariantRow, name: str, comparison: ProfileComparison) -> str:
    """How many variants of one dataset both profiles ran.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"rows_a": 784, "rows_b": 1600, "shared": 784, "shared_paper": 575}
    >>> print(variant_sentence(r, "M", c))  # doctest: +NORMALIZE_WHITESPACE
    M: both profiles ran 784 variants (575 in the paper families); the evidence run has 784, the paper
    run 1600.
    """
    profile_a, profile_b = comparison["profiles"]
    return (
        f"{name}: both profiles ran {row['shared']} variants ({row['shared_paper']} in the paper families); "
        f"the {profile_a} run has {row['rows_a']}, the {profile_b} run {row['rows_b']}."
    )


def unshared_sentence(name: str) -> str:
    """A model whose two runs share no variant: the cap alone cannot be compared (no test is run)."""
    return f"{name}: the two profiles ran no rewrite variant in common, so the cap alone cannot be compared."


def _sgs(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def ranking_sentence(row: ProfileRankingRow, comparison: ProfileComparison) -> str:
    """Whether the two boards' rankings can be compared on one (dataset, measure), and their flips.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"dataset": "gsm8k", "measure": "bertscore", "models_a": 4, "models_b": 1, "comparable": False,
    ...      "flips_a": 3, "flips_b": 0, "candidates_a": 90, "candidates_b": 0}
    >>> ranking_sentence(r, c)  # type: ignore[arg-type]
    'Meaning (BERTScore): rankings cannot be compared; the paper board ranks 1 model (two are needed).'
    """
    profile_a, profile_b = comparison["profiles"]
    measure = measure_label(row["measure"])
    if not row["comparable"]:
        few = [(p, n) for p, n in ((profile_a, row["models_a"]), (profile_b, row["models_b"])) if n < 2]
        said = " and ".join(f"the {p} board ranks {n} model{'s' if n != 1 else ''}" for p, n in few)
        return f"{measure}: rankings cannot be compared; {said} (two are needed)."
    return (
        f"{measure}: {row['flips_a']} significant flip{'s' if row['flips_a'] != 1 else ''} on the "
        f"{profile_a} board, {row['flips_b']} on the {profile_b} board."
    )


@dataclass(frozen=True)
class DatasetComparison:
    """One dataset's section of the page."""

    dataset: str
    cut: list[tuple[str, ProfileCutRow]]
    """(its sentence, the row) per model, as run: each profile's own prompts."""
    cap_cut: list[tuple[str, ProfileCutRow]]
    """the same on the prompts both profiles ran (none in a file written before ``cap_only.cut``)."""
    changes: list[tuple[str, str, ProfileChangeRow]]
    """(its sentence, the test behind it, the row) per row as run: the cap and the variant mix together."""
    cap_only: list[tuple[str, str, ProfileChangeRow]]
    """the same on the variants both profiles ran: the cap alone."""
    control: list[ProfileControlRow]
    """the prompt-only rows of the shared variants."""
    variants: list[str]
    """:func:`variant_sentence` per model."""
    rankings: list[tuple[str, ProfileRankingRow]]


@dataclass(frozen=True)
class ComparisonView:
    """Everything ``comparison.html`` shows, read from one board's ``profile_comparison``."""

    title: str
    comparison: ProfileComparison
    sections: list[DatasetComparison]
    significant: int
    """rows as run whose change is significant after Holm."""
    family_size: int
    """testable rows as run (the Holm family)."""
    cap: CapOnlyComparison | None
    """the cap-only block (None in a file written before it)."""
    cap_significant: int
    """cap-only rows whose change is significant after Holm."""
    control: str
    """:func:`control_sentence` ("" without a cap-only block)."""
    labelled: str
    """:func:`labelled_share` of the rows as run."""
    cap_labelled: str
    """:func:`labelled_share` of the cap-only rows ("" without a cap-only block)."""
    few_ranked: str
    """:func:`few_ranked_note`."""
    unshared: list[str]
    """:func:`unshared_sentence` of each model that shares no variant."""

    def rank(self, row: ProfileChangeRow, side: str) -> str:
        """:func:`rank_range` of one row on one side, as the table of rows as run shows it."""
        return rank_range(row, side, self.comparison["rankings"])


def comparison_view(board: Board) -> ComparisonView | None:
    """The page of ``board``'s ``profile_comparison`` (None when its leaderboard has none)."""
    comparison = board.document.profile_comparison
    if comparison is None:
        return None
    cap = comparison.get("cap_only")
    sections = [_section(board, comparison, dataset) for dataset in [*board.datasets, validity.ALL_DATASETS]]
    rows, cap_rows = comparison["rows"], cap["rows"] if cap else []
    shared = {r["model"] for r in cap["variants"] if r["shared_paper"]} if cap else set()
    return ComparisonView(
        comparison_title(comparison),
        comparison,
        sections,
        sum(r["verdict"] == SIGNIFICANT for r in rows),
        rows[0]["family_size"] if rows else 0,
        cap,
        sum(r["verdict"] == SIGNIFICANT for r in cap_rows),
        control_sentence(cap) if cap else "",
        labelled_share(rows),
        labelled_share(cap_rows) if cap else "",
        few_ranked_note(comparison),
        [unshared_sentence(board.name(m)) for m in comparison["models"] if cap and m not in shared],
    )


def _section(board: Board, comparison: ProfileComparison, dataset: str) -> DatasetComparison:
    """One dataset's sentences: cut shares, changes as run and on the shared variants, rankings."""
    cap = comparison.get("cap_only")

    def changes(
        rows: list[ProfileChangeRow], scope: str, correction: str
    ) -> list[tuple[str, str, ProfileChangeRow]]:
        return [
            (change_sentence(r, board.name(r["model"]), comparison, scope), change_detail(r, correction), r)
            for r in rows
            if _of(r, dataset)
        ]

    def cuts(rows: list[ProfileCutRow], scope: str) -> list[tuple[str, ProfileCutRow]]:
        return [
            (cut_sentence(r, board.name(r["model"]), comparison, scope), r) for r in rows if _of(r, dataset)
        ]

    return DatasetComparison(
        dataset,
        cuts(comparison["cut"], CUT_AS_RUN),
        cuts(cap.get("cut", []) if cap else [], CUT_SHARED),
        changes(comparison["rows"], AS_RUN, comparison["correction"]),
        changes(cap["rows"], CAP_ONLY, cap["correction"]) if cap else [],
        [r for r in cap["control"] if _of(r, dataset)] if cap else [],
        [variant_sentence(r, board.name(r["model"]), comparison) for r in cap["variants"] if _of(r, dataset)]
        if cap
        else [],
        [(ranking_sentence(r, comparison), r) for r in comparison["rankings"] if _of(r, dataset)],
    )
