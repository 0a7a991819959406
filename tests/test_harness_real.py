"""The harness on a real packaged model (SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32).

Golden numbers were recorded on x86-64 CPU with torch 2.13 / transformers 5.23; they are compared
by tolerance, and the sanity checks hold whatever the platform.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.toy import toy_variant_set
from safetensors.numpy import load_file

from benchmark.harness.collect import collect
from benchmark.harness.finalize import finalize
from benchmark.models.hf import HFBackend
from benchmark.models.loading import load_backend
from benchmark.profiles import Profile
from benchmark.submissions import load_submission

pytestmark = pytest.mark.slow
SLUG = "huggingfacetb__smollm2-135m-instruct-q4_1"
ONE_ITEM = Profile("one-item", 1, False, 12, "test: first item, weakest and strongest levels, 12 tokens")


@pytest.fixture(scope="session")
def smollm2() -> HFBackend:
    """Loaded once per session: dequantising the GGUF is most of this file's run time."""
    torch.set_num_threads(1)
    return load_backend(load_submission(SLUG), device="cpu", batch_size=8, threads=1, engine="single_prefill")


@pytest.fixture(scope="session")
def results(smollm2: HFBackend, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("smollm2")
    collect(
        smollm2, toy_variant_set(("alpha",), n_items=1), out, profile=ONE_ITEM, batch_size=8, progress=False
    )
    finalize(out)
    return out


def test_golden_baseline(results: Path) -> None:
    records = pd.read_parquet(results / "records" / "alpha.parquet").set_index("variant_id")
    base = records.loc["baseline/none/0"]
    assert base["response"] == "The capital of France is Paris."
    assert base["response_tokens"] == 7 and bool(base["finished"])
    assert base["baseline_tokens"] == 7 and base["prompt_tokens"] == 37
    assert base["logprob_sum"] == pytest.approx(-2.5791, abs=0.05)
    assert base["entropy_mean"] == pytest.approx(0.7493, abs=0.05)
    polite = records.loc["politeness/prefix/10"]
    assert polite["logprob_sum"] == pytest.approx(-0.6845, abs=0.05)


def test_sanity_of_a_real_run(results: Path, smollm2: HFBackend) -> None:
    records = pd.read_parquet(results / "records" / "alpha.parquet").set_index("variant_id")
    base = records.loc["baseline/none/0"]
    # Same prompt, other batch partners: the noise floor is tiny and the greedy answer unchanged.
    for control in ("identity/global/1", "rerun/none/0"):
        assert records.loc[control, "response"] == base["response"]
        assert records.loc[control, "logprob_sum"] == pytest.approx(base["logprob_sum"], abs=1e-3)
    assert (records["baseline_tokens"] == base["response_tokens"]).all()  # every row scores the same y_0
    assert (records["logprob_sum"] < 0).all()
    vocab = smollm2.model.config.vocab_size
    assert records["entropy_mean"].between(0, math.log(vocab)).all()
    acts = load_file(str(results / "activations" / "alpha.safetensors"))
    layers = smollm2.model.config.num_hidden_layers + 1
    assert all(
        a.shape == (layers, smollm2.model.config.hidden_size) and np.isfinite(a).all() for a in acts.values()
    )
    first, second = acts["alpha-000|baseline/none/0"], acts["alpha-000|identity/global/1"]
    np.testing.assert_allclose(first.astype(np.float32), second.astype(np.float32), rtol=0.01, atol=0.05)
    run = json.loads((results / "run.json").read_text())
    assert run["model"]["file_sha256"] == load_submission(SLUG).model.sha256  # type: ignore[union-attr]
    assert run["chat_template"] == "applied"
