"""Tensor-level work on a Hugging Face causal LM: greedy generation and teacher-forced scoring.

Contract shared by the two engines (two-pass here, single-prefill in ``prefill.py``): given token ids
of rendered prompts (and, after the baseline phase, of the baseline responses y_0), return one
:class:`RawOutput` per prompt, in order, independent of how the prompts were batched.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
import torch
from transformers import GenerationConfig


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

    def __call__(
        self,
        model: object,
        prompts: Sequence[Sequence[int]],
        baselines: Sequence[Sequence[int]] | None,
        *,
        max_new_tokens: int,
        eos_ids: frozenset[int],
        pad_id: int,
    ) -> list[RawOutput]: ...


@dataclass(frozen=True)
class PaddedBatch:
    """Left-padded token ids with their attention mask and pad-aware positions."""

    input_ids: torch.Tensor
    """long [batch, length]; pads on the left."""
    attention_mask: torch.Tensor
    """long [batch, length]; 0 on pads."""
    position_ids: torch.Tensor
    """long [batch, length]; 0 at the first real token, so padding does not shift positions."""


@dataclass(frozen=True)
class Scored:
    """What the forward pass yields for one prompt."""

    logprob_sum: float
    """summed log p(y_0 | prompt); NaN without y_0."""
    logprob_mean: float
    """per-token mean of the same; NaN without y_0 or when y_0 is empty."""
    entropy_mean: float
    """mean full-vocabulary entropy over y_0's positions; NaN without y_0 or when it is empty."""
    scored_tokens: int
    """tokens of y_0 scored."""
    hidden: np.ndarray
    """float32 [n_layers + 1, hidden_size] at the last prompt token."""


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> PaddedBatch:
    """Left-pad token id sequences into one batch.

    >>> b = left_pad([[5, 6], [7]], pad_id=0, device=torch.device("cpu"))
    >>> b.input_ids.tolist(), b.attention_mask.tolist(), b.position_ids.tolist()
    ([[5, 6], [0, 7]], [[1, 1], [0, 1]], [[0, 1], [0, 0]])
    """
    if not sequences or any(len(s) == 0 for s in sequences):
        raise ValueError("every sequence needs at least one token")
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, width - len(seq) :] = torch.tensor(list(seq), dtype=torch.long)
        mask[row, width - len(seq) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return PaddedBatch(ids.to(device), mask.to(device), positions.to(device))


@contextmanager
def plain_greedy(model: Any, config: GenerationConfig) -> Iterator[None]:
    """Swap in a clean generation config for the call.

    ``generate`` fills every unset option from ``model.generation_config``, which for instruct models
    on the Hub often carries sampling settings or a repetition penalty; greedy decoding must not
    depend on what a model card happened to ship.
    """
    saved = model.generation_config
    model.generation_config = config
    try:
        yield
    finally:
        model.generation_config = saved


def greedy_config(max_new_tokens: int, eos_ids: frozenset[int], pad_id: int) -> GenerationConfig:
    """Greedy decoding with every option that could alter it pinned to its neutral value."""
    config: GenerationConfig = GenerationConfig(  # type: ignore[no-untyped-call]
        do_sample=False,
        num_beams=1,
        max_new_tokens=max_new_tokens,
        eos_token_id=sorted(eos_ids),
        pad_token_id=pad_id,
        repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        min_new_tokens=0,
    )
    return config


def _cut_at_eos(row: list[int], eos_ids: frozenset[int]) -> tuple[list[int], bool]:
    """Generated ids up to (excluding) the first end-of-sequence token, and whether one was hit."""
    for index, token in enumerate(row):
        if token in eos_ids:
            return row[:index], True
    return row, False


def greedy_generate(
    model: Any, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, eos_ids: frozenset[int], pad_id: int
) -> list[tuple[list[int], bool]]:
    """Batched greedy decoding; returns (response ids without eos, finished) per prompt."""
    if max_new_tokens <= 0:
        return [([], False) for _ in prompts]
    batch = left_pad(prompts, pad_id, model.device)
    config = greedy_config(max_new_tokens, eos_ids, pad_id)
    with plain_greedy(model, config):
        out = model.generate(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, generation_config=config
        )
    generated = out[:, batch.input_ids.shape[1] :].tolist()  # [batch, <= max_new_tokens]
    return [_cut_at_eos(row, eos_ids) for row in generated]


def _score_row(logits: torch.Tensor, targets: Sequence[int]) -> tuple[float, float, float]:
    """Log-prob sum, mean and mean entropy of ``targets`` given the logits that predict them.

    ``logits`` is [len(targets), vocab]; row j predicts ``targets[j]``.
    """
    if not targets:
        return 0.0, math.nan, math.nan
    logp = torch.log_softmax(logits.float(), dim=-1)
    picked = logp.gather(-1, torch.tensor(list(targets), device=logp.device).unsqueeze(-1))
    entropy = -(logp.exp() * logp).sum(-1)
    total = float(picked.sum())
    return total, total / len(targets), float(entropy.mean())


def teacher_forced_pass(
    model: Any, prompts: Sequence[Sequence[int]], baselines: Sequence[Sequence[int]] | None, *, pad_id: int
) -> list[Scored]:
    """One forward over ``[prompt ; y_0]`` (or the prompt alone): hidden states and confidence."""
    tails = [list(b) for b in baselines] if baselines is not None else [[] for _ in prompts]
    batch = left_pad([list(p) + t for p, t in zip(prompts, tails, strict=True)], pad_id, model.device)
    # Left padding right-aligns every row, so the logits predicting any row's y_0 lie within the
    # last max(len(y_0)) + 1 positions: keep only those instead of a [batch, length, vocab] tensor.
    keep = max(len(t) for t in tails) + 1
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        output_hidden_states=True,
        use_cache=False,
        logits_to_keep=keep,
    )
    width = batch.input_ids.shape[1]
    rows = torch.arange(len(tails), device=batch.input_ids.device)
    last_prompt = torch.tensor([width - len(t) - 1 for t in tails], device=rows.device)
    # [batch, n_layers + 1, hidden]: each layer's state at each row's last prompt token.
    states = torch.stack([h[rows, last_prompt] for h in out.hidden_states], dim=1).float().cpu().numpy()
    results = []
    for row, tail in enumerate(tails):
        hidden = states[row]
        if baselines is None:
            results.append(Scored(math.nan, math.nan, math.nan, 0, hidden))
            continue
        predicting = out.logits[row, keep - len(tail) - 1 : keep - 1]  # [len(y_0), vocab]
        total, mean, entropy = _score_row(predicting, tail)
        results.append(Scored(total, mean, entropy, len(tail), hidden))
    return results


def run_batch_two_pass(
    model: object,
    prompts: Sequence[Sequence[int]],
    baselines: Sequence[Sequence[int]] | None,
    *,
    max_new_tokens: int,
    eos_ids: frozenset[int],
    pad_id: int,
) -> list[RawOutput]:
    """Reference engine: one batched greedy ``generate`` over the left-padded prompts, then one
    forward pass over ``[prompt ; y_0]`` for hidden states and confidence numbers.

    Args:
        model: a Hugging Face causal LM in eval mode.
        prompts: token ids of each rendered prompt (each non-empty).
        baselines: token ids of y_0 per prompt, or None while the baselines are generated (then the
            confidence numbers are NaN, ``scored_tokens`` 0 and the forward covers the prompt alone).
        max_new_tokens: generation limit; 0 skips generation.
        eos_ids: tokens that end a response.
        pad_id: token used for left padding (masked out, never attended to).

    Returns:
        One :class:`RawOutput` per prompt, in order. An empty y_0 scores ``logprob_sum`` 0 and NaN
        mean/entropy.
    """
    if baselines is not None and len(baselines) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(baselines)} baselines")
    lm = cast(Any, model)
    with torch.inference_mode():
        responses = greedy_generate(
            lm, prompts, max_new_tokens=max_new_tokens, eos_ids=eos_ids, pad_id=pad_id
        )
        scores = teacher_forced_pass(lm, prompts, baselines, pad_id=pad_id)
    return [
        RawOutput(
            response_ids=ids,
            finished=finished,
            logprob_sum=s.logprob_sum,
            logprob_mean=s.logprob_mean,
            entropy_mean=s.entropy_mean,
            scored_tokens=s.scored_tokens,
            hidden=s.hidden,
        )
        for (ids, finished), s in zip(responses, scores, strict=True)
    ]
