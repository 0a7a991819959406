"""Bad input through the `sago` entry point: one line on stderr, exit status 2, nothing overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(argv)
    return status, capsys.readouterr().err.strip()


def test_unknown_set_version_does_not_write_a_leaderboard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "leaderboard.json"
    status, err = run(["analyze", "--version", "v9", "--out", str(out)], capsys)
    assert status == 2 and err.startswith("error: no variant set") and "\n" not in err
    assert not out.exists()


def test_missing_explicit_leaderboard_does_not_replace_the_site(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the real site")
    status, err = run(["leaderboard", "build", "--input", str(tmp_path / "nope.json"), "--out", str(site)], capsys)
    assert status == 2 and "does not exist" in err
    assert (site / "index.html").read_text() == "the real site"


@pytest.mark.parametrize("argv, needle", [
    (["evaluate", "../etc__passwd"], "invalid submission name"),
    (["evaluate", "nosuch__model"], "no submission.yaml"),
    (["evaluate", "huggingfacetb__smollm2-135m-instruct-q4_1", "--profile", "smok"], "did you mean 'smoke'"),
    (["variants", "verify", "--set", "nope"], "no variant set"),
])
def test_one_line_errors(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = run(argv, capsys)
    assert status == 2
    assert err.startswith("error: ") and needle in err and "\n" not in err
