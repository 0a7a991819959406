"""The repository settings the gate relies on (.github/settings.yml: branch protection) are written down
and agree with the workflow and CODEOWNERS: every required check is a job of the pull-request workflow,
code-owner review is required, nothing can be force-pushed, and CODEOWNERS leaves only a submission's two
files without an owner while the workflows, the gate and the settings themselves have the maintainers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from helpers.repo import WORKFLOW, owners

ROOT = Path(__file__).resolve().parents[1]
MAINTAINERS = ["@sago-bench/maintainers"]


def protection() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / ".github" / "settings.yml").read_text())
    (main,) = [branch for branch in document["branches"] if branch["name"] == "main"]
    found: dict[str, Any] = main["protection"]
    return found


def codeowner_rules() -> list[tuple[str, list[str]]]:
    rules = []
    for line in (ROOT / ".github" / "CODEOWNERS").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, *who = line.split()
            rules.append((pattern, who))
    return rules


def test_every_required_check_is_a_job_of_the_pull_request_workflow() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    names = {job.get("name", job_id) for job_id, job in jobs.items()}
    checks = protection()["required_status_checks"]
    assert set(checks["contexts"]) == {"gate", "tests"} <= names
    assert checks["strict"] is True


def test_code_owner_review_is_required_and_history_is_protected() -> None:
    rules = protection()
    reviews = rules["required_pull_request_reviews"]
    assert reviews["require_code_owner_reviews"] is True and reviews["required_approving_review_count"] >= 1
    assert reviews["dismiss_stale_reviews"] is True
    assert rules["allow_force_pushes"] is False and rules["allow_deletions"] is False
    assert rules["enforce_admins"] is True


def test_codeowners_give_the_maintainers_what_the_gate_and_the_workflows_are() -> None:
    rules = codeowner_rules()
    guarded = [
        ".github/workflows/gate.yml",
        ".github/workflows/another.yml",
        ".github/CODEOWNERS",
        ".github/settings.yml",
        ".ci/gate",
        ".ci/run",
        "Makefile",
        "benchmark/submissions/changes.py",
        "submissions/acme__x/results/s/v/run.json",
        "submissions/acme__x/notes.txt",
        "submissions/README.md",
        ".gitattributes",
    ]
    assert {path: owners(path, rules) for path in guarded} == dict.fromkeys(guarded, MAINTAINERS)
    assert not owners("submissions/acme__x/submission.yaml", rules)
    assert not owners("submissions/acme__x/README.md", rules)
