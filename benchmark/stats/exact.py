"""Exact (or seeded Monte-Carlo) permutation tests for the small samples this benchmark has.

With 4 to 16 items per cell, asymptotic p-values (bootstrap intervals, χ² approximations) are not
trustworthy, and every exact test has a floor: the smallest p it can ever return for n items. A test
whose floor — after multiplicity correction — is not below α cannot support a claim, whatever the
data; callers report that as "not testable" instead of "not significant".

* ``sign_flip_p``: paired / one-sample test by flipping the sign of each difference (exact for
  n ≤ ``EXACT_MAX_N``: all 2^n sign vectors are enumerated).
* ``kendall_w_permutation_p``: Kendall's W by permuting each rater's ranking independently (exact
  while the number of arrangements stays below ``EXACT_MAX_ARRANGEMENTS``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

EXACT_MAX_N = 20
"""Sign-flip tests enumerate all 2^n sign vectors up to this n (2^20 sums, 8 MB)."""
MONTE_CARLO_RESAMPLES = 100_000
EXACT_MAX_ARRANGEMENTS = 200_000
"""Kendall's W is enumerated exactly while (arrangements per rater)^(raters − 1) stays below this."""
W_RESAMPLES = 20_000
_RELATIVE_TIE = 1e-9
"""Permuted statistics within this relative distance of the observed one count as ties (float noise)."""


def _at_least(samples: np.ndarray, observed: float) -> np.ndarray:
    """samples ≥ observed, tolerant to rounding in sums of the same numbers in another order."""
    return samples >= observed - _RELATIVE_TIE * max(1.0, abs(observed))


def sign_flip_sums(d: np.ndarray) -> np.ndarray:
    """Σ ± d_i over all 2^n sign vectors (the exact null distribution of the sum), shape ``[2^n]``.

    >>> sorted(sign_flip_sums(np.array([1.0, 2.0])).tolist())
    [-3.0, -1.0, 1.0, 3.0]
    """
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate([sums + value, sums - value])
    return sums


def sign_flip_p(
    d: np.ndarray, *, alternative: str = "two-sided", seed: int = 0, resamples: int = MONTE_CARLO_RESAMPLES
) -> float:
    """p-value of the sign-flip permutation test that the differences ``d`` are centred on 0.

    Statistic: the sum of ``d`` (equivalently the mean). ``alternative`` is ``"two-sided"`` (|sum|),
    ``"greater"`` or ``"less"``. Exact for n ≤ ``EXACT_MAX_N``; above it a seeded Monte-Carlo estimate
    (1 + hits) / (1 + resamples). NaN for an empty sample.

    >>> sign_flip_p(np.array([1.0, 2.0, 3.0, 4.0]))  # all positive: 2 of 16 sign vectors as extreme
    0.125
    """
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan")
    # the statistic each alternative compares: as extreme means at least as large after it
    statistic = {"two-sided": np.abs, "greater": np.positive, "less": np.negative}.get(alternative)
    if statistic is None:
        raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")
    exact = d.size <= EXACT_MAX_N
    if exact:
        sums = sign_flip_sums(d)
    else:
        signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(resamples, d.size))
        sums = signs @ d
    count = int(_at_least(statistic(sums), float(statistic(d.sum()))).sum())
    return count / sums.size if exact else (1 + count) / (1 + resamples)


def sign_flip_floor(
    n_nonzero: int,
    *,
    alternative: str = "two-sided",
    exact_max: int = 0,
    resamples: int = MONTE_CARLO_RESAMPLES,
) -> float:
    """The smallest p the sign-flip test can return with ``n_nonzero`` non-zero differences.

    ``exact_max``: the sample's size (zeros included) when it decides exact vs Monte Carlo; above
    ``EXACT_MAX_N`` the Monte-Carlo p cannot go below 1 / (1 + resamples).

    >>> sign_flip_floor(4), sign_flip_floor(4, alternative="greater")
    (0.125, 0.0625)
    >>> sign_flip_floor(24, alternative="greater", exact_max=24) == 1 / (1 + MONTE_CARLO_RESAMPLES)
    True
    """
    if n_nonzero <= 0:
        return 1.0
    one_sided = 0.5**n_nonzero
    floor = min(1.0, 2 * one_sided) if alternative == "two-sided" else one_sided
    return max(floor, 1.0 / (1 + resamples)) if exact_max > EXACT_MAX_N else floor


def _kendall_s(rank_sums: np.ndarray) -> np.ndarray:
    """S = Σ_i (R_i − mean R)² of each row of rank sums ``[k, n]``."""
    centred = rank_sums - rank_sums.mean(axis=-1, keepdims=True)
    s: np.ndarray = np.sum(centred**2, axis=-1)
    return s


def _arrangements(ranks: np.ndarray) -> np.ndarray:
    """Distinct orderings of one rater's ranks (ties stay tied), ``[k, n]``."""
    return np.array(sorted(set(itertools.permutations(ranks.tolist()))))


def kendall_w_permutation_p(
    ranks: np.ndarray, *, seed: int = 0, resamples: int = W_RESAMPLES
) -> tuple[float, str]:
    """(p, method) of Kendall's W under independent random rankings by each rater.

    ``ranks`` is ``[m raters, n objects]`` (ties as average ranks). The null permutes each rater's
    ranks independently; W is a monotone function of S = Σ (R_i − mean R)² for fixed ranks, so S is
    the statistic. ``method`` is ``"exact"`` (the first rater fixed, every arrangement of the others
    enumerated) or ``"monte-carlo"`` (``resamples`` seeded draws, (1 + hits) / (1 + resamples)).

    >>> kendall_w_permutation_p(np.array([[1.0, 2.0]] * 6))  # 2 objects, 6 raters agree: 2/2^6
    (0.03125, 'exact')
    """
    m, n = ranks.shape
    if m < 2 or n < 2:
        return float("nan"), ""
    observed = float(_kendall_s(ranks.sum(axis=0)))
    per_rater = [_arrangements(row) for row in ranks[1:]]
    if math.prod(len(a) for a in per_rater) <= EXACT_MAX_ARRANGEMENTS:
        sums = ranks[:1].astype(float)  # [k, n] rank sums so far; the first rater's order is fixed
        for arrangements in per_rater:
            sums = (sums[:, None, :] + arrangements[None, :, :]).reshape(-1, n)
        return float(np.mean(_at_least(_kendall_s(sums), observed))), "exact"
    rng = np.random.default_rng(seed)
    draws = np.stack([rng.permuted(np.tile(row, (resamples, 1)), axis=1) for row in ranks], axis=0)
    hits = int(_at_least(_kendall_s(draws.sum(axis=0)), observed).sum())
    return (1 + hits) / (1 + resamples), "monte-carlo"
