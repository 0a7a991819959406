"""Synthetic deltas tables that follow the contract (docs/CONTRACTS.md section 3), for tests and examples.

Each model gets an instability level per dataset (so rankings can reverse between datasets) and each
measure a typical size relative to its scale R; controls carry small numerical noise only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.axes.measures import all_measures, delta_columns
from benchmark.schema import BASELINE_VARIANT_ID
from benchmark.stats.sgs import cell_rng

DATASETS: tuple[str, ...] = (
    "alpaca",
    "hotpot_qa",
    "natural_questions",
    "simpleqa_verified",
    "trivia_qa",
    "truthful_qa",
)
# (family, place, strength) of the rewrites each synthetic item gets; a small slice of the real set.
REWRITES: tuple[tuple[str, str, float], ...] = tuple(
    [("politeness", p, s) for p in ("prefix", "suffix") for s in (-4.0, 4.0)]
    + [("spacing", p, s) for p in ("prefix", "global") for s in (5.0, 50.0)]
    + [
        ("punctuation", "suffix", 3.0),
        ("letter_case", "global", 50.0),
        ("length", "global", 2.0),
        ("form", "global", 1.0),
    ]
)
CONTROLS: tuple[tuple[str, str, float], ...] = (("identity", "global", 1.0), ("rerun", "none", 0.0))


def _variant_id(family: str, place: str, strength: float) -> str:
    return f"{family}/{place}/{strength:g}"


def _measure_deltas(rng: np.random.Generator, level: float, n: int) -> dict[str, np.ndarray]:
    """One array of Δ per measure for n variants at instability ``level`` (a fraction of R)."""
    out: dict[str, np.ndarray] = {}
    for m in all_measures():
        if m.name == "mirroring":
            out["delta_mirroring"] = (rng.random(n) < min(level * 2.0, 1.0)).astype(float)
            continue
        size = np.abs(rng.normal(level, level / 2.0, n)) * m.scale
        # a similarity's delta is one-sided (the baseline is its best value); a change has either sign
        sign = -1.0 if m.direction == "down" else rng.choice([-1.0, 1.0], n)
        out[f"delta_{m.name}"] = sign * size
    return out


def synthetic_item(model: str, dataset: str, item: int, *, level: float, seed: int) -> pd.DataFrame:
    """All rows (baseline, rewrites, controls) of one item of one model."""
    rng = cell_rng(seed, model, dataset, item)
    item_level = level * rng.lognormal(0.0, 0.3)
    plan = [("baseline", "none", 0.0), *REWRITES, *CONTROLS]
    ids = {"model": model, "dataset": dataset, "item_id": f"{dataset}-{item:03d}"}
    frame = pd.DataFrame(
        [ids | {"variant_id": _variant_id(*p), "family": p[0], "place": p[1], "strength": p[2]} for p in plan]
    )
    deltas = _measure_deltas(rng, item_level, len(plan))
    noise_rows = frame["family"].isin([c[0] for c in CONTROLS]).to_numpy()
    for column, values in deltas.items():
        values[0] = 0.0  # the baseline row has zero delta by definition
        values[noise_rows] *= 0.01
        frame[column] = values
    frame.loc[frame["family"] == "form", "delta_mirroring"] = np.nan  # form is not scored for mirroring
    frame["correct"] = (rng.random(len(plan)) < 0.6).astype(float)
    assert frame["variant_id"].iloc[0] == BASELINE_VARIANT_ID
    return frame


def synthetic_deltas(
    levels: Mapping[str, Mapping[str, float]], *, n_items: int = 16, seed: int = 0
) -> pd.DataFrame:
    """A deltas table for ``levels[model][dataset]`` = typical scaled instability.

    >>> table = synthetic_deltas({"acme__a": {"trivia_qa": 0.1}}, n_items=2)
    >>> sorted(table["family"].unique())[:3], len(table)
    (['baseline', 'form', 'identity'], 30)
    """
    frames = [
        synthetic_item(model, dataset, i, level=level, seed=seed)
        for model, per_dataset in sorted(levels.items())
        for dataset, level in sorted(per_dataset.items())
        for i in range(n_items)
    ]
    table = pd.concat(frames, ignore_index=True)
    ordered = list(delta_columns())
    return table[ordered]


def example_levels(models: Sequence[str], datasets: Sequence[str] = DATASETS) -> dict[str, dict[str, float]]:
    """Instability levels where model order differs between datasets (to exercise reversals)."""
    base = np.linspace(0.08, 0.12, len(models))
    # a cyclic shift every two datasets reverses orders; the small per-model offset keeps some agreement
    return {
        model: {d: float(base[(i + j // 2) % len(models)] + 0.01 * i) for j, d in enumerate(datasets)}
        for i, model in enumerate(models)
    }
