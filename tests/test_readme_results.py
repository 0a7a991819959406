"""The README's results block is generated from leaderboard/leaderboard.json: no claim can drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.stats.claims import BEGIN, END, claims, replace_block, results_markdown
from benchmark.stats.leaderboard import load_leaderboard

ROOT = Path(__file__).resolve().parents[1]


def test_readme_results_block_matches_the_committed_leaderboard() -> None:
    board = load_leaderboard(ROOT / "leaderboard" / "leaderboard.json").to_json()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert replace_block(readme, results_markdown(board)) == readme, (
        "README results are stale: run `python -m benchmark.stats.claims` after `sago analyze`"
    )


def test_committed_leaderboard_claims_are_generated_from_it() -> None:
    board = load_leaderboard(ROOT / "leaderboard" / "leaderboard.json").to_json()
    assert board["claims"] == claims(json.loads(json.dumps(board)))


def test_claims_follow_the_data() -> None:
    from helpers.leaderboard_example import example_leaderboard

    from benchmark.stats.summary import AnalysisOptions

    board = json.loads(json.dumps(example_leaderboard(options=AnalysisOptions(resamples=200)).to_json()))
    texts = {c["id"]: c["text"] for c in board["claims"]}
    significant = sum(r["verdict"] == "significant" for r in board["reversals"])
    assert (
        f"{len(board['reversals'])} (model pair, dataset pair, measure) orderings reverse"
        in texts["reversals"]
    )
    assert f"; {significant} of these reversals are significant" in texts["reversals"]
    board["reversals"] = []
    assert "No model pair changes order" in claims(board)[3]["text"]


def test_a_readme_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no results markers"):
        replace_block("# README\n", "x")
    assert replace_block(f"a\n{BEGIN}\nold\n{END}\nb", "new") == f"a\n{BEGIN}\nnew\n{END}\nb"
