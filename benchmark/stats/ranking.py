"""Comparing models on the items they share: exact paired tests, and ranks and tie groups from them.

For each (dataset, measure) the per-item values of every model are aligned on the items all models
have (an items × models matrix). Every pair is compared by an exact sign-flip test on the paired
per-item differences, Holm-corrected over ``PAIRWISE_FAMILY``; rank intervals and tie groups are read
off those corrected verdicts, so a rank never says more than its test. A paired bootstrap over the rows
of the matrix gives the CI of each difference, as a description only (it under-covers with few items).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from benchmark.stats.exact import sign_flip_floor, sign_flip_p
from benchmark.stats.sgs import ALL, DEFAULT_RESAMPLES, cell_rng, percentile_ci
from benchmark.stats.significance import SIGNIFICANT, correct_families

NEEDS_THREE = "needs ≥3 models"
RANK_FIELDS = ("rank", "rank_low", "rank_high", "tie_group")
"""What a cell states of its place among the models (null where a comparison is not testable)."""


@dataclass(frozen=True)
class PairedDraws:
    """The aligned per-item values of one (dataset, measure) and their paired bootstrap."""

    dataset: str
    measure: str
    models: tuple[str, ...]
    """model slugs, sorted; the columns of ``values`` and ``draws``."""
    values: np.ndarray
    """s_X(i) on the shared items, ``[n_items, n_models]``."""
    draws: np.ndarray
    """SGS of each model in each resample, ``[resamples, n_models]``."""

    @property
    def sgs(self) -> np.ndarray:
        """SGS of each model on the shared items, ``[n_models]``."""
        means: np.ndarray = self.values.mean(axis=0)
        return means


def shared_matrix(cell_items: pd.DataFrame) -> pd.DataFrame:
    """Items × models table of ``s`` restricted to items every model has (rows sorted by item)."""
    wide = cell_items.pivot_table(index="item_id", columns="model", values="s", aggfunc="first")
    return wide.dropna(axis=0, how="any").sort_index().sort_index(axis=1)


def paired_draws(
    per_item: pd.DataFrame, *, seed: int, resamples: int = DEFAULT_RESAMPLES
) -> list[PairedDraws]:
    """One ``PairedDraws`` per (dataset, measure) that has at least one shared item."""
    out = []
    for (dataset, measure), cell_items in per_item.groupby(["dataset", "measure"], sort=True):
        wide = shared_matrix(cell_items)
        if wide.empty:
            continue
        values = wide.to_numpy(dtype=float)
        rng = cell_rng(seed, "paired", dataset, measure)
        index = rng.integers(0, len(values), size=(resamples, len(values)))
        draws = values[index].mean(axis=1)  # [resamples, n_models]
        out.append(PairedDraws(str(dataset), str(measure), tuple(wide.columns), values, draws))
    return out


PAIRWISE_FAMILY = (
    "Holm over every (dataset × measure × model pair) of the datasets proper, and separately over every "
    '(measure × model pair) of the pooled "all" items; exact two-sided sign-flip tests on the paired '
    "per-item differences; a pair is testable when its Holm-adjusted floor is below alpha"
)
PAIRWISE_COLUMNS = [
    *("dataset", "measure", "model_a", "model_b", "n_items", "diff", "ci_low", "ci_high"),
    *("p_exact", "p_floor", "p_holm", "p_floor_holm", "family_size", "testable", "verdict", "n_tied"),
]


def pairwise_rows(cell: PairedDraws) -> list[dict[str, object]]:
    """Every model pair of one cell: paired SGS difference, its bootstrap CI and the exact sign-flip test.

    The test is two-sided on d_i = s_a(i) − s_b(i) (exact for n ≤ 20, seeded Monte Carlo above); ``p_floor``
    is the smallest p it can return with these items (2 / 2^n: 0.125 with 4 items).
    """
    rows: list[dict[str, object]] = []
    for a, b in itertools.combinations(range(len(cell.models)), 2):
        d = cell.values[:, a] - cell.values[:, b]
        low, high = percentile_ci(cell.draws[:, a] - cell.draws[:, b])  # over the paired resamples
        nonzero = int(np.count_nonzero(d))
        rows.append(
            {
                "dataset": cell.dataset,
                "measure": cell.measure,
                "model_a": cell.models[a],
                "model_b": cell.models[b],
                "n_items": len(d),
                "diff": float(cell.sgs[a] - cell.sgs[b]),
                "ci_low": low,
                "ci_high": high,
                "p_exact": sign_flip_p(d) if nonzero else float("nan"),
                "p_floor": sign_flip_floor(nonzero, exact_max=len(d)),
                # a tied item carries no sign: the exact test rests on the others alone
                "n_tied": len(d) - nonzero,
            }
        )
    return rows


def pairwise_table(cells: list[PairedDraws]) -> pd.DataFrame:
    """All pairwise comparisons with their corrected verdicts (``PAIRWISE_FAMILY``), sorted by key."""
    table = pd.DataFrame([row for cell in cells for row in pairwise_rows(cell)], columns=PAIRWISE_COLUMNS)
    if table.empty:
        return table
    correct_families(table, np.where(table["dataset"] == ALL, "pooled", "datasets"))
    return table.sort_values(["dataset", "measure", "model_a", "model_b"], kind="stable").reset_index(
        drop=True
    )


def _better(pair: Mapping[str, Any]) -> str | None:
    """The model a significant pair finds steadier (lower SGS), else None."""
    if pair["verdict"] != SIGNIFICANT or not pair["diff"]:
        return None
    return str(pair["model_a"] if pair["diff"] < 0 else pair["model_b"])


def rank_rows(cell: PairedDraws, pairs: Sequence[Mapping[str, Any]]) -> list[dict[str, object]]:
    """Rank (1 = lowest SGS), rank interval and tie group of every model of one cell, from the tests.

    ``rank_low`` = 1 + the models significantly steadier than it, ``rank_high`` = n − the models
    significantly less steady (corrected exact paired tests, ``pairwise_table``); tie groups walk the
    models from the steadiest, a model opening a new group when the test against the current group's
    first model is significant. A model with any comparison that is not testable gets no rank, interval
    or group (null): the data cannot order it.
    """
    by_pair = {frozenset((str(p["model_a"]), str(p["model_b"]))): p for p in pairs}
    models = list(cell.models)
    ranks = stats.rankdata(cell.sgs, method="min")
    testable = {
        m: all(bool(by_pair[frozenset((m, o))]["testable"]) for o in models if o != m) for m in models
    }
    groups: dict[str, int] = {}
    group, leader = 1, None
    for j in np.argsort(cell.sgs, kind="stable"):
        model = models[int(j)]
        if leader is None:
            leader = model
        elif _better(by_pair[frozenset((leader, model))]) == leader:
            group, leader = group + 1, model
        groups[model] = group
    rows: list[dict[str, object]] = []
    for j, m in enumerate(models):
        better = sum(_better(by_pair[frozenset((m, o))]) == o for o in models if o != m)
        worse = sum(_better(by_pair[frozenset((m, o))]) == m for o in models if o != m)
        key: dict[str, object] = {"model": m, "dataset": cell.dataset, "measure": cell.measure}
        found = (int(ranks[j]), 1 + better, len(models) - worse, groups[m]) if testable[m] else (None,) * 4
        rows.append(key | dict(zip(RANK_FIELDS, found, strict=True)))
    return rows


def rank_table(cells: list[PairedDraws], pairwise: pd.DataFrame) -> pd.DataFrame:
    """``model, dataset, measure, rank, rank_low, rank_high, tie_group`` of every cell (``rank_rows``)."""
    columns = ["model", "dataset", "measure", *RANK_FIELDS]
    by_cell = {key: group.to_dict("records") for key, group in pairwise.groupby(["dataset", "measure"])}
    rows = [row for cell in cells for row in rank_rows(cell, by_cell.get((cell.dataset, cell.measure), []))]
    table = pd.DataFrame(rows, columns=columns)
    for column in columns[3:]:
        table[column] = table[column].astype("Int64")
    return table


def friedman_row(cell: PairedDraws) -> dict[str, object]:
    """Friedman test across models on the shared items of one cell (scipy; needs three models)."""
    n_items, n_models = cell.values.shape
    row: dict[str, object] = {
        "dataset": cell.dataset,
        "measure": cell.measure,
        "n_models": n_models,
        "n_items": n_items,
        "statistic": float("nan"),
        "p": float("nan"),
        "note": "",
    }
    if n_models < 3:
        row["note"] = NEEDS_THREE
        return row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # identical columns give 0/0
        result = stats.friedmanchisquare(*cell.values.T)
    row["statistic"], row["p"] = float(result.statistic), float(result.pvalue)
    return row


def friedman_table(cells: list[PairedDraws]) -> pd.DataFrame:
    """``dataset, measure, n_models, n_items, statistic, p, note`` for every cell."""
    return pd.DataFrame(
        [friedman_row(cell) for cell in cells],
        columns=["dataset", "measure", "n_models", "n_items", "statistic", "p", "note"],
    )
