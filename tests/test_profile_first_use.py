"""The first real profile board (commit 84ea0e7) hit two gaps this file keeps closed.

`sago analyze --profile paper` writes its board to the project's own place for it,
``leaderboard/profiles/<set>/<version>-paper/``, and must make that folder on first use rather than
refuse its own default ``--out``. And the changelog of a profile board, whose board switcher links only
the published board and itself, must list runs and sets of versions it has no board for without links
instead of failing on an empty lookup (jinja's StrictUndefined).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.checkout import install_site_tree
from helpers.site_tree import (
    OTHER_PROFILE,
    SET,
    VERSION,
    make_site_tree,
    write_profile_board,
    write_variant_set,
)

from benchmark.cli import main
from benchmark.pipeline import cli as pipeline_cli
from benchmark.results import profile_board_path, results_dir
from benchmark.site.board import pending_board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.cli import profile_boards
from benchmark.variants.frozen import load_variant_set

PAPER = str(OTHER_PROFILE["name"])
SLUG = "acme__tiny-a"


def test_analyze_with_a_profile_makes_its_board_folder_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = install_site_tree(tmp_path, monkeypatch)
    write_profile_board(tree, (SLUG,))
    board = profile_board_path(tree.leaderboard.parent, SET, VERSION, PAPER)
    shutil.rmtree(tree.leaderboard.parent / "profiles")  # a checkout that never had a profile board
    monkeypatch.setattr(pipeline_cli, "LEADERBOARD_DIR", tree.leaderboard.parent)
    argv = ["analyze", "--version", VERSION, "--profile", PAPER, "--submissions-dir", str(tree.submissions)]
    status = main([*argv, "--resamples", "100"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert f"wrote {board}" in captured.out
    written = json.loads(board.read_text(encoding="utf-8"))
    assert written["profile"] == PAPER and [
        m["slug"] for m in written["models"] if m["status"] == "complete"
    ] == [SLUG]
    assert written["profile_comparison"]["models"] == [SLUG]  # compared with the published board


def test_a_one_model_profile_board_lists_versions_it_has_no_board_for_without_links(tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path)
    write_variant_set(tree.variants, "v2")
    # a run on v2 too, so the changelog has a run row of a version the profile board does not link
    shutil.copytree(
        results_dir(SLUG, SET, VERSION, tree.submissions), results_dir(SLUG, SET, "v2", tree.submissions)
    )
    write_profile_board(tree, (SLUG,))
    board = read_board(tree.leaderboard)
    variants = load_variant_set(SET, VERSION, tree.variants)
    profiles = profile_boards(board, tree.leaderboard, tree.submissions, variants)
    assert [len(p.board.complete) for p in profiles] == [1]
    other = SiteInputs(
        pending_board(SET, "v2", tree.submissions),
        tree.submissions,
        load_variant_set(SET, "v2", tree.variants),
    )
    site = tmp_path / "site"
    build_site(
        SiteInputs(board, tree.submissions, variants), site, progress=False, others=[other], profiles=profiles
    )
    published = (site / "changelog.html").read_text(encoding="utf-8")
    page = (site / "profiles" / PAPER / "changelog.html").read_text(encoding="utf-8")
    # the published board links v2's board; the profile board names v2 as text, and still links its own
    assert f'href="versions/v2/index.html">{SET}/v2</a>' in published
    assert f'data-label="board">{SET}/v2</td>' in page  # the run row's board, as text
    assert f"<li>{SET}/v2: frozen" in page  # the set row
    assert f'href="../../index.html">{SET}/{VERSION}</a>' in page
    assert page.count(f"{SET}/v2</a>") == 0
    assert "the published board" in page
