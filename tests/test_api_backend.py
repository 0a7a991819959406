"""API models: the OpenAI-compatible client and backend against a scripted local server (the failure paths),
with the whole harness (collect, checkpoint, finalize) in between.

The same path against a real server (llama.cpp serving a packaged model) is tests/test_api_real.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from helpers.openai_stub import reply_text, serve
from helpers.toy import toy_variant_set

from benchmark.chat_api import ChatClient, ChatRequest, ChatSettings
from benchmark.errors import SagoError
from benchmark.harness.evaluate import EvaluateOptions, evaluate_model
from benchmark.models.api import ApiBackend
from benchmark.results import ResultsFolder
from benchmark.submissions import Submission

KEY = "sk-secret-123"


OPTIONS = EvaluateOptions(set_name="toy", version="v1", profile="smoke", progress=False)


def _run(url: str, out: Path, *, concurrency: int = 3) -> Path | None:
    # A submission never sends a key to a local address (benchmark.endpoints, tests/test_api_secrets.py);
    # these tests send one to the stub, so they pass the backend a maintainer would build by hand.
    settings = ChatSettings(url, "stub", "SAGO_TEST_KEY")
    backend = ApiBackend(settings, snapshot="stub-2026-12-03", concurrency=concurrency)
    return evaluate_model(
        None,
        OPTIONS,
        out,
        label="stub",
        backend=backend,
        variant_set=toy_variant_set(("alpha",), n_items=2),
    )


def test_an_api_run_writes_records_own_confidence_and_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAGO_TEST_KEY", KEY)
    with serve() as stub:
        run_path = _run(stub.url, tmp_path / "out")
    assert run_path is not None
    folder = ResultsFolder(tmp_path / "out")
    records = pd.read_parquet(folder.records("alpha"))
    own = pd.read_parquet(folder.own_confidence("alpha"))
    prompts = toy_variant_set(("alpha",), n_items=2).frames["alpha"]
    # every row's response is the server's reply to that row's prompt, sent with the key and greedy settings
    by_id = dict(zip(prompts["item_id"] + "|" + prompts["variant_id"], prompts["prompt"], strict=True))
    for row in records.itertuples():
        if row.variant_id != "rerun/none/0":
            assert row.response == " ".join(reply_text(by_id[f"{row.item_id}|{row.variant_id}"]).split()[:32])
    assert all(math.isnan(v) for v in records["logprob_mean"])  # no teacher forcing through an API
    assert (own["own_tokens"] == records["response_tokens"]).all()
    assert own["own_prob_mean"].between(0.5, 0.9).all()
    assert {b["temperature"] for b in stub.bodies} == {0} and {b["seed"] for b in stub.bodies} == {42}
    assert all(b["logprobs"] is True and b["max_tokens"] == 32 for b in stub.bodies)
    assert all(h["Authorization"] == f"Bearer {KEY}" for h in stub.headers)
    # one request per row: the rerun control rows are asked again (the endpoint's own noise floor)
    assert len(stub.bodies) == len(records)
    run = json.loads(folder.run.read_text())
    assert run["model"]["source"] == "api" and run["model"]["requests"]["replies"] == len(records)
    assert (
        run["not_measured"] and "activation" in " ".join(run["not_measured"]).lower() or run["not_measured"]
    )
    assert set(run["files"]) >= {"records/alpha.parquet", "own_confidence/alpha.parquet"}
    everything = "".join(p.read_text(errors="ignore") for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert KEY not in everything  # the key is never written


def test_a_killed_run_resumes_without_paying_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAGO_TEST_KEY", KEY)
    with serve() as stub:
        stub.faults = [None] * 7 + [401]  # the 8th request is refused: the run stops there
        with pytest.raises(SagoError) as err:
            _run(stub.url, tmp_path / "out", concurrency=1)
        assert "refused the key (HTTP 401" in str(err.value) and KEY not in str(err.value)
        assert "\n" not in str(err.value)
        cache = tmp_path / "out" / "checkpoint" / "api-responses.jsonl"
        paid = len(cache.read_text().splitlines())
        # the 7 before the refusal, and the one the worker had already sent: nothing more was asked
        assert paid >= 7 and len(stub.bodies) == paid + 1
        stub.bodies.clear()
        _run(stub.url, tmp_path / "out", concurrency=1)
    # every reply already paid for came from the cache: only the refused one and the rest were sent
    total = len(pd.read_parquet(ResultsFolder(tmp_path / "out").records("alpha")))
    assert len(stub.bodies) == total - paid


def test_a_refusal_among_concurrent_requests_is_the_error_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the failing worker cancels its neighbours at once; the run reports the refusal, not a cut row
    monkeypatch.setenv("SAGO_TEST_KEY", KEY)
    with serve() as stub:
        stub.faults = [None] * 4 + [401]
        with pytest.raises(SagoError, match=r"refused the key \(HTTP 401") as err:
            _run(stub.url, tmp_path / "out", concurrency=4)
    assert "cancelled" not in str(err.value) and KEY not in str(err.value)
    assert len(stub.bodies) <= 5 + 3  # at most the other workers' requests already in flight


def test_a_429_storm_is_retried_with_backoff_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    with serve() as stub:
        stub.faults = [429, 503, 429]
        client = ChatClient(ChatSettings(stub.url, "stub", timeout_s=5), sleep=waits.append)
        reply, tries = client.send(ChatRequest("a b", 4))
    assert reply.text == "b a" and tries == 4 and len(waits) == 3
    assert client.counts()["retries"] == 3 and client.counts()["requests"] == 4


def test_retries_run_out_as_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve() as stub:
        stub.faults = [429] * 10
        client = ChatClient(ChatSettings(stub.url, "stub", retries=2), sleep=lambda s: None)
        with pytest.raises(SagoError, match=r"HTTP 429.*after 3 tries"):
            client.complete(ChatRequest("x", 4))


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("junk", "not JSON"),
        (404, "no such model or route"),
        (401, "refused the key"),
    ],
)
def test_bad_answers_fail_at_once_in_one_line(fault: object, message: str) -> None:
    with serve() as stub:
        stub.faults = [fault]
        client = ChatClient(ChatSettings(stub.url, "stub"), sleep=lambda s: pytest.fail("no retry expected"))
        with pytest.raises(SagoError, match=message) as err:
            client.complete(ChatRequest("x", 4))
    assert "\n" not in str(err.value) and "sk-secret" not in str(err.value)


def test_a_server_that_hangs_times_out_and_is_retried() -> None:
    with serve() as stub:
        stub.faults = ["hang"]
        client = ChatClient(ChatSettings(stub.url, "stub", timeout_s=0.5), sleep=lambda s: None)
        reply, tries = client.send(ChatRequest("p q", 4))
    assert reply.text == "q p" and tries == 2


def test_wrong_url_and_missing_key_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SAGO_TEST_KEY", raising=False)
    with pytest.raises(SagoError, match="SAGO_TEST_KEY is not set"):
        _run("http://127.0.0.1:9", tmp_path / "a")
    client = ChatClient(ChatSettings("http://127.0.0.1:9", "m", retries=1), sleep=lambda s: None)
    with pytest.raises(SagoError, match="unreachable.*after 2 tries"):
        client.complete(ChatRequest("", 4))
    assert not (tmp_path / "a" / "run.json").exists()


def test_the_schema_refuses_a_key_in_the_yaml_and_odd_urls() -> None:
    base = {
        "kind": "api",
        "base_url": "https://api.openai.com",
        "model": "gpt-4o-mini",
        "snapshot": "gpt-4o-mini-2024-07-18",
    }
    ok = {"name": "x", "license": "MIT", "parameters": 1, "contact": "t"}
    Submission.model_validate({**ok, "model": base})
    for bad in (
        {**base, "api_key": "sk-x"},  # no place for a key
        {**base, "base_url": "file:///etc/passwd"},
        {**base, "base_url": "https://user:pw@host"},
        {**base, "key_env": "sk-live-key"},  # a key pasted where the variable's name goes
    ):
        with pytest.raises(ValueError):
            Submission.model_validate({**ok, "model": bad})


def test_the_api_judge_sends_the_authors_message_once_per_row(tmp_path: Path) -> None:
    from benchmark.axes.api_judge import MAX_TOKENS, ApiPolitenessJudge, RowContext

    with serve() as stub:
        judge = ApiPolitenessJudge(ChatClient(ChatSettings(stub.url, "judge")), tmp_path / "verdicts.jsonl")
        context = RowContext("Capital of France?", "Please, kindly, the capital of France?", 6.0, "prefix")
        judge.verdict("Of course! Thank you. Paris.", "Paris.", +1, context)
        judge.verdict("Of course! Thank you. Paris.", "Paris.", +1, context)  # cached
        judge.verdict("Paris!", "Paris.", +1, context)  # no courtesy cue: the guard answers NO, unasked
    assert len(stub.bodies) == 1 and stub.bodies[0]["max_tokens"] == MAX_TOKENS
    message = stub.bodies[0]["messages"][0]["content"]
    for part in ("=== STYLED PROMPT ===\nPlease, kindly", "- strength: 6", "- place: prefix", "MORE POLITE"):
        assert part in message
    assert judge.stats["asked"] == 1 and judge.stats["cached"] == 1 and judge.stats["guarded"] == 1
    assert len((tmp_path / "verdicts.jsonl").read_text().splitlines()) == 1


def test_the_judge_is_chosen_by_name_and_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmark.axes.scorers import JUDGES, POLITENESS_ENV, configured_politeness

    monkeypatch.setenv(POLITENESS_ENV, "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SagoError, match="OPENAI_API_KEY is not set"):
        configured_politeness()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    judge, label = configured_politeness()
    assert label.startswith("ApiPolitenessJudge(openai:gpt-4o-mini@https://api.openai.com, prompt ")
    monkeypatch.setenv(POLITENESS_ENV, "anthropic:claude")
    with pytest.raises(
        SagoError, match=r"'anthropic:claude': unknown politeness judge 'anthropic' \(known: "
    ) as err:
        configured_politeness()
    assert str(err.value).endswith(f"(known: {', '.join(JUDGES.names())})") and "openai" in JUDGES.names()
    monkeypatch.setenv(POLITENESS_ENV, "openai")
    with pytest.raises(SagoError, match=r"judge 'openai' is written openai:<model>"):
        configured_politeness()


def test_the_reported_api_judge_kappa_recomputes_from_its_verdicts() -> None:
    from benchmark.paths import REPO_ROOT
    from benchmark.tools.judge_calibration import cohen_kappa, kappa_interval

    report = json.loads((REPO_ROOT / "docs/bench/api-judge-held-out-qwen2.5-coder-1.5b.json").read_text())
    table, prompt, _, reference, ours = zip(*report["verdicts"], strict=True)
    agreement = cohen_kappa(list(reference), list(ours))
    assert report["rows"] == agreement.n == 377
    assert report["kappa"] == round(agreement.kappa, 3)
    assert report["tn_fp_fn_tp"] == [n for pair in agreement.confusion for n in pair]
    low, high = kappa_interval(
        list(reference), list(ours), [f"{t}|{p}" for t, p in zip(table, prompt, strict=True)]
    )
    assert report["kappa_95"] == [round(low, 3), round(high, 3)]


def test_the_paid_store_survives_a_torn_line_and_concurrent_writers(tmp_path: Path) -> None:
    """The one cache of paid answers (API replies and judge verdicts): 200 answers written from 8
    threads are all on disk, one valid line each; a line torn by a kill is skipped and asked for again."""
    from concurrent.futures import ThreadPoolExecutor

    from benchmark.chat_api import PaidStore

    path = tmp_path / "paid.jsonl"
    store = PaidStore(path)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: store.put(f"k{i}", {"yes": i % 2 == 0, "raw": "é" * (i % 7)}), range(200)))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200 and all(json.loads(line)["key"].startswith("k") for line in lines)
    with path.open("a", encoding="utf-8") as out:
        out.write('{"key": "k200", "yes": tr')  # killed mid-write
    again = PaidStore(path)
    assert len(again.entries()) == 200 and again.get("k200") is None
    assert again.get("k3") == {"key": "k3", "yes": False, "raw": "ééé"}
    again.put("k200", {"yes": True})  # asked again: starts a line of its own, after the torn one
    assert PaidStore(path).get("k200") == {"key": "k200", "yes": True}
    assert PaidStore(None).put("x", {"yes": True}) == {"key": "x", "yes": True}
