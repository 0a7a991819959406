"""``make bench-peer``: the table it prints, and the one-line refusal where lm-eval is missing."""

from __future__ import annotations

import importlib.util
import math

import pytest
from helpers.toy import toy_variant_set

from benchmark.models.engine import greedy_generate, left_pad
from benchmark.profiles import get_profile
from benchmark.testing import tiny_backend
from benchmark.tools.bench import BenchResult, bench, plain_generate
from benchmark.tools.bench_peer import PeerRow, format_rows, main
from benchmark.tools.timing import Timing


def test_ratio_is_harness_over_peer_in_wall_and_cpu_time() -> None:
    harness = BenchResult(
        prompts=264,
        generated_tokens=7000,
        harness_seconds=120.0,
        bare_seconds=90.0,
        peak_rss_mib=2048.0,
        harness_cpu_seconds=100.0,
        bare_cpu_seconds=80.0,
    )
    row = PeerRow(
        batch_size=32,
        prompts=264,
        peer_seconds=150.0,
        peer_cpu_seconds=125.0,
        harness=harness,
        on_peer_batches=Timing(130.0, 124.0, math.nan),
    )
    assert row.ratio == pytest.approx(0.8) and row.cpu_ratio == pytest.approx(0.8)
    line = format_rows([row], threads=1).splitlines()[-1].split()
    assert line[:4] == ["1", "32", "264", "150.0"]
    assert line[-6:] == ["0.800", "125.0", "100.0", "80.0", "124.0", "0.800"]


def test_plain_generate_on_padded_batches_is_each_prompts_greedy_continuation() -> None:
    """The floor@peer column's work: generate over a batch padded elsewhere (lm-eval pads on the left, as
    the harness's left_pad does) gives each row the harness's own greedy continuation of that batch."""
    backend = tiny_backend(batch_size=4)
    prompts = [backend.render(text) for text in ("One.", "A longer second prompt here.", "Three words now.")]
    batch = left_pad(prompts, backend.pad_id, backend.model.device)
    (new_ids,) = plain_generate(backend, [(batch.input_ids, batch.attention_mask)], 6)
    harness = greedy_generate(
        backend.model, prompts, max_new_tokens=6, eos_ids=backend.eos_ids, pad_id=backend.pad_id
    )
    assert new_ids.shape == (3, 6) or all(hit for _, hit in harness)
    for row, (ids, _) in zip(new_ids.tolist(), harness, strict=True):
        assert row[: len(ids)] == ids


@pytest.mark.skipif(
    importlib.util.find_spec("lm_eval") is not None, reason="checks the message without lm-eval"
)
def test_without_lm_eval_it_points_to_the_make_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--batch-size", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "make bench-peer" in err


def test_bench_without_the_floor_times_the_harness_alone() -> None:
    """``--no-floor``: the harness is timed over the profile's prompts, the floor's columns are NaN (and
    shown so in the table) rather than a time that was not measured."""
    result = bench(
        tiny_backend(batch_size=4), toy_variant_set(), profile=get_profile("smoke"), batch_size=4, floor=False
    )
    assert result.prompts > 0 and result.harness_seconds > 0 and result.generated_tokens > 0
    assert math.isnan(result.bare_seconds) and math.isnan(result.bare_cpu_seconds)
    row = PeerRow(
        batch_size=4,
        prompts=result.prompts,
        peer_seconds=1.0,
        peer_cpu_seconds=1.0,
        harness=result,
        on_peer_batches=Timing(1.0, 1.0, math.nan),
    )
    assert format_rows([row], threads=1).splitlines()[-1].split()[8] == "nan"
