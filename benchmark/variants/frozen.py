"""Frozen variant sets on disk: the schema, the manifest, and the verified reader (the writer is
:mod:`benchmark.variants.freeze`).

Layout (docs/CONTRACTS.md section 1)::

    variants/<set>/<version>/data/<dataset>.parquet   VARIANT_COLUMNS, sorted by (item_rank, variant_id)
    variants/<set>/<version>/llm_rewrites.jsonl       every LLM attempt (the pin of the LLM families)
    variants/<set>/<version>/manifest.json            sha256 of every file, sources, counts, drops
    variants/<set>/<version>/README.md                Hugging Face dataset card (one config per dataset)

The manifest's own sha256 is "the variant-set hash" that results record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.errors import FileProblem, SagoError
from benchmark.paths import VARIANTS_DIR, check_name
from benchmark.provenance import sha256_file
from benchmark.safeload import load_json_object
from benchmark.schema import VARIANT_COLUMNS, VARIANT_SCHEMA_VERSION

MANIFEST = "manifest.json"
ARROW_SCHEMA = pa.schema(
    [
        ("dataset", pa.string()),
        ("item_id", pa.string()),
        ("variant_id", pa.string()),
        ("family", pa.string()),
        ("place", pa.string()),
        ("strength", pa.float64()),
        ("prompt", pa.string()),
        ("similarity", pa.float64()),
        ("rewriter", pa.string()),
        ("answers", pa.list_(pa.string())),
        ("item_rank", pa.int64()),
        ("length_ratio", pa.float64()),
    ]
)
assert tuple(ARROW_SCHEMA.names) == VARIANT_COLUMNS
ARROW_SCHEMA_V1 = ARROW_SCHEMA.remove(ARROW_SCHEMA.get_field_index("length_ratio"))
"""Variant schema 1 (sago-v1/v1): no ``length_ratio``; read with the column as NaN."""
SCHEMAS = {1: ARROW_SCHEMA_V1, 2: ARROW_SCHEMA}
"""Arrow schema of a variant table per manifest ``schema_version``."""


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a variant table, refusing a broken file or one whose columns or types differ from the schema."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise SagoError(
            f"{path} is not a readable parquet file ({str(err).splitlines()[0]}); "
            "restore it with `sago variants download` or rebuild"
        ) from None
    if not any(table.schema.equals(schema) for schema in SCHEMAS.values()):
        raise SagoError(
            f"{path} has columns {table.schema.names} with types that differ from the variant schema; "
            "it was not written by this builder"
        )
    frame = table.to_pandas()
    frame["answers"] = [list(a) for a in frame["answers"]]
    if "length_ratio" not in frame.columns:  # schema 1: the nominal multiplier is all v1 recorded
        frame["length_ratio"] = float("nan")
    return frame


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset as its set's manifest lists it: the table, its size and where the items come from."""

    name: str
    """dataset name."""
    file: str
    """the table, relative to the set's folder (listed in the manifest's ``files``)."""
    rows: int
    """variant rows (prompts)."""
    items: int | None
    """items (None: not recorded)."""
    license: str | None
    """licence as the manifest states it: the dataset's, else its source's (None: not recorded)."""
    archive: str | None
    """the pinned archive the items were read from, e.g. ``bigbench==1.0.0``."""
    member: str | None
    """the file inside the archive."""
    stands_in_for: str | None
    """the paper's dataset this one replaces."""


def _entry(name: str, entry: Mapping[str, Any]) -> DatasetEntry:
    """``datasets.<name>`` of a checked manifest (``file`` and ``rows`` are valid), read leniently."""
    items, found = entry.get("items"), entry.get("source")
    source: Mapping[str, Any] = found if isinstance(found, dict) else {}
    return DatasetEntry(
        name,
        str(entry["file"]),
        int(entry["rows"]),
        items if isinstance(items, int) else None,
        _words(entry.get("license") or source.get("license")),
        _words(source.get("archive")),
        _words(source.get("member")),
        _words(source.get("stands_in_for")),
    )


def _words(value: object) -> str | None:
    """A manifest's descriptive value as text (None: absent or empty)."""
    return str(value) if value else None


@dataclass(frozen=True)
class VariantSet:
    """A verified frozen variant set."""

    name: str
    """set name, e.g. ``sago-v1``."""
    version: str
    """release, e.g. ``v1``."""
    path: Path
    """the set's folder."""
    entries: Mapping[str, DatasetEntry]
    """dataset name -> what the manifest says of it."""
    sha256: str
    """sha256 of manifest.json: the variant-set hash recorded in results."""
    datasets: tuple[str, ...]
    """dataset names in manifest order."""

    def frame(self, dataset: str) -> pd.DataFrame:
        """The variant table of one dataset (VARIANT_COLUMNS, sorted by item_rank then variant_id)."""
        if dataset not in self.datasets:
            raise SagoError(
                f"unknown dataset {dataset!r} in {self.name}/{self.version} "
                f"(known: {', '.join(self.datasets)})"
            )
        return read_parquet(self.path / self.entries[dataset].file)

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every dataset's table, in manifest order."""
        return {name: self.frame(name) for name in self.datasets}


def set_dir(set_name: str, version: str, root: Path = VARIANTS_DIR) -> Path:
    """The folder of a set, with names checked so they cannot escape ``root``."""
    return root / check_name(set_name, "variant set") / check_name(version, "version")


MANIFEST_LIMIT = 16 << 20
_RESTORE = "restore the released set (`sago variants download`) or rebuild it"
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def read_manifest(path: Path) -> dict[str, Any]:
    """Parse a set's manifest, refusing a missing, malformed or newer one (one line naming the key)."""
    file = path / MANIFEST
    if not file.exists():
        raise SagoError(
            f"no variant set at {path} (missing {MANIFEST}); build it with `sago variants build` "
            "or fetch it with `sago variants download`"
        )
    manifest = load_json_object(file, limit=MANIFEST_LIMIT, fix=_RESTORE)
    version = manifest.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FileProblem(file, f"schema_version {str(version)[:20]!r} is not a positive integer", _RESTORE)
    if version > VARIANT_SCHEMA_VERSION:
        raise SagoError(
            f"{file} has schema_version {version}, newer than this "
            f"reader ({VARIANT_SCHEMA_VERSION}); upgrade sago-bench"
        )
    _check_manifest_shape(file, manifest)
    return manifest


def _check_manifest_shape(file: Path, manifest: dict[str, Any]) -> None:
    """``files``: safe relative path -> sha256; ``datasets``: name -> {file listed in files, rows}."""
    files, datasets = manifest.get("files"), manifest.get("datasets")
    if not isinstance(files, dict) or not files:
        raise FileProblem(file, "'files' is missing or not a mapping of path to sha256", _RESTORE)
    for relative, digest in files.items():
        parts = PurePosixPath(relative).parts
        if relative.startswith("/") or ".." in parts or "\\" in relative or relative == MANIFEST:
            raise FileProblem(file, f"'files' names an unsafe path {relative[:80]!r}", _RESTORE)
        if not isinstance(digest, str) or not HEX64.fullmatch(digest):
            raise FileProblem(file, f"'files' gives {relative[:80]!r} no 64-hex sha256", _RESTORE)
    if not isinstance(datasets, dict) or not datasets:
        raise FileProblem(
            file, "'datasets' is missing or not a mapping of dataset name to its table", _RESTORE
        )
    for name, entry in datasets.items():
        check_name(name, "dataset")
        if not isinstance(entry, dict) or entry.get("file") not in files:
            raise FileProblem(file, f"datasets.{name}.file is missing or not listed in 'files'", _RESTORE)
        rows = entry.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise FileProblem(file, f"datasets.{name}.rows is not a row count", _RESTORE)
    order = manifest.get("dataset_order", list(datasets))
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(datasets):
        raise FileProblem(file, "'dataset_order' does not list exactly the datasets", _RESTORE)
    counts = manifest.get("counts", {})
    if not isinstance(counts, dict) or not all(
        isinstance(c, dict) and all(isinstance(n, int) for n in c.values()) for c in counts.values()
    ):
        raise FileProblem(file, "'counts' is not a mapping of dataset to family row counts", _RESTORE)


def verify_files(path: Path, manifest: dict[str, Any], *, ignore: frozenset[str] = frozenset()) -> None:
    """Check every listed file against its sha256, and refuse any file in the folder that is not listed.

    ``ignore`` names top-level entries to pass over (a Hub snapshot's ``.cache`` and ``.gitattributes``).
    """
    files: dict[str, str] = manifest["files"]
    for relative, expected in sorted(files.items()):
        file = path / relative
        if not file.is_file() or file.is_symlink():
            raise SagoError(f"{file} is listed in the manifest but missing; restore the released set")
        actual = sha256_file(file)
        if actual != expected:
            raise SagoError(
                f"{file} has sha256 {actual[:12]}…, manifest says {expected[:12]}…: the file was "
                "edited or corrupted; released sets are never edited, restore or re-download it"
            )
    for extra in sorted(path.rglob("*")):
        inside = extra.relative_to(path)
        if inside.parts[0] in ignore or extra.is_dir() and not extra.is_symlink():
            continue
        if inside.as_posix() not in files and inside.as_posix() != MANIFEST:
            raise SagoError(
                f"{extra} is not listed in the manifest; remove it (it would be published) "
                "or build a new version"
            )


def verify_tables(path: Path, manifest: dict[str, Any]) -> None:
    """Each dataset's table has the variant schema, the manifest's counts, and only its own rows."""
    counts = manifest.get("counts", {})
    if set(counts) - set(manifest["datasets"]):
        raise SagoError(f"{path / MANIFEST}: 'counts' names datasets that are not in 'datasets'; {_RESTORE}")
    for name, entry in manifest["datasets"].items():
        file = path / entry["file"]
        try:
            schema = pq.read_schema(file)
        except (OSError, pa.ArrowException):
            raise SagoError(f"{file} is not a readable parquet file; restore the released set") from None
        if not schema.equals(SCHEMAS.get(int(manifest["schema_version"]), ARROW_SCHEMA)):
            raise SagoError(f"{file} does not match the variant schema (columns {schema.names[:20]})")
        frame = read_parquet(file)
        fix = "the manifest and the data disagree: restore the released set or build a new version"
        if len(frame) != entry["rows"]:
            raise SagoError(
                f"{path / entry['file']}: {len(frame)} rows, the manifest says {entry['rows']}; {fix}"
            )
        if set(frame["dataset"]) - {name}:
            raise SagoError(f"{path / entry['file']}: rows of another dataset than {name!r}; {fix}")
        if name in counts:
            found = {str(k): int(v) for k, v in frame.groupby("family").size().items()}
            if found != counts[name]:
                raise SagoError(
                    f"{path / entry['file']}: rows per family differ from the manifest's counts; {fix}"
                )


def check_expected(variant_set_sha256: str, expected: str | None, where: Path) -> None:
    """Refuse a set whose manifest hash is not the published one (when one is given)."""
    if expected is None:
        return
    if not HEX64.fullmatch(expected.lower()):
        raise SagoError(f"--expected-sha256 {expected[:80]!r} is not a 64-hex sha256")
    if variant_set_sha256 != expected.lower():
        raise SagoError(
            f"{where / MANIFEST} has sha256 {variant_set_sha256}, not the published {expected.lower()}: "
            "this is not the released set; re-download it"
        )


def load_variant_set(
    set_name: str = "sago-v1",
    version: str = "v1",
    root: Path = VARIANTS_DIR,
    *,
    expected_sha256: str | None = None,
    ignore: frozenset[str] = frozenset(),
) -> VariantSet:
    """Open a frozen variant set after verifying it completely (see ``sago variants verify``).

    Checks: the manifest parses and has the expected shape; its sha256 is ``expected_sha256`` when
    given; every listed file has its sha256 and nothing unlisted is in the folder; every table has
    the variant schema, the manifest's row and per-family counts, and only rows of its own dataset.

    Raises:
        SagoError: one line naming the file, on a missing set or any failed check.
    """
    path = set_dir(set_name, version, root)
    manifest = read_manifest(path)
    for key, want in (("set", set_name), ("version", version)):
        if manifest.get(key, want) != want:
            raise SagoError(
                f"{path / MANIFEST} says {key} {str(manifest.get(key))[:40]!r}, but the folder is "
                f"{set_name}/{version}; restore the released set"
            )
    sha256 = sha256_file(path / MANIFEST)
    check_expected(sha256, expected_sha256, path)
    verify_files(path, manifest, ignore=ignore)
    verify_tables(path, manifest)
    datasets = tuple(
        str(d) for d in manifest.get("dataset_order", manifest["datasets"])
    )  # JSON keys are sorted on disk
    entries = {name: _entry(name, entry) for name, entry in manifest["datasets"].items()}
    return VariantSet(set_name, version, path, entries, sha256, datasets)
