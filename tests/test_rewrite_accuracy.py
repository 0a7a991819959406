"""Accuracy under rewrite (PromptBench's performance drop): how often a right baseline answer stays right,
with the exact sign-flip test and Holm correction every other verdict uses."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchmark.documents import LeaderboardDocument
from benchmark.stats.claims import claims
from benchmark.stats.rewrite_accuracy import corrected_rows, rewrite_accuracy_rows

EXAMPLE = Path(__file__).parent / "fixtures" / "leaderboard_example.json"


def _deltas(n: int = 20, right: int = 10) -> pd.DataFrame:
    """``n`` items, the first ``right`` correct at baseline; "typos" at strength 1 turns every right answer
    wrong; "spacing" changes nothing; an identity control and an ungraded dataset are never counted."""
    rows: list[dict[str, Any]] = []
    for i in range(n):
        ok = 1.0 if i < right else 0.0
        rows += [
            {"dataset": "d", "item_id": str(i), "family": "baseline", "strength": 0.0, "correct": ok},
            {"dataset": "d", "item_id": str(i), "family": "typos", "strength": 1.0, "correct": 0.0},
            {"dataset": "d", "item_id": str(i), "family": "typos", "strength": 1.0, "correct": 0.0},
            {"dataset": "d", "item_id": str(i), "family": "spacing", "strength": 1.0, "correct": ok},
            {"dataset": "d", "item_id": str(i), "family": "identity", "strength": 0.0, "correct": 0.0},
            {"dataset": "u", "item_id": str(i), "family": "typos", "strength": 1.0, "correct": None},
        ]
    return pd.DataFrame(rows)


def test_a_rewrite_that_breaks_every_right_answer_is_a_significant_drop() -> None:
    rows = {(r["family"], r["strength"]): r for r in corrected_rows(rewrite_accuracy_rows(_deltas(), "m"))}
    assert set(rows) == {("typos", 1.0), ("spacing", 1.0)}  # controls and ungraded rows never count
    typos, spacing = rows[("typos", 1.0)], rows[("spacing", 1.0)]
    assert (typos["n_items"], typos["n_right"], typos["kept"]) == (20, 10, 0.0)
    assert typos["drop"] == pytest.approx(0.5)
    assert typos["p_exact"] == pytest.approx(2 / 2**10)  # 10 items, all −1: exact two-sided sign-flip
    assert typos["verdict"] == "significant" and typos["family_size"] == 1
    assert spacing["kept"] == 1.0 and spacing["drop"] == 0.0 and spacing["verdict"] == "not testable"


def test_too_few_changed_items_are_not_testable() -> None:
    rows = corrected_rows(rewrite_accuracy_rows(_deltas(n=20, right=3), "m"))
    typos = next(r for r in rows if r["family"] == "typos")
    assert typos["p_floor"] == pytest.approx(2 / 2**3) and typos["verdict"] == "not testable"


def test_the_board_sentence_states_the_worst_kept_share_and_the_significant_drops() -> None:
    data: dict[str, Any] = copy.deepcopy(json.loads(EXAMPLE.read_text()))
    data["accuracy_under_rewrite"] = corrected_rows(rewrite_accuracy_rows(_deltas(), "acme__tiny-a"))
    board = LeaderboardDocument.from_json(data | {"claims": []})
    text = next(c["text"] for c in claims(board) if c["id"] == "rewrite-accuracy")
    name = board.name("acme__tiny-a")
    assert f"stays right as little as 0 % of the time ({name}, typos at strength 1, 10 right items)" in text
    assert (
        f"1 of 2 accuracy changes (model × family × strength) are significant: {name} loses 50.0 points"
        in text
    )
    assert "1 is not testable, too few items change" in text
