"""Is the instability above a threshold ε? One-sided tests per cell and multiple-testing corrections.

The authors' test is a one-sided one-sample t-test that the mean of s_X(i) exceeds ε (ε ∈ {0.01, 0.05,
0.10}, 0.05 primary) with markers * p < .05, ** p < .01, † p < .001. We add the Wilcoxon signed-rank
test on s_X(i) − ε (no normality assumption) and Holm / Benjamini–Hochberg adjusted p-values across
all (model × dataset × measure) cells.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.sgs import ALL, CELL_KEYS

EPSILONS: tuple[float, ...] = (0.01, 0.05, 0.10)
PRIMARY_EPSILON = 0.05
MARKERS: tuple[tuple[str, float], ...] = (("†", 0.001), ("**", 0.01), ("*", 0.05))
"""(symbol, threshold): the first threshold that p is below wins."""
ALPHA = 0.05


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


def epsilon_tests(per_item: pd.DataFrame, epsilons: Sequence[float] = EPSILONS) -> pd.DataFrame:
    """Raw tests per (model, dataset, measure, epsilon): ``t, p_t, marker, wilcoxon_w, p_wilcoxon``."""
    rows = []
    for key, group in per_item.groupby(list(CELL_KEYS), sort=True):
        values = group["s"].to_numpy(dtype=float)
        for epsilon in epsilons:
            t, p_t = t_test_greater(values, epsilon)
            w, p_w = wilcoxon_greater(values, epsilon)
            rows.append(dict(zip(CELL_KEYS, key, strict=True)) | {
                "epsilon": epsilon, "t": t, "p_t": p_t, "marker": marker(p_t),
                "wilcoxon_w": w, "p_wilcoxon": p_w})
    return pd.DataFrame(rows, columns=[*CELL_KEYS, "epsilon", "t", "p_t", "marker", "wilcoxon_w", "p_wilcoxon"])


def adjust_across_cells(tests: pd.DataFrame) -> pd.DataFrame:
    """Add ``p_holm``, ``p_bh``, ``significant_holm``, ``significant_bh`` to ``epsilon_tests`` rows.

    One family of tests per ε over the datasets proper, and a second per ε over the ``"all"`` cells,
    because an ``"all"`` cell re-uses the items of the other cells.
    """
    out = tests.copy()
    out["p_holm"] = np.nan
    out["p_bh"] = np.nan
    family = np.where(out["dataset"] == ALL, "pooled", "datasets")
    for index in out.groupby([out["epsilon"], family]).groups.values():
        p = out.loc[index, "p_t"].to_numpy(dtype=float)
        out.loc[index, "p_holm"] = holm(p)
        out.loc[index, "p_bh"] = benjamini_hochberg(p)
    out["significant_holm"] = out["p_holm"] < ALPHA
    out["significant_bh"] = out["p_bh"] < ALPHA
    return out
