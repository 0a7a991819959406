"""bench-floor: the work it counts is the pooled engine's real positions, and its table adds up."""

from __future__ import annotations

import pytest
import torch

from benchmark.models.pooled import run_batch_pooled
from benchmark.models.tiny import tiny_llama, tiny_tokenizer
from benchmark.tools.bench_floor import CLASSES, FloorRow, Work, counting, format_floor

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


def test_floor_rows_price_each_class_from_the_models_own_layers() -> None:
    """GFLOP per class is positions x 2 x the parameters its products touch (all decoder linears for the
    body, the output layer for the head); the float32 rate never beats the best rate it is among."""
    from benchmark.tools.bench_floor import HEAD_KERNELS, floor_rows, linear_weights

    model = tiny_llama(2)
    head = model.get_output_embeddings().weight.float()
    work = Work()
    for kind, count in zip(CLASSES, (100, 20, 60, 30), strict=True):
        work.add(kind, count)
    rows = {r.kind: r for r in floor_rows(work, model, head, step_rows=4)}
    body = sum(w.numel() for w in linear_weights(model.get_decoder()))
    assert body > sum(w.numel() for w in linear_weights(model.get_decoder().layers[0]))  # every layer counts
    assert rows["body, wide"].gflop == pytest.approx(100 * 2 * body / 1e9)
    assert rows["head, step"].gflop == pytest.approx(30 * 2 * head.numel() / 1e9)
    for row in rows.values():
        assert row.kernel in HEAD_KERNELS and 0 < row.exact_rate <= row.rate
        assert row.seconds == pytest.approx(row.gflop / row.rate)
