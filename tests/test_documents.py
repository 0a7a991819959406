"""Typed documents: each current version's golden file loads and serialises to the same bytes; older and
newer versions load or are refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark import jsonio
from benchmark.documents import LeaderboardDocument, PlanDocument, RunDocument, RunProfile, SummaryDocument
from benchmark.errors import SagoError
from benchmark.jsonio import plain_json
from benchmark.results import ResultsFolder, write_json
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION, RECORDS_SCHEMA_VERSION, SUMMARY_SCHEMA_VERSION
from benchmark.stats.leaderboard import load_leaderboard
from benchmark.stats.summary import load_summary

GOLDEN = Path(__file__).parent / "golden"
# run_v1.json: a committed run.json (smollm2 on sago-v1/v1). plan_v1.json: that run's plan, three keys kept.
# summary_v3.json, leaderboard_v3.json: summarize + build_leaderboard over synthetic deltas
# (seed 7, 200 resamples);
# leaderboard_v2.json: the schema-2 file, kept to show it is refused.


def _object(path: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_golden_run_json_reads_typed_and_writes_the_same_bytes(tmp_path: Path) -> None:
    path = GOLDEN / f"run_v{RECORDS_SCHEMA_VERSION}.json"
    run = RunDocument.from_json(_object(path), path)
    assert run.schema_version == RECORDS_SCHEMA_VERSION
    assert run.profile == RunProfile(
        name="smoke",
        items_per_dataset=4,
        all_strengths=False,
        max_new_tokens=32,
        description="CPU check: 4 items per dataset, weakest and strongest levels, 32 tokens",
    )
    assert (
        run.datasets is None and run.variant_set_sha256 is not None and run.nested_variant_set_sha256 is None
    )
    assert run.finished_at == "2026-11-30T11:43:57+00:00" and run.files_given
    assert run.files is not None and all(name.startswith(("records/", "activations/")) for name in run.files)
    assert run.is_run_of(variant_set_sha256=run.variant_set_sha256, profile="smoke", datasets=None)
    assert not run.is_run_of(variant_set_sha256=run.variant_set_sha256, profile="smoke", datasets=("gsm8k",))
    assert plain_json(run.to_json()) == path.read_text(encoding="utf-8")
    # the results folder reads the same document
    folder = ResultsFolder(tmp_path)
    write_json(folder.run, run.to_json())
    assert folder.read_run() == RunDocument.from_json(run.to_json(), folder.run)


def test_golden_plan_has_no_version_and_reads_as_version_1() -> None:
    path = GOLDEN / "plan_v1.json"
    data = _object(path)
    assert "schema_version" not in data
    plan = PlanDocument.from_json(data, path)
    assert (plan.schema_version, plan.rank, plan.world_size, len(plan.keys)) == (1, 0, 1, 3)
    shared = dict(plan.shared())
    assert "rank" not in shared and "keys" not in shared and shared["batch_size"] == "32"
    assert plan.started_at == "2026-11-30T11:29:06+00:00"
    other_rank = PlanDocument.from_json({**data, "rank": 1, "keys": ["x"], "started_at": "later"})
    assert other_rank.shared() == plan.shared()
    assert PlanDocument.from_json({**data, "seed": 7}).shared() != plan.shared()
    assert plain_json(plan.to_json()) == path.read_text(encoding="utf-8")


def test_golden_summary_and_leaderboard_load_and_write_the_same_bytes() -> None:
    for document, name in (
        (SummaryDocument, f"summary_v{SUMMARY_SCHEMA_VERSION}.json"),
        (LeaderboardDocument, f"leaderboard_v{LEADERBOARD_SCHEMA_VERSION}.json"),
    ):
        loaded = document.read(GOLDEN / name)
        assert loaded.set == "sago-v1" and loaded.version == "v1"
        assert jsonio.dumps(loaded.to_json()) == (GOLDEN / name).read_text(encoding="utf-8")
    summary = load_summary(GOLDEN / "summary_v2.json")
    assert summary.model == "acme__golden" and summary.per_item.rows[0]["item_id"]
    board = load_leaderboard(GOLDEN / "leaderboard_v4.json")
    assert board.models.rows[0]["slug"] == "acme__golden" and board.primary_epsilon == 0.05
    run = board.models.rows[0]["run"]
    assert run is not None and run["token_cap"] == 48 and run["truncated"][-1]["dataset"] == "all"


def test_the_leaderboards_tables_are_typed_and_indexed() -> None:
    board = LeaderboardDocument.read(GOLDEN / "leaderboard_v4.json")
    raw = _object(GOLDEN / "leaderboard_v4.json")
    assert list(board.cells) == raw["cells"] and list(board.reversals) == raw["reversals"]
    cell = raw["cells"][-1]
    found = board.cells.first(model=cell["model"], dataset=cell["dataset"], measure=cell["measure"])
    assert found == cell
    assert board.cells.where(model="nobody") == [] and board.cells.first(model="nobody") is None
    assert board.datasets == tuple(raw["datasets"]) and board.headline_measures == tuple(
        raw["headline_measures"]
    )
    assert [m["name"] for m in board.measures_of("mirroring")] == ["mirroring"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cells": {"model": "a"}}, "cells: expected a list"),
        ({"pairwise": [1]}, "pairwise.0: expected an object"),
        ({"cells": [{"model": 3}]}, "cells: expected text or null in row 0's 'model'"),
        ({"datasets": [1]}, "datasets.0: expected text"),
        ({"measures": [{"axis": "x"}]}, "measures: expected rows that each have a 'name'"),
        ({"primary_epsilon": True}, "primary_epsilon: expected a number"),
    ],
)
def test_a_malformed_table_is_refused_with_one_line(change: dict[str, object], message: str) -> None:
    board = _object(GOLDEN / "leaderboard_v4.json") | change
    with pytest.raises(SagoError) as err:
        LeaderboardDocument.from_json(board, "lb.json")
    assert _one_line(err) == f"lb.json: {message}; re-run `sago analyze`"


def test_a_leaderboard_without_a_key_readers_need_is_refused() -> None:
    board = _object(GOLDEN / "leaderboard_v4.json")
    del board["markers"]
    document = LeaderboardDocument.from_json(board, "lb.json")
    with pytest.raises(SagoError, match=r"^lb.json: leaderboard key 'markers' is missing; re-run"):
        document.require("lb.json")


def test_an_older_summary_still_loads() -> None:
    old = SummaryDocument.read(GOLDEN / "summary_v1.json")
    assert old.schema_version == 1 and old.model == "acme__golden"


def _one_line(err: pytest.ExceptionInfo[SagoError]) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_an_older_leaderboard_is_refused_with_one_line(tmp_path: Path) -> None:
    board = _object(GOLDEN / "leaderboard_v3.json")
    path = write_json(tmp_path / "leaderboard.json", board, jsonio.dumps)
    with pytest.raises(SagoError) as err:
        load_leaderboard(path)
    assert _one_line(err).endswith(
        "leaderboard schema_version 3 is older than this sago-bench reads (4); re-run `sago analyze`"
    )


@pytest.mark.parametrize(
    ("document", "golden"),
    [
        (RunDocument, "run_v1.json"),
        (PlanDocument, "plan_v1.json"),
        (SummaryDocument, "summary_v2.json"),
        (LeaderboardDocument, "leaderboard_v4.json"),
    ],
)
def test_a_newer_version_is_refused_with_one_line(document: type[RunDocument], golden: str) -> None:
    newer = document.NEWEST + 1
    with pytest.raises(SagoError) as err:
        document.from_json(_object(GOLDEN / golden) | {"schema_version": newer}, golden)
    assert _one_line(err) == (
        f"{golden}: {document.KIND} schema_version {newer} is newer than this "
        f"sago-bench reads ({document.NEWEST}); upgrade sago-bench"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"profile": {"name": 3}}, "profile.name: expected text"),
        ({"profile": {"items_per_dataset": True}}, "profile.items_per_dataset: expected an integer"),
        ({"profile": {"all_strengths": "yes"}}, "profile.all_strengths: expected true or false"),
        ({"files": {"records/a.parquet": 1}}, "files.records/a.parquet: expected text"),
        ({"timings": "soon"}, "timings: expected an object"),
        ({"timings": {"model_seconds": "2"}}, "timings.model_seconds: expected a number"),
        ({"timings": {"peak_rss_mib": 10**400}}, "timings.peak_rss_mib: expected a number within"),
    ],
)
def test_an_ill_typed_run_part_refuses_the_file(change: dict[str, object], message: str) -> None:
    with pytest.raises(SagoError) as err:
        RunDocument.from_json({"schema_version": 1} | change, "run.json")
    assert _one_line(err).startswith(f"run.json: {message}") and _one_line(err).endswith("`sago evaluate`")


def test_older_and_bare_runs_still_load() -> None:
    run = RunDocument.from_json({"schema_version": 1, "variant_set": {"sha256": "e" * 64}, "files": {}})
    assert run.finished_at is None and run.nested_variant_set_sha256 == "e" * 64 and run.files_given
    bare = RunDocument.from_json({"schema_version": 1})
    assert bare.profile is None and bare.profile_name is None and not bare.files_given


def test_a_missing_version_is_refused_except_for_the_plan() -> None:
    run = _object(GOLDEN / "run_v1.json")
    del run["schema_version"]
    with pytest.raises(SagoError, match=r"^run.json: run has no integer schema_version; re-run `sago"):
        RunDocument.from_json(run, "run.json")


def test_a_broken_or_missing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{", encoding="utf-8")
    with pytest.raises(SagoError, match=r"summary.json: not valid JSON \(.*\); re-run `sago analyze`$"):
        SummaryDocument.read(tmp_path / "summary.json")
    with pytest.raises(SagoError, match=r"nothing.json: no such leaderboard \(run `sago analyze`\)$"):
        LeaderboardDocument.read(tmp_path / "nothing.json")
    (tmp_path / "plan.json").write_text('{"rank": "0"}', encoding="utf-8")
    with pytest.raises(SagoError, match=r"^plan.json: rank: expected an integer; rerun with --force$"):
        PlanDocument.from_json(_object(tmp_path / "plan.json"), "plan.json")
