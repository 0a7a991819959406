"""Generation consistency: BLEU, BERTScore and sentence-embedding cosine of y_v against y_0.

Every scorer here takes aligned lists of candidates (y_v) and references (y_0) and returns one
similarity per pair. Identical pairs are answered without the model (exactly 1.0 / 100.0) and
the remaining pairs are deduplicated first, because most responses repeat across variants.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from sacrebleu import corpus_bleu as _corpus_bleu
from sacrebleu.metrics.bleu import BLEU
from tqdm.auto import tqdm

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


@functools.cache
def _load(model_type: str, num_layers: int) -> tuple[torch.nn.Module, Any]:
    """Load an encoder once per process; bert-score's loader truncates it to ``num_layers``."""
    from bert_score.utils import get_model, get_tokenizer

    model = get_model(model_type, num_layers)
    model.eval()
    return model, get_tokenizer(model_type, use_fast=False)


def _encode_options(tokenizer: Any) -> dict[str, bool]:
    """bert-score's ``sent_encode`` rule: byte-level BPE tokenizers (RoBERTa, GPT-2) get a prefix space."""
    from bert_score.utils import GPT2Tokenizer, RobertaTokenizer

    return {"add_prefix_space": True} if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)) else {}


class Encoder:
    """A contextual encoder that runs each distinct text once.

    BERTScore needs every token's state and the embedding cosine needs their mean; with MiniLM as
    the BERTScore backbone both come from the same forward pass, so the pooled vector of every
    text encoded is kept (384 floats each) and the embedding scorer finds it already computed.
    """

    def __init__(self, backbone: Backbone, batch_size: int = 64) -> None:
        self.backbone = backbone
        self.batch_size = batch_size
        self._pooled: dict[str, np.ndarray] = {}

    def token_states(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Each distinct text -> its last-layer token states [tokens, hidden], [CLS]/[SEP] included."""
        model, tokenizer = _load(self.backbone.model_type, self.backbone.num_layers)
        distinct = sorted(set(texts), key=len)  # similar lengths share a batch: little padding
        states: dict[str, torch.Tensor] = {}
        batches = range(0, len(distinct), self.batch_size)
        for start in tqdm(
            batches, desc=f"encoding ({self.backbone.name})", disable=len(batches) < 4, leave=False
        ):
            chunk = distinct[start : start + self.batch_size]
            batch = tokenizer(
                [t.strip() for t in chunk],
                padding=True,
                truncation=True,
                max_length=tokenizer.model_max_length,
                return_tensors="pt",
                **_encode_options(tokenizer),
            )
            with torch.inference_mode():
                hidden = model(**batch)[0]  # [b, t, hidden]
            for text, vectors, mask in zip(chunk, hidden, batch["attention_mask"].bool(), strict=True):
                states[text] = vectors[mask]
                self._pooled[text] = (
                    torch.nn.functional.normalize(vectors[mask].mean(0), dim=0).double().numpy()
                )
        return states

    def pooled(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each distinct text -> its unit-norm mean-pooled embedding (float64 [hidden])."""
        missing = [t for t in set(texts) if t not in self._pooled]
        if missing:
            self.token_states(missing)
        return {t: self._pooled[t] for t in set(texts)}


@dataclass(frozen=True)
class BertScore:
    """BERTScore F1 (idf off, no baseline rescaling) with bert-score's own greedy matching."""

    encoder: Encoder
    """the backbone's encoder (shared with :class:`EmbeddingCosine` when both run on MiniLM)."""
    batch_size: int = 256
    """pairs matched per call."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        states = self.encoder.token_states([*candidates, *references])
        out: list[torch.Tensor] = []
        with torch.inference_mode():  # the matching normalises its inputs in place
            for start in range(0, len(candidates), self.batch_size):
                refs = _padded([states[r] for r in references[start : start + self.batch_size]])
                hyps = _padded([states[c] for c in candidates[start : start + self.batch_size]])
                out.append(_greedy_f1(refs, hyps))
        return torch.cat(out).double().numpy() if out else np.zeros(0)


class _Padded(NamedTuple):
    states: torch.Tensor  # [b, t, hidden]
    mask: torch.Tensor  # [b, t] bool
    weights: torch.Tensor  # [b, t] float: 1 per word piece, 0 for [CLS]/[SEP] and padding


def _padded(states: list[torch.Tensor]) -> _Padded:
    lengths = torch.tensor([len(s) for s in states])
    mask = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
    weights = mask.float()
    weights[:, 0] = 0.0  # [CLS]
    weights[torch.arange(len(states)), lengths - 1] = 0.0  # [SEP]
    # Padding value 2.0 as in bert-score: any non-zero vector keeps the in-place normalisation finite.
    padded = torch.nn.utils.rnn.pad_sequence(states, batch_first=True, padding_value=2.0)
    return _Padded(padded, mask, weights)


def _greedy_f1(refs: _Padded, hyps: _Padded) -> torch.Tensor:
    """bert-score's greedy cosine matching (idf weights = our 0/1 weights); returns F1 [b]."""
    from bert_score.utils import greedy_cos_idf

    scores: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = greedy_cos_idf(
        refs.states, refs.mask, refs.weights, hyps.states, hyps.mask, hyps.weights
    )
    return scores[2]


@dataclass(frozen=True)
class EmbeddingCosine:
    """Cosine of mean-pooled sentence embeddings (the sentence-transformers recipe for MiniLM)."""

    encoder: Encoder
    """MiniLM at full depth; pooled over its last layer. Texts are truncated at 512 tokens where
    sentence-transformers stops at 256; responses of at most 100 generated tokens rarely reach either."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        vectors = self.encoder.pooled([*candidates, *references])
        return np.array([float(vectors[c] @ vectors[r]) for c, r in zip(candidates, references, strict=True)])
