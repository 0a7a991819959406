"""The captured-graph (static-cache) engine gives the single-prefill engine's records: on the tiny Llama
(fast) and on the packaged SmolLM2 with real prompts (slow), float32 on the CPU, where it runs uncompiled."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from transformers import Gemma3ForCausalLM, Gemma3TextConfig, Qwen2Config, Qwen2ForCausalLM

from benchmark.models import static
from benchmark.models.engine import RawOutput
from benchmark.models.hf import resolve_engine
from benchmark.models.prefill import run_batch_single_prefill
from benchmark.models.protocol import VariantRequest
from benchmark.models.tiny import tiny_llama
from benchmark.testing import tiny_backend

TOKENS = 12


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    """The tiny Llama with its weights scaled up: at its initial scale it repeats one token, which would
    let a decode loop that mixes rows up pass unnoticed."""
    torch.set_num_threads(1)
    lively = tiny_llama()
    with torch.no_grad():
        for name, weight in lively.named_parameters():
            if "norm" not in name:
                weight.mul_(8)
    return lively


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    """12 prompts of 5 to 39 tokens, so the batch carries real padding."""
    draw = random.Random(0)
    return [[draw.randrange(3, 300) for _ in range(draw.randrange(5, 40))] for _ in range(12)]


def _both(
    model: torch.nn.Module,
    prompts: list[list[int]],
    baselines: list[list[int]] | None,
    eos: frozenset[int],
    tokens: int = TOKENS,
) -> tuple[list[RawOutput], list[RawOutput]]:
    options = {"max_new_tokens": tokens, "eos_ids": eos, "pad_id": 0}
    return (
        run_batch_single_prefill(model, prompts, baselines, **options),
        static.run_batch_static(model, prompts, baselines, **options),
    )


def _assert_same(reference: list[RawOutput], got: list[RawOutput]) -> None:
    for a, b in zip(reference, got, strict=True):
        assert (a.response_ids, a.finished, a.scored_tokens) == (b.response_ids, b.finished, b.scored_tokens)
        np.testing.assert_array_equal(a.hidden, b.hidden)  # the same prefill
        np.testing.assert_array_equal([a.logprob_sum, a.entropy_mean], [b.logprob_sum, b.entropy_mean])


def test_same_records_as_single_prefill_with_rows_ending_at_different_steps(model, prompts) -> None:
    # end tokens that some rows emit midway and others never: rows finish at different steps, which the
    # single-prefill engine handles by dropping them and the static engine by keeping them in its batch
    reference, got = _both(model, prompts, None, frozenset({357, 266, 313}))
    lengths = {len(r.response_ids) for r in reference}
    assert TOKENS in lengths and len(lengths) > 3
    assert any(r.finished for r in reference) and not all(r.finished for r in reference)
    assert len({tuple(r.response_ids) for r in reference}) > 8  # no repeated token everywhere
    _assert_same(reference, got)


def test_same_scores_and_states_with_baselines_and_at_the_token_limits(model, prompts) -> None:
    eos = frozenset({357})
    baselines = [list(range(10, 10 + 7 * (i % 3))) for i in range(12)]  # y_0 of 0, 7 and 14 tokens
    for tokens in (0, 1, 2, TOKENS):
        _assert_same(*_both(model, prompts, baselines, eos, tokens))


def test_a_kept_cache_is_reset_between_batches_of_one_shape(model, prompts) -> None:
    """The second batch of a shape reuses the first one's cache (a captured graph needs its addresses);
    nothing of the first batch's tokens survives the reset."""
    eos = frozenset({357})
    model.__dict__.pop("_sago_static_caches", None)
    options = {"max_new_tokens": TOKENS, "eos_ids": eos, "pad_id": 0}
    first = static.run_batch_static(model, prompts[:4], None, **options)
    [cache] = model.__dict__["_sago_static_caches"].values()
    other = static.run_batch_static(model, prompts[4:8], None, **options)
    assert list(model.__dict__["_sago_static_caches"].values()) == [cache]  # same shape, same cache
    again = static.run_batch_static(model, prompts[:4], None, **options)
    _assert_same(first, again)
    _assert_same(run_batch_single_prefill(model, prompts[4:8], None, **options), other)


def test_the_backend_runs_it_by_name_and_records_it() -> None:
    requests = [VariantRequest(f"k{i}", f"Name a city in country {i}.", "Paris.") for i in range(5)]
    static_backend = tiny_backend(batch_size=2, engine="static_graph")
    assert static_backend.describe()["engine"] == "static_graph"
    same = tiny_backend(batch_size=2).run(requests, max_new_tokens=8)
    for a, b in zip(same, static_backend.run(requests, max_new_tokens=8), strict=True):
        assert (a.response, a.logprob_sum) == (b.response, b.logprob_sum)


def test_cache_length_is_bucketed_and_the_cpu_step_is_not_compiled(model) -> None:
    assert static.cache_length(1, 1) == static.CACHE_BUCKET
    assert static.cache_length(static.CACHE_BUCKET, 1) == 2 * static.CACHE_BUCKET
    assert static.decode_step(model) is static._step  # graphs capture CUDA kernels only
    assert "_sago_static_step" not in model.__dict__


def test_sliding_window_models_are_declined_to_the_two_pass_engine() -> None:
    config = Gemma3TextConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=8,
    )
    with torch.device("meta"):
        gemma = Gemma3ForCausalLM(config)
    name, _ = resolve_engine("static_graph", gemma)
    assert name == "two_pass (static_graph declined: sliding-window layers need the dynamic cache)"
    assert resolve_engine("static_graph", tiny_llama())[0] == "static_graph"
    # a Qwen2 config names a window it does not use (use_sliding_window false): not declined
    qwen_config = Qwen2Config(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        use_sliding_window=False,
    )
    qwen_config.sliding_window = 4096  # as a config file may carry it
    with torch.device("meta"):
        qwen = Qwen2ForCausalLM(qwen_config)
    assert qwen_config.sliding_window and resolve_engine("static_graph", qwen)[0] == "static_graph"


@pytest.mark.slow  # loads the packaged SmolLM2 (dequantising the GGUF): ~20 s
def test_packaged_smollm2_gives_the_same_greedy_responses_and_plans_its_gpu_batch() -> None:
    from benchmark.models.loading import RowTokens, gpu_batch_size, load_backend, row_bytes
    from benchmark.submissions import load_submission

    torch.set_num_threads(1)
    backend = load_backend(  # the reference: single_prefill, whose decoding the static engine replaces
        load_submission("huggingfacetb__smollm2-135m-instruct-q4_1"),
        device="cpu",
        batch_size=4,
        threads=1,
        engine="single_prefill",
    )
    questions = [
        "What is the capital of Australia?",
        "How many legs does a spider have?",
        "Who wrote Pride and Prejudice?",
        "Is a tomato a fruit or a vegetable? Answer briefly.",
        "What is 17 times 3?",
    ]
    requests = [VariantRequest(f"q{i}", q, None) for i, q in enumerate(questions)]
    reference = backend.run(requests, max_new_tokens=24)
    backend.engine = static.run_batch_static
    got = backend.run(requests, max_new_tokens=24)
    assert [o.response for o in got] == [o.response for o in reference]
    assert sum(o.response_tokens for o in got) > 40  # real answers, not empty strings
    for a, b in zip(reference, got, strict=True):
        np.testing.assert_array_equal(a.hidden, b.hidden)
    # the real config: K and V, 30 layers, 3 KV heads of 64, float32 -> 46,080 cache bytes per token
    tokens = RowTokens(512, 256, 256)
    assert row_bytes(backend.model.config, tokens, torch.float32) == (
        46080 * (2 * 512 + 512) + 49152 * 256 * 4 + 31 * 512 * 576 * 4
    )
    assert gpu_batch_size(backend.model.config, 2**30, tokens, torch.float32) == 4
