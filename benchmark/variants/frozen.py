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

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.documents import HEX64, MANIFEST, DatasetEntry, ManifestDocument
from benchmark.errors import SagoError
from benchmark.paths import VARIANTS_DIR, check_name
from benchmark.provenance import sha256_file
from benchmark.schema import VARIANT_COLUMNS

_NOT_STRINGS = {
    "strength": pa.float64(),
    "similarity": pa.float64(),
    "answers": pa.list_(pa.string()),
    "item_rank": pa.int64(),
    "length_ratio": pa.float64(),
}
ARROW_SCHEMA = pa.schema([(name, _NOT_STRINGS.get(name, pa.string())) for name in VARIANT_COLUMNS])
"""The variant table, columns in :data:`VARIANT_COLUMNS` order: strings unless :data:`_NOT_STRINGS` says."""
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
class VariantSet:
    """A verified frozen variant set (its name, version and folder)."""

    name: str
    version: str
    path: Path
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


def read_manifest(path: Path) -> ManifestDocument:
    """The manifest of the set in folder ``path``, refusing a missing, malformed or newer one (one line
    naming the key; the shape is :class:`~benchmark.documents.ManifestDocument`'s to check)."""
    file = path / MANIFEST
    if not file.exists():
        raise SagoError(
            f"no variant set at {path} (missing {MANIFEST}); build it with `sago variants build` "
            "or fetch it with `sago variants download`"
        )
    return ManifestDocument.read(file)


def verify_files(path: Path, manifest: ManifestDocument, *, ignore: frozenset[str] = frozenset()) -> None:
    """Check every listed file against its sha256, and refuse any file in the folder that is not listed.

    ``ignore`` names top-level entries to pass over (a Hub snapshot's ``.cache`` and ``.gitattributes``).
    """
    files = manifest.files
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


def verify_tables(path: Path, manifest: ManifestDocument) -> None:
    """Each dataset's table has the variant schema of the manifest's version, its row and per-family counts,
    and only its own rows (the manifest's shape, counts naming known datasets included, is checked)."""
    fix = "the manifest and the data disagree: restore the released set or build a new version"
    for name, entry in manifest.datasets.items():
        file = path / entry.file
        try:
            schema = pq.read_schema(file)
        except (OSError, pa.ArrowException):
            raise SagoError(f"{file} is not a readable parquet file; restore the released set") from None
        if not schema.equals(SCHEMAS.get(manifest.schema_version, ARROW_SCHEMA)):
            raise SagoError(f"{file} does not match the variant schema (columns {schema.names[:20]})")
        frame = read_parquet(file)
        if len(frame) != entry.rows:
            raise SagoError(f"{file}: {len(frame)} rows, the manifest says {entry.rows}; {fix}")
        if set(frame["dataset"]) - {name}:
            raise SagoError(f"{file}: rows of another dataset than {name!r}; {fix}")
        if name in manifest.counts:
            found = {str(k): int(v) for k, v in frame.groupby("family").size().items()}
            if found != manifest.counts[name]:
                raise SagoError(f"{file}: rows per family differ from the manifest's counts; {fix}")


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
    """Open a frozen variant set after verifying it completely (the checks ``sago variants verify`` lists).

    Raises:
        SagoError: one line naming the file, on a missing set or any failed check.
    """
    path = set_dir(set_name, version, root)
    manifest = read_manifest(path)
    for key, said, want in (("set", manifest.set, set_name), ("version", manifest.version, version)):
        if said not in (None, want):
            raise SagoError(
                f"{path / MANIFEST} says {key} {str(said)[:40]!r}, but the folder is "
                f"{set_name}/{version}; restore the released set"
            )
    sha256 = sha256_file(path / MANIFEST)
    check_expected(sha256, expected_sha256, path)
    verify_files(path, manifest, ignore=ignore)
    verify_tables(path, manifest)
    return VariantSet(set_name, version, path, manifest.datasets, sha256, manifest.dataset_order)
