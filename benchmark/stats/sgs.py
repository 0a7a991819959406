"""Per-item instability s_X(i) and the SGS per (model, dataset, measure), with bootstrap CIs.

Three levels of reduction (METHOD.md section 5):

* per variant: the scaled delta d = Δ / R of every measure (R from ``benchmark.axes.measures``);
* per item: s_X(i) = sqrt(mean over the item's rewrite variants of d²), NaN-skipping;
* per dataset: SGS_X = mean over items of s_X(i), with a percentile bootstrap CI over items.

Every function here is pure: DataFrames in, DataFrames out. Per-item tables are *long*: one row per
(model, dataset, item_id, measure[, family]) with the value in column ``s``. The pseudo-dataset
``"all"`` pools every item of every dataset (item ids become ``"<dataset>/<item_id>"``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from benchmark.axes.measures import all_measures, delta_columns, measure_names
from benchmark.schema import BASELINE_FAMILY, DELTA_ID_COLUMNS, PAPER_FAMILIES

ALL = "all"
"""Pseudo-dataset that pools the items of every dataset."""
CONTROL_FAMILIES: frozenset[str] = frozenset({BASELINE_FAMILY, "identity", "rerun"})
"""Families that are not rewrites: never pooled into SGS."""
NOISE_CONTROLS: tuple[str, ...] = ("identity", "rerun")
"""Control families whose instability is the numerical noise floor."""
PAPER, EXTENDED = "paper", "extended"
AGGREGATES: dict[str, tuple[str, ...] | None] = {PAPER: PAPER_FAMILIES, EXTENDED: None}
"""Which rewrite families each SGS pools: "paper" = the authors' six (the headline SGS), "extended" =
every rewrite family (ours; always labelled as extended). None means all non-control families."""
AGGREGATE_LABELS: dict[str, str] = {PAPER: "SGS", EXTENDED: "SGS-ext"}
ITEM_KEYS: tuple[str, ...] = ("model", "dataset", "item_id")
CELL_KEYS: tuple[str, ...] = ("model", "dataset", "measure")
DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95


def scaled_deltas(deltas: pd.DataFrame) -> pd.DataFrame:
    """Id columns plus one column per measure holding d = Δ / R.

    >>> import pandas as pd
    >>> row = {c: "x" for c in DELTA_ID_COLUMNS} | {f"delta_{m}": 0.0 for m in measure_names()}
    >>> row["correct"] = 1.0
    >>> row["delta_bleu"] = -50.0
    >>> float(scaled_deltas(pd.DataFrame([row]))["bleu"].iloc[0])
    -0.5
    """
    missing = [c for c in delta_columns() if c not in deltas.columns]
    if missing:
        raise ValueError(f"deltas table lacks columns {missing} (see docs/CONTRACTS.md section 3)")
    scaled = {m.name: deltas[f"delta_{m.name}"].astype(float) / m.scale for m in all_measures()}
    return pd.concat(
        [deltas[list(DELTA_ID_COLUMNS)].reset_index(drop=True), pd.DataFrame(scaled).reset_index(drop=True)],
        axis=1,
    )


def _rms_per_group(scaled: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Long table ``keys + measure + s`` with s = sqrt(NaN-skipping mean of d²) per group."""
    names = list(measure_names())
    squares = scaled[names].pow(2)
    squares[list(keys)] = scaled[list(keys)]
    mean_sq = squares.groupby(list(keys), sort=True, dropna=False)[names].mean()
    long = np.sqrt(mean_sq).reset_index().melt(id_vars=list(keys), var_name="measure", value_name="s")
    return long.dropna(subset=["s"]).reset_index(drop=True)


def with_all_dataset(per_item: pd.DataFrame) -> pd.DataFrame:
    """Append the rows of the pseudo-dataset ``"all"`` (item ids prefixed by their dataset)."""
    pooled = per_item[per_item["dataset"] != ALL].copy()
    pooled["item_id"] = pooled["dataset"].astype(str) + "/" + pooled["item_id"].astype(str)
    pooled["dataset"] = ALL
    return pd.concat([per_item, pooled], ignore_index=True)


def rewrite_rows(deltas: pd.DataFrame, aggregate: str = PAPER) -> pd.DataFrame:
    """The rows of ``deltas`` that ``aggregate`` pools (controls never; see ``AGGREGATES``)."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; one of {sorted(AGGREGATES)}")
    families = AGGREGATES[aggregate]
    keep = ~deltas["family"].isin(CONTROL_FAMILIES)
    if families is not None:
        keep &= deltas["family"].isin(families)
    return deltas[keep]


def instability_per_item(
    deltas: pd.DataFrame, *, by_family: bool = False, aggregate: str = PAPER
) -> pd.DataFrame:
    """s_X(i) over each item's rewrite variants (controls excluded), including dataset ``"all"``.

    Args:
        deltas: the per-variant deltas table (docs/CONTRACTS.md section 3).
        by_family: one s per (item, family) instead of pooling families.
        aggregate: ``"paper"`` pools the authors' six families (the headline), ``"extended"`` all.

    Returns:
        Long table ``model, dataset, item_id, [family,] measure, s``; items without any finite delta
        for a measure have no row for it.
    """
    rewrites = rewrite_rows(deltas, aggregate)
    keys = [*ITEM_KEYS, "family"] if by_family else list(ITEM_KEYS)
    return with_all_dataset(_rms_per_group(scaled_deltas(rewrites), keys))


def noise_per_item(deltas: pd.DataFrame) -> pd.DataFrame:
    """The same RMS over control rows only: ``control`` is identity, rerun, or ``"controls"`` (both)."""
    controls = scaled_deltas(deltas[deltas["family"].isin(NOISE_CONTROLS)])
    pooled = _rms_per_group(controls, ITEM_KEYS).assign(control="controls")
    each = _rms_per_group(controls, [*ITEM_KEYS, "family"]).rename(columns={"family": "control"})
    return with_all_dataset(pd.concat([pooled, each], ignore_index=True))


def cell_rng(seed: int, *key: object) -> np.random.Generator:
    """A generator for one cell, independent of the order in which cells are computed."""
    digest = zlib.crc32("|".join(str(k) for k in key).encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence([seed, digest]))


def bootstrap_means(values: np.ndarray, *, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of ``resamples`` resamples (with replacement) of ``values``; shape ``[resamples]``."""
    index = rng.integers(0, len(values), size=(resamples, len(values)))  # [resamples, n_items]
    means: np.ndarray = values[index].mean(axis=1)
    return means


def percentile_ci(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of bootstrap ``samples`` (NaN, NaN when there are none)."""
    if samples.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def sgs_table(
    per_item: pd.DataFrame, *, seed: int, resamples: int = DEFAULT_RESAMPLES, keys: Iterable[str] = CELL_KEYS
) -> pd.DataFrame:
    """SGS (mean of s over items) with a bootstrap CI per group of ``keys``.

    Args:
        per_item: long per-item table (``instability_per_item``).
        seed: base seed; each cell's resampling stream derives from it and the cell's key.
        resamples: bootstrap resamples per cell.
        keys: the cell columns, e.g. ``("model", "dataset", "measure", "family")``.
    """
    keys = list(keys)
    rows = []
    for key, group in per_item.groupby(keys, sort=True):
        values = group.sort_values("item_id")["s"].to_numpy(dtype=float)  # a group has at least one item
        low, high = percentile_ci(bootstrap_means(values, rng=cell_rng(seed, *key), resamples=resamples))
        rows.append((*key, int(values.size), float(values.mean()), low, high))
    return pd.DataFrame(rows, columns=[*keys, "n_items", "sgs", "ci_low", "ci_high"])


def noise_floor_table(noise_items: pd.DataFrame) -> pd.DataFrame:
    """Mean over items of the control RMS: ``model, dataset, measure, control, n_items, value``."""
    grouped = noise_items.groupby(["model", "dataset", "measure", "control"], sort=True)["s"]
    table = grouped.agg(n_items="count", value="mean").reset_index()
    return table[["model", "dataset", "measure", "control", "n_items", "value"]]


def accuracy_table(deltas: pd.DataFrame) -> pd.DataFrame:
    """Baseline accuracy per (model, dataset) and ``"all"``: ``model, dataset, n_items, accuracy``."""
    base = deltas.loc[deltas["family"] == BASELINE_FAMILY, ["model", "dataset", "correct"]].copy()
    base = pd.concat([base, base.assign(dataset=ALL)], ignore_index=True)
    base["correct"] = base["correct"].astype(float)
    table = base.groupby(["model", "dataset"], sort=True)["correct"].agg(n_items="count", accuracy="mean")
    return table.reset_index()[["model", "dataset", "n_items", "accuracy"]]
