"""`sago submissions validate --base REF`: what a pull request may change, judged with real git.

Each test builds the fixture checkout in a temporary git repository, commits it as the base (``main``),
then makes a pull request's change on a branch and runs the CLI as CI would.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.repo import git
from helpers.site_tree import SET, VERSION, SiteTree, make_site_tree, submission_yaml

from benchmark import integrity
from benchmark.cli import main
from benchmark.gitrepo import Change
from benchmark.provenance import sha256_file
from benchmark.submissions.changes import Layout, change_failures

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
RESULTS = f"submissions/acme__tiny-a/results/{SET}/{VERSION}"


@pytest.fixture
def repo(tmp_path: Path) -> SiteTree:
    """The fixture checkout committed on ``main``, with the branch ``pr`` checked out."""
    tree = make_site_tree(tmp_path / "checkout")
    git(tree.root, "init", "-q", "-b", "main")
    git(tree.root, "add", "-A")
    git(tree.root, "commit", "-q", "-m", "base")
    git(tree.root, "checkout", "-q", "-b", "pr")
    return tree


def validate(tree: SiteTree, capsys: pytest.CaptureFixture[str], base: str = "main") -> tuple[int, list[str]]:
    """Exit status and the output lines of the CLI run from the checkout's root, as in CI."""
    status = main(
        ["submissions", "validate", "--root", str(tree.submissions), "--variants", str(tree.variants)]
        + ["--base", base]
    )
    captured = capsys.readouterr()
    return status, (captured.out + captured.err).splitlines()


def problems(lines: list[str]) -> dict[str, str]:
    """path -> the rest of its line, for the failure lines (the summary line is dropped)."""
    found = {}
    for line in lines[:-1]:
        path, _, rest = line.partition(": ")
        assert path not in found, lines  # one line per offending path
        found[path] = rest
    return found


def add_submission(tree: SiteTree, slug: str, *, readme: bool = True) -> None:
    folder = tree.submissions / slug
    folder.mkdir()
    (folder / "submission.yaml").write_text(yaml.safe_dump(submission_yaml(slug, "New model", 9)))
    if readme:
        (folder / "README.md").write_text("# New model\n")


def commit(tree: SiteTree, message: str = "change") -> None:
    git(tree.root, "add", "-A")
    git(tree.root, "commit", "-q", "-m", message)


def test_a_new_submission_passes(repo: SiteTree, capsys: pytest.CaptureFixture[str]) -> None:
    add_submission(repo, "acme__new-model")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 0, lines
    assert lines == ["ok: 5 submission(s), 2 result folder(s) checked, 2 changed path(s) against the base"]


def test_editing_an_existing_submission_yaml_and_its_readme_is_refused(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stranger's pull request may not rename, re-pin or re-describe a model already on the board."""
    path = repo.submissions / "acme__tiny-c" / "submission.yaml"
    path.write_text(path.read_text() + "notes: quantised by the lab\n")
    (path.parent / "README.md").write_text("more\n")  # not committed: the working tree counts too
    status, lines = validate(repo, capsys)
    assert status == 1
    fix = "an existing model's files are changed or withdrawn by the maintainers: open an issue"
    assert problems(lines) == {
        "submissions/acme__tiny-c/README.md": "adds a file of the existing submission 'acme__tiny-c' — "
        + fix,
        "submissions/acme__tiny-c/submission.yaml": "changes the file of the existing submission "
        f"'acme__tiny-c' — {fix}",
    }


OUTSIDE_PATHS = [
    "leaderboard/leaderboard.json",
    "leaderboard/site/index.html",
    "leaderboard/versions/sago-v1/v1/leaderboard.json",
    "tests/test_validate.py",
    ".ci/run",
    ".ci/gate",
    "Makefile",
    "benchmark/submissions/changes.py",
    ".github/workflows/gate.yml",
    ".github/CODEOWNERS",
    "Submissions/acme__sneaky/submission.yaml",
    "pyproject.toml",
]


@pytest.mark.parametrize("path", OUTSIDE_PATHS)
def test_a_submission_pull_request_that_also_changes_a_file_outside_submissions(
    repo: SiteTree, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """The hostile case: a new model plus an edit to what judges it (the validator, the tests, CI), the
    published board, or a case-variant copy of the submissions folder. Each is one line naming the path."""
    add_submission(repo, "acme__new-model")
    target = repo.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text((target.read_text() if target.is_file() else "") + "\n# changed\n")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1, lines
    verb = "changes" if git(repo.root, "ls-tree", "main", "--", path) else "adds"
    assert problems(lines) == {
        path: f"{verb} a file outside submissions/ — a pull request adds one new submission's "
        "submission.yaml and README.md under submissions/; everything else is changed by the maintainers "
        "(CODEOWNERS); drop this change"
    }


def test_a_pull_request_that_rewrites_another_submissions_results(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hostile case: records rewritten, then re-hashed into run.json so the tree validator is content."""
    records = repo.submissions / "acme__tiny-a" / "results" / SET / VERSION / "records" / "alpaca.parquet"
    frame = pd.read_parquet(records)
    frame["response"] = frame["response"].where(frame["variant_id"] != "spacing/suffix/5", "same")
    frame.to_parquet(records, index=False)
    integrity.rehash(records.parent.parent)
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    assert problems(lines) == {
        f"{RESULTS}/records/alpaca.parquet": "changes a result — results are written only by the "
        "maintainers' own evaluation; drop this change",
        f"{RESULTS}/run.json": "changes a result — results are written only by the maintainers' own "
        "evaluation; drop this change",
    }
    assert (
        lines[-1]
        == "2 problem(s): 4 submission(s), 2 result folder(s) checked, 2 changed path(s) against the base"
    )


def test_a_hidden_folder_with_a_blob_and_links(repo: SiteTree, capsys: pytest.CaptureFixture[str]) -> None:
    stash = repo.submissions / ".stash"
    stash.mkdir()
    (stash / "blob.bin").write_bytes(os.urandom(1 << 16))
    (stash / "link").symlink_to("/etc/passwd")
    (repo.submissions / "acme__tiny-b" / ".hidden.yaml").write_text("x: 1\n")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    found = problems(lines)
    for path in (
        "submissions/.stash/blob.bin",
        "submissions/.stash/link",
        "submissions/acme__tiny-b/.hidden.yaml",
    ):
        assert found.pop(path).startswith("hidden file or folder under submissions/ — "), lines
    # the tree validator names the hidden folder on its own, without git
    assert found == {
        "submissions/.stash": "hidden folder under submissions/ — delete it: submissions/ holds only "
        "submission folders"
    }, lines


def test_a_fake_variant_set_and_an_edited_manifest(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    """A set the maintainers never released, and a released manifest edited to declare its old hash."""
    shutil.copytree(repo.variants / SET / VERSION, repo.variants / SET / "v9")
    manifest = repo.variants / SET / VERSION / "manifest.json"
    data = json.loads(manifest.read_text())
    data["sha256"] = sha256_file(manifest)  # results made on the old manifest still match it
    manifest.write_text(json.dumps(data))
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    found = problems(lines)
    edited = f"variants/{SET}/{VERSION}/manifest.json"
    assert found.pop(edited).startswith("changes a file of a frozen variant set — "), lines
    assert found and all(p.startswith(f"variants/{SET}/v9/") for p in found), lines
    assert all(rest.startswith("adds a file of a frozen variant set — ") for rest in found.values())


def test_only_one_submission_per_pull_request(repo: SiteTree, capsys: pytest.CaptureFixture[str]) -> None:
    add_submission(repo, "acme__one", readme=False)
    add_submission(repo, "acme__two", readme=False)
    status, lines = validate(repo, capsys)
    assert status == 1
    assert problems(lines) == {
        f"submissions/acme__{n}/submission.yaml": "the change adds 2 submissions "
        "(acme__one, acme__two) — open one pull request per submission"
        for n in ("one", "two")
    }


def test_readme_of_a_submission_the_change_does_not_add(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo.submissions / "acme__tiny-b" / "README.md").write_text("I did not write this model\n")
    folder = repo.submissions / "acme__nobody"
    folder.mkdir()
    (folder / "README.md").write_text("a README without a model\n")
    status, lines = validate(repo, capsys)
    assert status == 1
    assert problems(lines) == {
        "submissions/acme__tiny-b/README.md": "adds a file of the existing submission 'acme__tiny-b' — an "
        "existing model's files are changed or withdrawn by the maintainers: open an issue",
        "submissions/acme__nobody/README.md": "adds the README of a submission the change does not add — "
        "add README.md together with the submission.yaml of the submission you add",
        "submissions/acme__nobody/submission.yaml": "no submission.yaml — add submission.yaml as described "
        "in docs/SUBMITTING.md",
    }


def test_removing_a_submission_or_adding_stray_files(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo.submissions / "acme__tiny-c" / "submission.yaml").unlink()
    shutil.rmtree(repo.submissions / "acme__tiny-c")
    (repo.submissions / "notes.txt").write_text("x")
    add_submission(repo, "acme__new-model")
    (repo.submissions / "acme__new-model" / "weights.bin").write_bytes(b"\0")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    found = problems(lines)
    assert found["submissions/acme__tiny-c/submission.yaml"].startswith(
        "removes the file of the existing submission 'acme__tiny-c' — "
    )
    assert found["submissions/notes.txt"].startswith("adds a file other than a submission's ")
    assert found["submissions/acme__new-model/weights.bin"].startswith(
        "adds a file other than a submission's "
    )


def test_a_linked_submission_yaml(repo: SiteTree, capsys: pytest.CaptureFixture[str]) -> None:
    folder = repo.submissions / "acme__linked"
    folder.mkdir()
    (folder / "submission.yaml").symlink_to(repo.submissions / "acme__tiny-c" / "submission.yaml")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    assert problems(lines)["submissions/acme__linked/submission.yaml"].startswith("is a symbolic link — ")


def test_a_pull_request_not_based_on_the_bases_head_is_asked_to_rebase(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    """main moves on after the pull request branched off: it is judged only once rebased on main's head
    (a branch cut before a rule was added would otherwise be judged without it); fails on the old code,
    which judged against the merge base and passed."""
    git(repo.root, "checkout", "-q", "main")
    (repo.submissions / "acme__tiny-a" / "results" / SET / VERSION / "summary.json").write_text(
        '{"schema_version": 1}'
    )
    commit(repo, "maintainers: new summary")
    git(repo.root, "checkout", "-q", "pr")
    add_submission(repo, "acme__new-model")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 2
    assert len(lines) == 1 and "not on the head of main" in lines[0] and "git rebase main" in lines[0], lines
    git(repo.root, "rebase", "-q", "main")
    status, lines = validate(repo, capsys)
    assert status == 0, lines


def test_a_newline_in_a_path_cannot_forge_an_ok_line(
    repo: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = repo.submissions / "acme__x\nok: 9 submission(s)"
    folder.mkdir()
    (folder / "submission.yaml").write_text("x: 1\n")
    commit(repo)
    status, lines = validate(repo, capsys)
    assert status == 1
    assert not any(line.startswith("ok:") for line in lines), lines
    assert any(
        line.startswith("submissions/acme__x\\nok: 9 submission(s)/submission.yaml: ") for line in lines
    )


@pytest.mark.parametrize(
    "base, words",
    [("nosuch", "names no commit in this checkout"), ("--help", "is not a git revision")],
)
def test_a_bad_base_is_one_line(
    repo: SiteTree, capsys: pytest.CaptureFixture[str], base: str, words: str
) -> None:
    status, lines = validate(repo, capsys, base=base)
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith("error: --base ") and words in lines[0], lines


def test_outside_a_checkout_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = make_site_tree(tmp_path)
    status, lines = validate(tree, capsys)
    assert status == 2
    assert len(lines) == 1 and "is not inside a git checkout" in lines[0], lines


def test_the_rules_on_their_own() -> None:
    """The pure rule function: every status and mode, without git."""
    layout = Layout("submissions", "variants")
    base = frozenset({"submissions/acme__old/submission.yaml"})
    changes = [
        Change("M", "submissions/acme__old/submission.yaml", "100644"),
        Change("A", "submissions/acme__old/README.md", "100644"),
        Change("D", "submissions/acme__gone/README.md", "000000"),
        Change("A", "submissions/acme__old/results/s/v/run.json", "100644"),
        Change("D", "submissions/acme__z/results/s/v/records/a.parquet", "000000"),
        Change("T", "variants/s/v/manifest.json", "120000"),
        Change("A", "submissions/Bad__Name/submission.yaml", "100644"),
    ]
    lines = [f.line() for f in change_failures(changes, layout, base)]
    existing = "an existing model's files are changed or withdrawn by the maintainers: open an issue"
    assert lines == [
        "submissions/Bad__Name/submission.yaml: folder name is not a valid slug — rename it "
        "'<org>__<model>', each half 2-64 lower-case letters, digits, '.', '-' or single '_', beginning and "
        "ending with a letter or digit",
        "submissions/acme__gone/README.md: removes the README of a submission the change does not add — "
        "add README.md together with the submission.yaml of the submission you add",
        f"submissions/acme__old/README.md: adds a file of the existing submission 'acme__old' — {existing}",
        "submissions/acme__old/results/s/v/run.json: adds a result — results are written only by the "
        "maintainers' own evaluation; drop this change",
        "submissions/acme__old/submission.yaml: changes the file of the existing submission 'acme__old' — "
        f"{existing}",
        "submissions/acme__z/results/s/v/records/a.parquet: removes a result — results are written only by "
        "the maintainers' own evaluation; drop this change",
        "variants/s/v/manifest.json: changes a file of a frozen variant set — variant sets change only in a "
        "maintainers' release; drop this change",
    ]
