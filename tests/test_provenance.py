"""Provenance helpers: hashes and the git state stamped into run.json."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchmark.provenance import Hardware, git_commit, hardware, library_versions, sha256_file


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_rewritten_results_do_not_make_the_tree_dirty(tmp_path: Path) -> None:
    results = tmp_path / "submissions" / "a__b" / "results"
    results.mkdir(parents=True)
    (results / "run.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "init", "--allow-empty")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "files")
    head = _git(tmp_path, "rev-parse", "HEAD")
    (results / "run.json").write_text('{"new": 1}')  # an evaluation rewrote its own outputs
    assert git_commit(tmp_path) == head
    (tmp_path / "code.py").write_text("x = 2\n")  # code changed: the numbers may not be reproducible
    assert git_commit(tmp_path) == head + "+dirty"


def test_outside_a_checkout_is_unknown(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == "unknown"


def test_hash_and_versions(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(tmp_path / "f") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert library_versions()["torch"].startswith("2.13.0")


def test_hardware_writes_the_keys_run_json_always_had() -> None:
    gpu = Hardware("x86_64", "x86_64", 16, "Linux", 125.8, 4, "NVIDIA H200", 1)
    assert list(gpu.to_json()) == [
        "machine",
        "processor",
        "cpu_count",
        "system",
        "memory_gib",
        "torch_threads",
        "accelerator",
        "accelerator_count",
    ]
    # without CUDA the count is left out, without torch the threads too; the accelerator is always there
    no_torch = Hardware("arm64", "arm", None, "Darwin", None, None, None, None).to_json()
    assert no_torch == {
        "machine": "arm64",
        "processor": "arm",
        "cpu_count": None,
        "system": "Darwin",
        "memory_gib": None,
        "accelerator": None,
    }
    here = hardware()
    assert here.torch_threads is not None and here.torch_threads >= 1  # torch is a dependency
    assert ("accelerator_count" in here.to_json()) == (here.accelerator is not None)
