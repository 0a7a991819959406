"""Captured-graph engine: the single-prefill engine with its decode on a static KV cache.

The prompt batch is read once and y_0 is scored exactly as in ``prefill.run_batch_single_prefill``
(same functions, same hidden states and scores). Only decoding differs: the prompt's cache is copied
into a transformers ``StaticCache`` whose length is fixed for the batch, and every step runs with the
same tensor shapes -- all rows stay in the batch until the last one finishes (a finished row's tokens are
discarded), and the attention mask covers every slot of the cache from the first step. Fixed shapes and
a cache at a fixed address let ``torch.compile(mode="reduce-overhead")`` capture one decode step as a CUDA
graph and replay it, instead of launching each layer's kernels from Python at every token, which left the
GPU mostly idle in the first GPU run (issue 51).

On a CPU the step runs uncompiled (graphs capture CUDA kernels only, and compiling costs minutes there):
the same code, and on float32 the same greedy ids as the single-prefill engine (tests/test_static_engine.py).
Not the default engine: it becomes the default on CUDA only once a GPU run (``make gpu-check``) measures it
faster than ``single_prefill``. Models with sliding-window layers are declined (a static sliding layer is a
ring buffer that the left-padded prompt layout would shift); they run the two-pass engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.cache_utils import StaticCache

from benchmark.models.engine import Response, cut_at_eos
from benchmark.models.prefill import (
    Prefill,
    generating,
    has_sliding_layers,
    layer_tensors,
    prefill_engine,
    unsupported_reason,
)

CACHE_BUCKET = 256
"""a batch's cache length is rounded up to a multiple of this, so that batches of similar prompt widths
share one compiled graph instead of capturing one per width."""

CACHES_KEPT = 4
"""static caches kept per model (a run has one batch size, a smaller last batch and a few prompt widths)."""

Step = Callable[[PreTrainedModel, torch.Tensor, torch.Tensor, torch.Tensor, StaticCache], torch.Tensor]
"""(model, tokens [rows, 1], mask [rows, cache length], positions [rows, 1], cache) -> greedy ids [rows]."""


def declines(model: object) -> str | None:
    """Why the static-cache engine cannot run ``model``: the single-prefill engine's reasons, and
    sliding-window layers."""
    reason = unsupported_reason(model)
    if reason is not None:
        return reason
    assert isinstance(model, PreTrainedModel)
    if has_sliding_layers(model):
        return "sliding-window layers need the dynamic cache"
    return None


def cache_length(prompt_width: int, max_new_tokens: int) -> int:
    """Slots of a batch's static cache: the prompt and every new token, rounded up to :data:`CACHE_BUCKET`.

    >>> cache_length(100, 100), cache_length(200, 100)
    (256, 512)
    """
    needed = prompt_width + max_new_tokens
    return -(-needed // CACHE_BUCKET) * CACHE_BUCKET


def static_cache(model: PreTrainedModel, state: Prefill, length: int) -> StaticCache:
    """A static cache of ``length`` slots holding the prefilled prompt cache in its first slots.

    The cache of each (rows, length, dtype) is kept on the model and reset for the next batch of that
    shape: a captured graph replays on the addresses it was recorded with, so a fresh cache per batch
    would make every batch compile and capture again.
    """
    rows = int(state.next_logits.shape[0])
    kept: dict[tuple[int, int, torch.dtype], StaticCache] = model.__dict__.setdefault(
        "_sago_static_caches", {}
    )
    cache = kept.get((rows, length, model.dtype))
    if cache is None:
        if len(kept) >= CACHES_KEPT:
            kept.clear()
        cache = StaticCache(config=model.config, max_cache_len=length)
        kept[(rows, length, model.dtype)] = cache
    else:
        cache.reset()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    for layer in range(len(state.cache.layers)):
        keys, values = layer_tensors(state.cache, layer)
        cache.update(keys, values, layer)
    return cache


def static_decode(
    model: PreTrainedModel, state: Prefill, *, max_new_tokens: int, eos_ids: frozenset[int]
) -> list[Response]:
    """Greedy decoding from the prefilled prompt with every row kept in the batch, until every row holds
    ``max_new_tokens`` tokens or an end-of-sequence token."""
    first = state.next_logits.argmax(-1)
    generated = [[token][:max_new_tokens] for token in first.tolist()]
    rows = range(len(generated))
    if not any(generating(g, max_new_tokens, eos_ids) for g in generated):
        return cut_at_eos(generated, eos_ids)
    width = state.attention_mask.shape[-1]
    length = cache_length(width, max_new_tokens)
    cache = static_cache(model, state, length)
    mask = torch.zeros((len(generated), length), dtype=state.attention_mask.dtype, device=first.device)
    mask[:, :width] = state.attention_mask
    token, position, step = first[:, None], state.last_position[:, None], decode_step(model)
    for slot in range(width, width + max_new_tokens - 1):
        live = [r for r in rows if generating(generated[r], max_new_tokens, eos_ids)]
        if not live:
            break
        mask[:, slot] = 1
        position = position + 1
        token = step(model, token, mask, position, cache)[:, None].clone()  # a graph replay reuses its output
        for row, value in zip(rows, token[:, 0].tolist(), strict=True):
            if row in live:
                generated[row].append(value)
    return cut_at_eos(generated, eos_ids)


def _step(
    model: PreTrainedModel,
    token: torch.Tensor,
    mask: torch.Tensor,
    position: torch.Tensor,
    cache: StaticCache,
) -> torch.Tensor:
    logits: torch.Tensor = model(
        input_ids=token, attention_mask=mask, position_ids=position, past_key_values=cache, use_cache=True
    ).logits
    return logits[:, -1, :].float().argmax(-1)


def decode_step(model: PreTrainedModel) -> Step:
    """The decode step: compiled with CUDA-graph capture on a GPU (built once per model and kept on it),
    plain Python on a CPU."""
    if model.device.type != "cuda":
        return _step
    kept: dict[str, Any] = model.__dict__.setdefault("_sago_static_step", {})
    if "step" not in kept:
        kept["step"] = torch.compile(_step, mode="reduce-overhead", fullgraph=False)
    step: Step = kept["step"]
    return step


run_batch_static = prefill_engine(static_decode, declines=declines)
"""Greedy responses, hidden states and y_0 scores: one prefill, then a fixed-shape decode loop on a
static cache (captured as a CUDA graph on a GPU). Same contract and outputs as
``prefill.run_batch_single_prefill``."""
