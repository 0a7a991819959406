"""Accuracy under rewrite: how often a right baseline answer stays right (PromptBench's performance drop).

Per model, rewrite family and strength, over every item of every dataset with gold answers: ``kept`` is
the share of the rewritten responses of baseline-right items that are still right; ``drop`` is baseline
accuracy minus accuracy under the rewrite (each item's rewrites averaged). Whether the rewrite changes
accuracy at all is an exact two-sided sign-flip test on the per-item differences (rewritten − baseline),
Holm-corrected over every (model × family × strength) of the board: the same exact test and correction
as every other verdict (:mod:`benchmark.stats.exact`, :func:`benchmark.stats.significance.corrected`).

Computed from the deltas' ``correct`` column, so the committed summaries stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from benchmark.schema import BASELINE_FAMILY
from benchmark.stats.exact import sign_flip_floor, sign_flip_p
from benchmark.stats.sgs import CONTROL_FAMILIES
from benchmark.stats.significance import holm_fields

ITEM = ["dataset", "item_id"]
FAMILY = (
    "Holm over every (model × rewrite family × strength) of the board; exact two-sided sign-flip test of "
    "the per-item accuracy change (rewritten − baseline), items pooled over the datasets with gold answers"
)
"""The correction family of ``accuracy_under_rewrite[]`` (the leaderboard's ``correction`` block)."""


class RewriteRow(TypedDict):
    """One model × family × strength before the board-wide correction."""

    model: str
    family: str
    strength: float
    n_items: int
    n_right: int
    kept: float
    accuracy_baseline: float
    accuracy_rewritten: float
    drop: float
    p_exact: float
    p_floor: float


def _group_row(model: str, family: str, strength: float, items: pd.DataFrame) -> RewriteRow:
    """One (family, strength): counts, kept share, drop, and the exact test of the per-item change."""
    right = items[items["baseline"] == 1.0]
    d = (items["rewritten"] - items["baseline"]).to_numpy(dtype=float)
    nonzero = int(np.count_nonzero(d))
    return {
        "model": model,
        "family": family,
        "strength": float(strength),
        "n_items": len(items),
        "n_right": len(right),
        "kept": float(right["rewritten"].mean()) if len(right) else float("nan"),
        "accuracy_baseline": float(items["baseline"].mean()),
        "accuracy_rewritten": float(items["rewritten"].mean()),
        "drop": float(items["baseline"].mean() - items["rewritten"].mean()),
        "p_exact": sign_flip_p(d) if nonzero else float("nan"),
        "p_floor": sign_flip_floor(nonzero, exact_max=len(d)),
    }


def rewrite_accuracy_rows(deltas: pd.DataFrame, model: str) -> list[RewriteRow]:
    """Uncorrected rows of one model, sorted by family and strength (none without gold answers)."""
    graded = deltas[deltas["correct"].notna()]
    base = graded[graded["family"] == BASELINE_FAMILY].groupby(ITEM)["correct"].mean().rename("baseline")
    rewrites = graded[~graded["family"].isin(CONTROL_FAMILIES)]
    per_item = (
        rewrites.groupby([*ITEM, "family", "strength"])["correct"].mean().rename("rewritten").reset_index()
    )
    joined = per_item.join(base, on=ITEM, how="inner")
    joined["baseline"] = joined["baseline"].astype(float)
    joined["rewritten"] = joined["rewritten"].astype(float)
    return [
        _group_row(model, str(family), float(strength), items)
        for (family, strength), items in joined.groupby(["family", "strength"], sort=True)
    ]


def corrected_rows(rows: Iterable[RewriteRow | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every model's rows with ``p_holm``, ``p_floor_holm``, ``testable``, ``family_size``, ``verdict``."""
    table = [dict(r) for r in rows]
    fields = holm_fields([r["p_exact"] for r in table], [r["p_floor"] for r in table])
    out = [row | more for row, more in zip(table, fields, strict=True)]
    return sorted(out, key=lambda r: (r["model"], r["family"], r["strength"]))
