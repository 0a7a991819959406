"""Generation-consistency measures: BLEU, BERTScore, embedding cosine, and pair deduplication."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics.bleu import BLEU

from benchmark.axes.encoders import BertScore, EmbeddingCosine, Encoder
from benchmark.axes.text import (
    bleu,
    minilm_backbone,
    score_distinct,
    unique_pairs,
)


def test_bleu_of_identical_texts_is_100_even_when_short() -> None:
    assert bleu("Paris.", "Paris.") == 100.0
    assert bleu("The capital of France is Paris.", "The capital of France is Paris.") == 100.0


def test_bleu_matches_sacrebleu_sentence_score_on_a_known_pair() -> None:
    hyp, ref = "The cat sat on the mat", "The cat sat on a mat"
    expected = BLEU(effective_order=True).sentence_score(hyp, [ref]).score
    assert bleu(hyp, ref) == pytest.approx(expected)
    # By hand: n-gram precisions 5/6, 3/5, 2/4, 1/3 ("The" != "the"), equal lengths so BP = 1.
    assert bleu(hyp, ref) == pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)


@pytest.mark.parametrize(
    ("hyp", "ref"),
    [
        ("The cat sat on the mat", "The cat sat on a mat"),
        ("Paris is the capital of France.", "The capital of France is Paris, a big city."),
        ("one two three four five", "six seven eight nine ten"),
    ],
)
def test_bleu_equals_the_authors_corpus_bleu_from_four_tokens_up(hyp: str, ref: str) -> None:
    # The sentence API differs from corpus BLEU on one pair only below four tokens (effective order).
    assert bleu(hyp, ref) == pytest.approx(BLEU().corpus_score([hyp], [[ref]]).score)


def test_bleu_empty_rules() -> None:
    assert bleu("", "") == 100.0
    assert bleu("   ", "") == 100.0
    assert bleu("", "Paris") == 0.0
    assert bleu("Paris", "") == 0.0
    assert bleu("Berlin is big", "Paris is a lovely city") < 20.0


def test_unique_pairs_keeps_first_seen_order_and_inverse() -> None:
    pairs, inverse = unique_pairs(["a", "b", "a", "c"], ["x", "x", "x", "x"])
    assert pairs == [("a", "x"), ("b", "x"), ("c", "x")]
    assert inverse.tolist() == [0, 1, 0, 2]


class CountingScorer:
    """Scores by shared-word Jaccard and remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        self.calls.append((list(candidates), list(references)))
        return np.array(
            [
                len(set(c.split()) & set(r.split())) / len(set(c.split()) | set(r.split()))
                for c, r in zip(candidates, references, strict=False)
            ]
        )


def test_score_distinct_calls_the_model_once_per_distinct_nontrivial_pair() -> None:
    scorer = CountingScorer()
    cands = ["a b", "a b", "a c", "same", "", "x"]
    refs = ["a d", "a d", "a d", "same", "a d", ""]
    values = score_distinct(scorer, cands, refs)
    assert len(scorer.calls) == 1
    assert scorer.calls[0] == (["a b", "a c"], ["a d", "a d"])
    np.testing.assert_allclose(values, [1 / 3, 1 / 3, 1 / 3, 1.0, 0.0, 0.0])


def test_score_distinct_skips_the_model_when_every_pair_is_trivial() -> None:
    scorer = CountingScorer()
    assert score_distinct(scorer, ["same", ""], ["same", ""]).tolist() == [1.0, 1.0]
    assert scorer.calls == []


@pytest.fixture(scope="module")
def minilm() -> object:
    return minilm_backbone()


@pytest.mark.slow  # ~10 s: loads MiniLM twice (ours and the package's) and imports matplotlib via bert_score
def test_bertscore_equals_the_bert_score_package(minilm) -> None:  # type: ignore[no-untyped-def]
    from bert_score import BERTScorer

    cands = ["The cat sat on the mat.", "Paris is the capital of France.", "I do not know."]
    refs = ["A cat was sitting on the mat.", "The capital of France is Paris.", "Paris."]
    ours = BertScore(Encoder(minilm)).score(cands, refs)
    _, _, f1 = BERTScorer(model_type=minilm.model_type, num_layers=6, device="cpu").score(cands, refs)
    np.testing.assert_allclose(ours, f1.double().numpy(), atol=1e-5)
    assert ours[1] > ours[2]  # a paraphrase beats an unrelated answer


def test_embedding_cosine_is_the_cosine_of_mean_pooled_minilm_vectors(minilm) -> None:  # type: ignore[no-untyped-def]
    import torch
    from transformers import AutoModel, AutoTokenizer

    scorer = EmbeddingCosine(Encoder(minilm))
    text_a, text_b = "The weather is lovely today.", "It is sunny and warm outside."
    tok = AutoTokenizer.from_pretrained(minilm.model_type)
    model = AutoModel.from_pretrained(minilm.model_type).eval()
    with torch.inference_mode():
        vecs = [
            model(**tok(t, return_tensors="pt")).last_hidden_state[0].mean(0).double()
            for t in (text_a, text_b)
        ]
    expected = float(torch.nn.functional.cosine_similarity(vecs[0], vecs[1], dim=0))
    got = scorer.score([text_a, text_a], [text_b, text_a])
    assert got[0] == pytest.approx(expected, abs=1e-5)
    assert got[1] == pytest.approx(1.0, abs=1e-6)
    assert scorer.score(["Paris."], ["A recipe for bread."])[0] < got[0]


def test_embedding_reuses_the_bertscore_forward_pass(minilm, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    encoder = Encoder(minilm)
    cands, refs = ["Paris is lovely.", "It is Paris."], ["The capital is Paris.", "The capital is Paris."]
    BertScore(encoder).score(cands, refs)

    def no_model(texts: object) -> None:
        raise AssertionError("the model ran twice on the same texts")

    monkeypatch.setattr(encoder, "token_states", no_model)
    got = EmbeddingCosine(encoder).score(cands, refs)
    assert got.shape == (2,) and np.all((got > 0) & (got < 1))


BOARD_MODELS = (
    "google__gemma-3-270m-q4_k_m",
    "huggingfacetb__smollm2-135m-instruct-q4_1",
    "qwen__qwen2.5-coder-0.5b-instruct-q4_k_m",
    "qwen__qwen2.5-coder-1.5b-instruct-q4_k_m",
)


def committed_pairs(slug: str) -> list[tuple[str, str]]:
    """(y_v, y_0) of every rewrite/control row of one model's committed v2 records."""
    import pandas as pd

    root = Path(__file__).resolve().parents[1] / "submissions"
    pairs = []
    for path in sorted(root.glob(f"{slug}/results/sago-v1/v2/records/*.parquet")):
        records = pd.read_parquet(path)
        base = records[records["variant_id"] == "baseline/none/0"].set_index("item_id")["response"]
        rest = records[records["variant_id"] != "baseline/none/0"]
        pairs += [(y, base[item]) for y, item in zip(rest["response"], rest["item_id"], strict=True)]
    return pairs


@pytest.mark.slow
def test_bleu_forms_on_the_committed_records() -> None:
    """The numbers docs/METHOD.md quotes (section 4, BLEU), recomputed from the committed v2 records."""
    found = {}
    for slug in BOARD_MODELS:
        pairs = committed_pairs(slug)
        if not pairs:
            pytest.skip("no committed records in this checkout")
        sentence = np.array([bleu(y, y0) for y, y0 in pairs])
        corpus = np.array([bleu(y, y0, form="corpus") for y, y0 in pairs])
        differ = np.abs(sentence - corpus) > 1e-9
        found[slug] = (
            len(pairs),
            int(differ.sum()),
            int(((sentence == 100.0) & (corpus == 0.0)).sum()),
            f"{sentence.mean():.3f} vs {corpus.mean():.3f}",
        )
    assert list(found.values()) == [
        (4498, 7, 0, "25.490 vs 25.490"),
        (4498, 78, 29, "32.924 vs 32.279"),
        (4498, 176, 26, "51.559 vs 50.972"),
        (4498, 501, 337, "61.839 vs 53.913"),
    ]
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "METHOD.md").read_text().split())
    words = {3: "three", 4: "four", 5: "five"}
    pairs, differ, zeroed = (sum(v[i] for v in found.values()) for i in range(3))
    assert (
        f"{words[len(found)]} models, {pairs:,} (y_v, y_0) pairs): the two forms differ on {differ} pairs"
        f" ({zeroed} of them identical answers the corpus form scores 0)"
    ) in text
    assert all(
        f"{differ} of 4,498 pairs differ, mean BLEU {means}" in text or f"{differ}, {means}" in text
        for _, differ, _, means in found.values()
    )


def test_corpus_form_is_the_authors_exact_call() -> None:
    from sacrebleu import corpus_bleu

    for y, y0 in [
        ("Paris.", "Paris."),
        ("The capital is Paris.", "Paris is the capital of France."),
        ("", "x"),
    ]:
        assert bleu(y, y0, form="corpus") == corpus_bleu([y], [[y0]]).score
    with pytest.raises(ValueError, match="unknown BLEU form"):
        bleu("a", "b", form="chrf")
