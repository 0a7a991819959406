"""Single-prefill engine: each prompt is read once, then its KV cache is branched.

The two-pass reference engine (``engine.run_batch_two_pass``) reads every prompt twice: once inside
``generate`` and again in the teacher-forced forward over ``[prompt ; y_0]``. Here the left-padded
prompt batch goes through the model once; that pass yields the hidden states at the last prompt token
and the logits that predict both the first greedy token and the first token of y_0. The cache is then
copied: one copy is extended by greedy decoding, the other by y_0 in a single forward call.

Left padding stays consistent across the branches because every call passes the full 2-D attention
mask (prompt mask, then one column per appended token) and explicit per-row position ids that
continue from each row's last real prompt token, exactly as ``generate`` computes them.

Handled: models whose decoder layers are full attention or sliding-window attention (Llama, Qwen2,
Gemma 3, Mistral, ...). Refused (:func:`unsupported_reason` says why; the backend then uses the
two-pass engine): encoder-decoders, chunked attention (its chunk boundaries depend on the padding),
and recurrent or compressed cache layers.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, TypedDict, Unpack

import torch
from transformers import PreTrainedModel
from transformers.cache_utils import DynamicCache

from benchmark.models.engine import (
    EMPTY_Y0,
    NOT_SCORED,
    DecodeOptions,
    Engine,
    RawOutput,
    Response,
    Scores,
    Tokens,
    cut_at_eos,
    left_pad,
    raw_outputs,
    row_scores,
)

# Layer types whose cache is a plain (optionally windowed) KV store and whose mask depends only on
# the distance between real tokens, so a branched cache behaves like a fresh forward.
_SUPPORTED_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})
# Shortest common prompt start worth a separate forward (a chat template's system turn is ~20-30 tokens).
MIN_SHARED_PREFIX = 4
_PREFIXES_KEPT = 8
"""one-row prefix caches kept per model (a run has one chat template, so one prefix)."""


class ForwardInputs(TypedDict, total=False):
    """Keyword arguments of one forward call that extends a cache (a decode step, a y_0 scoring pass)."""

    input_ids: torch.Tensor
    """long [rows, positions]: the tokens read."""
    attention_mask: torch.Tensor
    """long [rows, cache slots + positions]: 1 on the slots each row attends to."""
    position_ids: torch.Tensor
    """long [rows, positions]: each token's position, continuing from its row's last real token."""
    past_key_values: DynamicCache
    """the cache the call extends."""
    use_cache: bool


TokenPicker = Callable[[PreTrainedModel, ForwardInputs], torch.Tensor]
"""How a decode step picks its greedy tokens: (model, the step's forward inputs, whose cache the call
extends) -> long [rows]. The engines here take the argmax of the model's own logits (:func:`greedy_step`);
a caller may pass another picker to :func:`decode_lane` and :func:`step_lane`."""


class SinglePrefillUnsupported(ValueError):
    """The model's architecture cannot be run by the single-prefill engine; use the two-pass one."""


class Prefill(NamedTuple):
    """State after reading the prompt batch once."""

    cache: DynamicCache
    """KV cache over the left-padded prompts."""
    attention_mask: torch.Tensor
    """long [batch, prompt_len]: 1 on real tokens, 0 on left padding."""
    last_position: torch.Tensor
    """long [batch]: position id of each row's last prompt token (its real length - 1)."""
    next_logits: torch.Tensor
    """float32 [batch, vocab]: logits at the last prompt token (predict the first response token)."""
    hidden: torch.Tensor
    """float32 [batch, n_layers + 1, hidden]: states at the last prompt token, embeddings first."""


def unsupported_reason(model: object) -> str | None:
    """Why the single-prefill engine cannot run ``model``, or None when it can.

    >>> from benchmark.models.tiny import tiny_llama
    >>> unsupported_reason(tiny_llama()) is None
    True
    """
    if not isinstance(model, PreTrainedModel):
        return f"{type(model).__name__} is not a transformers PreTrainedModel"
    config = model.config
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder models are not supported"
    text_config = config.get_text_config(decoder=True)
    layer_types = _layer_types(text_config)
    if getattr(text_config, "attention_chunk_size", None) is not None:
        layer_types = [*layer_types, "chunked_attention"]
    odd = sorted(set(layer_types) - _SUPPORTED_LAYER_TYPES)
    if odd:
        return f"layer types {odd} are not supported (only {sorted(_SUPPORTED_LAYER_TYPES)})"
    return None


def _layer_types(text_config: object) -> list[str]:
    """The attention kind of each decoder layer (a config that names none has full attention only)."""
    return getattr(text_config, "layer_types", None) or ["full_attention"]


class Decoder(Protocol):
    """Greedy responses from a prefilled batch (extends its cache): :func:`greedy_decode` or another."""

    def __call__(
        self, model: PreTrainedModel, state: Prefill, *, max_new_tokens: int, eos_ids: frozenset[int]
    ) -> list[Response]: ...


def prefill_engine(
    decode: Decoder | None = None,
    *,
    draft: bool = False,
    declines: Callable[[object], str | None] = unsupported_reason,
) -> Engine:
    """An engine that reads each prompt once, scores y_0 through a copy of the prompt cache and decodes
    from the cache with ``decode`` (default :func:`greedy_decode`); ``draft``: y_0 is a free draft
    (see :data:`run_batch_draft`). Same contract and outputs as ``engine.run_batch_two_pass`` (equal
    greedy ids; floats equal up to floating-point reassociation).

    The engine raises :class:`SinglePrefillUnsupported` where ``declines`` names a reason (then the
    backend runs the two-pass engine), and ValueError when the baselines do not match the prompts.
    """

    def run(
        model: object, prompts: Tokens, baselines: Tokens | None, **options: Unpack[DecodeOptions]
    ) -> list[RawOutput]:
        max_new_tokens, eos_ids, pad_id = options["max_new_tokens"], options["eos_ids"], options["pad_id"]
        lm = checked_model(model, prompts, baselines, declines)
        with torch.inference_mode():
            state = prefill_batch(lm, prompts, pad_id)
            if draft and baselines is not None and draft_fits(lm, state, baselines, max_new_tokens):
                # decode each row from its first token that leaves y_0, in the scoring pass's cache
                drafted = score_and_draft(lm, state, baselines, pad_id)
                scores = drafted.scores
                lane = draft_lane(state, drafted, range(len(prompts)))
                generated = [p[:max_new_tokens] for p in drafted.prefix]
                responses = _finish(lm, lane, generated, max_new_tokens, eos_ids)
            else:
                scores = score_baselines(lm, state, baselines, pad_id)
                responses = (decode or greedy_decode)(
                    lm, state, max_new_tokens=max_new_tokens, eos_ids=eos_ids
                )
        return raw_outputs(responses, scores, state.hidden.cpu().numpy())

    return run


def checked_model(
    model: object,
    prompts: Sequence[Sequence[int]],
    baselines: Sequence[Sequence[int]] | None,
    declines: Callable[[object], str | None] = unsupported_reason,
) -> PreTrainedModel:
    """``model`` once it is known to suit these engines (``declines`` names no reason) and the baselines
    match the prompts."""
    reason = declines(model)
    if reason is not None:
        raise SinglePrefillUnsupported(reason)
    assert isinstance(model, PreTrainedModel)
    if baselines is not None and len(baselines) != len(prompts):
        raise ValueError(f"{len(baselines)} baselines for {len(prompts)} prompts")
    return model


def prefill_batch(model: PreTrainedModel, prompts: Sequence[Sequence[int]], pad_id: int) -> Prefill:
    """Run the prompts once, keeping the cache, last logits and hidden states.

    When every prompt starts with the same tokens (a chat template's system turn), that prefix is read
    once and its cache is repeated over the batch; the rest of each prompt is left-padded after it
    (layout ``[prefix][pads][rest]``; masks and explicit positions make the pads invisible).
    """
    shared = shared_prefix_length(model, prompts)
    if shared == 0:
        batch = left_pad(prompts, pad_id, model.device)
        ids, mask, positions = batch.input_ids, batch.attention_mask, batch.position_ids
        cache = DynamicCache(config=model.config)
    else:
        rest = left_pad([p[shared:] for p in prompts], pad_id, model.device)
        cache = _prefix_cache(model, prompts[0][:shared], len(prompts))
        ids, positions = rest.input_ids, rest.position_ids + shared
        mask = torch.cat([torch.ones_like(ids[:, :1]).expand(-1, shared), rest.attention_mask], dim=-1)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        output_hidden_states=True,
        logits_to_keep=1,
    )
    # With device_map="auto" layers live on several devices: gather everything on the input's device.
    hidden = torch.stack([h[:, -1, :].to(ids.device) for h in out.hidden_states], dim=1).float()
    return Prefill(
        cache=out.past_key_values,
        attention_mask=mask,
        last_position=positions[:, -1],
        next_logits=out.logits[:, -1, :].float().to(ids.device),
        hidden=hidden,
    )


def shared_prefix_length(model: PreTrainedModel, prompts: Sequence[Sequence[int]]) -> int:
    """Leading tokens common to every prompt that :func:`prefill_batch` reads once (0: no sharing).

    At least one token of every prompt stays outside the prefix (its state at the last prompt token
    is recorded). Sharing needs at least :data:`MIN_SHARED_PREFIX` tokens, and is skipped for models
    with sliding-window layers: their window counts cache slots, and the pads placed after the prefix
    would shift it.

    >>> from benchmark.models.tiny import tiny_llama
    >>> shared_prefix_length(tiny_llama(), [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9]])
    4
    >>> shared_prefix_length(tiny_llama(), [[1, 2, 3, 7], [1, 2, 3, 4, 9]])
    0
    """
    if len(prompts) < 2 or has_sliding_layers(model):
        return 0
    length = min(len(os.path.commonprefix([list(p) for p in prompts])), min(map(len, prompts)) - 1)
    return length if length >= MIN_SHARED_PREFIX else 0


def has_sliding_layers(model: PreTrainedModel) -> bool:
    """Some decoder layer attends through a sliding window (a Qwen2 config's ``sliding_window`` counts only
    with ``use_sliding_window``)."""
    text_config = model.config.get_text_config(decoder=True)
    return any(kind != "full_attention" for kind in _layer_types(text_config)) or bool(
        getattr(text_config, "use_sliding_window", False) and getattr(text_config, "sliding_window", None)
    )


def _prefix_cache(model: PreTrainedModel, prefix: Sequence[int], batch: int) -> DynamicCache:
    """The KV cache of ``prefix`` read once, repeated ``batch`` times along the batch dimension.

    The one-row cache of each prefix is kept on the model (a chat template's system turn starts every
    prompt of a run), so later batches copy it instead of reading the prefix again: the same bits, as
    the prefix is always read alone.
    """
    known: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = model.__dict__.setdefault(
        "_sago_prefix_states", {}
    )
    states = known.get(tuple(prefix))
    if states is None:
        device = model.device
        cache = DynamicCache(config=model.config)
        model(
            input_ids=torch.tensor([list(prefix)], device=device),
            attention_mask=torch.ones((1, len(prefix)), dtype=torch.long, device=device),
            position_ids=torch.arange(len(prefix), device=device)[None, :],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        states = [layer_tensors(cache, layer) for layer in range(len(cache.layers))]
        if len(known) >= _PREFIXES_KEPT:
            known.clear()
        known[tuple(prefix)] = states
    return DynamicCache(
        ddp_cache_data=[
            (k.repeat_interleave(batch, dim=0), v.repeat_interleave(batch, dim=0)) for k, v in states
        ],
        config=model.config,
    )


def layer_tensors(cache: DynamicCache, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values [batch, heads, slots, head_dim] of one cache layer."""
    keys, values = getattr(cache.layers[layer], "keys", None), getattr(cache.layers[layer], "values", None)
    if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
        raise SinglePrefillUnsupported(f"cache layer {layer} holds no key/value tensors")
    return keys, values


def greedy_decode(
    model: PreTrainedModel, state: Prefill, *, max_new_tokens: int, eos_ids: frozenset[int]
) -> list[Response]:
    """Greedy decoding from the prefilled cache (mutates ``state.cache``).

    A row that emits an end-of-sequence token leaves the batch: its cache rows, mask and position are
    dropped, so later steps only compute the rows still generating.
    """
    lane = prompt_lane(state, range(state.next_logits.shape[0]))
    generated = [[token][:max_new_tokens] for token in lane.token.tolist()]
    return _finish(model, lane, generated, max_new_tokens, eos_ids)


def prompt_lane(state: Prefill, rows: Sequence[int]) -> Lane:
    """The lane of a prefilled batch: each row's first greedy token, not yet in the cache."""
    return Lane(
        state.cache, state.attention_mask, state.last_position, state.next_logits.argmax(-1), list(rows)
    )


def generating(tokens: list[int], max_new_tokens: int, eos_ids: frozenset[int]) -> bool:
    """A row still generates while it holds fewer than ``max_new_tokens`` tokens, no end token last."""
    return len(tokens) < max_new_tokens and tokens[-1] not in eos_ids


def unfinished(
    lane: Lane, generated: list[list[int]], max_new_tokens: int, eos_ids: frozenset[int]
) -> Lane | None:
    """The rows of ``lane`` still generating (None when none is): fewer than ``max_new_tokens`` tokens and
    no end-of-sequence token last. Selects them in the lane's cache in place."""
    keep = [
        index for index, row in enumerate(lane.rows) if generating(generated[row], max_new_tokens, eos_ids)
    ]
    if not keep:
        return None
    if len(keep) == len(lane.rows):
        return lane
    chosen = torch.tensor(keep, dtype=torch.long, device=lane.token.device)
    return lane.select(chosen, [lane.rows[i] for i in keep])


def _finish(
    model: PreTrainedModel,
    lane: Lane,
    generated: list[list[int]],
    max_new_tokens: int,
    eos_ids: frozenset[int],
) -> list[Response]:
    """Decode the lane's unfinished rows to the end, then cut every row at its end-of-sequence token."""
    live = unfinished(lane, generated, max_new_tokens, eos_ids)
    if live is not None:
        decode_lane(model, live, generated, max_new_tokens, eos_ids)
    return cut_at_eos(generated, eos_ids)


def score_baselines(
    model: PreTrainedModel, state: Prefill, baselines: Sequence[Sequence[int]] | None, pad_id: int
) -> list[Scores]:
    """Teacher-force each row's y_0 through a copy of the prompt cache (the cache itself stays for
    decoding) in one forward call; :data:`NOT_SCORED` per row without y_0."""
    if baselines is None:
        return [NOT_SCORED] * len(state.last_position)
    if not any(baselines):
        return [EMPTY_Y0 for _ in baselines]
    inputs, _, _ = teacher_inputs(state, copy.deepcopy(state.cache), baselines, pad_id)
    out = model(**inputs)
    ids = inputs["input_ids"]
    return [
        row_scores(_predicting(state.next_logits[row], out.logits[row], len(b)), ids[row, : len(b)])
        if b
        else EMPTY_Y0
        for row, b in enumerate(baselines)
    ]


def teacher_inputs(
    state: Prefill, cache: DynamicCache, baselines: Sequence[Sequence[int]], pad_id: int
) -> tuple[ForwardInputs, torch.Tensor, int]:
    """Forward arguments that append each row's y_0 to ``cache`` (at least one y_0 non-empty), the long
    [batch, width] mask of y_0's real slots, and ``width``, the longest y_0.

    y_0 is right-padded: its real tokens come straight after the prompt, padding never precedes them.
    """
    device = state.next_logits.device
    width = max(len(b) for b in baselines)
    ids = torch.tensor([list(b) + [pad_id] * (width - len(b)) for b in baselines], device=device)
    y_mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in baselines], device=device)
    inputs: ForwardInputs = {
        "input_ids": ids,
        "attention_mask": torch.cat([state.attention_mask, y_mask], dim=-1),
        "position_ids": state.last_position[:, None] + 1 + torch.arange(width, device=device)[None, :],
        "past_key_values": cache,
        "use_cache": True,
    }
    return inputs, y_mask, width


def draft_prefix(y0: Sequence[int], greedy: Sequence[int]) -> list[int]:
    """The kept part of y_0 (up to the first position whose greedy token differs from it), then that
    greedy token; ``greedy`` holds the argmax at each of y_0's positions and one more."""
    kept = 0
    while kept < len(y0) and greedy[kept] == y0[kept]:
        kept += 1
    return [*y0[:kept], greedy[kept]]


def _predicting(first: torch.Tensor, continued: torch.Tensor, length: int) -> torch.Tensor:
    """float32 [length, vocab]: row j predicts y_0[j] -- the prompt's last position for j = 0, else
    y_0's position j - 1. Built per row so a batch never holds [batch, len(y_0), vocab] in float32."""
    rest = continued[: length - 1].float().to(first.device)
    return torch.cat([first[None, :], rest], dim=0)


run_batch_single_prefill = prefill_engine()
"""Greedy responses, hidden states and y_0 scores with one prefill per prompt (see :func:`prefill_engine`)."""
run_batch_draft = prefill_engine(draft=True)
"""The single-prefill engine with the item's baseline answer y_0 as a free draft.

The confidence axis already runs y_0 teacher-forced under every variant prompt, which yields the
variant's logits at every position of y_0. Greedy decoding of the variant repeats y_0 up to the first
position where those logits' argmax differs from y_0's token, so decoding starts there, from the cache
of that same scoring pass (the rest of y_0 is masked out of it), instead of regenerating the shared
prefix one token at a time. Hidden states and y_0 scores are the single-prefill engine's own; greedy
responses equal plain greedy decoding except where a float-level near-tie between two tokens resolves
differently because the shared prefix's keys and values were computed in one pass rather than step by
step (counted by ``sago bench --compare-engines``). Baseline batches (no y_0 yet) decode as usual.
"""


def draft_fits(
    model: PreTrainedModel, state: Prefill, baselines: Sequence[Sequence[int]], max_new_tokens: int
) -> bool:
    """True when every cache slot the draft continuation needs fits inside each sliding window (masked
    y_0 slots occupy window slots; past the window a sliding layer would drop real tokens)."""
    if not any(baselines):
        return False
    window = smallest_window(model)
    needed = state.attention_mask.shape[-1] + max(len(b) for b in baselines) + max_new_tokens
    return window is None or needed <= window


def smallest_window(model: PreTrainedModel) -> int | None:
    """The sliding window in tokens (0: sliding layers of unknown width), None without sliding layers."""
    if not has_sliding_layers(model):
        return None
    text_config = model.config.get_text_config(decoder=True)
    window = getattr(text_config, "sliding_window", None)
    return int(window) if window else 0


class Drafted(NamedTuple):
    """A batch after its y_0 scoring pass (the pass has appended y_0's slots to the batch's cache)."""

    scores: list[Scores]
    prefix: list[list[int]]
    """per row: the y_0 tokens greedy decoding repeats, then its first token that differs from y_0."""
    y_mask: torch.Tensor
    """long [batch, width]: 1 on each row's real y_0 slots."""
    width: int
    """y_0 slots appended to the cache (the longest y_0)."""


def score_and_draft(
    model: PreTrainedModel, state: Prefill, baselines: Sequence[Sequence[int]], pad_id: int
) -> Drafted:
    """Teacher-force y_0 through the prefilled cache: y_0's scores and each row's greedy draft prefix."""
    inputs, y_mask, width = teacher_inputs(state, state.cache, baselines, pad_id)
    out = model(**inputs)
    ids = inputs["input_ids"]
    scores = []
    prefix: list[list[int]] = []
    for row, y0 in enumerate(baselines):
        if y0:
            predicting = _predicting(state.next_logits[row], out.logits[row], len(y0) + 1)
            scores.append(row_scores(predicting[: len(y0)], ids[row, : len(y0)]))
            greedy = predicting.argmax(-1).tolist()
        else:
            scores.append(EMPTY_Y0)
            greedy = [int(state.next_logits[row].argmax())]
        prefix.append(draft_prefix(y0, greedy))
    return Drafted(scores, prefix, y_mask, width)


class Lane(NamedTuple):
    """Rows whose greedy decoding continues from a cache: everything one decode step needs."""

    cache: DynamicCache
    """KV cache, one batch row per entry of ``rows``."""
    mask: torch.Tensor
    """long [rows, cache slots]: 1 on the slots a row attends to."""
    position: torch.Tensor
    """long [rows]: position id of the last token in each row's cache."""
    token: torch.Tensor
    """long [rows]: the last generated token, not yet in the cache."""
    rows: list[int]
    """index of each row in the caller's ``generated`` list."""

    def select(self, keep: torch.Tensor, rows: list[int]) -> Lane:
        """Only the batch rows ``keep`` (mutates the cache), now standing for ``rows``."""
        self.cache.batch_select_indices(keep)
        return Lane(self.cache, self.mask[keep], self.position[keep], self.token[keep], rows)


def draft_lane(state: Prefill, drafted: Drafted, rows: Sequence[int]) -> Lane:
    """The lane of a scored batch: its cache holds prompt + ``drafted.width`` y_0 slots, and a row sees
    its kept y_0 tokens only."""
    device = state.next_logits.device
    kept = torch.tensor([len(p) - 1 for p in drafted.prefix], device=device)
    slot_mask = (torch.arange(drafted.width, device=device)[None, :] < kept[:, None]).to(drafted.y_mask.dtype)
    mask = torch.cat([state.attention_mask, slot_mask], dim=-1)
    position = state.last_position + kept  # position of the last kept y_0 token (the prompt's when none)
    token = torch.tensor([p[-1] for p in drafted.prefix], device=device)
    return Lane(state.cache, mask, position, token, list(rows))


def decode_lane(
    model: PreTrainedModel,
    lane: Lane,
    generated: list[list[int]],
    max_new_tokens: int,
    eos_ids: frozenset[int],
    pick: TokenPicker | None = None,
) -> None:
    """Greedy decoding of every row of ``lane`` until it emits an end-of-sequence token or holds
    ``max_new_tokens`` tokens; appends to ``generated[row]`` (mutates the lane's cache). A row that
    stops leaves the batch, so later steps compute only the rows still generating. ``pick``: how each
    step picks its tokens (see :func:`step_lane`)."""
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=lane.token.device)
    live: Lane | None = lane
    while live is not None:
        live = step_lane(model, live, generated, max_new_tokens, eos, pick)


def step_lane(
    model: PreTrainedModel,
    lane: Lane,
    generated: list[list[int]],
    max_new_tokens: int,
    eos: torch.Tensor,
    pick: TokenPicker | None = None,
) -> Lane | None:
    """One greedy step of every row of ``lane``: appends each row's token to ``generated[row]`` and
    returns the rows still generating (None when none is), their cache rows selected in place.

    ``pick`` picks the step's tokens (default :func:`greedy_step`: the argmax of the model's logits)."""
    device = lane.token.device
    mask = torch.cat([lane.mask, torch.ones_like(lane.mask[:, :1])], dim=-1)
    position = lane.position + 1
    inputs: ForwardInputs = {
        "input_ids": lane.token[:, None],
        "attention_mask": mask,
        "position_ids": position[:, None],
        "past_key_values": lane.cache,
        "use_cache": True,
    }
    token = (pick or greedy_step)(model, inputs).to(device)
    for row, value in zip(lane.rows, token.tolist(), strict=True):
        generated[row].append(value)
    live = ~torch.isin(token, eos) & torch.tensor(
        [len(generated[r]) < max_new_tokens for r in lane.rows], device=device
    )
    stepped = Lane(lane.cache, mask, position, token, lane.rows)
    if bool(live.all()):
        return stepped
    keep = live.nonzero().squeeze(-1)
    rows = [lane.rows[i] for i in keep.tolist()]
    return stepped.select(keep, rows) if rows else None


def greedy_step(model: PreTrainedModel, inputs: ForwardInputs) -> torch.Tensor:
    """long [rows]: the greedy token of one decode step, the argmax of the model's float32 logits (extends
    the cache in ``inputs``)."""
    logits: torch.Tensor = model(**inputs).logits
    return logits[:, -1, :].float().argmax(-1)
