"""The two JSON renderings of sago-bench's documents (which document uses which: ``benchmark.documents``).

:func:`plain_json` writes provenance as recorded; :func:`dumps` writes statistics so that a rebuild gives
the same bytes: keys sorted, floats rounded, NaN/inf as null, no timestamps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

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


def plain_json(document: Mapping[str, Any]) -> str:
    """Provenance JSON (run.json, plan.json, manifests): sorted keys, indent 2, trailing newline.

    >>> plain_json({"b": 1, "a": "é"})
    '{\\n  "a": "é",\\n  "b": 1\\n}\\n'
    """
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def dumps(document: Mapping[str, Any]) -> str:
    """The canonical text of a document: sorted keys, 1-space indent, trailing newline."""
    return json.dumps(clean(document), sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
