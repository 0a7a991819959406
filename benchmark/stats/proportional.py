"""Pairs of measures that are one quantity up to a constant factor on a model's items.

When every baseline answer of a model hits the token cap, the summed log-probability is the per-token
mean times the same count for every item, so ``logprob`` and ``logprob_mean`` are one number on two
scales (R = 250 and 2.5): their ε-tests can still disagree, because ε is fixed on each measure's own
scale, but they are one finding, not two. This table lets every reader (the claims, the site) say so.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

RELATIVE_TOLERANCE = 1e-4
"""Per-item s values are stored to 6 significant digits: ratios equal within this count as one constant."""
COLUMNS = ["model", "dataset", "measure_a", "measure_b", "n_items", "factor"]


def constant_factor(a: np.ndarray, b: np.ndarray) -> float | None:
    """c with a = c · b on every item (within ``RELATIVE_TOLERANCE``), else None; None when b is all zero.

    >>> constant_factor(np.array([0.32, 0.64, 0.0]), np.array([1.0, 2.0, 0.0]))
    0.32
    >>> constant_factor(np.array([0.3, 0.7]), np.array([1.0, 2.0])) is None
    True
    """
    use = np.isfinite(a) & np.isfinite(b)
    a, b = a[use], b[use]
    nonzero = b != 0
    if a.size < 2 or not nonzero.any() or np.any(a[~nonzero] != 0):
        return None
    ratios = a[nonzero] / b[nonzero]
    factor = float(np.median(ratios))
    if factor <= 0 or not np.allclose(ratios, factor, rtol=RELATIVE_TOLERANCE, atol=0.0):
        return None
    return round(factor, 4)


def proportional_measures(per_item: pd.DataFrame) -> pd.DataFrame:
    """Every (model, dataset incl. ``"all"``, measure pair) whose per-item s are proportional.

    Args:
        per_item: ``model, dataset, item_id, measure, s`` (``summary.per_item_frame``).

    Returns:
        ``COLUMNS``: ``factor`` = s(measure_a) / s(measure_b) on every item; ``measure_a`` before
        ``measure_b`` in the table's measure order (schema order where the caller sorted by it).
    """
    rows = []
    for (model, dataset), group in per_item.groupby(["model", "dataset"], sort=True):
        wide = group.pivot_table(index="item_id", columns="measure", values="s", aggfunc="first")
        for a, b in itertools.combinations(list(wide.columns), 2):
            factor = constant_factor(wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float))
            if factor is not None:
                n = int((wide[a].notna() & wide[b].notna()).sum())
                rows.append([model, dataset, a, b, n, factor])
    return pd.DataFrame(rows, columns=COLUMNS)
