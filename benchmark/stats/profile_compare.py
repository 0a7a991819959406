"""What the token cap changes: one profile's board beside the board profile's, model by model.

The board of a version ranks runs of its board profile (v2: ``evidence``, 48 new tokens); a run of another
profile (the paper's ``paper``: every level, 100 tokens) makes a board of its own, and this module puts the
two side by side without pooling them. Per model present in both, per dataset and headline measure:

* each profile's share of responses cut at its cap (``models[].run.truncated[]``), SGS with its interval,
  rank range and validity labels, read from that profile's own board;
* whether the instability changed *as run*: an exact two-sided sign-flip test of s_b(i) − s_a(i) over
  the items both profiles ran (:mod:`benchmark.stats.exact`), Holm-corrected over every row of the
  comparison (:func:`benchmark.stats.significance.corrected`: untestable rows leave the family, as
  everywhere). The profiles run different variant mixes (paper: every level; evidence: the extremes), so
  this change mixes the cap with the variant mix;
* what the cap alone changes (``cap_only``): both profiles' deltas cut to the (dataset, item, variant)
  rows both ran, s(i) re-reduced from them by the summary's own reduction
  (:func:`benchmark.stats.sgs.instability_per_item`), the same test, Holm over its own rows; and a control
  that shows the cut worked: the prompt-only measures (hidden states of the prompt, read before any token
  is generated) must not change there;
* per dataset and measure, the reversals (significant flips) each board found, and whether rankings can
  be compared at all (each profile needs two or more ranked models).

Pure functions over leaderboard rows, summaries' ``per_item`` rows and deltas tables; the site renders
the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from benchmark.documents import LeaderboardDocument
from benchmark.results import ResultsFolder
from benchmark.rows import (
    CapOnlyComparison,
    CellRow,
    PerItemRow,
    ProfileChangeRow,
    ProfileComparison,
    ProfileControlRow,
    ProfileCutRow,
    ProfileRankingRow,
    ProfileVariantRow,
)
from benchmark.stats import validity
from benchmark.stats.exact import sign_flip_floor, sign_flip_p
from benchmark.stats.facts import record_tables
from benchmark.stats.sgs import ALL, PAPER, instability_per_item, rewrite_rows
from benchmark.stats.significance import holm_fields

FAMILY = (
    "As run, the cap and the variant mix together: Holm over every (model × dataset × headline measure) "
    "row of the comparison; exact two-sided sign-flip test of s(i) in this profile minus s(i) in the board "
    "profile, over the items both ran"
)
"""The correction family of ``profile_comparison.rows[]``."""
CAP_FAMILY = (
    "The cap alone: Holm over every (model × dataset × headline measure) row of the cap-only comparison; "
    "exact two-sided sign-flip test of s(i) in this profile minus s(i) in the board profile, each "
    "re-reduced from only the variants both profiles ran"
)
"""The correction family of ``profile_comparison.cap_only.rows[]``."""
CONTROL_FAMILY = (
    "Holm over every (model × dataset × prompt-only measure) control row; the same test on the same "
    "shared variants"
)
"""The correction family of ``profile_comparison.cap_only.control[]``."""
PROMPT_ONLY = ("act_cos_last", "act_cos_mean")
"""Measures of the prompt's hidden states, read before any token is generated: the cap cannot move them,
so on the shared variants they differ by float noise only (batch composition) unless the cut failed."""
VARIANT_KEYS = ["dataset", "item_id", "variant_id"]
"""What makes two deltas rows the same variant in both profiles."""
ItemValues = dict[tuple[str, str], dict[str, float]]
"""(dataset, measure) -> item_id -> s(i)."""
SIDE_FIELDS = ("sgs", "ci_low", "ci_high", "n_items", "rank_low", "rank_high")
"""What a change row states of each profile's cell (suffixed ``_a``: the board profile, ``_b``: this one)."""


def _per_item(rows: Iterable[PerItemRow]) -> ItemValues:
    """(dataset, measure) -> item_id -> s(i) (paper families), items without a value left out."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in rows:
        value = row["s"]
        if value is not None and np.isfinite(value):
            out.setdefault((row["dataset"], row["measure"]), {})[str(row["item_id"])] = float(value)
    return out


def _cut_row(model: str, dataset: str, a: tuple[int, int] | None, b: tuple[int, int] | None) -> ProfileCutRow:
    """One model's responses cut at each profile's cap on one dataset (``a``, ``b``: (cut, total))."""
    row: dict[str, object] = {"model": model, "dataset": dataset}
    for side, (cut, total) in zip("ab", (a or (None, None), b or (None, None)), strict=True):
        share = cut / total if cut is not None and total else None
        row |= {f"cut_{side}": cut, f"total_{side}": total, f"share_{side}": share}
    return cast(ProfileCutRow, row)


def cut_rows(
    board_a: LeaderboardDocument, board_b: LeaderboardDocument, models: Sequence[str]
) -> list[ProfileCutRow]:
    """Per model in both and dataset (``"all"`` included): responses cut at each profile's cap."""
    cut_a, cut_b = validity.truncations(board_a.complete), validity.truncations(board_b.complete)
    datasets = [*sorted(set(board_a.datasets) & set(board_b.datasets)), validity.ALL_DATASETS]
    return [
        _cut_row(model, dataset, *((int(str(r["cut"])), int(str(r["total"]))) if r else None for r in sides))
        for model in models
        for dataset in datasets
        if (sides := (cut_a.get((model, dataset)), cut_b.get((model, dataset)))) != (None, None)
    ]


CUT_COLUMNS = ["finished", "item_id", "variant_id"]
"""What :func:`cut_flags` reads of a records file (``finished`` False: the response reached the cap, as
``models[].run.truncated[]`` counts it, :func:`benchmark.stats.facts.truncation`)."""


def cut_flags(folder: ResultsFolder) -> pd.DataFrame:
    """One row per response of a run: ``dataset``, ``item_id``, ``variant_id`` and ``cut`` (it stopped at
    the token cap), from ``records/*.parquet``; an unreadable or linked file is left out (the validator
    reports it), as :func:`benchmark.stats.facts.truncation` leaves it out of the run's counts."""
    frames = []
    for path, arrow in record_tables(folder, CUT_COLUMNS):
        table = arrow.to_pandas()
        frames.append(
            pd.DataFrame(
                {
                    "dataset": path.stem,
                    "item_id": table["item_id"].astype(str),
                    "variant_id": table["variant_id"].astype(str),
                    "cut": table["finished"].map(lambda f: f is False),
                }
            )
        )
    columns = [*VARIANT_KEYS, "cut"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def shared_cut_rows(model: str, a: pd.DataFrame, b: pd.DataFrame) -> list[ProfileCutRow]:
    """Per dataset (then ``"all"``): responses cut at each cap on the prompts both profiles ran, so the two
    shares count the same prompts and differ by the cap alone (``a``, ``b``: :func:`cut_flags` frames).

    >>> a = pd.DataFrame({"dataset": "d", "item_id": ["1", "1", "2"], "variant_id": ["v", "w", "v"],
    ...                   "cut": [True, True, False]})
    >>> b = pd.DataFrame({"dataset": "d", "item_id": ["1", "2", "3"], "variant_id": ["v", "v", "v"],
    ...                   "cut": [False, False, True]})
    >>> [(r["dataset"], r["cut_a"], r["cut_b"], r["total_b"]) for r in shared_cut_rows("m", a, b)]
    [('d', 1, 0, 2), ('all', 1, 0, 2)]
    """
    shared_a, shared_b = shared_variants(a, b)
    if shared_a.empty:
        return []
    rows: list[ProfileCutRow] = []
    for dataset in [*sorted(set(shared_a["dataset"].astype(str))), validity.ALL_DATASETS]:
        sides = [
            frame if dataset == validity.ALL_DATASETS else frame[frame["dataset"].astype(str) == dataset]
            for frame in (shared_a, shared_b)
        ]
        a, b = ((int(side["cut"].sum()), len(side)) for side in sides)
        rows.append(_cut_row(model, dataset, a, b))
    return rows


def change_row(
    model: str,
    dataset: str,
    measure: str,
    items: tuple[Mapping[str, float], Mapping[str, float]],
    cells: tuple[CellRow | None, CellRow | None],
) -> ProfileChangeRow:
    """One (model, dataset, measure) before the correction: both profiles' cells and the exact test of
    the per-item change over the shared items (``p_exact`` null when no item differs; the correction's
    fields are filled by :func:`corrected_changes`).

    >>> a, b = {"1": 0.5, "2": 0.25}, {"1": 1.5, "2": 0.25, "3": 9.0}
    >>> row = change_row("m", "d", "x", (a, b), (None, None))
    >>> row["n_shared"], row["n_tied"], row["mean_diff"], row["p_exact"], row["p_floor"]
    (2, 1, 0.5, 1.0, 1.0)
    """
    shared = sorted(set(items[0]) & set(items[1]))
    d = np.array([items[1][i] - items[0][i] for i in shared], dtype=float)
    nonzero = int(np.count_nonzero(d))
    sides: dict[str, object] = {}
    for side, cell in zip("ab", cells, strict=True):
        stated: Mapping[str, object] = cell or {}
        sides |= {f"{f}_{side}": stated.get(f) for f in SIDE_FIELDS}
        sides[f"validity_{side}"] = list(cell.get("validity", [])) if cell else []
    row = {"model": model, "dataset": dataset, "measure": measure, **sides} | {
        "n_shared": len(shared),
        "n_tied": len(shared) - nonzero,
        "mean_diff": float(d.mean()) if len(d) else None,
        "p_exact": sign_flip_p(d) if nonzero else None,
        "p_floor": sign_flip_floor(nonzero, exact_max=len(d)),
        "p_holm": None,
        "p_floor_holm": None,
        "testable": False,
        "family_size": 0,
        "verdict": "",
        "validity": [],
    }
    return cast(ProfileChangeRow, row)


def corrected_changes(rows: Sequence[ProfileChangeRow]) -> list[ProfileChangeRow]:
    """``rows`` with ``p_holm``, ``p_floor_holm``, ``testable``, ``family_size``, ``verdict`` and the
    pair's ``validity`` (either profile's cell labels, plus "tied" when ties dominate the shared items)."""
    fields = holm_fields([r["p_exact"] for r in rows], [r["p_floor"] for r in rows])
    labels = [
        validity.pair_labels(r["n_tied"], r["n_shared"], [r["validity_a"], r["validity_b"]]) for r in rows
    ]
    return [
        cast(ProfileChangeRow, row | more | {"validity": found})
        for row, more, found in zip(rows, fields, labels, strict=True)
    ]


def shared_variants(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of two deltas tables whose (dataset, item_id, variant_id) the other table also holds.

    >>> a = pd.DataFrame({"dataset": ["d", "d"], "item_id": ["1", "2"], "variant_id": ["v", "v"]})
    >>> b = pd.DataFrame({"dataset": ["d", "d"], "item_id": [1, 1], "variant_id": ["v", "w"]})
    >>> [x.index.tolist() for x in shared_variants(a, b)]
    [[0], [0]]
    """
    keys_a, keys_b = _variant_keys(a), _variant_keys(b)
    return a[keys_a.isin(keys_b)], b[keys_b.isin(keys_a)]


def _variant_keys(deltas: pd.DataFrame) -> pd.MultiIndex:
    # item ids are text in one file and numbers in another: compared as text, as the summaries write them
    return pd.MultiIndex.from_frame(deltas[VARIANT_KEYS].astype(str))


def reduced_items(deltas: pd.DataFrame) -> ItemValues:
    """s(i) of the datasets proper by the summary's own reduction (paper families; no item-less rows)."""
    if rewrite_rows(deltas, PAPER).empty:
        return {}
    per_item = instability_per_item(deltas, aggregate=PAPER)
    out: ItemValues = {}
    for (dataset, measure), group in per_item[per_item["dataset"] != ALL].groupby(["dataset", "measure"]):
        values = zip(group["item_id"].astype(str), group["s"].astype(float), strict=True)
        out[(str(dataset), str(measure))] = dict(values)
    return out


def variant_rows(model: str, a: pd.DataFrame, b: pd.DataFrame) -> list[ProfileVariantRow]:
    """Per dataset of either table: its rows in each profile, and those both ran."""
    shared, _ = shared_variants(a, b)
    counts = [frame["dataset"].astype(str).value_counts() for frame in (a, b, shared)]
    paper = rewrite_rows(shared, PAPER)["dataset"].astype(str).value_counts()
    return [
        {
            "model": model,
            "dataset": dataset,
            "rows_a": int(counts[0].get(dataset, 0)),
            "rows_b": int(counts[1].get(dataset, 0)),
            "shared": int(counts[2].get(dataset, 0)),
            "shared_paper": int(paper.get(dataset, 0)),
        }
        for dataset in sorted(set(counts[0].index) | set(counts[1].index))
    ]


def _on_shared(
    row: ProfileChangeRow, items: tuple[Mapping[str, float], Mapping[str, float]]
) -> ProfileChangeRow:
    """``row`` with each side's SGS the mean of its re-reduced s(i); the boards' intervals and ranks are of
    every variant they ran, so none is stated here."""
    shared: dict[str, object] = {}
    for side, values in zip("ab", items, strict=True):
        s = np.array(list(values.values()), dtype=float)
        shared |= {f"{f}_{side}": None for f in SIDE_FIELDS}
        shared |= {f"sgs_{side}": float(s.mean()) if s.size else None, f"n_items_{side}": int(s.size)}
    return cast(ProfileChangeRow, row | shared)


def control_rows(
    raw: Sequence[tuple[ProfileChangeRow, tuple[Mapping[str, float], Mapping[str, float]]]],
) -> list[ProfileControlRow]:
    """The prompt-only rows, Holm over themselves, each with its largest per-item difference."""
    rows = corrected_changes([row for row, _ in raw])
    return [
        cast(
            ProfileControlRow,
            {k: row.get(k) for k in ProfileControlRow.__annotations__}
            | {"max_abs_diff": max((abs(b[i] - a[i]) for i in set(a) & set(b)), default=None)},
        )
        for row, (_, (a, b)) in zip(rows, raw, strict=True)
    ]


def cap_only(
    boards: tuple[LeaderboardDocument, LeaderboardDocument],
    deltas: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]],
    models: Sequence[str],
    datasets: Sequence[str],
    measures: Sequence[str],
    records: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]] = ({}, {}),
) -> CapOnlyComparison:
    """The ``cap_only`` block: every row of :func:`profile_comparison` again, on the shared variants only,
    the prompt-only control, and the responses cut on the prompts both ran (``records``: model slug ->
    its :func:`cut_flags` in each profile). A model without deltas in either profile shares no variant."""
    variants: list[ProfileVariantRow] = []
    cut: list[ProfileCutRow] = []
    raw, control = [], []
    for model in models:
        if model in records[0] and model in records[1]:
            cut += shared_cut_rows(model, records[0][model], records[1][model])
        a, b = deltas[0].get(model), deltas[1].get(model)
        if a is not None and b is not None:
            variants += variant_rows(model, a, b)
            shared_a, shared_b = shared_variants(a, b)
            reduced = (reduced_items(shared_a), reduced_items(shared_b))
        else:
            reduced = ({}, {})
        for dataset in datasets:
            for measure in dict.fromkeys([*measures, *PROMPT_ONLY]):  # a headline measure may be one
                key = {"model": model, "dataset": dataset, "measure": measure}
                items = (reduced[0].get((dataset, measure), {}), reduced[1].get((dataset, measure), {}))
                if measure in PROMPT_ONLY:
                    control.append((change_row(model, dataset, measure, items, (None, None)), items))
                if measure in measures:
                    cells = (boards[0].cells.first(**key), boards[1].cells.first(**key))
                    raw.append(_on_shared(change_row(model, dataset, measure, items, cells), items))
    checks = control_rows(control)
    return {
        "correction": CAP_FAMILY,
        "control_correction": CONTROL_FAMILY,
        "control_measures": list(PROMPT_ONLY),
        "control_max_abs_diff": max(
            (r["max_abs_diff"] for r in checks if r["max_abs_diff"] is not None), default=None
        ),
        "variants": variants,
        "cut": cut,
        "rows": corrected_changes(raw),
        "control": checks,
    }


def _flips(board: LeaderboardDocument, dataset: str, measure: str) -> int:
    """Significant reversals of ``board`` on ``measure`` involving ``dataset`` (every one for ``"all"``)."""
    return sum(
        1
        for r in board.reversals.where(measure=measure)
        if r.get("verdict") == "significant"
        and (dataset == validity.ALL_DATASETS or dataset in (r["dataset_a"], r["dataset_b"]))
    )


def _ranked(board: LeaderboardDocument, dataset: str, measure: str) -> int:
    """Models with a rank on ``board`` in one (dataset, measure) (a null rank: not testable)."""
    return sum(1 for c in board.cells.where(dataset=dataset, measure=measure) if c.get("rank") is not None)


def ranking_rows(
    board_a: LeaderboardDocument,
    board_b: LeaderboardDocument,
    datasets: Sequence[str],
    measures: Sequence[str],
) -> list[ProfileRankingRow]:
    """Per dataset and headline measure: models each board ranks, whether rankings can be compared (two
    or more on each side), and the significant reversals each board found that involve the dataset."""
    rows: list[ProfileRankingRow] = []
    for dataset in datasets:
        for measure in measures:
            models_a, models_b = _ranked(board_a, dataset, measure), _ranked(board_b, dataset, measure)
            rows.append(
                {
                    "dataset": dataset,
                    "measure": measure,
                    "models_a": models_a,
                    "models_b": models_b,
                    "comparable": models_a >= 2 and models_b >= 2,
                    "flips_a": _flips(board_a, dataset, measure),
                    "flips_b": _flips(board_b, dataset, measure),
                    "candidates_a": len(board_a.reversals.where(measure=measure)),
                    "candidates_b": len(board_b.reversals.where(measure=measure)),
                }
            )
    return rows


def profile_comparison(
    board_a: LeaderboardDocument,
    board_b: LeaderboardDocument,
    per_item_a: Mapping[str, Sequence[PerItemRow]],
    per_item_b: Mapping[str, Sequence[PerItemRow]],
    *,
    profiles: tuple[str, str],
    max_new_tokens: tuple[int, int],
    deltas: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]] | None = None,
    records: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame]] | None = None,
) -> ProfileComparison:
    """The ``profile_comparison`` block of profile b's leaderboard (docs/LEADERBOARD_JSON.md).

    Args:
        board_a: the board profile's leaderboard; board_b: this profile's.
        per_item_a, per_item_b: model slug -> its summary's ``per_item`` rows in each profile.
        profiles: (board profile, this profile); max_new_tokens: their caps.
        deltas: model slug -> its deltas table in each profile (the cap-only rows; none: no variant shared).
        records: model slug -> its :func:`cut_flags` in each profile (the cut shares on the shared
            prompts; none: not stated).
    """
    in_a = {m["slug"] for m in board_a.complete}
    models = sorted(m["slug"] for m in board_b.complete if m["slug"] in in_a)
    datasets = sorted(set(board_a.datasets) & set(board_b.datasets))
    measures = [m for m in board_b.headline_measures if m in set(board_a.headline_measures)]
    raw = []
    for model in models:
        items_a, items_b = _per_item(per_item_a.get(model, [])), _per_item(per_item_b.get(model, []))
        for dataset in datasets:
            for measure in measures:
                key = {"model": model, "dataset": dataset, "measure": measure}
                items = (items_a.get((dataset, measure), {}), items_b.get((dataset, measure), {}))
                cells = (board_a.cells.first(**key), board_b.cells.first(**key))
                raw.append(change_row(model, dataset, measure, items, cells))
    return {
        "profiles": list(profiles),
        "max_new_tokens": list(max_new_tokens),
        "models": models,
        "measures": measures,
        "correction": FAMILY,
        "cut": cut_rows(board_a, board_b, models),
        "rows": corrected_changes(raw),
        "rankings": ranking_rows(board_a, board_b, [*datasets, validity.ALL_DATASETS], measures),
        "cap_only": cap_only(
            (board_a, board_b), deltas or ({}, {}), models, datasets, measures, records or ({}, {})
        ),
    }
