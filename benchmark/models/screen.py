"""Greedy tokens without the full float32 output layer: a half-precision screen, then an exact pick.

Why: a decode step only needs the argmax of the logits, and on a CPU the output layer dominates a step of
a model with a large vocabulary (Gemma 3's 262,144 x 640 float32 matrix is 671 MB, read at every step).
Here each step's final hidden states go through a float16 copy of the output weights (fbgemm's
``linear_dynamic_fp16``: float16 weights widened to float32, float32 products and sums; 2 to 6 times
faster than the float32 matrix product on the decode shapes measured). A per-token error bound then
keeps every token whose float32 logit could still be the largest, and only those few are recomputed
from the float32 weights; the token picked is the largest recomputed logit (first index on ties).

The bound, for hidden state ``x`` and token ``v`` with float32 weights ``w`` and float16 copy ``w~``:
the screen's value differs from the exact ``x.w`` by at most ``|x| (|w - w~| + (2^-11 + 2 g) |w~|)``
(Cauchy-Schwarz on the weight rounding; ``2^-11`` covers a screen that also rounds ``x`` to float16;
``g = K u / (1 - K u)`` bounds float32 summation of ``K`` products in any order, once for the screen
and once for the recomputation), times 1.01 for the float32 arithmetic of the bound itself. So the
token whose recomputed logit is largest is always among the candidates: the pick is the float32 argmax
up to the rounding of the recomputation, the same float-level near-ties that a different batch shape
already resolves differently.

Used only where logits are exactly ``lm_head(final hidden state)``: the model types in
:data:`PLAIN_HEAD_TYPES`, a bias-free linear head, no logit soft-capping. Elsewhere (or where the
fbgemm operator is missing) :func:`screened_head` is None and steps use the model's own logits.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from transformers import PreTrainedModel

from benchmark.models.prefill import ForwardInputs, TokenPicker

PLAIN_HEAD_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma3_text", "phi3"})
"""model types whose causal-LM logits are ``lm_head(last_hidden_state)`` with nothing in between."""
_CACHE_KEY = "_sago_screened_head"
_HALF_ROUNDING = 2.0**-11  # unit roundoff of float16
_SINGLE_ROUNDING = 2.0**-24  # unit roundoff of float32
SAFETY = 1.01
"""the bound's safety factor for the float32 arithmetic of the bound itself."""
_ROWS_PER_CHUNK = 16384
SLICED_MIN_ROWS = 20
"""rows per step from which a step with slices screens slice by slice. Measured on Gemma 3's 262,144
tokens (real scoring states, one thread): 8 rows 28 ms whole against 31-33 ms sliced, 12 rows 32 against
42, 16 rows 53 against 55, 24 rows 72 against 60, 32 rows 110-114 against 75-80."""
_MOST_CANDIDATES = 256
"""candidates per row (on average) beyond which recomputing them would cost more than the full product."""


class ScreenedHead(NamedTuple):
    """A model's output layer prepared for :func:`greedy_tokens`."""

    packed: Any
    """fbgemm's packed float16 copy of the output weights."""
    weight: torch.Tensor
    """float32 [vocab, hidden]: the model's own output weights (not a copy)."""
    slack: torch.Tensor
    """float32 [vocab]: the bound's factor per token (multiplied by ``|x|``)."""
    widest: float
    """the largest entry of ``slack``."""
    slices: tuple[Any, ...] = ()
    """fbgemm float16 copies of the output layer, ``slice_width`` tokens each, where the model has them
    (a large vocabulary: :func:`chunked.sliced_screen`); a step then screens slice by slice, whose
    outputs stay in cache, instead of writing the whole [rows, vocab] screen."""
    slice_width: int = 0


def screened_head(model: PreTrainedModel) -> ScreenedHead | None:
    """The model's output layer prepared for screening (built once, kept on the model), or None when its
    logits are not a plain linear head of the final hidden state or the CPU operator is unavailable."""
    known = model.__dict__.get(_CACHE_KEY, False)
    if known is not False:
        return known  # type: ignore[no-any-return]
    weight = plain_head(model)
    head = (
        _build(weight) if weight is not None and hasattr(torch.ops.quantized, "linear_dynamic_fp16") else None
    )
    model.__dict__[_CACHE_KEY] = head
    return head


def plain_head(model: PreTrainedModel) -> torch.Tensor | None:
    """The float32 weights [vocab, hidden] of the model's output layer when its logits are exactly
    ``lm_head(last_hidden_state)`` on the CPU (a listed model type, a bias-free linear head, no
    soft-capping), else None."""
    config = model.config
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    plain = (
        getattr(config, "model_type", None) in PLAIN_HEAD_TYPES
        and getattr(config, "final_logit_softcapping", None) is None
        and isinstance(head, torch.nn.Linear)
        and head.bias is None
        and head.weight.dtype == torch.float32
        and head.weight.device.type == "cpu"
    )
    return head.weight.detach() if plain else None


def _build(weight: torch.Tensor) -> ScreenedHead | None:
    if not bool(torch.isfinite(weight).all()) or float(weight.abs().max()) > torch.finfo(torch.float16).max:
        return None  # the float16 copy would overflow
    try:
        packed = torch.ops.quantized.linear_prepack_fp16(weight, None)
    except RuntimeError:  # a torch build without fbgemm
        return None
    fan_in = weight.shape[1]
    summation = fan_in * _SINGLE_ROUNDING / (1 - fan_in * _SINGLE_ROUNDING)
    slack = torch.empty(weight.shape[0])
    for start in range(0, weight.shape[0], _ROWS_PER_CHUNK):
        rows = weight[start : start + _ROWS_PER_CHUNK]
        half = rows.half().float()
        # rows - half is exact in float32 (a float32 less its float16 rounding needs at most 13 bits);
        # the norms' own rounding is far inside the safety factor.
        rounding = (rows - half).norm(dim=1)
        slack[start : start + len(rows)] = rounding + (_HALF_ROUNDING + 2.01 * summation) * half.norm(dim=1)
    # Safety factor, then rounded up so the float32 bound never shrinks.
    slack = torch.nextafter(slack * SAFETY, torch.tensor(math.inf)).contiguous()
    return ScreenedHead(packed, weight, slack, float(slack.max()))


def greedy_tokens(head: ScreenedHead, hidden: torch.Tensor) -> torch.Tensor | None:
    """long [rows]: each row's float32 argmax token for final hidden states float32 [rows, hidden], or
    None when some row's screen is not finite or leaves too many candidates (the caller then uses the
    full logits)."""
    hidden = hidden.float().contiguous()
    scale = hidden.norm(dim=1) * SAFETY
    sliced = head.slices and hidden.shape[0] >= SLICED_MIN_ROWS
    found = _sliced_superset(head, hidden, scale) if sliced else _superset(head, hidden, scale)
    if found is None:
        return None
    row, token, values = found
    if row.numel() > _MOST_CANDIDATES * hidden.shape[0]:
        return None  # a flat screen (near-uniform logits): the full product is cheaper than the pick
    margins = scale[row] * head.slack[token]
    # floor: a lower bound on each row's largest exact logit (some candidate's screen value less its slack)
    floor = torch.full((hidden.shape[0],), -math.inf).scatter_reduce(0, row, values - margins, "amax")
    keep = values + margins >= floor[row]
    row, token = row[keep], token[keep]
    if row.numel() == 0:
        return None
    exact = (head.weight[token] * hidden[row]).sum(dim=-1)
    first = first_largest(row, exact, hidden.shape[0])
    if bool((first == row.numel()).any()):  # a row without a finite candidate
        return None
    return token[first]


def first_largest(row: torch.Tensor, values: torch.Tensor, rows: int) -> torch.Tensor:
    """long [rows]: per row, the position in ``values`` (candidates ordered by row, then token) of its
    largest value, the first on ties (as ``torch.argmax`` picks the lowest token); ``len(values)`` for a
    row without a finite one."""
    best = torch.full((rows,), -math.inf).scatter_reduce(0, row, values, "amax")
    winners = torch.nonzero(values == best[row]).squeeze(-1)
    return torch.full((rows,), row.numel(), dtype=torch.long).scatter_reduce(0, row[winners], winners, "amin")


def sliced(head: ScreenedHead, width: int) -> ScreenedHead:
    """``head`` with fbgemm float16 copies of its output layer, ``width`` tokens each (see
    :attr:`ScreenedHead.slices`)."""
    weight = head.weight
    slices = tuple(
        torch.ops.quantized.linear_prepack_fp16(weight[start : start + width].contiguous(), None)
        for start in range(0, weight.shape[0], width)
    )
    return head._replace(slices=slices, slice_width=width)


_Found = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""(row, token, screen value) of each candidate, by row then token."""


def _superset(head: ScreenedHead, hidden: torch.Tensor, scale: torch.Tensor) -> _Found | None:
    """Every token whose screen value is within 2 |x| widest of its row's peak: the screen's top token t
    has exact logit >= peak - scale * slack[t] >= peak - scale * widest, so only those can reach the
    largest exact logit; None when a row's screen is not finite."""
    screen = torch.ops.quantized.linear_dynamic_fp16(hidden, head.packed)
    peak = screen.amax(dim=1)  # amax, not argmax: the index costs ~10x the value over a vocabulary
    if not bool(torch.isfinite(peak).all()):
        return None
    row, token = (screen >= (peak - 2 * scale * head.widest)[:, None]).nonzero(as_tuple=True)
    return row, token, screen[row, token]


def _sliced_superset(head: ScreenedHead, hidden: torch.Tensor, scale: torch.Tensor) -> _Found | None:
    """:func:`_superset` a slice at a time: each slice keeps what is within the margin of the running
    peak (which only rises, so a superset), then the final peak trims it to the same set."""
    margin = 2 * scale * head.widest
    top = torch.full((hidden.shape[0],), -math.inf)
    parts: list[_Found] = []
    for index, packed in enumerate(head.slices):
        values = torch.ops.quantized.linear_dynamic_fp16(hidden, packed)
        top = torch.maximum(top, values.amax(dim=1))
        row, token = (values >= (top - margin)[:, None]).nonzero(as_tuple=True)
        parts.append((row, token + index * head.slice_width, values[row, token]))
    if not bool(torch.isfinite(top).all()):
        return None
    row, token, values = (torch.cat(part) for part in zip(*parts, strict=True))
    keep = values >= (top - margin)[row]
    row, token, values = row[keep], token[keep], values[keep]
    order = torch.argsort(row * head.weight.shape[0] + token)
    return row[order], token[order], values[order]


def final_hidden(model: PreTrainedModel, inputs: ForwardInputs) -> torch.Tensor:
    """[batch, positions, hidden]: the model's final hidden states for ``inputs`` (its forward without the
    output layer; the cache in ``inputs`` is extended as by a full forward)."""
    decoder = model.get_decoder()  # type: ignore[no-untyped-call]
    hidden: torch.Tensor = decoder(**inputs).last_hidden_state
    return hidden


def screened_step(head: ScreenedHead) -> TokenPicker:
    """A decode step's picker (:data:`benchmark.models.prefill.TokenPicker`) through ``head``: the model
    runs without its output layer and each token comes from the final hidden state by
    :func:`greedy_tokens`; where the screen declines (not finite, or flat), the plain float32 product
    decides."""

    def pick(model: PreTrainedModel, inputs: ForwardInputs) -> torch.Tensor:
        hidden = final_hidden(model, inputs)[:, -1, :]
        picked = greedy_tokens(head, hidden)
        if picked is None:  # a non-finite or flat screen: the plain product decides
            return torch.nn.functional.linear(hidden.float(), head.weight).argmax(-1)
        return picked

    return pick
