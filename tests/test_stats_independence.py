"""Axis independence, Pareto table, accuracy vs SGS and the sample-size study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmark.stats.independence import accuracy_vs_sgs, fisher_combined, independence_table, pareto_table
from benchmark.stats.sample_size import relative_deviations, sample_size_table, smallest_n_table
from benchmark.stats.sgs import cell_rng


def per_item(model: str, measures: dict[str, list[float]], dataset: str = "d") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": model, "dataset": dataset, "item_id": f"i{k}", "measure": name, "s": s}
            for name, values in measures.items()
            for k, s in enumerate(values)
        ]
    )


def test_independence_within_model_and_combined_by_fisher_z() -> None:
    x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    other = [0.3, 0.1, 0.5, 0.2, 0.4, 0.7, 0.6]
    table = pd.concat(
        [
            per_item("a", {"bleu": x, "bertscore": other, "mirroring": x[::-1]}),
            per_item("b", {"bleu": x, "bertscore": other[::-1], "mirroring": x}),
        ]
    )
    result = independence_table(table).set_index(["scope", "model", "measure_a", "measure_b"])
    assert result.loc[("model", "a", "bleu", "mirroring"), "rho"] == pytest.approx(-1.0)
    rho_a = stats.spearmanr(x, other).statistic
    rho_b = stats.spearmanr(x, other[::-1]).statistic
    assert result.loc[("model", "a", "bleu", "bertscore"), "rho"] == pytest.approx(rho_a)
    combined = result.xs("combined", level="scope").reset_index()
    row = combined[(combined["measure_a"] == "bleu") & (combined["measure_b"] == "bertscore")].iloc[0]
    # equal n: the mean of atanh ρ, back-transformed; its SE is sqrt(1.06 / Σ (n − 3))
    mean_z = (np.arctanh(rho_a) + np.arctanh(rho_b)) / 2
    assert row["rho"] == pytest.approx(np.tanh(mean_z))
    assert row["p"] == pytest.approx(2 * stats.norm.sf(abs(mean_z) / np.sqrt(1.06 / 8)))
    assert row["n_items"] == 14 and row["n_models"] == 2 and row["method"] == "fisher-z within dataset"
    assert pd.isna(row["model"])


def test_independence_is_tested_within_each_dataset_not_across_them() -> None:
    """Two datasets on which the measures are unrelated item by item, but every measure is higher on the
    second: pooled over datasets the items would correlate strongly; within each dataset they do not."""
    x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    unrelated = [0.5, 0.2, 0.8, 0.1, 0.6, 0.3, 0.7, 0.4]  # Spearman ρ with x is 0
    table = pd.concat(
        [
            per_item("a", {"bleu": x, "bertscore": unrelated}, dataset="low"),
            per_item(
                "a", {"bleu": [v + 10 for v in x], "bertscore": [v + 10 for v in unrelated]}, dataset="high"
            ),
        ]
    )
    pooled = stats.spearmanr(x + [v + 10 for v in x], unrelated + [v + 10 for v in unrelated]).statistic
    assert pooled > 0.7
    combined = independence_table(table).query("scope == 'combined'").iloc[0]
    assert combined["rho"] == pytest.approx(stats.spearmanr(x, unrelated).statistic, abs=1e-12)
    assert abs(combined["rho"]) < 0.1 and combined["p"] > 0.5 and combined["n_items"] == 16


def test_fisher_combination_skips_models_with_too_few_items() -> None:
    assert fisher_combined([0.9, 0.2], [3, 20])[2] == 1
    assert np.isnan(fisher_combined([0.5], [3])[0])


def test_pareto_table_marks_non_dominated_models() -> None:
    cells = pd.DataFrame(
        [
            {"model": m, "dataset": "d", "measure": x, "sgs": v}
            for m, gen, mir in (("a", 0.1, 0.9), ("b", 0.5, 0.2), ("c", 0.6, 0.95))
            for x, v in (("bertscore", gen), ("mirroring", mir))
        ]
    )
    table = pareto_table(cells).set_index("model")
    assert table["pareto_optimal"].to_dict() == {"a": True, "b": True, "c": False}
    assert table.loc["a", "generation"] == 0.1 and table.loc["a", "mirroring"] == 0.9


def test_accuracy_vs_sgs_is_spearman_over_model_dataset_pairs() -> None:
    accuracy = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "a"],
            "dataset": ["d1", "d2", "d1", "d2", "all"],
            "accuracy": [0.9, 0.7, 0.5, 0.3, 0.8],
        }
    )
    cells = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b"],
            "dataset": ["d1", "d2", "d1", "d2"],
            "measure": "bleu",
            "sgs": [0.1, 0.2, 0.3, 0.4],
        }
    )
    row = accuracy_vs_sgs(accuracy, cells, measures=["bleu"]).iloc[0]
    assert row["rho"] == pytest.approx(-1.0) and row["n_pairs"] == 4  # the "all" row is not a pair


def test_relative_deviation_is_zero_for_the_full_set_and_shrinks_with_n() -> None:
    values = cell_rng(0, "v").gamma(2.0, 0.05, size=64)
    assert relative_deviations(values, 64, rng=cell_rng(1, "x")) == pytest.approx(np.zeros(500))
    small = relative_deviations(values, 4, rng=cell_rng(1, "x")).mean()
    large = relative_deviations(values, 32, rng=cell_rng(1, "x")).mean()
    assert small > large > 0


def test_sample_size_study_and_smallest_n() -> None:
    values = list(cell_rng(0, "v").gamma(4.0, 0.05, size=20))
    study = sample_size_table(per_item("a", {"bleu": values}), seed=0)
    assert study["n"].tolist() == [4, 8, 16, 20]
    smallest = smallest_n_table(study).iloc[0]
    within = study[study["mean_rel_dev"] <= 0.15]["n"]
    assert smallest["smallest_n"] == within.min() and smallest["n_available"] == 20


def test_sample_size_of_a_zero_sgs_is_null() -> None:
    study = sample_size_table(per_item("a", {"bleu": [0.0] * 8}), seed=0)
    assert study["mean_rel_dev"].isna().all()
    assert pd.isna(smallest_n_table(study).iloc[0]["smallest_n"])


def test_ranking_agreement_is_perfect_for_well_separated_models() -> None:
    from benchmark.stats.ranking import paired_draws
    from benchmark.stats.sample_size import ranking_agreement_table

    base = list(cell_rng(0, "b").uniform(0.0, 0.01, size=16))
    table = pd.concat(
        [
            per_item("a", {"bleu": base}),
            per_item("b", {"bleu": [v + 0.5 for v in base]}),
            per_item("c", {"bleu": [v + 1.0 for v in base]}),
        ]
    )
    study = ranking_agreement_table(paired_draws(table, seed=0, resamples=100), seed=0)
    assert study["n"].tolist() == [4, 8, 16]
    assert (study["mean_tau"] == 1.0).all() and (study["same_order"] == 1.0).all()
    noisy = pd.concat([per_item("a", {"bleu": base}), per_item("b", {"bleu": base[::-1]})])
    rows = ranking_agreement_table(paired_draws(noisy, seed=0, resamples=100), seed=0)
    assert rows["same_order"].iloc[0] < 1.0  # two models with the same items in another order: coin flips
