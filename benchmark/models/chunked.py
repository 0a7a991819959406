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
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from benchmark.models.prefill import _EMPTY_Y0, Drafted, _Prefill, _Scores, draft_prefix, teacher_inputs
from benchmark.models.screen import final_hidden

VOCAB_CHUNK = 2048
"""tokens per slice of the output layer (a slice of 1,000 positions is 8 MB of float32)."""


class _Running:
    """Online-softmax statistics of a set of prediction rows, updated one vocabulary slice at a time."""

    def __init__(self, rows: int, targets: torch.Tensor) -> None:
        self.top = torch.full((rows,), -math.inf)
        self.total = torch.zeros(rows, dtype=torch.float64)  # S: sum of exp(l - top)
        self.weighted = torch.zeros(rows, dtype=torch.float64)  # T: sum of exp(l - top) * (l - top)
        self.target = torch.full((rows,), math.nan)
        self.best = torch.zeros(rows, dtype=torch.long)
        self.targets = targets  # long [rows]: the token whose logit is kept (-1: none)

    def update(self, logits: torch.Tensor, start: int) -> None:
        """Fold in float32 [rows, width] logits of vocabulary ids ``start .. start + width`` (overwritten:
        the slice is the caller's temporary, and working in place spares two 8 MB copies per slice)."""
        peak = logits.amax(dim=1)
        higher = peak > self.top  # strictly: an earlier slice keeps a tie (first index wins)
        if bool(higher.any()):
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

    def log_probs(self) -> torch.Tensor:
        """float64 [rows]: log-probability of each row's target."""
        return self.target.double() - (self.top.double() + self.total.log())

    def entropies(self) -> torch.Tensor:
        """float64 [rows]: entropy of each row's distribution."""
        return self.total.log() - self.weighted / self.total


def score_and_draft_chunked(
    model: PreTrainedModel,
    state: _Prefill,
    baselines: Sequence[Sequence[int]],
    pad_id: int,
    weight: torch.Tensor,
) -> Drafted:
    """:func:`prefill.score_and_draft` with the output layer ``weight`` (float32 [vocab, hidden]) applied in
    vocabulary slices to the final hidden states (see the module docstring)."""
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
    later = _Running(queries.shape[0], later_targets)
    prompt_logits = state.next_logits[scored].float()  # a copy (list index): update() may overwrite it
    for start in range(0, weight.shape[0], VOCAB_CHUNK):
        first.update(prompt_logits[:, start : start + VOCAB_CHUNK], start)
        later.update(torch.nn.functional.linear(queries, weight[start : start + VOCAB_CHUNK]), start)
    return _assemble(state, baselines, scored, first, later, y_mask, width)


def _assemble(
    state: _Prefill,
    baselines: Sequence[Sequence[int]],
    scored: list[int],
    first: _Running,
    later: _Running,
    y_mask: torch.Tensor,
    width: int,
) -> Drafted:
    """Per row: y_0's scores and its draft prefix (y_0 up to the first argmax that leaves it, then that
    argmax), from the prediction rows' statistics."""
    first_logp, first_entropy, first_best = first.log_probs(), first.entropies(), first.best.tolist()
    later_logp, later_entropy, later_best = later.log_probs(), later.entropies(), later.best.tolist()
    scores: list[_Scores] = []
    prefix: list[list[int]] = []
    offset = 0
    order = {row: index for index, row in enumerate(scored)}
    for row, y0 in enumerate(baselines):
        if not y0:
            scores.append(_EMPTY_Y0)
            prefix.append([int(state.next_logits[row].argmax())])
            continue
        index, count = order[row], len(y0)
        logp = float(first_logp[index] + later_logp[offset : offset + count - 1].sum())
        entropy = float(first_entropy[index] + later_entropy[offset : offset + count - 1].sum()) / count
        scores.append(_Scores(logp, logp / count, entropy, count))
        greedy = [first_best[index], *later_best[offset : offset + count]]
        prefix.append(draft_prefix(y0, greedy))
        offset += count
    return Drafted(scores, prefix, y_mask, width)
