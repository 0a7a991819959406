"""``make bench-gpu``: real shapes, FLOP accounting, and the CPU dry run of the same code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from benchmark.tools.bench_engines import (
    SHAPES,
    Measurement,
    Shape,
    Workload,
    build_model,
    engine_ratios,
    format_table,
    main,
    matmul_params,
    random_prompts,
)


@pytest.mark.parametrize(
    ("name", "total", "matmul"),
    [
        ("llama-1b", 1_235_814_400, 1_235_814_400),  # Llama 3.2 1B: tied head counted once
        ("llama-8b", 8_030_261_248, 7_504_924_672),  # Llama 3.1 8B: input table excluded, head kept
    ],
)
def test_shapes_have_the_real_models_parameter_counts(name: str, total: int, matmul: int) -> None:
    model = build_model(SHAPES[name], device=torch.device("meta"), dtype=torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) == total
    assert matmul_params(model) == matmul


def test_matmul_params_known_answer_tied_or_not() -> None:
    # per layer: q 64*64 + k,v 2*64*32 + o 64*64 + mlp 3*64*128 + 2 norms 64 = 36992; 2 layers,
    # final norm 64, output head 512*64.
    expected = 2 * 36992 + 64 + 512 * 64
    for tied in (True, False):
        shape = Shape("t", 64, 2, 4, 2, 128, 512, tied=tied)
        assert matmul_params(build_model(shape, device=torch.device("meta"), dtype=torch.float32)) == expected


def test_random_prompts_are_seeded_and_in_range() -> None:
    workload = Workload(
        prompts=20, batch_size=4, min_prompt=40, max_prompt=120, new_tokens=5, baseline_tokens=7, seed=3
    )
    prompts, baselines = random_prompts(workload, vocab=1000)
    assert (prompts, baselines) == random_prompts(workload, vocab=1000)
    assert all(40 <= len(p) <= 120 for p in prompts) and len({len(p) for p in prompts}) > 5
    assert baselines is not None and all(len(b) == 7 for b in baselines)
    assert all(0 < t < 999 for p in prompts + baselines for t in p)
    none = random_prompts(Workload(3, 1, 40, 41, 5, 0, 0), vocab=1000)[1]
    assert none is None


def _row(engine: str, seconds: float, cpu: float) -> Measurement:
    return Measurement("m", engine, 4, 8, seconds, cpu, 1.0, 1.0, 1.0, math.nan, math.nan)


def test_ratio_uses_the_requested_clock_and_table_prints_na() -> None:
    rows = [_row("two_pass", 10.0, 8.0), _row("single_prefill", 7.0, 6.0)]
    assert engine_ratios(rows) == {"m": pytest.approx(0.7)}
    assert engine_ratios(rows, cpu_time=True) == {"m": pytest.approx(0.75)}
    assert engine_ratios(rows[:1]) == {}
    assert "n/a" in format_table(rows).splitlines()[-1]


def test_dry_run_runs_both_engines_on_the_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["--dry-run", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["schema_version"] == 1 and report["meta"]["hardware"]["cpu_count"] > 0
    assert report["meta"]["commit"]  # the checkout the numbers came from
    rows = report["rows"]
    assert [r["engine"] for r in rows] == ["two_pass", "single_prefill"]
    for row in rows:
        assert row["model"] == "tiny" and row["prompts"] == 8 and row["batch_size"] == 4
        assert row["prompts_per_s"] > 0 and row["generated_tokens_per_s"] > 0
        assert row["model_tokens_per_s"] > row["generated_tokens_per_s"]
        assert row["mfu"] is None and row["peak_memory_gib"] is None  # NaN on a CPU, null in JSON
    assert "single_prefill / two_pass CPU time" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_without_a_gpu_the_real_run_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "--dry-run" in capsys.readouterr().err
    assert main(["--dry-run", "--engines", "three_pass"]) == 2
    assert (
        "choose from ['draft', 'pooled', 'single_prefill', 'static_graph', 'two_pass']"
        in capsys.readouterr().err
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_run_reports_memory_and_mfu(tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    assert (
        main(
            [
                "--shapes",
                "llama-1b",
                "--prompts",
                "16",
                "--batch-size",
                "8",
                "--new-tokens",
                "16",
                "--baseline-tokens",
                "16",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    for row in json.loads(out.read_text())["rows"]:
        assert 0 < row["mfu"] < 1 and row["peak_memory_gib"] > 2.0
