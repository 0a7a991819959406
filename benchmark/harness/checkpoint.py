"""Crash-safe checkpoint parts: one parquet + one safetensors file per finished batch.

Every file is written to a hidden temporary name and renamed into place, and a part's parquet file is
renamed *after* its activations, so a part counts as finished exactly when its parquet file exists.
A kill -9 at any moment leaves either a finished part or nothing that is read back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors.numpy import load_file, save_file

_STATS_KEY = b"sago_part_stats"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write`` on a temporary sibling of ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Canonical JSON (sorted keys, indent 2, trailing newline), written atomically."""
    text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def write_parquet(path: Path, frame: pd.DataFrame, stats: Mapping[str, Any] | None = None) -> None:
    """Write ``frame`` without its index; ``stats`` ride along in the file's schema metadata."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if stats is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               _STATS_KEY: json.dumps(dict(stats), sort_keys=True)})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_tensors(path: Path, tensors: Mapping[str, np.ndarray]) -> None:
    """Write named arrays as safetensors (keys sorted, so equal content gives equal bytes)."""
    ordered = {k: np.ascontiguousarray(tensors[k]) for k in sorted(tensors)}
    atomic_write(path, lambda tmp: save_file(ordered, str(tmp)))


@dataclass(frozen=True)
class Part:
    """One finished batch."""

    name: str
    """``<phase>-<index:05d>``; the index is the batch's place in the deterministic plan."""
    records: pd.DataFrame
    """one row per request: ``key`` + the record columns."""
    activations: Mapping[str, np.ndarray]
    """key -> float16 [n_layers + 1, hidden] (empty when the backend declares no hidden states)."""
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

    def write(self, part: Part) -> None:
        """Activations first, records last: the parquet file marks the part finished."""
        write_tensors(self.folder / f"{part.name}.safetensors", part.activations)
        write_parquet(self.folder / f"{part.name}.parquet", part.records, part.stats)

    def records(self, prefix: str = "") -> pd.DataFrame:
        """Records of the finished parts whose name starts with ``prefix``, in part-name order."""
        files = sorted(f for f in self.folder.glob(f"{prefix}*.parquet") if not f.name.startswith("."))
        frames = [pq.read_table(f).to_pandas() for f in files]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def activations(self) -> dict[str, np.ndarray]:
        """Activations of the finished parts only (an orphan safetensors file is ignored)."""
        merged: dict[str, np.ndarray] = {}
        for name in sorted(self.finished()):
            merged.update(load_file(str(self.folder / f"{name}.safetensors")))
        return merged

    def stats(self) -> list[dict[str, Any]]:
        """Per-part stats, in part-name order."""
        out = []
        for name in sorted(self.finished()):
            meta = pq.read_schema(self.folder / f"{name}.parquet").metadata or {}
            out.append({"part": name, **json.loads(meta.get(_STATS_KEY, b"{}"))})
        return out
