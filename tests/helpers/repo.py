"""Shared by the gate's tests: a git command in a test repository, and GitHub's CODEOWNERS rule."""

from __future__ import annotations

import subprocess
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "gate.yml"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` as a fixed test author (no signing); its stdout."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def owners(path: str, rules: list[tuple[str, list[str]]]) -> list[str]:
    """GitHub's rule for the paths used here: the last matching pattern wins."""
    found: list[str] = []
    for pattern, who in rules:
        anchored = pattern.lstrip("/")
        if pattern == "*" or fnmatch(path, anchored):
            found = who
    return found
