"""`sago analyze --slug X --judge openai:...` re-judges, and pays for, X's rows only.

A paid judge sends one request per row it judges, and rows are judged when a submission's deltas are
recomputed; so the test counts recomputations (each would be a batch of judge requests): the left-out
submission keeps the deltas its own judge made, and one whose deltas would have to be recomputed is
refused in one line instead of being judged (and paid for) unasked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.leaderboard_example import example_submission
from helpers.synthetic import example_levels, synthetic_deltas

import benchmark.axes.results
from benchmark.axes.results import INPUTS_KEY, input_fingerprint
from benchmark.axes.scorers import DEFAULT_JUDGE, POLITENESS_ENV
from benchmark.cli import main
from benchmark.pipeline.analyze import current_axes
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET, RECORDS_SCHEMA_VERSION

PAID = ("--judge", "openai:judge-model")
RESULTS = Path("results") / DEFAULT_SET / BOARD_SET_VERSION
COMPLETE = ("acme__m-a", "acme__m-b")


@pytest.fixture
def submissions(tmp_path: Path) -> Path:
    """Two complete submissions: run.json, and deltas.parquet stamped as made from it by the default judge."""
    root = tmp_path / "submissions"
    deltas = synthetic_deltas(example_levels(COMPLETE, datasets=("d1", "d2")), n_items=6, seed=2)
    for slug in COMPLETE:
        meta = {k: v for k, v in example_submission(slug).items() if v is not None}
        results = root / slug / RESULTS
        results.mkdir(parents=True)
        (root / slug / "submission.yaml").write_text(yaml.safe_dump(meta))
        (results / "run.json").write_text("{}")
        table = pa.Table.from_pandas(deltas[deltas["model"] == slug], preserve_index=False)
        stamp = json.dumps(input_fingerprint(results, current_axes()).to_json(), sort_keys=True)
        pq.write_table(table.replace_schema_metadata({INPUTS_KEY: stamp}), results / "deltas.parquet")
    return root


def analyze(root: Path, out: Path, *extra: str) -> int:
    return main(["analyze", "--submissions-dir", str(root), "--out", str(out), "--resamples", "200", *extra])


@pytest.fixture
def recomputed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The submissions whose deltas analyze recomputes (the fixture has no records: the stored deltas
    stand in for what the axes would compute) under a paid judge that is never reached."""
    monkeypatch.setenv("SAGO_JUDGE_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SAGO_JUDGE_KEY_ENV", "none")
    # set (not deleted) so that teardown removes what `--judge` leaves in os.environ
    monkeypatch.setenv(POLITENESS_ENV, DEFAULT_JUDGE)
    seen: list[str] = []

    def deltas_table(folder: Path, frames: Any, *, model: str) -> Any:
        seen.append(model)
        table = pq.read_table(Path(folder) / "deltas.parquet")
        stamp = json.dumps(input_fingerprint(Path(folder), current_axes()).to_json(), sort_keys=True)
        return table.replace_schema_metadata(
            {**(table.schema.metadata or {}), INPUTS_KEY.encode(): stamp.encode()}
        )

    monkeypatch.setattr(benchmark.axes.results, "deltas_table", deltas_table)
    return seen


def test_a_paid_judge_for_one_slug_recomputes_that_slug_only(
    recomputed: list[str],
    submissions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for slug in ("acme__m-a", "acme__m-b"):  # a run.json analyze can read, then deltas made under it
        (submissions / slug / RESULTS / "run.json").write_text(
            f'{{"schema_version": {RECORDS_SCHEMA_VERSION}}}'
        )
    out = tmp_path / "leaderboard.json"
    assert analyze(submissions, out) == 0 and recomputed == ["acme__m-a", "acme__m-b"]
    assert analyze(submissions, out) == 0 and recomputed == ["acme__m-a", "acme__m-b"]  # now fresh
    recomputed.clear()
    assert analyze(submissions, out, "--slug", "acme__m-b", *PAID) == 0
    assert recomputed == ["acme__m-b"]  # was ["acme__m-a", "acme__m-b"]: every model's rows judged
    assert "API judge: " in capsys.readouterr().out  # what the judge did (here: nothing asked)


def test_a_left_out_slug_that_needs_recomputing_is_refused_not_judged(
    recomputed: list[str],
    submissions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for slug in ("acme__m-a", "acme__m-b"):  # both submissions' inputs change
        run = submissions / slug / RESULTS / "run.json"
        run.write_text(f'{{"schema_version": {RECORDS_SCHEMA_VERSION}}}')
    assert analyze(submissions, tmp_path / "lb.json", "--slug", "acme__m-b", *PAID) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert "would send judge requests for acme__m-a too; add --slug acme__m-a" in errors[0]
    assert recomputed == []  # nothing judged, nothing written
    assert not (tmp_path / "lb.json").exists()
