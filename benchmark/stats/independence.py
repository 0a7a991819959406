"""Do the axes measure different things? Spearman between measures, the Pareto view, accuracy vs SGS."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.axes.measures import measure_names
from benchmark.stats.sgs import ALL

GENERATION_MEASURE = "bertscore"
"""The generation-consistency measure of the Pareto table (the authors' BERTScore)."""
MIRRORING_MEASURE = "mirroring"
MIN_PAIRS = 3
"""Fewer points than this give no correlation (null)."""


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(ρ, p) of Spearman's rank correlation over pairs where both are finite; NaN if < 3 pairs."""
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < MIN_PAIRS:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input has no ranks to correlate: NaN is the answer
        result = stats.spearmanr(x[keep], y[keep])
    return float(result.statistic), float(result.pvalue)


def _measure_pairs(wide: pd.DataFrame) -> list[tuple[str, str, int, float, float]]:
    """(measure_a, measure_b, n_items, ρ, p) of Spearman for each pair of measures (schema order) over the
    rows of an items × measures table."""
    present = [m for m in measure_names() if m in wide.columns]
    rows = []
    for a, b in itertools.combinations(present, 2):
        x, y = wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)
        rows.append((a, b, int((np.isfinite(x) & np.isfinite(y)).sum()), *spearman(x, y)))
    return rows


FISHER_VARIANCE = 1.06
"""Var(atanh ρ_S) ≈ 1.06 / (n − 3) for Spearman's ρ (Fieller, Hartley & Pearson 1957)."""
COMBINED_COLUMNS = ["scope", "model", "measure_a", "measure_b", "n_models", "n_items", "rho", "p", "method"]


def fisher_combined(rhos: Sequence[float], sizes: Sequence[int]) -> tuple[float, float, int]:
    """(ρ, two-sided p, models used) of per-model Spearman ρ combined on Fisher's z scale.

    Each model's z = atanh ρ is weighted by (n − 3) / 1.06, its inverse variance; models with n ≤ 3 or
    an undefined ρ are skipped. Items of different models are *not* stacked as if independent.

    >>> rho, p, k = fisher_combined([0.5, 0.5], [20, 20])
    >>> round(rho, 6), k
    (0.5, 2)
    """
    pairs = [(r, n) for r, n in zip(rhos, sizes, strict=True) if np.isfinite(r) and n > 3]
    if not pairs:
        return float("nan"), float("nan"), 0
    z = np.arctanh(np.clip([r for r, _ in pairs], -0.999999, 0.999999))
    weights = (np.array([n for _, n in pairs], dtype=float) - 3.0) / FISHER_VARIANCE
    mean_z = float(np.sum(weights * z) / weights.sum())
    p = float(2.0 * stats.norm.sf(abs(mean_z) * np.sqrt(weights.sum())))
    rho = float(np.tanh(mean_z)) if len(pairs) > 1 else float(pairs[0][0])  # one group: its own ρ, unclipped
    return rho, p, len(pairs)


WITHIN_DATASET = "fisher-z within dataset"
"""``method`` of every row: Spearman within one model and one dataset, combined on Fisher's z scale."""


def independence_table(per_item: pd.DataFrame) -> pd.DataFrame:
    """Spearman of per-item s_X between measures within each model *and dataset*, combined per model and
    across all models.

    Correlating items pooled over datasets would mostly measure how datasets differ (a dataset where
    every measure is high next to one where every measure is low makes any two measures correlate), not
    whether the measures move together item by item; so each ρ is computed within one (model, dataset)
    group and the groups' ρ are combined by Fisher's z (:func:`fisher_combined`).

    Args:
        per_item: long per-item table (``sgs.instability_per_item``); the ``"all"`` rows are ignored
            because the datasets proper already hold every item.

    Returns:
        ``COMBINED_COLUMNS``; ``scope`` "model" (one model's datasets combined) or "combined" (model None;
        every model × dataset group combined; ``n_models``: models used), ``method`` WITHIN_DATASET.
    """
    items = per_item[per_item["dataset"] != ALL]
    groups = []
    for (model, dataset), group in items.groupby(["model", "dataset"], sort=True):
        wide = group.pivot_table(index="item_id", columns="measure", values="s")
        groups += [(model, dataset, *r) for r in _measure_pairs(wide)]
    per_group = pd.DataFrame(
        groups, columns=["model", "dataset", "measure_a", "measure_b", "n_items", "rho", "p"]
    )
    rows = []
    for (model, a, b), group in per_group.groupby(["model", "measure_a", "measure_b"], sort=True):
        rho, p, _ = fisher_combined(group["rho"].to_list(), group["n_items"].to_list())
        rows.append(("model", model, a, b, 1, int(group["n_items"].sum()), rho, p, WITHIN_DATASET))
    for (a, b), group in per_group.groupby(["measure_a", "measure_b"], sort=False):
        rho, p, _ = fisher_combined(group["rho"].to_list(), group["n_items"].to_list())
        used = group.loc[np.isfinite(group["rho"]) & (group["n_items"] > 3), "model"].nunique()
        rows.append(("combined", None, a, b, int(used), int(group["n_items"].sum()), rho, p, WITHIN_DATASET))
    return pd.DataFrame(rows, columns=COMBINED_COLUMNS)


def pareto_optimal(points: np.ndarray) -> np.ndarray:
    """Which rows of ``points`` ``[n, 2]`` (lower is better on both) no other row dominates.

    >>> pareto_optimal(np.array([[1.0, 3.0], [2.0, 2.0], [2.0, 4.0]])).tolist()
    [True, True, False]
    """
    # [i, j]: row j is at least as good as row i everywhere, and strictly better somewhere
    better_or_equal = np.all(points[None, :, :] <= points[:, None, :], axis=2)
    strictly = np.any(points[None, :, :] < points[:, None, :], axis=2)
    dominated = np.any(better_or_equal & strictly, axis=1)
    optimal: np.ndarray = ~dominated & np.all(np.isfinite(points), axis=1)
    return optimal


def pareto_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Generation (BERTScore SGS) against mirroring SGS per (dataset, model), with Pareto optimality."""
    wide = cells[cells["measure"].isin([GENERATION_MEASURE, MIRRORING_MEASURE])].pivot_table(
        index=["dataset", "model"], columns="measure", values="sgs", dropna=False
    )
    wide = wide.reindex(columns=[GENERATION_MEASURE, MIRRORING_MEASURE]).reset_index()
    wide = wide.rename(columns={GENERATION_MEASURE: "generation", MIRRORING_MEASURE: "mirroring"})
    optimal = np.zeros(len(wide), dtype=bool)
    for index in wide.groupby("dataset").groups.values():
        points = wide.loc[index, ["generation", "mirroring"]].to_numpy(dtype=float)
        optimal[wide.index.get_indexer(index)] = pareto_optimal(points)
    wide["pareto_optimal"] = optimal
    return wide[["dataset", "model", "generation", "mirroring", "pareto_optimal"]].sort_values(
        ["dataset", "model"]
    )


def accuracy_vs_sgs(
    accuracy: pd.DataFrame, cells: pd.DataFrame, measures: Sequence[str] | None = None
) -> pd.DataFrame:
    """Spearman ρ between baseline accuracy and SGS over (model, dataset) pairs, per measure (default:
    every registered measure)."""
    acc = accuracy[accuracy["dataset"] != ALL][["model", "dataset", "accuracy"]]
    rows = []
    for measure in measure_names() if measures is None else measures:
        sgs = cells[(cells["measure"] == measure) & (cells["dataset"] != ALL)][["model", "dataset", "sgs"]]
        both = acc.merge(sgs, on=["model", "dataset"]).dropna()
        rho, p = spearman(both["accuracy"].to_numpy(dtype=float), both["sgs"].to_numpy(dtype=float))
        rows.append({"measure": measure, "n_pairs": len(both), "rho": rho, "p": p})
    return pd.DataFrame(rows, columns=["measure", "n_pairs", "rho", "p"])
