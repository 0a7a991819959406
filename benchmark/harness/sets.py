"""What the harness needs from a variant set, and the checks it makes before running anything."""

from __future__ import annotations

from typing import Protocol

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


def open_variant_set(set_name: str, version: str) -> VariantSetLike:
    """Load and verify a frozen set through ``benchmark.variants`` (which checks every sha256)."""
    from benchmark.variants.frozen import load_variant_set  # pyarrow and the manifest checks: on demand

    return load_variant_set(set_name, version)


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
        raise SagoError(
            f"variant set {dataset!r}: item {lacking[0]!r} has no baseline row; "
            "the set is corrupted, restore it"
        )
    return frame
