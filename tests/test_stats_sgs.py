"""Known answers for scaled deltas, per-item instability s_X(i), SGS, noise floor and accuracy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from benchmark.axes.measures import measure_names
from benchmark.schema import DELTA_ID_COLUMNS
from benchmark.stats.sgs import (
    ALL,
    accuracy_table,
    bootstrap_means,
    cell_rng,
    instability_per_item,
    noise_floor_table,
    noise_per_item,
    percentile_ci,
    scaled_deltas,
    sgs_table,
)


def row(
    item: str,
    family: str,
    *,
    bleu: float,
    correct: float = float("nan"),
    dataset: str = "d1",
    model: str = "m__a",
    logprob: float = 0.0,
) -> dict[str, object]:
    """One deltas row; every measure 0 except BLEU (scale 100) and log-prob (scale 250)."""
    ids = {
        "model": model,
        "dataset": dataset,
        "item_id": item,
        "variant_id": f"{family}/global/1",
        "family": family,
        "place": "global",
        "strength": 1.0,
    }
    deltas = {f"delta_{name}": 0.0 for name in measure_names()} | {
        "delta_bleu": bleu,
        "delta_logprob": logprob,
    }
    return ids | deltas | {"correct": correct}


@pytest.fixture
def hand_table() -> pd.DataFrame:
    """Item A: BLEU Δ −50 and −100; item B: −20 and NaN; controls that must not count as rewrites."""
    return pd.DataFrame(
        [
            row("A", "baseline", bleu=0.0, correct=1.0),
            row("A", "spacing", bleu=-50.0, logprob=-125.0),
            row("A", "politeness", bleu=-100.0),
            row("A", "identity", bleu=-10.0),
            row("A", "rerun", bleu=-30.0),
            row("B", "baseline", bleu=0.0, correct=0.0),
            row("B", "spacing", bleu=-20.0),
            row("B", "politeness", bleu=float("nan")),
            row("B", "identity", bleu=0.0),
        ]
    )


def s_of(per_item: pd.DataFrame, item: str, measure: str = "bleu", dataset: str = "d1") -> float:
    hit = per_item[
        (per_item["item_id"] == item) & (per_item["measure"] == measure) & (per_item["dataset"] == dataset)
    ]
    assert len(hit) == 1
    return float(hit["s"].iloc[0])


def test_scaled_delta_divides_by_the_measure_scale(hand_table: pd.DataFrame) -> None:
    scaled = scaled_deltas(hand_table)
    assert scaled.loc[1, "bleu"] == pytest.approx(-0.5)
    assert scaled.loc[1, "logprob"] == pytest.approx(-0.5)  # −125 / 250
    assert list(scaled.columns[: len(DELTA_ID_COLUMNS)]) == list(DELTA_ID_COLUMNS)


def test_per_item_instability_is_rms_over_rewrites_only(hand_table: pd.DataFrame) -> None:
    per_item = instability_per_item(hand_table)
    # A: sqrt((0.5² + 1²) / 2); controls (−10, −30) and the baseline are excluded
    assert s_of(per_item, "A") == pytest.approx(math.sqrt(0.625))
    # B: the NaN variant is skipped, not counted as zero
    assert s_of(per_item, "B") == pytest.approx(0.2)
    assert s_of(per_item, "A", "logprob") == pytest.approx(math.sqrt(0.25 / 2))


def test_sgs_is_mean_over_items_and_all_pools_datasets(hand_table: pd.DataFrame) -> None:
    other = pd.DataFrame([row("C", "spacing", bleu=-40.0, dataset="d2")])
    per_item = instability_per_item(pd.concat([hand_table, other], ignore_index=True))
    cells = sgs_table(per_item, seed=1, resamples=200).set_index(["dataset", "measure"])
    assert cells.loc[("d1", "bleu"), "sgs"] == pytest.approx((math.sqrt(0.625) + 0.2) / 2)
    assert cells.loc[("d1", "bleu"), "n_items"] == 2
    assert cells.loc[(ALL, "bleu"), "sgs"] == pytest.approx((math.sqrt(0.625) + 0.2 + 0.4) / 3)
    assert cells.loc[(ALL, "bleu"), "n_items"] == 3
    assert cells.loc[("d1", "entropy"), "sgs"] == 0.0  # nothing changed: SGS exactly 0


def test_per_family_instability(hand_table: pd.DataFrame) -> None:
    per_family = instability_per_item(hand_table, by_family=True)
    spacing = per_family[
        (per_family["family"] == "spacing")
        & (per_family["measure"] == "bleu")
        & (per_family["dataset"] == "d1")
    ].set_index("item_id")["s"]
    assert spacing.to_dict() == pytest.approx({"A": 0.5, "B": 0.2})
    assert not per_family["family"].isin(["identity", "rerun", "baseline"]).any()


def test_noise_floor_uses_control_rows_only(hand_table: pd.DataFrame) -> None:
    noise = noise_floor_table(noise_per_item(hand_table))
    bleu = noise[(noise["measure"] == "bleu") & (noise["dataset"] == "d1")].set_index("control")["value"]
    # identity: A 0.1, B 0.0 → 0.05; rerun: A 0.3 only; both: A sqrt((0.01+0.09)/2), B 0
    assert bleu["identity"] == pytest.approx(0.05)
    assert bleu["rerun"] == pytest.approx(0.3)
    assert bleu["controls"] == pytest.approx(math.sqrt(0.05) / 2)


def test_accuracy_reads_baseline_rows(hand_table: pd.DataFrame) -> None:
    table = accuracy_table(hand_table).set_index("dataset")
    assert table.loc["d1", "accuracy"] == pytest.approx(0.5)
    assert table.loc["d1", "n_items"] == 2
    assert table.loc[ALL, "accuracy"] == pytest.approx(0.5)


def test_accuracy_is_null_without_gold() -> None:
    table = accuracy_table(pd.DataFrame([row("A", "baseline", bleu=0.0)]))
    assert math.isnan(table["accuracy"].iloc[0]) and table["n_items"].iloc[0] == 0


def test_bootstrap_is_deterministic_for_a_seed_and_changes_with_it() -> None:
    values = np.array([0.1, 0.4, 0.2, 0.9, 0.3, 0.5])
    first = bootstrap_means(values, rng=cell_rng(42, "m", "d", "bleu"), resamples=2000)
    again = bootstrap_means(values, rng=cell_rng(42, "m", "d", "bleu"), resamples=2000)
    other = bootstrap_means(values, rng=cell_rng(43, "m", "d", "bleu"), resamples=2000)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    low, high = percentile_ci(first)
    assert values.min() <= low < values.mean() < high <= values.max()


def test_bootstrap_ci_matches_scipy_percentile_bootstrap_roughly() -> None:
    from scipy import stats

    values = cell_rng(0, "x").gamma(2.0, 0.05, size=40)
    ours = percentile_ci(bootstrap_means(values, rng=cell_rng(1, "x"), resamples=4000))
    ref = stats.bootstrap(
        (values,), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(2)
    ).confidence_interval
    assert ours[0] == pytest.approx(ref.low, abs=0.01) and ours[1] == pytest.approx(ref.high, abs=0.01)


def test_cells_are_independent_of_computation_order(hand_table: pd.DataFrame) -> None:
    per_item = instability_per_item(hand_table)
    whole = sgs_table(per_item, seed=5, resamples=300)
    alone = sgs_table(per_item[per_item["measure"] == "bleu"], seed=5, resamples=300)
    merged = whole.merge(alone, on=["model", "dataset", "measure"], suffixes=("", "_alone"))
    assert np.allclose(merged["ci_low"], merged["ci_low_alone"])


def test_missing_delta_column_is_named() -> None:
    with pytest.raises(ValueError, match="delta_bleu"):
        scaled_deltas(pd.DataFrame([row("A", "spacing", bleu=1.0)]).drop(columns=["delta_bleu"]))
