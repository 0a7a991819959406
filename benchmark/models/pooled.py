"""Pooled draft engine: the draft engine, with decoding regrouped across the micro-batches of one call.

The default engine of a new run on a CPU (``benchmark.models.hf.default_engine``; ``--engine pooled``
anywhere), and the one ``make bench-peer``, ``make bench-floor`` and ``make scoring-accuracy`` time. No
committed result was made with it: their re-runs keep the engine their run.json records.

Why: on a CPU a decode step costs nearly as much for a few rows as for a full batch (it reads every
weight once), and a batch decodes for as many steps as its slowest row needs. With y_0 as a draft, many
rows need few or no new tokens while one row in eight may need them all, so the draft engine saves
row-steps but hardly any steps. Here one engine call holds :data:`POOL` micro-batches, its rows sorted
by prompt length in tokens. Each micro-batch is read once and scores y_0 as the draft engine does
(same prefill, same scoring pass); then every row still decoding, from any of the
micro-batches, joins one queue, longest first, and decodes in a batch of the forward width whose
finished rows are replaced by waiting ones (continuous batching). No forward holds more rows than that
width: a backend made for ``b`` prompts per forward calls this engine on ``POOL * b`` prompts.

The rows of a decode batch come from different caches: each row's cache is left-padded with masked
slots to the widest one (masks and explicit positions make the pads invisible, as for prompt
padding). Greedy tokens can differ from the single-prefill engine's only where a float-level near-tie
resolves differently in another batch shape. Sliding-window models pool only while every padded row fits
inside the window; otherwise each micro-batch decodes alone.

Where the model's logits are a plain linear head of its final hidden state, the output layer is not
run as one float32 product. The y_0 scoring pass applies it in vocabulary slices with running statistics
(:mod:`benchmark.models.chunked`: no [rows, len(y_0), vocab] tensor; y_0 scores equal up to float
reassociation, or over a vocabulary of 131,072 tokens or more, exact float32 logits where the probability
is and a float16 screen's for the tail, within float32 log-softmax's own error). Decode steps pick tokens
through a float16 screen with an error bound and a float32 pick among its few candidates
(:mod:`benchmark.models.screen`: the float32 argmax without the full product).
Hidden states are the prefill's own, unchanged.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple, Unpack

import numpy as np
import torch
from torch.nn import functional
from transformers import PreTrainedModel
from transformers.cache_utils import DynamicCache

from benchmark.models.chunked import score_and_draft_chunked, sliced_screen
from benchmark.models.engine import (
    NOT_SCORED,
    DecodeOptions,
    EngineSpec,
    RawOutput,
    Scores,
    Tokens,
    cut_at_eos,
    raw_outputs,
)
from benchmark.models.prefill import (
    Lane,
    SinglePrefillUnsupported,
    TokenPicker,
    checked_model,
    decode_lane,
    draft_fits,
    draft_lane,
    generating,
    layer_tensors,
    prefill_batch,
    prompt_lane,
    score_and_draft,
    score_baselines,
    smallest_window,
    step_lane,
    unfinished,
    unsupported_reason,
)
from benchmark.models.screen import ScreenedHead, plain_head, screened_head, screened_step
from benchmark.schema import rerun_batch_size

POOL = 4
"""micro-batches per full engine call: the backend's forwards hold a POOL-th of its batch size."""
REFILL_FRACTION = 4
"""waiting rows join the decode batch once a ``1 / REFILL_FRACTION`` of its places are free (each join
copies the batch's cache, so joining one row at a time would cost more than it saves)."""


def micro_batches(lengths: Sequence[int], size: int | None = None) -> list[list[int]]:
    """Row indices of each micro-batch: the rows ordered by prompt length in tokens (then index), cut
    into parts of ``size`` rows (default ``ceil(len / POOL)``), so each forward pads little.

    The harness plans its batches by characters; within a batch, token counts can differ more (an
    odd-capitalisation rewrite has more tokens per character), and re-sorting them here is free.

    >>> micro_batches([5, 1, 3, 2, 9, 9, 1, 4, 2, 7])
    [[1, 6, 3], [8, 2, 7], [0, 9, 4], [5]]
    >>> micro_batches([])
    []
    """
    count = len(lengths)
    rows = size or max(1, math.ceil(count / POOL))
    order = sorted(range(count), key=lambda row: (lengths[row], row))
    return [order[start : start + rows] for start in range(0, count, rows)]


def run_batch_pooled(
    model: object,
    prompts: Tokens,
    baselines: Tokens | None,
    *,
    micro_rows: int | None = None,
    decode_rows: int | None = None,
    **options: Unpack[DecodeOptions],
) -> list[RawOutput]:
    """Greedy responses, hidden states and y_0 scores; see the module docstring.

    Hidden states of each row are the single-prefill engine's on the row's micro-batch, bit for bit; its
    y_0 scores are too, up to float reassociation where the scoring pass runs in vocabulary slices.
    ``micro_rows`` is the micro-batch size and ``decode_rows`` the width of the decode batch (defaults:
    ``ceil(len(prompts) / POOL)`` both). The backend passes its prompts per forward for both
    (:func:`engine_options`: half that for the rerun control's micro-batches, which must differ from the
    baselines'), so a short batch (a phase's last, or a few baselines) is read and decoded in one piece,
    not in small parts.

    Raises:
        SinglePrefillUnsupported: the architecture needs the two-pass engine.
    """
    max_new_tokens, eos_ids, pad_id = options["max_new_tokens"], options["eos_ids"], options["pad_id"]
    model = checked_model(model, prompts, baselines)
    parts = micro_batches([len(p) for p in prompts], micro_rows)
    generated: list[list[int]] = [[] for _ in prompts]
    scores: list[Scores] = [NOT_SCORED for _ in prompts]
    hidden: dict[int, np.ndarray] = {}
    lanes: list[Lane] = []
    with torch.inference_mode():
        for rows in parts:
            ys = None if baselines is None else [baselines[i] for i in rows]
            read = _read_part(model, [prompts[i] for i in rows], ys, rows, generated, pad_id, max_new_tokens)
            hidden |= dict(zip(rows, read.hidden, strict=True))
            for row, score in zip(rows, read.scores, strict=True):
                scores[row] = score
                del generated[row][max_new_tokens:]
            lanes.append(read.lane)
        width = decode_rows or (len(parts[0]) if parts else 1)
        # through the screened output layer where the model has one, else the argmax of its own logits
        head = _decode_head(model)
        pick = None if head is None else screened_step(head)
        _pooled_decode(model, lanes, generated, max_new_tokens, eos_ids, width, pick)
    stacked = np.stack([hidden[row] for row in range(len(prompts))]) if hidden else np.zeros((0, 0, 0))
    return raw_outputs(cut_at_eos(generated, eos_ids), scores, stacked)


class _Read(NamedTuple):
    """One micro-batch after its prefill and scoring pass."""

    hidden: list[np.ndarray]
    """per row, float32 [n_layers + 1, hidden] at the last prompt token."""
    lane: Lane
    """its rows, ready to decode."""
    scores: list[Scores]


def _read_part(
    model: PreTrainedModel,
    prompts: list[Sequence[int]],
    baselines: list[Sequence[int]] | None,
    rows: list[int],
    generated: list[list[int]],
    pad_id: int,
    max_new_tokens: int,
) -> _Read:
    """Prefill one micro-batch, score its y_0 and start its rows, as the draft engine does.

    Writes each row's first tokens (its draft prefix, or its first greedy token) into ``generated``.
    """
    state = prefill_batch(model, prompts, pad_id)
    hidden = list(state.hidden.cpu().numpy())
    if baselines is not None and draft_fits(model, state, baselines, max_new_tokens):
        weight = plain_head(model)
        drafted = (
            score_and_draft(model, state, baselines, pad_id)
            if weight is None
            else score_and_draft_chunked(model, state, baselines, pad_id, weight, sliced_screen(model))
        )
        for row, prefix in zip(rows, drafted.prefix, strict=True):
            generated[row] = list(prefix)
        lane = draft_lane(state, drafted, rows)
        return _Read(hidden, lane, drafted.scores)
    scores = score_baselines(model, state, baselines, pad_id)
    lane = prompt_lane(state, rows)
    for row, token in zip(rows, lane.token.tolist(), strict=True):
        generated[row] = [token]
    return _Read(hidden, lane, scores)


def _decode_head(model: PreTrainedModel) -> ScreenedHead | None:
    """The screened output layer decode steps pick tokens with, screening slice by slice where the
    model's large vocabulary has slices (the picks are the same: :func:`screen.greedy_tokens`)."""
    return sliced_screen(model) or screened_head(model)


def _pooled_decode(
    model: PreTrainedModel,
    lanes: list[Lane],
    generated: list[list[int]],
    max_new_tokens: int,
    eos_ids: frozenset[int],
    size: int,
    pick: TokenPicker | None,
) -> None:
    """Decode every unfinished row of every lane, in batches of ``size`` rows regrouped by tokens left;
    ``pick``: how each step picks its tokens (None: the argmax of the model's own logits)."""
    window = smallest_window(model)
    widest = max((lane.mask.shape[-1] for lane in lanes), default=0)
    # A live row grows by up to max_new_tokens before and after a merge pads newcomers to its width.
    if window is not None and widest + 2 * max_new_tokens > window:
        # Padding to the widest row could push a row past a sliding window: decode each lane alone.
        for lane in lanes:
            if (alone := unfinished(lane, generated, max_new_tokens, eos_ids)) is not None:
                decode_lane(model, alone, generated, max_new_tokens, eos_ids, pick)
        return
    pending = [
        (lane, index)
        for lane in lanes
        for index, row in enumerate(lane.rows)
        if generating(generated[row], max_new_tokens, eos_ids)
    ]
    if not pending:
        return
    # Most tokens left first (then the caller's row order): the longest rows start early, and rows
    # that finish are replaced by the next waiting rows (continuous batching), so every step holds
    # nearly ``size`` rows until the queue runs dry.
    pending.sort(key=lambda pick: (len(generated[pick[0].rows[pick[1]]]), pick[0].rows[pick[1]]))
    queue = deque(pending)
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=lanes[0].token.device)
    live: Lane | None = None
    while queue or live is not None:
        free = size - (0 if live is None else len(live.rows))
        if queue and (live is None or free >= max(1, size // REFILL_FRACTION)):
            joining = [queue.popleft() for _ in range(min(free, len(queue)))]
            staying = [] if live is None else [(live, index) for index in range(len(live.rows))]
            live = _merge(model, staying + joining)
        assert live is not None
        live = step_lane(model, live, generated, max_new_tokens, eos, pick)


def _merge(model: PreTrainedModel, picks: Sequence[tuple[Lane, int]]) -> Lane:
    """One lane of the picked rows (lane, batch row): caches, masks, positions and tokens gathered, each
    row's cache and mask left-padded with masked slots to the widest pick. The source lanes are not
    changed."""
    width = max(lane.mask.shape[-1] for lane, _ in picks)
    layers = []
    for layer in range(len(picks[0][0].cache.layers)):
        keys, values = [], []
        for lane, index in picks:
            cached, cached_values = layer_tensors(lane.cache, layer)
            if cached.shape[-2] != lane.mask.shape[-1]:
                raise SinglePrefillUnsupported(f"cache layer {layer} does not hold one slot per mask column")
            pad = width - lane.mask.shape[-1]
            keys.append(functional.pad(cached[index : index + 1], (0, 0, pad, 0)))
            values.append(functional.pad(cached_values[index : index + 1], (0, 0, pad, 0)))
        layers.append((torch.cat(keys), torch.cat(values)))
    cache = DynamicCache(ddp_cache_data=layers, config=model.config)
    mask = torch.cat(
        [
            functional.pad(lane.mask[index : index + 1], (width - lane.mask.shape[-1], 0))
            for lane, index in picks
        ]
    )
    position = torch.stack([lane.position[index] for lane, index in picks])
    token = torch.stack([lane.token[index] for lane, index in picks])
    return Lane(cache, mask, position, token, [lane.rows[index] for lane, index in picks])


def engine_options(forward_rows: int, rerun_control: bool) -> dict[str, int]:
    """The backend's arguments of each call: micro-batches and decode batches of its forward width, the
    rerun control's micro-batches at the control's own, different size.

    >>> engine_options(8, False), engine_options(8, True)
    ({'micro_rows': 8, 'decode_rows': 8}, {'micro_rows': 4, 'decode_rows': 8})
    """
    micro = rerun_batch_size(forward_rows) if rerun_control else forward_rows
    return {"micro_rows": micro, "decode_rows": forward_rows}


def prepare(model: Any) -> None:
    """Build the float16 copies of the output layer now (seconds for a large vocabulary), not inside the
    first batch: a one-time cost, like loading."""
    screened_head(model)
    sliced_screen(model)


def engine_settings(model: Any) -> dict[str, object]:
    """run.json's ``engine_settings``: the pool, and how decode steps pick greedy tokens
    (benchmark/models/screen.py) and how the y_0 scoring pass reads the output layer
    (benchmark/models/chunked.py)."""
    if sliced_screen(model) is not None:
        scoring = "float16_screen"
    else:
        scoring = "vocab_chunks" if plain_head(model) is not None else "model_logits"
    return {
        "pool": POOL,
        "refill_fraction": REFILL_FRACTION,
        "greedy_head": "float16_screen" if screened_head(model) is not None else "model_logits",
        "scoring_head": scoring,
    }


POOLED = EngineSpec(
    "pooled",
    run_batch_pooled,
    declines=unsupported_reason,
    forwards_per_call=POOL,
    options=engine_options,
    prepare=prepare,
    settings=engine_settings,
    about=f"the default on a CPU: draft, each call read as {POOL} micro-batches of --batch-size rows "
    "whose unfinished rows decode together; the fastest on a CPU",
)
"""The pooled engine as the backend takes it (``HFBackend(..., engine=POOLED)``), registered in
``benchmark.models.hf.ENGINES`` as ``pooled``."""
