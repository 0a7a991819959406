"""A run killed with SIGKILL and restarted writes the same results as a run never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers.results import assert_same_results
from helpers.toy import toy_variant_set

from benchmark.harness.collect import collect
from benchmark.harness.finalize import finalize
from benchmark.profiles import get_profile
from benchmark.testing import tiny_backend

# The child runs the real tiny-Llama path single-threaded (thread count changes float results).
_SCRIPT = """
import json, sys
from pathlib import Path
import pytest
import torch
torch.set_num_threads(1)
from benchmark.harness.collect import collect
from benchmark.harness.finalize import finalize
from benchmark.profiles import get_profile
from helpers.toy import toy_variant_set
from benchmark.testing import tiny_backend

out = Path(sys.argv[1])
result = collect(tiny_backend(batch_size=3), toy_variant_set(("alpha",), n_items=3), out,
                 profile=get_profile("smoke"), batch_size=3, progress=False)
finalize(out)
print(json.dumps({"run": result.batches_run, "skipped": result.batches_skipped}))
"""


def _start(script: Path, out: Path) -> subprocess.Popen[str]:
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])}  # + helpers
    return subprocess.Popen(
        [sys.executable, str(script), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(script: Path, out: Path) -> dict[str, int]:
    child = _start(script, out)
    stdout, stderr = child.communicate(timeout=240)
    assert child.returncode == 0, stderr
    counts: dict[str, int] = json.loads(stdout.strip().splitlines()[-1])
    return counts


def _kill_after_parts(script: Path, out: Path, parts: int) -> None:
    """Start a run and SIGKILL it as soon as ``parts`` checkpoint parts exist."""
    child = _start(script, out)
    folder = out / "checkpoint" / "rank-0"
    deadline = time.monotonic() + 240
    while len(list(folder.glob("*.parquet"))) < parts:
        assert child.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow  # processes killed with SIGKILL: ~20 s of CPU (test_harness_collect resumes in-process)
def test_kill_nine_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    torch.set_num_threads(1)  # as in the child
    straight = collect(
        tiny_backend(batch_size=3),
        toy_variant_set(("alpha",), n_items=3),
        tmp_path / "straight",
        profile=get_profile("smoke"),
        batch_size=3,
        progress=False,
    )
    finalize(tmp_path / "straight")
    resumed = tmp_path / "resumed"
    _kill_after_parts(script, resumed, 1)  # inside the baseline phase
    _kill_after_parts(script, resumed, 6)  # inside the variant phase, after a first resume
    counts = _finish(script, resumed)
    assert counts["skipped"] >= 6 and counts["run"] + counts["skipped"] == straight.batches_run
    assert not (resumed / "checkpoint").exists()
    assert_same_results(tmp_path / "straight", resumed)
