"""How well does a politeness judge agree with the authors' judge? Cohen's κ, with the judge a parameter.

Research, not runtime: this measured the politeness judges' parameters (the defaults of
``benchmark.axes.politeness``, the thresholds of ``benchmark.axes.llm_judge``; numbers in docs/METHOD.md
section 7), and no runtime unit imports it. Its command measures one judge::

    python -m benchmark.tools.judge_calibration --judge qwen2.5-coder-0.5b-instruct-q4_k_m \\
        --cache /tmp/llm-judge-qwen05.json        # a packaged model, read through its YES/NO logits (§7.1)
    python -m benchmark.tools.judge_calibration --judge openai:<model> [--out verdicts.json]   # (§7.2)

The reference is the authors' published, judged politeness rows, transcribed with provenance into
``tests/fixtures/authors_politeness_claude_trivia_qa.json``, ``authors_judged_claude.json`` (tuning rows) and
``authors_judged_held_out.json`` (held-out rows; the split: ``TUNING``/``HELD_OUT`` below). Each row holds the
baseline response y_0, the response y_v to the rewritten prompt, the strength (its sign is the direction) and
the authors' verdict. A judge is scored with the same rule the mirroring delta uses:
``politeness(judge)(y_v, y_0, strength)`` (relative to y_0, never negative).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmark import options
from benchmark.axes.api_judge import RowContext, api_judge
from benchmark.axes.llm_judge import LogitPolitenessJudge, Score, ScoreCache, has_courtesy_cue, load_scorer
from benchmark.axes.mirroring import length, politeness
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    GratitudeJudge,
    LexiconPolitenessJudge,
    PolitenessJudge,
)
from benchmark.axes.scorers import JUDGES
from benchmark.errors import SagoError
from benchmark.packaged import ARTEFACTS
from benchmark.paths import REPO_ROOT
from benchmark.tools import tool_main
from benchmark.tools.timing import timed

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


JudgedRow = Mapping[str, Any]
Detect = Callable[[str, str, float], float]


def authors(rows: Sequence[JudgedRow]) -> list[int]:
    return [int(r["authors_verdict"]) for r in rows]


def load_tables(path: Path, split: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The judged tables of a fixture by ``family/dataset``, only those whose ``split`` field is ``split``
    when one is given (``TUNING``/``HELD_OUT``). A fixture holds either ``tables`` (each with its own
    ``split``) or one table's ``rows`` with a top-level ``split``, named after the file."""
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    tables: dict[str, dict[str, Any]] = document.get("tables", {path.stem: document})
    return {name: t["rows"] for name, t in tables.items() if split is None or t.get("split") == split}


def load_reference(path: Path) -> list[dict[str, Any]]:
    """The rows of a fixture of one table."""
    return load_tables(path)[path.stem]


def row_verdict(detect: Detect) -> Callable[[JudgedRow], bool]:
    """A mirroring detector (y_v, y_0, strength) -> 0/1 as the yes/no verdict on a judged row."""
    return lambda r: detect(str(r["response_pert"]), str(r["response_orig"]), float(r["strength"])) == 1.0


def detected(detect: Detect, rows: Sequence[JudgedRow]) -> list[int]:
    """The 0/1 verdicts of a mirroring detector (y_v, y_0, strength) -> 0/1 on ``rows``."""
    return [int(row_verdict(detect)(r)) for r in rows]


def verdicts(judge: PolitenessJudge, rows: Sequence[JudgedRow]) -> list[int]:
    """The 0/1 verdicts of ``judge`` on ``rows``, scored as the mirroring delta scores it."""
    return detected(politeness(judge), rows)


def detector_agreement(detect: Detect, rows: Sequence[JudgedRow]) -> Agreement:
    """Agreement of a mirroring detector (y_v, y_0, strength) -> 0/1 with the rows' authors' verdicts."""
    return cohen_kappa(authors(rows), detected(detect, rows))


def judge_agreement(judge: PolitenessJudge, rows: Sequence[JudgedRow]) -> Agreement:
    """Agreement of ``judge`` (scored as the mirroring delta scores it) with the rows' authors' verdicts."""
    return detector_agreement(politeness(judge), rows)


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


def choose(candidates: Mapping[str, PolitenessJudge], rows: Sequence[JudgedRow]) -> str:
    """The candidate with the highest κ on ``rows`` (the first listed wins a tie).

    >>> from benchmark.axes.politeness import CourtesyCueJudge
    >>> row = {"response_pert": "Thanks! Paris.", "response_orig": "Paris.", "strength": 6}
    >>> row["authors_verdict"] = 1
    >>> quiet = {**row, "response_pert": "Paris!", "authors_verdict": 0}
    >>> choose({"one": CourtesyCueJudge(min_change=1), "two": CourtesyCueJudge(min_change=2)}, [row, quiet])
    'one'
    """
    scores = {
        name: cohen_kappa(authors(rows), verdicts(judge, rows)).kappa for name, judge in candidates.items()
    }
    return max(scores, key=lambda name: -np.inf if np.isnan(scores[name]) else scores[name])


def leave_one_out(
    groups: Mapping[str, Sequence[JudgedRow]], judge: Callable[[str, list[str]], list[int]]
) -> tuple[list[JudgedRow], list[int]]:
    """Every group's rows and ``judge(group, other groups)``'s verdicts on them: each group is judged by
    what was chosen on the others alone."""
    rows: list[JudgedRow] = []
    judged: list[int] = []
    for name, group in groups.items():
        rows += group
        judged += judge(name, [other for other in groups if other != name])
    return rows, judged


def cross_validated(
    candidates: Mapping[str, PolitenessJudge], groups: Mapping[str, Sequence[JudgedRow]]
) -> Agreement:
    """Leave-one-group-out agreement: each group is judged by the candidate chosen on the other groups.

    The parameter of a judge is chosen on tuning rows; this says how well that choice carries to a group
    (a dataset) it was not chosen on, without touching the held-out rows.
    """

    def judge(name: str, others: list[str]) -> list[int]:
        chosen = choose(candidates, [r for other in others for r in groups[other]])
        return verdicts(candidates[chosen], groups[name])

    rows, judged = leave_one_out(groups, judge)
    return cohen_kappa(authors(rows), judged)


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


def _interval(
    raters: Sequence[Sequence[int]],
    statistic: Callable[[list[list[int]]], float],
    clusters: Sequence[object],
    resamples: int,
    seed: int,
) -> tuple[float, float]:
    """95 % percentile interval of ``statistic`` over cluster resamples of every rater's rows; a resample
    whose statistic is undefined (NaN: a constant rater has no κ) is dropped."""
    arrays = [np.asarray(r, dtype=int) for r in raters]
    values = [
        statistic([a[rows].tolist() for a in arrays]) for rows in cluster_resamples(clusters, resamples, seed)
    ]
    low, high = np.percentile([v for v in values if not np.isnan(v)], [2.5, 97.5])
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

    The rows of one prompt share its baseline response y_0, so they are resampled together.

    >>> kappa_interval([0, 1] * 20, [0, 1] * 20, list(range(40)))
    (1.0, 1.0)
    """
    return _interval((reference, judged), lambda r: cohen_kappa(*r).kappa, clusters, resamples, seed)


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

    def difference(r: list[list[int]]) -> float:
        return cohen_kappa(r[0], r[1]).kappa - cohen_kappa(r[0], r[2]).kappa

    return _interval((reference, first, second), difference, clusters, resamples, seed)


POLITENESS_FIXTURE = "authors_politeness_claude_trivia_qa.json"
JUDGED_FIXTURE = "authors_judged_claude.json"
HELD_OUT_FIXTURE = "authors_judged_held_out.json"
"""The judged fixtures under ``tests/fixtures`` (provenance in each file's ``source``)."""


def tuning_groups(fixtures: Path) -> dict[str, list[dict[str, Any]]]:
    """The 208 tuning rows (Claude Sonnet 4.6), by dataset: the only rows a parameter is chosen on."""
    first = fixtures / POLITENESS_FIXTURE
    found = {**load_tables(first, TUNING), **load_tables(fixtures / JUDGED_FIXTURE, TUNING)}
    return {
        "trivia_qa": found[first.stem] + found["politeness/trivia_qa"],
        "hotpot_qa": found["politeness/hotpot_qa"],
        "natural_questions": found["politeness/natural_questions"],
    }


def held_out_rows(fixtures: Path) -> list[dict[str, Any]]:
    """The 377 held-out rows, each tagged with its ``table`` (prompts are resampled per table)."""
    tables = load_tables(fixtures / HELD_OUT_FIXTURE, HELD_OUT)
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


# --- a packaged model as judge: a threshold on its YES/NO margin (METHOD §7.1) ------------------------


def choose_threshold(margins: Sequence[float], reference: Sequence[int]) -> float:
    """The threshold on ``margins`` whose verdicts (margin ≥ threshold) have the highest Cohen's κ with
    ``reference``; candidates are the midpoints between consecutive distinct margins (and one above all),
    a tie goes to the highest threshold (the fewest YES). NaN margins (rows the guard answered) are NO.

    >>> choose_threshold([-2.0, -1.0, 0.5, 3.0], [0, 0, 1, 1])
    -0.25
    """
    finite = sorted({m for m in margins if not math.isnan(m)})
    candidates = [(a + b) / 2 for a, b in zip(finite, finite[1:], strict=False)] + [finite[-1] + 1.0]
    best, best_kappa = candidates[-1], -math.inf
    for threshold in reversed(candidates):
        kappa = cohen_kappa(reference, at_threshold(margins, threshold)).kappa
        if not math.isnan(kappa) and kappa > best_kappa:
            best, best_kappa = threshold, kappa
    return best


def margin(score: Score, row: JudgedRow) -> float:
    """The row's YES/NO margin, NaN where the judge answers NO without the model (y_v = y_0, no cue)."""
    response, baseline = str(row["response_pert"]), str(row["response_orig"])
    if response == baseline or not (has_courtesy_cue(response) or has_courtesy_cue(baseline)):
        return math.nan
    return score(response, baseline, 1 if float(row["strength"]) > 0 else -1)


def at_threshold(margins: Sequence[float], threshold: float) -> list[int]:
    """0/1 verdicts: YES where the margin reaches ``threshold`` (NaN: NO)."""
    return [int(not math.isnan(m) and m >= threshold) for m in margins]


def agreement(rows: Sequence[JudgedRow], judged: Sequence[int]) -> dict[str, Any]:
    """κ, confusion [[TN, FP], [FN, TP]] and YES counts of ``judged`` against the authors' verdicts."""
    found = cohen_kappa(authors(rows), judged)
    return {"n": found.n, "kappa": round(found.kappa, 4), "confusion": found.confusion, "yes": sum(judged)}


def authors_sgs(
    fixtures: Path,
    polite: Callable[[JudgedRow], bool],
    closed_length: Callable[[JudgedRow], bool] | None = None,
) -> dict[str, float]:
    """SGS_MR on the authors' Claude/TriviaQA rows with ``polite`` deciding the 96 politeness rows, and
    the length rows decided by our ratio rule / by the authors' verdicts / by ``closed_length`` (their
    closed-model pipeline: :func:`closed_model_length`) / left at 0."""
    tables = load_tables(fixtures / JUDGED_FIXTURE)
    politeness_rows = load_reference(fixtures / POLITENESS_FIXTURE) + tables["politeness/trivia_qa"]
    length_rows = tables["length/trivia_qa"]

    def theirs(r: JudgedRow) -> bool:
        return bool(r["authors_verdict"])

    def sgs(decide: Callable[[JudgedRow], bool], lengths: Callable[[JudgedRow], bool] | None) -> float:
        counts = yes_per_prompt(politeness_rows, decide)
        for prompt, n in (yes_per_prompt(length_rows, lengths) if lengths else {}).items():
            counts[prompt] = counts.get(prompt, 0) + n
        return round(sgs_mr(counts), 4)

    found = {
        "ratio_rule": sgs(polite, row_verdict(length)),
        "authors_length": sgs(polite, theirs),
        "politeness_only": sgs(polite, None),
        "authors": sgs(theirs, theirs),
    }
    return found if closed_length is None else found | {"closed_model_length": sgs(polite, closed_length)}


def measure_margins(score: Score, fixtures: Path, *, closed_length: bool = False) -> dict[str, Any]:
    """The report on one scorer of margins: the threshold chosen on the 208 tuning rows only, κ and the
    confusion matrix on both splits (tuning also leave-one-dataset-out), the held-out 95 % cluster-bootstrap
    interval, and SGS_MR on the authors' Claude/TriviaQA rows.

    With ``closed_length`` the 80 length rows are also judged as the authors' closed-model pipeline judges
    them (:func:`closed_model_length`: this judge, without its guard, at int(multiplier)); that asks the
    model about 48 more rows.
    """
    groups = tuning_groups(fixtures)
    tuning = [r for g in groups.values() for r in g]
    held = held_out_rows(fixtures)
    by_group = {name: [margin(score, r) for r in rows] for name, rows in groups.items()}
    tuning_margins = [m for ms in by_group.values() for m in ms]
    held_margins = [margin(score, r) for r in held]
    threshold = choose_threshold(tuning_margins, authors(tuning))
    held_judged = at_threshold(held_margins, threshold)
    low, high = kappa_interval(authors(held), held_judged, [(r["table"], r["prompt_id"]) for r in held])

    def judge(name: str, others: list[str]) -> list[int]:
        chosen = choose_threshold(
            [m for o in others for m in by_group[o]], authors([r for o in others for r in groups[o]])
        )
        return at_threshold(by_group[name], chosen)

    per_table: dict[str, list[tuple[JudgedRow, int]]] = {}
    for row, verdict in zip(held, held_judged, strict=True):
        per_table.setdefault(str(row["table"]), []).append((row, verdict))
    report = {
        "threshold": round(threshold, 4),
        "tuning": {
            **agreement(tuning, at_threshold(tuning_margins, threshold)),
            "cv": agreement(*leave_one_out(groups, judge)),
        },
        "held_out": {**agreement(held, held_judged), "interval": (round(low, 3), round(high, 3))},
        "held_out_per_table": {
            table: agreement([r for r, _ in pairs], [v for _, v in pairs])
            for table, pairs in per_table.items()
        },
        "held_out_at_zero": agreement(held, at_threshold(held_margins, 0.0)),
        "rows_asked": sum(not math.isnan(m) for m in (*tuning_margins, *held_margins)),
    }
    closed = row_verdict(closed_model_length(LogitPolitenessJudge(score, threshold, guard=False)))

    def polite(r: JudgedRow) -> bool:
        return bool(at_threshold([margin(score, r)], threshold)[0])

    lengths = closed if closed_length else None
    report["sgs_mr"] = authors_sgs(fixtures, polite, lengths)
    if lengths is not None:
        rows = load_tables(fixtures / JUDGED_FIXTURE)["length/trivia_qa"]
        report["length_closed_model"] = agreement(rows, [int(lengths(r)) for r in rows])
    return report


def packaged_report(model: str, cache: Path, fixtures: Path, *, threads: int, closed_length: bool) -> str:
    """:func:`measure_margins` of a packaged instruct model, its margins cached per row in ``cache`` (read
    when present, written at the end: a rerun costs no model time), as indented JSON."""
    margins = ScoreCache.open(cache, f"{model}:{ARTEFACTS.get(model).sha256}")  # refuses before loading
    scorer = load_scorer(model, threads=threads)
    before = len(margins.scores)
    try:
        report = measure_margins(margins.wrap(scorer), fixtures, closed_length=closed_length)
    finally:
        margins.save()
    computed = len(margins.scores) - before
    report |= {"model": model, "threads": threads, "rows_computed_now": computed}
    if computed:  # wall time of the model calls alone (loading and the bootstrap left out)
        report["model_seconds"] = round(margins.seconds, 1)
        report["seconds_per_computed_row"] = round(margins.seconds / computed, 2)
    return json.dumps(report, indent=1)


# --- the authors' judge behind an endpoint (METHOD §7.2) ---------------------------------------------


def api_report(model: str, fixtures: Path) -> str:
    """Cohen's κ of :class:`benchmark.axes.api_judge.ApiPolitenessJudge` (``openai:<model>`` at
    ``$SAGO_JUDGE_BASE_URL``) on the 377 held-out rows, with its 95 % cluster-bootstrap interval and
    every verdict, as compact JSON (one verdict a line; the committed run is
    ``docs/bench/api-judge-held-out-qwen2.5-coder-1.5b.json``). Each row's strength is in the message, its
    prompts are not (the tables publish none)."""
    judge = api_judge(model)
    rows = held_out_rows(fixtures)

    def verdict(r: JudgedRow) -> int:
        response, baseline, strength = r["response_pert"], r["response_orig"], float(r["strength"])
        sign = 1 if strength > 0 else -1
        return int(
            response != baseline and judge.verdict(response, baseline, sign, RowContext(strength=strength))
        )

    run = timed(lambda: [verdict(r) for r in rows])
    reference, ours = authors(rows), run.value
    found = cohen_kappa(reference, ours)
    low, high = kappa_interval(reference, ours, [f"{r['table']}|{r['prompt_id']}" for r in rows])
    result = {
        "judge": judge.label,
        "rows": found.n,
        "kappa": round(found.kappa, 3),
        "kappa_95": [round(low, 3), round(high, 3)],
        "tn_fp_fn_tp": [n for pair in found.confusion for n in pair],
        "requests": judge.stats,
        "seconds": round(run.timing.seconds, 1),
        "verdicts": [
            [r["table"], r["prompt_id"], r["strength"], a, b]
            for r, a, b in zip(rows, reference, ours, strict=True)
        ],
    }
    return json.dumps(result, indent=None, separators=(",", ":")).replace("],[", "],\n[")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--judge",
    "--model",
    "spec",
    required=True,
    help="openai:<model> (the endpoint is $SAGO_JUDGE_BASE_URL), or a packaged instruct model read through "
    "its YES/NO logits, e.g. qwen2.5-coder-1.5b-instruct-q4_k_m.",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A packaged judge's per-row margins (JSON; required for one): read when present, written at the end",
)
@click.option(
    "--fixtures",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=REPO_ROOT / "tests" / "fixtures",
    show_default="tests/fixtures",
    help="The folder of the authors' judged rows.",
)
@click.option("--threads", type=options.THREADS, default=1, show_default=True, help="A packaged judge's.")
@click.option(
    "--closed-model-length",
    is_flag=True,
    help="Also judge the length rows as the authors' closed runs (a packaged judge).",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the report here (JSON)."
)
def main_command(
    spec: str, cache: Path | None, fixtures: Path, threads: int, closed_model_length: bool, out: Path | None
) -> None:
    """Cohen's κ of a politeness judge against the authors' verdicts (docs/METHOD.md section 7): a packaged
    model's on both splits at the threshold chosen on the tuning rows, an endpoint's on the 377 held-out
    rows; the report is JSON on stdout."""
    kind, _, model = spec.partition(":")
    if kind == "openai":  # the runtime's judge of that name (benchmark.axes.scorers.JUDGES)
        if not model:
            raise SagoError(f"--judge {spec!r}: write {JUDGES.get(kind).form}")
        if cache is not None or closed_model_length:
            raise SagoError(
                "--cache and --closed-model-length are a packaged judge's; openai: judges cache their own"
            )
        text = api_report(model, fixtures)
    elif cache is None:
        raise SagoError(f"judge {spec!r} is a packaged model: give --cache FILE for its margins")
    else:
        text = packaged_report(spec, cache, fixtures, threads=threads, closed_length=closed_model_length)
    click.echo(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")


main = tool_main(main_command, "benchmark.tools.judge_calibration")

if __name__ == "__main__":
    raise SystemExit(main())
