"""One declaration per document: every JSON document sago-bench passes between stages is written, read,
checked and versioned by its class in ``benchmark.documents`` (the API table by ``stats.api_models``).

Three checks hold the rule: every committed document reads back through its declaration to the same
bytes; only the declarations (and readers of JSON that is not a sago-bench document, each named below
with why) parse JSON; and no document is written except by :func:`benchmark.results.write_document`,
which renders it as its declaration says.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from benchmark.documents import (
    Doc,
    DoneDocument,
    LeaderboardDocument,
    ManifestDocument,
    PlanDocument,
    RunDocument,
    SummaryDocument,
)
from benchmark.errors import SagoError
from benchmark.results import write_document
from benchmark.stats.api_models import API_TABLE_FILE, ApiTable

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "benchmark"
DOCUMENTS: tuple[type[Doc], ...] = (
    RunDocument,
    PlanDocument,
    DoneDocument,
    SummaryDocument,
    LeaderboardDocument,
    ManifestDocument,
)

# Functions that turn JSON text into objects.
PARSERS = frozenset({"loads", "load", "load_json", "load_json_object", "parse_json"})
# Modules that may call them, and why: none of these reads one of the documents above.
RAW_JSON_READERS: dict[str, str] = {
    "benchmark.documents": "the declarations themselves",
    "benchmark.safeload": "the bounded, duplicate-refusing parser the declarations use",
    "benchmark.stats.api_models": "api_models.json's own declaration (writer, reader, schema version)",
    "benchmark.model_facts": "model_facts.json's reader (written by benchmark.tools.model_facts)",
    "benchmark.lmeval.samples": "lm-evaluation-harness's results and samples files (its format, not ours)",
    "benchmark.axes.results": "the input fingerprint kept in a deltas parquet's metadata",
    "benchmark.axes.llm_judge": "its margin cache",
    "benchmark.appendlog": "the JSON-lines logs: the API replies' and verdicts' cache, the LLM rewrite log",
    "benchmark.chat_api": "HTTP response bodies, and PaidStore's AppendLog.load (the paid answers' cache)",
    "benchmark.variants.rewriter": "llama-server's response body",
    "benchmark.harness.checkpoint": "a checkpoint part's timing stats in its parquet metadata",
    "benchmark.harness.collect": "a plan compared as it would read back (json round trip in memory)",
    "benchmark.staging": "the staging journal of an interrupted write",
    "benchmark.safetensors_check": "a safetensors file's header",
    "benchmark.variants.calibration": "the rewrite-calibration JSON-lines log",
    "benchmark.variants.cells": "written length/form cells (JSON lines)",
    "benchmark.variants.llm.log": "the LLM rewriter's attempt log (JSON lines, through AppendLog.load)",
    "benchmark.variants.sources": "source datasets' rows and examples",
    "benchmark.tools.judge_calibration": "the paper authors' labelled judge fixtures (a research tool)",
    "benchmark.tools.wheelhouse": "pyproject.toml's pins (tomllib), not JSON",
    "benchmark.tools.float64_bound": "its own report (docs/bench/float64-bound.json), merged per model",
}
DOCUMENT_NAMES = frozenset({*(d.FILE for d in DOCUMENTS), API_TABLE_FILE})


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _calls(tree: ast.Module, names: frozenset[str]) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) in names]


def _committed(pattern: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / p for p in listed]


def _committed_documents() -> list[tuple[type[Doc], Path]]:
    pairs: list[tuple[type[Doc], Path]] = []
    for kind in DOCUMENTS:
        paths = _committed(f"*{kind.FILE}")
        if kind is LeaderboardDocument:  # older boards are kept as published, in their own schema
            paths = [p for p in paths if "versions" not in p.relative_to(ROOT).parts]
        pairs.extend((kind, p) for p in paths)
    return pairs


def test_every_document_has_a_file_name_a_kind_and_a_version_range() -> None:
    assert len({d.FILE for d in DOCUMENTS}) == len(DOCUMENTS)
    assert len({d.KIND for d in DOCUMENTS}) == len(DOCUMENTS)
    assert all(d.FILE.endswith(".json") and d.OLDEST <= d.NEWEST for d in DOCUMENTS)


@pytest.mark.parametrize(
    ("kind", "path"), _committed_documents(), ids=lambda v: v.__name__ if isinstance(v, type) else None
)
def test_a_committed_document_reads_back_through_its_declaration_to_its_bytes(
    kind: type[Doc], path: Path
) -> None:
    assert kind.read(path).dumps() == path.read_text(encoding="utf-8")


def test_every_kind_of_document_is_committed_somewhere() -> None:
    """The byte check above is not vacuous: each declaration has at least one committed file (the
    done marker is written only at the end of a run, and checked by the harness tests). A plan lives only
    while a run does; tests/fixtures/documents/plan.json is the committed 1.5B run's, as it was committed
    in its checkpoint before the run finalized."""
    kinds = {kind for kind, _ in _committed_documents()}
    assert kinds == set(DOCUMENTS) - {DoneDocument}


def test_the_api_table_reads_back_through_its_declaration_to_its_bytes() -> None:
    path = ROOT / "leaderboard" / API_TABLE_FILE
    table = ApiTable.read(path, "sago-v1", "v2")
    assert table.rows and table.dumps() == path.read_text(encoding="utf-8")


def test_only_the_declarations_and_named_non_documents_parse_json() -> None:
    readers = {name for name, tree in _modules().items() if _calls(tree, PARSERS)}
    assert readers - RAW_JSON_READERS.keys() == set(), "parse a document through benchmark.documents"
    assert RAW_JSON_READERS.keys() - readers == set(), "a listed reader no longer parses JSON: drop it"


def test_documents_are_written_only_through_write_document() -> None:
    """``write_json`` (raw objects) is for tests' fixtures; the package writes documents with
    ``write_document``, so the rendering is the declaration's."""
    raw = sorted(name for name, tree in _modules().items() if _calls(tree, frozenset({"write_json"})))
    assert raw == []
    writers = sorted(name for name, tree in _modules().items() if _calls(tree, frozenset({"write_document"})))
    assert writers == [
        "benchmark.harness.collect",
        "benchmark.harness.finalize",
        "benchmark.integrity",
        "benchmark.lmeval.ingest",
        "benchmark.stats.summary",
        "benchmark.variants.freeze",
    ]


def test_no_module_spells_a_document_file_name_but_its_declaration() -> None:
    """File names come from ``<Document>.FILE`` (results.py aliases them), never a second literal."""
    spelled = sorted(
        (name, node.value)
        for name, tree in _modules().items()
        if name not in ("benchmark.documents", "benchmark.stats.api_models")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in DOCUMENT_NAMES
    )
    assert spelled == []


def test_a_written_document_reads_back_equal(tmp_path: Path) -> None:
    done = DoneDocument.build({"name": "m", "engine": "single_prefill"}, "2026-12-03T10:00:00Z", 512.5)
    path = write_document(tmp_path / DoneDocument.FILE, done)
    again = DoneDocument.read(path)
    assert (again.model, again.finished_at, again.peak_rss_mib) == (done.model, done.finished_at, 512.5)
    assert again.dumps() == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", DOCUMENTS, ids=lambda d: d.__name__)
def test_every_declaration_refuses_a_newer_version_in_one_line(kind: type[Doc], tmp_path: Path) -> None:
    newer = {"schema_version": kind.NEWEST + 1}
    with pytest.raises(SagoError, match=f"{kind.KIND} schema_version {kind.NEWEST + 1} is newer") as err:
        kind.version_of(newer, tmp_path / kind.FILE)
    assert "\n" not in str(err.value) and "upgrade sago-bench" in str(err.value)


def test_a_list_where_a_document_belongs_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / RunDocument.FILE
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(SagoError, match=r"run is not a JSON object; re-run `sago evaluate`$"):
        RunDocument.read(path)
