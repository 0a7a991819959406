"""bench-floor: the work it counts is the pooled engine's real positions, and its table adds up."""

from __future__ import annotations

import pytest
import torch

from benchmark.harness.bench_floor import CLASSES, FloorRow, Work, counting, format_floor
from benchmark.models.pooled import run_batch_pooled
from benchmark.models.tiny import tiny_llama, tiny_tokenizer

EOS = frozenset(range(40, 80))


def test_the_counter_books_prompt_reads_scoring_and_decode_steps_by_their_real_positions() -> None:
    """Prompt reads: every prompt token through the body, one output-layer row each. y_0 scoring: every
    y_0 token through body and output layer (padding not counted). Decode steps: one position per row,
    body and output layer alike."""
    torch.manual_seed(0)
    model = tiny_llama(1)
    pad = tiny_tokenizer().pad_token_id
    prompts = [[5 + (i * 7 + j) % 90 for j in range(4 + 3 * i)] for i in range(6)]
    baselines = [[11, 12, 13, 14, 15], [9, 9], [], [30] * 7, [31, 32, 33], [12]]
    with counting(model) as work:
        out = run_batch_pooled(
            model, prompts, baselines, max_new_tokens=6, eos_ids=EOS, pad_id=pad, micro_rows=3, decode_rows=3
        )
    assert len(out) == len(prompts)
    counted = work.positions
    assert counted["head, wide"] == sum(len(y) for y in baselines) == 18
    assert counted["body, wide"] == sum(len(p) for p in prompts) + 18
    assert counted["body, step"] > 0
    assert counted["head, step"] == counted["body, step"] + len(prompts)
    with counting(model) as again:
        pass
    assert again.positions == dict.fromkeys(CLASSES, 0)  # the hooks went away with the block


def test_the_floor_table_adds_each_class_and_compares_with_both_times() -> None:
    rows = [FloorRow(kind, 10, 50.0, 100.0, "fbgemm float16 weights", 50.0) for kind in CLASSES]
    text = format_floor(rows, harness_seconds=4.0, peer_seconds=2.5)
    total = next(line for line in text.splitlines() if line.startswith("total")).split()
    assert total[-2:] == ["2.0", "4.0"]  # 4 classes x 0.5 s, and x 1 s at the float32 rate
    assert "(this run): 4.0 s; floor / that = 0.500, float32 floor / that = 1.000" in text
    assert "(given): 2.5 s; floor / that = 0.800, float32 floor / that = 1.600" in text
    assert "lm-eval" not in format_floor(rows, harness_seconds=4.0, peer_seconds=None)


def test_a_work_count_starts_at_zero_for_every_class() -> None:
    work = Work()
    work.add("head, step", 3)
    assert work.positions == {"body, wide": 0, "body, step": 0, "head, wide": 0, "head, step": 3}
    with pytest.raises(KeyError):
        work.add("head", 1)
