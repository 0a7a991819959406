"""run.json has one declaration, ``benchmark.documents.RunDocument``: its builder lays the keys out as the
committed files have them, reading and writing a committed file gives back its bytes, and the problems
the validator reports are the document's own, one line each."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from benchmark.documents import RUN_KEYS, RunDocument
from benchmark.errors import SagoError
from benchmark.jsonio import plain_json
from benchmark.paths import SUBMISSIONS_DIR
from benchmark.schema import RECORDS_SCHEMA_VERSION

COMMITTED = sorted(SUBMISSIONS_DIR.glob("*/results/*/*/run.json"))
HARNESS_RUN = next(p for p in COMMITTED if json.loads(p.read_text())["model"]["source"] != "api")
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _fields(path: Path) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(path.read_text(encoding="utf-8")))


def _valid(**changes: Any) -> dict[str, Any]:
    """A run.json with nothing wrong in it, then ``changes`` (a value of None removes the key)."""
    run: dict[str, Any] = {
        "schema_version": RECORDS_SCHEMA_VERSION,
        "variant_set_sha256": "a" * 64,
        "profile": {"name": "smoke", "items_per_dataset": 4, "all_strengths": False, "max_new_tokens": 32},
        "timings": {"started_at": "2026-11-30T11:29:06+00:00", "finished_at": "2026-11-30T11:43:57+00:00"},
    }
    run.update(changes)
    return {k: v for k, v in run.items() if v is not None}


def _lines(run: dict[str, Any]) -> list[str]:
    """The validator's lines about ``run`` (dates judged against today's clock)."""
    return [p.line() for p in RunDocument.check(run)[1]]


def test_the_declared_keys_are_in_the_order_the_file_lists_them() -> None:
    assert list(RUN_KEYS) == sorted(RUN_KEYS)
    assert COMMITTED and all(set(json.loads(p.read_text())) <= set(RUN_KEYS) for p in COMMITTED)


def test_the_builder_lays_out_a_committed_run_as_the_file_does() -> None:
    fields = _fields(HARNESS_RUN)
    shuffled = dict(reversed(list(fields.items())))
    built = RunDocument.build(shuffled).to_json()
    assert list(built) == list(json.loads(HARNESS_RUN.read_text(encoding="utf-8")))
    assert plain_json(built).encode() == HARNESS_RUN.read_bytes()


def test_extra_keys_replace_in_place_and_undeclared_ones_go_last() -> None:
    fields = _fields(HARNESS_RUN)
    built = RunDocument.build(fields, {"model": {"source": "hub"}, "zz_launcher": 1, "aa_launcher": 2})
    keys = list(built.to_json())
    assert keys[-2:] == ["aa_launcher", "zz_launcher"] and keys[:-2] == list(fields)
    assert built.model.source == "hub"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: "/".join(p.parts[-5:-1]))
def test_a_committed_run_reads_and_writes_back_its_bytes_with_nothing_wrong(path: Path) -> None:
    run = RunDocument.read(path)
    assert plain_json(run.to_json()).encode() == path.read_bytes()
    assert run.problems() == ()
    assert run.claimed_variant_set == run.variant_set_sha256 is not None
    assert run.evaluation_profile is not None and run.timings.wall_seconds is not None
    if not run.is_api:
        assert run.model.shape is not None


def test_with_files_replaces_only_the_hashes() -> None:
    run = RunDocument.read(HARNESS_RUN)
    rewritten = run.with_files({"records/a.parquet": "0" * 64}).to_json()
    assert list(rewritten) == list(run.to_json())
    assert {k: v for k, v in rewritten.items() if k != "files"} == {
        k: v for k, v in run.to_json().items() if k != "files"
    }
    assert rewritten["files"] == {"records/a.parquet": "0" * 64}


def test_a_valid_run_has_no_problems() -> None:
    assert _lines(_valid()) == []


def test_two_different_variant_set_hashes_are_one_problem() -> None:
    assert _lines(_valid(variant_set={"sha256": "b" * 64})) == [
        "variant_set_sha256 and variant_set.sha256 differ: the run names two variant sets; "
        "regenerate it with `sago evaluate`"
    ]
    assert _lines(_valid(variant_set={"sha256": "a" * 64})) == []  # the same one twice is one claim


def test_no_variant_set_hash_is_one_problem() -> None:
    assert _lines(_valid(variant_set_sha256=None)) == [
        "no variant-set sha256; regenerate it with `sago evaluate`"
    ]


def test_a_newer_or_missing_schema_version_is_reported_not_refused() -> None:
    newer = _valid(schema_version=RECORDS_SCHEMA_VERSION + 1)
    assert _lines(newer) == [
        f"schema_version {RECORDS_SCHEMA_VERSION + 1} is newer than this code reads "
        f"({RECORDS_SCHEMA_VERSION}); update sago-bench, or regenerate with the released version"
    ]
    assert _lines(_valid(schema_version=True)) == [
        "missing or invalid schema_version; regenerate it with the sago CLI"
    ]
    with pytest.raises(SagoError, match="newer than this sago-bench reads"):
        RunDocument.from_json(newer)  # a reader refuses it


AGAIN = "regenerate it with `sago evaluate`"


@pytest.mark.parametrize(
    ("timings", "line"),
    [
        ({"started_at": "yesterday"}, f"timings.started_at 'yesterday' is not an ISO-8601 date; {AGAIN}"),
        ({"finished_at": 3.5}, "timings.finished_at: expected text; re-run `sago evaluate`"),
        (
            {"finished_at": "9999-12-31T00:00:00+00:00"},
            f"timings.finished_at 9999-12-31T00:00:00+00:00 is in the future; {AGAIN}",
        ),
        (
            {"started_at": "2026-11-30T12:00:00+00:00", "finished_at": "2026-11-30T11:00:00+00:00"},
            f"timings.started_at is after finished_at; {AGAIN}",
        ),
    ],
)
def test_bad_dates_are_one_problem(timings: dict[str, object], line: str) -> None:
    assert _lines(_valid(timings=timings)) == [line]


def test_a_date_within_the_clock_skew_is_not_in_the_future() -> None:
    run = RunDocument.from_json(_valid(timings={"finished_at": "2026-12-01T00:30:00+00:00"}))
    assert run.problems(NOW) == ()


@pytest.mark.parametrize(
    ("profile", "words"),
    [
        (None, "has no profile object"),
        ({"name": "smoke", "items_per_dataset": 0, "all_strengths": False, "max_new_tokens": 32}, "≥ 1"),
    ],
)
def test_a_profile_that_cannot_select_rows_is_one_problem(profile: object, words: str) -> None:
    found = _lines(_valid(profile=profile))
    assert len(found) == 1 and words in found[0]
    assert RunDocument.from_json(_valid(profile=profile)).evaluation_profile is None


def test_every_problem_is_one_line() -> None:
    broken = _valid(
        schema_version="1",
        variant_set={"sha256": "b" * 64},
        profile={"name": "x\ny"},
        timings={"started_at": "not\na date"},
    )
    found = _lines(broken)
    assert len(found) == 4 and all("\n" not in line for line in found)


def test_every_ill_typed_value_is_one_problem_naming_its_path() -> None:
    """Strict reading: a value of the wrong type is reported (the validator) or refused (a reader), never
    read as "not recorded"."""
    broken = _valid(
        model={"n_layers": True, "hidden_size": 8, "dtype": 16, "source": "hub"},
        hardware={"torch_threads": "4", "cpu_setting": "A=1"},
        counts={"a": 3, "b": "4"},
        datasets=["a", 1],
        profile={"items_per_dataset": 4, "all_strengths": False, "max_new_tokens": 32, "every_level_of": "x"},
    )
    assert RunDocument.check(broken)[0] is None
    assert sorted(_lines(broken)) == [
        f"{where}: expected {what}; re-run `sago evaluate`"
        for where, what in [
            ("counts.b", "an integer"),
            ("datasets.1", "text"),
            ("datasets", "'all'"),
            ("hardware.torch_threads", "an integer"),
            ("model.dtype", "text"),
            ("model.n_layers", "an integer"),
            ("profile.every_level_of", "a list"),
        ]
    ]
    with pytest.raises(SagoError, match=r"^run.json: \S+: expected [^\n]+; re-run `sago evaluate`$"):
        RunDocument.from_json(broken, "run.json")


def test_the_builder_refuses_a_key_run_json_does_not_declare() -> None:
    """Declared once: a writer's misspelt key fails at once rather than landing last in the file."""
    with pytest.raises(AssertionError, match="not declared by RunDocument: \\['sead'\\]"):
        RunDocument.build({**_fields(HARNESS_RUN), "sead": 42})
