"""The encoders behind BERTScore and the sentence-embedding cosine (torch; bert-score's matching).

A :class:`Backbone` (``benchmark.axes.text``) names the model; :class:`Encoder` runs each distinct text
through it once and keeps both the token states (BERTScore) and the pooled vector (embedding cosine).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from tqdm.auto import tqdm

from benchmark.axes.text import Backbone


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
        # Similar lengths share a batch (little padding); ties by text, since a set's order follows the
        # per-process hash seed and a batch's padding moves the floats (~1e-8).
        distinct = sorted(set(texts), key=lambda t: (len(t), t))
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
