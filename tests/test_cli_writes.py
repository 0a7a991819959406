"""Writes that fail: a full disk or a folder the command may not write is one line naming the path and
exit status 2, and `sago analyze` writes all its outputs or none (a kill -9 included)."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.checkout import install_site_tree, snapshot
from helpers.site_tree import SET, VERSION, SiteTree

from benchmark.cli import main
from benchmark.pipeline import analyze
from benchmark.staging import RENAMING, Staged, recover, staged_path

SLUG = "acme__tiny-a"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SiteTree:
    return install_site_tree(tmp_path, monkeypatch)


def analyze_argv(tree: SiteTree) -> list[str]:
    return [
        "analyze",
        "--version",
        VERSION,  # the fixture's set version, not the board's default
        "--submissions-dir",
        str(tree.submissions),
        "--out",
        str(tree.leaderboard),
        "--resamples",
        "100",
    ]


def failing_write(monkeypatch: pytest.MonkeyPatch, hit: Callable[[Path], bool], number: int) -> None:
    """Make every ``Path.write_text`` and ``write_bytes`` on a path ``hit`` selects fail with ``number``."""
    for name in ("write_text", "write_bytes"):
        real = getattr(pathlib.Path, name)

        def write(self: Path, *args: object, _real: Callable[..., int] = real, **kwargs: object) -> int:
            if hit(self):
                raise OSError(number, os.strerror(number), str(self))
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(pathlib.Path, name, write)


PROGRESS = re.compile(r"^[\w ]+: +\d+%\|")
"""a progress bar's line (tqdm on stderr, redrawn with carriage returns)"""


def one_line_error(status: int, capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = [s for s in re.split(r"[\r\n]", captured.err) if s.strip() and not PROGRESS.match(s)]
    assert status == 2, captured.err
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def results(tree: SiteTree, slug: str = SLUG) -> Path:
    return tree.submissions / slug / "results" / SET / VERSION


def test_analyze_writes_every_output_and_leaves_nothing_staged(
    world: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world.root)
    assert main(analyze_argv(world)) == 0, capsys.readouterr().err
    after = snapshot(world.root)
    changed = {p for p in after if after[p] != before.get(p)}
    assert f"submissions/{SLUG}/results/{SET}/{VERSION}/summary.json" in changed
    assert f"submissions/{SLUG}/results/{SET}/{VERSION}/deltas.parquet" in changed
    assert "leaderboard/leaderboard.json" in changed
    assert not [p for p in after if p.endswith(".staged") or ".tmp" in p]
    assert set(after) == set(before)
    assert not analyze.journal().exists()


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_failed_leaderboard_write_changes_no_summary(
    world: SiteTree, number: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The leaderboard is the last output written: its failure must not leave new summaries behind."""
    before = snapshot(world.root)
    failing_write(monkeypatch, lambda p: p.name.startswith(".leaderboard.json"), number)
    err = one_line_error(main(analyze_argv(world)), capsys)
    assert str(world.leaderboard) in err and errno.errorcode[number] in err, err
    assert snapshot(world.root) == before
    assert not analyze.journal().exists()


def test_a_failed_summary_write_is_one_line_and_changes_nothing(
    world: SiteTree, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world.root)
    failing_write(
        monkeypatch, lambda p: p.name == ".summary.json.staged" and "tiny-b" in str(p), errno.ENOSPC
    )
    err = one_line_error(main(analyze_argv(world)), capsys)
    assert str(results(world, "acme__tiny-b") / "summary.json") in err and "ENOSPC" in err, err
    assert snapshot(world.root) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_results_folder_is_one_line_and_changes_nothing(
    world: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = results(world, "acme__tiny-b")
    before = snapshot(world.root)
    folder.chmod(0o555)
    try:
        err = one_line_error(main(analyze_argv(world)), capsys)
    finally:
        folder.chmod(0o755)
    assert str(folder) in err and "EACCES" in err, err
    assert snapshot(world.root) == before


def test_a_full_disk_while_building_the_site_keeps_the_old_site(
    world: SiteTree, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world.root)
    failing_write(monkeypatch, lambda p: p.name == "models.html", errno.ENOSPC)
    argv = ["leaderboard", "build", "--version", VERSION, "--input", str(world.leaderboard)]
    argv += ["--out", str(world.root / "site")]
    argv += ["--submissions", str(world.submissions), "--variants", str(world.variants)]
    err = one_line_error(main(argv), capsys)
    assert "models.html" in err and "ENOSPC" in err and "free space" in err, err
    assert snapshot(world.root) == before


def test_a_full_disk_during_an_export_leaves_no_half_folder(
    world: SiteTree, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(world.root)
    failing_write(monkeypatch, lambda p: p.name.startswith(".README.md"), errno.ENOSPC)
    argv = ["export", "lm-eval", "--version", VERSION, "--out", str(world.root / "tasks")]
    err = one_line_error(main(argv), capsys)
    assert "tasks" in err and "README.md" in err and "ENOSPC" in err, err
    assert snapshot(world.root) == before and sorted(p.name for p in world.root.iterdir()) == sorted(
        ["leaderboard", "site", "submissions", "variants"]
    )


def test_another_os_error_is_not_disguised(world: SiteTree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the machine's state (full, read-only, refused) is a one-line error; any other OSError is a bug
    and keeps its traceback."""
    failing_write(monkeypatch, lambda p: p.name.startswith(".leaderboard.json"), errno.EBADF)
    with pytest.raises(OSError, match="Bad file descriptor"):
        main(analyze_argv(world))


# ---- kill -9: staged outputs are finished or undone by the next run --------------------------------
KILLER = """
import os, signal, sys
from pathlib import Path
from benchmark.staging import Staged
folder, point = Path(sys.argv[1]), sys.argv[2]
staged = Staged(folder / "journal.json")
real_replace = os.replace
def replace(src, dst):
    if point == "renaming" and str(dst).endswith("b.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst)
os.replace = replace
for name in ("a.json", "b.json", "c.json"):
    if point == "writing" and name == "c.json":
        os.kill(os.getpid(), signal.SIGKILL)
    staged.write(folder / name, lambda tmp, name=name: tmp.write_text("new " + name))
staged.commit()
"""


@pytest.mark.parametrize("point", ["writing", "renaming"])
def test_a_kill_at_any_point_is_finished_or_undone_by_the_next_run(tmp_path: Path, point: str) -> None:
    for name in ("a.json", "b.json", "c.json"):
        (tmp_path / name).write_text(f"old {name}")
    done = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path), point], check=False)
    assert done.returncode == -signal.SIGKILL
    plan = json.loads((tmp_path / "journal.json").read_text())
    assert plan["state"] == point
    if point == "renaming":  # the kill came after the first rename: one file new, two still staged
        assert (tmp_path / "a.json").read_text() == "new a.json"
        assert (tmp_path / "b.json").read_text() == "old b.json"
    renamed = recover(tmp_path / "journal.json")
    expected = "new" if point == "renaming" else "old"
    assert [(tmp_path / n).read_text() for n in ("a.json", "b.json", "c.json")] == [
        f"{expected} {n}" for n in ("a.json", "b.json", "c.json")
    ]
    assert renamed == (2 if point == "renaming" else 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "c.json"]


def test_an_interrupt_during_the_renames_leaves_them_to_the_next_run(tmp_path: Path) -> None:
    staged = Staged(tmp_path / "journal.json")
    for name in ("a", "b"):
        (tmp_path / name).write_text("old")
        staged.write(tmp_path / name, lambda tmp: tmp.write_text("new"))
    real = os.replace
    calls: list[str] = []

    def interrupted(src: str, dst: str) -> None:
        calls.append(dst)
        if str(dst).endswith("b"):
            raise KeyboardInterrupt
        real(src, dst)

    os.replace = interrupted  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            staged.commit()
        staged.discard()  # what analyze's error path does: it must not throw the new file away
    finally:
        os.replace = real
    assert recover(tmp_path / "journal.json") == 1
    assert [(tmp_path / n).read_text() for n in ("a", "b")] == ["new", "new"]


def test_analyze_finishes_the_renames_of_a_killed_run_first(
    world: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    target = results(world) / "summary.json"
    staged_path(target).write_text("{}")
    journal = analyze.journal()
    journal.write_text(
        json.dumps({"pid": 0, "state": RENAMING, "renames": [[str(staged_path(target)), str(target)]]})
    )
    assert main(analyze_argv(world)) == 0
    assert "finished renaming 1 output(s)" in capsys.readouterr().err
    assert not journal.exists() and not staged_path(target).exists()


def test_a_journal_never_renames_or_deletes_another_file(tmp_path: Path) -> None:
    victim = tmp_path / "README.md"
    victim.write_text("keep")
    journal = tmp_path / "journal.json"
    journal.write_text(
        json.dumps({"pid": 0, "state": "writing", "renames": [[str(victim), str(tmp_path / "x")]]})
    )
    with pytest.raises(Exception, match="not a journal of staged outputs"):
        recover(journal)
    assert victim.read_text() == "keep"


def test_a_second_run_started_at_the_same_moment_is_refused(tmp_path: Path) -> None:
    """The journal's pid check sees only a run that already wrote its journal; the lock held for the whole
    run also refuses one that starts while the other is still computing."""
    from benchmark.errors import SagoError
    from benchmark.staging import exclusive

    journal = tmp_path / "cache" / "analyze-staged.json"
    with exclusive(journal):
        with pytest.raises(SagoError, match="another run is writing its outputs") as err, exclusive(journal):
            pass
        assert "\n" not in str(err.value)
    with exclusive(journal):  # released when the run ends
        pass
