"""``make reproduce``: settings come from the committed run.json, differences are named per file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmark.documents import RunDocument
from benchmark.errors import SagoError
from benchmark.harness.collect import PLANNER
from benchmark.harness.reproduce import diff_results, main, rerun_options
from benchmark.results import ResultsFolder
from benchmark.schema import BASELINE_VARIANT_ID, BOARD_SET_VERSION

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


def test_a_changed_number_and_a_missing_file_are_both_listed(two_copies: tuple[Path, Path]) -> None:
    committed, fresh = two_copies
    path = fresh / "records" / "gsm8k.parquet"
    frame = pd.read_parquet(path)
    frame.loc[3, "logprob_sum"] += 1e-3
    frame.to_parquet(path, index=False)
    (fresh / "activations" / "jeopardy.safetensors").unlink()
    problems = diff_results(committed, fresh)
    assert problems[0] == "records/gsm8k.parquet: bytes differ"
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
    with pytest.raises(SagoError, match=f"use PROFILE={run['profile']['name']}"):
        rerun_options(document, "paper")  # a run.json whose profile is not the one asked for
    slug = COMMITTED.parents[2].name
    # --profile names the folder: another profile's run is in <version>-<profile>/, absent here
    assert main([slug, "--profile", "paper", "--version", COMMITTED.name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no committed paper-profile result for sago-v1/{COMMITTED.name}" in err
    assert f"{COMMITTED.name}-paper" in err
    # without --version the published board's version (v2); its folder holds the evidence run, no cpu run
    board = ResultsFolder(COMMITTED.parent / BOARD_SET_VERSION).read_run().to_json()["profile"]["name"]
    assert board == "evidence" and main([slug, "--profile", "cpu"]) == 2
    assert f"no committed cpu-profile result for sago-v1/{BOARD_SET_VERSION}" in capsys.readouterr().err
    assert main(["--profile", "smoke"]) == 2
    assert "MODEL=<slug>" in capsys.readouterr().err
    # every committed result predates planner 2: its run.json records no planner, so it is re-planned by 1
    assert "planner" not in run and options["planner"] == 1
    assert rerun_options(RunDocument.from_json({**run, "planner": 2}), run["profile"]["name"])["planner"] == 2


def test_float_noise_within_tolerance_is_equal_within_tolerance(two_copies: tuple[Path, Path]) -> None:
    """A re-run on another CPU whose responses are identical and whose floats move by noise is reported as
    "equal within tolerance" with its largest differences, never as a bare failure; a changed response or
    a float beyond the tolerance still fails."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from benchmark.harness.reproduce import RECORD_RTOL, TOKEN_ATOL, compare

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

    # float32 log-softmax error accumulates per scored token: a sum over n tokens may move by n * 1e-4
    tokens = int(frame.loc[4, "baseline_tokens"])
    assert tokens > 1
    frame.loc[4, "logprob_sum"] += 0.9 * TOKEN_ATOL * tokens
    frame.to_parquet(path, index=False)
    assert compare(committed, fresh).failures == []
    frame.loc[4, "logprob_sum"] += 0.2 * TOKEN_ATOL * tokens + RECORD_RTOL * abs(frame.loc[4, "logprob_sum"])
    frame.to_parquet(path, index=False)
    assert "logprob_sum beyond tolerance in 1 rows" in compare(committed, fresh).failures[0]
    frame.loc[4, "entropy_mean"] += 2 * TOKEN_ATOL + RECORD_RTOL * abs(frame.loc[4, "entropy_mean"])
    frame.to_parquet(path, index=False)
    assert "entropy_mean beyond tolerance in 1 rows" in compare(committed, fresh).failures[1]
    frame.loc[3, "logprob_sum"] += 1.0
    frame.to_parquet(path, index=False)
    assert "logprob_sum beyond tolerance in 2 rows" in compare(committed, fresh).failures[0]
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


SAMPLE_SLUG = "local__tiny"


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A submissions folder holding a tiny local model's smoke result on one dataset of the frozen v2 set."""
    return _tiny_result(tmp_path_factory, PLANNER)


def _tiny_result(
    tmp_path_factory: pytest.TempPathFactory,
    planner: int,
    engine: str | None = "single_prefill",
    batch_size: int = 4,
) -> Path:
    """:func:`tiny_result`, its batches cut by ``planner`` (1: as every result made before planner 2), run
    by ``engine`` (None: the CPU's default) at ``batch_size`` prompts per forward."""
    import yaml

    from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission
    from benchmark.models.tiny import tiny_llama, tiny_tokenizer

    model = tmp_path_factory.mktemp("tiny-model")
    tiny_llama().save_pretrained(model, safe_serialization=True)
    tiny_tokenizer().save_pretrained(model)
    root = tmp_path_factory.mktemp("submissions")
    (root / SAMPLE_SLUG).mkdir()
    (root / SAMPLE_SLUG / "submission.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "Tiny",
                "model": {"kind": "local", "path": str(model)},
                "license": "MIT",
                "parameters": 100000,
                "contact": "tests",
            }
        )
    )
    options = EvaluateOptions(
        set_name="sago-v1",
        version="v2",
        profile="smoke",
        device="cpu",
        batch_size=batch_size,
        engine=engine,
        threads=1,
        datasets=("gsm8k",),
        force=False,
        progress=False,
        planner=planner,
    )
    evaluate_submission(SAMPLE_SLUG, options, root=root)
    return root


@pytest.fixture
def sample_root(tiny_result: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the tiny result (a test may tamper with it) as the submissions folder."""
    from benchmark import paths

    root = tmp_path / "submissions"
    shutil.copytree(tiny_result, root)
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", root)
    return root


SAMPLE = [SAMPLE_SLUG, "--profile", "smoke", "--version", "v2", "--sample", "2", "--seed", "3"]


def test_a_sampled_rerun_of_an_untouched_result_is_identical(
    sample_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make all` proves hours of evidence by re-running seeded batches with their committed composition:
    on an untouched result the sampled rows are equal, and the same seed picks the same batches."""
    assert main(SAMPLE) == 0
    first = capsys.readouterr().out
    # planner 2 (a new run): 48 batches, no phase of control batches
    assert "re-ran 3 of 48 batches (base-00000, var-" in first and "seed 3" in first
    assert f"{SAMPLE_SLUG}: sampled rows equal the committed result" in first
    assert main(SAMPLE) == 0
    assert capsys.readouterr().out == first
    assert main([*SAMPLE[:-1], "4"]) == 0
    assert capsys.readouterr().out.splitlines()[0] != first.splitlines()[0]


def test_a_result_cut_by_planner_1_reruns_with_planner_1_and_is_identical(
    tiny_result: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every committed result was cut by planner 1 and its run.json says nothing of planners: a sampled re-run
    must re-plan it with planner 1 (its batches, as committed), not with the planner new runs use, and find
    the same rows; the planner 2 result records its planner."""
    from benchmark import paths

    old = _tiny_result(tmp_path_factory, 1)
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", old)
    run = ResultsFolder(_records(old).parents[1]).read_run().to_json()
    assert "planner" not in run
    assert ResultsFolder(_records(tiny_result).parents[1]).read_run().to_json()["planner"] == PLANNER == 2
    assert main([*SAMPLE, "--sample", "40"]) == 0  # every batch of the run: 40 is more than it has
    out = capsys.readouterr().out
    assert "batches (base-00000" in out and "rerun-" in out  # planner 1's control phase was re-run
    assert f"{SAMPLE_SLUG}: sampled rows equal the committed result" in out


def _records(root: Path) -> Path:
    # a smoke run on v2 (whose board profile is evidence) lives in v2-smoke/
    return root / SAMPLE_SLUG / "results" / "sago-v1" / "v2-smoke" / "records" / "gsm8k.parquet"


def test_a_sampled_rerun_finds_a_changed_response_or_float(
    sample_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A committed result whose rows were edited fails the sampled re-run (exit 1, the column named): a
    changed response anywhere the sample reaches, or a log-prob moved beyond the tolerance."""
    path = _records(sample_root)
    original = pd.read_parquet(path)
    edited = original.copy()
    edited.loc[edited["variant_id"] != BASELINE_VARIANT_ID, "response"] = "forged"
    edited.to_parquet(path, index=False)
    assert main(SAMPLE) == 1
    assert "response differ" in capsys.readouterr().out

    edited = original.copy()
    edited["logprob_sum"] = edited["logprob_sum"] - 0.5
    edited.to_parquet(path, index=False)
    assert main(SAMPLE) == 1
    assert "logprob_sum beyond tolerance" in capsys.readouterr().out


def test_a_sampled_rerun_finds_changed_compact_activations(
    sample_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The per-layer cosines of a compact result are compared too."""
    from safetensors.numpy import load_file, save_file

    path = _records(sample_root).parents[1] / "activations" / "gsm8k.safetensors"
    tensors = load_file(str(path))
    save_file(
        {k: (v if k.endswith(f"|{BASELINE_VARIANT_ID}") else v * 0.5) for k, v in tensors.items()}, str(path)
    )
    assert main(SAMPLE) == 1
    assert "activations" in capsys.readouterr().out


def test_a_sampled_rerun_with_the_draft_engine_equals_the_committed_single_prefill_rows(
    sample_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--engine draft` re-runs the sampled batches with the baseline answer as a free draft: its greedy
    outputs, log-probs and cosines must be the committed single-prefill engine's; an unknown engine is one
    line before any model loads."""
    assert main([*SAMPLE, "--engine", "draft"]) == 0
    out = capsys.readouterr().out
    assert "engine draft instead of the committed single_prefill" in out
    assert "sampled rows equal the committed result" in out or "equal within tolerance" in out
    assert main([*SAMPLE, "--engine", "warp"]) == 2
    assert "warp" in capsys.readouterr().err


def test_a_result_of_the_default_cpu_engine_reproduces(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run made with no engine named on a CPU records the pooled engine and its plan's batch (4 forwards
    of 1 row: the committed tiny result's batch of 4); `make reproduce` re-runs it with pooled at 1 row
    per forward, so the same batches, and finds run.json's settings and every row equal, and a sampled
    re-run with single_prefill finds the same rows."""
    from benchmark import paths
    from benchmark.models.pooled import POOL

    root = _tiny_result(tmp_path_factory, PLANNER, engine=None, batch_size=1)
    run = ResultsFolder(_records(root).parents[1]).read_run()
    assert (run.engine, run.batch_size) == ("pooled", POOL)
    assert run.to_json()["model"]["engine_settings"]["pool"] == POOL
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", root)
    assert main(SAMPLE[:5]) == 0  # every batch, and run.json's determined settings (engine, batch_size)
    out = capsys.readouterr().out
    assert "batch 1, engine pooled" in out and "equal the committed result" in out
    assert main([*SAMPLE, "--engine", "single_prefill"]) == 0
    out = capsys.readouterr().out
    assert "engine single_prefill instead of the committed pooled" in out


APPLY_RECORDED = """
import os
os.environ["ATEN_CPU_CAPABILITY"] = "default"
from benchmark import cpu
print(cpu.apply_recorded("ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"))
print(cpu.apply_recorded("ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"))
import torch
print(torch.backends.cpu.get_cpu_capability())
try:
    cpu.apply_recorded("ATEN_CPU_CAPABILITY=default")
except RuntimeError as error:
    print("refused:", error)
"""


def test_a_rerun_is_made_under_the_cpu_setting_its_run_json_recorded() -> None:
    """A user's own ATEN_CPU_CAPABILITY wins for a new run, but a re-run of a committed result takes the
    setting that result recorded (set before torch loads, so torch's kernels follow it); once torch is
    loaded a different setting cannot act and is refused, not silently ignored."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", APPLY_RECORDED], capture_output=True, text=True, check=True)
    lines = done.stdout.strip().splitlines()
    assert lines == [
        "re-running under the committed run's CPU setting: ATEN_CPU_CAPABILITY=avx2",
        "None",
        "AVX2",
        "refused: torch is already imported: the recorded CPU setting cannot act in this process",
    ], done.stdout


def test_a_recorded_setting_only_names_the_harness_variables() -> None:
    """run.json is read back into the environment, so only the three variables, with plain values, pass."""
    from benchmark import cpu

    assert cpu.parse_recorded("LD_PRELOAD=/tmp/x.so ATEN_CPU_CAPABILITY=avx2;rm MKL_CBWR=AVX2") == {
        "MKL_CBWR": "AVX2"
    }


def test_a_sampled_rerun_says_when_the_committed_setting_cannot_act(
    sample_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a process that already loaded torch under another setting, the re-run still runs and says which
    setting it used (the verdict is then the tolerance comparison's)."""
    import json

    run = _records(sample_root).parents[1] / "run.json"
    document = json.loads(run.read_text())
    document["hardware"]["cpu_setting"] = "ATEN_CPU_CAPABILITY=sse41 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"
    run.write_text(json.dumps(document))
    import torch  # noqa: F401  (the test process has torch loaded, as any in-process caller would)

    main(SAMPLE)
    assert "note: torch is already imported" in capsys.readouterr().out


ORDER = """
import os, sys
from benchmark.harness import reproduce as r
original = r.use_committed_setting
def spy(run):
    print("torch loaded before the setting:", "torch" in sys.modules)
    original(run)
def stop(*args, **kwargs):
    print("setting:", os.environ["ATEN_CPU_CAPABILITY"])
    raise SystemExit(0)
r.use_committed_setting, r._options = spy, stop
slug = "huggingfacetb__smollm2-135m-instruct-q4_1"
if sys.argv[1] == "sample":
    r.reproduce_sample(slug, "evidence", "sago-v1", "v2", 1, 0)
else:
    r.reproduce(slug, "evidence", "sago-v1", "v2", keep=False)
"""


@pytest.mark.parametrize("mode", ["full", "sample"])
def test_both_reruns_apply_the_recorded_setting_before_anything_imports_torch(mode: str) -> None:
    """A user's own ATEN_CPU_CAPABILITY=default must give way to the avx2 the committed v2 run recorded:
    that only works while torch is not loaded, so neither re-run may import it first."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    done = subprocess.run(
        [sys.executable, "-c", ORDER, mode], capture_output=True, text=True, check=True, env=env
    )
    assert "torch loaded before the setting: False" in done.stdout, done.stdout
    assert "setting: avx2" in done.stdout, done.stdout


def test_another_engine_keeps_the_committed_plan_and_an_unknown_engine_is_refused() -> None:
    """A re-run keeps the committed run's own engine (single_prefill, whatever the new default) and its
    batch size; ``--engine draft`` re-runs the committed batches at the same prompts per forward, and
    ``--engine pooled`` at a quarter of them per forward, so its 4-forward calls plan the committed
    batches again; an unknown engine is one line, before any model loads."""
    from benchmark.harness.reproduce import _options
    from benchmark.models.pooled import POOL

    document = ResultsFolder(COMMITTED).read_run()
    run = document.to_json()
    name = run["profile"]["name"]
    assert run["engine"] == "single_prefill"
    committed = _options(document, name, None)
    assert (committed.engine, committed.batch_size) == ("single_prefill", run["batch_size"])
    assert _options(document, name, "draft").batch_size == run["batch_size"]
    assert _options(document, name, "draft").engine == "draft"
    pooled = _options(document, name, "pooled")
    assert (pooled.engine, pooled.batch_size * POOL) == ("pooled", run["batch_size"])
    with pytest.raises(SagoError, match="unknown engine 'fast'"):
        _options(document, name, "fast")


FLOAT64_BOUND = Path(__file__).resolve().parents[1] / "docs" / "bench" / "float64-bound.json"


def test_each_tolerance_is_twice_the_measured_float32_error_times_the_margin() -> None:
    """The committed float32-vs-float64 measurement (`make float64-bound`) bounds what two correct CPUs
    can differ by (twice the largest error); each tolerance is at least that times the margin, and the
    cosine and activation ones, set from it, at most twice that (rounded up, not a guess)."""
    import json

    from benchmark.harness.reproduce import (
        ACTIVATION_ULPS,
        COSINE_ATOL,
        FLOAT32_MARGIN,
        RECORD_ATOL,
        TOKEN_ATOL,
    )

    models = json.loads(FLOAT64_BOUND.read_text())["models"]
    assert "google__gemma-3-270m-q4_k_m" in models and "huggingfacetb__smollm2-135m-instruct-q4_1" in models
    bound = 2 * FLOAT32_MARGIN
    cosine = max(m["cosine"] for m in models.values())
    ulps = max(m["float16_ulps"] for m in models.values())
    assert max(max(m["cosine_per_layer"]) for m in models.values()) == cosine  # per layer, the same maximum
    assert bound * cosine <= COSINE_ATOL <= 2 * bound * cosine
    assert bound * ulps <= ACTIVATION_ULPS <= 2 * bound * ulps
    records = [m["records"] for m in models.values()]
    assert all(r["rows_compared"] > 0.9 * r["rows"] for r in records)
    assert bound * max(r["logprob_sum_per_token"] for r in records) <= TOKEN_ATOL
    assert bound * max(r["entropy_mean"] for r in records) <= RECORD_ATOL + TOKEN_ATOL


def test_intel_noise_on_gemma_cosines_passes_and_a_real_difference_does_not() -> None:
    """Gemma-3-270M's sampled batches re-ran on an Intel Xeon with AMX with cosines 3.98e-5 from the
    committed ones (the former 1e-5 refused them); a cosine moved by a changed state, or float16 states
    moved by more than the bound, are still refused."""
    import numpy as np

    from benchmark.harness.reproduce import ACTIVATION_ULPS, COSINE_ATOL, tensors_within

    cosines = {"trivia_qa|1|a/b/1": np.array([1.0, 0.998, 0.97, 0.91])}
    intel = {k: v - np.array([0.0, 1e-6, 3.98e-5, 2e-5]) for k, v in cosines.items()}
    assert tensors_within(cosines, intel, "sampled activations", {}) == []
    changed = {k: v - np.array([0.0, 0.0, 0.0, 2 * COSINE_ATOL]) for k, v in cosines.items()}
    assert "beyond tolerance" in tensors_within(cosines, changed, "sampled activations", {})[0]

    state = {"trivia_qa|1|base": np.array([[1024.0, -3.0, 0.5]], np.float16)}  # one ulp of 1024 is 1
    within = {"trivia_qa|1|base": state["trivia_qa|1|base"] + np.float16(ACTIVATION_ULPS)}
    assert tensors_within(state, within, "a", {}) == []
    beyond = {"trivia_qa|1|base": state["trivia_qa|1|base"] + np.float16(ACTIVATION_ULPS + 2)}
    assert "beyond tolerance" in tensors_within(state, beyond, "a", {})[0]
