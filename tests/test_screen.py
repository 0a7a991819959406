"""The screened output layer: its pick is the float32 argmax, its bound holds, and it stays off where
logits are not a plain linear head."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import Gemma2Config, Gemma2ForCausalLM, LlamaForCausalLM

from benchmark.models import screen as screen_module
from benchmark.models.prefill import Lane, greedy_step, step_lane
from benchmark.models.screen import (
    SAFETY,
    SLICED_MIN_ROWS,
    ScreenedHead,
    greedy_tokens,
    screened_head,
    screened_step,
    sliced,
)
from benchmark.models.tiny import tiny_llama


def _plain_head(vocab: int = 5000, hidden: int = 96, seed: int = 0) -> LlamaForCausalLM:
    """A tiny Llama whose output layer is replaced by a random ``vocab`` x ``hidden`` one (all that
    :func:`screened_head` reads)."""
    torch.manual_seed(seed)
    model = tiny_llama()
    head = torch.nn.Linear(hidden, vocab, bias=False)
    head.weight.data = torch.randn(vocab, hidden) * 0.05
    model.lm_head = head
    model.config.tie_word_embeddings = False
    return model


def _weight(model: LlamaForCausalLM) -> torch.Tensor:
    weight: torch.Tensor = model.lm_head.weight.data
    return weight


def _pick(head: ScreenedHead | None, hidden: torch.Tensor) -> torch.Tensor:
    assert head is not None
    picked = greedy_tokens(head, hidden)
    assert picked is not None
    return picked


def test_the_pick_is_the_float32_argmax_on_random_and_outlier_hidden_states() -> None:
    model = _plain_head()
    head = screened_head(model)
    assert head is not None
    torch.manual_seed(1)
    hidden = torch.randn(64, 96) * torch.linspace(0.1, 40, 64)[:, None]
    hidden[::7, 3] = 300.0  # an outlier channel, as large language models' final states have
    full = torch.nn.functional.linear(hidden, head.weight)
    assert torch.equal(_pick(head, hidden), full.argmax(-1))


def test_near_ties_below_the_float16_rounding_are_decided_by_the_float32_weights() -> None:
    model = _plain_head(vocab=64, hidden=32)
    weight = _weight(model)
    # Token 40 is token 10 moved by 1e-5 of itself, outward: far below float16's resolution (the two
    # float16 copies are equal) but far above float32 rounding, so only the recomputation can order them.
    weight[10] = weight[10].half().float()
    weight[40] = weight[10] + 1e-5 * weight[10]
    head = screened_head(model)
    assert head is not None
    assert torch.equal(weight[10].half(), weight[40].half())
    hidden = weight[10][None, :].clone()
    full = torch.nn.functional.linear(hidden, weight)
    assert float(full[0, 40]) > float(full[0, 10])  # the float32 logits do differ
    assert int(_pick(head, hidden)[0]) == int(full.argmax(-1)[0]) == 40


def test_the_bound_covers_the_screen_error_for_every_token() -> None:
    model = _plain_head(vocab=3000, hidden=128, seed=3)
    head = screened_head(model)
    assert head is not None
    torch.manual_seed(4)
    hidden = torch.randn(16, 128) * 25
    screen = torch.ops.quantized.linear_dynamic_fp16(hidden, head.packed)
    exact = torch.nn.functional.linear(hidden.double(), head.weight.double())
    allowed = (hidden.norm(dim=1) * SAFETY)[:, None].double() * head.slack.double()[None, :]
    error = (screen.double() - exact).abs()
    assert bool((error <= allowed).all())
    assert 0.01 < float((error / allowed).max()) < 1  # tight enough to leave few candidates


def test_non_finite_states_fall_back_to_the_plain_product() -> None:
    model = _plain_head()
    head = screened_head(model)
    assert head is not None
    hidden = torch.randn(3, 96)
    hidden[1, 0] = float("nan")
    assert greedy_tokens(head, hidden) is None


def test_a_flat_screen_gives_way_to_the_plain_product() -> None:
    model = _plain_head(vocab=5000, hidden=64)  # the tiny Llama's own width: its steps run below
    _weight(model)[:] = _weight(model)[0]  # every token the same logit: all 5,000 are candidates
    head = screened_head(model)
    assert head is not None
    assert greedy_tokens(head, torch.randn(2, 64)) is None
    with torch.inference_mode():
        ids = torch.randint(5, 300, (2, 4))
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        assert screened_step(head)(model, inputs).tolist() == [0, 0]  # the first of the tied tokens


def test_the_screen_is_off_where_logits_are_not_a_plain_linear_head() -> None:
    soft = Gemma2ForCausalLM(
        Gemma2Config(
            vocab_size=128,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            final_logit_softcapping=30.0,
        )
    )
    assert screened_head(soft) is None  # soft-capped logits
    biased = tiny_llama()
    biased.lm_head = torch.nn.Linear(64, biased.config.vocab_size, bias=True)
    biased.config.tie_word_embeddings = False
    assert screened_head(biased) is None
    huge = _plain_head(vocab=32, hidden=8)
    _weight(huge)[0, 0] = 1e6  # beyond float16's range
    assert screened_head(huge) is None


def test_a_screened_decode_step_equals_the_plain_step_on_a_tiny_llama() -> None:
    model = tiny_llama(seed=5, layers=2, hidden=64)
    head = screened_head(model)
    assert head is not None
    torch.manual_seed(6)
    ids = torch.randint(5, 300, (6, 9))
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        plain_cache = model(input_ids=ids, attention_mask=mask, use_cache=True).past_key_values
        screened_cache = model(input_ids=ids, attention_mask=mask, use_cache=True).past_key_values
        token = torch.randint(5, 300, (6,))
        position = torch.full((6,), 8)
        plain: list[list[int]] = [[1] for _ in range(6)]
        screened: list[list[int]] = [[1] for _ in range(6)]
        eos = torch.tensor([10_000])
        lanes = [Lane(plain_cache, mask, position, token, list(range(6)))]
        others = [Lane(screened_cache, mask, position, token, list(range(6)))]
        for _ in range(5):
            lanes.append(step_lane(model, lanes[-1], plain, 8, eos))  # type: ignore[arg-type]
            others.append(step_lane(model, others[-1], screened, 8, eos, screened_step(head)))  # type: ignore[arg-type]
    assert plain == screened
    assert len(plain[0]) == 6


def test_a_step_without_a_screen_reads_the_models_logits() -> None:
    model = tiny_llama(seed=7)
    ids = torch.randint(5, 300, (2, 4))
    with torch.inference_mode():
        expected = model(input_ids=ids).logits[:, -1, :].argmax(-1)
        got = greedy_step(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    assert torch.equal(got, expected)


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_rows_and_ties_keep_the_first_index(rows: int) -> None:
    model = _plain_head(vocab=50, hidden=16, seed=8)
    weight = _weight(model)
    weight[7] *= 10
    weight[30] = weight[7]  # an exact tie at the top: the lower index wins, as torch.argmax does
    head = screened_head(model)
    assert head is not None
    hidden = weight[7][None, :].repeat(rows, 1) * 3
    assert _pick(head, hidden).tolist() == [7] * rows
    assert torch.nn.functional.linear(hidden, weight).argmax(-1).tolist() == [7] * rows


def _counting(calls: list[int], function: Any) -> Any:
    def counted(head: ScreenedHead, hidden: torch.Tensor, scale: torch.Tensor) -> Any:
        calls.append(hidden.shape[0])
        return function(head, hidden, scale)

    return counted


@pytest.mark.parametrize("width", [333, 1024, 8192])
def test_screening_slice_by_slice_picks_the_same_tokens(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 333 (a short last one), 1,024 and more than the vocabulary: the same picks as the whole
    screen on random and outlier states, exact ties across slices (the first index), near-ties below
    float16's resolution, and the same refusals (a non-finite row, a flat screen)."""
    model = _plain_head(vocab=5000, hidden=96, seed=5)
    assert SLICED_MIN_ROWS <= 40  # the 40 rows below take the sliced screen
    weight = _weight(model)
    weight[4500] = weight[100]  # an exact tie across slices with token 100
    weight[2600] = weight[2000].half().float()
    weight[2000] = weight[2600] + 1e-5 * weight[2600]  # larger in float32, the same in float16
    head = screened_head(model)
    assert head is not None
    by_slices = sliced(head, width)
    torch.manual_seed(6)
    hidden = torch.randn(40, 96) * torch.linspace(0.5, 40, 40)[:, None]
    hidden[::6, 2] = 250.0
    hidden[0], hidden[1] = weight[100] * 4, weight[2000] * 4
    whole = _pick(head, hidden)
    assert torch.equal(_pick(by_slices, hidden), whole)
    assert torch.equal(whole, torch.nn.functional.linear(hidden, weight).argmax(-1))
    assert whole[:2].tolist() == [100, 2000]
    spied: list[int] = []
    monkeypatch.setattr(screen_module, "_sliced_superset", _counting(spied, screen_module._sliced_superset))
    assert torch.equal(_pick(by_slices, hidden), whole) and torch.equal(
        _pick(by_slices, hidden[:8]), whole[:8]
    )
    assert spied == [40]  # 8 rows: the whole screen (faster below SLICED_MIN_ROWS)
    hidden[3, 0] = float("nan")
    assert greedy_tokens(by_slices, hidden) is None
    flat = _plain_head(vocab=5000, hidden=96, seed=7)
    _weight(flat)[:] = _weight(flat)[0]  # every token the same logit: all are candidates
    flat_head = screened_head(flat)
    assert flat_head is not None
    assert greedy_tokens(sliced(flat_head, width), torch.randn(2, 96)) is None
