"""An output path that would overwrite a file git tracks, other than the command's own output, is refused
in one line before anything is written (`sago analyze --out README.md` must not replace the README)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.checkout import install_site_tree, snapshot
from helpers.site_tree import VERSION, SiteTree

from benchmark.cli import main
from benchmark.gitrepo import tracked_under
from benchmark.site.build import MARKER


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SiteTree:
    """The fixture checkout with a README, a docs folder and the built site, all committed."""
    tree = install_site_tree(tmp_path, monkeypatch)
    (tmp_path / "README.md").write_text("# the project\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# docs\n")
    (tmp_path / "docs" / "notes.yaml").write_text("a: 1\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tree


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], tree: SiteTree, words: str) -> str:
    before = snapshot(tree.root)
    status = main(argv)
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.startswith("error: ") and "\n" not in err, err
    assert words in err and "which git tracks" in err, err
    assert snapshot(tree.root) == before
    return err


def test_tracked_under_lists_a_file_a_folder_and_nothing_outside(checkout: SiteTree, tmp_path: Path) -> None:
    assert tracked_under(checkout.root / "README.md") == ["README.md"]
    assert tracked_under(checkout.root / "docs") == ["docs/README.md", "docs/notes.yaml"]
    assert tracked_under(checkout.root / "new.json") == []
    link = checkout.root / "innocent.json"
    link.symlink_to(checkout.root / "README.md")
    assert tracked_under(link) == ["README.md"]  # a link to a tracked file is that file


def test_analyze_does_not_overwrite_the_readme(
    checkout: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["analyze", "--version", VERSION, "--submissions-dir", str(checkout.submissions)]
    argv += ["--resamples", "100"]
    refused([*argv, "--out", str(checkout.root / "README.md")], capsys, checkout, "would overwrite README.md")
    # in another case: the same file on a case-insensitive disk
    refused([*argv, "--out", str(checkout.root / "readme.md")], capsys, checkout, "would overwrite README.md")


def test_analyze_may_replace_a_committed_leaderboard(
    checkout: SiteTree, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TQDM_DISABLE", "1")
    argv = ["analyze", "--version", VERSION, "--submissions-dir", str(checkout.submissions)]
    argv += ["--resamples", "100"]
    assert main([*argv, "--out", str(checkout.leaderboard)]) == 0, capsys.readouterr().err


def test_the_site_goes_only_where_a_site_is_committed(
    checkout: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    build = ["leaderboard", "build", "--version", VERSION, "--input", str(checkout.leaderboard)]
    build += ["--submissions"]
    build += [str(checkout.submissions), "--variants", str(checkout.variants), "--out"]
    (checkout.root / "docs" / MARKER).write_text("planted\n")  # a marker git does not track
    refused([*build, str(checkout.root / "docs")], capsys, checkout, "would overwrite docs/README.md")
    assert main([*build, str(checkout.root / "site")]) == 0, capsys.readouterr().err  # the committed site


def test_export_and_import_do_not_replace_tracked_folders(
    checkout: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    export = ["export", "lm-eval", "--version", "v1", "--out", str(checkout.root / "docs")]
    refused(export, capsys, checkout, "would overwrite docs/README.md (and 1 more)")
    # through a folder that does not exist yet (the export would create it, then replace docs/)
    sneaky = [*export[:-1], str(checkout.root / "new" / ".." / "docs")]
    refused(sneaky, capsys, checkout, "would overwrite docs/README.md (and 1 more)")
    assert not (checkout.root / "new").exists()
    samples = checkout.root / "samples.jsonl"
    imported = ["import", "lm-eval", str(samples), "--version", "v1", "--out", str(checkout.root / "docs")]
    refused(imported, capsys, checkout, "would overwrite docs/README.md")


def test_a_rewrite_log_is_never_a_tracked_file_of_something_else(
    checkout: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite = ["variants", "rewrite", "--rewriter", "http", "--rewriter-url", "http://127.0.0.1:9"]
    rewrite += ["--rewriter-model", "m", "--log", str(checkout.root / "README.md")]
    refused(rewrite, capsys, checkout, "would overwrite README.md")
