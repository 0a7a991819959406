"""The pull-request gate (`.ci/gate`, run by `make validate BASE=...` and .github/workflows/gate.yml):
a pull request is judged by its base commit's validator, so disarming the validator in the same pull
request changes nothing. Real git, a real clone of this repository, the real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git clone"
    ),
]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def gate(clone: Path, base: str) -> subprocess.CompletedProcess[str]:
    """What CI and the maintainers run: the base's own gate script piped from git, with the base's code."""
    return subprocess.run(
        ["bash", "-s", "--", base, sys.executable],
        input=git(clone, "show", f"{base}:.ci/gate"),
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=600,
    )


def new_submission(clone: Path) -> None:
    folder = clone / "submissions" / "acme__new-model"
    folder.mkdir()
    document = {
        "schema_version": 1,
        "name": "Acme New Model",
        "model": {"kind": "hub", "id": "acme/new-model", "revision": "1" * 40},
        "license": "Apache-2.0",
        "parameters": 123456789,
        "contact": "someone@example.org",
    }
    (folder / "submission.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    (folder / "README.md").write_text("# Acme New Model\n")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """This repository's HEAD, cloned; branch ``base`` is the pull request's base, ``pr`` is checked out."""
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(target)], check=True, timeout=300)
    git(target, "branch", "base")
    git(target, "checkout", "-q", "-b", "pr")
    return target


def test_a_new_submission_passes_the_gate(clone: Path) -> None:
    new_submission(clone)
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "add acme__new-model")
    done = gate(clone, "base")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "against the head of base" in done.stdout and "with its validator" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("ok: ")


def test_a_pull_request_that_disarms_the_validator_is_still_judged_by_the_base(clone: Path) -> None:
    """The hostile pull request: a new model, the validator's rule replaced by one that allows everything,
    the gate script emptied, and the published board edited. The base's code refuses each changed path."""
    new_submission(clone)
    rules = clone / "benchmark" / "submissions" / "changes.py"
    disarmed = "\n\ndef change_failures(*args, **kwargs):\n    return []\n"
    rules.write_text(rules.read_text() + disarmed + disarmed.replace("change_failures", "history_failures"))
    (clone / ".ci" / "gate").write_text("#!/usr/bin/env bash\nexit 0\n")
    board = clone / "leaderboard" / "leaderboard.json"
    board.write_text(board.read_text() + "\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "add a model (and a few small fixes)")
    done = gate(clone, "base")
    assert done.returncode == 1, done.stdout + done.stderr
    refused = {line.split(": ", 1)[0] for line in done.stdout.splitlines() if "outside submissions/" in line}
    assert refused == {"benchmark/submissions/changes.py", ".ci/gate", "leaderboard/leaderboard.json"}
    # and the pull request's own (disarmed) validator would have let it through:
    mine = subprocess.run(
        [sys.executable, "-m", "benchmark", "submissions", "validate", "--base", "base"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(clone), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert mine.returncode == 0, mine.stdout + mine.stderr


def test_an_unknown_base_is_one_line(clone: Path) -> None:
    script = clone / ".git" / "gate-copy"
    shutil.copy(ROOT / ".ci" / "gate", script)
    done = subprocess.run(
        ["bash", str(script), "no-such-ref", sys.executable], cwd=clone, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --base no-such-ref names no commit in this checkout; fetch it (git fetch origin main)"
    ]
