"""What the harness needs from a variant set, and the checks it makes before running anything."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from benchmark.errors import SagoError
from benchmark.schema import BASELINE_FAMILY, VARIANT_COLUMNS


class VariantSetLike(Protocol):
    """The three things the harness reads from a frozen variant set."""

    @property
    def sha256(self) -> str: ...

    @property
    def datasets(self) -> tuple[str, ...]: ...

    def frame(self, dataset: str) -> pd.DataFrame: ...


@dataclass(frozen=True)
class FramesVariantSet:
    """A variant set held in memory (tests, benchmarks); ``sha256`` is whatever the caller says."""

    sha256: str
    """stands in for the manifest hash."""
    frames: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """dataset name -> frame with ``schema.VARIANT_COLUMNS``."""

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(self.frames)

    def frame(self, dataset: str) -> pd.DataFrame:
        return self.frames[dataset]


def open_variant_set(set_name: str, version: str) -> VariantSetLike:
    """Load and verify a frozen set through ``benchmark.variants`` (which checks every sha256)."""
    loader: Any = None
    for module in ("benchmark.variants", "benchmark.variants.freeze"):
        loader = getattr(importlib.import_module(module), "load_variant_set", None)
        if loader is not None:
            break
    if loader is None:
        raise SagoError("this checkout has no variant-set reader (benchmark.variants.load_variant_set)")
    variant_set: VariantSetLike = loader(set_name, version)
    return variant_set


def checked_frame(variant_set: VariantSetLike, dataset: str) -> pd.DataFrame:
    """One dataset's frame, refused with a one-line SagoError when it cannot be run."""
    frame = variant_set.frame(dataset)
    missing = [c for c in VARIANT_COLUMNS if c not in frame.columns]
    if missing:
        raise SagoError(f"variant set {dataset!r} lacks columns {missing}; the set is corrupted, restore it")
    if any(frame[c].astype(str).str.contains("|", regex=False).any() for c in ("item_id", "variant_id")):
        raise SagoError(f"variant set {dataset!r} has an id containing '|'; ids must not contain it")
    if frame.duplicated(["item_id", "variant_id"]).any():
        raise SagoError(f"variant set {dataset!r} repeats an (item_id, variant_id); the set is corrupted")
    with_baseline = set(frame.loc[frame["family"] == BASELINE_FAMILY, "item_id"])
    lacking = sorted(set(frame["item_id"]) - with_baseline)
    if lacking:
        raise SagoError(f"variant set {dataset!r}: item {lacking[0]!r} has no baseline row; "
                        "the set is corrupted, restore it")
    return frame
