"""``make gpu-check``: its CPU dry run goes through every code path and prints one table."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from benchmark.models.loading import RowTokens, plan_gpu_batch
from benchmark.tools import gpu_check
from benchmark.tools.bench_engines import SHAPES, Workload
from benchmark.tools.gpu_check import DRY_RUN_FREE_BYTES, device_slug, main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a fresh interpreter through make, loading torch and the tiny models: ~20 s
def test_make_gpu_check_dry_run_prints_throughput_and_agreement() -> None:
    run = subprocess.run(
        ["make", "-s", "gpu-check", "ARGS=--dry-run", f"PY={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    tiny = next(line for line in lines if line.startswith("tiny"))
    assert tiny.split()[1:3] == ["4", "8"]  # batch, prompts
    assert float(tiny.split()[3]) > 0  # prompts/s
    assert tiny.split()[-2:] == ["n/a", "n/a"]  # no MFU on a CPU
    fp32 = next(line for line in lines if line.startswith("float32")).split()
    bf16 = next(line for line in lines if line.startswith("bfloat16")).split()
    # The float32 run is the reference here: it agrees with itself exactly ...
    assert fp32[2] == "100.0%" and all(float(x) == 0 for x in fp32[4:])
    # ... while bfloat16 moves the hidden states, so the comparison really measures something.
    assert float(bf16[-1]) > 0
    assert any(line.startswith("ESTIMATE") and "not measured" in line for line in lines)
    # a dry run's report goes to the temporary folder, never into the checkout's docs/bench
    assert lines[-1] == f"wrote {Path(tempfile.gettempdir()) / 'gpu-check-cpu-dry-run.json'}"
    assert not (ROOT / "docs" / "bench" / "gpu-check-cpu-dry-run.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_without_a_gpu_it_says_how_to_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ARGS=--dry-run" in err


@pytest.mark.slow  # the same dry run again: ~30 s
def test_make_gpu_check_dry_run_writes_the_engines_side_by_side_as_json(tmp_path: Path) -> None:
    """Part 3 and the JSON report, from a dry run through make."""
    out = tmp_path / "gpu-check.json"
    run = subprocess.run(
        ["make", "-s", "gpu-check", f"ARGS=--dry-run --out {out}", f"PY={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["device"] == "cpu-dry-run" and report["dtype"] == "float32"
    plan = report["planned_batch"]["tiny"]
    tokens = RowTokens(prompt=120, baseline=8, new=8)  # the dry run's longest prompt, y_0 and token limit
    assert plan == plan_gpu_batch(SHAPES["tiny"].config(), DRY_RUN_FREE_BYTES, tokens, torch.float32).record()
    planned = plan["batch_size"]
    assert planned == 8  # 8 rows of ~0.3 MiB in 80 % of 4 MiB: the given 4 and the planned 8 are both timed
    engines = [e for e in report["engines"] if e["engine"] != "vllm"]
    assert {(e["batch_size"], e["planned"]) for e in engines} == {(4, False), (planned, True)}
    for size in (4, planned):
        side = {e["engine"]: e for e in engines if e["batch_size"] == size}
        assert list(side) == ["generate", "single_prefill", "static_graph"]
        assert side["generate"]["ratio_to_generate"] == 1.0
        for e in side.values():
            assert e["prompts_per_s"] > 0
            assert e["ratio_to_generate"] == pytest.approx(
                e["prompts_per_s"] / side["generate"]["prompts_per_s"]
            )
            assert e["peak_memory_gib"] is None  # NaN on a CPU, null in JSON
    assert report["agreement"][0]["dtype"] == "float32" and report["evidence"] == []
    assert f"wrote {out}" in run.stdout and "ratio_to_generate" in run.stdout
    if importlib.util.find_spec("vllm") is None:
        vllm = next(e for e in report["engines"] if e["engine"] == "vllm")
        assert vllm["note"] == "vllm not importable: skipped" and vllm["prompts_per_s"] is None


def test_the_report_is_named_after_the_device_and_may_replace_only_its_own_kind() -> None:
    assert device_slug("NVIDIA H200") == "nvidia-h200" and device_slug("!!") == "gpu"
    assert main(["--dry-run", "--out", "README.md"]) == 2  # refused before anything runs


def test_vllm_is_skipped_with_a_row_saying_so_when_it_is_not_importable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gpu_check.importlib.util, "find_spec", lambda name: None)
    [row] = gpu_check.time_vllm(
        SHAPES["tiny"], Workload(2, 2, 4, 8, 2, 2, seed=0), dtype=torch.float32, planned=2
    )
    assert (
        row.engine == "vllm" and row.note == "vllm not importable: skipped" and math.isnan(row.prompts_per_s)
    )
