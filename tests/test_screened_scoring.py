"""The screened y_0 scoring pass (large vocabularies): exact float32 logits where the probability is, the
float16 screen's for the tail, the float32 argmax, and the exact pass wherever the screen cannot be used."""

from __future__ import annotations

import math

import pytest
import torch

from benchmark.models import chunked
from benchmark.models.engine import RawOutput
from benchmark.models.pooled import _decode_head, run_batch_pooled
from benchmark.models.prefill import run_batch_single_prefill
from benchmark.models.screen import ScreenedHead, _build, sliced
from benchmark.models.tiny import tiny_llama, tiny_tokenizer

VOCAB, HIDDEN, ROWS = 6000, 64, 320


def _screen() -> ScreenedHead:
    """A random 6,000-token output layer in slices of 1,024 (the last one short)."""
    torch.manual_seed(0)
    head = _build(torch.randn(VOCAB, HIDDEN) * 0.05)
    assert head is not None
    return sliced(head, 1024)


def _queries() -> torch.Tensor:
    """Hidden states from broad rows (logits' spread ~8) to peaked ones (~32), grouped by spread so
    blocks of rows are alike, with an outlier channel as language models' final states have."""
    torch.manual_seed(1)
    queries = torch.randn(ROWS, HIDDEN) * torch.linspace(20, 80, ROWS)[:, None]
    queries[::9, 5] *= 6
    return queries


def _targets(queries: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Each row's target: one of its ten likeliest tokens, a random tail token, or none (-1)."""
    torch.manual_seed(2)
    top = torch.nn.functional.linear(queries, weight).topk(10, dim=1).indices
    targets = top[torch.arange(len(queries)), torch.randint(0, 10, (len(queries),))]
    targets[::5] = torch.randint(0, VOCAB, (len(targets[::5]),))
    targets[::13] = -1
    return targets


def _truth(queries: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """float64 log-probabilities of the targets and entropies, from the same float32 inputs."""
    log_probs = torch.log_softmax(queries.double() @ weight.double().T, dim=1)
    entropy = -(log_probs.exp() * log_probs).sum(dim=1)
    return log_probs[torch.arange(len(targets)), targets.clamp(min=0)], entropy


def _float32_error(queries: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Per row, the float32 rounding error a logit may carry: sqrt(n) * eps * max_j sum_i |q_i w_ji|.

    A float32 dot product of n terms is off from the exact one by at most n * u * sum|q_i w_i| (u = eps/2),
    and with high probability by lambda * sqrt(n) * u * sum|q_i w_i| with a small lambda (Higham & Mary's
    probabilistic error analysis; the order of the sum -- SIMD width, blocking, AMX or AVX-512 kernels --
    only changes which rounding errors add up). Taking lambda = 2 gives this value for any logit of the row.
    A log-probability is a logit minus a log-sum-exp (a weighted mean of logits), so one float32 pass is
    within 2x this of float64, and two float32 passes (another kernel, another CPU) within 4x of each other.
    Measured on an AMD EPYC: 0.28x and 0.04x of this; 3.06e-5 was seen on an Intel Xeon with AMX between the
    screened and float64 values, where this bound is at least 2e-4 (the screen's own float16 error, 0.06,
    stays far outside it)."""
    return HIDDEN**0.5 * torch.finfo(torch.float32).eps * (queries.abs() @ weight.abs().T).max(dim=1).values


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Record how many rows each call of ``chunked.<name>`` (a statistics pass) gets."""
    calls: list[int] = []
    original = getattr(chunked, name)

    def counted(queries: torch.Tensor, *rest: object) -> chunked._Stats:
        calls.append(queries.shape[0])
        stats: chunked._Stats = original(queries, *rest)
        return stats

    monkeypatch.setattr(chunked, name, counted)
    return calls


def test_the_screened_statistics_are_the_float64_ones_within_float32_log_softmax_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Broad and peaked rows, targets among the likeliest tokens and in the tail: the argmax is the float32
    one on every row; the targets' log-probabilities are within float32 rounding (:func:`_float32_error`,
    per row) of the exact pass's and of float64, and the entropies are within 5e-5 of float64 (measured
    2.2e-5; the screen's tail is the difference); the screen took every row."""
    screen = _screen()
    weight, queries = screen.weight, _queries()
    targets = _targets(queries, weight)
    calls = _spy(monkeypatch, "exact_statistics")
    got = chunked.screened_statistics(queries, targets, screen)
    assert calls == []
    assert torch.equal(got.best, torch.nn.functional.linear(queries, weight).argmax(dim=1))
    log_probs, entropy = _truth(queries, weight, targets)
    exact = chunked.exact_statistics(queries, targets, weight)
    scored = targets >= 0
    assert bool(got.log_probs[~scored].isnan().all())
    rounding = _float32_error(queries, weight)[scored]
    assert bool(((got.log_probs[scored] - exact.log_probs[scored]).abs() <= 4 * rounding).all())
    assert bool(((got.log_probs[scored] - log_probs[scored]).abs() <= 2 * rounding).all())
    assert float((got.entropies - entropy).abs().max()) < 5e-5
    # and the screen's own error is real: the tail's screen values are not the float32 logits
    screen_values = torch.ops.quantized.linear_dynamic_fp16(queries, _build(weight).packed)  # type: ignore[union-attr]
    screen_error = (screen_values - torch.nn.functional.linear(queries, weight)).abs().max(dim=1).values
    assert float(screen_error.max()) > 1e-4
    # and the bound is tight enough to see it: a target scored from the screen would be refused
    assert float(screen_error.max()) > 4 * float(_float32_error(queries, weight).max())


def test_the_argmax_is_the_first_float32_maximum_on_near_ties_below_float16_resolution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two tokens whose float16 copies are equal and whose float32 logits differ by 1e-5 of themselves, in
    different slices: the larger float32 logit wins; two exactly equal tokens: the first index wins."""
    screen = _screen()
    weight = screen.weight.clone()
    weight[100] = weight[100].half().float()
    weight[4000] = weight[100] + 1e-5 * weight[100]  # larger, same float16 copy
    weight[2500] = weight[100]  # an exact tie with 100, later index
    head = _build(weight)
    assert head is not None
    screen = sliced(head, 1024)
    queries = weight[[100, 100]].clone() * torch.tensor([[1.0], [-1.0]])
    got = chunked.screened_statistics(queries, torch.tensor([4000, 2500]), screen)
    full = torch.nn.functional.linear(queries, weight)
    assert got.best.tolist() == full.argmax(dim=1).tolist()
    assert int(got.best[0]) == 4000
    weight[4000] = weight[100]  # now three tokens tie exactly: the first index
    head = _build(weight)
    assert head is not None
    tied = chunked.screened_statistics(queries[:1], torch.tensor([100]), sliced(head, 1024))
    assert int(tied.best[0]) == 100


def test_flat_and_non_finite_rows_and_wide_blocks_take_the_exact_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row with more candidates than the cap (a zero state: every logit equal) and a row whose state is
    not finite take the exact pass, with its statistics; so does every row of a block whose candidates'
    union exceeds the dense share; the other rows stay screened."""
    screen = _screen()
    weight, queries = screen.weight, _queries()
    queries[40] = 0.0
    queries[200, 3] = math.nan
    targets = _targets(queries, weight)
    monkeypatch.setattr(chunked, "MOST_CANDIDATES", 1000)
    calls = _spy(monkeypatch, "exact_statistics")
    got = chunked.screened_statistics(queries, targets, screen)
    assert calls == [2]
    exact = chunked.exact_statistics(queries[[40, 200]], targets[[40, 200]], weight)
    for mine, theirs in zip(got, exact, strict=True):
        torch.testing.assert_close(mine[[40, 200]], theirs, equal_nan=True, rtol=0, atol=1e-12)
    assert float(got.entropies[40]) == pytest.approx(math.log(VOCAB), abs=1e-9)
    assert bool(got.entropies[200].isnan())
    log_probs, entropy = _truth(queries, weight, targets)
    fine = torch.ones(ROWS, dtype=torch.bool)
    fine[[40, 200]] = False
    assert float((got.entropies[fine] - entropy[fine]).abs().max()) < 5e-5
    calls.clear()
    monkeypatch.setattr(chunked, "DENSE_SHARE", 0.0)  # every block too wide: all rows exact
    wide = chunked.screened_statistics(queries, targets, screen)
    assert calls == [ROWS]
    for mine, theirs in zip(wide, chunked.exact_statistics(queries, targets, weight), strict=True):
        torch.testing.assert_close(mine, theirs, equal_nan=True, rtol=0, atol=1e-12)


def test_small_vocabularies_keep_the_exact_pass() -> None:
    """A tiny Llama (384 tokens) has a decode screen but no sliced one: its scoring pass stays exact."""
    model = tiny_llama()
    assert chunked.sliced_screen(model) is None


def test_the_pooled_engine_through_the_screened_pass_gives_the_single_prefill_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the screened pass forced on a tiny Llama (its near-flat logits put every token within the
    margin, so every logit is recomputed in float32) and its decode steps screening by slices: responses
    equal, y_0 scores within float rounding."""
    monkeypatch.setattr(chunked, "SCREENED_MIN_VOCAB", 0)
    monkeypatch.setattr(chunked, "DENSE_SHARE", 1.0)
    torch.manual_seed(0)
    model = tiny_llama().eval()
    assert chunked.sliced_screen(model) is not None
    decode_head = _decode_head(model)  # decode steps screen slice by slice too
    assert decode_head is not None and len(decode_head.slices) == 1
    calls = _spy(monkeypatch, "exact_statistics")
    screened = _spy(monkeypatch, "screened_statistics")
    pad = tiny_tokenizer().pad_token_id
    kwargs = {"max_new_tokens": 6, "eos_ids": frozenset({2}), "pad_id": pad}
    prompts = [[5 + (3 * i + j) % 90 for j in range(4 + i % 5)] for i in range(8)]
    own = [r.response_ids for r in run_batch_single_prefill(model, prompts, None, **kwargs)]
    baselines = [own[i] if i % 2 == 0 else own[i][:2] + [9] for i in range(len(prompts))]
    with torch.inference_mode():
        pooled: list[RawOutput] = run_batch_pooled(model, prompts, baselines, **kwargs)
    assert calls == [] and sum(screened) == sum(len(y0) for y0 in baselines)
    reference = run_batch_single_prefill(model, prompts, baselines, **kwargs)
    for a, b in zip(reference, pooled, strict=True):
        assert (b.response_ids, b.scored_tokens) == (a.response_ids, a.scored_tokens)
        for name in ("logprob_sum", "logprob_mean", "entropy_mean"):
            assert math.isclose(getattr(a, name), getattr(b, name), rel_tol=1e-5, abs_tol=1e-5), name


def test_the_accuracy_tool_sets_the_screened_pass_beside_float32_and_float64(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``make scoring-accuracy``'s table: one row per method against float64 over the kept rows, with the
    screened pass's errors its own and the exact pass's no larger than float32 rounding gives here."""
    from benchmark.tools import scoring_accuracy

    screen = _screen()
    weight, queries = screen.weight, _queries()
    targets = _targets(queries, weight)
    kept = [(queries[:100], targets[:100]), (queries[100:], targets[100:])]
    errors = scoring_accuracy.measure(kept, screen)
    assert [e.method for e in errors] == [
        "screened (pooled engine)",
        "exact slices (float32)",
        "float32 log_softmax",
    ]
    screened, exact, plain = errors
    assert screened.argmax_equal == exact.argmax_equal == plain.argmax_equal == ROWS
    assert 0 < screened.entropy < 5e-5 and exact.entropy < 2e-5
    whole = chunked.screened_statistics(queries, targets, screen)
    scored = targets >= 0
    log_probs, _ = _truth(queries, weight, targets)
    assert screened.log_prob == pytest.approx(
        float((whole.log_probs[scored] - log_probs[scored]).abs().max())
    )
    table = scoring_accuracy.format_table(errors, ROWS, int(scored.sum())).splitlines()
    assert len(table) == 6 and table[2].split()[-1] == str(ROWS)
    assert 0 < scoring_accuracy.candidates_per_row(kept, screen) < VOCAB
