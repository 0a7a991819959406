"""summary.json and leaderboard.json: contents, determinism, version refusal, the golden v1/v2 summaries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.leaderboard_example import example_leaderboard, validated_submission
from helpers.synthetic import example_levels, synthetic_deltas

from benchmark import jsonio
from benchmark.documents import SummaryDocument
from benchmark.errors import SagoError
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION, SUMMARY_SCHEMA_VERSION
from benchmark.stats.leaderboard import Entry, build_leaderboard, load_leaderboard
from benchmark.stats.summary import AnalysisOptions, load_summary, summarize

TESTS = Path(__file__).parent
GOLDEN_V1 = TESTS / "golden" / "summary_v1.json"
GOLDEN_V2 = TESTS / "golden" / "summary_v2.json"
GOLDEN = TESTS / "golden" / "summary_v3.json"
EXAMPLE = TESTS / "fixtures" / "leaderboard_example.json"
DOC = TESTS.parent / "docs" / "LEADERBOARD_JSON.md"
FAST = AnalysisOptions(seed=3, resamples=200)
MODELS = ("acme__m-a", "acme__m-b", "acme__m-c")


def as_on_disk(document: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(jsonio.dumps(document))
    return loaded


@pytest.fixture(scope="module")
def summaries() -> list[dict[str, Any]]:
    levels = example_levels(MODELS, datasets=("d1", "d2", "d3"))
    deltas = synthetic_deltas(levels, n_items=8, seed=1)
    return [
        as_on_disk(summarize(deltas[deltas["model"] == m], model=m, set_name="s", version="v1", options=FAST))
        for m in MODELS
    ]


@pytest.fixture(scope="module")
def board(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    entries = [
        Entry(m, validated_submission(m), SummaryDocument.from_json(s), f"submissions/{m}/summary.json")
        for m, s in zip(MODELS, summaries, strict=True)
    ]
    entries.append(Entry("acme__waiting", validated_submission("acme__waiting"), None, None))
    return as_on_disk(build_leaderboard(entries, set_name="s", version="v1", options=FAST).to_json())


def test_summary_cells_are_means_of_its_per_item_rows(summaries: list[dict[str, Any]]) -> None:
    summary = summaries[0]
    assert summary["schema_version"] == SUMMARY_SCHEMA_VERSION and summary["datasets"] == ["d1", "d2", "d3"]
    items = [r for r in summary["per_item"] if r["measure"] == "bleu"]
    assert all(r["dataset"] != "all" for r in summary["per_item"])
    for cell in (c for c in summary["cells"] if c["measure"] == "bleu"):
        values = [r["s"] for r in items if cell["dataset"] in ("all", r["dataset"])]
        assert cell["sgs"] == pytest.approx(np.mean(values), rel=1e-5)
        assert cell["ci_low"] <= cell["sgs"] <= cell["ci_high"]
        assert [t["epsilon"] for t in cell["tests"]] == [0.01, 0.05, 0.1]


def test_summary_refuses_a_table_of_another_model() -> None:
    deltas = synthetic_deltas({"acme__x": {"d": 0.1}}, n_items=2)
    with pytest.raises(ValueError, match="acme__x"):
        summarize(deltas, model="acme__y", set_name="s", version="v1", options=FAST)


def test_json_is_canonical_and_nan_becomes_null() -> None:
    text = jsonio.dumps({"b": float("nan"), "a": 1 / 3, "c": [np.float32(2.5), float("inf")]})
    assert text == '{\n "a": 0.333333,\n "b": null,\n "c": [\n  2.5,\n  null\n ]\n}\n'


def test_rebuilds_are_byte_identical(summaries: list[dict[str, Any]], board: dict[str, Any]) -> None:
    levels = example_levels(MODELS, datasets=("d1", "d2", "d3"))
    deltas = synthetic_deltas(levels, n_items=8, seed=1)
    again = summarize(
        deltas[deltas["model"] == MODELS[0]], model=MODELS[0], set_name="s", version="v1", options=FAST
    )
    assert jsonio.dumps(again) == jsonio.dumps(summaries[0])


def test_leaderboard_lists_pending_models_only_in_models(board: dict[str, Any]) -> None:
    status = {m["slug"]: m["status"] for m in board["models"]}
    assert status == {**dict.fromkeys(MODELS, "complete"), "acme__waiting": "pending"}
    assert {c["model"] for c in board["cells"]} == set(MODELS)
    assert board["schema_version"] == LEADERBOARD_SCHEMA_VERSION
    assert next(m for m in board["models"] if m["status"] == "pending")["summary"] is None


def test_leaderboard_corrections_span_all_models(board: dict[str, Any]) -> None:
    primary = [t for c in board["cells"] if c["dataset"] != "all" for t in c["tests"] if t["epsilon"] == 0.05]
    assert len(primary) == 3 * 3 * 9
    assert all(t["p_holm"] >= t["p_bh"] >= t["p_exact"] for t in primary if t["testable"])
    # 8 items per dataset: a two-sided paired floor of 2/256, times 81 comparisons in the family, cannot
    # reach alpha, so no model is ranked on a dataset proper; the pooled 24 items can be
    pairs = [r for r in board["pairwise"] if r["dataset"] == "d1"]
    assert pairs and all(r["verdict"] == "not testable" for r in pairs)
    ranks = {c["rank"] for c in board["cells"] if c["dataset"] == "d1" and c["measure"] == "bleu"}
    assert ranks == {None}
    pooled = {c["rank"] for c in board["cells"] if c["dataset"] == "all" and c["measure"] == "bleu"}
    assert pooled <= {1, 2, 3, None}


def test_leaderboard_keys_are_the_documented_ones(board: dict[str, Any]) -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)`", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE))
    assert set(board) <= documented | {"set", "version"}
    assert {"cells", "reversals", "kendall_w", "models", "sample_size"} <= set(board)


def test_newer_schema_versions_are_refused(tmp_path: Path, summaries: list[dict[str, Any]]) -> None:
    (tmp_path / "summary.json").write_text(
        jsonio.dumps(summaries[0] | {"schema_version": SUMMARY_SCHEMA_VERSION + 1}), encoding="utf-8"
    )
    with pytest.raises(SagoError, match="newer than this sago-bench reads") as err:
        load_summary(tmp_path / "summary.json")
    assert "\n" not in str(err.value)
    (tmp_path / "lb.json").write_text(jsonio.dumps({"schema_version": LEADERBOARD_SCHEMA_VERSION + 1}))
    with pytest.raises(SagoError, match="upgrade sago-bench"):
        load_leaderboard(tmp_path / "lb.json")


def test_older_leaderboards_are_refused_with_a_rerun_hint(tmp_path: Path) -> None:
    (tmp_path / "lb.json").write_text(jsonio.dumps({"schema_version": 1, "cells": []}))
    with pytest.raises(
        SagoError, match=r"schema_version 1 is older than this sago-bench reads \(4\); re-run"
    ) as err:
        load_leaderboard(tmp_path / "lb.json")
    assert "\n" not in str(err.value)


def test_every_marker_comes_from_the_corrected_p(board: dict[str, Any]) -> None:
    for cell in board["cells"]:
        for stats in (cell, cell["extended"]):
            primary = next(t for t in stats["tests"] if t["epsilon"] == board["primary_epsilon"])
            assert stats["marker"] == primary["marker"] and stats["verdict"] == primary["verdict"]
            for test in stats["tests"]:
                assert test["n_items"] == stats["n_items"]
                if test["verdict"] == "significant":
                    assert test["marker"] and test["p_holm"] < 0.05
                else:
                    assert test["marker"] == ""
    assert board["correction"]["method"] == "holm" and board["aggregates"][0]["name"] == "paper"
    assert [c["id"] for c in board["claims"]][:2] == ["instability", "grid"]


@pytest.mark.parametrize("text", ["{not json", '{"cells": []}', '{"schema_version": "1"}'])
def test_malformed_documents_are_one_line_errors(tmp_path: Path, text: str) -> None:
    (tmp_path / "summary.json").write_text(text)
    with pytest.raises(SagoError, match="summary.json"):
        load_summary(tmp_path / "summary.json")


def test_older_summaries_still_load_but_cannot_feed_a_v3_leaderboard() -> None:
    golden = load_summary(GOLDEN_V1)
    assert golden.schema_version == 1 and golden.model == "acme__golden" and golden.set and golden.version
    entry = Entry("acme__golden", validated_submission("acme__golden"), golden, "x/summary.json")
    with pytest.raises(
        SagoError, match=r"x/summary.json: summary schema_version 1 is older than the leaderboard"
    ):
        build_leaderboard([entry], set_name=golden.set, version=golden.version, options=FAST)
    older = load_summary(GOLDEN_V2)
    entry = Entry("acme__golden", validated_submission("acme__golden"), older, "y/summary.json")
    with pytest.raises(
        SagoError, match=r"y/summary.json: summary schema_version 2 is older .* needs \(3\); re-run"
    ):
        build_leaderboard([entry], set_name=older.set or "", version=older.version or "", options=FAST)


def test_golden_v3_summary_feeds_a_leaderboard() -> None:
    golden = load_summary(GOLDEN)
    assert golden.schema_version == 3 and golden.model == "acme__golden" and golden.set and golden.version
    entry = Entry("acme__golden", validated_submission("acme__golden"), golden, "x")
    board = as_on_disk(
        build_leaderboard([entry], set_name=golden.set, version=golden.version, options=FAST).to_json()
    )
    cell = next(c for c in board["cells"] if (c["dataset"], c["measure"]) == ("all", "bleu"))
    assert cell["rank"] == 1 and cell["tie_group"] == 1  # one model: nothing to compare, rank 1 of 1
    assert {f["note"] for f in board["friedman"]} == {"needs ≥3 models"}
    assert board["kendall_tau"][0]["tau_b"] is None  # one model: no ranking to correlate
    assert board["kendall_tau"][0]["note"] == "needs ≥3 models"


def test_example_fixture_is_current() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") == jsonio.dumps(example_leaderboard().to_json()), (
        "re-generate: python -m tests.helpers.leaderboard_example tests/fixtures/leaderboard_example.json"
    )


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON document, list positions collapsed to ``[]``."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in {f"{prefix}.{k}"} | key_paths(v, f"{prefix}.{k}")}
    if isinstance(value, list):
        return {p for v in value for p in key_paths(v, prefix + "[]")}
    return set()


def test_summary_layout_still_matches_the_golden_v3(summaries: list[dict[str, Any]]) -> None:
    # If this fails the summary format changed: bump SUMMARY_SCHEMA_VERSION, keep reading the old ones, and
    # add a new golden file beside the old ones.
    def layout(document: dict[str, Any]) -> set[str]:  # `axes` holds whatever the scorers recorded
        return {k for k in key_paths(document) if not k.startswith(".axes.")}

    assert layout(summaries[0]) == layout(load_summary(GOLDEN).to_json())


def test_summary_does_not_depend_on_row_order() -> None:
    deltas = synthetic_deltas({"acme__x": {"d1": 0.1, "d2": 0.2}}, n_items=5, seed=4)
    shuffled = deltas.sample(frac=1.0, random_state=0).reset_index(drop=True)
    first = summarize(deltas, model="acme__x", set_name="s", version="v1", options=FAST)
    second = summarize(shuffled, model="acme__x", set_name="s", version="v1", options=FAST)
    assert jsonio.dumps(first) == jsonio.dumps(second)
