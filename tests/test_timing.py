"""The timing tools' shared core: the requests a profile runs, the clocks, the table and the JSON report."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from helpers.toy import toy_variant_set

from benchmark.harness.collect import select_tasks
from benchmark.profiles import get_profile
from benchmark.schema import BASELINE_FAMILY
from benchmark.tools.timing import Laps, profile_batches, profile_tasks, table, timed, write_report


def test_a_profiles_requests_are_its_rows_and_a_rerun_control_per_baseline_in_any_batching() -> None:
    variant_set, profile = toy_variant_set(), get_profile("smoke")
    rows = select_tasks(variant_set, profile, None)
    tasks = profile_tasks(variant_set, profile, None)
    assert len(tasks) == len(rows) + sum(t.family == BASELINE_FAMILY for t in rows)
    for size in (1, 3, 64):
        batches = profile_batches(variant_set, profile, None, size)
        assert sorted(t.key for b in batches for t in b.tasks) == sorted(t.key for t in tasks)
        assert all(len(b.tasks) <= size for b in batches if b.phase != "rerun")


def test_the_warm_up_runs_untimed_and_both_clocks_are_read() -> None:
    calls: list[str] = []

    def work() -> int:
        calls.append("work")
        time.sleep(0.05)
        return 7

    clock = timed(work, warm_up=lambda: calls.append("warm") or time.sleep(0.2))
    assert calls == ["warm", "work"] and clock.value == 7
    assert 0.04 < clock.timing.seconds < 0.2  # the warm-up's 0.2 s is not in it
    assert clock.timing.cpu_seconds < clock.timing.seconds  # sleeping costs no CPU
    assert math.isnan(clock.timing.peak_memory_gib)  # no CUDA device given


def test_laps_add_up_per_phase() -> None:
    laps = Laps(None)
    for _ in range(2):
        with laps.lap("prefill"):
            time.sleep(0.01)
        with laps.lap("decode"):
            pass
    assert set(laps.seconds) == {"prefill", "decode"} and laps.seconds["prefill"] >= 0.02


def test_the_table_aligns_headers_as_their_columns_and_prints_nan_as_asked() -> None:
    columns = [
        ("name", "<6", lambda r: r[0]),
        ("GFLOP/s", ">7.1f", lambda r: r[1]),
        ("MFU", ">6.1%", lambda r: r[2]),
    ]
    rows = [["a", 95.94, 0.123], ["b", float("nan"), float("nan")], ("total", "", 1.0)]
    assert table(columns, rows, rule=True, nan="n/a") == [
        "name   GFLOP/s    MFU",
        "---------------------",
        "a         95.9  12.3%",
        "b          n/a    n/a",
        "total          100.0%",
    ]
    assert table(columns, rows[1:2])[1] == "b          nan    nan"


def test_the_report_carries_its_version_the_machine_and_no_nan(tmp_path: Path) -> None:
    path = write_report(tmp_path / "r.json", {"rows": [{"mfu": float("nan"), "seconds": 1.5}]})
    report = json.loads(path.read_text(encoding="utf-8"))
    assert report["schema_version"] == 1 and report["rows"] == [{"mfu": None, "seconds": 1.5}]
    assert report["meta"]["hardware"]["cpu_count"] > 0 and report["meta"]["commit"]
