"""The single-prefill engine equals the two-pass reference on Llama, Qwen2 and Gemma 3 shapes."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from benchmark.models.engine import RawOutput, run_batch_two_pass
from benchmark.models.prefill import SinglePrefillUnsupported, run_batch_single_prefill, unsupported_reason
from benchmark.models.tiny import tiny_llama, tiny_tokenizer

TOKENS = 16
# Forty "end" tokens: random weights rarely pick the real eos, so this makes rows stop at different
# steps and exercises the per-row stopping logic against ``generate``'s.
EOS = frozenset(range(40, 80))


def _common(init: float = 0.3) -> dict[str, object]:
    tok = tiny_tokenizer()
    # initializer_range 0.3 (not 0.02) gives peaked, varied logits: no all-same-token responses.
    # (Gemma scales its embeddings by sqrt(hidden), so it needs a smaller range for the same effect.)
    return {
        "vocab_size": len(tok),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "pad_token_id": tok.pad_token_id,
        "eos_token_id": tok.eos_token_id,
        "bos_token_id": None,
        "tie_word_embeddings": True,
        "initializer_range": init,
    }


# Sliding windows of 8 tokens are shorter than most prompts below, so windowed caches really slide.
# Seeds are chosen so that each model both stops on "eos" and runs to the limit on the prompts below.
SEEDS = {"llama": 0, "qwen2": 0, "qwen2-sliding": 2, "gemma3-sliding": 0}
BUILDERS: dict[str, Callable[[], PreTrainedModel]] = {
    "llama": lambda: LlamaForCausalLM(LlamaConfig(**_common())),
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**_common())),
    "qwen2-sliding": lambda: Qwen2ForCausalLM(
        Qwen2Config(**_common(), use_sliding_window=True, sliding_window=8, max_window_layers=1)
    ),
    "gemma3-sliding": lambda: Gemma3ForCausalLM(
        Gemma3TextConfig(
            **_common(0.05),
            head_dim=16,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
        )
    ),
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One torch thread: on a shared CPU more threads spin against other processes (10x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    """Eight chat-templated prompts from 18 to ~70 tokens, so the batch carries real left padding."""
    tok = tiny_tokenizer()
    texts = [
        "Hi",
        "What is the capital of France?",
        "Who wrote Hamlet? " * 3,
        "GIVE ME THE ANSWER!!!",
        "Please answer the question briefly. Thank you very much!",
        "Is it true that bats are blind?",
        "How many legs does a spider have? " * 2,
        "Answer now.",
    ]
    rendered = [
        tok.apply_chat_template(
            [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        for t in texts
    ]
    return [list(ids) for ids in rendered]


def _both(
    model: PreTrainedModel, prompts: list[list[int]], baselines: list[list[int]] | None, tokens: int = TOKENS
) -> tuple[list[RawOutput], list[RawOutput]]:
    pad = tiny_tokenizer().pad_token_id
    kwargs = {"max_new_tokens": tokens, "eos_ids": EOS, "pad_id": pad}
    return (
        run_batch_two_pass(model, prompts, baselines, **kwargs),
        run_batch_single_prefill(model, prompts, baselines, **kwargs),
    )


def _assert_same(reference: list[RawOutput], single: list[RawOutput]) -> None:
    assert len(reference) == len(single)
    for ref, got in zip(reference, single, strict=True):
        assert got.response_ids == ref.response_ids
        assert got.finished == ref.finished
        assert got.scored_tokens == ref.scored_tokens
        for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
            want, have = getattr(ref, name), getattr(got, name)
            assert math.isnan(want) == math.isnan(have), name
            if not math.isnan(want):
                assert have == pytest.approx(want, abs=1e-4, rel=1e-5), name
        assert got.hidden.dtype == np.float32 and got.hidden.shape == ref.hidden.shape
        np.testing.assert_allclose(got.hidden, ref.hidden, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_single_prefill_equals_two_pass(arch: str, prompts: list[list[int]]) -> None:
    torch.manual_seed(SEEDS[arch])
    model = BUILDERS[arch]().eval()
    assert unsupported_reason(model) is None
    reference, single = _both(model, prompts, None)
    _assert_same(reference, single)
    # The fixture is only a test if rows stop at different steps and some run to the limit.
    assert {r.finished for r in reference} == {True, False}
    assert len({len(r.response_ids) for r in reference}) >= 3
    # y_0 of mixed lengths, one of them empty (scored as log-prob 0 with NaN mean and entropy).
    baselines = [r.response_ids for r in reference]
    baselines[0] = []
    baselines[1] = reference[2].response_ids[:TOKENS] + [7, 8, 9]
    reference, single = _both(model, prompts, baselines)
    _assert_same(reference, single)
    assert single[0].logprob_sum == 0.0 and single[0].scored_tokens == 0
    assert single[1].scored_tokens == len(baselines[1]) and single[1].logprob_sum < 0


def test_shared_tiny_llama_and_token_limits(prompts: list[list[int]]) -> None:
    model = tiny_llama()
    for tokens in (0, 1, 5):
        reference, single = _both(model, prompts, [[11, 12]] * len(prompts), tokens=tokens)
        _assert_same(reference, single)
        assert all(len(r.response_ids) <= tokens for r in single)
    assert all(not r.response_ids and not r.finished for r in _both(model, prompts, None, tokens=0)[1])


def test_scores_known_answer_against_an_unpadded_forward(prompts: list[list[int]]) -> None:
    torch.manual_seed(1)
    model = BUILDERS["llama"]().eval()
    y0 = [40, 100, 200, 300]
    got = run_batch_single_prefill(
        model,
        [prompts[0], prompts[2]],
        [[5], y0],
        max_new_tokens=2,
        eos_ids=EOS,
        pad_id=tiny_tokenizer().pad_token_id,
    )[1]
    with torch.no_grad():
        out = model(torch.tensor([prompts[2] + y0]), output_hidden_states=True)
    logp = torch.log_softmax(out.logits[0, len(prompts[2]) - 1 : -1], dim=-1)  # rows predict y0
    assert got.logprob_sum == pytest.approx(float(logp[torch.arange(4), y0].sum()), abs=1e-4)
    assert got.entropy_mean == pytest.approx(float(-(logp.exp() * logp).sum(-1).mean()), abs=1e-4)
    expected_hidden = torch.stack([h[0, len(prompts[2]) - 1] for h in out.hidden_states]).numpy()
    np.testing.assert_allclose(got.hidden, expected_hidden, atol=1e-4, rtol=1e-4)


def test_refuses_what_it_cannot_branch(prompts: list[list[int]]) -> None:
    model = LlamaForCausalLM(LlamaConfig(**_common())).eval()
    model.config.layer_types = ["full_attention", "chunked_attention"]
    reason = unsupported_reason(model)
    assert reason is not None and "chunked_attention" in reason
    with pytest.raises(SinglePrefillUnsupported, match="chunked_attention"):
        run_batch_single_prefill(model, prompts, None, max_new_tokens=2, eos_ids=EOS, pad_id=0)
    assert unsupported_reason(object()) == "object is not a transformers PreTrainedModel"
    with pytest.raises(ValueError, match="2 baselines for 8 prompts"):
        run_batch_single_prefill(tiny_llama(), prompts, [[1], [2]], max_new_tokens=2, eos_ids=EOS, pad_id=0)


@pytest.mark.slow
def test_single_prefill_equals_two_pass_on_smollm2() -> None:
    from helpers.smollm2 import smollm2_chat

    questions = [
        "What is the capital of France?",
        "How many legs does a spider have? Answer briefly.",
        "Who wrote Hamlet?",
        "Name a prime number bigger than ten.",
    ]
    model, prompts, kwargs = smollm2_chat(questions, max_new_tokens=16)
    reference = run_batch_two_pass(model, prompts, None, **kwargs)
    _assert_same(reference, run_batch_single_prefill(model, prompts, None, **kwargs))
    baselines = [reference[0].response_ids] * len(prompts)
    _assert_same(
        run_batch_two_pass(model, prompts, baselines, **kwargs),
        run_batch_single_prefill(model, prompts, baselines, **kwargs),
    )


def test_fixture_exercises_the_shared_prefix_and_sliding_models_skip_it(prompts: list[list[int]]) -> None:
    """The equality tests above go through the shared-prefix path (Llama, Qwen2) and the plain one
    (sliding windows count cache slots, so pads after a shared prefix would shift them)."""
    from benchmark.models.prefill import MIN_SHARED_PREFIX, shared_prefix_length

    torch.manual_seed(0)
    shared = shared_prefix_length(BUILDERS["llama"]().eval(), prompts)
    assert shared >= MIN_SHARED_PREFIX and all(p[:shared] == prompts[0][:shared] for p in prompts)
    assert shared_prefix_length(BUILDERS["qwen2"]().eval(), prompts) == shared
    assert shared_prefix_length(BUILDERS["qwen2-sliding"]().eval(), prompts) == 0
    assert shared_prefix_length(BUILDERS["gemma3-sliding"]().eval(), prompts) == 0
    # A prompt that is nothing but the common prefix keeps its last token outside it.
    assert shared_prefix_length(BUILDERS["llama"]().eval(), [prompts[0][:shared], prompts[1]]) == shared - 1


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_draft_engine_gives_the_single_prefill_outputs(arch: str, prompts: list[list[int]]) -> None:
    """y_0 as a draft: whether y_0 is the row's own greedy answer (fully kept), a prefix of it, diverges
    at some token, or is empty, the draft engine returns the single-prefill engine's responses, scores and
    hidden states. (Sliding-window models whose window is shorter than prompt + y_0 + answer decode
    plainly, so they must agree trivially.)"""
    from benchmark.models.prefill import run_batch_draft

    torch.manual_seed(SEEDS[arch])
    model = BUILDERS[arch]().eval()
    pad = tiny_tokenizer().pad_token_id
    kwargs = {"max_new_tokens": TOKENS, "eos_ids": EOS, "pad_id": pad}
    own = [r.response_ids for r in run_batch_single_prefill(model, prompts, None, **kwargs)]
    baselines = [
        own[0],  # the row's own answer: kept whole
        own[1][:3],  # a prefix of it
        own[2][:2] + [7, 8, 9],  # diverges at the third token
        [],  # empty
        own[5],  # another row's answer
        own[5][: TOKENS // 2],
        own[6],
        [11, 12],
    ]
    plain = run_batch_single_prefill(model, prompts, baselines, **kwargs)
    draft = run_batch_draft(model, prompts, baselines, **kwargs)
    for a, b in zip(plain, draft, strict=True):
        assert (b.response_ids, b.finished, b.scored_tokens) == (a.response_ids, a.finished, a.scored_tokens)
        for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
            want, have = getattr(a, name), getattr(b, name)
            assert (math.isnan(want) and math.isnan(have)) or want == have, name
        np.testing.assert_array_equal(a.hidden, b.hidden)
    for tokens in (0, 1, 3):
        short = {**kwargs, "max_new_tokens": tokens}
        cut = [b[:tokens] for b in baselines]
        assert [r.response_ids for r in run_batch_draft(model, prompts, cut, **short)] == [
            r.response_ids for r in run_batch_single_prefill(model, prompts, cut, **short)
        ]


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_pooled_engine_gives_each_micro_batchs_single_prefill_outputs(
    arch: str, prompts: list[list[int]]
) -> None:
    """The pooled engine reads its call as four micro-batches and decodes the unfinished rows of all of
    them together, regrouped by tokens left (rows of different caches, left-padded to one width): every
    row's response equals the single-prefill engine's on the row's micro-batch, its hidden states are
    those same bits and its y_0 scores those numbers up to float reassociation. Sliding-window models
    whose window the padded rows would overrun decode each micro-batch alone, with the same result."""
    from benchmark.models.pooled import micro_batches, run_batch_pooled

    torch.manual_seed(SEEDS[arch])
    model = BUILDERS[arch]().eval()
    kwargs = {"max_new_tokens": TOKENS, "eos_ids": EOS, "pad_id": tiny_tokenizer().pad_token_id}
    # Sixteen rows (micro-batches of 4 with different widths); y_0 kept whole, cut, diverging or empty.
    calls = prompts + prompts[::-1]
    own = [r.response_ids for r in run_batch_single_prefill(model, calls, None, **kwargs)]
    baselines = [own[i] if i % 4 == 0 else own[i][: i % 5] + [7 + i] * (i % 3) for i in range(len(calls))]
    for given in (None, baselines):
        pooled = run_batch_pooled(model, calls, given, **kwargs)
        found: dict[int, RawOutput] = {}
        for rows in micro_batches([len(c) for c in calls]):
            outs = run_batch_single_prefill(
                model, [calls[i] for i in rows], None if given is None else [given[i] for i in rows], **kwargs
            )
            found |= dict(zip(rows, outs, strict=True))
        reference = [found[i] for i in range(len(calls))]
        assert len(pooled) == len(reference) == len(calls)
        for a, b in zip(reference, pooled, strict=True):
            assert (b.response_ids, b.finished, b.scored_tokens) == (
                a.response_ids,
                a.finished,
                a.scored_tokens,
            )
            for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
                # the pooled scoring pass applies the output layer in vocabulary slices: float
                # reassociation only (test_the_chunked_scoring_pass_gives_the_model_logits_statistics)
                want, have = getattr(a, name), getattr(b, name)
                assert (math.isnan(want) and math.isnan(have)) or math.isclose(
                    want, have, rel_tol=1e-5, abs_tol=1e-5
                ), name
            np.testing.assert_array_equal(a.hidden, b.hidden)
    assert {len(r) for r in own} != {TOKENS}, "some rows must stop early for the regrouping to matter"
    for tokens in (0, 1):
        short = {**kwargs, "max_new_tokens": tokens}
        cut = [b[:tokens] for b in baselines]
        expected: dict[int, list[int]] = {}
        for rows in micro_batches([len(c) for c in calls]):
            outs = run_batch_single_prefill(model, [calls[i] for i in rows], [cut[i] for i in rows], **short)
            expected |= {row: out.response_ids for row, out in zip(rows, outs, strict=True)}
        assert [r.response_ids for r in run_batch_pooled(model, calls, cut, **short)] == [
            expected[i] for i in range(len(calls))
        ]


def test_the_shared_prefix_is_read_once_per_model_and_gives_the_same_bits(prompts: list[list[int]]) -> None:
    """The chat template's common start is read alone once per model; later batches copy its one-row
    cache, and their outputs are the bits a freshly read prefix gives."""
    torch.manual_seed(SEEDS["llama"])
    model = BUILDERS["llama"]().eval()
    kwargs = {"max_new_tokens": 4, "eos_ids": EOS, "pad_id": tiny_tokenizer().pad_token_id}
    first = run_batch_single_prefill(model, prompts, None, **kwargs)
    assert len(model.__dict__["_sago_prefix_states"]) == 1
    calls: list[int] = []
    forward = model.forward

    def counted(*args: object, **kw: object) -> object:
        calls.append(int(kw["input_ids"].shape[0]))  # type: ignore[attr-defined]
        return forward(*args, **kw)

    model.forward = counted  # type: ignore[method-assign]
    again = run_batch_single_prefill(model, prompts, None, **kwargs)
    assert 1 not in calls[:1]  # the first forward is the batch's own, not the prefix read alone
    for a, b in zip(first, again, strict=True):
        assert a.response_ids == b.response_ids
        np.testing.assert_array_equal(a.hidden, b.hidden)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("chunk", [50, 384, 4096])
def test_the_chunked_scoring_pass_gives_the_model_logits_statistics(
    arch: str, chunk: int, prompts: list[list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pooled engine's scoring pass applies the output layer in vocabulary slices (50 leaves a short
    last slice; 384 is the whole vocabulary; 4096 more than it): y_0's log-probabilities and entropies
    equal those of the model's own logits within float reassociation, and the draft prefixes are equal."""
    from benchmark.models import chunked
    from benchmark.models.prefill import prefill_batch, score_and_draft
    from benchmark.models.screen import plain_head

    monkeypatch.setattr(chunked, "VOCAB_CHUNK", chunk)
    torch.manual_seed(SEEDS[arch])
    model = BUILDERS[arch]().eval()
    pad = tiny_tokenizer().pad_token_id
    own = [
        r.response_ids
        for r in run_batch_single_prefill(model, prompts, None, max_new_tokens=12, eos_ids=EOS, pad_id=pad)
    ]
    # whole, cut, diverging and empty baselines
    baselines = [own[0], own[1][:3], own[2][:2] + [9, 9], [], own[4], own[5][:1], [11] * 5, own[7]]
    weight = plain_head(model)
    assert weight is not None
    with torch.inference_mode():
        reference = score_and_draft(model, prefill_batch(model, prompts, pad), baselines, pad)
        got = chunked.score_and_draft_chunked(
            model, prefill_batch(model, prompts, pad), baselines, pad, weight
        )
    assert got.prefix == reference.prefix
    assert got.width == reference.width and torch.equal(got.y_mask, reference.y_mask)
    for mine, theirs in zip(got.scores, reference.scores, strict=True):
        assert mine.scored_tokens == theirs.scored_tokens
        for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
            a, b = getattr(mine, name), getattr(theirs, name)
            assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5), name
    assert any(p[:-1] for p in reference.prefix) and any(len(p) == 1 for p in reference.prefix)


def test_the_chunked_scoring_pass_is_closer_to_float64_than_a_float32_log_softmax(
    prompts: list[list[int]],
) -> None:
    """Its statistics sum in float64 across vocabulary slices, so on a vocabulary of 50,000 (the size
    where float32 log-softmax error shows) they sit nearer the float64 values of the same logits than the
    single-prefill engine's float32 log-softmax does."""
    from benchmark.models import chunked
    from benchmark.models.prefill import prefill_batch, score_and_draft
    from benchmark.models.screen import plain_head

    config = LlamaConfig(**{**_common(), "vocab_size": 50_000})
    torch.manual_seed(1)
    model = LlamaForCausalLM(config).eval()
    pad = tiny_tokenizer().pad_token_id
    baselines = [[5 + (7 * i + j) % 300 for j in range(12)] for i in range(len(prompts))]
    weight = plain_head(model)
    assert weight is not None
    with torch.inference_mode():
        reference = score_and_draft(model, prefill_batch(model, prompts, pad), baselines, pad)
        got = chunked.score_and_draft_chunked(
            model, prefill_batch(model, prompts, pad), baselines, pad, weight
        )
        state = prefill_batch(model, prompts, pad)
        width = len(baselines[0])
        inputs = {
            "input_ids": torch.tensor(baselines),
            "attention_mask": torch.cat(
                [state.attention_mask, torch.ones(len(prompts), width, dtype=torch.long)], -1
            ),
            "position_ids": state.last_position[:, None] + 1 + torch.arange(width)[None, :],
            "past_key_values": state.cache,
            "use_cache": True,
        }
        hidden = model.get_decoder()(**inputs).last_hidden_state.double()
    errors: dict[str, list[float]] = {"reference": [], "chunked": []}
    for row, y0 in enumerate(baselines):
        logits = torch.cat(
            [state.next_logits[row : row + 1].double(), hidden[row, : width - 1] @ weight.double().T]
        )
        exact = float(torch.log_softmax(logits, -1).gather(-1, torch.tensor(y0)[:, None]).sum())
        errors["reference"].append(abs(reference.scores[row].logprob_sum - exact))
        errors["chunked"].append(abs(got.scores[row].logprob_sum - exact))
    assert max(errors["chunked"]) < 1e-4
    assert sum(errors["chunked"]) < sum(errors["reference"])


def test_the_running_statistics_match_the_whole_row_with_first_index_ties() -> None:
    """The online-softmax statistics over slices equal the whole row's: the argmax is the first index of
    the largest logit (ties planted inside one slice and across slices, and a row whose maximum sits in
    the last slice), and the log-probability and entropy equal float64 over the whole row."""
    from benchmark.models.chunked import _Running

    torch.manual_seed(3)
    logits = torch.randn(5, 40) * 4
    logits[0, [3, 5]] = 30.0  # tie inside the first slice
    logits[1, [6, 20]] = 30.0  # tie across slices
    logits[2, 39] = 30.0  # maximum in the last, short slice
    logits[3] = 1.5  # a flat row: every token ties
    targets = torch.tensor([3, 0, 39, 11, -1])
    running = _Running(5, targets)
    for start in range(0, 40, 7):
        running.update(logits[:, start : start + 7].clone(), start)
    assert running.best.tolist() == logits.argmax(dim=1).tolist() == [3, 6, 39, 0, int(logits[4].argmax())]
    exact = torch.log_softmax(logits.double(), dim=1)
    want = exact[torch.arange(4), targets[:4]]
    assert torch.allclose(running.stats().log_probs[:4], want, atol=1e-6, rtol=0)
    assert math.isnan(float(running.stats().log_probs[4]))  # no target in row 4
    entropy = -(exact.exp() * exact).sum(dim=1)
    assert torch.allclose(running.stats().entropies, entropy, atol=1e-6, rtol=0)
