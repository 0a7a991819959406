"""Tensor-level work on a Hugging Face causal LM: greedy generation and teacher-forced scoring.

It also holds :class:`EngineSpec`, what the backend asks of an engine, here rather than in ``hf.py``
so that ``pooled.py`` can describe its engine without importing the registry that lists it. The
contract every engine keeps is :class:`Engine`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypedDict, Unpack, cast

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


Tokens = Sequence[Sequence[int]]
"""token ids of several texts (rendered prompts, or baseline responses y_0), one sequence per text."""


class DecodeOptions(TypedDict):
    """The keyword arguments every engine takes."""

    max_new_tokens: int
    """generation limit per prompt; 0 skips generation."""
    eos_ids: frozenset[int]
    """tokens that end a response."""
    pad_id: int
    """token used for left padding (masked out, never attended to)."""


class Engine(Protocol):
    """An engine: ``run_batch_two_pass``, ``run_batch_single_prefill`` and the others of ``hf.ENGINES``.

    Given a model, token ids of rendered prompts (each non-empty) and, after the baseline phase, of each
    prompt's baseline response y_0 (None while the baselines are generated: then the confidence numbers
    are NaN and ``scored_tokens`` is 0), it returns one :class:`RawOutput` per prompt, in order,
    independent of how the prompts were batched.
    """

    def __call__(
        self, model: object, prompts: Tokens, baselines: Tokens | None, **options: Unpack[DecodeOptions]
    ) -> list[RawOutput]: ...


@dataclass(frozen=True)
class EngineSpec:
    """An engine and what :class:`HFBackend` asks of it besides running batches (the defaults: nothing)."""

    name: str
    """the engine's name (``--engine``), recorded in run.json."""
    run: Engine
    """the engine itself."""
    declines: Callable[[object], str | None] | None = None
    """why it cannot run a model (None: it can); a declined model runs the two-pass engine instead."""
    forwards_per_call: int = 1
    """forwards one engine call is cut into: a backend made for ``batch_size`` prompts per forward calls
    the engine on that many times more prompts (the pooled engine: ``POOL``; every other engine: 1)."""
    options: Callable[[int, bool], dict[str, int]] | None = None
    """extra keyword arguments of each call, from (prompts per forward, whether the batch is the rerun
    control's)."""
    prepare: Callable[[Any], None] | None = None
    """builds what the engine keeps per model, before the first batch (a one-time cost, like loading)."""
    settings: Callable[[Any], dict[str, object]] | None = None
    """run.json's ``engine_settings`` for a model (None: the engine records none)."""
    about: str = ""
    """what it is, in ``--engine``'s help."""


@dataclass(frozen=True)
class PaddedBatch:
    """Left-padded token ids with their attention mask and pad-aware positions."""

    input_ids: torch.Tensor
    """long [batch, length]; pads on the left."""
    attention_mask: torch.Tensor
    """long [batch, length]; 0 on pads."""
    position_ids: torch.Tensor
    """long [batch, length]; 0 at the first real token, so padding does not shift positions."""


class Scores(NamedTuple):
    """Teacher-forced statistics of y_0 for one prompt."""

    logprob_sum: float
    """summed log p(y_0 | prompt); NaN without y_0."""
    logprob_mean: float
    """per-token mean of the same; NaN without y_0 or when y_0 is empty."""
    entropy_mean: float
    """mean full-vocabulary entropy over y_0's positions; NaN without y_0 or when it is empty."""
    scored_tokens: int
    """tokens of y_0 scored."""


# An empty y_0 has probability 1 (sum 0) and no mean or entropy.
EMPTY_Y0 = Scores(0.0, math.nan, math.nan, 0)
NOT_SCORED = Scores(math.nan, math.nan, math.nan, 0)


class Response(NamedTuple):
    """One prompt's greedy response."""

    ids: list[int]
    """generated ids with the end-of-sequence token and anything after it removed."""
    finished: bool
    """an end-of-sequence token stopped generation."""


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
    return GenerationConfig(  # type: ignore[no-untyped-call]
        do_sample=False,
        num_beams=1,
        max_new_tokens=max_new_tokens,
        eos_token_id=sorted(eos_ids),
        pad_token_id=pad_id,
        repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        min_new_tokens=0,
    )


def cut_at_eos(generated: Iterable[list[int]], eos_ids: frozenset[int]) -> list[Response]:
    """Each row up to (excluding) its first end-of-sequence token, and whether it had one.

    >>> cut_at_eos([[5, 2, 6], [5]], frozenset({2}))
    [Response(ids=[5], finished=True), Response(ids=[5], finished=False)]
    """
    responses = []
    for row in generated:
        stop = next((i for i, token in enumerate(row) if token in eos_ids), None)
        responses.append(Response(row, False) if stop is None else Response(row[:stop], True))
    return responses


def greedy_generate(
    model: Any, prompts: Tokens, *, max_new_tokens: int, eos_ids: frozenset[int], pad_id: int
) -> list[Response]:
    """Batched greedy decoding with ``generate``: one response per prompt."""
    if max_new_tokens <= 0:
        return [Response([], False) for _ in prompts]
    batch = left_pad(prompts, pad_id, model.device)
    config = greedy_config(max_new_tokens, eos_ids, pad_id)
    with plain_greedy(model, config):
        out = model.generate(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, generation_config=config
        )
    generated = out[:, batch.input_ids.shape[1] :].tolist()  # [batch, <= max_new_tokens]
    return cut_at_eos(generated, eos_ids)


def row_scores(logits: torch.Tensor, targets: torch.Tensor) -> Scores:
    """Sum/mean log-probability of ``targets`` and their mean entropy (:data:`EMPTY_Y0` when empty).

    ``logits`` is [len(targets), vocab]; row j predicts ``targets[j]``.
    """
    count = int(targets.numel())
    if count == 0:
        return EMPTY_Y0
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    token_logp = log_probs.gather(-1, targets[:, None]).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    total = float(token_logp.sum())
    return Scores(total, total / count, float(entropy.mean()), count)


def teacher_forced_pass(
    model: Any, prompts: Tokens, baselines: Tokens | None, *, pad_id: int
) -> tuple[list[Scores], np.ndarray]:
    """One forward over ``[prompt ; y_0]`` (or the prompt alone): confidence per prompt, and the hidden
    states, float32 [batch, n_layers + 1, hidden], at each prompt's last token."""
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
    if baselines is None:
        return [NOT_SCORED for _ in tails], states
    scores = [
        row_scores(out.logits[row, keep - len(tail) - 1 : keep - 1], torch.tensor(tail, device=rows.device))
        for row, tail in enumerate(tails)
    ]
    return scores, states


def raw_outputs(
    responses: Iterable[Response], scores: Iterable[Scores], hidden: np.ndarray
) -> list[RawOutput]:
    """One :class:`RawOutput` per row; ``hidden`` is float32 [rows, n_layers + 1, hidden_size]."""
    return [
        RawOutput(response.ids, response.finished, *score, np.ascontiguousarray(state, dtype=np.float32))
        for response, score, state in zip(responses, scores, hidden, strict=True)
    ]


def run_batch_two_pass(
    model: object,
    prompts: Tokens,
    baselines: Tokens | None,
    *,
    read: bool = True,
    **options: Unpack[DecodeOptions],
) -> list[RawOutput]:
    """Reference engine (see :class:`Engine`): one batched greedy ``generate`` over the left-padded
    prompts, then one forward pass over ``[prompt ; y_0]`` (or the prompt alone) for hidden states and
    confidence numbers; an empty y_0 scores ``logprob_sum`` 0 and NaN mean/entropy. ``read=False`` skips
    the second pass (plain ``generate`` as an engine, for the GPU check: no scores, hidden states of
    shape [0, 0])."""
    if baselines is not None and len(baselines) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(baselines)} baselines")
    lm = cast(Any, model)
    with torch.inference_mode():
        responses = greedy_generate(lm, prompts, **options)
        if not read:
            return raw_outputs(responses, [NOT_SCORED] * len(prompts), np.zeros((len(prompts), 0, 0)))
        scores, hidden = teacher_forced_pass(lm, prompts, baselines, pad_id=options["pad_id"])
    return raw_outputs(responses, scores, hidden)
