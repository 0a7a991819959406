"""Building, freezing, verifying and reloading a variant set, on tiny fixture sources in the real formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from helpers.variant_build import FIXTURES, SPEC, EchoRewriter, HashEmbedder, fixture_sources

from benchmark.errors import SagoError
from benchmark.provenance import sha256_file
from benchmark.results import write_json
from benchmark.schema import BASELINE_VARIANT_ID, VARIANT_COLUMNS
from benchmark.variants import llm, load_variant_set
from benchmark.variants.families import IDENTITY_VARIANT_ID
from benchmark.variants.frozen import MANIFEST
from benchmark.variants.release import build_release
from benchmark.variants.sources import (
    FileSource,
    parse_jeopardy,
)

pytestmark = pytest.mark.usefixtures("private_cache")


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_parsers_read_the_real_formats() -> None:
    items = {name: source.load() for name, source in fixture_sources().items()}
    assert items["natural_questions"][0].answers == ("14 December 1972 UTC", "December 1972")
    assert "Sunset Boulevard" in items["trivia_qa"][0].answers and items["trivia_qa"][0].item_id == "tc_33"
    assert len(items["jeopardy"]) == 5  # the repeated doc is dropped
    assert items["jeopardy"][0].prompt.startswith("Category: science. Clue: At sea level")
    assert items["gsm8k"][0].answers == ("18",)
    assert items["strategyqa"][0].answers == ("yes",) and items["strategyqa"][2].answers == ("no",)
    assert items["misconceptions"][0].answers == ("false",) and items["misconceptions"][1].answers == (
        "true",
    )
    assert items["misconceptions"][0].prompt.startswith("Is the following statement true or false? Twinkies")


def test_built_set_has_the_contract_shape(toy_release: Path) -> None:
    variant_set = load_variant_set("toy", "v1", root=toy_release)
    assert variant_set.datasets == SPEC.datasets
    assert variant_set.sha256 == sha256_file(toy_release / "toy" / "v1" / MANIFEST)
    frame = variant_set.frame("trivia_qa")
    assert tuple(frame.columns) == VARIANT_COLUMNS
    assert frame.equals(frame.sort_values(["item_rank", "variant_id"]).reset_index(drop=True))
    assert sorted(frame.item_rank.unique()) == [0, 1, 2, 3]
    for _, rows in frame.groupby("item_id"):
        base = rows[rows.variant_id == BASELINE_VARIANT_ID]
        ident = rows[rows.variant_id == IDENTITY_VARIANT_ID]
        assert len(base) == 1 and len(ident) == 1 and ident.prompt.item() == base.prompt.item()
        assert base.similarity.item() == 1.0 and rows.variant_id.is_unique
    assert set(frame.loc[frame.family == "form", "item_rank"]) <= {0, 1}
    assert frame.loc[frame.family == "form", "rewriter"].eq(EchoRewriter.tag).all()
    assert isinstance(frame.answers[0], list) and all(isinstance(a, str) for a in frame.answers[0])


def test_llm_drops_are_recorded(toy_release: Path) -> None:
    manifest = json.loads((toy_release / "toy" / "v1" / MANIFEST).read_text())
    dropped = manifest["llm"]["dropped"]
    # the echo rewriter returns length requests unchanged: every length variant is retried, then dropped;
    # its "Tell me Is the following statement ...?" is still a question, so misconceptions' form drops too
    length = [d for d in dropped if d["variant_id"].startswith("length")]
    form = [d for d in dropped if d["variant_id"].startswith("form")]
    assert len(length) == 3 * 2 * 5 and all(d["reasons"] == ["unchanged"] * llm.ATTEMPTS for d in length)
    # misconceptions' form is still a question for the first candidates; from the first scoped one, its
    # wrapper question flips to the fixed instruction without the model, so no form cell is dropped
    assert form == []
    log = [
        json.loads(line)
        for line in (toy_release / "toy" / "v1" / "llm_rewrites.jsonl").read_text().splitlines()
    ]
    flipped = [a for a in log if a["accepted"] and a["rewriter"] == llm.TEMPLATE_TAG]
    assert {a["dataset"] for a in flipped} == {"misconceptions"} and len(flipped) == 2
    assert all(a["attempt"] == llm.SCOPED_FROM for a in flipped)
    assert sum(a["accepted"] for a in log) == manifest["llm"]["accepted"] == 3 * 2
    assert manifest["counts"]["gsm8k"]["form"] == 2


def test_rebuild_is_byte_identical(toy_release: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    build_release(SPEC, fixture_sources(), HashEmbedder(), root=other, rewriter=EchoRewriter, progress=False)
    assert _hashes(toy_release / "toy" / "v1") == _hashes(other / "toy" / "v1")


def test_rebuild_onto_a_release_replays_its_log_and_checks_bytes(toy_release: Path) -> None:
    def no_model() -> EchoRewriter:
        raise AssertionError("a rebuild must replay the rewrite log, not call the model")

    outcome = build_release(
        SPEC, fixture_sources(), HashEmbedder(), root=toy_release, rewriter=no_model, progress=False
    )
    assert not outcome.created
    sources = fixture_sources()
    sources["gsm8k"] = FileSource(
        "gsm8k", FIXTURES / "jeopardy.jsonl.gz", parse_jeopardy, "MIT"
    )  # other items
    with pytest.raises(SagoError, match=r"differs in .*gsm8k\.parquet.*build a new --version"):
        build_release(SPEC, sources, HashEmbedder(), root=toy_release, rewriter=EchoRewriter, progress=False)


def test_edited_file_is_named_in_a_one_line_error(toy_release: Path) -> None:
    parquet = toy_release / "toy" / "v1" / "data" / "gsm8k.parquet"
    parquet.write_bytes(parquet.read_bytes() + b"\0")
    with pytest.raises(SagoError, match=r"gsm8k\.parquet has sha256 .* edited or corrupted") as err:
        load_variant_set("toy", "v1", root=toy_release)
    assert "\n" not in str(err.value)


def test_broken_parquet_with_a_matching_hash_is_still_refused(toy_release: Path) -> None:
    folder = toy_release / "toy" / "v1"
    (folder / "data" / "gsm8k.parquet").write_bytes(b"PAR1 not really")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["data/gsm8k.parquet"] = sha256_file(folder / "data" / "gsm8k.parquet")
    write_json(folder / MANIFEST, manifest)
    with pytest.raises(SagoError, match=r"gsm8k\.parquet is not a readable parquet file"):
        load_variant_set("toy", "v1", root=toy_release)


def test_wrong_schema_is_refused(toy_release: Path) -> None:
    folder = toy_release / "toy" / "v1"
    frame = pd.DataFrame({"dataset": ["gsm8k"], "prompt": ["hi"]})
    frame.to_parquet(folder / "data" / "gsm8k.parquet")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["data/gsm8k.parquet"] = sha256_file(folder / "data" / "gsm8k.parquet")
    write_json(folder / MANIFEST, manifest)
    with pytest.raises(SagoError, match=r"gsm8k\.parquet does not match the variant schema"):
        load_variant_set("toy", "v1", root=toy_release)


def test_missing_set_unknown_dataset_and_bad_names(toy_release: Path) -> None:
    with pytest.raises(SagoError, match="no variant set at .*sago variants build"):
        load_variant_set("toy", "v9", root=toy_release)
    with pytest.raises(SagoError, match="invalid variant set '../x'"):
        load_variant_set("../x", "v1", root=toy_release)
    with pytest.raises(SagoError, match="unknown dataset 'hotpot' in toy/v1"):
        load_variant_set("toy", "v1", root=toy_release).frame("hotpot")
    shutil.copy(
        toy_release / "toy" / "v1" / "data" / "gsm8k.parquet",
        toy_release / "toy" / "v1" / "data" / "extra.parquet",
    )
    with pytest.raises(SagoError, match="extra.parquet is not listed in the manifest"):
        load_variant_set("toy", "v1", root=toy_release)


def test_dataset_card_loads_with_datasets(toy_release: Path) -> None:
    import datasets

    card = (toy_release / "toy" / "v1" / "README.md").read_text()
    assert "config_name: trivia_qa" in card and "Apache-2.0" in card
    loaded = datasets.load_dataset(str(toy_release / "toy" / "v1"), "trivia_qa", split="test")
    frame = load_variant_set("toy", "v1", root=toy_release).frame("trivia_qa")
    assert loaded.num_rows == len(frame) and loaded[0]["variant_id"] == frame.variant_id[0]
