"""Provenance helpers: hashes and the git state stamped into run.json."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchmark.provenance import git_commit, library_versions, sha256_file


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
