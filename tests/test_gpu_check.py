"""``make gpu-check``: its CPU dry run goes through every code path and prints one table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmark.tools.gpu_check import main

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


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_without_a_gpu_it_says_how_to_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ARGS=--dry-run" in err
