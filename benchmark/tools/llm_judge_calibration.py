"""Measure a local language model as politeness judge against the authors' judged rows (METHOD §7.1).

    python -m benchmark.tools.llm_judge_calibration --model qwen2.5-coder-0.5b-instruct-q4_k_m \\
        --cache /tmp/llm-judge-qwen05.json

The threshold on the YES/NO margin is chosen on the 208 tuning rows only; the held-out rows are then judged
once with it. Margins are cached per row (``--cache``), so a rerun costs no model time. The report (JSON on
stdout) holds κ and the confusion matrix on both splits, the held-out 95 % cluster-bootstrap interval, and
SGS_MR on the authors' Claude/TriviaQA rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from benchmark import options
from benchmark.axes.llm_judge import (
    LogitPolitenessJudge,
    Score,
    ScoreCache,
    has_courtesy_cue,
    load_scorer,
)
from benchmark.axes.mirroring import length
from benchmark.entry import run_command
from benchmark.packaged import ARTEFACTS
from benchmark.paths import REPO_ROOT
from benchmark.tools.judge_calibration import (
    JUDGED_FIXTURE,
    POLITENESS_FIXTURE,
    closed_model_length,
    cohen_kappa,
    held_out_rows,
    kappa_interval,
    load_reference,
    load_tables,
    sgs_mr,
    tuning_groups,
    yes_per_prompt,
)

Row = Mapping[str, Any]


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
        verdicts = [int(not math.isnan(m) and m >= threshold) for m in margins]
        kappa = cohen_kappa(reference, verdicts).kappa
        if not math.isnan(kappa) and kappa > best_kappa:
            best, best_kappa = threshold, kappa
    return best


def margin(score: Score, row: Row) -> float:
    """The row's YES/NO margin, NaN where the judge answers NO without the model (y_v = y_0, no cue)."""
    response, baseline = str(row["response_pert"]), str(row["response_orig"])
    if response == baseline or not (has_courtesy_cue(response) or has_courtesy_cue(baseline)):
        return math.nan
    return score(response, baseline, 1 if float(row["strength"]) > 0 else -1)


def verdicts(margins: Sequence[float], threshold: float) -> list[int]:
    """0/1 verdicts: YES where the margin reaches ``threshold`` (NaN: NO)."""
    return [int(not math.isnan(m) and m >= threshold) for m in margins]


def agreement(rows: Sequence[Row], judged: Sequence[int]) -> dict[str, Any]:
    """κ, confusion [[TN, FP], [FN, TP]] and YES counts of ``judged`` against the authors' verdicts."""
    found = cohen_kappa([int(r["authors_verdict"]) for r in rows], judged)
    return {"n": found.n, "kappa": round(found.kappa, 4), "confusion": found.confusion, "yes": sum(judged)}


def cross_validated(
    groups: Mapping[str, Sequence[Row]], margins: Mapping[str, list[float]]
) -> dict[str, Any]:
    """Leave-one-dataset-out within the tuning rows: each dataset judged at the threshold of the others."""
    rows: list[Row] = []
    judged: list[int] = []
    for name, group in groups.items():
        others = [n for n in groups if n != name]
        reference = [int(r["authors_verdict"]) for n in others for r in groups[n]]
        threshold = choose_threshold([m for n in others for m in margins[n]], reference)
        rows += group
        judged += verdicts(margins[name], threshold)
    return agreement(rows, judged)


def authors_sgs(
    fixtures: Path, polite: Callable[[Row], bool], closed_length: Callable[[Row], bool] | None = None
) -> dict[str, float]:
    """SGS_MR on the authors' Claude/TriviaQA rows with ``polite`` deciding the 96 politeness rows, and
    the length rows decided by our ratio rule / by the authors' verdicts / by ``closed_length`` (their
    closed-model pipeline: ``judge_calibration.closed_model_length``) / left at 0."""
    tables = load_tables(fixtures / JUDGED_FIXTURE)
    politeness_rows = load_reference(fixtures / POLITENESS_FIXTURE) + tables["politeness/trivia_qa"]
    length_rows = tables["length/trivia_qa"]

    def ratio_rule(r: Row) -> bool:
        return length(str(r["response_pert"]), str(r["response_orig"]), float(r["strength"])) == 1.0

    def theirs(r: Row) -> bool:
        return bool(r["authors_verdict"])

    def sgs(decide: Callable[[Row], bool], lengths: Callable[[Row], bool] | None) -> float:
        counts = yes_per_prompt(politeness_rows, decide)
        for prompt, n in (yes_per_prompt(length_rows, lengths) if lengths else {}).items():
            counts[prompt] = counts.get(prompt, 0) + n
        return round(sgs_mr(counts), 4)

    found = {
        "ratio_rule": sgs(polite, ratio_rule),
        "authors_length": sgs(polite, theirs),
        "politeness_only": sgs(polite, None),
        "authors": sgs(theirs, theirs),
    }
    return found if closed_length is None else found | {"closed_model_length": sgs(polite, closed_length)}


def measure(score: Score, fixtures: Path, *, closed_length: bool = False) -> dict[str, Any]:
    """The whole report for one scorer (see the module docstring).

    With ``closed_length`` the 80 length rows are also judged as the authors' closed-model pipeline judges
    them (``judge_calibration.closed_model_length``: this judge, without its guard, at int(multiplier));
    that asks the model about 48 more rows.
    """
    groups = tuning_groups(fixtures)
    tuning = [r for g in groups.values() for r in g]
    held = held_out_rows(fixtures)
    by_group = {name: [margin(score, r) for r in rows] for name, rows in groups.items()}
    tuning_margins = [m for ms in by_group.values() for m in ms]
    held_margins = [margin(score, r) for r in held]
    threshold = choose_threshold(tuning_margins, [int(r["authors_verdict"]) for r in tuning])
    held_judged = verdicts(held_margins, threshold)
    low, high = kappa_interval(
        [int(r["authors_verdict"]) for r in held], held_judged, [(r["table"], r["prompt_id"]) for r in held]
    )
    report = {
        "threshold": round(threshold, 4),
        "tuning": {
            **agreement(tuning, verdicts(tuning_margins, threshold)),
            "cv": cross_validated(groups, by_group),
        },
        "held_out": {**agreement(held, held_judged), "interval": (round(low, 3), round(high, 3))},
        "held_out_per_table": _per_table(held, held_judged),
        "held_out_at_zero": agreement(held, verdicts(held_margins, 0.0)),
        "rows_asked": sum(not math.isnan(m) for m in (*tuning_margins, *held_margins)),
    }

    def polite(r: Row) -> bool:
        return bool(verdicts([margin(score, r)], threshold)[0])

    lengths = _closed_length(LogitPolitenessJudge(score, threshold, guard=False)) if closed_length else None
    report["sgs_mr"] = authors_sgs(fixtures, polite, lengths)
    if lengths is not None:
        rows = load_tables(fixtures / JUDGED_FIXTURE)["length/trivia_qa"]
        report["length_closed_model"] = agreement(rows, [int(lengths(r)) for r in rows])
    return report


def _per_table(held: Sequence[Row], judged: Sequence[int]) -> dict[str, dict[str, Any]]:
    tables = dict.fromkeys(str(r["table"]) for r in held)
    return {
        table: agreement(
            [r for r in held if r["table"] == table],
            [v for r, v in zip(held, judged, strict=True) if r["table"] == table],
        )
        for table in tables
    }


def _closed_length(judge: LogitPolitenessJudge) -> Callable[[Row], bool]:
    rule = closed_model_length(judge)
    return lambda r: rule(str(r["response_pert"]), str(r["response_orig"]), float(r["strength"])) == 1.0


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--model", required=True, help="A packaged artefact, e.g. qwen2.5-coder-1.5b-instruct-q4_k_m.")
@click.option(
    "--cache",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSON file of per-row margins: read when present, written at the end.",
)
@click.option(
    "--fixtures",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=REPO_ROOT / "tests" / "fixtures",
    show_default=True,
)
@click.option("--threads", type=options.THREADS, default=1, show_default=True)
@click.option(
    "--closed-model-length", is_flag=True, help="Also judge the length rows as the authors' closed runs."
)
def main_command(model: str, cache: Path, fixtures: Path, threads: int, closed_model_length: bool) -> None:
    """Measure a packaged instruct model as politeness judge; the report is JSON on stdout."""
    margins = ScoreCache.open(cache, f"{model}:{ARTEFACTS.get(model).sha256}")  # refuses before loading
    scorer = load_scorer(model, threads=threads)
    before = len(margins.scores)
    try:
        report = measure(margins.wrap(scorer), fixtures, closed_length=closed_model_length)
    finally:
        margins.save()
    computed = len(margins.scores) - before
    report |= {"model": model, "threads": threads, "rows_computed_now": computed}
    if computed:  # wall time of the model calls alone (loading and the bootstrap left out)
        report["model_seconds"] = round(margins.seconds, 1)
        report["seconds_per_computed_row"] = round(margins.seconds / computed, 2)
    click.echo(json.dumps(report, indent=1))


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2."""
    return run_command(main_command, argv, "python -m benchmark.tools.llm_judge_calibration")


if __name__ == "__main__":
    raise SystemExit(main())
