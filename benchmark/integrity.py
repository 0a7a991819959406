"""Integrity of a results folder: the sha256 map run.json records, and typed loading of its tables.

Shared by the validator (which reports every problem) and ``sago analyze`` (which refuses to read a
folder with any problem). Each check returns :class:`Problem` values instead of raising.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pyarrow as pa

from benchmark.axes.measures import delta_columns
from benchmark.documents import RunDocument
from benchmark.errors import SagoError
from benchmark.parquet_check import TooBig, checked_table
from benchmark.provenance import sha256_file
from benchmark.results import RESULT_FILES, RUN_FILE, ResultsFolder, write_document
from benchmark.schema import (
    BOOLEAN,
    DELTA_ID_COLUMNS,
    FLOAT,
    INTEGER,
    OWN_CONFIDENCE_FIELDS,
    RECORD_FIELDS,
    STRING,
    column_kinds,
)

# The records contract (docs/CONTRACTS.md section 2): the Arrow type family of every column, as
# ``schema.RECORD_FIELDS`` declares it.
RECORD_TYPES: dict[str, str] = column_kinds(RECORD_FIELDS)
OWN_CONFIDENCE_TYPES: dict[str, str] = column_kinds(OWN_CONFIDENCE_FIELDS)


def delta_types() -> dict[str, str]:
    """The deltas contract (docs/CONTRACTS.md section 3): string ids, then a float per measure."""
    measured = delta_columns()[len(DELTA_ID_COLUMNS) :]
    return {**{c: STRING for c in DELTA_ID_COLUMNS}, "strength": FLOAT, **{c: FLOAT for c in measured}}


_IS_TYPE = {
    STRING: lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    INTEGER: pa.types.is_integer,
    FLOAT: pa.types.is_floating,
    BOOLEAN: pa.types.is_boolean,
}
EVALUATE = "re-run `sago evaluate` to rewrite it"
# the fixes of a results folder whose files run.json's ``files`` map does not match
_REHASH = "re-run `sago evaluate`, or have a maintainer run `python -m benchmark submissions rehash SLUG`"
_COMMIT_ALL = "commit every file `sago evaluate` wrote"
_COMMIT_RUN = "remove it, or commit the run.json written with it"
_RESTORE = "the file changed after the run: restore the file `sago evaluate` wrote"


class Problem(NamedTuple):
    """One thing wrong with one file."""

    path: str
    """relative to the results folder."""
    problem: str
    fix: str


def plain_files(folder: Path, suffix: str) -> list[Path]:
    """Plain files named ``*<suffix>`` in ``folder`` (links are never read)."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{suffix}") if p.is_file() and not p.is_symlink())


def _result_files(results_dir: Path) -> dict[str, Path]:
    """Every harness output under ``results_dir`` (``RESULT_FILES``), by its path relative to it."""
    return {
        f"{sub}/{p.name}": p for sub, suffix in RESULT_FILES for p in plain_files(results_dir / sub, suffix)
    }


def file_hashes(results_dir: Path) -> dict[str, str]:
    return {name: sha256_file(path) for name, path in _result_files(results_dir).items()}


def hash_problems(results_dir: Path, run: RunDocument) -> list[Problem]:
    """Compare run.json's ``files`` map with the folder: every file listed, present and unchanged."""
    files = run.files
    if not run.files_given:
        return [Problem(RUN_FILE, "records no sha256 of the results files (no 'files')", _REHASH)]
    if files is None:
        return [Problem(RUN_FILE, "'files' is not a mapping of path to sha256", "re-run `sago evaluate`")]
    present = _result_files(results_dir)
    problems = []
    for name in sorted(set(files) | set(present)):
        if name not in present:
            problem = Problem(RUN_FILE, f"lists {name[:80]!r}, which is not in the folder", _COMMIT_ALL)
        elif name not in files:
            problem = Problem(name, "not listed in run.json's files", _COMMIT_RUN)
        elif sha256_file(present[name]) != files[name]:
            problem = Problem(name, "sha256 differs from the one run.json records", _RESTORE)
        else:
            continue
        problems.append(problem)
    return problems


def parquet_problem(path: Path, types: dict[str, str], *, dataset: str | None = None) -> str | None:
    """Why ``path`` is not a table of exactly ``types`` (nulls only in floats; every row of ``dataset``),
    opened within :data:`benchmark.parquet_check.TABLE_LIMITS` (None: it is)."""
    return load_table(path, types, dataset=dataset)[1]


def load_table(
    path: Path, types: dict[str, str], *, dataset: str | None = None
) -> tuple[pa.Table | None, str | None]:
    """The table of ``path`` when :func:`parquet_problem` finds nothing wrong, else (None, the problem)."""
    try:
        table = checked_table(path, list(types))
    except TooBig as err:
        return None, str(err)
    except (pa.ArrowException, OSError, ValueError, IndexError, MemoryError) as err:
        return None, f"does not load as parquet ({type(err).__name__})"
    for column, family in types.items():
        kind = table.schema.field(column).type
        if not _IS_TYPE[family](kind):
            return None, f"column {column} is {str(kind)[:40]}, not {family}"
        if family != FLOAT and table.column(column).null_count:
            return None, f"column {column} has missing values"
    if dataset is not None and table.num_rows and set(table.column("dataset").to_pylist()) != {dataset}:
        return None, f"rows of another dataset than {dataset!r}"
    return table, None


def rehash(results_dir: Path) -> dict[str, str]:
    """Record in an existing run.json the sha256 of the files beside it (only ``files`` changes)."""
    folder = ResultsFolder(results_dir)
    run = folder.read_run(fix="regenerate it with `sago evaluate`")
    hashes = file_hashes(results_dir)
    if not hashes:
        raise SagoError(f"{results_dir}: no records or activations to hash; run `sago evaluate` first")
    write_document(folder.run, run.with_files(hashes))
    return hashes
