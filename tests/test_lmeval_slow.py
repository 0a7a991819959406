"""The real round trip: the README's lm-eval block run as written, lm-eval 0.4.13 on SmolLM2 (the packaged
GGUF, offline), then a sago run of the same rows; the response-only numbers must agree.

lm-eval is not a dependency of sago-bench: it runs from the interpreter in ``$SAGO_LM_EVAL_PYTHON``, else
``.bench-venv/bin/python`` (``make peer-venv`` installs it there, pinned); without either the test is
skipped. Minutes on a CPU: lm-eval generates every row once, sago runs them with all four axes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.lmeval import option, readme_commands, run_readme

import benchmark
from benchmark import jsonio
from benchmark.axes import read_scorer_backbones, write_deltas
from benchmark.axes.measures import all_measures, model_measures
from benchmark.lmeval.export import LM_EVAL_PIN
from benchmark.lmeval.ingest import differing_responses, not_measured_map, response_only
from benchmark.packaged import materialise
from benchmark.results import ResultsFolder
from benchmark.stats.summary import summarize

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
SLUG = "huggingfacetb__smollm2-135m-instruct-q4_1"
ARTEFACT = "smollm2-135m-instruct-q4_1"
RESPONSE_MEASURES = [m.name for m in all_measures() if m.name not in model_measures()]
MOST_DIFFER = 0.1
"""more differing responses than this share means lm-eval asked something else (template, stop rule)."""


def lm_eval_python() -> Path:
    """The interpreter that has lm-eval, checked to be the pinned release."""
    python = Path(os.environ.get("SAGO_LM_EVAL_PYTHON", REPO / ".bench-venv" / "bin" / "python"))
    if not python.is_file():
        pytest.skip(f"lm-eval is not installed ({python} is missing; run `make peer-venv`)")
    found = subprocess.run(
        [str(python), "-c", "import lm_eval; print(lm_eval.__version__)"], capture_output=True, text=True
    )
    if found.returncode != 0:
        pytest.skip(f"{python} has no lm_eval; run `make peer-venv`")
    assert found.stdout.strip() == LM_EVAL_PIN.split("==")[1], f"{python} has lm-eval {found.stdout.strip()}"
    return python


def records(folder: Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p) for p in ResultsFolder(folder).record_files()], ignore_index=True)


def test_lm_eval_on_smollm2_gives_the_numbers_of_a_sago_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    python = lm_eval_python()
    gguf = materialise(ARTEFACT)
    monkeypatch.chdir(tmp_path)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
        "TOKENIZERS_PARALLELISM": "false",
    }

    def real_lm_eval(argv: list[str]) -> None:
        model = f"pretrained={gguf.parent},gguf_file={gguf.name}"
        args = [a.replace("pretrained=MODEL", model) for a in argv[1:]]
        with open(tmp_path / "lm_eval.log", "w", encoding="utf-8") as log:
            done = subprocess.run([str(python), "-m", "lm_eval", *args], env=env, stdout=log, stderr=log)
        tail = (tmp_path / "lm_eval.log").read_text(encoding="utf-8")[-3000:]
        assert done.returncode == 0, tail

    printed = run_readme(tmp_path, real_lm_eval, capsys)
    export = next(a for a in readme_commands() if a[:3] == ["sago", "export", "lm-eval"])
    datasets = option(export, "--datasets").split(",")
    imported = tmp_path / option(readme_commands()[-1], "--out")
    summary = json.loads(ResultsFolder(imported).summary.read_text(encoding="utf-8"))
    assert summary["not_measured"] == not_measured_map() and "not measured (lm-eval run)" in printed[-1]

    # sago's own run of the same rows (one torch thread, as the committed results), scored the same way
    variant_set = benchmark.load_variant_set("sago-v1", "v2")
    sago = tmp_path / "sago"
    benchmark.evaluate(SLUG, variant_set, sago, profile="smoke", datasets=datasets, threads=1, progress=False)
    write_deltas(sago, {d: variant_set.frame(d) for d in datasets}, model=summary["model"])
    sago_deltas = pd.read_parquet(ResultsFolder(sago).deltas)
    expected = summarize(
        response_only(sago_deltas),
        model=summary["model"],
        set_name="sago-v1",
        version="v2",
        axes=read_scorer_backbones(ResultsFolder(sago).deltas),
        not_measured=not_measured_map(),
    )

    ours, theirs = records(imported), records(sago)
    differing = differing_responses(ours, theirs)
    print(f"\n{len(differing)} of {len(ours)} responses differ between lm-eval and sago")
    with capsys.disabled():
        print(differing.to_string(max_colwidth=60) if len(differing) else "all responses equal")
    assert len(ours) == len(theirs[theirs["family"] != "rerun"])
    assert len(differing) <= MOST_DIFFER * len(ours)
    if differing.empty:
        assert jsonio.dumps(summary) == jsonio.dumps(expected)
        return
    # Some greedy paths split (batching, thread count): every item none of whose rows differ must agree.
    touched = set(zip(differing["dataset"], differing["item_id"], strict=True))
    keys = ["dataset", "item_id", "measure"]
    got = pd.DataFrame(summary["per_item"]).merge(pd.DataFrame(expected["per_item"]), on=keys)
    untouched = got[[(d, i) not in touched for d, i in zip(got["dataset"], got["item_id"], strict=True)]]
    assert len(untouched) > 0
    for column in ("s", "s_extended"):
        mine, sagos = (untouched[f"{column}_{side}"].astype(float) for side in ("x", "y"))
        assert np.allclose(mine, sagos, rtol=0, atol=1e-9, equal_nan=True), column
    assert set(untouched["measure"]) <= set(RESPONSE_MEASURES)
