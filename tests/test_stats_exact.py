"""Known answers for the exact tests: sign-flip p against scipy and by enumeration, floors, Kendall W."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from benchmark.stats.exact import (
    EXACT_MAX_N,
    kendall_w_permutation_p,
    sign_flip_floor,
    sign_flip_p,
)


def total(d: np.ndarray) -> float:
    return float(np.sum(d))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(
    "d", [[0.3, -0.1, 0.5, 0.2, 0.7, -0.05], [1.0, 2.0, 3.0, 4.0], [-0.2, 0.1, -0.4, 0.0, 0.3]]
)
def test_sign_flip_matches_scipy_permutation_test(d: list[float], alternative: str) -> None:
    values = np.array(d)
    reference = stats.permutation_test(
        (values,),
        lambda x, axis: np.sum(x, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative=alternative,
    )
    assert sign_flip_p(values, alternative=alternative) == pytest.approx(reference.pvalue)


def test_sign_flip_matches_a_plain_enumeration() -> None:
    d = np.array([0.12, -0.03, 0.08, 0.05, -0.01, 0.09, 0.02])
    observed = abs(d.sum())
    sums = [
        abs(sum(s * v for s, v in zip(signs, d, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(d))
    ]
    assert sign_flip_p(d) == pytest.approx(np.mean([x >= observed - 1e-12 for x in sums]))


def test_floors_of_the_exact_tests() -> None:
    assert sign_flip_floor(4) == 0.125 and sign_flip_floor(4, alternative="greater") == 0.0625
    assert sign_flip_p(np.array([0.1, 0.2, 0.3, 0.4])) == sign_flip_floor(
        4
    )  # four same-sign items: the floor
    # above the exact limit the Monte-Carlo p cannot go below 1 / (1 + draws)
    assert sign_flip_floor(24, alternative="greater", exact_max=24) == pytest.approx(1 / 100_001)
    assert sign_flip_floor(24, alternative="greater", exact_max=20) == 0.5**24
    assert sign_flip_floor(0) == 1.0


def test_monte_carlo_above_the_exact_limit_is_close_and_seeded() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.3, 1.0, size=EXACT_MAX_N + 5)
    p = sign_flip_p(d, seed=1)
    assert p == sign_flip_p(d, seed=1)
    normal = stats.ttest_1samp(d, 0.0).pvalue  # the t-test is close to the permutation test here
    assert p == pytest.approx(normal, abs=0.05)


def test_kendall_w_two_objects_is_exact() -> None:
    p, method = kendall_w_permutation_p(np.array([[1.0, 2.0]] * 6))
    assert (p, method) == (pytest.approx(1 / 32), "exact")
    p, _ = kendall_w_permutation_p(np.array([[1.0, 2.0]] * 3 + [[2.0, 1.0]] * 3))
    assert p == pytest.approx(1.0)  # S = 0: every arrangement is at least as extreme
