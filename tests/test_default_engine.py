"""A new run on a CPU uses the pooled engine when it names none: run.json says so with the engine's
settings, its plan holds 4 forwards of ``--batch-size`` rows per batch, its greedy responses are the
single-prefill engine's, a stopped run resumes, and a run stopped under the former default keeps it."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from helpers.stopping import stopped_after
from helpers.toy import toy_variant_set

from benchmark.harness.evaluate import (
    EvaluateOptions,
    checkpoint_plan,
    evaluate_model,
    options_argv,
    resumed_engine,
)
from benchmark.models.pooled import POOL
from benchmark.models.tiny import tiny_llama, tiny_tokenizer
from benchmark.submissions import Submission

ROWS = 2
"""rows per forward (``--batch-size``) of the pooled runs here: a planned batch holds POOL * ROWS."""
DEFAULT = EvaluateOptions(
    set_name="toy", version="v1", profile="smoke", device="cpu", batch_size=ROWS, threads=1, progress=False
)
"""``sago evaluate`` with no ``--engine``: the device's default."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Submission:
    """A local submission of the tiny Llama's weights, loaded the way ``sago evaluate`` loads a model."""
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_llama().save_pretrained(folder, safe_serialization=True)
    tiny_tokenizer().save_pretrained(folder)
    return Submission.model_validate(
        {"name": "t", "model": {"kind": "local", "path": str(folder)}, "license": "MIT", "parameters": 1}
        | {"contact": "me"}
    )


def _run(tiny: Submission, options: EvaluateOptions, out: Path) -> dict[str, object]:
    """Evaluate the tiny model on the toy set into ``out``; its run.json."""
    evaluate_model(tiny, options, out, label="tiny", variant_set=toy_variant_set())
    loaded: dict[str, object] = json.loads((out / "run.json").read_text())
    return loaded


def _records(out: Path) -> pd.DataFrame:
    frames = [pd.read_parquet(p) for p in sorted((out / "records").glob("*.parquet"))]
    return pd.concat(frames).sort_values(["dataset", "item_id", "variant_id"]).reset_index(drop=True)


def test_the_validator_knows_every_registered_engine_without_torch() -> None:
    """``sago submissions validate`` reads engine names from a module without torch; they are exactly the
    registry's."""
    from benchmark.engine_names import LOCAL_ENGINES
    from benchmark.models.hf import ENGINES

    assert sorted(LOCAL_ENGINES) == ENGINES.names()


def test_the_default_is_not_named_on_the_command_line() -> None:
    """No engine named stays unnamed in the flags a run hands its other processes, so each process takes
    its own device's default (or its checkpoint's engine); a named engine is passed on."""
    assert EvaluateOptions().engine is None
    assert "--engine" not in options_argv(DEFAULT)
    argv = options_argv(replace(DEFAULT, engine="single_prefill"))
    assert argv[argv.index("--engine") + 1] == "single_prefill"


def test_a_default_cpu_run_is_pooled_and_gives_the_single_prefill_responses(
    tiny: Submission, tmp_path: Path
) -> None:
    """run.json records the pooled engine and its settings, and batches of POOL forwards of
    ``--batch-size`` rows; the same plan run by the single-prefill engine gives the same greedy responses
    and the same y_0 scores up to float reassociation (the pooled scoring pass sums in slices)."""
    pooled = _run(tiny, DEFAULT, tmp_path / "pooled")
    assert pooled["engine"] == "pooled" and pooled["batch_size"] == POOL * ROWS
    model = pooled["model"]
    assert isinstance(model, dict) and model["engine"] == "pooled"
    assert model["engine_settings"] == {
        "pool": POOL,
        "refill_fraction": 4,
        "greedy_head": "float16_screen",  # a tiny Llama's logits are a plain linear head
        "scoring_head": "vocab_chunks",
    }
    single_options = replace(DEFAULT, engine="single_prefill", batch_size=POOL * ROWS)
    single = _run(tiny, single_options, tmp_path / "single")
    assert single["engine"] == "single_prefill" and single["batch_size"] == pooled["batch_size"]
    assert "engine_settings" not in single["model"]  # type: ignore[operator]
    a, b = _records(tmp_path / "pooled"), _records(tmp_path / "single")
    assert len(a) == len(b) > 0
    assert a["response"].tolist() == b["response"].tolist()
    assert a["response_tokens"].tolist() == b["response_tokens"].tolist()
    for column in ("logprob_sum", "logprob_mean", "entropy_mean"):
        for x, y in zip(a[column], b[column], strict=True):
            same = math.isnan(x) and math.isnan(y) or math.isclose(x, y, abs_tol=1e-4)
            assert same, (column, x, y)


def test_a_stopped_pooled_run_resumes_and_one_stopped_under_single_prefill_keeps_it(
    tiny: Submission, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A default (pooled) run stopped after three batches resumes with the same command, keeps its finished
    batches and writes the bytes of a run that was never stopped. A run started under single_prefill
    (the default before pooled) and restarted with no engine named keeps single_prefill, so its checkpoint
    is not refused as another run's; ``--force`` or a named engine take their own."""
    old = replace(DEFAULT, engine="single_prefill")
    for options, out in ((DEFAULT, tmp_path / "pooled"), (old, tmp_path / "old")):
        with stopped_after(monkeypatch, 3), pytest.raises(KeyboardInterrupt):
            _run(tiny, options, out)
        assert len(list((out / "checkpoint" / "rank-0").glob("*.parquet"))) == 3
    assert resumed_engine(checkpoint_plan(tmp_path / "pooled"), DEFAULT) == "pooled"
    assert resumed_engine(checkpoint_plan(tmp_path / "old"), DEFAULT) == "single_prefill"
    assert resumed_engine(checkpoint_plan(tmp_path / "old"), replace(DEFAULT, force=True)) is None
    assert resumed_engine(checkpoint_plan(tmp_path / "old"), replace(DEFAULT, engine="draft")) == "draft"
    assert resumed_engine(checkpoint_plan(tmp_path / "new"), DEFAULT) is None
    resumed = _run(tiny, DEFAULT, tmp_path / "pooled")
    assert resumed["engine"] == "pooled"
    assert _run(tiny, DEFAULT, tmp_path / "old")["engine"] == "single_prefill"
    _run(tiny, DEFAULT, tmp_path / "once")
    made = sorted(p.relative_to(tmp_path / "once") for p in (tmp_path / "once").glob("*/*.*"))
    assert any(str(p).startswith("records/") for p in made)
    for name in made:
        assert (tmp_path / "pooled" / name).read_bytes() == (tmp_path / "once" / name).read_bytes(), name
