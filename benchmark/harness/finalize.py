"""Merge every rank's checkpoint parts into the final result files (docs/CONTRACTS.md section 2).

Deterministic: the records are sorted by (item_id, variant_id) and the activation keys are sorted,
so the same parts give the same files whatever the number of ranks or the order they finished in.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from benchmark.documents import DoneDocument, PlanDocument, RunDocument
from benchmark.errors import SagoError
from benchmark.harness.checkpoint import PartStore
from benchmark.integrity import file_hashes
from benchmark.paths import replace_folder
from benchmark.provenance import git_commit, hardware, library_versions
from benchmark.results import ResultsFolder, write_document, write_parquet, write_tensors
from benchmark.schema import (
    OWN_CONFIDENCE_COLUMNS,
    OWN_CONFIDENCE_FIELDS,
    RECORD_COLUMNS,
    RECORD_FIELDS,
    RECORDS_SCHEMA_VERSION,
    pandas_dtypes,
)
from benchmark.version import __version__

RECORD_DTYPES = pandas_dtypes(RECORD_FIELDS)
"""what every records column is cast to before it is written (``schema.RECORD_FIELDS``)."""


def finalize(
    results_dir: Path, *, world_size: int | None = None, extra: Mapping[str, Any] | None = None
) -> Path:
    """Write ``records/``, ``activations/`` and ``run.json`` from the finished checkpoint, then delete it.

    The new files are written into a scratch folder beside ``results_dir`` and swapped in only when all
    of them exist, so a failure leaves the previous results as they were. The swap replaces the whole
    folder: derived tables of an earlier run (deltas, summary) do not survive a new run. ``world_size``,
    when given, is checked against the checkpoint's ranks; ``extra`` is more provenance for run.json (how
    a launcher ran). Returns run.json's path.

    Raises:
        SagoError: a rank is missing or unfinished, or the ranks ran different configurations.
    """
    results = ResultsFolder(results_dir)
    plans = _rank_plans(results, world_size)
    stores = [PartStore(results.rank_dir(r)) for r in range(len(plans))]
    done = [DoneDocument.read(s.folder / DoneDocument.FILE) for s in stores]
    records = _merged_records(stores, plans)
    activations = {k: v for s in stores for k, v in s.activations().items()}
    staging = ResultsFolder(results_dir.with_name(f".{results_dir.name}.finalizing"))
    shutil.rmtree(staging.path, ignore_errors=True)
    try:
        for dataset in sorted(records["dataset"].unique()):
            rows = records[records["dataset"] == dataset]
            table = pa.Table.from_pandas(rows.loc[:, list(RECORD_COLUMNS)], preserve_index=False)
            write_parquet(staging.records(dataset), table)
            if activations:
                write_tensors(staging.activations(dataset), _dataset_activations(rows, activations))
            if done[0].model.is_api:  # the endpoint's own-token confidence, a table apart
                own = rows.loc[:, list(OWN_CONFIDENCE_COLUMNS)].astype(pandas_dtypes(OWN_CONFIDENCE_FIELDS))
                write_parquet(
                    staging.own_confidence(dataset), pa.Table.from_pandas(own, preserve_index=False)
                )
        run = run_json(plans, stores, done, records, extra=extra or {}, files=file_hashes(staging.path))
        write_document(staging.run, run)
        replace_folder(staging.path, results_dir)
    finally:
        shutil.rmtree(staging.path, ignore_errors=True)
    return results.run


def _rank_plans(results: ResultsFolder, world_size: int | None) -> list[PlanDocument]:
    """Each rank's plan, after checking all ranks exist, finished and agree with each other."""
    folder = results.checkpoint
    ranks = results.plan_files()
    if not ranks:
        raise SagoError(f"no checkpoint under {folder}; run `sago evaluate` first")
    plans = sorted((PlanDocument.read(p) for p in ranks), key=lambda p: p.rank)
    expected = world_size or plans[0].world_size
    found = [p.rank for p in plans]
    if found != list(range(expected)):
        raise SagoError(f"{folder} has ranks {found}, expected 0..{expected - 1}; run the missing ranks")
    for plan in plans:
        if not results.done(plan.rank).exists():
            raise SagoError(f"rank {plan.rank} has not finished; rerun it (it resumes)")
        if plan.shared() != plans[0].shared():
            raise SagoError(f"rank {plan.rank} ran a different configuration from rank 0; rerun with --force")
    return plans


def _merged_records(stores: Sequence[PartStore], plans: Sequence[PlanDocument]) -> pd.DataFrame:
    frames = [f for f in (s.records() for s in stores) if not f.empty]
    if not frames:
        raise SagoError("the checkpoint holds no records; rerun with --force")
    records = pd.concat(frames, ignore_index=True)
    expected = sorted(k for p in plans for k in p.keys)
    if records["key"].duplicated().any() or sorted(records["key"]) != expected:
        raise SagoError("the checkpoint's records do not match the planned keys; rerun with --force")
    records = records.astype(RECORD_DTYPES)
    return records.sort_values(["dataset", "item_id", "variant_id"], kind="stable").reset_index(drop=True)


def _dataset_activations(rows: pd.DataFrame, activations: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Final keys drop the dataset: ``item_id|variant_id``."""
    return {
        f"{i}|{v}": activations[k]
        for k, i, v in zip(rows["key"], rows["item_id"], rows["variant_id"], strict=True)
    }


def run_json(
    plans: Sequence[PlanDocument],
    stores: Sequence[PartStore],
    done: Sequence[DoneDocument],
    records: pd.DataFrame,
    *,
    extra: Mapping[str, Any],
    files: Mapping[str, str],
) -> RunDocument:
    """run.json: provenance of the whole run (CONTRACTS.md section 2), built through
    :meth:`RunDocument.build`; the plan's settings are copied as rank 0 wrote them (all ranks agree on
    them), then the plan's ``run_info`` (who was run, on which set) and ``extra`` are laid over them.
    """
    first = plans[0].to_json()
    stats = [st for s in stores for st in s.stats()]
    described = done[0].model
    fields: dict[str, object] = {
        "schema_version": RECORDS_SCHEMA_VERSION,
        "harness_version": __version__,
        "libraries": library_versions(),
        "git_commit": git_commit(),
        "hardware": hardware().to_json(),
        "variant_set_sha256": first["variant_set_sha256"],
        "profile": first["profile"],
        "seed": first["seed"],
        "world_size": first["world_size"],
        "model": described.model_dump(mode="json", exclude_unset=True),
        "engine": described.engine,
        "dtype": described.dtype,
        "device": described.device,
        "chat_template": described.chat_template,
        "batch_size": first["batch_size"],
        "batch_sizes_used": {
            str(p.rank): (d.model.model_extra or {}).get("batch_sizes")
            for p, d in zip(plans, done, strict=True)
        },
        "timings": _timings(plans, done, stats),
        "tokens": _tokens(stats),
        "counts": {str(k): int(v) for k, v in records.groupby("dataset").size().items()},
        "files": files,
    }
    for recorded_only_when_set in ("activations", "planner"):  # absent: full layout, planner 1
        if recorded_only_when_set in first:
            fields[recorded_only_when_set] = first[recorded_only_when_set]
    return RunDocument.build(fields, {**dict(first.get("run_info", {})), **extra})


def _timings(
    plans: Sequence[PlanDocument], done: Sequence[DoneDocument], stats: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    by_phase: dict[str, float] = {}
    for st in stats:
        phase = str(st["part"]).split("-")[0]
        by_phase[phase] = round(by_phase.get(phase, 0.0) + float(st.get("seconds", 0.0)), 3)
    return {
        "model_seconds_by_phase": by_phase,
        "model_seconds": round(sum(by_phase.values()), 3),
        "started_at": _started_at(plans),
        "finished_at": max(d.finished_at for d in done),
        **(
            {"peak_rss_mib": max(d.peak_rss_mib for d in done if d.peak_rss_mib is not None)}
            if all(d.peak_rss_mib is not None for d in done)
            else {}
        ),
    }


def _started_at(plans: Sequence[PlanDocument]) -> str:
    """When the first rank started (``check_or_write_plan`` stamps every plan)."""
    starts = [p.started_at for p in plans if p.started_at is not None]
    if len(starts) < len(plans):
        raise SagoError("a rank's plan.json records no started_at; rerun with --force")
    return min(starts)


def _tokens(stats: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        name: int(sum(int(st.get(name, 0)) for st in stats))
        for name in ("requests", "prompt_tokens", "generated_tokens", "scored_tokens")
    }
