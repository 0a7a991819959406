"""How well does a politeness judge agree with the authors' judge? Cohen's κ and the confusion matrix.

Research, not runtime: this measured the politeness judges' parameters (the defaults of
``benchmark.axes.politeness``; numbers in docs/METHOD.md section 7), and no runtime unit imports it. The
commands built on it are ``python -m benchmark.tools.llm_judge_calibration`` (a packaged model as judge) and
``python -m benchmark.tools.api_judge_calibration`` (a judge behind an endpoint).

The reference is the authors' published, judged politeness rows, transcribed with provenance into
``tests/fixtures/authors_politeness_claude_trivia_qa.json``, ``authors_judged_claude.json`` (tuning rows) and
``authors_judged_held_out.json`` (held-out rows; the split: ``TUNING``/``HELD_OUT`` below). Each row holds the
baseline response y_0, the response y_v to the rewritten prompt, the strength (its sign is the direction) and
the authors' verdict. A judge is scored with the same rule the mirroring delta uses:
``politeness(judge)(y_v, y_0, strength)`` (relative to y_0, never negative).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.axes.mirroring import politeness
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    GratitudeJudge,
    LexiconPolitenessJudge,
    PolitenessJudge,
)

TUNING, HELD_OUT = "tuning", "held_out"
"""The split of the authors' judged politeness rows, fixed before any parameter was chosen and written in
each fixture table's ``split`` field. Tuning: every Claude Sonnet 4.6 row of TriviaQA (96), HotpotQA (64) and
Natural Questions (48), all of which earlier work had already read. Held out, transcribed only after the
candidates and their parameters below were committed: the Gemini 2.5 Flash rows of the same three datasets
(288, same commit and judge code). Those hold a single YES, so before any candidate was scored on a held-out
row the held-out set was extended with open-model rows the same judge scored (their ``mirroring_rate``, the
verdict after the cue guard): every row whose CSV record starts in characters 400,000-447,999 of
``results/politeness/run_multi_natural_questions_20260422_000930`` (Qwen2.5-7B) and of
``results/politeness/run_multi_hotpot_qa_20260420_012947`` (Llama-3.1-8B), a slice chosen by position, not by
content. (The closed-model SimpleQA-verified and TruthfulQA tables publish no verdict: their
``mirroring_rate`` is empty.)"""

CANDIDATES: dict[str, dict[str, PolitenessJudge]] = {
    "GratitudeJudge": {"": GratitudeJudge()},
    "LexiconPolitenessJudge": {
        f"margin {m:g}": LexiconPolitenessJudge(margin=m) for m in (0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6)
    },
    "CourtesyCueJudge": {f"min_change {k}": CourtesyCueJudge(min_change=k) for k in (1, 2, 3, 4)},
    "CourtesyMarkerJudge": {f"min_change {k}": CourtesyMarkerJudge(min_change=k) for k in (1, 2, 3, 4)},
}
"""Each candidate judge with its parameter grid; the parameter is the one :func:`choose` picks on the
tuning rows (ties: the first listed), and the judge class's default is set to it."""


@dataclass(frozen=True)
class Agreement:
    """Agreement of two binary raters over the same rows."""

    n: int
    """rows compared."""
    confusion: tuple[tuple[int, int], tuple[int, int]]
    """[[both no, reference no & judge yes], [reference yes & judge no, both yes]]."""
    kappa: float
    """Cohen's κ (NaN when both raters are constant and equal)."""
    judge_rate: float
    """share of rows the judge calls mirrored."""
    reference_rate: float
    """share of rows the reference calls mirrored."""


def cohen_kappa(reference: Sequence[int], judge: Sequence[int]) -> Agreement:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) of two 0/1 raters, with the 2×2 confusion matrix.

    >>> cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1]).kappa
    0.5
    """
    a, b = np.asarray(reference, dtype=int), np.asarray(judge, dtype=int)
    table = np.zeros((2, 2), dtype=int)
    np.add.at(table, (a, b), 1)
    n = int(table.sum())
    observed = float(np.trace(table)) / n
    expected = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    kappa = (observed - expected) / (1.0 - expected) if expected < 1.0 else float("nan")
    confusion = ((int(table[0, 0]), int(table[0, 1])), (int(table[1, 0]), int(table[1, 1])))
    return Agreement(n, confusion, kappa, float(b.mean()), float(a.mean()))


def load_reference(path: Path) -> list[dict[str, Any]]:
    """The judged rows of a calibration fixture."""
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["rows"]
    return rows


def judge_agreement(judge: PolitenessJudge, rows: Sequence[Mapping[str, Any]]) -> Agreement:
    """Agreement of ``judge`` (scored as the mirroring delta scores it) with the rows' authors' verdicts."""
    detect = politeness(judge)
    verdicts = [
        int(detect(r["response_pert"], r["response_orig"], float(r["strength"])) == 1.0) for r in rows
    ]
    return cohen_kappa([int(r["authors_verdict"]) for r in rows], verdicts)


JudgedRow = Mapping[str, Any]
Detect = Callable[[str, str, float], float]


def load_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The judged tables of ``tests/fixtures/authors_judged_claude.json``, by ``family/dataset``."""
    tables: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["tables"]
    return {name: table["rows"] for name, table in tables.items()}


def detector_agreement(detect: Detect, rows: Sequence[JudgedRow]) -> Agreement:
    """Agreement of a mirroring detector (y_v, y_0, strength) -> 0/1 with the rows' authors' verdicts."""
    verdicts = [
        int(detect(r["response_pert"], r["response_orig"], float(r["strength"])) == 1.0) for r in rows
    ]
    return cohen_kappa([int(r["authors_verdict"]) for r in rows], verdicts)


CLOSED_MODEL_VARIANTS = 26
"""Rewrites per prompt in the authors' closed-model mirroring SGS: politeness 6 (±2, ±6, ±10), length 5,
spacing, punctuation and letter case 5 each; form has no mirroring verdict there (NaN, left out)."""


def sgs_mr(
    yes_per_prompt: Mapping[int, int], n_prompts: int = 16, variants: int = CLOSED_MODEL_VARIANTS
) -> float:
    """Mirroring SGS of 0/1 verdicts: mean over prompts of sqrt(YES / variants) (RMS of the deltas).

    >>> round(sgs_mr({0: 1}, n_prompts=2, variants=4), 4)  # prompt 0: sqrt(1/4); prompt 1: 0
    0.25
    """
    return float(np.mean([np.sqrt(yes_per_prompt.get(p, 0) / variants) for p in range(n_prompts)]))


def yes_per_prompt(rows: Sequence[JudgedRow], verdict: Callable[[JudgedRow], bool]) -> dict[int, int]:
    """How many of each prompt's rows ``verdict`` calls mirrored.

    >>> yes_per_prompt([{"prompt_id": 3, "v": 1}, {"prompt_id": 3, "v": 1}, {"prompt_id": 4, "v": 0}],
    ...                lambda r: bool(r["v"]))
    {3: 2}
    """
    counts: dict[int, int] = {}
    for row in rows:
        if verdict(row):
            counts[int(row["prompt_id"])] = counts.get(int(row["prompt_id"]), 0) + 1
    return counts


def verdicts(judge: PolitenessJudge, rows: Sequence[JudgedRow]) -> list[int]:
    """The 0/1 verdicts of ``judge`` on ``rows``, scored as the mirroring delta scores it."""
    detect = politeness(judge)
    return [int(detect(r["response_pert"], r["response_orig"], float(r["strength"])) == 1.0) for r in rows]


def choose(candidates: Mapping[str, PolitenessJudge], rows: Sequence[JudgedRow]) -> str:
    """The candidate with the highest κ on ``rows`` (the first listed wins a tie).

    >>> from benchmark.axes.politeness import CourtesyCueJudge
    >>> row = {"response_pert": "Thanks! Paris.", "response_orig": "Paris.", "strength": 6}
    >>> row["authors_verdict"] = 1
    >>> quiet = {**row, "response_pert": "Paris!", "authors_verdict": 0}
    >>> choose({"one": CourtesyCueJudge(min_change=1), "two": CourtesyCueJudge(min_change=2)}, [row, quiet])
    'one'
    """
    reference = [int(r["authors_verdict"]) for r in rows]
    scores = {name: cohen_kappa(reference, verdicts(judge, rows)).kappa for name, judge in candidates.items()}
    return max(scores, key=lambda name: -np.inf if np.isnan(scores[name]) else scores[name])


def cross_validated(
    candidates: Mapping[str, PolitenessJudge], groups: Mapping[str, Sequence[JudgedRow]]
) -> Agreement:
    """Leave-one-group-out agreement: each group is judged by the candidate chosen on the other groups.

    The parameter of a judge is chosen on tuning rows; this says how well that choice carries to a group
    (a dataset) it was not chosen on, without touching the held-out rows.
    """
    reference: list[int] = []
    judged: list[int] = []
    for name, rows in groups.items():
        others = [r for other, rest in groups.items() if other != name for r in rest]
        reference += [int(r["authors_verdict"]) for r in rows]
        judged += verdicts(candidates[choose(candidates, others)], rows)
    return cohen_kappa(reference, judged)


def cluster_resamples(clusters: Sequence[object], resamples: int, seed: int) -> Iterator[list[int]]:
    """Row indices of ``resamples`` bootstrap samples that draw whole clusters (prompts) with replacement.

    >>> [len(rows) for rows in cluster_resamples(["a", "a", "b"], 3, seed=0)]
    [2, 3, 4]
    """
    ids = sorted(set(clusters), key=str)
    members = {c: [i for i, x in enumerate(clusters) if x == c] for c in ids}
    rng = np.random.default_rng(seed)
    for _ in range(resamples):
        yield [i for p in rng.integers(0, len(ids), size=len(ids)) for i in members[ids[p]]]


def _percentiles(values: Sequence[float]) -> tuple[float, float]:
    kept = [v for v in values if not np.isnan(v)]  # a resample with a constant rater has no κ
    low, high = np.percentile(kept, [2.5, 97.5])
    return float(low), float(high)


def kappa_interval(
    reference: Sequence[int],
    judged: Sequence[int],
    clusters: Sequence[object],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """95 % percentile bootstrap interval of Cohen's κ, resampling whole clusters (prompts).

    The rows of one prompt share its baseline response y_0, so they are resampled together; resamples
    whose κ is undefined (a constant rater) are dropped.

    >>> kappa_interval([0, 1] * 20, [0, 1] * 20, list(range(40)))
    (1.0, 1.0)
    """
    a, b = np.asarray(reference, dtype=int), np.asarray(judged, dtype=int)
    return _percentiles(
        [
            cohen_kappa(a[rows].tolist(), b[rows].tolist()).kappa
            for rows in cluster_resamples(clusters, resamples, seed)
        ]
    )


def kappa_difference_interval(
    reference: Sequence[int],
    first: Sequence[int],
    second: Sequence[int],
    clusters: Sequence[object],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """95 % paired cluster-bootstrap interval of κ(first) − κ(second) against the same reference rows.

    >>> kappa_difference_interval([0, 1] * 20, [0, 1] * 20, [0, 0] * 20, list(range(40)))  # perfect vs chance
    (1.0, 1.0)
    """
    a, b, c = (np.asarray(x, dtype=int) for x in (reference, first, second))
    differences = [
        cohen_kappa(a[rows].tolist(), b[rows].tolist()).kappa
        - cohen_kappa(a[rows].tolist(), c[rows].tolist()).kappa
        for rows in cluster_resamples(clusters, resamples, seed)
    ]
    return _percentiles(differences)


def split_tables(path: Path, split: str) -> dict[str, list[dict[str, Any]]]:
    """The politeness tables of a judged fixture whose ``split`` field is ``split`` (``TUNING``/``HELD_OUT``).

    A fixture holds either ``tables`` (each with its own ``split``) or one table's ``rows`` with a
    top-level ``split``, named after the file.
    """
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if "tables" not in document:
        return {path.stem: document["rows"]} if document.get("split") == split else {}
    return {name: t["rows"] for name, t in document["tables"].items() if t.get("split") == split}


POLITENESS_FIXTURE = "authors_politeness_claude_trivia_qa.json"
JUDGED_FIXTURE = "authors_judged_claude.json"
HELD_OUT_FIXTURE = "authors_judged_held_out.json"
"""The judged fixtures under ``tests/fixtures`` (provenance in each file's ``source``)."""


def tuning_groups(fixtures: Path) -> dict[str, list[dict[str, Any]]]:
    """The 208 tuning rows (Claude Sonnet 4.6), by dataset: the only rows a parameter is chosen on."""
    first = fixtures / POLITENESS_FIXTURE
    found = {**split_tables(first, TUNING), **split_tables(fixtures / JUDGED_FIXTURE, TUNING)}
    return {
        "trivia_qa": found[first.stem] + found["politeness/trivia_qa"],
        "hotpot_qa": found["politeness/hotpot_qa"],
        "natural_questions": found["politeness/natural_questions"],
    }


def held_out_rows(fixtures: Path) -> list[dict[str, Any]]:
    """The 377 held-out rows, each tagged with its ``table`` (prompts are resampled per table)."""
    tables = split_tables(fixtures / HELD_OUT_FIXTURE, HELD_OUT)
    return [{**r, "table": name} for name, rows in tables.items() for r in rows]


def closed_model_length(judge: PolitenessJudge) -> Detect:
    """The authors' *closed-model* length verdict, with ``judge`` in place of their gpt-4o-mini.

    Their closed-model runs (``utils/closed_model_metrics.compute_mirroring``) send ``length_variation`` rows
    to the politeness judge prompt (its builder has no length case) with ``int(multiplier)`` as the
    politeness strength: ×0.25 and ×0.5 become 0, "no politeness shift expected" (NO here; all their YES
    are at ×1.5 and above), ×1.5 becomes 1 and ×2, ×3 stay, "more polite". Their cue guard is applied only
    to the politeness style, so a guarded judge should be passed without its guard. The ratio rule
    (``mirroring.length``) stays the axis's rule: it is their open-model rule and measures what the family
    rewrites; this detector exists to compare with their published closed-model rows.

    >>> from benchmark.axes.politeness import CourtesyCueJudge
    >>> rule = closed_model_length(CourtesyCueJudge())
    >>> rule("Of course! Paris.", "Paris.", 1.5), rule("Of course! Paris.", "Paris.", 0.5)
    (1.0, 0.0)
    """
    detect = politeness(judge)

    def rule(response: str, baseline: str, strength: float) -> float:
        level = int(strength)  # their prompt builder's int(strength)
        return 0.0 if level == 0 else detect(response, baseline, float(level))

    return rule
