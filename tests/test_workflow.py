"""The pull-request workflow and CODEOWNERS: linted with actionlint (the `dev` extra's wheel), and the
gate wired as docs/SUBMITTING.md says: the base commit's script and package judge, the tests wait for it."""

from __future__ import annotations

import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml
from helpers.repo import WORKFLOW, owners

ROOT = Path(__file__).resolve().parents[1]
ACTIONLINT = Path(sys.executable).with_name("actionlint")


@pytest.mark.skipif(not ACTIONLINT.exists(), reason="actionlint comes with the dev extra")
def test_every_workflow_passes_actionlint() -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert workflows == [WORKFLOW]
    done = subprocess.run(
        [str(ACTIONLINT), *map(str, workflows)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gate_runs_the_base_commits_code_and_the_tests_wait_for_it() -> None:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert set(document[True]) == {"pull_request"}  # YAML 1.1 reads the key `on` as True
    assert document["permissions"] == {"contents": "read"}
    gate, tests = document["jobs"]["gate"], document["jobs"]["tests"]
    runs = [step.get("run", "") for step in gate["steps"]]
    assert any('git worktree add --detach "$RUNNER_TEMP/base" "origin/$BASE_REF"' in r for r in runs)
    assert any('pip install -e "$RUNNER_TEMP/base"' in r for r in runs)
    assert runs[-1] == 'bash "$RUNNER_TEMP/base/.ci/gate" "origin/$BASE_REF" python'
    assert not any("pip install -e ." in r or ".ci/run" in r for r in runs)  # no pull-request code runs
    assert tests["needs"] == "gate" and "needs.gate.result == 'success'" in tests["if"]
    assert tests["steps"][-1]["run"] == "bash .ci/run"


def test_codeowners_leave_only_a_submissions_two_files_unowned() -> None:
    rules = []
    for line in (ROOT / ".github" / "CODEOWNERS").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, *who = line.split()
            rules.append((pattern, who))
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines() or ["Makefile"]
    unowned = {
        p for p in tracked + [".ci/gate", "submissions/acme__x/results/s/v/run.json"] if not owners(p, rules)
    }
    assert all(
        fnmatch(p, "submissions/*/submission.yaml") or fnmatch(p, "submissions/*/README.md") for p in unowned
    )
    assert not owners("submissions/acme__new/submission.yaml", rules)
    assert owners("submissions/acme__x/results/s/v/run.json", rules) == ["@sago-bench/maintainers"]
