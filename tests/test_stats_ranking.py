"""Known answers for ranks, tie groups, paired comparisons, Kendall τ_b / W and reversals."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmark.stats.agreement import kendall_tau_table, kendall_w, kendall_w_table, reversal_table
from benchmark.stats.exact import kendall_w_permutation_p, sign_flip_p
from benchmark.stats.ranking import (
    NEEDS_THREE,
    friedman_table,
    paired_draws,
    pairwise_table,
    rank_table,
    shared_matrix,
)


def long(values: dict[tuple[str, str], list[float]], measure: str = "bleu") -> pd.DataFrame:
    """Per-item rows from {(model, dataset): [s per item]}."""
    return pd.DataFrame(
        [
            {"model": m, "dataset": d, "item_id": f"{d}-{k:02d}", "measure": measure, "s": s}
            for (m, d), items in values.items()
            for k, s in enumerate(items)
        ]
    )


JITTER = np.array([0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, 0.005, -0.015, 0.01])


def test_shared_matrix_keeps_items_every_model_has() -> None:
    table = long({("a", "d"): [0.1, 0.2, 0.3], ("b", "d"): [0.1, 0.2]})
    assert shared_matrix(table).shape == (2, 2)


def ranks_of(table: pd.DataFrame) -> pd.DataFrame:
    draws = paired_draws(table, seed=0, resamples=500)
    return rank_table(draws, pairwise_table(draws)).set_index("model")


def test_ranks_intervals_and_tie_groups_come_from_the_corrected_tests() -> None:
    # a and b indistinguishable (b = a + symmetric noise), c worse on every item: 10 items, testable
    a = 0.1 + JITTER
    table = long({("a", "d"): list(a), ("b", "d"): list(a + JITTER[::-1] * 0.5), ("c", "d"): list(a + 0.3)})
    ranks = ranks_of(table)
    assert ranks.loc["c", "rank"] == 3 and ranks.loc["c", "rank_low"] == ranks.loc["c", "rank_high"] == 3
    assert ranks.loc["a", "tie_group"] == ranks.loc["b", "tie_group"] == 1
    assert ranks.loc["c", "tie_group"] == 2
    assert ranks.loc["a", "rank_low"] == 1 and ranks.loc["a", "rank_high"] == 2


def test_rule_no_rank_where_the_paired_test_is_not_testable() -> None:
    # four items, one model better on every one: the bootstrap would separate them, the exact test cannot
    # (two-sided floor 2/16 = 0.125), so neither model gets a rank, an interval or a tie group
    table = long({("a", "d"): [0.1, 0.11, 0.12, 0.13], ("b", "d"): [0.5, 0.6, 0.7, 0.8]})
    draws = paired_draws(table, seed=0, resamples=500)
    pair = pairwise_table(draws).iloc[0]
    assert pair["ci_high"] < 0 and pair["verdict"] == "not testable" and pair["p_floor"] == 0.125
    ranks = rank_table(draws, pairwise_table(draws)).set_index("model")
    assert ranks[["rank", "rank_low", "rank_high", "tie_group"]].isna().all().all()


def test_rule_pooled_pairs_are_corrected_over_every_measure() -> None:
    # the same pair on two measures of the pooled items: Holm doubles the smaller p (one family)
    a, b = 0.1 + JITTER, 0.2 + JITTER[::-1]
    table = pd.concat(
        [
            long({("a", "all"): list(a), ("b", "all"): list(b)}, measure="bleu"),
            long({("a", "all"): list(a), ("b", "all"): list(a + 0.001 * JITTER)}, measure="entropy"),
        ]
    )
    rows = pairwise_table(paired_draws(table, seed=0, resamples=200)).set_index("measure")
    assert (rows["family_size"] == 2).all()
    assert rows.loc["bleu", "p_holm"] == pytest.approx(2 * rows.loc["bleu", "p_exact"])
    alone = pairwise_table(paired_draws(table[table["measure"] == "bleu"], seed=0, resamples=200)).iloc[0]
    assert alone["p_holm"] == pytest.approx(alone["p_exact"])


def test_rule_pairwise_verdict_does_not_depend_on_the_scale() -> None:
    a, b = 0.1 + JITTER, 0.2 + JITTER[::-1]
    verdicts = set()
    for factor in (0.32, 1.0, 250.0):
        row = pairwise_table(
            paired_draws(
                long({("a", "d"): list(a * factor), ("b", "d"): list(b * factor)}), seed=0, resamples=200
            )
        ).iloc[0]
        verdicts.add((row["verdict"], round(row["p_exact"], 12)))
    assert len(verdicts) == 1


def test_paired_bootstrap_is_seeded() -> None:
    table = long({("a", "d"): list(0.1 + JITTER), ("b", "d"): list(0.12 - JITTER)})
    first = pairwise_table(paired_draws(table, seed=3, resamples=500))
    again = pairwise_table(paired_draws(table, seed=3, resamples=500))
    pd.testing.assert_frame_equal(first, again)


def test_pairwise_difference_and_exact_test_match_scipy() -> None:
    a, b = 0.1 + JITTER, 0.2 + JITTER[::-1]
    row = pairwise_table(
        paired_draws(long({("a", "d"): list(a), ("b", "d"): list(b)}), seed=0, resamples=2000)
    ).iloc[0]
    assert row["diff"] == pytest.approx(a.mean() - b.mean())
    assert row["ci_high"] < 0  # a is clearly more stable
    reference = stats.permutation_test(
        (a - b,), np.sum, permutation_type="samples", alternative="two-sided", n_resamples=np.inf
    )
    assert row["p_exact"] == pytest.approx(reference.pvalue)
    assert row["p_holm"] == pytest.approx(row["p_exact"])  # a single pair: nothing to correct


def test_friedman_matches_scipy_and_needs_three_models() -> None:
    rng = np.random.default_rng(0)
    values = {
        ("a", "d"): list(rng.random(8)),
        ("b", "d"): list(rng.random(8)),
        ("c", "d"): list(rng.random(8)),
    }
    row = friedman_table(paired_draws(long(values), seed=0, resamples=100)).iloc[0]
    reference = stats.friedmanchisquare(*[values[(m, "d")] for m in "abc"])
    assert (row["statistic"], row["p"]) == pytest.approx((reference.statistic, reference.pvalue))
    two = friedman_table(
        paired_draws(long({k: v for k, v in values.items() if k[0] != "c"}), seed=0, resamples=100)
    ).iloc[0]
    assert two["note"] == NEEDS_THREE and math.isnan(two["p"])


def cells(sgs: dict[str, list[float]], models: str = "abcd", measure: str = "bleu") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": m, "dataset": d, "measure": measure, "sgs": v}
            for d, values in sgs.items()
            for m, v in zip(models, values, strict=True)
        ]
    )


def test_kendall_tau_by_hand_and_against_scipy() -> None:
    # orders 1 2 3 4 vs 1 3 2 4: one discordant pair of six → τ = (5 − 1) / 6
    table = kendall_tau_table(cells({"d1": [0.1, 0.2, 0.3, 0.4], "d2": [0.1, 0.3, 0.2, 0.4]})).iloc[0]
    assert table["tau_b"] == pytest.approx(4 / 6)
    reference = stats.kendalltau([0.1, 0.2, 0.3, 0.4], [0.1, 0.3, 0.2, 0.4])
    assert (table["tau_b"], table["p"]) == pytest.approx((reference.statistic, reference.pvalue))
    assert table["n_models"] == 4


def test_kendall_w_by_hand() -> None:
    # ranks [1 2 3], [1 3 2], [2 1 3]: rank sums 4 6 8, S = 8, W = 12·8 / (3²·(27 − 3)) = 4/9
    result = kendall_w(np.array([[1, 2, 3], [1, 3, 2], [2, 1, 3]], dtype=float))
    assert result.w == pytest.approx(4 / 9)
    assert result.chi2 == pytest.approx(3 * 2 * 4 / 9)
    assert result.p_chi2 == pytest.approx(stats.chi2.sf(8 / 3, 2))
    # exact permutation p by brute force over all 6³ rankings of the three raters (first rater not fixed)
    observed = 8.0
    hits = sum(
        float(np.sum((np.sum(r, axis=0) - 6.0) ** 2)) >= observed - 1e-9
        for r in itertools.product(itertools.permutations([1, 2, 3]), repeat=3)
    )
    assert result.p == pytest.approx(hits / 6**3) and result.p_method == "exact"


def test_kendall_w_two_objects_exact_p_is_not_the_chi2_approximation() -> None:
    # two models ranked the same way on six datasets: exact p = P(all six agree) = 2 / 2^6
    result = kendall_w(np.array([[0.1, 0.2]] * 6))
    assert result.w == pytest.approx(1.0) and result.p == pytest.approx(1 / 32)
    assert result.p_chi2 == pytest.approx(stats.chi2.sf(6.0, 1))  # 0.0143: the invalid approximation


def test_kendall_w_monte_carlo_agrees_with_exact_on_a_larger_case() -> None:
    ranks = np.array([[1, 2, 3, 4, 5, 6], [2, 1, 3, 5, 4, 6], [1, 3, 2, 4, 6, 5]], dtype=float)
    p_mc, method = kendall_w_permutation_p(ranks, seed=1, resamples=20_000)
    assert method == "monte-carlo"  # 720² arrangements exceed the exact limit
    w = kendall_w(ranks)
    assert 0 < p_mc < 0.05 and p_mc == pytest.approx(w.p, abs=0.01)


def test_kendall_w_tie_correction_by_hand() -> None:
    # rater 2 ties the first two: ranks 1.5 1.5 3; S = 6.5; T = 2³ − 2 = 6; W = 12·6.5 / (4·24 − 2·6)
    assert kendall_w(np.array([[1, 2, 3], [1, 1, 2]], dtype=float)).w == pytest.approx(78 / 84)


def test_kendall_w_perfect_agreement_and_table() -> None:
    table = kendall_w_table(cells({"d1": [0.1, 0.2, 0.3, 0.4], "d2": [1, 2, 3, 4], "d3": [5, 6, 7, 8]}))
    assert table.iloc[0]["w"] == pytest.approx(1.0) and table.iloc[0]["n_datasets"] == 3


def reversals_of(table: pd.DataFrame) -> pd.DataFrame:
    draws = paired_draws(table, seed=0, resamples=2000)
    return reversal_table(pairwise_table(draws), draws, measures=("bleu",))


def test_reversals_flag_only_exact_corrected_flips() -> None:
    base = 0.2 + JITTER
    noisy = base + np.array([0.06, -0.05, 0.04, -0.06, 0.05, -0.04, 0.03, -0.02, 0.02, -0.02])
    table = long(
        {
            ("a", "d1"): list(base - 0.1),
            ("b", "d1"): list(base),  # a better on d1, clearly
            ("a", "d2"): list(base + 0.1),
            ("b", "d2"): list(base),  # a worse on d2, clearly
            ("a", "d3"): list(noisy),
            ("b", "d3"): list(base),
        }
    )  # a slightly worse, within noise
    by_pair = reversals_of(table).set_index(["dataset_a", "dataset_b"])
    assert set(by_pair.index) == {("d1", "d2"), ("d1", "d3")}  # d2 vs d3: same order, not a reversal
    clear = by_pair.loc[("d1", "d2")]
    # ten same-sign differences: exact two-sided p = 2/2^10 on each side; Holm over 3 candidates
    assert clear["p_a"] == pytest.approx(2 / 1024) and clear["p"] == pytest.approx(2 / 1024)
    assert clear["p_holm"] == pytest.approx(3 * 2 / 1024) and clear["verdict"] == "significant"
    assert bool(clear["significant"]) is True
    assert clear["diff_a"] == pytest.approx(-0.1) and clear["diff_b"] == pytest.approx(0.1)
    noisy_row = by_pair.loc[("d1", "d3")]
    assert noisy_row["verdict"] == "not significant" and bool(noisy_row["significant"]) is False
    assert noisy_row["p_b"] == pytest.approx(sign_flip_p(np.array(noisy) - np.array(base)))


def test_four_items_make_a_reversal_not_testable_however_clear() -> None:
    base = np.array([0.2, 0.25, 0.3, 0.35])
    table = long(
        {
            ("a", "d1"): list(base - 0.1),
            ("b", "d1"): list(base),
            ("a", "d2"): list(base + 0.1),
            ("b", "d2"): list(base),
        }
    )
    row = reversals_of(table).iloc[0]
    assert row["p_a"] == pytest.approx(0.125) and row["p_b"] == pytest.approx(0.125)  # 2 / 2^4: the floor
    assert row["verdict"] == "not testable" and not row["testable"] and not row["significant"]
    assert row["ci_high_a"] < 0 < row["ci_low_b"]  # the bootstrap CIs "exclude 0" anyway
