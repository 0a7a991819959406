"""Tensor-level work on a Hugging Face causal LM: greedy generation and teacher-forced scoring.

Contract shared by the two engines (two-pass here, single-prefill in ``prefill.py``): given token ids
of rendered prompts (and, after the baseline phase, of the baseline responses y_0), return one
:class:`RawOutput` per prompt, in order, independent of how the prompts were batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class RawOutput:
    """What one prompt yields at the tensor level."""

    response_ids: list[int]
    """greedy continuation, end-of-sequence token excluded."""
    finished: bool
    """an end-of-sequence token ended generation (False: the token limit did)."""
    logprob_sum: float
    """sum over y_0's tokens of log p(token | prompt, previous y_0 tokens); NaN without y_0."""
    logprob_mean: float
    """logprob_sum / scored_tokens; NaN without y_0."""
    entropy_mean: float
    """mean over y_0's positions of the full-vocabulary entropy (nats); NaN without y_0."""
    scored_tokens: int
    """len(y_0) scored (0 without y_0)."""
    hidden: np.ndarray
    """float32 [n_layers + 1, hidden_size]: hidden states at the last prompt token, embeddings first."""


class Engine(Protocol):
    """Signature of ``run_batch_two_pass`` and ``run_batch_single_prefill``."""

    def __call__(self, model: object, prompts: Sequence[Sequence[int]],
                 baselines: Sequence[Sequence[int]] | None, *, max_new_tokens: int,
                 eos_ids: frozenset[int], pad_id: int) -> list[RawOutput]: ...


def run_batch_two_pass(model: object, prompts: Sequence[Sequence[int]],
                       baselines: Sequence[Sequence[int]] | None, *, max_new_tokens: int,
                       eos_ids: frozenset[int], pad_id: int) -> list[RawOutput]:
    """Reference engine: one batched greedy ``generate`` over the left-padded prompts, then one
    forward pass over ``[prompt ; y_0]`` for hidden states and confidence numbers."""
    raise NotImplementedError("being written by the harness engineer")
