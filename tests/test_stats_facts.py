"""The run facts of leaderboard.json (``models[].run``) and the site's reading of them: odd inputs read as
"not recorded" or refused in one line, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmark.documents import RunDocument
from benchmark.errors import SagoError
from benchmark.results import ResultsFolder
from benchmark.site.facts import model_facts
from benchmark.stats.facts import run_row
from benchmark.submissions import Submission

SUBMISSION = Submission.model_validate(
    {
        "name": "Tiny Instruct",
        "model": {"kind": "hub", "id": "acme/tiny-instruct", "revision": "1" * 40},
        "license": "MIT",
        "parameters": 1000,
        "contact": "tests",
    }
)


def _timings(timings: dict[str, object]) -> RunDocument:
    return RunDocument.from_json({"schema_version": 1, "timings": timings})


def test_timings_that_cannot_be_subtracted_are_not_recorded_and_ill_typed_ones_are_refused() -> None:
    mixed = {"started_at": "2026-11-30T11:29:06+00:00", "finished_at": "2026-11-30T11:43:57"}
    assert _timings(mixed).timings.wall_seconds is None
    assert _timings({"started_at": "soon", "finished_at": "later"}).timings.wall_seconds is None
    assert _timings({}).timings.wall_seconds is None
    assert _timings({"model_seconds": 2}).timings.model_seconds == 2.0
    # a value of the wrong type refuses the file, one line naming the field (documents are read strictly)
    for timings, said in (
        ({"model_seconds": 10**400}, "timings.model_seconds: expected a number within a float's range"),
        ({"peak_rss_mib": True}, "timings.peak_rss_mib: expected a number"),
    ):
        with pytest.raises(SagoError, match=re.escape(said)) as refused:
            _timings(timings)
        assert "\n" not in str(refused.value)


def test_a_folder_without_a_run_records_nothing_but_what_the_submission_declares(tmp_path: Path) -> None:
    row = run_row(SUBMISSION, ResultsFolder(tmp_path), ("Tiny Instruct", "acme__tiny"))
    assert (row["tuning"], row["tuning_declared"], row["quantisation"]) == ("instruct", False, "none")
    assert row["token_cap"] is None and row["truncated"] == [] and row["wall_seconds"] is None


def test_the_site_falls_back_when_a_run_block_has_another_shape(tmp_path: Path) -> None:
    model = {
        "slug": "acme__tiny",
        "name": "Tiny Instruct",
        "status": "complete",
        "parameters": 1000,
        "run": {},
    }
    facts = model_facts(None, model, tmp_path)  # type: ignore[arg-type]
    assert facts.token_cap is None and facts.truncation == {} and facts.tuning == "instruct"
    model["run"] = {
        **run_row(SUBMISSION, ResultsFolder(tmp_path)),
        "truncated": [{"dataset": "x", "cut": "3"}],
    }
    assert model_facts(None, model, tmp_path).truncation == {}  # type: ignore[arg-type]


def test_a_path_through_a_folder_that_does_not_exist_still_finds_the_tracked_file() -> None:
    """`--out new/../README.md` is README.md, and so is `readme.md` (a case-insensitive disk)."""
    import shutil

    import pytest

    from benchmark.gitrepo import tracked_under

    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or tracked_under(root / "README.md") != ["README.md"]:
        pytest.skip("not a git checkout")
    assert tracked_under(root / "nonexistent" / ".." / "README.md") == ["README.md"]
    assert tracked_under(root / "readme.md") == ["README.md"]
    assert "benchmark/gitrepo.py" in tracked_under(root / "nonexistent" / ".." / "benchmark")
    assert not (root / "nonexistent").exists()
