"""Activation axis: per-layer cosine, last layer, all-layer mean and the long per-layer table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmark.axes.activations import cosine_last, cosine_mean, layer_cosine_table, layer_cosines


def test_identical_states_have_cosine_exactly_one_even_in_float16() -> None:
    rng = np.random.default_rng(0)
    h = rng.normal(size=(4, 64)).astype(np.float16)
    np.testing.assert_array_equal(layer_cosines(h, h.copy()), np.ones(4))


def test_known_cosines_per_layer() -> None:
    variant = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [-3.0, 0.0]])
    baseline = np.array([[2.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(layer_cosines(variant, baseline), [1.0, np.sqrt(0.5), 0.0, -1.0])


def test_zero_vector_layer_has_no_cosine() -> None:
    cos = layer_cosines(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert np.isnan(cos[0]) and cos[1] == 1.0


def test_shape_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="shapes differ"):
        layer_cosines(np.zeros((3, 4)), np.zeros((2, 4)))


def test_last_and_mean_reductions_skip_the_embedding_row_for_the_mean() -> None:
    cos = np.array([0.2, 1.0, 0.5, 0.9])
    assert cosine_last(cos) == 0.9
    assert cosine_mean(cos) == pytest.approx((1.0 + 0.5 + 0.9) / 3)


def test_layer_cosine_table_lists_every_layer_and_skips_missing_arrays() -> None:
    records = pd.DataFrame(
        {
            "dataset": ["d"] * 3,
            "item_id": ["i1"] * 3,
            "family": ["baseline", "spacing", "form"],
            "variant_id": ["baseline/none/0", "spacing/prefix/5", "form/global/1"],
        }
    )
    acts = {
        "i1|baseline/none/0": np.array([[1.0, 0.0], [1.0, 0.0]]),
        "i1|spacing/prefix/5": np.array([[1.0, 0.0], [0.0, 1.0]]),
    }
    table = layer_cosine_table(records, acts)
    assert list(table.columns) == ["dataset", "item_id", "variant_id", "family", "layer", "cosine"]
    assert len(table) == 4  # two layers each for baseline and spacing; form has no activations
    spacing = table[table["variant_id"] == "spacing/prefix/5"]
    assert spacing["layer"].tolist() == [0, 1] and spacing["cosine"].tolist() == [1.0, 0.0]
