"""Do datasets agree on the model ranking? Kendall τ_b per dataset pair, Kendall's W, reversals.

Inputs are tables from ``sgs`` and ``ranking`` restricted to the datasets proper (the pooled ``"all"``
is not a separate witness). Lower SGS ranks first.

What the data can support: τ between two datasets needs ≥ 3 models (with two, τ is ±1 and p = 1);
W's χ² p-value is invalid for few objects, so W's p comes from a permutation null (exact while small);
a reversal is called significant only when an exact sign-flip test on each of the two datasets rejects
after Holm correction over ``REVERSAL_FAMILY`` — below the item count where that is reachable the
verdict is "not testable". The bootstrap CIs stay as descriptions (percentile intervals over 4–16
items under-cover: about 70–80 % for a nominal 95 % with 4 items).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.axes.measures import headline_measures
from benchmark.stats.exact import kendall_w_permutation_p, sign_flip_floor, sign_flip_p
from benchmark.stats.ranking import NEEDS_THREE, PairedDraws
from benchmark.stats.sgs import ALL
from benchmark.stats.significance import ALPHA, SIGNIFICANT, corrected, verdict

MIN_TAU_MODELS = 3
"""Kendall τ between two datasets is reported only with at least this many models."""
REVERSAL_FAMILY = (
    "Holm over every testable (headline measure × dataset pair × model pair), flipped or not; a reversal's "
    "p is the larger of the two exact two-sided sign-flip p-values (intersection–union test); a candidate is "
    "testable when its Holm-adjusted floor is below alpha"
)


@dataclass(frozen=True)
class KendallW:
    """Kendall's coefficient of concordance, its permutation p and the χ² approximation."""

    w: float
    """W in [0, 1]: 1 = every rater ranks the objects identically."""
    chi2: float
    """m (n − 1) W, approximately χ² with n − 1 degrees of freedom (only for many objects)."""
    p_chi2: float
    """upper-tail p-value of ``chi2`` (approximate; invalid for few objects)."""
    p: float = float("nan")
    """permutation p (each rater's ranking permuted independently): exact or Monte-Carlo."""
    p_method: str = ""
    """``"exact"`` or ``"monte-carlo"``."""


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
    p, method = kendall_w_permutation_p(ranks)
    return KendallW(w, chi2, float(stats.chi2.sf(chi2, n - 1)), p, method)


def _sgs_wide(cells: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Datasets × models SGS for one measure (datasets proper only)."""
    rows = cells[(cells["measure"] == measure) & (cells["dataset"] != ALL)]
    return rows.pivot_table(index="dataset", columns="model", values="sgs", aggfunc="first").sort_index()


def kendall_tau_table(cells: pd.DataFrame) -> pd.DataFrame:
    """τ_b between the model orderings of every pair of datasets, per measure.

    Args:
        cells: ``model, dataset, measure, sgs`` rows (``sgs.sgs_table``).

    Returns:
        ``measure, dataset_a, dataset_b, n_models, tau_b, p, note`` (scipy ``kendalltau``, variant b);
        with fewer than ``MIN_TAU_MODELS`` models τ and p are NaN and ``note`` says why.
    """
    rows = []
    for measure in sorted(cells["measure"].unique()):
        wide = _sgs_wide(cells, measure)
        for a, b in itertools.combinations(wide.index, 2):
            pair = wide.loc[[a, b]].dropna(axis=1)
            tau, p, note = float("nan"), float("nan"), NEEDS_THREE
            if pair.shape[1] >= MIN_TAU_MODELS:
                result = stats.kendalltau(pair.loc[a], pair.loc[b], variant="b")
                tau, p, note = float(result.statistic), float(result.pvalue), ""
            rows.append((measure, a, b, pair.shape[1], tau, p, note))
    return pd.DataFrame(rows, columns=["measure", "dataset_a", "dataset_b", "n_models", "tau_b", "p", "note"])


def kendall_w_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Kendall's W per measure, datasets as raters, over the models present on every dataset."""
    rows = []
    for measure in sorted(cells["measure"].unique()):
        wide = _sgs_wide(cells, measure).dropna(axis=1)
        result = kendall_w(wide.to_numpy(dtype=float))
        rows.append((measure, wide.shape[1], wide.shape[0], *astuple(result)))
    return pd.DataFrame(
        rows, columns=["measure", "n_models", "n_datasets", "w", "chi2", "p_chi2", "p", "p_method"]
    )


REVERSAL_COLUMNS = [
    *("measure", "model_a", "model_b", "dataset_a", "dataset_b", "n_items_a", "n_items_b"),
    *("diff_a", "ci_low_a", "ci_high_a", "diff_b", "ci_low_b", "ci_high_b", "p_a", "p_b", "p"),
    *("p_holm", "family_size", "p_floor_holm", "testable", "verdict", "significant", "candidates"),
]


def _paired_differences(
    draws: Sequence[PairedDraws], measures: Sequence[str]
) -> dict[tuple[str, ...], np.ndarray]:
    """(measure, dataset, model_a, model_b) -> per-item s_a − s_b on the items both models share."""
    out: dict[tuple[str, ...], np.ndarray] = {}
    for cell in draws:
        if cell.dataset == ALL or cell.measure not in measures:
            continue
        for a, b in itertools.combinations(range(len(cell.models)), 2):
            out[(cell.measure, cell.dataset, cell.models[a], cell.models[b])] = (
                cell.values[:, a] - cell.values[:, b]
            )
    return out


def reversal_table(
    pairwise: pd.DataFrame,
    draws: Sequence[PairedDraws],
    measures: Sequence[str] | None = None,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Model pairs whose order flips between two datasets, each with an exact, corrected test.

    Args:
        pairwise: ``ranking.pairwise_table`` rows (diff = SGS_a − SGS_b with paired bootstrap CIs).
        draws: the paired per-item values (``ranking.paired_draws``) the exact tests run on.
        measures: the family's measures (default: the headline measures, one per axis).

    Returns:
        ``REVERSAL_COLUMNS``; one row per flipped (measure, model pair, dataset pair). ``p_a``/``p_b``:
        exact two-sided sign-flip p of the paired differences on each dataset; ``p`` = max of the two
        (both must reject); ``p_holm``: Holm over every candidate of the family, flipped or not (an
        unflipped candidate has p = 1; the ``family_size`` testable candidates); ``p_floor_holm``: the
        smallest ``p_holm`` these item counts can reach (Holm over every candidate's floor); ``verdict``
        "not testable" when that floor is ≥ alpha.
    """
    measures = headline_measures() if measures is None else measures
    diffs = _paired_differences(draws, measures)
    proper = pairwise[(pairwise["dataset"] != ALL) & pairwise["measure"].isin(measures)]
    candidates = []
    for (measure, model_a, model_b), group in proper.groupby(["measure", "model_a", "model_b"], sort=True):
        by_dataset = group.set_index("dataset").sort_index()
        for d1, d2 in itertools.combinations(by_dataset.index, 2):
            one, two = by_dataset.loc[d1], by_dataset.loc[d2]
            flipped = bool(np.sign(one["diff"]) * np.sign(two["diff"]) < 0)
            x, y = diffs[(measure, d1, model_a, model_b)], diffs[(measure, d2, model_a, model_b)]
            p_a, p_b = (sign_flip_p(x), sign_flip_p(y)) if flipped else (float("nan"), float("nan"))
            floor = max(
                sign_flip_floor(int(np.count_nonzero(x)), exact_max=len(x)),
                sign_flip_floor(int(np.count_nonzero(y)), exact_max=len(y)),
            )
            key = (measure, model_a, model_b, d1, d2, len(x), len(y))
            sides = tuple(row[k] for row in (one, two) for k in ("diff", "ci_low", "ci_high"))
            candidates.append((*key, *sides, p_a, p_b, max(p_a, p_b) if flipped else 1.0, floor, flipped))
    if not candidates:
        return pd.DataFrame(columns=REVERSAL_COLUMNS)
    # the candidates' columns: REVERSAL_COLUMNS up to "p", then what the correction reads
    table = pd.DataFrame(candidates, columns=[*REVERSAL_COLUMNS[:16], "floor", "flipped"])
    p_holm, floor_holm, testable = corrected(
        table["p"].to_numpy(dtype=float), table["floor"].to_numpy(dtype=float), alpha
    )
    table["p_holm"], table["p_floor_holm"], table["testable"] = p_holm, floor_holm, testable
    table["family_size"] = int(testable.sum())
    table["candidates"] = len(table)
    table["verdict"] = [
        verdict(p, ok, alpha) for p, ok in zip(table["p_holm"], table["testable"], strict=True)
    ]
    table["significant"] = table["verdict"] == SIGNIFICANT
    return table[table["flipped"]][REVERSAL_COLUMNS].reset_index(drop=True)
