"""Deltas for a whole results folder: read records + activations, write ``deltas.parquet``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors.numpy import load_file

from benchmark.axes.deltas import AXES_VERSION, compute_deltas
from benchmark.axes.measures import delta_columns
from benchmark.axes.scorers import AxisScorers
from benchmark.errors import SagoError
from benchmark.provenance import sha256_file
from benchmark.results import ResultsFolder, write_parquet

METADATA_PREFIX = "sago.axes."
"""parquet key-value metadata prefix naming what each scorer ran on (e.g. ``sago.axes.bertscore``)."""
INPUTS_KEY = "sago.inputs"
"""parquet metadata key: JSON fingerprint of all the deltas were computed from (``input_fingerprint``)."""


def input_files(results_dir: Path) -> list[Path]:
    """The files deltas are computed from: run.json, records/*.parquet, activations/*.safetensors."""
    folder = ResultsFolder(Path(results_dir))
    found = [folder.run, *folder.record_files(), *folder.activation_files()]
    return [p for p in found if p.is_file()]


@dataclass(frozen=True)
class InputFingerprint:
    """What a deltas file depends on: the axes version, the scorer/rule choices and every input's sha256.

    Two fingerprints are equal exactly when recomputing would read the same bytes with the same code
    settings, so staleness is decided by content, never by file times (a fresh clone recomputes nothing).
    Pairs are kept sorted by name, so equality does not depend on the order files were found in.
    """

    axes_version: str
    """``benchmark.axes.deltas.AXES_VERSION`` of the code that computed the deltas."""
    axes: tuple[tuple[str, str], ...]
    """(scorer or rule, what it ran on), sorted."""
    files: tuple[tuple[str, str], ...]
    """(path relative to the results folder, sha256) of every input, sorted."""

    def to_json(self) -> dict[str, str | dict[str, str]]:
        """The object stored in the parquet metadata (written with sorted keys)."""
        return {"axes_version": self.axes_version, "axes": dict(self.axes), "files": dict(self.files)}

    @classmethod
    def from_json(cls, data: object) -> InputFingerprint | None:
        """The fingerprint of a stored object; None when it is not one (then the deltas are stale)."""
        if not isinstance(data, dict):
            return None
        version, axes, files = data.get("axes_version"), data.get("axes"), data.get("files")
        if not isinstance(version, str) or not _text_map(axes) or not _text_map(files):
            return None
        return cls(version, tuple(sorted(axes.items())), tuple(sorted(files.items())))


def _text_map(value: object) -> TypeGuard[dict[str, str]]:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def input_fingerprint(results_dir: Path, axes: Mapping[str, str]) -> InputFingerprint:
    """The fingerprint of ``results_dir``'s inputs (:func:`input_files`) under the scorer choices ``axes``."""
    folder = Path(results_dir)
    return InputFingerprint(
        AXES_VERSION,
        tuple(sorted(axes.items())),
        tuple(sorted((p.relative_to(folder).as_posix(), sha256_file(p)) for p in input_files(folder))),
    )


def read_input_fingerprint(path: Path) -> InputFingerprint | None:
    """The fingerprint stored in a deltas file, or None when it has none (written before it was recorded)
    or what it holds is not a fingerprint."""
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(INPUTS_KEY.encode())
    return InputFingerprint.from_json(json.loads(raw)) if raw else None


def deltas_for_results(
    results_dir: Path,
    variant_frames: Mapping[str, pd.DataFrame],
    *,
    model: str,
    scorers: AxisScorers | None = None,
    items: Callable[[str, Sequence[str]], Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Deltas of every dataset under ``results_dir/records/``, concatenated and sorted.

    Args:
        results_dir: ``submissions/<slug>/results/<set>/<version>/``.
        variant_frames: dataset name -> the variant set's frame for it (for the gold answers).
        model: the value of the ``model`` column (the submission slug).
        scorers: text/mirroring scorers; the MiniLM default is loaded once for all datasets.
        items: ``items(dataset, item_ids)`` picks the items to compute (default: all). Deltas are per
            item, so a chosen item's rows are the rows a whole-folder run gives it (a sampled check of
            committed deltas, cheaper than recomputing every item).

    Raises:
        SagoError: when there are no records or a dataset has no variant frame.
    """
    folder = ResultsFolder(Path(results_dir))
    record_files = folder.record_files()
    if not record_files:
        raise SagoError(f"no records under {folder.records_dir}; run `sago evaluate` first")
    scorers = scorers or AxisScorers.default()
    # A run that recorded only responses (imported from lm-eval) names what it could not measure.
    not_measured = tuple(folder.read_run().not_measured) if folder.run.is_file() else ()
    deltas_of = functools.partial(compute_deltas, model=model, scorers=scorers, not_measured=not_measured)
    tables = []
    for path in record_files:
        dataset = path.stem
        if dataset not in variant_frames:
            raise SagoError(
                f"records for dataset {dataset!r} but the variant set has no such dataset; "
                "evaluate against the matching variant set version"
            )
        stored = folder.activations(dataset)  # absent: an empty mapping, and the activation deltas are NaN
        activations = load_file(str(stored)) if stored.exists() else {}
        records = pd.read_parquet(path)
        if items is not None:
            ids = sorted(records["item_id"].unique())
            records = records[records["item_id"].isin(set(items(dataset, ids)))].reset_index(drop=True)
        tables.append(deltas_of(records, activations, variant_frames[dataset]))
    deltas = pd.concat(tables, ignore_index=True)
    return deltas.sort_values(["dataset", "item_id", "variant_id"], kind="stable").reset_index(drop=True)


def deltas_table(
    results_dir: Path,
    variant_frames: Mapping[str, pd.DataFrame],
    *,
    model: str,
    scorers: AxisScorers | None = None,
) -> pa.Table:
    """The table ``deltas.parquet`` holds: the deltas with what the scorers ran on and the fingerprint
    of their inputs as metadata (write it with :data:`DELTAS_OPTIONS`)."""
    scorers = scorers or AxisScorers.default()
    deltas = deltas_for_results(results_dir, variant_frames, model=model, scorers=scorers)
    table = pa.Table.from_pandas(deltas[list(delta_columns())], preserve_index=False)
    # Our provenance instead of pandas' metadata, which embeds library versions and is not needed.
    metadata = {f"{METADATA_PREFIX}{k}": v for k, v in sorted(scorers.backbones.items())}
    fingerprint = input_fingerprint(results_dir, scorers.backbones)
    metadata[INPUTS_KEY] = json.dumps(fingerprint.to_json(), sort_keys=True)
    return table.replace_schema_metadata(metadata)


DELTAS_OPTIONS: dict[str, str] = {"compression": "zstd"}
"""How a deltas table is written (:func:`pyarrow.parquet.write_table` options)."""


def write_deltas(
    results_dir: Path,
    variant_frames: Mapping[str, pd.DataFrame],
    *,
    model: str,
    scorers: AxisScorers | None = None,
) -> Path:
    """Compute and write ``results_dir/deltas.parquet``; the same inputs give the same bytes."""
    table = deltas_table(results_dir, variant_frames, model=model, scorers=scorers)
    return write_parquet(ResultsFolder(Path(results_dir)).deltas, table, **DELTAS_OPTIONS)


def read_scorer_backbones(path: Path) -> dict[str, str]:
    """What the scorers of a deltas file ran on, e.g. ``{"bertscore": "all-MiniLM-L6-v2/L6", ...}``."""
    meta = pq.read_schema(path).metadata or {}
    prefix = METADATA_PREFIX.encode()
    return {k[len(prefix) :].decode(): v.decode() for k, v in meta.items() if k.startswith(prefix)}
