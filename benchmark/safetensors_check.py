"""Open a safetensors file without trusting its header.

A file from a pull request may lie in its header, so every claim is checked against the file's real size
before anything is read: the header fits and is a bounded JSON object, dtypes and shapes are valid, byte
lengths match them, and the tensors tile the data region exactly.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.errors import FileProblem
from benchmark.safeload import parse_json

ITEM_SIZE: dict[str, int] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
NUMPY_TYPES: dict[str, str] = {"F16": "<f2", "F32": "<f4", "F64": "<f8"}
"""dtypes :func:`tensor_arrays` maps to numpy."""
MAX_HEADER = 64 << 20
FIX = "re-run `sago evaluate` to rewrite it"


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the (checked) header describes it."""

    dtype: str
    """safetensors dtype name, e.g. ``F16``."""
    shape: tuple[int, ...]
    begin: int
    """first byte in the data region."""
    end: int


def read_safetensors(path: Path) -> dict[str, TensorInfo]:
    """Every tensor of ``path`` after checking the header against the file; FileProblem otherwise."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) != 8:
                raise FileProblem(path, "not a safetensors file (shorter than 8 bytes)", FIX)
            (length,) = struct.unpack("<Q", head)
            if length > min(size - 8, MAX_HEADER):
                raise FileProblem(
                    path, "not a safetensors file (header length past the end of the file)", FIX
                )
            raw = handle.read(length)
    except OSError as err:
        raise FileProblem(path, f"cannot be read ({err.strerror or type(err).__name__})", FIX) from None
    header = parse_json(raw, path, fix=FIX, max_depth=4)
    if not isinstance(header, dict):
        raise FileProblem(path, "not a safetensors file (header is not a JSON object)", FIX)
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise FileProblem(path, "safetensors __metadata__ is not a mapping of strings", FIX)
    tensors = {name: _tensor(path, name, spec) for name, spec in header.items()}
    _check_tiling(path, tensors, size - 8 - length)
    return tensors


def _tensor(path: Path, name: str, spec: Any) -> TensorInfo:
    """One header entry, checked for types and for a byte length that matches dtype and shape."""
    bad = f"safetensors entry {name[:60]!r}"
    if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data_offsets"}:
        raise FileProblem(path, f"{bad} is not {{dtype, shape, data_offsets}}", FIX)
    dtype, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
    if dtype not in ITEM_SIZE:
        raise FileProblem(path, f"{bad} has unknown dtype {str(dtype)[:20]!r}", FIX)
    if not isinstance(shape, list) or not all(_natural(d) for d in shape):
        raise FileProblem(path, f"{bad} has a shape that is not a list of non-negative integers", FIX)
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(_natural(o) for o in offsets)
        and offsets[0] <= offsets[1]
    ):
        raise FileProblem(path, f"{bad} has data_offsets that are not [begin, end] with begin <= end", FIX)
    if (offsets[1] - offsets[0]) != math.prod(shape) * ITEM_SIZE[dtype]:
        raise FileProblem(
            path,
            f"{bad}: data_offsets span {offsets[1] - offsets[0]} bytes, "
            f"dtype and shape need {math.prod(shape) * ITEM_SIZE[dtype]}",
            FIX,
        )
    return TensorInfo(dtype, tuple(shape), offsets[0], offsets[1])


def _natural(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_tiling(path: Path, tensors: dict[str, TensorInfo], data_bytes: int) -> None:
    """The tensors cover the data region exactly once, in order."""
    position = 0
    for info in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if info.begin != position:
            raise FileProblem(path, "safetensors data_offsets overlap or leave a gap", FIX)
        position = info.end
    if position != data_bytes:
        raise FileProblem(
            path, f"safetensors header describes {position} data bytes, the file holds {data_bytes}", FIX
        )


def tensor_arrays(path: Path, tensors: Mapping[str, TensorInfo]) -> dict[str, np.ndarray]:
    """Read-only numpy views of the float tensors of a checked file (:func:`read_safetensors`), mapped
    from the file rather than read: only what is looked at is paged in."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
    data = (
        np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
        if any(t.end > t.begin for t in tensors.values())
        else np.zeros(0, dtype=np.uint8)
    )
    return {
        name: data[t.begin : t.end].view(NUMPY_TYPES[t.dtype]).reshape(t.shape)
        for name, t in tensors.items()
        if t.dtype in NUMPY_TYPES
    }
