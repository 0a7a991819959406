"""The GPU batch size planned from free memory (computed on the CPU from real configs and fake free bytes),
and the out-of-memory fallback that shrinks a batch without changing a record."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import LlamaConfig

from benchmark.models import loading
from benchmark.models.loading import RowTokens, gpu_batch_size, plan_gpu_batch, row_bytes
from benchmark.models.protocol import VariantRequest
from benchmark.models.tiny import tiny_llama
from benchmark.testing import tiny_backend

GIB = 2**30
PAPER_ROW = RowTokens(prompt=512, baseline=256, new=256)
LLAMA_8B = LlamaConfig(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
)
# the packaged SmolLM2-135M-Instruct's shape (tests/test_static_engine.py reads the real one)
SMOLLM2_135M = LlamaConfig(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
)


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_a_row_counts_both_kv_branches_the_scoring_logits_and_the_prefill_states() -> None:
    kv_per_token = 2 * 32 * 8 * 128 * 2  # K and V, layers, kv heads, head_dim, bf16 bytes
    expected = kv_per_token * (2 * 512 + 256 + 256) + 128256 * 256 * 4 + 33 * 512 * 4096 * 2
    assert row_bytes(LLAMA_8B, PAPER_ROW, torch.bfloat16) == expected
    # float32 doubles the cache and the states, not the logits (counted in float32 either way)
    assert row_bytes(LLAMA_8B, PAPER_ROW, torch.float32) == 2 * expected - 128256 * 256 * 4


def test_the_batch_is_the_largest_power_of_two_that_fits_and_is_capped() -> None:
    row = row_bytes(LLAMA_8B, PAPER_ROW, torch.bfloat16)  # ~449 MiB
    # an H200 with the 8B weights loaded: ~124 GiB free
    assert gpu_batch_size(LLAMA_8B, 124 * GIB, PAPER_ROW, torch.bfloat16) == 128
    # exactly 64 rows' worth of the planned share: 64; one byte fewer: 32
    share = loading.GPU_MEMORY_SHARE
    assert gpu_batch_size(LLAMA_8B, math.ceil(64 * row / share), PAPER_ROW, torch.bfloat16) == 64
    assert gpu_batch_size(LLAMA_8B, math.ceil(64 * row / share) - 2, PAPER_ROW, torch.bfloat16) == 32
    assert gpu_batch_size(LLAMA_8B, 0, PAPER_ROW, torch.bfloat16) == 1  # never 0: batch 1 then OOM says why
    # small models hit the cap long before memory runs out
    assert gpu_batch_size(SMOLLM2_135M, 139 * GIB, PAPER_ROW, torch.float32) == loading.GPU_MAX_BATCH_SIZE
    assert (
        gpu_batch_size(tiny_llama().config, 8 * GIB, PAPER_ROW, torch.float32) == loading.GPU_MAX_BATCH_SIZE
    )
    plan = plan_gpu_batch(SMOLLM2_135M, 2 * GIB, PAPER_ROW, torch.float32)
    assert plan.record() == {"batch_size": 8, "free_bytes": 2 * GIB, "row_bytes": plan.row_bytes}
    assert 8 * plan.row_bytes <= 0.8 * 2 * GIB < 16 * plan.row_bytes


def test_a_planned_batch_is_recorded_and_an_unplanned_one_is_not() -> None:
    plain = tiny_backend().describe()
    assert "batch_size_from_memory" not in plain  # CPU runs' run.json keep their bytes
    backend = tiny_backend()
    backend.planned_batch = {"batch_size": 64, "free_bytes": 10, "row_bytes": 1}
    assert backend.describe()["batch_size_from_memory"] == backend.planned_batch


def test_load_backend_plans_the_batch_from_cuda_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA branch of load_backend, run on the CPU: the free memory and the device are faked."""
    model = tiny_llama()
    seen: list[torch.device] = []

    def mem_get_info(device: torch.device) -> tuple[int, int]:
        seen.append(device)
        return 48 * 2**20, 80 * 2**20

    monkeypatch.setattr(loading.torch.cuda, "mem_get_info", mem_get_info)
    plan = loading._planned_batch(model, torch.device("cuda:1"), max_new_tokens=64, caches=1)
    assert seen == [torch.device("cuda:1")]
    tokens = RowTokens(loading.GPU_PROMPT_TOKENS, 64, 64)
    assert plan == plan_gpu_batch(model.config, 48 * 2**20, tokens, torch.float32)
    assert plan is not None and 1 < plan.batch_size < loading.GPU_MAX_BATCH_SIZE
    # the pooled engine holds 4 micro-batches' caches: a quarter of the rows per forward, same row cost
    pooled = loading._planned_batch(model, torch.device("cuda:1"), max_new_tokens=64, caches=4)
    assert pooled is not None and pooled.row_bytes == plan.row_bytes
    assert (
        pooled.batch_size == plan.batch_size // 4
        and 4 * pooled.batch_size * pooled.row_bytes <= 0.8 * 48 * 2**20
    )
    assert loading._planned_batch(model, torch.device("cpu"), max_new_tokens=64, caches=1) is None


def test_a_batch_that_runs_out_of_memory_shrinks_and_records_the_same_outputs() -> None:
    """The real single-prefill engine, made to raise torch.OutOfMemoryError above 2 rows: the backend
    halves 8 -> 4 -> 2 and every output equals the run that never ran out of memory."""
    prompts = [f"Question {i}: what is {i} plus {i * 3}? " * (1 + i % 3) for i in range(7)]
    requests = [VariantRequest(f"k{i}", p, "The answer is four.") for i, p in enumerate(prompts)]
    reference = tiny_backend(batch_size=8).run(requests, max_new_tokens=6)
    backend = tiny_backend(batch_size=8)
    real = backend.engine
    sizes: list[int] = []

    def tight_memory(model, prompts, baselines, **kwargs):  # type: ignore[no-untyped-def]
        sizes.append(len(prompts))
        if len(prompts) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model, prompts, baselines, **kwargs)

    backend.engine = tight_memory
    shrunk = backend.run(requests, max_new_tokens=6)
    assert sizes == [7, 4, 2, 2, 2, 1]
    assert backend.describe()["batch_sizes"] == [8, 4, 2]
    for a, b in zip(reference, shrunk, strict=True):
        assert (a.key, a.response, a.finished, a.baseline_tokens) == (
            b.key,
            b.response,
            b.finished,
            b.baseline_tokens,
        )
        assert a.logprob_sum == pytest.approx(b.logprob_sum, abs=1e-4)
        np.testing.assert_allclose(a.hidden, b.hidden, atol=1e-5)


def test_run_json_with_the_planned_batch_reads_and_checks_clean() -> None:
    """The added ``model.batch_size_from_memory`` is valid run.json: read and checked like a committed one."""
    import json

    from benchmark.documents import RunDocument
    from benchmark.paths import SUBMISSIONS_DIR

    committed = json.loads(
        (SUBMISSIONS_DIR / SLUG / "results/sago-v1/v2/run.json").read_text(encoding="utf-8")
    )
    planned = {**committed, "model": {**committed["model"], "batch_size_from_memory": PLANNED}}
    before, after = RunDocument.from_json(committed), RunDocument.from_json(planned)
    assert after.problems() == before.problems()
    fields = type(after.model).model_fields  # the declared fields read the same; the plan is kept as written
    assert {k: getattr(after.model, k) for k in fields} == {k: getattr(before.model, k) for k in fields}
    assert after.model.model_extra == {**(before.model.model_extra or {}), "batch_size_from_memory": PLANNED}
    assert after.differing(before) == []


SLUG = "huggingfacetb__smollm2-135m-instruct-q4_1"
PLANNED = {"batch_size": 128, "free_bytes": 124 * GIB, "row_bytes": 471072768}


def test_a_run_with_a_planned_batch_records_it_in_run_json(tmp_path: Path) -> None:
    """Through the harness: collect and finalize put the plan into run.json's ``model``, and the
    batch size run.json records is the planned one."""
    import json

    from helpers.toy import toy_variant_set

    from benchmark.harness.collect import collect
    from benchmark.harness.finalize import finalize
    from benchmark.profiles import get_profile

    backend = tiny_backend(batch_size=8)
    backend.planned_batch = {"batch_size": 8, "free_bytes": 3 * GIB, "row_bytes": 2**20}
    collect(
        backend,
        toy_variant_set(("alpha",), n_items=2),
        tmp_path,
        profile=get_profile("smoke"),
        progress=False,
    )
    run = json.loads(finalize(tmp_path, world_size=1).read_text(encoding="utf-8"))
    assert run["model"]["batch_size_from_memory"] == backend.planned_batch
    assert run["batch_size"] == 8 and run["model"]["dtype"] == "float32"
