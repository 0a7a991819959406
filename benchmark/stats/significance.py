"""Is the instability above a threshold ε? One-sided tests per cell and multiple-testing corrections.

The authors' test is a one-sided one-sample t-test that the mean of s_X(i) exceeds ε (ε ∈ {0.01, 0.05,
0.10}, 0.05 primary) with markers * p < .05, ** p < .01, † p < .001. We add the Wilcoxon signed-rank
test on s_X(i) − ε (no normality assumption) and Holm / Benjamini–Hochberg adjusted p-values.

Every marker shown anywhere comes from the **Holm-adjusted** p (``marker``); the raw p keeps its own,
labelled marker (``marker_uncorrected``) for detail views only. The correction family is
``CORRECTION_FAMILY`` (one sentence, quoted in leaderboard.json and METHOD.md). A cell whose test
cannot be computed (fewer than 2 items, a constant sample) gets the verdict "not testable".
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.exact import wilcoxon_floor
from benchmark.stats.sgs import ALL, CELL_KEYS

EPSILONS: tuple[float, ...] = (0.01, 0.05, 0.10)
PRIMARY_EPSILON = 0.05
MARKERS: tuple[tuple[str, float], ...] = (("†", 0.001), ("**", 0.01), ("*", 0.05))
"""(symbol, threshold): the first threshold that p is below wins."""
ALPHA = 0.05
SIGNIFICANT, NOT_SIGNIFICANT, NOT_TESTABLE = "significant", "not significant", "not testable"
"""The three verdicts of a test; markers are shown only for "significant"."""
CORRECTION_FAMILY = (
    "Holm over all (model × dataset × measure) cells of one aggregate (paper or extended) at one ε; "
    'the datasets proper form one family, the pooled "all" cells a second (they re-use the same items)'
)


def marker(p: float) -> str:
    """Significance marker of a p-value.

    >>> [marker(p) for p in (0.0005, 0.005, 0.04, 0.2, float("nan"))]
    ['†', '**', '*', '', '']
    """
    for symbol, below in MARKERS:
        if p < below:  # NaN compares False everywhere: no marker
            return symbol
    return ""


def _ranked_tests(p_values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p as floats, an all-NaN output of the same shape, indices of the non-NaN p in ascending order)."""
    p = np.asarray(p_values, dtype=float)
    finite = np.flatnonzero(~np.isnan(p))
    return p, np.full(p.shape, np.nan), finite[np.argsort(p[finite], kind="stable")]


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values; NaNs stay NaN and do not count as tests.

    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    """
    p, out, order = _ranked_tests(p_values)
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (FDR); NaNs stay NaN and do not count.

    >>> benjamini_hochberg([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    p, out, order = _ranked_tests(p_values)
    m = order.size
    scaled = p[order] * m / np.arange(1, m + 1)
    # step-up: each adjusted p is the smallest scaled value at its rank or above
    out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def t_test_greater(values: np.ndarray, epsilon: float) -> tuple[float, float]:
    """(t, p) of the one-sided one-sample t-test that mean(values) > epsilon; NaN when undefined."""
    if values.size < 2:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant sample: scipy returns NaN, we keep it
        result = stats.ttest_1samp(values, epsilon, alternative="greater")
    return float(result.statistic), float(result.pvalue)


def wilcoxon_greater(values: np.ndarray, epsilon: float) -> tuple[float, float]:
    """(W, p) of the one-sided Wilcoxon signed-rank test that values − epsilon is shifted above 0."""
    shifted = values - epsilon
    if np.count_nonzero(shifted) < 1:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # small-sample approximation notes
        result = stats.wilcoxon(shifted, alternative="greater")
    return float(result.statistic), float(result.pvalue)


RAW_TEST_COLUMNS = (
    "epsilon",
    "n_items",
    "t",
    "p_t",
    "marker_uncorrected",
    "wilcoxon_w",
    "p_wilcoxon",
    "wilcoxon_testable",
)
ADJUSTED_COLUMNS = ("p_holm", "p_bh", "marker", "significant_holm", "significant_bh", "testable", "verdict")


def epsilon_tests(per_item: pd.DataFrame, epsilons: Sequence[float] = EPSILONS) -> pd.DataFrame:
    """Raw tests per (model, dataset, measure, epsilon).

    Columns: ``n_items, t, p_t, marker_uncorrected, wilcoxon_w, p_wilcoxon, wilcoxon_testable`` —
    the exact one-sided Wilcoxon test cannot go below 1/2^n, so with n ≤ 4 items it is not testable at α.
    """
    rows = []
    for key, group in per_item.groupby(list(CELL_KEYS), sort=True):
        values = group["s"].to_numpy(dtype=float)
        for epsilon in epsilons:
            t, p_t = t_test_greater(values, epsilon)
            w, p_w = wilcoxon_greater(values, epsilon)
            floor = wilcoxon_floor(int(np.count_nonzero(values - epsilon)))
            rows.append(
                dict(zip(CELL_KEYS, key, strict=True))
                | {
                    "epsilon": epsilon,
                    "n_items": int(values.size),
                    "t": t,
                    "p_t": p_t,
                    "marker_uncorrected": marker(p_t),
                    "wilcoxon_w": w,
                    "p_wilcoxon": p_w,
                    "wilcoxon_testable": bool(floor < ALPHA),
                }
            )
    return pd.DataFrame(rows, columns=[*CELL_KEYS, *RAW_TEST_COLUMNS])


def verdict(p_adjusted: float, testable: bool, alpha: float = ALPHA) -> str:
    """ "significant", "not significant" or "not testable" for one adjusted p-value.

    >>> verdict(0.01, True), verdict(0.2, True), verdict(float("nan"), False)
    ('significant', 'not significant', 'not testable')
    """
    if not testable or np.isnan(p_adjusted):
        return NOT_TESTABLE
    return SIGNIFICANT if p_adjusted < alpha else NOT_SIGNIFICANT


def adjust_across_cells(tests: pd.DataFrame) -> pd.DataFrame:
    """Add ``ADJUSTED_COLUMNS`` to ``epsilon_tests`` rows (the family: ``CORRECTION_FAMILY``).

    One family of tests per ε over the datasets proper, and a second per ε over the ``"all"`` cells,
    because an ``"all"`` cell re-uses the items of the other cells. ``marker`` comes from ``p_holm``;
    a test with no p (fewer than 2 items, a constant sample) is "not testable" and does not count.
    """
    out = tests.copy()
    out["p_holm"] = np.nan
    out["p_bh"] = np.nan
    family = np.where(out["dataset"] == ALL, "pooled", "datasets")
    for index in out.groupby([out["epsilon"], family]).groups.values():
        p = out.loc[index, "p_t"].to_numpy(dtype=float)
        out.loc[index, "p_holm"] = holm(p)
        out.loc[index, "p_bh"] = benjamini_hochberg(p)
    out["testable"] = out["p_t"].notna() & (out["n_items"] >= 2)
    out["verdict"] = [verdict(p, ok) for p, ok in zip(out["p_holm"], out["testable"], strict=True)]
    out["marker"] = [
        marker(p) if v == SIGNIFICANT else "" for p, v in zip(out["p_holm"], out["verdict"], strict=True)
    ]
    out["significant_holm"] = out["verdict"] == SIGNIFICANT
    out["significant_bh"] = out["testable"] & (out["p_bh"] < ALPHA)
    return out
