"""The two-pass engine on the tiny Llama: padding invariance, known answers, end-of-sequence handling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from benchmark.models.engine import RawOutput, left_pad, run_batch_two_pass
from benchmark.models.tiny import tiny_llama, tiny_tokenizer

TOKENS = 12


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.set_num_threads(1)
    return tiny_llama()


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    """16 prompts of mixed lengths (5 to ~60 tokens), so the batch carries real padding."""
    tok = tiny_tokenizer()
    texts = [("What is the capital of France? " * (1 + i % 5)) + f"Item {i}." for i in range(16)]
    return [tok(t)["input_ids"] for t in texts]


def _run(
    model: torch.nn.Module,
    prompts: list[list[int]],
    baselines: list[list[int]] | None,
    eos: frozenset[int] | None = None,
) -> list[RawOutput]:
    tok = tiny_tokenizer()
    return run_batch_two_pass(
        model,
        prompts,
        baselines,
        max_new_tokens=TOKENS,
        eos_ids=eos or frozenset({tok.eos_token_id}),
        pad_id=tok.pad_token_id,
    )


def test_left_pad_masks_and_positions() -> None:
    batch = left_pad([[5, 6, 7], [8]], pad_id=0, device=torch.device("cpu"))
    assert batch.input_ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert batch.position_ids.tolist() == [[0, 1, 2], [0, 0, 0]]
    with pytest.raises(ValueError):
        left_pad([[1], []], pad_id=0, device=torch.device("cpu"))


def test_batch_of_one_equals_batch_of_sixteen_without_baselines(model, prompts) -> None:
    batched = _run(model, prompts, None)
    singles = [_run(model, [p], None)[0] for p in prompts]
    assert len({len(p) for p in prompts}) > 3
    for b, s in zip(batched, singles, strict=True):
        assert b.response_ids == s.response_ids
        assert len(b.response_ids) == TOKENS and not b.finished  # random weights never say eos
        np.testing.assert_allclose(b.hidden, s.hidden, atol=1e-5)
        assert math.isnan(b.logprob_sum) and math.isnan(b.entropy_mean) and b.scored_tokens == 0
        assert b.hidden.shape == (3, 64) and b.hidden.dtype == np.float32


def test_batch_of_one_equals_batch_of_sixteen_with_baselines(model, prompts) -> None:
    baselines = [r.response_ids[: 3 + i % 9] for i, r in enumerate(_run(model, prompts, None))]
    batched = _run(model, prompts, baselines)
    singles = [_run(model, [p], [y])[0] for p, y in zip(prompts, baselines, strict=True)]
    for b, s, y in zip(batched, singles, baselines, strict=True):
        assert b.scored_tokens == len(y)
        assert b.logprob_sum == pytest.approx(s.logprob_sum, abs=1e-4)
        assert b.logprob_mean == pytest.approx(b.logprob_sum / len(y), rel=1e-6)
        assert b.entropy_mean == pytest.approx(s.entropy_mean, abs=1e-4)
        np.testing.assert_allclose(b.hidden, s.hidden, atol=1e-5)


def test_scores_match_an_unpadded_hand_computation(model, prompts) -> None:
    prompt, y0 = prompts[3], [40, 41, 42, 43]
    with torch.no_grad():
        out = model(torch.tensor([prompt + y0]), output_hidden_states=True)
    logp = torch.log_softmax(out.logits[0], dim=-1)
    steps = range(len(prompt) - 1, len(prompt) + len(y0) - 1)  # positions predicting y0
    expected_sum = sum(float(logp[pos, tok]) for pos, tok in zip(steps, y0, strict=True))
    expected_entropy = np.mean([float(-(logp[pos].exp() * logp[pos]).sum()) for pos in steps])
    got = _run(model, [prompts[0], prompt], [[7], y0])[1]
    assert got.logprob_sum == pytest.approx(expected_sum, abs=1e-4)
    assert got.entropy_mean == pytest.approx(expected_entropy, abs=1e-4)
    assert 0 < got.entropy_mean <= math.log(model.config.vocab_size) + 1e-4
    hand_hidden = torch.stack([h[0, len(prompt) - 1] for h in out.hidden_states]).numpy()
    np.testing.assert_allclose(got.hidden, hand_hidden, atol=1e-5)


def test_hidden_state_is_the_same_with_and_without_the_baseline(model, prompts) -> None:
    """Causal attention: appending y_0 cannot change the state at the last prompt token."""
    alone = _run(model, prompts[:4], None)
    with_y0 = _run(model, prompts[:4], [[50, 51]] * 4)
    for a, b in zip(alone, with_y0, strict=True):
        np.testing.assert_allclose(a.hidden, b.hidden, atol=1e-5)


def test_generation_stops_at_any_eos_id_and_excludes_it(model, prompts) -> None:
    free = _run(model, prompts[:2], None)
    stop = free[0].response_ids[2]  # pretend the third greedy token of prompt 0 is an eos
    tok = tiny_tokenizer()
    out = _run(model, prompts[:2], None, eos=frozenset({tok.eos_token_id, stop}))
    first = free[0].response_ids.index(stop)
    assert out[0].finished and out[0].response_ids == free[0].response_ids[:first]
    cut = free[1].response_ids.index(stop) if stop in free[1].response_ids else None
    assert out[1].response_ids == free[1].response_ids[:cut]
    assert out[1].finished == (cut is not None)


def test_empty_baseline_and_zero_tokens(model, prompts) -> None:
    tok = tiny_tokenizer()
    out = run_batch_two_pass(
        model,
        prompts[:2],
        [[], [9]],
        max_new_tokens=0,
        eos_ids=frozenset({tok.eos_token_id}),
        pad_id=tok.pad_token_id,
    )
    assert out[0].response_ids == [] and not out[0].finished
    assert out[0].scored_tokens == 0 and out[0].logprob_sum == 0.0 and math.isnan(out[0].logprob_mean)
    assert out[1].scored_tokens == 1 and out[1].logprob_sum < 0
    with pytest.raises(ValueError):
        _run(model, prompts[:2], [[1]])
