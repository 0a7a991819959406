"""Checks of one ``results/<set>/<version>/`` folder (see docs/CONTRACTS.md sections 2-4).

Results are written by ``sago evaluate`` and ``sago analyze``, but they arrive by pull request, so the
validator trusts nothing in them: every file must be one the pipeline writes, within a size limit,
readable, with a schema version this code knows and made on a variant set that exists in ``variants/``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.errors import SagoError
from benchmark.paths import check_name
from benchmark.provenance import sha256_file
from benchmark.schema import (
    DELTA_ID_COLUMNS,
    MEASURES,
    RECORD_COLUMNS,
    RECORDS_SCHEMA_VERSION,
    SUMMARY_SCHEMA_VERSION,
)
from benchmark.site.failures import Failure
from benchmark.site.render import size as human_size

MiB = 1 << 20
# Largest file of each kind we accept. GitHub refuses files over 100 MB, so activations stop there;
# the others are an order of magnitude above what 64 items x ~90 variants produce.
SIZE_LIMITS: dict[str, int] = {
    "run.json": 1 * MiB,
    "summary.json": 16 * MiB,
    "deltas.parquet": 32 * MiB,
    "records": 32 * MiB,
    "activations": 100 * MiB,
}
DELTA_COLUMNS: tuple[str, ...] = (*DELTA_ID_COLUMNS, *(f"delta_{m.name}" for m in MEASURES), "correct")
# checkpoint/ is git-ignored in-progress state: it never reaches a pull request, so it is not judged.
IGNORED = frozenset({"checkpoint"})
TOP_FILES = frozenset({"run.json", "summary.json", "deltas.parquet"})
SUB_FOLDERS = {"records": ".parquet", "activations": ".safetensors"}


def known_variant_sets(variants_root: Path) -> dict[tuple[str, str], frozenset[str]]:
    """Map each ``(set, version)`` under ``variants_root`` to the sha256 values that identify it.

    A set is identified by the sha256 of its ``manifest.json`` (which lists every data file's sha256);
    a ``sha256`` field inside the manifest, when present, is accepted too.
    """
    known: dict[tuple[str, str], frozenset[str]] = {}
    if not variants_root.is_dir():
        return known
    for manifest in sorted(variants_root.glob("*/*/manifest.json")):
        hashes = {sha256_file(manifest)}
        try:
            declared = json.loads(manifest.read_text(encoding="utf-8")).get("sha256")
        except (ValueError, AttributeError):
            declared = None
        if isinstance(declared, str):
            hashes.add(declared)
        known[(manifest.parent.parent.name, manifest.parent.name)] = frozenset(hashes)
    return known


def run_variant_set_sha256(run: dict[str, Any]) -> str | None:
    """The variant-set sha256 a ``run.json`` claims, wherever the harness put it."""
    nested = run.get("variant_set")
    if isinstance(nested, dict) and isinstance(nested.get("sha256"), str):
        return str(nested["sha256"])
    flat = run.get("variant_set_sha256")
    return flat if isinstance(flat, str) else None


def check_result_folder(folder: Path, rel: Path,
                        known: dict[tuple[str, str], frozenset[str]]) -> list[Failure]:
    """Every check of one results folder; ``rel`` is how paths are printed."""
    failures = list(_strays(folder, rel))
    key = (folder.parent.name, folder.name)
    if key not in known:
        failures.append(Failure(str(rel), f"variant set {key[0]}/{key[1]} does not exist in variants/",
                                "evaluate on a released set (e.g. sago-v1/v1)"))
    failures.extend(_check_run_json(folder / "run.json", rel / "run.json", known.get(key)))
    failures.extend(_check_records(folder, rel))
    failures.extend(_check_parquet(folder / "deltas.parquet", rel / "deltas.parquet", DELTA_COLUMNS,
                                   "deltas.parquet", "run `sago analyze` to rewrite it"))
    failures.extend(_check_summary(folder / "summary.json", rel / "summary.json"))
    for path in sorted((folder / "activations").glob("*.safetensors")):
        failures.extend(_check_safetensors(path, rel / "activations" / path.name))
    return failures


def _strays(folder: Path, rel: Path) -> Iterator[Failure]:
    for entry in sorted(folder.iterdir()):
        if entry.name in IGNORED or (entry.name in TOP_FILES and entry.is_file()):
            continue
        suffix = SUB_FOLDERS.get(entry.name)
        if suffix is None or not entry.is_dir():
            yield Failure(str(rel / entry.name), "stray entry in a results folder",
                          "keep only files written by `sago evaluate` / `sago analyze`")
            continue
        for inner in sorted(entry.iterdir()):
            if inner.suffix != suffix or not inner.is_file() or not _safe_name(inner.stem):
                yield Failure(str(rel / entry.name / inner.name), f"unexpected entry in {entry.name}/",
                              f"only <dataset>{suffix} files belong here")


def _safe_name(name: str) -> bool:
    try:
        check_name(name, "dataset")
    except SagoError:
        return False
    return True


def _too_big(path: Path, rel: Path, kind: str) -> Failure | None:
    limit = SIZE_LIMITS[kind]
    size = path.stat().st_size
    if size <= limit:
        return None
    return Failure(str(rel), f"{human_size(size)} is over the {human_size(limit)} limit for {kind}",
                   "evaluate fewer items per file or ask the maintainers about Git LFS")


def _load_json(path: Path, rel: Path, kind: str) -> tuple[dict[str, Any] | None, list[Failure]]:
    """Read a JSON object within its size limit; failures instead of exceptions."""
    big = _too_big(path, rel, kind)
    if big is not None:
        return None, [big]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        return None, [Failure(str(rel), f"not valid JSON ({err})", "regenerate it with the sago CLI")]
    if not isinstance(data, dict):
        return None, [Failure(str(rel), "not a JSON object", "regenerate it with the sago CLI")]
    return data, []


def _schema_version(data: dict[str, Any], rel: Path, newest: int) -> list[Failure]:
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return [Failure(str(rel), "missing or invalid schema_version", "regenerate it with the sago CLI")]
    if version > newest:
        return [Failure(str(rel), f"schema_version {version} is newer than this code reads ({newest})",
                        "update sago-bench, or regenerate with the released version")]
    return []


def _check_run_json(path: Path, rel: Path, set_hashes: frozenset[str] | None) -> list[Failure]:
    if not path.is_file():
        return [Failure(str(rel), "missing", "commit run.json written by `sago evaluate` with the results")]
    run, failures = _load_json(path, rel, "run.json")
    if run is None:
        return failures
    failures = _schema_version(run, rel, RECORDS_SCHEMA_VERSION)
    claimed = run_variant_set_sha256(run)
    if claimed is None:
        failures.append(Failure(str(rel), "no variant-set sha256", "regenerate it with `sago evaluate`"))
    elif set_hashes is not None and claimed not in set_hashes:
        failures.append(Failure(str(rel), f"variant-set sha256 {claimed[:12]}… matches no known set",
                                "re-run `sago evaluate` on the released variant set"))
    return failures


def _check_records(folder: Path, rel: Path) -> list[Failure]:
    files = sorted((folder / "records").glob("*.parquet"))
    if not files:
        return [Failure(str(rel / "records"), "no records/<dataset>.parquet files",
                        "commit the records written by `sago evaluate`")]
    failures: list[Failure] = []
    for path in files:
        failures.extend(_check_parquet(path, rel / "records" / path.name, RECORD_COLUMNS, "records",
                                       "re-run `sago evaluate` to rewrite it"))
    return failures


def _check_parquet(path: Path, rel: Path, columns: tuple[str, ...], kind: str, fix: str) -> list[Failure]:
    """A parquet file (when present) is within its limit, readable and has exactly ``columns``."""
    if not path.is_file():
        return []
    big = _too_big(path, rel, kind)
    if big is not None:
        return [big]
    try:
        names = pq.read_table(path).column_names
    except (pa.ArrowException, OSError, ValueError) as err:
        return [Failure(str(rel), f"does not load as parquet ({type(err).__name__})", fix)]
    missing = [c for c in columns if c not in names]
    extra = [c for c in names if c not in columns]
    details = ([f"missing {', '.join(missing)}"] if missing else []) + (
        [f"unexpected {', '.join(extra)}"] if extra else [])
    return [Failure(str(rel), f"wrong columns ({'; '.join(details)})", fix)] if details else []


def _check_summary(path: Path, rel: Path) -> list[Failure]:
    if not path.is_file():
        return []
    summary, failures = _load_json(path, rel, "summary.json")
    return failures if summary is None else _schema_version(summary, rel, SUMMARY_SCHEMA_VERSION)


def _check_safetensors(path: Path, rel: Path) -> list[Failure]:
    """Size limit and a readable header (8-byte length, then a JSON object), without loading tensors."""
    big = _too_big(path, rel, "activations")
    if big is not None:
        return [big]
    bad = Failure(str(rel), "not a safetensors file", "re-run `sago evaluate` to rewrite it")
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) != 8:
            return [bad]
        (length,) = struct.unpack("<Q", head)
        if length > min(path.stat().st_size - 8, 64 * MiB):
            return [bad]
        try:
            header = json.loads(handle.read(length))
        except (ValueError, UnicodeDecodeError):
            return [bad]
    return [] if isinstance(header, dict) else [bad]
