"""Names from a pull request or a results folder reach the terminal escaped: a newline cannot start a
forged line, an escape sequence cannot move the cursor or erase a line, a bidi control cannot reorder
what a reader sees."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import pytest
from helpers.site_tree import SET, VERSION, SiteTree, make_site_tree

from benchmark.cli import main

HOSTILE = "x\x1b[1A\x1b[2K\u202eb\u200f\u061c\u200b\nok: 9 submission(s) checked"


def raw_controls(text: str) -> list[str]:
    """Control and format characters in ``text`` other than the newlines that end its lines."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf") and c != "\n"]


def test_a_hostile_name_in_an_error_is_one_escaped_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared error path escapes a message built with the name as it is (no ``!r``)."""
    status = main(["analyze", "--submissions-dir", str(tmp_path / HOSTILE)])
    captured = capsys.readouterr()
    assert status == 2
    assert len(captured.err.splitlines()) == 1 and not raw_controls(captured.err), repr(captured.err)
    assert "x\\x1b[1A\\x1b[2K\\u202eb\\u200f\\u061c\\u200b" in captured.err


def test_a_hostile_folder_name_in_a_listing_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree: SiteTree = make_site_tree(tmp_path)
    shutil.copytree(tree.variants / SET / VERSION, tree.variants / SET / f"v1{HOSTILE}")
    main(["variants", "list", "--root", str(tree.variants)])
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert not raw_controls(stream), repr(stream)
        assert not any(line.startswith("ok:") for line in stream.splitlines()), stream
