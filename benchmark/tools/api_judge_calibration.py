"""Measure the authors' judge through an endpoint against their verdicts on the held-out rows (METHOD §7.2).

    python -m benchmark.tools.api_judge_calibration --judge openai:<model> [--out verdicts.json]

Cohen's κ of :class:`benchmark.axes.api_judge.ApiPolitenessJudge` (``openai:<model>`` at
``$SAGO_JUDGE_BASE_URL``) against the authors' verdicts on the 377 held-out rows of
:mod:`benchmark.tools.judge_calibration`, with its 95 % cluster-bootstrap interval and every verdict, as JSON
on stdout (``--out``: also written to a file; the committed run is
``docs/bench/api-judge-held-out-qwen2.5-coder-1.5b.json``). Research, not runtime: the judge itself stays in
``benchmark.axes.api_judge`` and no runtime unit imports this module.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from benchmark.axes.api_judge import ApiPolitenessJudge, RowContext, api_judge
from benchmark.entry import run_command
from benchmark.tools.judge_calibration import cohen_kappa, held_out_rows, kappa_interval


def held_out_agreement(
    judge: ApiPolitenessJudge, rows: Sequence[Mapping[str, Any]]
) -> tuple[list[int], list[int]]:
    """(authors' verdicts, this judge's) on published judged rows; each row's strength is in the message,
    its prompts are not (the tables publish none)."""
    ours = []
    for r in rows:
        strength = float(r["strength"])
        context = RowContext(strength=strength)
        direction = 1 if strength > 0 else -1
        ours.append(
            int(
                r["response_pert"] != r["response_orig"]
                and judge.verdict(r["response_pert"], r["response_orig"], direction, context)
            )
        )
    return [int(r["authors_verdict"]) for r in rows], ours


@click.command()
@click.option("--judge", "spec", required=True, help="openai:<model>; the endpoint is $SAGO_JUDGE_BASE_URL.")
@click.option(
    "--fixtures",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("tests/fixtures"),
    show_default=True,
    help="The folder of the authors' judged rows.",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the numbers here (JSON)."
)
def main_command(spec: str, fixtures: Path, out: Path | None) -> None:
    """Cohen's κ of the judge against the authors' verdicts on the 377 held-out rows (docs/METHOD.md
    section 7), with its 95 % cluster-bootstrap interval, as JSON on stdout."""
    judge = api_judge(spec)
    rows = held_out_rows(fixtures)
    started = time.perf_counter()
    reference, ours = held_out_agreement(judge, rows)
    agreement = cohen_kappa(reference, ours)
    low, high = kappa_interval(reference, ours, [f"{r['table']}|{r['prompt_id']}" for r in rows])
    (tn, fp), (fn, tp) = agreement.confusion
    result = {
        "judge": judge.label,
        "rows": agreement.n,
        "kappa": round(agreement.kappa, 3),
        "kappa_95": [round(low, 3), round(high, 3)],
        "tn_fp_fn_tp": [tn, fp, fn, tp],
        "requests": judge.stats,
        "seconds": round(time.perf_counter() - started, 1),
        "verdicts": [
            [r["table"], r["prompt_id"], r["strength"], a, b]
            for r, a, b in zip(rows, reference, ours, strict=True)
        ],
    }
    text = json.dumps(result, indent=None, separators=(",", ":")).replace("],[", "],\n[")
    click.echo(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2."""
    return run_command(main_command, argv, "python -m benchmark.tools.api_judge_calibration")


if __name__ == "__main__":
    raise SystemExit(main())
