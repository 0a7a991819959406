"""One owner of the results folder: file names, completeness rules and atomic writers in benchmark.results."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import benchmark
from benchmark.results import (
    DELTAS_FILE,
    DONE_FILE,
    LEADERBOARD_FILE,
    PLAN_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    ResultsFolder,
    results_dir,
    write_json,
    write_parquet,
    write_text,
)

PACKAGE = Path(benchmark.__file__).parent
FILE_NAMES = (RUN_FILE, SUMMARY_FILE, DELTAS_FILE, PLAN_FILE, DONE_FILE, LEADERBOARD_FILE)


def _docstring_ids(tree: ast.AST) -> set[int]:
    """Module/class/function docstrings and attribute docstrings (a string right after an assignment)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        statements = [s for s in body if isinstance(s, ast.stmt)]
        for before, after in zip([None, *statements], statements, strict=False):
            is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if is_doc and (before is None or isinstance(before, ast.Assign | ast.AnnAssign)):
                found.add(id(after.value))
    return found


def _modules_spelling(name: str) -> set[str]:
    """Modules with a string literal (not a docstring) that is the file name or a path ending in it."""
    modules = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstring_ids(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and (node.value == name or node.value.endswith(f"/{name}"))
            ):
                modules.add(path.relative_to(PACKAGE.parent).as_posix())
    return modules


@pytest.mark.parametrize("name", FILE_NAMES)
def test_each_results_file_name_is_spelled_in_one_module(name: str) -> None:
    """A document's file name is its declaration's (``<Document>.FILE``, which results.py aliases); the
    other files' names are results.py's."""
    owner = "benchmark/documents.py" if name.endswith(".json") else "benchmark/results.py"
    assert _modules_spelling(name) == {owner}


def test_the_scan_finds_a_file_name_literal(tmp_path: Path) -> None:
    # the scanner itself: a literal counts, a docstring does not
    source = 'X = "run.json"\n"""the run.json doc"""\ndef f():\n    """run.json"""\n    return "a/run.json"\n'
    tree = ast.parse(source)
    docs = _docstring_ids(tree)
    values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs]
    assert values == ["run.json", "a/run.json"]


def test_delta_columns_are_defined_once() -> None:
    """One function lists the deltas table's columns (from the measure registry); no copy of the list."""
    definers, copies = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "delta_columns":
                definers.append(path.relative_to(PACKAGE).as_posix())
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "DELTA_COLUMNS" for t in targets):
                copies.append(path.relative_to(PACKAGE).as_posix())
    assert definers == ["axes/measures.py"] and copies == []


def test_paths_of_a_results_folder(tmp_path: Path) -> None:
    folder = ResultsFolder.of("org__model", "sago-v1", "v1", tmp_path)
    assert folder.path == (tmp_path / "org__model" / "results" / "sago-v1" / "v1").resolve()
    assert folder.path == results_dir("org__model", "sago-v1", "v1", tmp_path)
    assert folder.activations("gsm8k").relative_to(folder.path).as_posix() == "activations/gsm8k.safetensors"
    assert folder.done(0).relative_to(folder.path).as_posix() == "checkpoint/rank-0/done.json"
    assert folder.relative(folder.records("x")) == "records/x.parquet"


def test_a_slug_or_version_cannot_escape_the_submissions_folder(tmp_path: Path) -> None:
    with pytest.raises(benchmark.errors.SagoError, match="invalid submission name"):
        ResultsFolder.of("../etc__passwd", "sago-v1", "v1", tmp_path)
    with pytest.raises(benchmark.errors.SagoError, match="invalid version"):
        ResultsFolder.of("org__model", "sago-v1", "../v1", tmp_path)


def _finished_run(folder: ResultsFolder, **changes: object) -> None:
    run = {
        "schema_version": 1,
        "variant_set_sha256": "abc",
        "profile": {"name": "smoke"},
        "datasets": "all",
        **changes,
    }
    write_json(folder.run, run)


def test_has_run_is_analysable_and_holds_run_of_is_nothing_to_redo(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path / "r")
    assert not folder.has_run()
    assert not folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=None)
    _finished_run(folder)
    assert folder.has_run()
    assert folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=None)
    # another set, profile or dataset selection: analysable, but a new evaluation must run
    assert not folder.holds_run_of(variant_set_sha256="def", profile="smoke", datasets=None)
    assert not folder.holds_run_of(variant_set_sha256="abc", profile="full", datasets=None)
    assert not folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=["gsm8k"])
    _finished_run(folder, datasets=["arc", "gsm8k"])  # evaluate records the selection sorted
    assert folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=["gsm8k", "arc"])
    # a checkpoint of a run in progress: not done, though run.json is there (and analysable)
    folder.rank_dir(0).mkdir(parents=True)
    assert folder.has_run()
    assert not folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=["gsm8k", "arc"])


def test_an_unreadable_run_counts_as_not_finished(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    write_text(folder.run, "{not json")
    assert folder.has_run()
    with pytest.raises(benchmark.errors.SagoError, match="re-run `sago evaluate`"):
        folder.read_run()
    assert not folder.holds_run_of(variant_set_sha256="abc", profile="smoke", datasets=None)
    with pytest.raises(benchmark.errors.SagoError, match="not valid JSON.*; regenerate it"):
        folder.read_run(fix="regenerate it")


def test_write_json_is_sorted_indented_and_ends_with_a_newline(tmp_path: Path) -> None:
    path = write_json(tmp_path / "a" / "b.json", {"b": 1, "a": ["é"]})
    assert path.read_bytes() == '{\n  "a": [\n    "é"\n  ],\n  "b": 1\n}\n'.encode()
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": ["é"], "b": 1}


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = write_text(tmp_path / "x.json", "old\n")

    def broken(_: object) -> str:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        write_json(target, {"a": 1}, broken)
    table = pa.table({"a": [1, 2]})
    with pytest.raises(TypeError):
        write_parquet(tmp_path / "t.parquet", table, no_such_option=True)
    assert target.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_write_parquet_passes_its_options(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "t.parquet", pa.table({"a": [1, 2]}), compression="zstd")
    assert pq.read_metadata(path).row_group(0).column(0).compression == "ZSTD"
    assert pd.read_parquet(path)["a"].tolist() == [1, 2]
