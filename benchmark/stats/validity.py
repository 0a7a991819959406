"""When a number cannot mean what its sentence says: the validity labels of docs/METHOD.md.

One rule set for every generated sentence and table. A comparison of responses that were mostly cut at
the token cap compares their openings; a paired test whose items are mostly tied rests on the few that
are not; a response that ends in a loop says nothing about the prompt; an accuracy at or below what
always giving the most common answer scores says nothing about the model. Such a cell is still shown,
but always with its label, never bare.

Pure functions over the leaderboard's rows; the counts they read are written by
:mod:`benchmark.stats.facts` (cut, degenerate) and :mod:`benchmark.stats.ranking` (tied items).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from benchmark.axes.accuracy import normalise
from benchmark.schema import BASELINE_VARIANT_ID

CUT = "cut"
"""half or more of the cell's responses stopped at the token cap."""
DEGENERATE = "degenerate"
"""half or more of the cell's responses are cut and end in a loop (:func:`degenerate`)."""
TIED = "tied"
"""half or more of a paired comparison's items are equal on both models (zero difference)."""
AT_BASELINE = "≤ baseline"
"""the accuracy is at or below the dataset's trivial baseline on the same items."""
LABELS = (CUT, DEGENERATE, TIED, AT_BASELINE)
"""Every label, in the order a cell lists them."""

LEGEND = (
    "A label in brackets says a number cannot be read at face value (docs/METHOD.md §6.1): cut = half or "
    "more of the responses stopped at the token cap, so generation, confidence and mirroring compare their "
    "openings; degenerate = half or more are cut and end in a loop; tied = half or more of a comparison's "
    "items are equal for both models; ≤ baseline = an accuracy no better than always giving the most common "
    "reference answer."
)
"""The labels' one-paragraph legend, quoted under the README's tables."""

HALF = 0.5
"""A cell carries a share label when at least this share of its responses (or items) has the property."""
RESPONSE_AXES = frozenset({"generation", "confidence", "mirroring"})
"""Axes measured on the generated response (activations are read at the last prompt token, before it)."""
LOOP_TAIL = 24
"""Characters at the end of a response that :func:`degenerate` inspects."""
LOOP_PERIOD = 8
"""Longest repeated unit (characters) :func:`degenerate` looks for in that tail."""


def degenerate(response: str, *, finished: bool) -> bool:
    """A cut response whose last ``LOOP_TAIL`` characters are one unit of 1–``LOOP_PERIOD`` characters
    repeated (a token loop: "the the the …", "\\n\\n\\n…", "1. 1. 1. …").

    >>> degenerate("x" + "ab" * 20, finished=False), degenerate("x" + "ab" * 20, finished=True)
    (True, False)
    >>> degenerate("The answer is 42, because six times seven is 42.", finished=False)
    False
    """
    tail = response[-LOOP_TAIL:]
    if finished or len(tail) < LOOP_TAIL:
        return False
    return any(tail == (tail[:p] * (LOOP_TAIL // p + 1))[:LOOP_TAIL] for p in range(1, LOOP_PERIOD + 1))


def at_least_half(part: int, whole: int) -> bool:
    """``part`` is half or more of a non-empty ``whole``.

    >>> at_least_half(8, 16), at_least_half(7, 16), at_least_half(0, 0)
    (True, False, False)
    """
    return whole > 0 and part >= HALF * whole


def cell_labels(axis: str, truncation: Mapping[str, object] | None) -> list[str]:
    """Labels of a (model, dataset, measure) cell: when the axis reads responses, those of the model's
    responses on the dataset (its ``models[].run.truncated[]`` row)."""
    if truncation is None or axis not in RESPONSE_AXES:
        return []
    total = int(str(truncation.get("total", 0)))
    counts = {CUT: truncation.get("cut", 0), DEGENERATE: truncation.get("degenerate", 0)}
    return [label for label, n in counts.items() if at_least_half(int(str(n)), total)]


def pair_labels(n_tied: int, n_items: int, cells: Iterable[Sequence[str]]) -> list[str]:
    """Labels of a paired comparison: either model's cell labels, then "tied" when ties dominate."""
    found = {label for labels in cells for label in labels}
    if at_least_half(n_tied, n_items):
        found.add(TIED)
    return ordered(found)


def accuracy_labels(accuracy: float | None, baseline: float | None) -> list[str]:
    """``["≤ baseline"]`` when an accuracy does not beat its trivial baseline.

    >>> accuracy_labels(0.5, 0.5), accuracy_labels(0.6, 0.5), accuracy_labels(None, 0.5)
    (['≤ baseline'], [], [])
    """
    if accuracy is None or baseline is None:
        return []
    return [AT_BASELINE] if accuracy <= baseline else []


def ordered(labels: Iterable[str]) -> list[str]:
    """``labels`` without repeats, in :data:`LABELS` order."""
    found = set(labels)
    return [label for label in LABELS if label in found]


def labelled(text: str, labels: Sequence[str]) -> str:
    """``text`` followed by its labels in brackets (``text`` alone when there are none).

    >>> labelled("gsm8k", ["cut", "tied"]), labelled("0.5", [])
    ('gsm8k [cut, tied]', '0.5')
    """
    return f"{text} [{', '.join(labels)}]" if labels else text


ALL_DATASETS = "all"
"""the ``dataset`` of the rows that pool every dataset."""

Key = tuple[str, str, str]
"""(model, dataset, measure)."""


def truncations(models: Iterable[Mapping[str, object]]) -> dict[tuple[str, str], Mapping[str, object]]:
    """(model slug, dataset) -> its ``models[].run.truncated[]`` row (``"all"`` included)."""
    out: dict[tuple[str, str], Mapping[str, object]] = {}
    for model in models:
        run = model.get("run")
        rows = run.get("truncated", []) if isinstance(run, Mapping) else []
        for row in rows if isinstance(rows, list) else []:
            out[(str(model["slug"]), str(row["dataset"]))] = row
    return out


def annotate_cells(
    cells: Iterable[Mapping[str, object]], models: Iterable[Mapping[str, object]], axes: Mapping[str, str]
) -> list[dict[str, object]]:
    """``cells[]`` rows with their ``validity`` labels (``axes``: measure -> axis)."""
    cut = truncations(models)
    out = []
    for c in cells:
        found = cut.get((str(c["model"]), str(c["dataset"])))
        out.append(dict(c) | {"validity": cell_labels(axes.get(str(c["measure"]), ""), found)})
    return out


def _labels(row: Mapping[str, object]) -> list[str]:
    found = row.get("validity", [])
    return [str(label) for label in found] if isinstance(found, list) else []


def annotate_pairs(
    pairwise: Iterable[Mapping[str, object]], cells: Iterable[Mapping[str, object]]
) -> list[dict[str, object]]:
    """``pairwise[]`` rows with their ``validity``: both models' cell labels, plus "tied"."""
    by_key: dict[Key, list[str]] = {
        (str(c["model"]), str(c["dataset"]), str(c["measure"])): _labels(c) for c in cells
    }
    out = []
    for row in pairwise:
        dataset, measure = str(row["dataset"]), str(row["measure"])
        both = [by_key.get((str(row[m]), dataset, measure), []) for m in ("model_a", "model_b")]
        tied = row.get("n_tied", 0)
        n_tied = int(tied) if isinstance(tied, int | float) else 0
        out.append(dict(row) | {"validity": pair_labels(n_tied, int(str(row["n_items"])), both)})
    return out


def gold_answers(frames: Mapping[str, pd.DataFrame]) -> dict[tuple[str, str], str]:
    """(dataset, item_id) -> the item's first reference answer, normalised as the grader compares them."""
    out: dict[tuple[str, str], str] = {}
    for dataset, frame in frames.items():
        baseline = frame[frame["variant_id"] == BASELINE_VARIANT_ID]
        for item, answers in zip(baseline["item_id"], baseline["answers"], strict=True):
            if len(answers):
                out[(str(dataset), str(item))] = normalise(str(answers[0]))
    return out


def majority(answers: Iterable[str]) -> tuple[int, int]:
    """(items whose answer is the most common one, items): what always giving that answer scores.

    >>> majority(["yes", "no", "yes"]), majority([])
    ((2, 3), (0, 0))
    """
    counts = Counter(answers)
    return (max(counts.values()), sum(counts.values())) if counts else (0, 0)


def _trivial(items: Iterable[tuple[str, str]], gold: Mapping[tuple[str, str], str]) -> float | None:
    """Trivial baseline over ``items``: the most common answer per dataset, pooled over datasets."""
    by_dataset: dict[str, list[str]] = {}
    for key in items:
        if key in gold:
            by_dataset.setdefault(key[0], []).append(gold[key])
    parts = [majority(answers) for answers in by_dataset.values()]
    total = sum(n for _, n in parts)
    return sum(k for k, _ in parts) / total if total else None


def annotate_accuracy(
    rows: Iterable[Mapping[str, object]],
    items: Mapping[str, set[tuple[str, str]]],
    gold: Mapping[tuple[str, str], str],
    models: Iterable[Mapping[str, object]],
) -> list[dict[str, object]]:
    """``accuracy[]`` rows with ``n_cut``, ``accuracy_answered``, ``baseline`` and ``validity``.

    ``items``: model slug -> its (dataset, item_id); ``gold``: :func:`gold_answers`. A baseline response
    cut at the cap and not graded correct is counted "cut", not wrong: the answer may not have fitted.
    """
    cut = truncations(models)
    out = []
    for row in rows:
        model, dataset = str(row["model"]), str(row["dataset"])
        n = int(str(row["n_items"]))
        accuracy = row.get("accuracy")
        value = float(accuracy) if isinstance(accuracy, int | float) else None
        n_cut = int(str((cut.get((model, dataset)) or {}).get("unanswered", 0)))
        answered = n - n_cut
        correct = round(value * n) if value is not None else None
        mine = {k for k in items.get(model, set()) if dataset == ALL_DATASETS or k[0] == dataset}
        baseline = _trivial(mine, gold)
        labels = ([CUT] if at_least_half(n_cut, n) else []) + accuracy_labels(value, baseline)
        out.append(
            dict(row)
            | {
                "n_cut": n_cut,
                "accuracy_answered": correct / answered if correct is not None and answered > 0 else None,
                "baseline": baseline,
                "validity": labels,
            }
        )
    return out
