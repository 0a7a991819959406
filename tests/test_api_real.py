"""The API path against a real OpenAI-compatible server: llama.cpp's ``llama-server`` (built from the pinned
sources by ``make llama-server``) serving the packaged SmolLM2-135M-Instruct on 127.0.0.1.

A smoke evaluation of one dataset runs through ``sago evaluate`` as an ``api`` submission, and its greedy
replies are compared with the open-model run of the same bytes (the committed v2 evidence records, whose
64-token replies must start with the server's 32-token ones); the authors' judge is asked through the same
server; a server killed mid-run loses nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmark.axes.api_judge import ApiPolitenessJudge, RowContext
from benchmark.chat_api import ChatClient, ChatSettings
from benchmark.endpoints import LOCAL_ENDPOINT_ENV
from benchmark.harness.evaluate import EvaluateOptions, evaluate_model
from benchmark.paths import REPO_ROOT
from benchmark.results import ResultsFolder
from benchmark.submissions import Submission
from benchmark.variants.llamacpp import served, server_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not server_path().exists(), reason="llama-server not built (make llama-server)"),
]
ARTEFACT = "smollm2-135m-instruct-q4_1"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LOCAL = REPO_ROOT / "submissions/huggingfacetb__smollm2-135m-instruct-q4_1/results/sago-v1/v2/records"
DATASET = "trivia_qa"


def submission(url: str) -> Submission:
    return Submission.model_validate(
        {
            "name": "SmolLM2 served",
            "model": {
                "kind": "api",
                "base_url": url,
                "model": ARTEFACT,
                "snapshot": SHA256,
                "concurrency": 2,
            },
            "license": "Apache-2.0",
            "parameters": 134515008,
            "contact": "t",
        }
    )


def agreement(api: pd.DataFrame, local: pd.DataFrame) -> tuple[int, int, int]:
    """(rows whose served and local replies start with the same word, rows whose prompts took as many
    tokens, rows compared)."""
    joined = api.merge(local, on=["item_id", "variant_id"], suffixes=("_api", "_local"))
    joined = joined[joined["variant_id"] != "rerun/none/0"]
    words = zip(joined["response_api"], joined["response_local"], strict=True)
    first_word = sum(str(a).split()[:1] == str(b).split()[:1] for a, b in words)
    prompt_tokens = int((joined["prompt_tokens_api"] == joined["prompt_tokens_local"]).sum())
    return first_word, prompt_tokens, len(joined)


def test_a_served_packaged_model_runs_the_smoke_profile_like_the_local_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    # the bench profile: one item per dataset at the extreme levels (about 50 replies, a minute)
    options = EvaluateOptions(profile="bench", datasets=(DATASET,), progress=False)
    with served(ARTEFACT, threads=1, slots=2) as url:
        monkeypatch.setenv(LOCAL_ENDPOINT_ENV, url)  # what `sago serve` sets for its command
        evaluate_model(submission(url), options, out, label="served")
    folder = ResultsFolder(out)
    records = pd.read_parquet(folder.records(DATASET))
    own = pd.read_parquet(folder.own_confidence(DATASET))
    run = json.loads(folder.run.read_text())
    assert run["model"]["source"] == "api" and run["model"]["revision"] == SHA256
    assert run["not_measured"] and not list(out.glob("activations/*"))
    assert (own["own_tokens"] > 0).all() and own["own_prob_mean"].between(0, 1).all()
    local = pd.read_parquet(LOCAL / f"{DATASET}.parquet")
    first_word, prompt_tokens, compared = agreement(records, local)
    # The server applies the same chat template (the prompt token counts agree) and the greedy replies
    # start alike; llama.cpp multiplies the Q4_1 blocks as they are where the local backend dequantises
    # them to float32, so near-ties later in a reply can go the other way (measured on the smoke profile
    # of this dataset, 183 rows: first word 180, first three words 150, the whole 32-token reply 89).
    assert compared >= 40, compared
    assert prompt_tokens / compared >= 0.9 and first_word / compared >= 0.9, (prompt_tokens, first_word)
    # rerun control rows were asked again (the endpoint's noise floor): greedy llama.cpp repeats itself
    base = records[records["variant_id"] == "baseline/none/0"].set_index("item_id")["response"]
    rerun = records[records["variant_id"] == "rerun/none/0"].set_index("item_id")["response"]
    assert (base.loc[rerun.index] == rerun).mean() >= 0.75


def test_the_authors_judge_asks_the_served_model_and_caches(tmp_path: Path) -> None:
    with served(ARTEFACT, threads=1, slots=1) as url:
        judge = ApiPolitenessJudge(ChatClient(ChatSettings(url, ARTEFACT)), tmp_path / "judge.jsonl")
        context = RowContext(
            "What is the capital of France?", "Could you please tell me the capital of France?", 6.0
        )
        first = judge.verdict("Of course! Thank you for asking. Paris.", "Paris.", +1, context)
        assert judge.stats["asked"] == 1
        again = ApiPolitenessJudge(ChatClient(ChatSettings(url, ARTEFACT)), tmp_path / "judge.jsonl")
        assert again.verdict("Of course! Thank you for asking. Paris.", "Paris.", +1, context) == first
        assert again.stats == {"asked": 0, "cached": 1, "guarded": 0, "unparsed": 0}
        assert again.verdict("Paris!", "Paris.", +1, context) is False and again.stats["guarded"] == 1


SCRIPT = """
import sys
from pathlib import Path
from benchmark.harness.evaluate import EvaluateOptions, evaluate_model
from benchmark import chat_api
from benchmark.submissions import Submission
chat_api.MAX_BACKOFF_S = 0.05  # the dead server is retried at once: the test waits for no backoff
model = {"kind": "api", "base_url": sys.argv[1], "model": "m", "snapshot": "s", "concurrency": 1}
fields = {"name": "x", "license": "MIT", "parameters": 1, "contact": "t"}
sub = Submission.model_validate({**fields, "model": model})
options = EvaluateOptions(profile="smoke", datasets=("trivia_qa",), progress=False)
evaluate_model(sub, options, Path(sys.argv[2]), label="k")
"""


def test_a_server_killed_mid_run_loses_no_paid_reply(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cache = out / "checkpoint" / "api-responses.jsonl"
    with served(ARTEFACT, threads=1, slots=1) as url:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), LOCAL_ENDPOINT_ENV: url}
        run = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, url, str(out)], env=env, stderr=subprocess.PIPE, text=True
        )
        import time

        while not cache.exists() or len(cache.read_text().splitlines()) < 12:
            time.sleep(0.2)
        paid = len(cache.read_text().splitlines())
        # the server dies under the run (the context manager's stop), and with it every later request
        pids = subprocess.run(
            ["pgrep", "-f", "--", f"--port {url.rsplit(':', 1)[1]}"], capture_output=True, text=True
        )
        for pid in pids.stdout.split():
            os.kill(int(pid), signal.SIGKILL)
        _, err = run.communicate(timeout=600)
    assert run.returncode != 0
    last = err.strip().splitlines()[-1]
    assert "unreachable" in last or "refused" in last.lower(), last
    assert len(cache.read_text().splitlines()) >= paid  # every reply paid for is still there
    assert not (out / "run.json").exists()
