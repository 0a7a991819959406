"""`sago analyze`'s console table: every model's run (profile, items) on its line, and a mixed board said."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.documents import LeaderboardDocument
from benchmark.pipeline.cli import sgs_text_table

EXAMPLE = Path(__file__).resolve().parent / "fixtures" / "leaderboard_example.json"


def test_the_analyze_table_shows_each_models_profile_and_items_and_warns_on_a_mix() -> None:
    """A 1-item scratch run was ranked among 96-item ones without a word; now every line says its run
    and a mixed board says so under the table."""
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    same = sgs_text_table(LeaderboardDocument.from_json(data))
    lines = same.splitlines()
    assert lines[0].split()[:3] == ["model", "profile", "n"]
    assert [line.split()[1:3] for line in lines[1:4]] == [["evidence", "96"]] * 3
    assert "warning" not in same
    data["models"][2] = data["models"][2] | {
        "n_items": 6,
        "run": data["models"][2]["run"] | {"profile": "bench"},
    }
    mixed = sgs_text_table(LeaderboardDocument.from_json(data))
    assert mixed.splitlines()[3].split()[:3] == ["acme__tiny-c", "bench", "6"]
    warning = next(line for line in mixed.splitlines() if line.startswith("warning:"))
    assert "evidence, n=96: acme__tiny-a, acme__tiny-b; bench, n=6: acme__tiny-c" in warning
