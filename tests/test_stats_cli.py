"""`sago analyze` on a folder of synthetic submissions: files written, pending listed, errors one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.leaderboard_example import example_submission
from helpers.synthetic import example_levels, synthetic_deltas

from benchmark.axes.results import INPUTS_KEY, input_fingerprint, read_input_fingerprint
from benchmark.cli import main
from benchmark.paths import SUBMISSIONS_DIR
from benchmark.pipeline import origin
from benchmark.pipeline.analyze import current_axes, deltas_are_stale
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET, RECORDS_SCHEMA_VERSION

COMPLETE = ("acme__m-a", "acme__m-b")
PENDING = "acme__m-later"
RESULTS = Path("results") / DEFAULT_SET / BOARD_SET_VERSION
"""Where the fixture's results lie: the set version `sago analyze` reads when given none."""


@pytest.fixture
def submissions(tmp_path: Path) -> Path:
    """Two complete submissions (run.json + deltas.parquet) and one without results."""
    root = tmp_path / "submissions"
    deltas = synthetic_deltas(example_levels(COMPLETE, datasets=("d1", "d2")), n_items=6, seed=2)
    for slug in (*COMPLETE, PENDING):
        folder = root / slug
        folder.mkdir(parents=True)
        meta = {k: v for k, v in example_submission(slug).items() if v is not None}
        (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
        if slug in COMPLETE:
            results = folder / RESULTS
            results.mkdir(parents=True)
            (results / "run.json").write_text("{}")
            write_fresh_deltas(results, deltas[deltas["model"] == slug])
    return root


def write_fresh_deltas(results: Path, deltas: pd.DataFrame) -> None:
    """deltas.parquet stamped with its inputs' fingerprint and recorded as this machine's, as analyze's
    `write_deltas` would leave it (so it is read as it is, not recomputed)."""
    table = pa.Table.from_pandas(deltas, preserve_index=False)
    stamp = json.dumps(input_fingerprint(results, current_axes()).to_json(), sort_keys=True)
    pq.write_table(table.replace_schema_metadata({INPUTS_KEY: stamp}), results / "deltas.parquet")
    origin.remember(results / "deltas.parquet")


def analyze(root: Path, out: Path, *extra: str) -> int:
    return main(["analyze", "--submissions-dir", str(root), "--out", str(out), "--resamples", "200", *extra])


def test_analyze_writes_summaries_and_a_reproducible_leaderboard(
    submissions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "leaderboard.json"
    assert analyze(submissions, out) == 0
    printed = capsys.readouterr().out
    assert "acme__m-a" in printed and "pending: acme__m-later" in printed
    board = json.loads(out.read_text())
    assert {m["slug"]: m["status"] for m in board["models"]} == {
        "acme__m-a": "complete",
        "acme__m-b": "complete",
        "acme__m-later": "pending",
    }
    summary = submissions / "acme__m-a" / RESULTS / "summary.json"
    assert json.loads(summary.read_text())["model"] == "acme__m-a"
    assert board["models"][0]["summary"] == f"submissions/acme__m-a/{RESULTS.as_posix()}/summary.json"
    first = out.read_bytes()
    assert analyze(submissions, out, "--slug", "acme__m-b") == 0
    assert out.read_bytes() == first


def test_unknown_slug_is_a_one_line_error(
    submissions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert analyze(submissions, tmp_path / "lb.json", "--slug", "acme__nobody") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no submission folder for acme__nobody") and err.count("\n") == 1


def _deltas_with_fingerprint(folder: Path, fingerprint: object) -> None:
    from benchmark.axes.measures import delta_columns

    table = pa.table({name: [1.0] for name in delta_columns()})  # the registered measures' columns
    if fingerprint is not None:
        table = table.replace_schema_metadata({INPUTS_KEY: json.dumps(fingerprint, sort_keys=True)})
    pq.write_table(table, folder / "deltas.parquet")


def test_deltas_staleness_is_decided_by_content_not_file_times(tmp_path: Path) -> None:
    axes = {"mirroring": "authors", "bleu": "sentence"}
    assert deltas_are_stale(tmp_path, axes)  # no deltas at all
    (tmp_path / "records").mkdir()
    record = tmp_path / "records" / "d1.parquet"
    record.write_bytes(b"x")
    _deltas_with_fingerprint(tmp_path, None)
    assert deltas_are_stale(tmp_path, axes)  # written before fingerprints were recorded
    fingerprint = input_fingerprint(tmp_path, axes)
    _deltas_with_fingerprint(tmp_path, {**fingerprint.to_json(), "axes_version": 2})  # not a fingerprint
    assert deltas_are_stale(tmp_path, axes)
    _deltas_with_fingerprint(tmp_path, fingerprint.to_json())
    os.utime(record, (4_000_000_000, 4_000_000_000))  # a fresh checkout: inputs newer than the deltas
    assert not deltas_are_stale(tmp_path, axes)
    assert deltas_are_stale(tmp_path, axes | {"mirroring": "ours"})  # other rules: recompute
    record.write_bytes(b"y")  # same name, other content
    assert deltas_are_stale(tmp_path, axes)


def test_committed_fingerprints_read_back_and_serialise_to_the_stored_bytes() -> None:
    committed = sorted(SUBMISSIONS_DIR.glob("*/results/*/*/deltas.parquet"))
    assert committed, "no committed deltas to check"
    for path in committed:
        stored = (pq.read_schema(path).metadata or {})[INPUTS_KEY.encode()]
        fingerprint = read_input_fingerprint(path)
        assert fingerprint is not None
        assert json.dumps(fingerprint.to_json(), sort_keys=True).encode() == stored
        assert fingerprint == input_fingerprint(path.parent, dict(fingerprint.axes))  # fresh: not stale


def record_rows(item: str, responses: dict[str, str]) -> list[dict[str, object]]:
    """Records (schema.RECORD_COLUMNS) of one item; log-prob and entropy move with the response."""
    rows = []
    for k, (variant, response) in enumerate(responses.items()):
        family, place, strength = variant.split("/")
        rows.append(
            {
                "dataset": "trivia_qa",
                "item_id": item,
                "variant_id": variant,
                "family": family,
                "place": place,
                "strength": float(strength),
                "response": response,
                "response_tokens": len(response.split()),
                "finished": True,
                "logprob_sum": -10.0 - 5 * k,
                "logprob_mean": -1.0 - 0.1 * k,
                "entropy_mean": 2.0 + 0.2 * k,
                "baseline_tokens": 5,
                "prompt_tokens": 12,
            }
        )
    return rows


@pytest.mark.slow
def test_analysis_from_records_alone_through_the_axes(tmp_path: Path) -> None:
    """records/*.parquet → (benchmark.axes, MiniLM) deltas.parquet → summary.json → leaderboard."""
    import pandas as pd

    from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
    from benchmark.schema import VARIANT_COLUMNS
    from benchmark.stats.summary import AnalysisOptions

    root = tmp_path / "submissions"
    folder = root / COMPLETE[0] / "results" / "sago-v1" / "v1"
    (folder / "records").mkdir(parents=True)
    meta = {k: v for k, v in example_submission(COMPLETE[0]).items() if v is not None}
    (root / COMPLETE[0] / "submission.yaml").write_text(yaml.safe_dump(meta))
    answers = {"i1": "Paris is the capital of France.", "i2": "Water boils at 100 degrees."}
    rows = []
    for item, answer in answers.items():
        rows += record_rows(
            item,
            {
                "baseline/none/0": answer,
                "spacing/prefix/5": answer,
                "politeness/prefix/4": "Thank you for asking! " + answer,
                "letter_case/global/50": answer.upper(),
                "identity/global/1": answer,
                "rerun/none/0": answer,
            },
        )
    pd.DataFrame(rows).to_parquet(folder / "records" / "trivia_qa.parquet")
    (folder / "run.json").write_text(json.dumps({"schema_version": RECORDS_SCHEMA_VERSION}))
    variants = pd.DataFrame(
        [
            {c: None for c in VARIANT_COLUMNS}
            | {
                "dataset": "trivia_qa",
                "item_id": item,
                "variant_id": "baseline/none/0",
                "family": "baseline",
                "answers": ["Paris"] if item == "i1" else ["100"],
            }
            for item in answers
        ]
    )
    request = AnalyzeRequest(
        "sago-v1", "v1", root=root, out=tmp_path / "lb.json", options=AnalysisOptions(resamples=200)
    )
    board = run_analysis(request, variant_frames=lambda: {"trivia_qa": variants})
    assert (folder / "deltas.parquet").is_file() and (folder / "summary.json").is_file()
    bleu = board.cells.first(dataset="trivia_qa", measure="bleu")
    assert bleu is not None and (bleu["sgs"] or 0) > 0  # the polite and upper-cased answers changed
    assert bleu["noise_floor"] == 0.0  # identity and rerun answered identically
    # no activations stored: no finite s, no cell
    assert board.cells.first(dataset="trivia_qa", measure="act_cos_last") is None
    accuracy = {r["dataset"]: r["accuracy"] for r in board.accuracy}
    assert accuracy["trivia_qa"] == 1.0


def test_the_api_returns_the_typed_leaderboard_it_wrote(submissions: Path, tmp_path: Path) -> None:
    import benchmark
    from benchmark import jsonio
    from benchmark.documents import LeaderboardDocument

    out = tmp_path / "leaderboard.json"
    board = benchmark.analyze(submissions=submissions, out=out, resamples=200)
    assert isinstance(board, LeaderboardDocument)
    assert jsonio.dumps(board.to_json()) == out.read_text(encoding="utf-8")
    written = json.loads(out.read_text(encoding="utf-8"))
    cell = board.cells.first(model="acme__m-b", dataset="all", measure="bertscore")
    assert cell is not None and cell == next(
        c
        for c in written["cells"]
        if (c["model"], c["dataset"], c["measure"]) == ("acme__m-b", "all", "bertscore")
    )
    assert [m["slug"] for m in board.complete] == list(COMPLETE)


# ---------------------------------------------------------------------------------------------------
# analyze never reads a derived file whose origin it cannot vouch for.


def _zeroed(value: object) -> object:
    """A forged summary: every SGS and per-item s set to 0 (the perfect model)."""
    if isinstance(value, dict):
        return {k: 0.0 if k in ("sgs", "s", "s_extended") else _zeroed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_zeroed(v) for v in value]
    return value


def test_a_forged_summary_is_not_read_under_slug(submissions: Path, tmp_path: Path) -> None:
    out = tmp_path / "leaderboard.json"
    assert analyze(submissions, out) == 0
    honest_board = out.read_bytes()
    results = submissions / "acme__m-a" / RESULTS
    summary = results / "summary.json"
    honest = summary.read_bytes()
    summary.write_text(json.dumps(_zeroed(json.loads(honest))), encoding="utf-8")
    assert analyze(submissions, out, "--slug", "acme__m-b") == 0  # acme__m-a is left out, yet recomputed
    assert summary.read_bytes() == honest
    assert out.read_bytes() == honest_board
    # the control: the same forgery, recorded as this machine's own, is read, and it would have mattered
    summary.write_text(json.dumps(_zeroed(json.loads(honest))), encoding="utf-8")
    origin.remember(summary, made_from=results / "deltas.parquet")
    assert analyze(submissions, out, "--slug", "acme__m-b") == 0
    assert out.read_bytes() != honest_board


def _forge_deltas(path: Path) -> None:
    """Every delta 0 (a perfect model), keeping the file's metadata: the input fingerprint stays right."""
    table = pq.read_table(path)
    frame = table.to_pandas()
    for column in frame.columns:
        if column.startswith("delta_"):
            frame[column] = frame[column].where(frame[column].isna(), 0.0)
    forged = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(table.schema.metadata)
    pq.write_table(forged, path)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_committed_deltas_are_read_and_a_forged_copy_is_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a checkout (a real git repository): deltas byte-equal to what HEAD commits are read as they are,
    in the checkout or in a copy of it; the same file with every delta zeroed and the right input
    fingerprint is not, committed nowhere and written by no analyze here."""
    from benchmark.pipeline.analyze import deltas_to_recompute

    repo = tmp_path / "checkout"
    folder = repo / "submissions" / COMPLETE[0] / "results" / "sago-v1" / "v1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    deltas = synthetic_deltas(example_levels(COMPLETE, datasets=("d1",)), n_items=6, seed=2)
    table = pa.Table.from_pandas(deltas[deltas["model"] == COMPLETE[0]], preserve_index=False)
    stamp = json.dumps(input_fingerprint(folder, current_axes()).to_json(), sort_keys=True)
    pq.write_table(table.replace_schema_metadata({INPUTS_KEY: stamp}), folder / "deltas.parquet")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "maintainers' result"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo, check=True
        )
    monkeypatch.setattr(origin, "REPO_ROOT", repo)
    monkeypatch.setattr(origin, "SUBMISSIONS_DIR", repo / "submissions")
    copy = tmp_path / "copy" / folder.relative_to(repo)
    shutil.copytree(folder, copy)
    assert not deltas_are_stale(folder) and not deltas_to_recompute(folder) and not deltas_to_recompute(copy)
    for forged in (folder, copy):
        _forge_deltas(forged / "deltas.parquet")
        assert not deltas_are_stale(forged)  # the fingerprint alone would let it through
        assert deltas_to_recompute(forged)
    origin.remember(copy / "deltas.parquet")  # what this machine's analyze wrote is read back
    assert not deltas_to_recompute(copy)


@pytest.mark.slow
def test_a_forged_deltas_file_with_the_right_fingerprint_is_not_used(tmp_path: Path) -> None:
    """records → (MiniLM) deltas → summary → leaderboard; then the deltas are replaced by a perfect model's
    with the right fingerprint, and analyze recomputes them from the records."""
    from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
    from benchmark.schema import VARIANT_COLUMNS
    from benchmark.stats.summary import AnalysisOptions

    root = tmp_path / "submissions"
    slug = COMPLETE[0]
    folder = root / slug / "results" / "sago-v1" / "v1"
    (folder / "records").mkdir(parents=True)
    meta = {k: v for k, v in example_submission(slug).items() if v is not None}
    (root / slug / "submission.yaml").write_text(yaml.safe_dump(meta))
    rows = []
    for item, answer in {"i1": "Paris is the capital.", "i2": "Water boils at 100 degrees."}.items():
        variants = {"baseline/none/0": answer, "politeness/prefix/4": "Thanks for asking! " + answer}
        rows += record_rows(item, variants | {"letter_case/global/50": answer.upper()})
    pd.DataFrame(rows).to_parquet(folder / "records" / "trivia_qa.parquet")
    (folder / "run.json").write_text(json.dumps({"schema_version": RECORDS_SCHEMA_VERSION}))
    frame = pd.DataFrame(
        [
            {c: None for c in VARIANT_COLUMNS}
            | {"item_id": i, "variant_id": "baseline/none/0", "family": "baseline", "answers": ["x"]}
            for i in ("i1", "i2")
        ]
    )
    out = tmp_path / "lb.json"
    request = AnalyzeRequest("sago-v1", "v1", root=root, out=out, options=AnalysisOptions(resamples=200))
    run_analysis(request, variant_frames=lambda: {"trivia_qa": frame})
    deltas, honest_board = folder / "deltas.parquet", out.read_bytes()
    honest = deltas.read_bytes()
    _forge_deltas(deltas)
    assert not deltas_are_stale(folder)
    board = run_analysis(request, variant_frames=lambda: {"trivia_qa": frame})
    assert deltas.read_bytes() == honest and out.read_bytes() == honest_board
    bleu = board.cells.first(dataset="trivia_qa", measure="bleu")
    assert bleu is not None and (bleu["sgs"] or 0) > 0  # not the forged perfect 0
