"""Comparing models on the items they share: ranks with bootstrap intervals, tie groups, paired tests.

For each (dataset, measure) the per-item values of every model are aligned on the items all models
have (an items × models matrix). One paired bootstrap resamples the *rows* of that matrix, so each
resample gives every model's SGS on the same items: rank intervals, tie groups and the CI of every
pairwise difference all come from the same draws.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.sgs import DEFAULT_RESAMPLES, cell_rng, percentile_ci
from benchmark.stats.significance import ALPHA, holm

NEEDS_THREE = "needs ≥3 models"


@dataclass(frozen=True)
class PairedDraws:
    """The aligned per-item values of one (dataset, measure) and their paired bootstrap."""

    dataset: str
    """dataset name or ``"all"``."""
    measure: str
    """measure name."""
    models: tuple[str, ...]
    """model slugs, sorted; the columns of ``values`` and ``draws``."""
    values: np.ndarray
    """s_X(i) on the shared items, ``[n_items, n_models]``."""
    draws: np.ndarray
    """SGS of each model in each resample, ``[resamples, n_models]``."""

    @property
    def sgs(self) -> np.ndarray:
        """SGS of each model on the shared items, ``[n_models]``."""
        means: np.ndarray = self.values.mean(axis=0)
        return means

    def diff_ci(self, a: int, b: int) -> tuple[float, float]:
        """Percentile CI of SGS[a] − SGS[b] over the paired resamples."""
        return percentile_ci(self.draws[:, a] - self.draws[:, b])


def shared_matrix(cell_items: pd.DataFrame) -> pd.DataFrame:
    """Items × models table of ``s`` restricted to items every model has (rows sorted by item)."""
    wide = cell_items.pivot_table(index="item_id", columns="model", values="s", aggfunc="first")
    return wide.dropna(axis=0, how="any").sort_index().sort_index(axis=1)


def paired_draws(
    per_item: pd.DataFrame, *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> list[PairedDraws]:
    """One ``PairedDraws`` per (dataset, measure) that has at least one shared item."""
    out = []
    for (dataset, measure), cell_items in per_item.groupby(["dataset", "measure"], sort=True):
        wide = shared_matrix(cell_items)
        if wide.empty:
            continue
        values = wide.to_numpy(dtype=float)
        rng = cell_rng(seed, "paired", dataset, measure)
        index = rng.integers(0, len(values), size=(resamples, len(values)))
        draws = values[index].mean(axis=1)  # [resamples, n_models]
        out.append(PairedDraws(str(dataset), str(measure), tuple(wide.columns), values, draws))
    return out


def tie_groups(cell: PairedDraws) -> np.ndarray:
    """Group number per model (1 = most stable group), in ``cell.models`` order.

    Models are walked from most to least stable; a model opens a new group when the paired CI of its
    difference to the current group's first model excludes 0. Walking from a leader keeps groups
    contiguous in the ranking (a plain "connected by overlap" rule can chain everything together).
    """
    order = np.argsort(cell.sgs, kind="stable")
    groups = np.zeros(len(order), dtype=int)
    group, leader = 1, order[0]
    for j in order:
        low, high = cell.diff_ci(int(j), int(leader))
        if low > 0 or high < 0:
            group, leader = group + 1, j
        groups[j] = group
    return groups


def rank_rows(cell: PairedDraws) -> list[dict[str, object]]:
    """Rank (1 = lowest SGS), its 95 % bootstrap interval and tie group of every model in one cell."""
    ranks = stats.rankdata(cell.sgs, method="min")
    draw_ranks = stats.rankdata(cell.draws, method="min", axis=1)
    low = np.percentile(draw_ranks, 2.5, axis=0, method="lower")
    high = np.percentile(draw_ranks, 97.5, axis=0, method="higher")
    groups = tie_groups(cell)
    return [
        {
            "model": m,
            "dataset": cell.dataset,
            "measure": cell.measure,
            "rank": int(ranks[j]),
            "rank_low": int(low[j]),
            "rank_high": int(high[j]),
            "tie_group": int(groups[j]),
        }
        for j, m in enumerate(cell.models)
    ]


def rank_table(cells: list[PairedDraws]) -> pd.DataFrame:
    """``model, dataset, measure, rank, rank_low, rank_high, tie_group`` for every cell."""
    columns = ["model", "dataset", "measure", "rank", "rank_low", "rank_high", "tie_group"]
    return pd.DataFrame([row for cell in cells for row in rank_rows(cell)], columns=columns)


def wilcoxon_two_sided(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(W, p) of the two-sided Wilcoxon signed-rank test on paired samples; NaN when all equal."""
    if np.count_nonzero(a - b) < 1:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = stats.wilcoxon(a, b)
    return float(result.statistic), float(result.pvalue)


def pairwise_rows(cell: PairedDraws) -> list[dict[str, object]]:
    """Every model pair of one cell: paired SGS difference, its CI, Wilcoxon and Holm within the cell."""
    pairs = list(itertools.combinations(range(len(cell.models)), 2))
    tests = [wilcoxon_two_sided(cell.values[:, a], cell.values[:, b]) for a, b in pairs]
    adjusted = holm([p for _, p in tests])
    rows: list[dict[str, object]] = []
    for (a, b), (w, p), p_holm in zip(pairs, tests, adjusted, strict=True):
        low, high = cell.diff_ci(a, b)
        rows.append(
            {
                "dataset": cell.dataset,
                "measure": cell.measure,
                "model_a": cell.models[a],
                "model_b": cell.models[b],
                "n_items": len(cell.values),
                "diff": float(cell.sgs[a] - cell.sgs[b]),
                "ci_low": low,
                "ci_high": high,
                "wilcoxon_w": w,
                "p_wilcoxon": p,
                "p_holm": float(p_holm),
                "testable": pair_testable(cell.values[:, a], cell.values[:, b]),
            }
        )
    return rows


def pair_testable(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the exact two-sided Wilcoxon test on these pairs can reach ``ALPHA`` at all.

    Its smallest p is 2 / 2^n for n non-zero differences, so with 4 items (p ≥ 0.125) no difference can
    be significant: the site says "not testable" instead of "no difference".

    >>> pair_testable(np.arange(4.0), np.zeros(4)), pair_testable(np.arange(1.0, 7.0), np.zeros(6))
    (False, True)
    """
    return bool(2.0 / 2.0 ** np.count_nonzero(a - b) < ALPHA)


def pairwise_table(cells: list[PairedDraws]) -> pd.DataFrame:
    """All pairwise comparisons (see ``pairwise_rows``), sorted by dataset, measure, model_a, model_b."""
    columns = [
        "dataset",
        "measure",
        "model_a",
        "model_b",
        "n_items",
        "diff",
        "ci_low",
        "ci_high",
        "wilcoxon_w",
        "p_wilcoxon",
        "p_holm",
        "testable",
    ]
    return pd.DataFrame([row for cell in cells for row in pairwise_rows(cell)], columns=columns)


def friedman_row(cell: PairedDraws) -> dict[str, object]:
    """Friedman test across models on the shared items of one cell (scipy; needs three models)."""
    n_items, n_models = cell.values.shape
    row: dict[str, object] = {
        "dataset": cell.dataset,
        "measure": cell.measure,
        "n_models": n_models,
        "n_items": n_items,
        "statistic": float("nan"),
        "p": float("nan"),
        "note": "",
    }
    if n_models < 3:
        row["note"] = NEEDS_THREE
        return row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # identical columns give 0/0
        result = stats.friedmanchisquare(*cell.values.T)
    row["statistic"], row["p"] = float(result.statistic), float(result.pvalue)
    return row


def friedman_table(cells: list[PairedDraws]) -> pd.DataFrame:
    """``dataset, measure, n_models, n_items, statistic, p, note`` for every cell."""
    return pd.DataFrame(
        [friedman_row(cell) for cell in cells],
        columns=["dataset", "measure", "n_models", "n_items", "statistic", "p", "note"],
    )
