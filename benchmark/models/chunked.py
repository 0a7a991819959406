"""The pooled engine's y_0 scoring pass with the output layer applied a slice of the vocabulary at a time.

Why: the scoring pass needs, at every position of y_0, the log-probability of y_0's token, the entropy
and the argmax (the draft) over the full vocabulary. Reading the model's logits for that materialises a
float32 [batch, len(y_0), vocab] tensor (1 GB for Gemma 3 at 32 rows) and then walks it several times
per row (log-softmax, exponential, product, sum). Here the final hidden states meet the output weights
``VOCAB_CHUNK`` tokens at a time, and each slice's logits, small enough to stay in cache, update running
statistics (an online softmax: running maximum, sum of exponentials, their weighted sum of logits, the
target's logit and the first argmax), so the logits are written once and read once, and positions past a
row's y_0 are never computed.

The statistics equal those of the model's logits up to float rounding, far inside ``reproduce``'s
tolerances, and are nearer the float64 values than a float32 log-softmax over the whole vocabulary
(sums in float64 across slices; entropy as ``log S - T / S`` with ``S = sum exp(l - m)``,
``T = sum exp(l - m)(l - m)`` and ``m`` the running maximum); the argmax is the first largest logit, as
``torch.argmax``. Used only where logits are a plain linear head (:func:`screen.plain_head`).

Over a large vocabulary (:data:`SCREENED_MIN_VOCAB` tokens or more) the output layer's float32 product is
most of the pass, and the y_0 positions' rows go through :func:`screened_statistics` instead: fbgemm's
float16-weight product for every token (the decode screen's kernel, about twice the float32 rate here),
exact float32 logits for the tokens within :data:`SCREEN_MARGIN` nats of the screen's peak (where nearly
all the probability is), screen values for the tail. The argmax stays the float32 argmax (the margin
covers the screen's proved error bound twice) and the target's logit is exact; the log-normaliser and
entropy carry the tail's screen error, measured on Gemma 3 below float32 log-softmax's own error against
float64 (see :func:`screened_statistics`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

import torch
from transformers import PreTrainedModel

from benchmark.models.engine import EMPTY_Y0, Scores
from benchmark.models.prefill import Drafted, Prefill, draft_prefix, teacher_inputs
from benchmark.models.screen import SAFETY, ScreenedHead, final_hidden, first_largest, screened_head, sliced

VOCAB_CHUNK = 2048
"""tokens per slice of the output layer (a slice of 1,000 positions is 8 MB of float32)."""
SCREENED_MIN_VOCAB = 131_072
"""vocabularies at least this large score y_0 through the float16 screen (Gemma 3's 262,144 tokens,
Qwen 2.5's 151,936); smaller ones (SmolLM2's 49,152) keep the exact pass, where the output layer is a
smaller share of the work and the screen's saving was not measured."""
SCREEN_MARGIN = 8.0
"""nats below the screen's peak within which a token's logit is recomputed in float32. Measured on
Gemma 3's bench-profile scoring rows (3,264 y_0 positions, against float64 from the same hidden states):
271 tokens per position on average, errors of at most 1.3e-5 nats in the target's log-probability and
7.4e-5 in the entropy, where the single-prefill engine's float32 log-softmax is off by 1.4e-4 and
6.6e-4. 10 nats gave 860 tokens, 1.0e-5 and 5.3e-5, and was barely faster than the exact pass."""
ROW_BLOCK = 32
"""prediction rows whose candidates are recomputed together (one product over their union)."""
MOST_CANDIDATES = 16_384
"""candidates per row beyond which the row takes the exact pass (a flat distribution)."""
DENSE_SHARE = 0.25
"""a block whose candidates' union exceeds this share of the vocabulary takes the exact pass."""
_CACHE_KEY = "_sago_sliced_screen"


class _Running:
    """Online-softmax statistics of a set of prediction rows, updated one vocabulary slice at a time."""

    def __init__(self, rows: int, targets: torch.Tensor, *, argmax: bool = True) -> None:
        self.argmax = argmax  # False: ``best`` is not kept (the screened pass takes it from its candidates)
        self.top = torch.full((rows,), -math.inf)
        self.total = torch.zeros(rows, dtype=torch.float64)  # S: sum of exp(l - top)
        self.weighted = torch.zeros(rows, dtype=torch.float64)  # T: sum of exp(l - top) * (l - top)
        self.target = torch.full((rows,), math.nan)
        self.best = torch.zeros(rows, dtype=torch.long)
        self.targets = targets  # long [rows]: the token whose logit is kept (-1: none)

    def update(self, logits: torch.Tensor, start: int, peak: torch.Tensor | None = None) -> None:
        """Fold in float32 [rows, width] logits of vocabulary ids ``start .. start + width`` (overwritten:
        the slice is the caller's temporary, and working in place spares two 8 MB copies per slice);
        ``peak``: their row maxima, where the caller already has them."""
        peak = logits.amax(dim=1) if peak is None else peak
        higher = peak > self.top  # strictly: an earlier slice keeps a tie (first index wins)
        if self.argmax and bool(higher.any()):
            # argmax with indices costs ~10x amax per slice; only rows whose maximum moved need it
            rows = higher.nonzero().squeeze(-1)
            self.best[rows] = logits[rows].argmax(dim=1) + start
        inside = (self.targets >= start) & (self.targets < start + logits.shape[1])
        if bool(inside.any()):
            index = inside.nonzero().squeeze(-1)
            self.target[index] = logits[index, self.targets[index] - start]
        top = torch.maximum(self.top, peak)
        shift = (self.top - top).double()  # <= 0; -inf on the first slice, where the sums are still 0
        scale = torch.where(torch.isfinite(shift), shift.exp(), torch.zeros_like(shift))
        self.weighted = scale * (self.weighted + torch.where(torch.isfinite(shift), shift, 0.0) * self.total)
        self.total = scale * self.total
        centred = logits.sub_(top[:, None])
        exps = centred.exp()
        # float32 pairwise sums within the slice (relative error ~1e-7), float64 across slices; a float64
        # sum here would first copy the whole slice to float64
        self.total += exps.sum(dim=1).double()
        self.weighted += exps.mul_(centred).sum(dim=1).double()
        self.top = top

    def stats(self) -> _Stats:
        log_total = self.total.log()
        return _Stats(
            self.target.double() - (self.top.double() + log_total),
            log_total - self.weighted / self.total,
            self.best,
        )


class _Stats(NamedTuple):
    """Per prediction row: what the scoring pass keeps of its distribution over the vocabulary."""

    log_probs: torch.Tensor
    """float64 [rows]: the target's log-probability (NaN: no target)."""
    entropies: torch.Tensor
    """float64 [rows]."""
    best: torch.Tensor
    """long [rows]: the first largest logit's token."""


def sliced_screen(model: PreTrainedModel) -> ScreenedHead | None:
    """The model's screened output layer with :data:`VOCAB_CHUNK`-token slices, for the screened scoring
    pass and large-vocabulary decode steps (built once, kept on the model), or None when the vocabulary
    is under :data:`SCREENED_MIN_VOCAB` tokens or there is no decode screen."""
    known = model.__dict__.get(_CACHE_KEY, False)
    if known is not False:
        return known  # type: ignore[no-any-return]
    head = screened_head(model)
    screen = (
        sliced(head, VOCAB_CHUNK) if head is not None and head.weight.shape[0] >= SCREENED_MIN_VOCAB else None
    )
    model.__dict__[_CACHE_KEY] = screen
    return screen


def exact_statistics(queries: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor) -> _Stats:
    """Statistics of ``queries`` (float32 [rows, hidden]) under the float32 output layer ``weight``,
    a vocabulary slice at a time; ``targets``: long [rows], -1 for none."""
    running = _Running(queries.shape[0], targets)
    for start in range(0, weight.shape[0], VOCAB_CHUNK):
        running.update(torch.nn.functional.linear(queries, weight[start : start + VOCAB_CHUNK]), start)
    return running.stats()


def screened_statistics(queries: torch.Tensor, targets: torch.Tensor, screen: ScreenedHead) -> _Stats:
    """:func:`exact_statistics` through the float16 screen, for a large vocabulary.

    Per row with final hidden state ``x``: the screen ``s_v = x . w~_v`` (fbgemm, float16 weights, float32
    products and sums) for every token, folded slice by slice into online-softmax sums over screen values
    (peak ``m``, ``S~ = sum exp(s - m)``, ``T~ = sum exp(s - m)(s - m)``); the candidates are the tokens
    within ``max(SCREEN_MARGIN, 2 |x| widest)`` of the running peak, and the target; their float32 logits
    ``l`` (one product per :data:`ROW_BLOCK` rows over the union of their candidates) replace their screen
    terms: ``S = S~ + sum_c (exp(l - m) - exp(s - m))``, ``T`` likewise. So the terms that carry the
    probability are exact; each tail term is below ``exp(-SCREEN_MARGIN)`` of the peak's and off by the
    screen's error (about 1e-3 nats per logit on Gemma 3, random in sign). The argmax is the largest
    float32 logit among the candidates, which hold every token the screen's proved error bound lets be
    the largest (as :func:`screen.greedy_tokens`), first token on ties. Rows whose screen is not finite
    or which have more than :data:`MOST_CANDIDATES` candidates, and blocks whose union exceeds
    :data:`DENSE_SHARE` of the vocabulary, take :func:`exact_statistics`. ``screen``: a head with slices
    (:func:`sliced_screen`)."""
    rows, weight = queries.shape[0], screen.weight
    queries = queries.float().contiguous()
    # 2 |x| widest (with the bound's safety factor): twice any token's screen error, so the exact argmax
    # is always a candidate (its screen value is within that of the peak's)
    margin = torch.clamp(2 * SAFETY * queries.norm(dim=1) * screen.widest, min=SCREEN_MARGIN)
    running = _Running(rows, torch.full((rows,), -1, dtype=torch.long), argmax=False)
    found: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    for index, packed in enumerate(screen.slices):
        start = index * screen.slice_width
        values = torch.ops.quantized.linear_dynamic_fp16(queries, packed)
        peak = values.amax(dim=1)
        # against the running peak, which only rises: a superset of the tokens near the final peak
        keep = values >= (torch.maximum(running.top, peak) - margin)[:, None]
        inside = (targets >= start) & (targets < start + values.shape[1])
        if bool(inside.any()):
            at = inside.nonzero().squeeze(-1)
            keep[at, targets[at] - start] = True
        row, token = keep.nonzero(as_tuple=True)
        found.append((row, token + start, values[row, token]))
        running.update(values, start, peak)
    row, token, approx = (torch.cat(parts) for parts in zip(*found, strict=True))
    order = torch.argsort(row * weight.shape[0] + token)  # by row, then token (first index on ties)
    row, token, approx = row[order], token[order], approx[order]
    exact = ~torch.isfinite(running.top) | ~torch.isfinite(running.total)
    exact |= torch.bincount(row, minlength=rows) > MOST_CANDIDATES
    logits = _candidate_logits(queries, weight, row, token, exact)
    stats = _corrected(running, targets, row, token, approx, logits)
    if bool(exact.any()):
        redo = exact.nonzero().squeeze(-1)
        again = exact_statistics(queries[redo], targets[redo], weight)
        for mine, theirs in zip(stats, again, strict=True):
            mine[redo] = theirs
    return stats


def _candidate_logits(
    queries: torch.Tensor, weight: torch.Tensor, row: torch.Tensor, token: torch.Tensor, exact: torch.Tensor
) -> torch.Tensor:
    """float32 logits of the (row, token) candidates (sorted by row), one product per block of rows over
    the union of its candidates; rows already marked in ``exact`` are left out (NaN), and a block whose
    union is too wide is marked in ``exact`` instead."""
    logits = torch.full((row.numel(),), math.nan)
    edges = torch.searchsorted(row, torch.arange(0, queries.shape[0] + ROW_BLOCK, ROW_BLOCK)).tolist()
    for block, (low, high) in enumerate(pairwise(edges)):
        first = block * ROW_BLOCK
        live = (~exact[row[low:high]]).nonzero().squeeze(-1) + low
        if live.numel() == 0:
            continue
        union, where = torch.unique(token[live], return_inverse=True)
        if union.numel() > DENSE_SHARE * weight.shape[0]:
            exact[first : first + ROW_BLOCK] = True
            continue
        dense = torch.nn.functional.linear(queries[first : first + ROW_BLOCK], weight[union])
        logits[live] = dense[row[live] - first, where]
    return logits


def _corrected(
    running: _Running,
    targets: torch.Tensor,
    row: torch.Tensor,
    token: torch.Tensor,
    approx: torch.Tensor,
    logits: torch.Tensor,
) -> _Stats:
    """The screen's sums with each candidate's screen term replaced by its exact term; the target's
    logit and the argmax from the candidates' exact logits."""
    top = running.top.double()
    exact_shift, screen_shift = logits.double() - top[row], approx.double() - top[row]
    exact_term, screen_term = exact_shift.exp(), screen_shift.exp()
    total = running.total.index_add(0, row, exact_term - screen_term)
    weighted = running.weighted.index_add(0, row, exact_term * exact_shift - screen_term * screen_shift)
    target = torch.full_like(top, math.nan)
    hit = token == targets[row]
    target[row[hit]] = logits[hit].double()
    first = first_largest(row, logits, top.shape[0])
    best = (
        token[first.clamp(max=max(row.numel() - 1, 0))]
        if row.numel()
        else torch.zeros(top.shape[0], dtype=torch.long)
    )
    return _Stats(target - (top + total.log()), total.log() - weighted / total, best)


def score_and_draft_chunked(
    model: PreTrainedModel,
    state: Prefill,
    baselines: Sequence[Sequence[int]],
    pad_id: int,
    weight: torch.Tensor,
    screen: ScreenedHead | None = None,
) -> Drafted:
    """:func:`benchmark.models.prefill.score_and_draft` with the output layer ``weight`` (float32
    [vocab, hidden]) applied in vocabulary slices to the final hidden states (see the module docstring);
    ``screen``: the same layer with slices for :func:`screened_statistics` (None: the exact pass)."""
    inputs, y_mask, width = teacher_inputs(state, state.cache, baselines, pad_id)
    hidden = final_hidden(model, inputs).float().to(state.next_logits.device)
    # Prediction rows: each row's prompt position (its logits came with the prefill) predicts y_0[0];
    # y_0's position j predicts y_0[j + 1], and its last position the first token after y_0 (draft only).
    scored = [row for row, y0 in enumerate(baselines) if y0]
    first_targets = torch.tensor([baselines[row][0] for row in scored], dtype=torch.long)
    queries = torch.cat([hidden[row, : len(baselines[row])] for row in scored]) if scored else hidden[:0, 0]
    later_targets = torch.tensor(
        [token for row in scored for token in [*baselines[row][1:], -1]], dtype=torch.long
    )
    first = _Running(len(scored), first_targets)
    prompt_logits = state.next_logits[scored].float()  # a copy (list index): update() may overwrite it
    for start in range(0, prompt_logits.shape[1], VOCAB_CHUNK):
        first.update(prompt_logits[:, start : start + VOCAB_CHUNK], start)
    later = (
        exact_statistics(queries, later_targets, weight)
        if screen is None or queries.shape[0] == 0
        else screened_statistics(queries, later_targets, screen)
    )
    return _assemble(state, baselines, scored, first.stats(), later, y_mask, width)


def _assemble(
    state: Prefill,
    baselines: Sequence[Sequence[int]],
    scored: list[int],
    first: _Stats,
    later: _Stats,
    y_mask: torch.Tensor,
    width: int,
) -> Drafted:
    """Per row: y_0's scores and its draft prefix (y_0 up to the first argmax that leaves it, then that
    argmax), from the prediction rows' statistics."""
    first_best, later_best = first.best.tolist(), later.best.tolist()
    scores: list[Scores] = []
    prefix: list[list[int]] = []
    offset = 0
    order = {row: index for index, row in enumerate(scored)}
    for row, y0 in enumerate(baselines):
        if not y0:
            scores.append(EMPTY_Y0)
            prefix.append([int(state.next_logits[row].argmax())])
            continue
        index, count = order[row], len(y0)
        logp = float(first.log_probs[index] + later.log_probs[offset : offset + count - 1].sum())
        entropy = float(first.entropies[index] + later.entropies[offset : offset + count - 1].sum()) / count
        scores.append(Scores(logp, logp / count, entropy, count))
        greedy = [first_best[index], *later_best[offset : offset + count]]
        prefix.append(draft_prefix(y0, greedy))
        offset += count
    return Drafted(scores, prefix, y_mask, width)
