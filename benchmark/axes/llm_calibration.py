"""Measure a local language model as politeness judge against the authors' judged rows (METHOD §7.1).

    python -m benchmark.axes.llm_calibration --model qwen2.5-coder-0.5b-instruct-q4_k_m \\
        --cache /tmp/llm-judge-qwen05.json

The threshold on the YES/NO margin is chosen on the 208 tuning rows only; the held-out rows are then judged
once with it. Margins are cached per row (``--cache``), so a rerun costs no model time. The report (JSON on
stdout) holds κ and the confusion matrix on both splits, the held-out 95 % cluster-bootstrap interval, and
SGS_MR on the authors' Claude/TriviaQA rows.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.axes.calibration import (
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
from benchmark.axes.llm_judge import (
    LogitPolitenessJudge,
    Score,
    ScoreCache,
    choose_threshold,
    has_courtesy_cue,
    load_scorer,
)
from benchmark.axes.mirroring import length
from benchmark.paths import REPO_ROOT

Row = Mapping[str, Any]


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
    fixtures: Path, polite: Callable[[Row], bool], closed_length: Callable[[Row], bool]
) -> dict[str, float]:
    """SGS_MR on the authors' Claude/TriviaQA rows with ``polite`` deciding the 96 politeness rows, and
    the length rows decided by our ratio rule / by the authors' verdicts / by ``closed_length`` (their
    closed-model pipeline: ``calibration.closed_model_length``) / left at 0."""
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

    return {
        "ratio_rule": sgs(polite, ratio_rule),
        "authors_length": sgs(polite, theirs),
        "closed_model_length": sgs(polite, closed_length),
        "politeness_only": sgs(polite, None),
        "authors": sgs(theirs, theirs),
    }


def measure(score: Score, fixtures: Path) -> dict[str, Any]:
    """The whole report for one scorer (see the module docstring)."""
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
    per_table = {
        table: agreement(
            [r for r in held if r["table"] == table],
            [v for r, v in zip(held, held_judged, strict=True) if r["table"] == table],
        )
        for table in dict.fromkeys(r["table"] for r in held)
    }
    asked = sum(not math.isnan(m) for m in (*tuning_margins, *held_margins))

    def polite(r: Row) -> bool:
        return bool(verdicts([margin(score, r)], threshold)[0])

    closed = closed_model_length(LogitPolitenessJudge(score, threshold, guard=False))

    def closed_length(r: Row) -> bool:
        return closed(str(r["response_pert"]), str(r["response_orig"]), float(r["strength"])) == 1.0

    length_rows = load_tables(fixtures / JUDGED_FIXTURE)["length/trivia_qa"]

    return {
        "threshold": round(threshold, 4),
        "tuning": {
            **agreement(tuning, verdicts(tuning_margins, threshold)),
            "cv": cross_validated(groups, by_group),
        },
        "held_out": {**agreement(held, held_judged), "interval": (round(low, 3), round(high, 3))},
        "held_out_per_table": per_table,
        "held_out_at_zero": agreement(held, verdicts(held_margins, 0.0)),
        "length_closed_model": agreement(length_rows, [int(closed_length(r)) for r in length_rows]),
        "sgs_mr": authors_sgs(fixtures, polite, closed_length),
        "rows_asked": asked,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark.axes.llm_calibration", description=__doc__)
    parser.add_argument(
        "--model", required=True, help="a packaged artefact, e.g. qwen2.5-coder-0.5b-instruct-q4_k_m"
    )
    parser.add_argument("--cache", type=Path, required=True, help="JSON file of per-row margins (reused)")
    parser.add_argument("--fixtures", type=Path, default=REPO_ROOT / "tests" / "fixtures")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    scorer, tag = load_scorer(args.model, threads=args.threads)
    cache = ScoreCache.open(args.cache, f"{args.model}:{tag}")
    before = len(cache.scores)
    try:
        report = measure(cache.wrap(scorer), args.fixtures)
    finally:
        cache.save()
    computed = len(cache.scores) - before
    report |= {"model": args.model, "threads": args.threads, "rows_computed_now": computed}
    if computed:  # wall time of the model calls alone (loading and the bootstrap left out)
        report["model_seconds"] = round(cache.seconds, 1)
        report["seconds_per_computed_row"] = round(cache.seconds / computed, 2)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
