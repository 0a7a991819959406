"""Per-variant deltas on every measure, from stored raw outputs only (docs/CONTRACTS.md section 3).

:func:`align` puts each record row beside its item's baseline row; :func:`compute_deltas` calls every
measure registered in :mod:`benchmark.axes.measures` on those pairs and writes one ``delta_<name>``
column per measure. The models the measures need (MiniLM for BERTScore and embeddings, a politeness
judge) live in :class:`~benchmark.axes.scorers.AxisScorers`, built once per run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from benchmark.axes.accuracy import is_correct
from benchmark.axes.measures import Pairs, all_measures
from benchmark.axes.scorers import AxisScorers
from benchmark.errors import SagoError
from benchmark.schema import BASELINE_VARIANT_ID, DELTA_ID_COLUMNS, RECORD_COLUMNS

AXES_VERSION = "4"
"""Bump when a delta's computation changes: part of the deltas' input fingerprint (staleness).
3: the grader reads stated judgements and final answers, not echoes of the prompt; length mirroring
compares with the achieved ratio where the set records one; the gratitude politeness judge."""


def _check_records(records: pd.DataFrame) -> None:
    if missing := sorted(set(RECORD_COLUMNS) - set(records.columns)):
        raise SagoError(f"records lack columns {missing}; re-run the harness with this version of sago")
    repeated = records.duplicated(["dataset", "item_id", "variant_id"])
    if repeated.any():
        first = records.loc[repeated].iloc[0]
        raise SagoError(
            f"records hold {first['item_id']}|{first['variant_id']} more than once; "
            "delete the results folder and re-run the harness"
        )


def align(records: pd.DataFrame, variants: pd.DataFrame, activations: Mapping[str, np.ndarray]) -> Pairs:
    """Put each record row beside its item's baseline row and gold answers.

    Raises:
        SagoError: when columns are missing, a row repeats, or an item has no baseline record.
    """
    _check_records(records)
    keys = ["dataset", "item_id"]
    recs = records.assign(response=records["response"].fillna("").astype(str))
    base = recs[recs["variant_id"] == BASELINE_VARIANT_ID]
    base = base[[*keys, "response", "logprob_sum", "logprob_mean", "entropy_mean"]]
    frame = recs.merge(base, on=keys, how="left", suffixes=("", "_0"), validate="many_to_one")
    lacking = frame.loc[frame["response_0"].isna(), "item_id"].unique()
    if len(lacking):
        raise SagoError(
            f"records have no baseline row ({BASELINE_VARIANT_ID}) for items {list(lacking)[:5]}; "
            "re-run the harness for them"
        )
    gold = variants[variants["variant_id"] == BASELINE_VARIANT_ID][[*keys, "answers", "prompt"]]
    frame = frame.merge(
        gold.rename(columns={"prompt": "prompt_0"}), on=keys, how="left", validate="many_to_one"
    )
    asked = variants[[*keys, "variant_id", "prompt"]]
    frame = frame.merge(asked, on=[*keys, "variant_id"], how="left", validate="many_to_one")
    # controls outside the set (the rerun row) were asked the baseline prompt
    frame["prompt"] = frame["prompt"].where(frame["prompt"].notna(), frame["prompt_0"]).fillna("").astype(str)
    frame["answers"] = [list(a) if isinstance(a, (list, tuple, np.ndarray)) else [] for a in frame["answers"]]
    if "length_ratio" in variants.columns:  # variant schema 2: the achieved ratio of each length row
        ratios = variants[[*keys, "variant_id", "length_ratio"]]
        frame = frame.merge(ratios, on=[*keys, "variant_id"], how="left", validate="many_to_one")
    return Pairs(frame.reset_index(drop=True), activations)


def compute_deltas(
    records: pd.DataFrame,
    activations: Mapping[str, np.ndarray],
    variants: pd.DataFrame,
    *,
    model: str,
    scorers: AxisScorers | None = None,
    not_measured: Collection[str] = (),
) -> pd.DataFrame:
    """The deltas table (columns :func:`benchmark.axes.measures.delta_columns`) for one model's records.

    Every record row gets a row, controls included; the baseline row has all deltas 0, except on the
    measures named in ``not_measured`` (a run that did not record what they need, e.g. one imported
    from lm-eval): those are NaN on every row, the baseline's too, never 0.
    """
    scorers = scorers or AxisScorers.default()
    pairs = align(records, variants, activations)
    out = pairs.frame[[c for c in DELTA_ID_COLUMNS if c != "model"]].copy()
    out.insert(0, "model", model)
    out["strength"] = out["strength"].astype(float)
    is_baseline = (pairs.frame["variant_id"] == BASELINE_VARIANT_ID).to_numpy()
    for measure in all_measures():
        if measure.name in not_measured:
            out[f"delta_{measure.name}"] = np.nan
            continue
        values = np.asarray(measure.delta(pairs, scorers), dtype=np.float64)
        out[f"delta_{measure.name}"] = np.where(is_baseline, 0.0, values)
    frame = pairs.frame
    out["correct"] = [
        is_correct(y, a, x)
        for y, a, x in zip(frame["response"], frame["answers"], frame["prompt"], strict=True)
    ]
    return out.sort_values(["dataset", "item_id", "variant_id"], kind="stable").reset_index(drop=True)
