"""End to end through the real stages: toy variant set → harness (fake model) → analyze → validate → site.

Slow (the analysis loads the packaged MiniLM for BERTScore), but it is the one test that proves the
validator accepts what the harness and the analysis really write, and the site renders their output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.toy import fake_run, freeze_toy_set, submit_hub_model

from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
from benchmark.site.board import read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.submissions.validate import validate_tree
from benchmark.variants.frozen import VariantSet

SLUGS = ("acme__fake-one", "acme__fake-two", "acme__fake-pending")


def submit_and_run(submissions: Path, variants: VariantSet) -> None:
    for index, slug in enumerate(SLUGS, start=1):
        submit_hub_model(submissions, slug, index)
        if not slug.endswith("pending"):
            out = submissions / slug / "results" / "sago-v1" / "v1"
            fake_run(submissions, slug, variants, out, hidden=8 * index, profile="smoke")


@pytest.mark.slow
def test_real_stage_outputs_validate_and_render(tmp_path: Path) -> None:
    variants = freeze_toy_set(tmp_path / "variants")
    submissions = tmp_path / "submissions"
    submit_and_run(submissions, variants)
    board_path = tmp_path / "leaderboard.json"
    run_analysis(AnalyzeRequest("sago-v1", "v1", submissions, board_path), variant_frames=variants.frames)

    report = validate_tree(submissions, tmp_path / "variants")
    assert [f.line() for f in report.failures] == []
    assert (report.submissions, report.result_folders) == (3, 2)

    board = read_board(board_path)
    assert {m["slug"]: m["status"] for m in board.models} == {
        "acme__fake-one": "complete",
        "acme__fake-two": "complete",
        "acme__fake-pending": "pending",
    }
    site = tmp_path / "site"
    build_site(SiteInputs(board, submissions, variants), site, progress=False)
    item = (site / "items" / "alpha" / "0.html").read_text(encoding="utf-8")
    assert "What is the capital of France?" in item and "acme__fake-two" in item
    assert "has no results yet" in (site / "models" / "acme__fake-pending.html").read_text(encoding="utf-8")
    assert (site / "downloads" / "acme__fake-one" / "records" / "alpha.parquet").is_file()
