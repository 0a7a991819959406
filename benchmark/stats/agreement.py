"""Do datasets agree on the model ranking? Kendall τ_b per dataset pair, Kendall's W, reversals.

Inputs are tables from ``sgs`` and ``ranking`` restricted to the datasets proper (the pooled ``"all"``
is not a separate witness). Lower SGS ranks first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.sgs import ALL


@dataclass(frozen=True)
class KendallW:
    """Kendall's coefficient of concordance and its χ² test."""

    w: float
    """W in [0, 1]: 1 = every rater ranks the objects identically."""
    chi2: float
    """m (n − 1) W, approximately χ² with n − 1 degrees of freedom."""
    p: float
    """upper-tail p-value of ``chi2``."""


def _tie_term(ranks: np.ndarray) -> float:
    """Σ (t³ − t) over the groups of tied values in one rater's ranks."""
    _, counts = np.unique(ranks, return_counts=True)
    return float(np.sum(counts.astype(float) ** 3 - counts))


def kendall_w(scores: np.ndarray) -> KendallW:
    """Kendall's W of ``scores`` ``[m raters, n objects]`` (ranked within each rater, ties averaged).

    W = 12 S / (m² (n³ − n) − m Σ_j T_j), S = Σ_i (R_i − mean R)², R_i the rank sum of object i,
    T_j = Σ (t³ − t) over rater j's tie groups.

    >>> kendall_w(np.array([[1, 2, 3], [1, 2, 3]])).w
    1.0
    """
    m, n = scores.shape
    if m < 2 or n < 2:
        return KendallW(float("nan"), float("nan"), float("nan"))
    ranks = np.vstack([stats.rankdata(row) for row in scores])
    rank_sums = ranks.sum(axis=0)
    s = float(np.sum((rank_sums - rank_sums.mean()) ** 2))
    denominator = m**2 * (n**3 - n) - m * sum(_tie_term(row) for row in ranks)
    if denominator <= 0:  # every rater ties every object: no ranking to agree on
        return KendallW(float("nan"), float("nan"), float("nan"))
    w = 12.0 * s / denominator
    chi2 = m * (n - 1) * w
    return KendallW(w, chi2, float(stats.chi2.sf(chi2, n - 1)))


def _sgs_wide(cells: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Datasets × models SGS for one measure (datasets proper only)."""
    rows = cells[(cells["measure"] == measure) & (cells["dataset"] != ALL)]
    return rows.pivot_table(index="dataset", columns="model", values="sgs", aggfunc="first").sort_index()


def kendall_tau_table(cells: pd.DataFrame) -> pd.DataFrame:
    """τ_b between the model orderings of every pair of datasets, per measure.

    Args:
        cells: ``model, dataset, measure, sgs`` rows (``sgs.sgs_table``).

    Returns:
        ``measure, dataset_a, dataset_b, n_models, tau_b, p`` (scipy ``kendalltau``, variant b).
    """
    rows = []
    for measure in sorted(cells["measure"].unique()):
        wide = _sgs_wide(cells, measure)
        for a, b in itertools.combinations(wide.index, 2):
            pair = wide.loc[[a, b]].dropna(axis=1)
            tau, p = float("nan"), float("nan")
            if pair.shape[1] >= 2:
                result = stats.kendalltau(pair.loc[a], pair.loc[b], variant="b")
                tau, p = float(result.statistic), float(result.pvalue)
            rows.append({"measure": measure, "dataset_a": a, "dataset_b": b, "n_models": pair.shape[1],
                         "tau_b": tau, "p": p})
    return pd.DataFrame(rows, columns=["measure", "dataset_a", "dataset_b", "n_models", "tau_b", "p"])


def kendall_w_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Kendall's W per measure, datasets as raters, over the models present on every dataset."""
    rows = []
    for measure in sorted(cells["measure"].unique()):
        wide = _sgs_wide(cells, measure).dropna(axis=1)
        result = kendall_w(wide.to_numpy(dtype=float))
        rows.append({"measure": measure, "n_models": wide.shape[1], "n_datasets": wide.shape[0],
                     "w": result.w, "chi2": result.chi2, "p": result.p})
    return pd.DataFrame(rows, columns=["measure", "n_models", "n_datasets", "w", "chi2", "p"])


def _excludes_zero(low: float, high: float) -> int:
    """+1 when the CI lies above 0, −1 below, 0 when it contains 0 (or is undefined)."""
    return 1 if low > 0 else -1 if high < 0 else 0


def reversal_table(pairwise: pd.DataFrame) -> pd.DataFrame:
    """Model pairs whose order flips between two datasets, with the flag of a significant reversal.

    Args:
        pairwise: ``ranking.pairwise_table`` rows (diff = SGS_a − SGS_b with paired CIs).

    Returns:
        ``measure, model_a, model_b, dataset_a, dataset_b, diff_a, ci_low_a, ci_high_a, diff_b, ci_low_b,
        ci_high_b, significant``; significant when both CIs exclude 0, on opposite sides.
    """
    proper = pairwise[pairwise["dataset"] != ALL]
    rows = []
    for (measure, model_a, model_b), group in proper.groupby(["measure", "model_a", "model_b"], sort=True):
        by_dataset = group.set_index("dataset").sort_index()
        for d1, d2 in itertools.combinations(by_dataset.index, 2):
            one, two = by_dataset.loc[d1], by_dataset.loc[d2]
            if not np.sign(one["diff"]) * np.sign(two["diff"]) < 0:
                continue
            side_1 = _excludes_zero(one["ci_low"], one["ci_high"])
            side_2 = _excludes_zero(two["ci_low"], two["ci_high"])
            rows.append({"measure": measure, "model_a": model_a, "model_b": model_b, "dataset_a": d1,
                         "dataset_b": d2, "diff_a": one["diff"], "ci_low_a": one["ci_low"],
                         "ci_high_a": one["ci_high"], "diff_b": two["diff"], "ci_low_b": two["ci_low"],
                         "ci_high_b": two["ci_high"], "significant": side_1 * side_2 < 0})
    columns = ["measure", "model_a", "model_b", "dataset_a", "dataset_b", "diff_a", "ci_low_a", "ci_high_a",
               "diff_b", "ci_low_b", "ci_high_b", "significant"]
    return pd.DataFrame(rows, columns=columns)
