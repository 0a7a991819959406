"""How many items does a stable SGS need? SGS on random item subsets against the full-sample SGS.

The authors picked N = 16 as the smallest N whose estimate stays within 15 % of the estimate on all
items; we report the mean and 95th percentile of |SGS(subset) − SGS(all)| / SGS(all) for each N.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from benchmark.stats.ranking import PairedDraws
from benchmark.stats.sgs import CELL_KEYS, cell_rng

SIZES: tuple[int, ...] = (4, 8, 16, 32, 64)
SUBSETS = 500
"""Random subsets per (cell, N): enough for a stable mean and 95th percentile."""
TOLERANCE = 0.15


def subset_sizes(n_available: int, sizes: Sequence[int] = SIZES) -> list[int]:
    """The sizes to study: those ≤ ``n_available``, plus ``n_available`` itself below the largest size.

    >>> subset_sizes(16), subset_sizes(100)
    ([4, 8, 16], [4, 8, 16, 32, 64])
    """
    chosen = [n for n in sizes if n <= n_available]
    if 0 < n_available < max(sizes) and n_available not in chosen:
        chosen.append(n_available)
    return chosen


def relative_deviations(
    values: np.ndarray, n: int, *, rng: np.random.Generator, subsets: int = SUBSETS
) -> np.ndarray:
    """|mean of a random n-subset − mean of all| / mean of all, for ``subsets`` subsets (no replacement)."""
    full = values.mean()
    # argsort of uniform noise = a uniform random permutation per row; take its first n items
    pick = rng.random((subsets, values.size)).argsort(axis=1)[:, :n]
    with np.errstate(divide="ignore", invalid="ignore"):
        deviations: np.ndarray = np.abs(values[pick].mean(axis=1) - full) / full
    return deviations


def sample_size_table(per_item: pd.DataFrame, *, seed: int, subsets: int = SUBSETS) -> pd.DataFrame:
    """``model, dataset, measure, n, n_available, mean_rel_dev, p95_rel_dev`` for every cell and size."""
    rows = []
    for key, group in per_item.groupby(list(CELL_KEYS), sort=True):
        values = group.sort_values("item_id")["s"].to_numpy(dtype=float)
        for n in subset_sizes(values.size):
            dev = relative_deviations(values, n, rng=cell_rng(seed, "subsets", *key, n), subsets=subsets)
            finite = bool(np.isfinite(dev).all())
            mean, p95 = (float(dev.mean()), float(np.percentile(dev, 95))) if finite else (np.nan, np.nan)
            rows.append((*key, n, int(values.size), mean, p95))
    columns = [*CELL_KEYS, "n", "n_available", "mean_rel_dev", "p95_rel_dev"]
    return pd.DataFrame(rows, columns=columns)


def smallest_n_table(study: pd.DataFrame, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """Smallest n per cell whose mean relative deviation is within ``tolerance`` (None if none is)."""
    rows = []
    for key, group in study.groupby(list(CELL_KEYS), sort=True):
        within = group[group["mean_rel_dev"] <= tolerance]
        smallest = int(within["n"].min()) if len(within) else None
        rows.append((*key, int(group["n_available"].iloc[0]), smallest))
    return pd.DataFrame(rows, columns=[*CELL_KEYS, "n_available", "smallest_n"])


def _order_signs(sgs: np.ndarray) -> np.ndarray:
    """sign(SGS_i − SGS_j) for every model pair i < j; ``sgs`` is ``[..., n_models]``."""
    i, j = np.triu_indices(sgs.shape[-1], k=1)
    signs: np.ndarray = np.sign(sgs[..., i] - sgs[..., j])
    return signs


def ranking_agreement_rows(
    cell: PairedDraws, *, seed: int, subsets: int = SUBSETS
) -> list[tuple[object, ...]]:
    """How often a random n-item subset (shared by all models) reproduces the full model ordering.

    ``mean_tau`` is Kendall's τ_a between the subset's and the full ordering (concordant minus discordant
    model pairs over all pairs); ``same_order`` the share of subsets whose ordering is identical. Rows
    in the columns of :func:`ranking_agreement_table`.
    """
    n_items, n_models = cell.values.shape
    if n_models < 2:
        return []
    full = _order_signs(cell.sgs)
    rows: list[tuple[object, ...]] = []
    for n in subset_sizes(n_items):
        rng = cell_rng(seed, "ranking-subsets", cell.dataset, cell.measure, n)
        pick = rng.random((subsets, n_items)).argsort(axis=1)[:, :n]
        signs = _order_signs(cell.values[pick].mean(axis=1))  # [subsets, pairs]
        same = float((signs == full).all(axis=1).mean())
        rows.append((cell.dataset, cell.measure, n, n_items, n_models, float((signs * full).mean()), same))
    return rows


def ranking_agreement_table(
    cells: Sequence[PairedDraws], *, seed: int, subsets: int = SUBSETS
) -> pd.DataFrame:
    """``dataset, measure, n, n_available, n_models, mean_tau, same_order`` (cells with ≥ 2 models)."""
    columns = ["dataset", "measure", "n", "n_available", "n_models", "mean_tau", "same_order"]
    rows = [r for cell in cells for r in ranking_agreement_rows(cell, seed=seed, subsets=subsets)]
    return pd.DataFrame(rows, columns=columns)
