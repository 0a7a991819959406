"""Known answers for the ε tests, markers and the Holm / Benjamini–Hochberg corrections."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from benchmark.stats.significance import (
    adjust_across_cells,
    benjamini_hochberg,
    epsilon_tests,
    exact_greater,
    holm,
    marker,
    t_test_greater,
)


def holm_reference(p: list[float]) -> list[float]:
    """Textbook Holm, written independently as a loop: p_(k) (m − k + 1), cumulative max, cap 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted, running = [0.0] * m, 0.0
    for k, i in enumerate(order):
        running = max(running, (m - k) * p[i])
        adjusted[i] = min(running, 1.0)
    return adjusted


def test_t_statistic_by_hand_and_against_scipy() -> None:
    values = np.array([0.1, 0.2, 0.3])
    t, p = t_test_greater(values, 0.05)
    # mean 0.2, sd 0.1: t = 0.15 / (0.1 / sqrt 3)
    assert t == pytest.approx(0.15 / (0.1 / math.sqrt(3)))
    reference = stats.ttest_1samp(values, 0.05, alternative="greater")
    assert (t, p) == pytest.approx((reference.statistic, reference.pvalue))
    assert p == pytest.approx(stats.t.sf(t, df=2))


def test_t_test_is_undefined_for_one_item() -> None:
    assert all(math.isnan(x) for x in t_test_greater(np.array([0.3]), 0.05))


def test_exact_test_matches_scipy_permutation_on_shifted_values() -> None:
    values = np.array([0.02, 0.09, 0.11, 0.2, 0.07, 0.3, 0.04])
    p, floor = exact_greater(values, 0.05)
    reference = stats.permutation_test(
        (values - 0.05,), np.sum, permutation_type="samples", alternative="greater", n_resamples=np.inf
    )
    assert p == pytest.approx(reference.pvalue) and floor == 0.5**7


def test_rule_constant_sample_is_not_testable() -> None:
    # scipy's t-test gives t = inf on four (or eight) equal values; the exact test would give its floor
    eight = np.full(8, 0.3)
    assert all(math.isnan(x) for x in t_test_greater(eight, 0.05))
    assert math.isnan(exact_greater(eight, 0.05)[0])
    out = adjust_across_cells(epsilon_tests(per_item({("a", "d", "bleu"): [0.3] * 8}), (0.05,))).iloc[0]
    assert out["verdict"] == "not testable" and out["marker"] == "" and out["marker_t"] == ""


def test_rule_four_items_are_not_testable_whatever_the_data() -> None:
    # all four far above ε: the exact one-sided p is 1/16 = 0.0625 at best, so no verdict can be "significant"
    cells = {("a", "d", "bleu"): [0.9, 0.8, 0.95, 0.85]}
    out = adjust_across_cells(epsilon_tests(per_item(cells), (0.05,))).iloc[0]
    assert out["p_exact"] == pytest.approx(0.0625) and out["p_floor"] == pytest.approx(0.0625)
    assert out["verdict"] == "not testable" and out["marker"] == ""
    assert out["p_t"] < 0.001 and out["marker_t"] == "†"  # the paper's column would mark it


def test_rule_verdicts_do_not_depend_on_the_scale() -> None:
    # one quantity on two scales (log-prob and log-prob per token at a fixed length): ε scaled with it
    rng = np.random.default_rng(3)
    values = rng.uniform(0.04, 0.2, size=12)
    for factor in (0.32, 1.0, 250.0):
        p, floor = exact_greater(values * factor, 0.05 * factor)
        assert p == pytest.approx(exact_greater(values, 0.05)[0]) and floor == 0.5**12


def test_rule_holm_floor_makes_a_large_family_untestable() -> None:
    # 6 items: floor 1/64 ≈ 0.016 < α alone, but Holm over 4 such cells needs 4/64 = 0.0625 ≥ α
    cells = {(m, "d", "bleu"): [0.9, 0.8, 0.95, 0.85, 0.7, 0.75] for m in "abcd"}
    out = adjust_across_cells(epsilon_tests(per_item(cells), (0.05,)))
    assert np.allclose(out["p_floor_holm"], 4 / 64) and (out["verdict"] == "not testable").all()
    three = {k: v for k, v in cells.items() if k[0] != "d"}
    fewer = adjust_across_cells(epsilon_tests(per_item(three), (0.05,)))
    assert (fewer["verdict"] == "significant").all() and (fewer["family_size"] == 3).all()


def test_markers_follow_the_thresholds() -> None:
    assert [marker(p) for p in (0.0009, 0.001, 0.009, 0.01, 0.049, 0.05)] == ["†", "**", "**", "*", "*", ""]


def test_holm_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 → running max
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_bh_by_hand() -> None:
    # sorted p·4/k = 0.02, 0.02, 0.04, 0.04; step-up minimum from the top
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bh_matches_scipy_and_holm_matches_reference(seed: int) -> None:
    p = np.random.default_rng(seed).uniform(0, 0.2, size=25) ** 2
    assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(p, method="bh"))
    assert holm(p) == pytest.approx(holm_reference(list(p)))


def test_nan_p_values_are_left_out_of_the_family() -> None:
    adjusted = holm([0.01, float("nan"), 0.02])
    assert math.isnan(adjusted[1])
    assert adjusted[[0, 2]] == pytest.approx([0.02, 0.02])  # m = 2, not 3
    assert math.isnan(benjamini_hochberg([float("nan")])[0])


def per_item(cells: dict[tuple[str, str, str], list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": m, "dataset": d, "measure": x, "item_id": f"i{k}", "s": s}
            for (m, d, x), values in cells.items()
            for k, s in enumerate(values)
        ]
    )


def test_epsilon_tests_and_adjustment_families() -> None:
    table = per_item(
        {
            ("m", "d1", "bleu"): [0.2, 0.3, 0.25, 0.22, 0.27, 0.31],
            ("m", "d2", "bleu"): [0.01, 0.03, 0.02, 0.06, 0.04, 0.05],
            ("m", "all", "bleu"): [0.2, 0.3, 0.25, 0.22, 0.27, 0.31, 0.01, 0.03, 0.02, 0.06, 0.04, 0.05],
        }
    )
    tests = adjust_across_cells(epsilon_tests(table, (0.01, 0.05)))
    assert len(tests) == 6
    proper = tests[(tests["dataset"] != "all") & (tests["epsilon"] == 0.05)]
    testable = proper[proper["testable"]]
    assert testable["p_holm"].to_numpy() == pytest.approx(holm(testable["p_exact"].to_numpy()))
    assert proper["p_t_holm"].to_numpy() == pytest.approx(holm(proper["p_t"].to_numpy()))
    pooled = tests[(tests["dataset"] == "all") & (tests["epsilon"] == 0.05)]
    assert pooled["p_holm"].to_numpy() == pytest.approx(pooled["p_exact"].to_numpy())  # a family of one
    d1 = tests[(tests["dataset"] == "d1") & (tests["epsilon"] == 0.05)].iloc[0]
    assert d1["p_exact"] == pytest.approx(1 / 64) and d1["marker"] == marker(d1["p_holm"])


p_lists = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=1, max_size=40)


@given(p_lists)
def test_adjustments_never_lower_p_and_holm_is_the_stricter(p: list[float]) -> None:
    h, b = holm(p), benjamini_hochberg(p)
    assert np.all(h >= np.asarray(p) - 1e-12) and np.all(b >= np.asarray(p) - 1e-12)
    assert np.all(h >= b - 1e-12) and np.all(h <= 1.0)


@given(p_lists)
def test_adjustments_keep_the_order_of_p(p: list[float]) -> None:
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(holm(p)[order]) >= -1e-12)
    assert np.all(np.diff(benjamini_hochberg(p)[order]) >= -1e-12)


def raw_tests(p_exact: list[float], floors: list[float], p_t: list[float]) -> pd.DataFrame:
    n = len(p_exact)
    return pd.DataFrame(
        {
            "model": [f"m{k}" for k in range(n)],
            "dataset": ["d"] * n,
            "measure": ["bleu"] * n,
            "epsilon": [0.05] * n,
            "n_items": [16] * n,
            "t": [3.0] * n,
            "p_t": p_t,
            "marker_uncorrected": [marker(p) for p in p_t],
            "p_exact": p_exact,
            "p_floor": floors,
        }
    )


def test_holm_marker_differs_from_the_raw_marker_on_a_constructed_case() -> None:
    # three cells: exact p 0.0008 († raw), 0.02 (* raw), 0.4; Holm: 0.0024 (**), 0.04 (*), 0.4 (none)
    tests = raw_tests([0.0008, 0.02, 0.4], [1.5e-5] * 3, [0.0001, 0.01, 0.3])
    out = adjust_across_cells(tests).set_index("model")
    assert out["p_holm"].round(6).tolist() == [0.0024, 0.04, 0.4]
    assert out["marker"].tolist() == ["**", "*", ""]
    assert out["verdict"].tolist() == ["significant", "significant", "not significant"]
    # with ten cells the 0.02 one no longer survives
    many = raw_tests([0.0008, 0.02] + [0.4] * 8, [1.5e-5] * 10, [0.0001, 0.01] + [0.3] * 8)
    adjusted = adjust_across_cells(many).set_index("model")
    assert adjusted.loc["m1", "verdict"] == "not significant" and adjusted.loc["m1", "marker"] == ""
    assert adjusted.loc["m0", "p_holm"] == pytest.approx(0.008) and adjusted.loc["m0", "marker"] == "**"


def test_cells_without_a_p_are_not_testable_and_do_not_count() -> None:
    per = pd.DataFrame(
        {
            "model": ["a", "b", "b", "b", "b", "b", "b"],
            "dataset": "d",
            "measure": "bleu",
            "item_id": ["i0", "i0", "i1", "i2", "i3", "i4", "i5"],
            "s": [0.3, 0.2, 0.3, 0.4, 0.25, 0.35, 0.45],
        }
    )
    out = adjust_across_cells(epsilon_tests(per, (0.05,))).set_index("model")
    assert out.loc["a", "verdict"] == "not testable" and out.loc["a", "n_items"] == 1
    assert out.loc["b", "p_holm"] == pytest.approx(out.loc["b", "p_exact"])  # a family of one testable cell
    assert out.loc["b", "family_size"] == 1
