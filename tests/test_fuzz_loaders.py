"""Fuzz every loader a stranger's file reaches: random bytes and random structures give one-line errors.

Each example replaces one file of a valid fixture checkout (submission.yaml, the variant manifest,
run.json, summary.json, leaderboard.json, a records parquet, an activations safetensors) with random
bytes, a random JSON/YAML structure, or the valid document with one key dropped or replaced, then runs
the loader and the validator. Allowed outcomes: the loader returns, or raises ``SagoError`` with a
one-line message; the validator returns a report of one-line failures. Anything else (a traceback)
fails the test, as does an example over the time or memory bound.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.site_tree import SET, VERSION, SiteTree, make_site_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark.errors import SagoError
from benchmark.pipeline.analyze import check_results
from benchmark.safetensors_check import read_safetensors
from benchmark.site.board import read_board
from benchmark.stats.summary import load_summary
from benchmark.submissions import load_submission
from benchmark.submissions.validate import validate_tree
from benchmark.variants.frozen import load_variant_set

SLUG = "acme__tiny-a"
SECONDS, MEMORY = 5.0, 64 << 20  # per example
FUZZ = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> SiteTree:
    return make_site_tree(tmp_path_factory.mktemp("fuzz"))


def results(tree: SiteTree) -> Path:
    return tree.submissions / SLUG / "results" / SET / VERSION


@contextmanager
def replaced(path: Path, data: bytes) -> Iterator[None]:
    """``path`` holds ``data`` for one example, then its original bytes (or nothing) again."""
    original = path.read_bytes() if path.exists() else None
    path.write_bytes(data)
    try:
        yield
    finally:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)


def mutated(document: Any, data: st.DataObject) -> Any:
    """The document with one top-level key dropped or given a random value."""
    if not isinstance(document, dict) or not document:
        return document
    key = data.draw(st.sampled_from(sorted(document)))
    if data.draw(st.booleans()):
        return {k: v for k, v in document.items() if k != key}
    return {**document, key: data.draw(values)}


def payload(original: bytes, data: st.DataObject, *, as_yaml: bool = False) -> bytes:
    """Random bytes, a random structure, or the original document with one key changed."""
    kind = data.draw(st.sampled_from(["bytes", "structure", "mutation"]))
    if kind == "bytes":
        return data.draw(st.binary(max_size=300))
    parsed = yaml.safe_load(original) if as_yaml else json.loads(original)
    value = data.draw(values) if kind == "structure" else mutated(parsed, data)
    text = yaml.safe_dump(value, allow_unicode=True) if as_yaml else json.dumps(value)
    return text.encode("utf-8")


def bounded(call: Callable[[], object]) -> None:
    """Run ``call``: it may return or raise a one-line SagoError, within the time and memory bound."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        call()
    except SagoError as err:
        assert "\n" not in str(err), str(err)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - started < SECONDS
    assert peak < MEMORY


def validator_lines(tree: SiteTree) -> None:
    """The validator never raises on a broken file, and each of its findings is one line."""
    for failure in validate_tree(tree.submissions, tree.variants).failures:
        assert "\n" not in failure.line(), failure.line()


@FUZZ
@given(data=st.data())
def test_submission_yaml(tree: SiteTree, data: st.DataObject) -> None:
    path = tree.submissions / SLUG / "submission.yaml"
    with replaced(path, payload(path.read_bytes(), data, as_yaml=True)):
        bounded(lambda: load_submission(SLUG, tree.submissions))
        bounded(lambda: validator_lines(tree))


@FUZZ
@given(data=st.data())
def test_variant_manifest(tree: SiteTree, data: st.DataObject) -> None:
    path = tree.variants / SET / VERSION / "manifest.json"
    with replaced(path, payload(path.read_bytes(), data)):
        bounded(lambda: load_variant_set(SET, VERSION, tree.variants))
        bounded(lambda: validator_lines(tree))


@FUZZ
@given(data=st.data(), name=st.sampled_from(["run.json", "summary.json"]))
def test_run_and_summary_json(tree: SiteTree, data: st.DataObject, name: str) -> None:
    path = results(tree) / name
    with replaced(path, payload(path.read_bytes(), data)):
        bounded(lambda: validator_lines(tree))
        bounded(lambda: check_results(results(tree)))
        if name == "summary.json":
            bounded(lambda: load_summary(path))


@FUZZ
@given(data=st.data())
def test_leaderboard(tree: SiteTree, data: st.DataObject) -> None:
    with replaced(tree.leaderboard, payload(tree.leaderboard.read_bytes(), data)):
        bounded(lambda: read_board(tree.leaderboard))


columns = st.dictionaries(
    st.sampled_from(
        [
            "dataset",
            "item_id",
            "variant_id",
            "response",
            "response_tokens",
            "finished",
            "strength",
            "logprob_sum",
            "x",
        ]
    ),
    st.sampled_from([pa.int64(), pa.float64(), pa.string(), pa.bool_()]),
    min_size=1,
)


@FUZZ
@given(data=st.data(), table=columns, rows=st.integers(0, 3))
def test_records_parquet(
    tree: SiteTree, data: st.DataObject, table: dict[str, pa.DataType], rows: int
) -> None:
    path = results(tree) / "records" / "alpaca.parquet"
    if data.draw(st.booleans()):
        blob = data.draw(st.binary(max_size=300))
    else:
        arrays = {name: pa.array([None] * rows, type=kind) for name, kind in table.items()}
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table(arrays), sink)
        blob = sink.getvalue().to_pybytes()
    with replaced(path, blob):
        bounded(lambda: validator_lines(tree))
        bounded(lambda: check_results(results(tree)))


header_entries = st.dictionaries(
    st.text(max_size=6),
    values
    | st.fixed_dictionaries(
        {
            "dtype": st.sampled_from(["F16", "F32", "I8", "X"]),
            "shape": st.lists(st.integers(-2, 5), max_size=3),
            "data_offsets": st.lists(st.integers(-5, 2**40), max_size=3),
        }
    ),
    max_size=4,
)


@FUZZ
@given(data=st.data(), header=header_entries, length_lie=st.integers(-8, 2**64 - 1))
def test_safetensors(tree: SiteTree, data: st.DataObject, header: dict[str, Any], length_lie: int) -> None:
    folder = results(tree) / "activations"
    folder.mkdir(exist_ok=True)
    path = folder / "alpaca.safetensors"
    raw = json.dumps(header).encode()
    body = data.draw(st.binary(max_size=64))
    kind = data.draw(st.sampled_from(["bytes", "honest length", "lying length"]))
    blob = {
        "bytes": body,
        "honest length": struct.pack("<Q", len(raw)) + raw + body,
        "lying length": struct.pack("<Q", max(0, length_lie)) + raw + body,
    }[kind]
    with replaced(path, blob):
        bounded(lambda: read_safetensors(path))
        bounded(lambda: validator_lines(tree))
