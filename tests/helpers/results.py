"""Reading a results folder back in tests, and the equality two runs of the same work must meet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from safetensors.numpy import load_file


def read_records(out: Path) -> dict[str, pd.DataFrame]:
    """dataset -> its records table."""
    return {p.stem: pd.read_parquet(p) for p in sorted((out / "records").glob("*.parquet"))}


def read_activations(out: Path) -> dict[str, dict[str, np.ndarray]]:
    """dataset -> key -> its activation tensor."""
    return {p.stem: load_file(str(p)) for p in sorted((out / "activations").glob("*.safetensors"))}


def assert_same_results(a: Path, b: Path) -> None:
    """Records equal cell for cell (NaN == NaN) and activations equal bit for bit."""
    ra, rb = read_records(a), read_records(b)
    assert ra.keys() == rb.keys()
    for name in ra:
        pd.testing.assert_frame_equal(ra[name], rb[name], check_exact=True)
    aa, ab = read_activations(a), read_activations(b)
    assert aa.keys() == ab.keys()
    for name in aa:
        assert aa[name].keys() == ab[name].keys()
        for key in aa[name]:
            np.testing.assert_array_equal(aa[name][key], ab[name][key])
