"""The pooled engine, a new run's default on a CPU, on the packaged SmolLM2-135M-Instruct (the model of
``make quickstart``): the same greedy ids, y_0 scores and hidden states as the single-prefill engine, which
made every committed result, on real prompts, when generating the baselines and when teacher-forcing them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers.smollm2 import smollm2_chat

from benchmark.models.engine import RawOutput
from benchmark.models.pooled import POOL, run_batch_pooled
from benchmark.models.prefill import run_batch_single_prefill

QUESTIONS = (
    "What is the capital of France?",
    "How many legs does a spider have? Answer briefly.",
    "Who wrote Hamlet?",
    "Name a prime number bigger than ten.",
    "WHAT IS THE BOILING POINT OF WATER?",
    "Please, if you would be so kind, tell me which planet is the largest in our solar system.",
    "is it true that bats are blind",
    "Translate 'good morning' into French.",
)
ROWS = 2
"""rows per forward of the pooled engine: 8 prompts are read as POOL micro-batches of 2."""


def _assert_same(single: list[RawOutput], pooled: list[RawOutput]) -> None:
    """Greedy ids exactly; y_0 scores within the per-token float tolerance of ``make reproduce``; hidden
    states within float32 noise (each micro-batch pads differently from the whole batch)."""
    assert [p.response_ids for p in pooled] == [s.response_ids for s in single]
    assert [p.finished for p in pooled] == [s.finished for s in single]
    for s, p in zip(single, pooled, strict=True):
        assert p.scored_tokens == s.scored_tokens
        for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
            want, have = getattr(s, name), getattr(p, name)
            assert math.isnan(want) == math.isnan(have), name
            if not math.isnan(want):
                assert have == pytest.approx(want, abs=1e-4 * max(1, s.scored_tokens), rel=1e-4), name
        np.testing.assert_allclose(p.hidden, s.hidden, atol=1e-3, rtol=1e-3)


def test_pooled_gives_single_prefills_outputs_on_smollm2() -> None:
    torch.set_num_threads(1)
    model, prompts, options = smollm2_chat(QUESTIONS, max_new_tokens=24)
    pooled_rows = {"micro_rows": ROWS, "decode_rows": ROWS}
    assert len(prompts) == POOL * ROWS
    # the baseline phase: greedy answers, no y_0
    single = run_batch_single_prefill(model, prompts, None, **options)
    _assert_same(single, run_batch_pooled(model, prompts, None, **pooled_rows, **options))
    assert any(s.response_ids for s in single)
    # the variant phase: each prompt's y_0 teacher-forced (another prompt's answer for half the rows, so
    # rows leave the draft at once and the pooled decode batch refills)
    baselines = [s.response_ids for s in single]
    baselines = baselines[:POOL] + baselines[POOL:][::-1]
    single = run_batch_single_prefill(model, prompts, baselines, **options)
    _assert_same(single, run_batch_pooled(model, prompts, baselines, **pooled_rows, **options))
    assert all(s.scored_tokens == len(b) for s, b in zip(single, baselines, strict=True))
