"""Data-parallel collection: batch sharding merges to the one-process bytes, also across killed ranks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers.results import assert_same_results
from helpers.toy import toy_variant_set

from benchmark.harness.collect import (
    PLANNERS,
    collect,
    finish_rank,
    global_batches,
    rank_share,
    run_baseline_phase,
    run_variant_phase,
    select_tasks,
    start_rank,
)
from benchmark.harness.evaluate import EvaluateOptions
from benchmark.harness.finalize import finalize
from benchmark.harness.parallel import evaluate_argv, launch_command
from benchmark.models.protocol import VariantRequest
from benchmark.profiles import get_profile
from benchmark.testing import tiny_backend

SMOKE = get_profile("smoke")
REPO = Path(__file__).resolve().parent.parent

# One rank of a 2-process run on the real tiny-Llama path. Each engine call sleeps a little (outputs
# unchanged) so the test can SIGKILL a rank in the middle of its variant phase.
_RANK_SCRIPT = """
import os, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from accelerate import PartialState
from benchmark.harness.parallel import run_distributed
from benchmark.profiles import get_profile
from helpers.toy import toy_variant_set
from benchmark.testing import tiny_backend
from benchmark.models.protocol import VariantRequest

out = Path(sys.argv[1])
state = PartialState(cpu=True)
(out.parent / f"pid-{state.process_index}").write_text(str(os.getpid()))

def slow_backend(device):
    backend = tiny_backend(batch_size=3)
    run = backend.run
    def delayed(requests, **kwargs):
        time.sleep(0.2)
        return run(requests, **kwargs)
    backend.run = delayed
    return backend

run_distributed(slow_backend, toy_variant_set(("alpha",), n_items=3), out, profile=get_profile("smoke"),
                batch_size=3, progress=False)
"""


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> None:
    """The same thread count as the ranks (one), so float results can be compared bit for bit."""
    torch.set_num_threads(1)


def _one_process(out: Path, variant_set, batch_size: int = 3) -> None:
    collect(
        tiny_backend(batch_size=batch_size),
        variant_set,
        out,
        profile=SMOKE,
        batch_size=batch_size,
        progress=False,
    )
    finalize(out, world_size=1)


@pytest.mark.parametrize("planner", PLANNERS)
def test_global_plan_is_the_one_process_plan_and_ranks_partition_it(planner: int) -> None:
    tasks = select_tasks(toy_variant_set(), SMOKE, None)
    baselines, rest = global_batches(tasks, 4, planner=planner)
    # The global batches are exactly what a one-process collect() cuts (same names, same members).
    assert [b.name for b in baselines] == [f"base-{i:05d}" for i in range(len(baselines))]
    # planner 2 packs the rerun control rows among the variants
    assert {b.name.split("-")[0] for b in rest} == ({"var", "rerun"} if planner == 1 else {"var"})
    parts = [
        rank_share(Path("/x"), tasks, batch_size=4, rank=r, world_size=3, planner=planner) for r in range(3)
    ]
    names = sorted(b.name for p in parts for b in p.baselines + p.rest)
    assert names == sorted(b.name for b in baselines + rest)
    assert len(names) == len(set(names))
    keys = sorted(t.key for b in baselines + rest for t in b.tasks)
    assert len(keys) == len(set(keys)) == len(tasks) + sum(t.family == "baseline" for t in tasks)


def test_two_ranks_in_one_process_equal_one_process(tmp_path: Path) -> None:
    variant_set = toy_variant_set(("alpha", "beta"), n_items=3)
    _one_process(tmp_path / "one", variant_set)
    backend = tiny_backend(batch_size=3)
    out = tmp_path / "two"
    shares = [
        start_rank(
            backend, variant_set, out, profile=SMOKE, batch_size=3, datasets=None, rank=r, world_size=2
        )
        for r in range(2)
    ]
    for share in shares:  # every rank's baseline phase first (the barrier) ...
        run_baseline_phase(share, backend, SMOKE, progress=False)
    for share in shares:  # ... then the variant phase reads y_0 across ranks
        run_variant_phase(share, backend, SMOKE, progress=False)
        finish_rank(share, backend)
    assert all(share.rest for share in shares)
    finalize(out, world_size=2)
    assert_same_results(tmp_path / "one", out)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _launch(script: Path, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}  # + helpers
    command = launch_command([str(script), str(out)], num_processes=2, port=_free_port())
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO
    )


def _kill_rank_one_in_variant_phase(script: Path, out: Path) -> None:
    launcher = _launch(script, out)
    folder = out / "checkpoint" / "rank-1"
    deadline = time.monotonic() + 240
    while not list(folder.glob("var-*.parquet")):
        assert launcher.poll() is None, "the run ended before rank 1 could be killed"
        assert time.monotonic() < deadline, "rank 1 never reached its variant phase"
        time.sleep(0.01)
    os.kill(int((out.parent / "pid-1").read_text()), signal.SIGKILL)
    launcher.communicate(timeout=120)
    assert launcher.returncode != 0  # the launcher notices the dead rank and stops the other one
    assert not (folder / "done.json").exists() and not (out / "run.json").exists()


@pytest.mark.slow  # fresh interpreters under accelerate: ~30 s of CPU (the in-process ranks test is fast)
def test_accelerate_two_processes_killed_rank_resumes_to_the_one_process_bytes(tmp_path: Path) -> None:
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    variant_set = toy_variant_set(("alpha",), n_items=3)
    _one_process(tmp_path / "one", variant_set)
    out = tmp_path / "two" / "results"
    out.parent.mkdir()
    _kill_rank_one_in_variant_phase(script, out)
    launcher = _launch(script, out)
    _, stderr = launcher.communicate(timeout=240)
    assert launcher.returncode == 0, stderr
    # Both ranks resumed: neither recomputed the batches it had finished before the kill.
    for rank in (0, 1):
        line = next(x for x in stderr.splitlines() if x.startswith(f"rank {rank}: ran"))
        assert "skipped 0 " not in line, line
    assert_same_results(tmp_path / "one", out)
    parallel = json.loads((out / "run.json").read_text())["parallel"]
    assert parallel["world_size"] == 2 and parallel["sharding"] == "batch"
    assert parallel["distributed_type"] == "MULTI_CPU"


def test_launcher_arguments_round_trip_the_options() -> None:
    options = EvaluateOptions(
        profile="cpu",
        batch_size=4,
        datasets=("nq_open", "trivia_qa"),
        engine="single_prefill",
        threads=2,
        force=True,
        progress=False,
    )
    argv = evaluate_argv("org__model", options)
    assert argv == [
        "org__model",
        "--set",
        "sago-v1",
        "--version",
        "v2",
        "--profile",
        "cpu",
        "--engine",
        "single_prefill",
        "--batch-size",
        "4",
        "--threads",
        "2",
        "--datasets",
        "nq_open,trivia_qa",
        "--force",
        "--no-progress",
    ]
    command = launch_command(["-m", "benchmark.harness.parallel", *argv], num_processes=3, port=29511)
    assert command[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert command[command.index("--num_processes") + 1] == "3"
    assert command[command.index("--main_process_port") + 1] == "29511"


def test_device_map_loading_is_recorded_in_provenance(tmp_path: Path) -> None:
    from benchmark.models.loading import load_backend
    from benchmark.models.tiny import tiny_llama, tiny_tokenizer
    from benchmark.submissions import LocalModel, Submission

    tiny_llama().save_pretrained(tmp_path / "tiny")
    tiny_tokenizer().save_pretrained(tmp_path / "tiny")
    submission = Submission(
        name="tiny",
        model=LocalModel(kind="local", path=str(tmp_path / "tiny")),
        license="apache-2.0",
        parameters=100_000,
        contact="test",
    )
    sharded = load_backend(submission, device="cpu", threads=1, device_map="cpu")
    assert sharded.describe()["device_map"] == {"requested": "cpu", "resolved": {"": "cpu"}}
    plain = load_backend(submission, device="cpu", threads=1)
    assert plain.describe()["device_map"] is None
    # Same weights, same outputs: placement is provenance, not a change of the model.
    request = [VariantRequest("k", "What is the capital of France?", None)]
    a, b = sharded.run(request, max_new_tokens=4)[0], plain.run(request, max_new_tokens=4)[0]
    assert a.response == b.response and (a.hidden == b.hidden).all()


def test_evaluate_distributed_as_a_single_rank_matches_collect_and_then_skips(
    tmp_path: Path, monkeypatch
) -> None:
    import yaml

    from benchmark.harness import parallel
    from benchmark.models.tiny import tiny_llama, tiny_tokenizer

    tiny_llama().save_pretrained(tmp_path / "tiny")  # the same weights tiny_backend() builds
    tiny_tokenizer().save_pretrained(tmp_path / "tiny")
    slug_dir = tmp_path / "subs" / "org__tiny"
    slug_dir.mkdir(parents=True)
    (slug_dir / "submission.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "tiny",
                "model": {"kind": "local", "path": str(tmp_path / "tiny")},
                "license": "apache-2.0",
                "parameters": 100_000,
                "contact": "test",
            }
        )
    )
    variant_set = toy_variant_set(("alpha",), n_items=2)
    monkeypatch.setattr(parallel, "open_variant_set", lambda name, version: variant_set)
    # the reference is tiny_backend()'s engine, single_prefill (the CPU default, pooled, sums y_0 in slices)
    options = EvaluateOptions(
        profile="smoke", batch_size=3, engine="single_prefill", threads=1, progress=False, activations="full"
    )
    run_file = parallel.evaluate_distributed("org__tiny", options, root=tmp_path / "subs")
    assert run_file is not None and run_file.name == "run.json"
    assert json.loads(run_file.read_text())["parallel"]["world_size"] == 1
    _one_process(tmp_path / "reference", variant_set)
    assert_same_results(tmp_path / "reference", run_file.parent)
    assert parallel.evaluate_distributed("org__tiny", options, root=tmp_path / "subs") is None
