"""Deterministic JSON for summaries and the leaderboard, and version-checked reading.

Rebuilding from the same inputs must give the same bytes, so: keys sorted, floats rounded to
``SIGNIFICANT`` significant digits, NaN/inf written as null, numpy scalars turned into Python ones,
and no timestamps anywhere.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmark.errors import SagoError
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION

SIGNIFICANT = 6


def clean(value: Any) -> Any:
    """A JSON-ready copy of ``value``: rounded floats, None for NaN/inf, plain Python types.

    >>> clean({"a": np.float64(1 / 3), "b": [float("nan"), np.int64(2), np.bool_(True)]})
    {'a': 0.333333, 'b': [None, 2, True]}
    """
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        return float(f"{number:.{SIGNIFICANT}g}") if math.isfinite(number) else None
    if value is None or value is pd.NA or isinstance(value, str):
        return None if value is pd.NA else value
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of ``table`` as JSON-ready dicts (column order is irrelevant: keys get sorted)."""
    rows: list[dict[str, Any]] = clean(table.to_dict(orient="records"))
    return rows


def dumps(document: Mapping[str, Any]) -> str:
    """The canonical text of a document: sorted keys, 1-space indent, trailing newline."""
    return json.dumps(clean(document), sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: Path, document: Mapping[str, Any]) -> Path:
    """Write ``document`` canonically and atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(document), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_versioned(path: Path, *, kind: str, newest: int, oldest: int = 1) -> dict[str, Any]:
    """Load a JSON document and refuse a missing, malformed, newer or older-than-``oldest`` ``schema_version``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SagoError(f"{path}: no such {kind} (run `sago analyze`)") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise SagoError(f"{path}: not valid JSON ({str(err)[:120]}); re-run `sago analyze`") from None
    version = document.get("schema_version") if isinstance(document, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise SagoError(f"{path}: {kind} has no integer schema_version; re-run `sago analyze`")
    if version > newest:
        raise SagoError(f"{path}: {kind} schema_version {version} is newer than this sago-bench reads "
                        f"({newest}); upgrade sago-bench")
    if version < oldest:
        raise SagoError(f"{path}: {kind} schema_version {version} is older than this sago-bench reads "
                        f"({oldest}); re-run `sago analyze`")
    checked: dict[str, Any] = document
    return checked


def load_leaderboard(path: Path) -> dict[str, Any]:
    """Read a leaderboard, refusing one written by a newer sago-bench (one-line ``SagoError``)."""
    return read_versioned(path, kind="leaderboard", newest=LEADERBOARD_SCHEMA_VERSION,
                          oldest=LEADERBOARD_SCHEMA_VERSION)
