"""A realistic leaderboard from synthetic data (3 models × 6 datasets plus one pending model).

``python -m tests.helpers.leaderboard_example tests/fixtures/leaderboard_example.json`` (or
``make example-fixture``) regenerates the example
the site is developed against; it runs the real statistics, only the deltas are invented.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmark import jsonio
from benchmark.documents import LeaderboardDocument, SummaryDocument
from benchmark.results import SUMMARY_FILE, write_json
from benchmark.rows import RunRow, TruncationRow
from benchmark.stats.leaderboard import Entry, build_leaderboard
from benchmark.stats.summary import DEFAULT_OPTIONS, AnalysisOptions, summarize
from benchmark.submissions import Submission

from .synthetic import example_levels, synthetic_deltas

MODELS: tuple[str, ...] = ("acme__tiny-a", "acme__tiny-b", "acme__tiny-c")
PENDING = "acme__tiny-pending"


def example_run(slug: str) -> RunRow:
    """A made-up ``models[].run`` block: an evidence run whose share of capped responses grows per model."""
    step = MODELS.index(slug)
    datasets = ("gsm8k", "jeopardy", "misconceptions", "natural_questions", "strategyqa", "trivia_qa")
    truncated: list[TruncationRow] = [
        {"dataset": d, "cut": 10 * step + i, "total": 280} for i, d in enumerate(datasets)
    ]
    truncated.append(
        {"dataset": "all", "cut": sum(t["cut"] for t in truncated), "total": 280 * len(datasets)}
    )
    return {
        "tuning": "instruct" if step else "base",
        "tuning_declared": step == 2,
        "prompt_format": "chat template" if step else "raw",
        "quantisation": "GGUF Q4_K_M",
        "dtype": "float32",
        "profile": "evidence",
        "items_per_dataset": 16,
        "token_cap": 48,
        "engine": "single_prefill",
        "batch_size": 16,
        "threads": 1,
        "wall_seconds": 3600.0 * (step + 1),
        "model_seconds": 3400.0 * (step + 1),
        "peak_rss_mib": 2800.0 + 500 * step,
        "truncated": truncated,
    }


def validated_submission(slug: str) -> Submission:
    """:func:`example_submission` as the validated model the leaderboard builder takes."""
    return Submission.model_validate(example_submission(slug))


def example_submission(slug: str) -> dict[str, Any]:
    """submission.yaml contents for a made-up packaged model."""
    return {
        "schema_version": 1,
        "name": f"Tiny {slug.rsplit('-', 1)[-1].upper()} (synthetic)",
        "model": {"kind": "packaged", "artefact": slug.split("__")[1], "sha256": "0" * 64},
        "dtype": "float32",
        "chat_template": "auto",
        "license": "Apache-2.0",
        "parameters": 135_000_000,
        "contact": "sago-bench maintainers",
        "url": None,
        "notes": "Synthetic example: deltas drawn at random, statistics real.",
    }


def example_leaderboard(
    *, set_name: str = "sago-v1", version: str = "v1", options: AnalysisOptions = DEFAULT_OPTIONS
) -> LeaderboardDocument:
    """The example document: summaries pass through canonical JSON exactly as on disk."""
    deltas = synthetic_deltas(example_levels(MODELS), n_items=16, seed=options.seed)
    entries = [Entry(PENDING, validated_submission(PENDING), None, None)]
    for slug in MODELS:
        summary = summarize(
            deltas[deltas["model"] == slug], model=slug, set_name=set_name, version=version, options=options
        )
        path = f"submissions/{slug}/results/{set_name}/{version}/{SUMMARY_FILE}"
        on_disk = SummaryDocument.from_json(json.loads(jsonio.dumps(summary)))
        entries.append(Entry(slug, validated_submission(slug), on_disk, path, example_run(slug)))
    return build_leaderboard(entries, set_name=set_name, version=version, options=options)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/fixtures/leaderboard_example.json")
    write_json(target, example_leaderboard().to_json(), jsonio.dumps)
    print(f"wrote {target}")
