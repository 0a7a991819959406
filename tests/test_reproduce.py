"""``make reproduce``: settings come from the committed run.json, differences are named per file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmark.harness.reproduce import diff_results, main, rerun_options
from benchmark.results import ResultsFolder

COMMITTED = (
    Path(__file__).resolve().parents[1]
    / "submissions"
    / "huggingfacetb__smollm2-135m-instruct-q4_1"
    / "results"
    / "sago-v1"
    / "v1"
)


@pytest.fixture
def two_copies(tmp_path: Path) -> tuple[Path, Path]:
    copies = []
    for name in ("committed", "fresh"):
        folder = tmp_path / name
        for entry in ("records", "activations"):
            shutil.copytree(COMMITTED / entry, folder / entry)
        shutil.copy2(COMMITTED / "run.json", folder / "run.json")
        copies.append(folder)
    return copies[0], copies[1]


def test_identical_results_have_no_differences(two_copies: tuple[Path, Path]) -> None:
    assert diff_results(*two_copies) == []


def test_a_changed_number_is_named_with_its_column_and_count(two_copies: tuple[Path, Path]) -> None:
    committed, fresh = two_copies
    path = fresh / "records" / "gsm8k.parquet"
    frame = pd.read_parquet(path)
    frame.loc[3, "logprob_sum"] += 1e-3
    frame.to_parquet(path, index=False)
    (fresh / "activations" / "jeopardy.safetensors").unlink()
    problems = diff_results(committed, fresh)
    assert problems[0].startswith("records/gsm8k.parquet: bytes differ (changed rows: logprob_sum 1/")
    assert problems[1] == "activations/jeopardy.safetensors: only in the committed result"
    assert len(problems) == 2


def test_settings_come_from_run_json_and_a_wrong_profile_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = ResultsFolder(COMMITTED).read_run()
    run = document.to_json()
    options = rerun_options(document, run["profile"]["name"])
    assert (options["batch_size"], options["engine"], options["threads"]) == (
        run["batch_size"],
        run["engine"],
        run["hardware"]["torch_threads"],
    )
    assert main(["huggingfacetb__smollm2-135m-instruct-q4_1", "--profile", "paper"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"use PROFILE={run['profile']['name']}" in err
    assert main(["--profile", "smoke"]) == 2
    assert "MODEL=<slug>" in capsys.readouterr().err


def test_float_noise_within_tolerance_is_equal_within_tolerance(two_copies: tuple[Path, Path]) -> None:
    """A re-run on another CPU whose responses are identical and whose floats move by noise is reported as
    "equal within tolerance" with its largest differences, never as a bare failure; a changed response or
    a float beyond the tolerance still fails."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from benchmark.harness.reproduce import RECORD_RTOL, compare

    committed, fresh = two_copies
    path = fresh / "records" / "gsm8k.parquet"
    frame = pd.read_parquet(path)
    frame.loc[3, "logprob_sum"] *= 1 + RECORD_RTOL / 10
    frame.to_parquet(path, index=False)
    tensors = load_file(str(fresh / "activations" / "jeopardy.safetensors"))
    key = sorted(tensors)[0]
    tensors[key] = np.nextafter(tensors[key], np.float16(np.inf))  # one float16 ulp everywhere
    save_file(tensors, str(fresh / "activations" / "jeopardy.safetensors"))
    verdict = compare(committed, fresh)
    assert len(verdict.differences) == 2 and verdict.failures == []
    assert "equal within tolerance" in verdict.lines("m")[0] and "logprob_sum" in verdict.lines("m")[0]

    frame.loc[3, "logprob_sum"] += 1.0
    frame.to_parquet(path, index=False)
    assert "logprob_sum beyond tolerance in 1 rows" in compare(committed, fresh).failures[0]
    frame.loc[3, "response"] = "something else"
    frame.to_parquet(path, index=False)
    assert "response differ" in compare(committed, fresh).failures[0]


RUN_TINY = """
import sys
import benchmark
from benchmark.testing import tiny_backend

variants = benchmark.load_variant_set("sago-v1", "v1")
benchmark.evaluate(tiny_backend(), variants, sys.argv[1], profile="bench", datasets=["gsm8k"], threads=1,
                   progress=False)
print(__import__("torch").backends.cpu.get_cpu_capability())
"""


@pytest.mark.slow
def test_a_rerun_under_another_cpu_capability_is_identical_or_within_tolerance(tmp_path: Path) -> None:
    """The same small run made in two processes whose torch kernels use different vector widths (the
    harness's AVX2 setting and torch's plain "default" kernels) is judged identical or equal within the
    stated tolerance — never a failure for float noise."""
    import os
    import subprocess
    import sys

    from benchmark.harness.reproduce import compare

    seen = []
    for capability in ("avx2", "default"):
        env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
        done = subprocess.run(
            [sys.executable, "-c", RUN_TINY, str(tmp_path / capability)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        seen.append(done.stdout.strip().splitlines()[-1])
    assert seen == ["AVX2", "DEFAULT"]
    verdict = compare(tmp_path / "avx2", tmp_path / "default")
    assert verdict.failures == [], verdict.failures
    assert "equal" in verdict.lines("tiny")[0]
