"""Another profile's board beside the published one, and the page that compares the two token caps.

The published board ranks runs of its version's board profile; a board of another profile (``sago
analyze --profile paper``) is rendered as a complete board of its own under ``profiles/<profile>/``, with
one more page, ``comparison.html`` ("48 vs 100 tokens"), that reads the ``profile_comparison`` block of
that board's leaderboard.json. Every number on it is that block's; this module only words it, and every
sentence carries the validity labels of the rows it states (:mod:`benchmark.stats.validity`).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.paths import check_name
from benchmark.rows import ProfileChangeRow, ProfileComparison, ProfileCutRow, ProfileRankingRow
from benchmark.site.board import Board
from benchmark.stats import validity
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


def cut_sentence(row: ProfileCutRow, name: str, comparison: ProfileComparison) -> str:
    """One line: how many responses each cap cut.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"cut_a": 15, "total_a": 16, "share_a": 0.9375, "cut_b": 4, "total_b": 16, "share_b": 0.25}
    >>> cut_sentence(r, "M", c)  # type: ignore[arg-type]
    'M: 15 of 16 responses cut at 48 tokens (94 %) [cut], 4 of 16 at 100 tokens (25 %).'
    """
    cap_a, cap_b = comparison["max_new_tokens"]
    first = _cut_part(row["cut_a"], row["total_a"], row["share_a"], cap_a, " responses cut")
    second = _cut_part(row["cut_b"], row["total_b"], row["share_b"], cap_b, "")
    return f"{name}: {first}, {second}."


def _cut_part(cut: int | None, total: int | None, share: float | None, cap: int, lead: str) -> str:
    if cut is None or total is None:
        return f"no run at {cap} tokens"
    labels = [validity.CUT] if validity.at_least_half(cut, total) else []
    return validity.labelled(f"{cut} of {total}{lead} at {cap} tokens ({_share(share)})", labels)


def change_sentence(row: ProfileChangeRow, name: str, comparison: ProfileComparison) -> str:
    """The plain sentence of one row (about 25 words, its labels included); the test, n and correction
    go in the row's details.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"measure": "bertscore", "sgs_a": 0.2, "sgs_b": 0.1, "verdict": "significant", "mean_diff": -0.1,
    ...      "validity_a": ["cut"], "validity_b": [], "validity": ["cut"]}
    >>> change_sentence(r, "M", c)  # type: ignore[arg-type]
    'M, bertscore: SGS 0.2 at 48 tokens [cut], 0.1 at 100 tokens; significantly lower at 100 tokens [cut].'
    """
    cap_a, cap_b = comparison["max_new_tokens"]
    at_a = validity.labelled(f"{_sgs(row['sgs_a'])} at {cap_a} tokens", row["validity_a"])
    at_b = validity.labelled(f"{_sgs(row['sgs_b'])} at {cap_b} tokens", row["validity_b"])
    if row["verdict"] == SIGNIFICANT and row["mean_diff"] is not None:
        direction = "higher" if row["mean_diff"] > 0 else "lower"
        outcome = validity.labelled(f"significantly {direction} at {cap_b} tokens", row["validity"])
    elif row["verdict"] == SIGNIFICANT:
        outcome = validity.labelled("significantly changed", row["validity"])
    else:
        outcome = validity.labelled(f"no change is claimed ({row['verdict'] or 'no test'})", row["validity"])
    return f"{name}, {row['measure']}: SGS {at_a}, {at_b}; {outcome}."


def _sgs(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def ranking_sentence(row: ProfileRankingRow, comparison: ProfileComparison) -> str:
    """Whether the two boards' rankings can be compared on one (dataset, measure), and their flips.

    >>> c = {"profiles": ["evidence", "paper"], "max_new_tokens": [48, 100]}
    >>> r = {"dataset": "gsm8k", "measure": "bertscore", "models_a": 4, "models_b": 1, "comparable": False,
    ...      "flips_a": 3, "flips_b": 0, "candidates_a": 90, "candidates_b": 0}
    >>> ranking_sentence(r, c)  # type: ignore[arg-type]
    'bertscore: rankings cannot be compared; the paper board ranks 1 model (two are needed).'
    """
    profile_a, profile_b = comparison["profiles"]
    if not row["comparable"]:
        few = [(p, n) for p, n in ((profile_a, row["models_a"]), (profile_b, row["models_b"])) if n < 2]
        said = " and ".join(f"the {p} board ranks {n} model{'s' if n != 1 else ''}" for p, n in few)
        return f"{row['measure']}: rankings cannot be compared; {said} (two are needed)."
    return (
        f"{row['measure']}: {row['flips_a']} significant flip{'s' if row['flips_a'] != 1 else ''} on the "
        f"{profile_a} board, {row['flips_b']} on the {profile_b} board."
    )


@dataclass(frozen=True)
class DatasetComparison:
    """One dataset's section of the page."""

    dataset: str
    cut: list[tuple[str, ProfileCutRow]]
    """(its sentence, the row) per model."""
    changes: list[tuple[str, ProfileChangeRow]]
    rankings: list[tuple[str, ProfileRankingRow]]


@dataclass(frozen=True)
class ComparisonView:
    """Everything ``comparison.html`` shows, read from one board's ``profile_comparison``."""

    title: str
    comparison: ProfileComparison
    sections: list[DatasetComparison]
    significant: int
    """rows whose change is significant after Holm."""
    family_size: int
    """testable rows (the Holm family)."""


def comparison_view(board: Board) -> ComparisonView | None:
    """The page of ``board``'s ``profile_comparison`` (None when its leaderboard has none)."""
    comparison = board.document.profile_comparison
    if comparison is None:
        return None
    datasets = [*board.datasets, validity.ALL_DATASETS]
    sections = []
    for dataset in datasets:
        sections.append(
            DatasetComparison(
                dataset,
                [
                    (cut_sentence(r, board.name(r["model"]), comparison), r)
                    for r in comparison["cut"]
                    if r["dataset"] == dataset
                ],
                [
                    (change_sentence(r, board.name(r["model"]), comparison), r)
                    for r in comparison["rows"]
                    if r["dataset"] == dataset
                ],
                [
                    (ranking_sentence(r, comparison), r)
                    for r in comparison["rankings"]
                    if r["dataset"] == dataset
                ],
            )
        )
    rows = comparison["rows"]
    return ComparisonView(
        comparison_title(comparison),
        comparison,
        sections,
        sum(r["verdict"] == SIGNIFICANT for r in rows),
        rows[0]["family_size"] if rows else 0,
    )
