"""Generation consistency: BLEU of y_v against y_0, and what the model-based scorers share.

Every scorer takes aligned lists of candidates (y_v) and references (y_0) and returns one similarity
per pair. Identical pairs are answered without the model (exactly 1.0 / 100.0) and the remaining pairs
are deduplicated first, because most responses repeat across variants. The encoders behind BERTScore
and the embedding cosine (torch) are in :mod:`benchmark.axes.encoders`, loaded only when a score is
asked for, so reading the measure declarations never imports torch.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from sacrebleu import corpus_bleu as _corpus_bleu
from sacrebleu.metrics.bleu import BLEU

from benchmark.errors import SagoError
from benchmark.registry import Registry

MINILM = "all-minilm-l6-v2"
"""packaged artefact name of the default backbone (benchmark.packaged)."""


class PairScorer(Protocol):
    """Similarity of each candidate to its reference (1.0 = the same)."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Return float64 [n] similarities for n aligned (candidate, reference) pairs."""
        ...


BLEU_FORMS: tuple[str, ...] = ("sentence", "corpus")
"""``"sentence"``: sentence BLEU with effective order (default); ``"corpus"``: the authors' exact form,
``sacrebleu.corpus_bleu([candidate], [[reference]]).score`` with no shortcuts."""
BLEU_ENV = "SAGO_BLEU_FORM"


def configured_bleu_form() -> str:
    """The BLEU form named by ``$SAGO_BLEU_FORM`` (``"sentence"`` when unset); refuses unknown names."""
    form = os.environ.get(BLEU_ENV) or "sentence"
    if form not in BLEU_FORMS:
        raise SagoError(f"${BLEU_ENV}={form!r} is not one of {', '.join(BLEU_FORMS)}")
    return form


def bleu(candidate: str, reference: str, form: str = "sentence") -> float:
    """BLEU (sacrebleu, 0-100) of ``candidate`` against the single ``reference``.

    ``form="sentence"`` (default): sentence BLEU with effective order. sacrebleu's corpus BLEU on one
    pair scores two identical answers shorter than four tokens as 0 (no 4-grams), which would call the
    most stable short answers maximally unstable; the sentence API with effective order does not.
    Both empty -> 100, one empty -> 0. ``form="corpus"``: the authors' ``corpus_bleu`` on the one pair,
    exactly (identical 3-token answers score 0).

    >>> bleu("Paris.", "Paris.")
    100.0
    >>> bleu("", "Paris")
    0.0
    >>> bleu("Paris.", "Paris.", form="corpus")
    0.0
    """
    if form == "corpus":
        return float(_corpus_bleu([candidate], [[reference]]).score)
    if form != "sentence":
        raise ValueError(f"unknown BLEU form {form!r}; one of {', '.join(BLEU_FORMS)}")
    cand, ref = candidate.strip(), reference.strip()
    if cand == ref:
        return 100.0
    if not cand or not ref:
        return 0.0
    score = _bleu_metric().sentence_score(cand, [ref]).score
    return float(min(100.0, max(0.0, score)))


@functools.cache
def _bleu_metric() -> BLEU:
    return BLEU(effective_order=True)


def unique_pairs(
    candidates: Sequence[str], references: Sequence[str]
) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Distinct (candidate, reference) pairs in first-seen order and, per input pair, its index.

    >>> unique_pairs(["a", "b", "a"], ["x", "x", "x"])
    ([('a', 'x'), ('b', 'x')], array([0, 1, 0]))
    """
    index: dict[tuple[str, str], int] = {}
    inverse = [index.setdefault((c, r), len(index)) for c, r in zip(candidates, references, strict=True)]
    return list(index), np.asarray(inverse, dtype=np.int64)


def score_distinct(scorer: PairScorer, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Run ``scorer`` on the distinct, non-trivial pairs only and spread the results back.

    Identical texts score exactly 1.0 (so identity controls give a delta of exactly 0); a pair
    where exactly one side is empty scores 0.0, like bert-score's own empty-sentence rule.
    """
    pairs, inverse = unique_pairs(candidates, references)
    values = np.full(len(pairs), np.nan)
    todo: list[int] = []
    for i, (cand, ref) in enumerate(pairs):
        if cand.strip() == ref.strip():
            values[i] = 1.0
        elif not cand.strip() or not ref.strip():
            values[i] = 0.0
        else:
            todo.append(i)
    if todo:
        values[todo] = scorer.score([pairs[i][0] for i in todo], [pairs[i][1] for i in todo])
    return values[inverse] if len(inverse) else np.zeros(0)


@dataclass(frozen=True)
class Backbone:
    """A contextual encoder for BERTScore and sentence embeddings."""

    name: str
    """what provenance records, e.g. ``all-MiniLM-L6-v2/L6`` or ``roberta-large/L17``."""
    model_type: str
    """a local folder or a Hub id that ``transformers.AutoModel`` can load."""
    num_layers: int
    """the layer whose token states BERTScore matches (bert-score's ``num_layers``)."""


BACKBONES: Registry[Callable[[], Backbone]] = Registry("BERTScore backbone")
BACKBONE_ENV = "SAGO_BERTSCORE_BACKBONE"
"""environment variable naming the BERTScore backbone (a name in :data:`BACKBONES`)."""


@BACKBONES.register("all-minilm-l6-v2")
def minilm_backbone() -> Backbone:
    """The packaged all-MiniLM-L6-v2 (6 layers, all used): the offline default."""
    from benchmark.packaged import materialise

    return Backbone("all-MiniLM-L6-v2/L6", str(materialise(MINILM)), 6)


@BACKBONES.register("roberta-large")
def roberta_large_backbone() -> Backbone:
    """The authors' backbone, for users who have it (layer 17, bert-score's default)."""
    return Backbone("roberta-large/L17", "roberta-large", 17)


def configured_backbone() -> Backbone:
    """The backbone named by ``$SAGO_BERTSCORE_BACKBONE``, MiniLM when unset."""
    return BACKBONES.get(os.environ.get(BACKBONE_ENV) or "all-minilm-l6-v2")()
