"""One board ranks results of one dtype: a bfloat16 result is never ranked against float32 ones."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers.leaderboard_example import MODELS, example_run, validated_submission
from helpers.synthetic import example_levels, synthetic_deltas

from benchmark.documents import SummaryDocument
from benchmark.errors import SagoError
from benchmark.stats.leaderboard import Entry, build_leaderboard, check_one_dtype
from benchmark.stats.summary import AnalysisOptions, summarize

FAST = AnalysisOptions(seed=3, resamples=100)


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    deltas = synthetic_deltas(example_levels(MODELS, datasets=("d1", "d2")), n_items=6, seed=1)
    return [
        Entry(
            m,
            validated_submission(m),
            SummaryDocument.from_json(
                summarize(deltas[deltas["model"] == m], model=m, set_name="s", version="v1", options=FAST)
            ),
            f"submissions/{m}/summary.json",
            example_run(m),
        )
        for m in MODELS
    ]


def _in(entry: Entry, dtype: str | None) -> Entry:
    run = example_run(entry.slug)
    run["dtype"] = dtype
    return replace(entry, run=run)


def test_a_bfloat16_result_beside_float32_ones_is_refused_naming_both(entries: list[Entry]) -> None:
    mixed = [entries[0], _in(entries[1], "bfloat16"), entries[2]]
    with pytest.raises(SagoError) as refused:
        build_leaderboard(mixed, set_name="s", version="v1", options=FAST)
    message = str(refused.value)
    assert "\n" not in message
    assert f"{MODELS[0]} ran in float32 but {MODELS[1]} in bfloat16" in message
    assert "re-run one of them" in message


def test_one_dtype_builds_and_the_board_shows_it(entries: list[Entry]) -> None:
    board = build_leaderboard(entries, set_name="s", version="v1", options=FAST).to_json()
    assert {m["run"]["dtype"] for m in board["models"]} == {"float32"}
    all_bf16 = [_in(e, "bfloat16") for e in entries]
    check_one_dtype(all_bf16)  # a board of bfloat16 results alone is one measurement


def test_unknown_dtypes_and_pending_models_are_not_compared(entries: list[Entry]) -> None:
    api_run = _in(entries[1], None)  # an API run records no dtype
    pending = replace(_in(entries[2], "bfloat16"), summary=None, summary_path=None)
    check_one_dtype([entries[0], api_run, pending])
