"""Is the instability above a threshold ε? One-sided tests per cell and multiple-testing corrections.

**The verdict** (``verdict``, ``marker``, ``significant``) of a cell comes from one test that is valid at
every n: the exact one-sided sign-flip test that the items' s_X(i) − ε are centred above 0 (all 2^n sign
vectors for n ≤ ``EXACT_MAX_N``, seeded Monte Carlo above; ``benchmark.stats.exact``), Holm-corrected over
``CORRECTION_FAMILY``. A cell is "not testable" when no data could make it significant: fewer than 2
items, a constant sample (every item the same s: no spread to test, and the t-test's t is ±inf), or a
corrected floor — the Holm-adjusted p the cell would get if every test of its family hit its smallest
attainable p — that is not below α (4 items: floor 1/16 = 0.0625 before any correction).

**The paper's column** is the authors' one-sided one-sample t-test (``t``, ``p_t``), kept beside it and
labelled: ``marker_uncorrected`` from the raw p and ``marker_t`` from ``p_t_holm`` (Holm over the same
family). No verdict, badge or sentence rests on it: with 4 items it has 3 degrees of freedom, and it is
not scale-free (a constant sample gives t = ±inf).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.exact import sign_flip_floor, sign_flip_p
from benchmark.stats.sgs import ALL, CELL_KEYS

EPSILONS: tuple[float, ...] = (0.01, 0.05, 0.10)
PRIMARY_EPSILON = 0.05
MARKERS: tuple[tuple[str, float], ...] = (("†", 0.001), ("**", 0.01), ("*", 0.05))
"""(symbol, threshold): the first threshold that p is below wins."""
ALPHA = 0.05
SIGNIFICANT, NOT_SIGNIFICANT, NOT_TESTABLE = "significant", "not significant", "not testable"
"""The three verdicts of a test; markers are shown only for "significant"."""
CORRECTION_FAMILY = (
    "Holm over the testable (model × dataset × measure) cells of one aggregate (paper or extended) at one ε, "
    'every measure included; the datasets proper form one family, the pooled "all" cells a second (they '
    "re-use the same items); a cell is testable when the Holm-adjusted floor of the exact test (every test "
    "of the family at its smallest attainable p) is below alpha"
)


def marker(p: float) -> str:
    """Significance marker of a p-value.

    >>> [marker(p) for p in (0.0005, 0.005, 0.04, 0.2, float("nan"))]
    ['†', '**', '*', '', '']
    """
    for symbol, below in MARKERS:
        if p < below:  # NaN compares False everywhere: no marker
            return symbol
    return ""


def _ranked_tests(p_values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p as floats, an all-NaN output of the same shape, indices of the non-NaN p in ascending order)."""
    p = np.asarray(p_values, dtype=float)
    finite = np.flatnonzero(~np.isnan(p))
    return p, np.full(p.shape, np.nan), finite[np.argsort(p[finite], kind="stable")]


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values; NaNs stay NaN and do not count as tests.

    Each adjusted p is a non-decreasing function of every raw p, so ``holm(floors)`` is the smallest
    adjusted p each test can reach (what "testable" reads).

    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    """
    p, out, order = _ranked_tests(p_values)
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (FDR); NaNs stay NaN and do not count.

    >>> benjamini_hochberg([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    p, out, order = _ranked_tests(p_values)
    m = order.size
    scaled = p[order] * m / np.arange(1, m + 1)
    # step-up: each adjusted p is the smallest scaled value at its rank or above
    out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def is_constant(values: np.ndarray) -> bool:
    """Whether every finite value is the same (a sample with no spread: nothing to test).

    >>> is_constant(np.array([0.3, 0.3, 0.3, 0.3])), is_constant(np.array([0.3, 0.31]))
    (True, False)
    """
    finite = values[np.isfinite(values)]
    return bool(finite.size == 0 or np.ptp(finite) == 0.0)


def t_test_greater(values: np.ndarray, epsilon: float) -> tuple[float, float]:
    """(t, p) of the paper's one-sided one-sample t-test that mean(values) > epsilon.

    NaN when undefined: fewer than 2 items, or a constant sample (scipy would give t = ±inf).
    """
    if values.size < 2 or is_constant(values):
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_1samp(values, epsilon, alternative="greater")
    return float(result.statistic), float(result.pvalue)


def exact_greater(values: np.ndarray, epsilon: float, *, seed: int = 0) -> tuple[float, float]:
    """(p, floor) of the one-sided sign-flip test that values − epsilon is centred above 0.

    The floor is the smallest p the test can return at this n (1/2^n with n non-zero differences, exact;
    1/(1 + draws) in Monte Carlo). (NaN, 1) when there is nothing to test: fewer than 2 items or a constant
    sample. Multiplying every value and epsilon by one positive constant leaves both unchanged.

    >>> exact_greater(np.array([0.2, 0.3, 0.4, 0.5]), 0.05)  # 4 items, all above: 1 of 16 sign vectors
    (0.0625, 0.0625)
    """
    if values.size < 2 or is_constant(values):
        return float("nan"), 1.0
    shifted = values - epsilon
    n = int(np.count_nonzero(shifted))
    p = sign_flip_p(shifted, alternative="greater", seed=seed)
    return p, sign_flip_floor(n, alternative="greater", exact_max=shifted.size)


RAW_TEST_COLUMNS = ("epsilon", "n_items", "t", "p_t", "marker_uncorrected", "p_exact", "p_floor")
ADJUSTED_COLUMNS = (
    *("p_t_holm", "marker_t", "p_holm", "p_bh", "p_floor_holm"),
    *("family_size", "testable", "verdict", "marker", "significant"),
)


def epsilon_tests(per_item: pd.DataFrame, epsilons: Sequence[float] = EPSILONS) -> pd.DataFrame:
    """Raw tests per (model, dataset, measure, epsilon): the exact test and the paper's t-test.

    Columns: ``n_items``, the paper's ``t, p_t, marker_uncorrected``, the exact ``p_exact`` and its
    ``p_floor`` (the smallest p it can return with these items).
    """
    rows = []
    for key, group in per_item.groupby(list(CELL_KEYS), sort=True):
        values = group["s"].to_numpy(dtype=float)
        for epsilon in epsilons:
            t, p_t = t_test_greater(values, epsilon)
            p_exact, floor = exact_greater(values, epsilon)
            rows.append((*key, epsilon, int(values.size), t, p_t, marker(p_t), p_exact, floor))
    return pd.DataFrame(rows, columns=[*CELL_KEYS, *RAW_TEST_COLUMNS])


def verdict(p_adjusted: float, testable: bool, alpha: float = ALPHA) -> str:
    """ "significant", "not significant" or "not testable" for one adjusted p-value.

    >>> verdict(0.01, True), verdict(0.2, True), verdict(float("nan"), False)
    ('significant', 'not significant', 'not testable')
    """
    if not testable or np.isnan(p_adjusted):
        return NOT_TESTABLE
    return SIGNIFICANT if p_adjusted < alpha else NOT_SIGNIFICANT


def corrected(
    p: np.ndarray, floors: np.ndarray, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Holm p, Holm floor, testable) of one family of exact tests; NaN p = no test (not counted).

    A test is testable when its Holm-adjusted floor (every test of the family at its floor) is below
    ``alpha``; the untestable ones leave the family (a choice made from the item counts alone, never
    from the data), and Holm runs over the testable ones.

    >>> p, floor, ok = corrected(np.array([0.001, 0.0625, 0.2]), np.array([1e-5, 0.0625, 1e-5]))
    >>> ok.tolist(), p.round(4).tolist()
    ([True, False, True], [0.002, nan, 0.2])
    """
    has_p = ~np.isnan(p)
    floor_holm = holm(np.where(has_p, floors, np.nan))
    testable = has_p & (floor_holm < alpha)
    return holm(np.where(testable, p, np.nan)), floor_holm, testable


def holm_fields(p: Sequence[float | None], floors: Sequence[float]) -> list[dict[str, Any]]:
    """What the correction adds to each test of one family (:func:`corrected`): ``p_holm`` and
    ``p_floor_holm`` (null where there is none), ``testable``, ``family_size`` and ``verdict``.

    >>> [f["verdict"] for f in holm_fields([0.001, None], [1e-5, 0.5])]
    ['significant', 'not testable']
    """
    raw = np.array([np.nan if x is None else x for x in p], dtype=float)
    p_holm, floor_holm, testable = corrected(raw, np.array(floors, dtype=float))
    return [
        {
            "p_holm": None if np.isnan(ph) else float(ph),
            "p_floor_holm": None if np.isnan(fh) else float(fh),
            "testable": bool(ok),
            "family_size": int(testable.sum()),
            "verdict": verdict(float(ph), bool(ok)),
        }
        for ph, fh, ok in zip(p_holm, floor_holm, testable, strict=True)
    ]


def correct_families(table: pd.DataFrame, families: np.ndarray | list[Any]) -> None:
    """Fill ``p_holm``, ``p_floor_holm``, ``testable``, ``family_size`` and ``verdict`` of ``table`` from
    its ``p_exact`` and ``p_floor``: :func:`corrected` within each group of ``families`` (groupby keys)."""
    table["p_holm"], table["p_floor_holm"] = np.nan, np.nan
    table["testable"], table["family_size"] = False, 0
    for index in table.groupby(families).groups.values():
        p_holm, floor_holm, testable = corrected(
            table.loc[index, "p_exact"].to_numpy(dtype=float),
            table.loc[index, "p_floor"].to_numpy(dtype=float),
        )
        table.loc[index, "p_holm"] = p_holm
        table.loc[index, "p_floor_holm"] = floor_holm
        table.loc[index, "testable"] = testable
        table.loc[index, "family_size"] = int(testable.sum())
    table["testable"] = table["testable"].astype(bool)
    table["family_size"] = table["family_size"].astype(int)
    table["verdict"] = [verdict(p, ok) for p, ok in zip(table["p_holm"], table["testable"], strict=True)]


def adjust_across_cells(tests: pd.DataFrame) -> pd.DataFrame:
    """Add ``ADJUSTED_COLUMNS`` to ``epsilon_tests`` rows (the family: ``CORRECTION_FAMILY``).

    One family per ε over the datasets proper, a second per ε over the ``"all"`` cells (they re-use the
    items of the other cells). ``verdict``/``marker`` come from the exact test's Holm p; ``marker_t`` is
    the paper's t-test marker on its own Holm p, for the labelled paper column only.
    """
    out = tests.copy()
    families = [out["epsilon"], np.where(out["dataset"] == ALL, "pooled", "datasets")]
    correct_families(out, families)
    out["p_t_holm"], out["p_bh"] = np.nan, np.nan
    for index in out.groupby(families).groups.values():
        testable = out.loc[index, "testable"].to_numpy()
        out.loc[index, "p_bh"] = benjamini_hochberg(np.where(testable, out.loc[index, "p_exact"], np.nan))
        out.loc[index, "p_t_holm"] = holm(out.loc[index, "p_t"].to_numpy(dtype=float))
    out["significant"] = out["verdict"] == SIGNIFICANT
    out["marker"] = [marker(p) if ok else "" for p, ok in zip(out["p_holm"], out["significant"], strict=True)]
    out["marker_t"] = [marker(p) for p in out["p_t_holm"]]
    return out
