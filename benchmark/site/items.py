"""The item browser's data: every variant prompt of an item beside each model's response and deltas.

Prompts come from the frozen variant set, responses from each submission's ``records/<dataset>.parquet``
and deltas from its ``deltas.parquet`` (docs/CONTRACTS.md). Any of them may be absent — a pending model,
a dataset not run, no set checked out — and the browser then shows what exists.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.axes.measures import measure_names
from benchmark.results import ResultsFolder
from benchmark.schema import BASELINE_FAMILY

ITEMS_WITHOUT_RESULTS = 16
"""Items shown per dataset when no model has run on it (the default evaluation size)."""
_RECORD_FIELDS = ["item_id", "variant_id", "response", "finished"]


@dataclass(frozen=True)
class Answer:
    """One model's behaviour on one variant."""

    slug: str
    response: str | None
    """greedy response (None: the model did not run this variant)."""
    finished: bool | None
    """stopped on end-of-sequence rather than the token limit."""
    deltas: tuple[tuple[str, float], ...]
    """(measure, unscaled delta) for every measure that applies, in schema order."""
    correct: bool | None = None
    """the response was judged correct (None: no gold answers or no record)."""
    flipped: bool = False
    """correctness differs from the same model's baseline response."""
    largest: tuple[str, ...] = ()
    """measures on which this is the model's largest change on the item (|Δ|, ties: first variant)."""


@dataclass(frozen=True)
class VariantView:
    """One row of an item page."""

    variant_id: str
    """``family/place/strength``."""
    family: str
    """rewrite family (``baseline`` for the unmodified prompt)."""
    prompt: str
    """the text sent to the model."""
    similarity: float | None
    """similarity of the prompt to the baseline prompt."""
    answers: tuple[Answer, ...]
    """one per model with results on the dataset."""


@dataclass(frozen=True)
class ItemView:
    """An item with all its variants."""

    dataset: str
    rank: int
    """position in the seeded sample; also the page's file name."""
    item_id: str
    """stable id from the source (free text: escaped, never a path)."""
    gold: tuple[str, ...]
    """gold answers, when the dataset has them."""
    variants: tuple[VariantView, ...]
    """variants some model ran (every variant when none ran): baseline first, then the set's order."""
    in_set: int = 0
    """variants of this item in the variant set (``len(variants)`` or more under a partial profile)."""

    @property
    def baseline_prompt(self) -> str:
        """The unmodified prompt."""
        return self.variants[0].prompt if self.variants else ""

    @property
    def flips(self) -> int:
        """Responses whose correctness differs from the same model's baseline response."""
        return sum(a.flipped for v in self.variants for a in v.answers)

    def families(self) -> list[tuple[str, list[VariantView]]]:
        """Variants grouped by family, in order of first appearance."""
        groups: dict[str, list[VariantView]] = {}
        for variant in self.variants:
            groups.setdefault(variant.family, []).append(variant)
        return list(groups.items())


@dataclass(frozen=True)
class ModelResults:
    """What one model left on disk for one dataset (frames may be empty)."""

    records: pd.DataFrame
    """records rows of the dataset, indexed by (item_id, variant_id)."""
    deltas: pd.DataFrame
    """deltas rows of the dataset, indexed by (item_id, variant_id)."""


def read_model_results(results_dir: Path, dataset: str) -> ModelResults:
    """Load one model's records and deltas for ``dataset``; missing files give empty frames."""
    folder = ResultsFolder(results_dir)
    columns = ["dataset", "item_id", "variant_id", *(f"delta_{name}" for name in measure_names()), "correct"]
    records, deltas = _parquet(folder.records(dataset), _RECORD_FIELDS), _parquet(folder.deltas, columns)
    deltas = deltas[deltas["dataset"] == dataset]
    return ModelResults(
        records.set_index(["item_id", "variant_id"]), deltas.set_index(["item_id", "variant_id"])
    )


def _parquet(path: Path, columns: list[str]) -> pd.DataFrame:
    return pd.read_parquet(path, columns=columns) if path.is_file() else pd.DataFrame(columns=columns)


def item_views(dataset: str, frame: pd.DataFrame, results: Mapping[str, ModelResults]) -> list[ItemView]:
    """The item pages of one dataset from its variant-set ``frame`` and each model's ``results`` (by slug,
    only models with records on it): the items any model ran on, or the first ``ITEMS_WITHOUT_RESULTS``
    when none did; by rank."""
    ran = {key for r in results.values() for key in r.records.index}
    ran_items = {item for item, _ in ran}
    frame = (
        frame[frame["item_id"].isin(ran_items)]
        if ran_items
        else frame[frame["item_rank"] < ITEMS_WITHOUT_RESULTS]
    )
    items = []
    for (rank, item_id), rows in frame.groupby(["item_rank", "item_id"], sort=True):
        in_set = len(rows)
        if ran:  # a partial profile runs only some variants: show those, count the rest
            rows = rows[[(str(item_id), str(v)) in ran for v in rows["variant_id"]]]
        variants = _mark_changes(_variant_views(rows, str(item_id), results))
        answers = rows["answers"].iloc[0]
        gold = tuple(str(a) for a in answers) if answers is not None else ()
        items.append(ItemView(dataset, int(rank), str(item_id), gold, tuple(variants), in_set))
    return items


def _mark_changes(variants: list[VariantView]) -> list[VariantView]:
    """Flag correctness flips against the baseline and each model's largest |Δ| per measure."""
    if not variants or not variants[0].answers:
        return variants
    baseline = {a.slug: a.correct for a in variants[0].answers}
    largest: dict[tuple[str, str], tuple[float, str]] = {}
    for v in variants[1:]:
        for a in v.answers:
            for measure, value in a.deltas:
                best = largest.get((a.slug, measure))
                if abs(value) > 0 and (best is None or abs(value) > best[0]):
                    largest[(a.slug, measure)] = (abs(value), v.variant_id)
    marked = [variants[0]]
    for v in variants[1:]:
        answers = []
        for a in v.answers:
            before = baseline.get(a.slug)
            flipped = a.correct is not None and before is not None and a.correct != before
            own = tuple(m for m, _ in a.deltas if largest.get((a.slug, m), (0, ""))[1] == v.variant_id)
            answers.append(replace(a, flipped=flipped, largest=own))
        marked.append(replace(v, answers=tuple(answers)))
    return marked


def _variant_views(
    rows: pd.DataFrame, item_id: str, results: Mapping[str, ModelResults]
) -> list[VariantView]:
    rows = rows.assign(_first=rows["family"] != BASELINE_FAMILY).sort_values(
        ["_first", "variant_id"], kind="stable"
    )
    return [
        VariantView(
            str(row.variant_id),
            str(row.family),
            str(row.prompt),
            _number(row.similarity),
            tuple(_answer(slug, r, (item_id, str(row.variant_id))) for slug, r in results.items()),
        )
        for row in rows.itertuples(index=False)
    ]


def _answer(slug: str, results: ModelResults, key: tuple[str, str]) -> Answer:
    record = _row(results.records, key)
    delta = _row(results.deltas, key)
    found = {} if delta is None else {name: _number(delta.get(f"delta_{name}")) for name in measure_names()}
    deltas = tuple((name, value) for name, value in found.items() if value is not None)
    correct = _number(delta.get("correct")) if delta is not None else None
    if record is None:
        return Answer(slug, None, None, deltas)
    judged = None if correct is None else correct >= 0.5
    return Answer(slug, str(record["response"]), bool(record["finished"]), deltas, judged)


def _row(frame: pd.DataFrame, key: tuple[str, str]) -> dict[str, Any] | None:
    if key not in frame.index:
        return None
    found = frame.loc[key]
    if isinstance(found, pd.DataFrame):  # duplicated key: show the first row
        found = found.iloc[0]
    return dict(found.items())


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
