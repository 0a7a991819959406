"""Frozen variant sets on disk: deterministic parquet, the manifest, and the verified reader.

Layout (docs/CONTRACTS.md section 1)::

    variants/<set>/<version>/data/<dataset>.parquet   VARIANT_COLUMNS, sorted by (item_rank, variant_id)
    variants/<set>/<version>/llm_rewrites.jsonl       every LLM attempt (the pin of the LLM families)
    variants/<set>/<version>/manifest.json            sha256 of every file, sources, counts, drops
    variants/<set>/<version>/README.md                Hugging Face dataset card (one config per dataset)

The manifest's own sha256 is "the variant-set hash" that results record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.errors import SagoError
from benchmark.paths import VARIANTS_DIR, check_name
from benchmark.provenance import sha256_file
from benchmark.schema import VARIANT_COLUMNS, VARIANT_SCHEMA_VERSION

MANIFEST = "manifest.json"
ARROW_SCHEMA = pa.schema([
    ("dataset", pa.string()), ("item_id", pa.string()), ("variant_id", pa.string()), ("family", pa.string()),
    ("place", pa.string()), ("strength", pa.float64()), ("prompt", pa.string()), ("similarity", pa.float64()),
    ("rewriter", pa.string()), ("answers", pa.list_(pa.string())), ("item_rank", pa.int64()),
])
assert tuple(ARROW_SCHEMA.names) == VARIANT_COLUMNS


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Write a variant table so the same rows always give the same bytes.

    The table is built from Python lists against a fixed schema (no pandas metadata, which carries
    library versions), one row group, fixed compression, no statistics that depend on writer options.
    """
    columns = {name: frame[name].tolist() for name in VARIANT_COLUMNS}
    columns["answers"] = [list(a) for a in columns["answers"]]
    table = pa.Table.from_pydict(columns, schema=ARROW_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", compression_level=9, row_group_size=max(1, len(frame)),
                   use_dictionary=True, write_statistics=False, version="2.6", data_page_version="1.0",
                   store_schema=False)


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a variant table, refusing a broken file or one whose columns or types differ from the schema."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise SagoError(f"{path} is not a readable parquet file ({str(err).splitlines()[0]}); "
                        "restore it with `sago variants download` or rebuild") from None
    if not table.schema.equals(ARROW_SCHEMA):
        raise SagoError(f"{path} has columns {table.schema.names} with types that differ from the variant schema; "
                        "it was not written by this builder")
    frame = table.to_pandas()
    frame["answers"] = [list(a) for a in frame["answers"]]
    return frame


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Canonical JSON: sorted keys, fixed indent, trailing newline, no timestamps."""
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class VariantSet:
    """A verified frozen variant set."""

    name: str
    """set name, e.g. ``sago-v1``."""
    version: str
    """release, e.g. ``v1``."""
    path: Path
    """the set's folder."""
    manifest: dict[str, Any]
    """parsed manifest.json."""
    sha256: str
    """sha256 of manifest.json: the variant-set hash recorded in results."""
    datasets: tuple[str, ...]
    """dataset names in manifest order."""

    def frame(self, dataset: str) -> pd.DataFrame:
        """The variant table of one dataset (VARIANT_COLUMNS, sorted by item_rank then variant_id)."""
        if dataset not in self.datasets:
            raise SagoError(f"unknown dataset {dataset!r} in {self.name}/{self.version} "
                            f"(known: {', '.join(self.datasets)})")
        return read_parquet(self.path / self.manifest["datasets"][dataset]["file"])

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every dataset's table, in manifest order."""
        return {name: self.frame(name) for name in self.datasets}


def set_dir(set_name: str, version: str, root: Path = VARIANTS_DIR) -> Path:
    """The folder of a set, with names checked so they cannot escape ``root``."""
    return root / check_name(set_name, "variant set") / check_name(version, "version")


def read_manifest(path: Path) -> dict[str, Any]:
    """Parse a set's manifest, refusing a missing, broken or newer one."""
    file = path / MANIFEST
    if not file.exists():
        raise SagoError(f"no variant set at {path} (missing {MANIFEST}); build it with `sago variants build` "
                        "or fetch it with `sago variants download`")
    try:
        manifest: dict[str, Any] = json.loads(file.read_text())
    except json.JSONDecodeError as err:
        raise SagoError(f"{file} is not valid JSON ({err.msg} at line {err.lineno})") from None
    if manifest.get("schema_version", 0) > VARIANT_SCHEMA_VERSION:
        raise SagoError(f"{file} has schema_version {manifest.get('schema_version')}, newer than this "
                        f"reader ({VARIANT_SCHEMA_VERSION}); upgrade sago-bench")
    return manifest


def verify_files(path: Path, manifest: dict[str, Any]) -> None:
    """Check every file listed in the manifest against its sha256, and no parquet is unlisted."""
    files: dict[str, str] = manifest.get("files", {})
    for relative, expected in sorted(files.items()):
        file = path / relative
        if not file.is_file():
            raise SagoError(f"{file} is listed in the manifest but missing; restore the released set")
        actual = sha256_file(file)
        if actual != expected:
            raise SagoError(f"{file} has sha256 {actual[:12]}…, manifest says {expected[:12]}…: the file was "
                            "edited or corrupted; released sets are never edited, restore or re-download it")
    for extra in sorted((path / "data").glob("*.parquet")):
        if extra.relative_to(path).as_posix() not in files:
            raise SagoError(f"{extra} is not listed in the manifest; remove it or build a new version")


def load_variant_set(set_name: str = "sago-v1", version: str = "v1", root: Path = VARIANTS_DIR) -> VariantSet:
    """Open a frozen variant set after checking every file's sha256 and every table's schema.

    Raises:
        SagoError: one line naming the file, on a missing set, a hash mismatch or a schema mismatch.
    """
    path = set_dir(set_name, version, root)
    manifest = read_manifest(path)
    verify_files(path, manifest)
    datasets = tuple(manifest.get("dataset_order", manifest["datasets"]))  # JSON keys are sorted on disk
    for name in datasets:
        file = path / manifest["datasets"][name]["file"]
        try:
            schema = pq.read_schema(file)
        except (OSError, pa.ArrowException):
            raise SagoError(f"{file} is not a readable parquet file; restore the released set") from None
        if not schema.equals(ARROW_SCHEMA):
            raise SagoError(f"{file} does not match the variant schema (columns {schema.names})")
    return VariantSet(set_name, version, path, manifest, sha256_file(path / MANIFEST), datasets)
