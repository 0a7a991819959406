"""Activation axis: cosine between the variant's and the baseline's hidden states, per layer.

Arrays are ``[n_layers + 1, hidden]`` (row 0 = embedding output), the hidden state at the last
prompt token as the harness stores it (docs/CONTRACTS.md section 2).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from benchmark.schema import BASELINE_VARIANT_ID


def activation_key(item_id: str, variant_id: str) -> str:
    """The safetensors key of one (item, variant) activation array."""
    return f"{item_id}|{variant_id}"


def layer_cosines(variant: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """Cosine similarity of two ``[layers, hidden]`` arrays, one value per layer (float64).

    A layer where either vector is all zeros has no direction: its cosine is NaN.

    >>> layer_cosines(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [1.0, 0.0]])).round(4)
    array([1.    , 0.7071])

    A compact result stores, for a variant, these cosines themselves (one value per layer, computed by
    the harness from the same float16 vectors); they are returned as they are:

    >>> layer_cosines(np.array([1.0, 0.7071]), np.array([[1.0, 0.0], [1.0, 0.0]])).round(4)
    array([1.    , 0.7071])
    """
    if variant.ndim == 1 and baseline.ndim == 2 and len(variant) == len(baseline):
        return variant.astype(np.float64)
    if variant.shape != baseline.shape:
        raise ValueError(f"activation shapes differ: {variant.shape} vs {baseline.shape}")
    v, b = variant.astype(np.float64), baseline.astype(np.float64)
    norms = np.linalg.norm(v, axis=-1) * np.linalg.norm(b, axis=-1)
    dots = np.einsum("lh,lh->l", v, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, dots / norms, np.nan)
    # Rounding leaves 1 - 2e-16 for equal vectors; equal rows must give a delta of exactly 0 so the
    # identity control's noise floor is not polluted by arithmetic noise.
    same = np.all(v == b, axis=-1) & (norms > 0)
    return np.where(same, 1.0, np.clip(cos, -1.0, 1.0))


def cosine_last(cosines: np.ndarray) -> float:
    """The authors' measure: the last layer's cosine."""
    return float(cosines[-1])


def cosine_mean(cosines: np.ndarray) -> float:
    """Our all-layer measure: the mean over the transformer layers' outputs (rows 1..n).

    Row 0 is the embedding lookup of the last prompt token, which a chat template makes the same
    token for every variant; averaging it in would only pull every item towards "stable".
    """
    layers = cosines[1:] if len(cosines) > 1 else cosines
    return float(np.mean(layers))


def layer_cosine_table(records: pd.DataFrame, activations: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Long table of per-layer cosines to the item's baseline, for the site's layer plots.

    Columns: dataset, item_id, variant_id, family, layer, cosine. Rows whose activations (or
    whose baseline's activations) are missing are left out.
    """
    rows: list[tuple[str, str, str, str, int, float]] = []
    for rec in records.itertuples(index=False):
        here = activations.get(activation_key(rec.item_id, rec.variant_id))
        base = activations.get(activation_key(rec.item_id, BASELINE_VARIANT_ID))
        if here is None or base is None:
            continue
        for layer, cos in enumerate(layer_cosines(here, base)):
            rows.append((rec.dataset, rec.item_id, rec.variant_id, rec.family, layer, float(cos)))
    columns = ["dataset", "item_id", "variant_id", "family", "layer", "cosine"]
    return pd.DataFrame(rows, columns=columns)
