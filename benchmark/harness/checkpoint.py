"""Crash-safe checkpoint parts: one parquet + one safetensors file per finished batch.

Every file is written to a hidden temporary name and renamed into place, and a part's parquet file is
renamed *after* its activations, so a part counts as finished exactly when its parquet file exists.
A kill -9 at any moment leaves either a finished part or nothing that is read back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors.numpy import load_file

from benchmark.results import PLAN_FILE, write_parquet, write_tensors

_STATS_KEY = b"sago_part_stats"


@dataclass(frozen=True)
class Part:
    """One finished batch."""

    name: str
    """``<phase>-<index:05d>``; the index is the batch's place in the deterministic plan."""
    records: pd.DataFrame
    """one row per request: ``key`` + the record columns."""
    activations: Mapping[str, np.ndarray]
    """key -> float16 [n_layers + 1, hidden] (empty when the backend declares no hidden states), or, in
    a compact run's variant parts, float64 [n_layers + 1]: the per-layer cosine to the item's baseline."""
    stats: Mapping[str, Any]
    """seconds and token counts of the batch."""


class PartStore:
    """The parts of one rank, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def finished(self) -> set[str]:
        """Names of the parts whose parquet file exists."""
        if not self.folder.is_dir():
            return set()
        return {p.stem for p in self.folder.glob("*.parquet") if not p.name.startswith(".")}

    def has(self, name: str) -> bool:
        """Whether part ``name`` is finished (its parquet file exists): asked again before each batch,
        since a second worker may finish one after the batch list was made."""
        return (self.folder / f"{name}.parquet").is_file()

    def planned(self) -> bool:
        """Whether the rank's plan.json exists. Finalizing swaps the whole results folder, checkpoint
        included, so a process still working on a finalized run sees its plan gone."""
        return (self.folder / PLAN_FILE).is_file()

    def withdraw(self, name: str) -> None:
        """Remove part ``name`` and the folders that held only it: what a late write recreated under a
        results folder that was finalized meanwhile."""
        for suffix in (".parquet", ".safetensors"):
            (self.folder / f"{name}{suffix}").unlink(missing_ok=True)
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): nothing else of ours is there
                return

    def write(self, part: Part) -> None:
        """Activations first, records last: the parquet file marks the part finished."""
        write_tensors(self.folder / f"{part.name}.safetensors", part.activations)
        table = pa.Table.from_pandas(part.records, preserve_index=False)
        table = table.replace_schema_metadata(
            {**(table.schema.metadata or {}), _STATS_KEY: json.dumps(dict(part.stats), sort_keys=True)}
        )
        write_parquet(self.folder / f"{part.name}.parquet", table)

    def records(self, prefix: str = "") -> pd.DataFrame:
        """Records of the finished parts whose name starts with ``prefix``, in part-name order."""
        files = sorted(f for f in self.folder.glob(f"{prefix}*.parquet") if not f.name.startswith("."))
        frames = [pq.read_table(f).to_pandas() for f in files]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def activations(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Activations of the finished parts (name starting with ``prefix``) only; an orphan safetensors
        file is ignored."""
        merged: dict[str, np.ndarray] = {}
        for name in sorted(n for n in self.finished() if n.startswith(prefix)):
            merged.update(load_file(str(self.folder / f"{name}.safetensors")))
        return merged

    def finished_files(self) -> list[Path]:
        """The files that hold this rank's finished work: plan.json, then each finished part's activations
        and records (what a long run commits, so a fresh clone resumes it; in-flight files are left out)."""
        plan = [self.folder / PLAN_FILE] if (self.folder / PLAN_FILE).is_file() else []
        parts = [
            self.folder / f"{n}{suffix}"
            for n in sorted(self.finished())
            for suffix in (".safetensors", ".parquet")
        ]
        return plan + [p for p in parts if p.is_file()]

    def stats(self) -> list[dict[str, Any]]:
        """Per-part stats, in part-name order."""
        out = []
        for name in sorted(self.finished()):
            meta = pq.read_schema(self.folder / f"{name}.parquet").metadata or {}
            out.append({"part": name, **json.loads(meta.get(_STATS_KEY, b"{}"))})
        return out
