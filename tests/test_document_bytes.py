"""Every committed JSON document, read through its declaration, writes back to exactly its bytes.

This is the guard of issue 47's rewrite of the declarations: the committed results, boards, site
downloads, manifests and fixtures must not change by one byte. Unlike
``test_document_declarations.py`` it takes every copy (the site's downloads and older boards included)
and the two tables declared outside ``benchmark.documents`` (the API table and the models' facts).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmark.documents import (
    Doc,
    LeaderboardDocument,
    ManifestDocument,
    PlanDocument,
    RunDocument,
    SummaryDocument,
)
from benchmark.jsonio import plain_json
from benchmark.model_facts import FACTS_FILE
from benchmark.safeload import load_json_object
from benchmark.stats.api_models import API_TABLE_FILE, ApiTable

ROOT = Path(__file__).resolve().parents[1]
KINDS: dict[str, type[Doc]] = {
    kind.FILE: kind
    for kind in (RunDocument, PlanDocument, SummaryDocument, LeaderboardDocument, ManifestDocument)
}


def _api_table(path: Path) -> str:
    document = load_json_object(path, limit=4 << 20, fix="")
    return ApiTable.read(path, str(document["set"]), str(document["version"])).dumps()


def _facts(path: Path) -> str:
    return plain_json(load_json_object(path, limit=4 << 20, fix=""))


def _reader(name: str) -> Callable[[Path], str]:
    if name == API_TABLE_FILE:
        return _api_table
    if name == FACTS_FILE:
        return _facts
    kind = KINDS[name]
    return lambda path: kind.read(path).dumps()


def _committed() -> list[str]:
    names = (*KINDS, API_TABLE_FILE, FACTS_FILE)
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    return sorted(p for p in listed if Path(p).name in names)


COMMITTED = _committed()


def test_every_kind_is_committed() -> None:
    """Not vacuous: each kind has a committed file (a done marker lives only inside a running checkpoint)."""
    assert {Path(p).name for p in COMMITTED} == {*KINDS, API_TABLE_FILE, FACTS_FILE}
    assert any(p.startswith("tests/fixtures/") for p in COMMITTED)


@pytest.mark.parametrize("relative", COMMITTED)
def test_a_committed_document_writes_back_its_bytes(relative: str) -> None:
    path = ROOT / relative
    assert _reader(path.name)(path) == path.read_text(encoding="utf-8")
