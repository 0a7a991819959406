"""``make reproduce``: settings come from the committed run.json, differences are named per file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmark.harness.reproduce import diff_results, main, rerun_options
from benchmark.results import ResultsFolder

COMMITTED = (
    Path(__file__).resolve().parents[1]
    / "submissions"
    / "huggingfacetb__smollm2-135m-instruct-q4_1"
    / "results"
    / "sago-v1"
    / "v1"
)


@pytest.fixture
def two_copies(tmp_path: Path) -> tuple[Path, Path]:
    copies = []
    for name in ("committed", "fresh"):
        folder = tmp_path / name
        for entry in ("records", "activations"):
            shutil.copytree(COMMITTED / entry, folder / entry)
        shutil.copy2(COMMITTED / "run.json", folder / "run.json")
        copies.append(folder)
    return copies[0], copies[1]


def test_identical_results_have_no_differences(two_copies: tuple[Path, Path]) -> None:
    assert diff_results(*two_copies) == []


def test_a_changed_number_is_named_with_its_column_and_count(two_copies: tuple[Path, Path]) -> None:
    committed, fresh = two_copies
    path = fresh / "records" / "gsm8k.parquet"
    frame = pd.read_parquet(path)
    frame.loc[3, "logprob_sum"] += 1e-3
    frame.to_parquet(path, index=False)
    (fresh / "activations" / "jeopardy.safetensors").unlink()
    problems = diff_results(committed, fresh)
    assert problems[0].startswith("records/gsm8k.parquet: bytes differ (changed rows: logprob_sum 1/")
    assert problems[1] == "activations/jeopardy.safetensors: only in the committed result"
    assert len(problems) == 2


def test_settings_come_from_run_json_and_a_wrong_profile_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = ResultsFolder(COMMITTED).read_run()
    run = document.to_json()
    options = rerun_options(document, run["profile"]["name"])
    assert (options["batch_size"], options["engine"], options["threads"]) == (
        run["batch_size"],
        run["engine"],
        run["hardware"]["torch_threads"],
    )
    assert main(["huggingfacetb__smollm2-135m-instruct-q4_1", "--profile", "paper"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"use PROFILE={run['profile']['name']}" in err
    assert main(["--profile", "smoke"]) == 2
    assert "MODEL=<slug>" in capsys.readouterr().err
