"""docs/ARCHITECTURE.md's "How to add …" recipes, each performed on a toy: what the page says to write is
all it takes for the new piece to reach the data.

The measure recipe is followed into the deltas, leaderboard.json and the site by
tests/test_measure_registry.py; the backend recipe end to end by tests/test_api_backend.py (a new kind of
model: schema, validator, evaluate). Here: a rewrite family and a dataset reach a built variant set, and a
backend that implements only the protocol runs through the harness.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.toy import toy_variant_set
from helpers.variant_build import EchoRewriter, HashEmbedder, fixture_sources

from benchmark.harness.evaluate import EvaluateOptions, evaluate_model
from benchmark.models.protocol import Capabilities, VariantOutput, VariantRequest
from benchmark.results import ResultsFolder
from benchmark.variants.build import BuildSpec
from benchmark.variants.families import FAMILIES, Family
from benchmark.variants.release import build_release
from benchmark.variants.sources import FileSource, Item

ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "ARCHITECTURE.md"


def shout(text: str, place: str, strength: float, rng: np.random.Generator, protect: Sequence[str]) -> str:
    """A toy rule: the item's text with an exclamation mark per strength level (answers untouched)."""
    return text.rstrip("?.!") + "!" * int(strength)


def parse_toy(data: bytes) -> Iterator[Item]:
    """A toy dataset: one JSON object per line with an id, a question and its answers."""
    for line in data.decode("utf-8").splitlines():
        row = json.loads(line)
        yield Item(str(row["id"]), row["question"], tuple(row["answers"]))


def test_the_recipes_are_on_the_architecture_page() -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    for heading in ("### … a measure", "### … a rewrite family", "### … a dataset", "### … a model backend"):
        assert heading in page


def test_a_registered_family_and_a_new_source_reach_a_built_set(tmp_path: Path, private_cache: Path) -> None:
    toy = tmp_path / "toy.jsonl"
    questions = [
        ("Which planet is known as the Red Planet?", "Mars"),
        ("What is the largest ocean on Earth?", "Pacific"),
        ("Who wrote the play Hamlet?", "Shakespeare"),
    ]
    toy.write_text(
        "\n".join(json.dumps({"id": i, "question": q, "answers": [a]}) for i, (q, a) in enumerate(questions)),
        encoding="utf-8",
    )
    sources = {**fixture_sources(), "toy_qa": FileSource("toy_qa", toy, parse_toy, "CC0-1.0")}
    spec = BuildSpec("recipe", "v1", ("trivia_qa", "toy_qa"), n_items=3, llm_items=0, llm_families=())
    family = Family("shout", ("global",), (1.0, 3.0), shout, True, False)
    with FAMILIES.added("shout", family):  # the family recipe: one registration
        build_release(spec, sources, HashEmbedder(), root=tmp_path, rewriter=EchoRewriter, progress=False)
    data = tmp_path / "recipe" / "v1" / "data"
    toy_rows = pd.read_parquet(data / "toy_qa.parquet")
    assert len(set(toy_rows["item_id"])) == 3  # the dataset recipe: a source in the sources
    shouted = pd.concat([pd.read_parquet(data / f"{d}.parquet") for d in spec.datasets])
    shouted = shouted[shouted["family"] == "shout"]
    assert set(shouted["variant_id"]) == {"shout/global/1", "shout/global/3"}
    assert shouted["prompt"].str.endswith("!!!").sum() == len(shouted) / 2
    manifest = json.loads((tmp_path / "recipe" / "v1" / "manifest.json").read_text())
    assert "toy_qa" in json.dumps(manifest) and "shout" in json.dumps(manifest)
    assert "shout" not in FAMILIES  # gone after the block: nothing leaks into other tests


class EchoBackend:
    """The backend recipe's smallest case: the protocol only (a reply per prompt, nothing else)."""

    name = "echo"
    capabilities = Capabilities(generate=True, logprobs=False, hidden_states=False)
    batch_size = 4

    def run(
        self, requests: Sequence[VariantRequest], *, max_new_tokens: int, rerun_control: bool = False
    ) -> list[VariantOutput]:
        nan = float("nan")
        return [
            VariantOutput(
                r.key, r.prompt.upper()[:40], 3, True, nan, nan, nan, 0, len(r.prompt.split()), None
            )
            for r in requests
        ]

    def describe(self) -> dict[str, object]:
        return {"source": "echo", "location": None, "revision": None, "file_sha256": None, "dtype": None}


def test_a_backend_implementing_the_protocol_runs_through_the_harness(tmp_path: Path) -> None:
    options = EvaluateOptions(set_name="toy", version="v1", profile="smoke", progress=False)
    run = evaluate_model(
        None, options, tmp_path / "out", label="echo", backend=EchoBackend(), variant_set=toy_variant_set()
    )
    assert run is not None
    records = pd.read_parquet(ResultsFolder(tmp_path / "out").records("alpha"))
    assert (records["response"] == records["response"].str.upper()).all() and len(records) > 0


@pytest.mark.parametrize("heading", ["### … a rewrite family", "### … a dataset", "### … a model backend"])
def test_each_recipe_names_the_files_it_touches(heading: str) -> None:
    page = ARCHITECTURE.read_text(encoding="utf-8")
    section = page[page.index(heading) :].split("\n### ", 1)[0]
    for path in {p for p in __import__("re").findall(r"`(benchmark/[\w/]+\.py)`", section)}:
        assert (ARCHITECTURE.parent.parent / path).is_file(), f"{heading} names a missing file {path}"
