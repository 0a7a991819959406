"""Backends: rendering, batching invariance, loading rules (safetensors, sha256), engines, OOM back-off."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from benchmark import gguf
from benchmark.errors import SagoError
from benchmark.models import loading
from benchmark.models.engine import RawOutput
from benchmark.models.hf import HFBackend, ModelSource, resolve_engine
from benchmark.models.loading import choose_dtype, load_backend
from benchmark.models.protocol import VariantRequest
from benchmark.models.tiny import tiny_llama, tiny_tokenizer
from benchmark.submissions import Submission
from benchmark.testing import tiny_backend

PROMPTS = [
    "What is the capital of France?",
    "Who wrote Hamlet?",
    "Natalia sold clips to 48 of her friends in April. How many clips did she sell?",
    "Is it true that bats are blind? Please answer the question briefly.",
]


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> None:
    torch.set_num_threads(1)


def _submission(model: dict[str, str], **extra: str) -> Submission:
    return Submission.model_validate(
        {"name": "t", "model": model, "license": "MIT", "parameters": 1, "contact": "me", **extra}
    )


def test_chat_template_is_applied_with_one_user_turn_and_recorded() -> None:
    backend = tiny_backend()
    text = tiny_tokenizer().decode(backend.render("Who wrote Hamlet?"))
    assert text == "<|im_start|>user\nWho wrote Hamlet?<|im_end|>\n<|im_start|>assistant\n"
    assert backend.describe()["chat_template"] == "applied"
    raw = tiny_backend(chat_template="never")
    assert tiny_tokenizer().decode(raw.render("Who wrote Hamlet?")) == "Who wrote Hamlet?"
    assert raw.describe()["chat_template"] == "raw prompt" and raw.describe()["chat_template_sha256"] is None


def test_always_without_a_template_is_an_error() -> None:
    tok = tiny_tokenizer()  # cached and shared: build a template-less copy instead of editing it
    copy = type(tok)(tokenizer_object=tok.backend_tokenizer, eos_token="<|im_end|>", pad_token="<|pad|>")
    source = ModelSource("tiny", "t", None, None)
    with pytest.raises(SagoError, match="no chat template"):
        HFBackend(tiny_llama(), copy, source=source, chat_template="always")
    assert not HFBackend(tiny_llama(), copy, source=source, chat_template="auto").uses_chat_template


def test_backend_outputs_do_not_depend_on_batching() -> None:
    requests = [VariantRequest(f"k{i}", p, None) for i, p in enumerate(PROMPTS)]
    together = tiny_backend(batch_size=4).run(requests, max_new_tokens=10)
    alone = tiny_backend(batch_size=1).run(requests, max_new_tokens=10)
    for a, b in zip(together, alone, strict=True):
        assert a.key == b.key and a.response == b.response and a.response_tokens == 10
        np.testing.assert_allclose(a.hidden, b.hidden, atol=1e-5)
    scored = [VariantRequest(r.key, r.prompt, "The capital of France is Paris.") for r in requests]
    s4 = tiny_backend(batch_size=4).run(scored, max_new_tokens=0)
    s1 = tiny_backend(batch_size=1).run(scored, max_new_tokens=0)
    for a, b, request in zip(s4, s1, scored, strict=True):
        assert a.response == "" and a.baseline_tokens == b.baseline_tokens > 0
        assert a.logprob_sum == pytest.approx(b.logprob_sum, abs=1e-4)
        assert a.prompt_tokens == len(tiny_backend().render(request.prompt))


def test_a_batch_mixing_scored_and_unscored_requests_is_refused() -> None:
    with pytest.raises(ValueError, match="mixes"):
        tiny_backend().run([VariantRequest("a", "x", None), VariantRequest("b", "y", "z")], max_new_tokens=2)


def test_local_directory_loads_from_safetensors_and_refuses_other_weights(tmp_path: Path) -> None:
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(model_dir, safe_serialization=True)
    tiny_tokenizer().save_pretrained(model_dir)
    backend = load_backend(_submission({"kind": "local", "path": str(model_dir)}), device="cpu", threads=1)
    reference = tiny_backend()
    request = [VariantRequest("k", PROMPTS[0], None)]
    assert (
        backend.run(request, max_new_tokens=6)[0].response
        == reference.run(request, max_new_tokens=6)[0].response
    )
    assert backend.describe()["source"] == "local" and backend.describe()["dtype"] == "float32"
    for weights in model_dir.glob("*.safetensors"):
        weights.rename(weights.with_suffix(".bin"))
    with pytest.raises(SagoError, match="no \\*.safetensors"):
        load_backend(_submission({"kind": "local", "path": str(model_dir)}), device="cpu", threads=1)
    with pytest.raises(SagoError, match="not a directory"):
        load_backend(_submission({"kind": "local", "path": str(tmp_path / "nowhere")}), device="cpu")


def test_packaged_file_with_another_sha256_is_refused_before_loading(tmp_path: Path, monkeypatch) -> None:
    fake_gguf = tmp_path / "model.gguf"
    fake_gguf.write_bytes(b"not the pinned weights")
    monkeypatch.setattr(gguf, "materialise", lambda name: fake_gguf)
    for loader in (transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        monkeypatch.setattr(
            loader,
            "from_pretrained",
            lambda *a, **k: pytest.fail("the file was read before the sha256 check"),
        )
    spec = {"kind": "packaged", "artefact": "smollm2-135m-instruct-q4_1", "sha256": "0" * 64}
    with pytest.raises(SagoError, match="sha256"):
        load_backend(_submission(spec), device="cpu")


def test_hub_models_are_pinned_safetensors_only_and_never_run_remote_code(monkeypatch) -> None:
    seen: list[dict[str, object]] = []

    def refuse(name: str, **options: object) -> None:
        seen.append(options)
        raise OSError("org/model does not appear to have a file named model.safetensors")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no metadata request (check_hub): the loaders are stubbed
    monkeypatch.setattr(loading.AutoTokenizer, "from_pretrained", lambda *a, **k: tiny_tokenizer())
    monkeypatch.setattr(loading.AutoModelForCausalLM, "from_pretrained", refuse)
    spec = {"kind": "hub", "id": "org/model", "revision": "a" * 40}
    with pytest.raises(SagoError, match="safetensors"):
        load_backend(_submission(spec), device="cpu")
    assert seen == [
        {"revision": "a" * 40, "trust_remote_code": False, "use_safetensors": True, "dtype": torch.float32}
    ]


def _hub_failure(kind: str) -> Exception:
    import httpx2
    from huggingface_hub import errors

    def answer(status: int) -> httpx2.Response:
        return httpx2.Response(
            status, request=httpx2.Request("GET", "https://huggingface.co/api/models/org/m")
        )

    made: dict[str, Exception] = {
        "offline": errors.OfflineModeIsEnabled("cannot reach https://huggingface.co"),
        "connect": httpx2.ConnectError("[Errno -3] Temporary failure in name resolution"),
        "gated": errors.GatedRepoError("gated", response=answer(403)),
        "revision": errors.RevisionNotFoundError("no revision", response=answer(404)),
        "missing": errors.RepositoryNotFoundError("not found", response=answer(404)),
        "token": errors.HfHubHTTPError("Invalid credentials", response=answer(401)),
    }
    return made[kind]


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("offline", "cannot reach the Hub (OfflineModeIsEnabled"),
        ("connect", "cannot reach the Hub (ConnectError: [Errno -3]"),
        ("gated", "gated on the Hub; accept its terms at https://huggingface.co/org/m and set HF_TOKEN"),
        ("revision", f"the Hub has no commit {'b' * 40} in org/m; pin one of its commits"),
        ("missing", "no such model on the Hub, or a private one (then set HF_TOKEN"),
        ("token", "the Hub answered HTTP 401 (Invalid credentials); set HF_TOKEN to a valid token"),
    ],
)
def test_a_hub_failure_is_one_line_naming_its_cause_and_fix_before_any_download(
    kind: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without network a Hub model printed 51 s of retry lines, then blamed the weight format."""
    from huggingface_hub import HfApi

    asked: list[object] = []

    def fail(self: object, repo_id: str, **options: object) -> None:
        asked.append(options.get("timeout"))
        raise _hub_failure(kind)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(HfApi, "model_info", fail)
    for loader in (loading.AutoModelForCausalLM, loading.AutoTokenizer):
        monkeypatch.setattr(loader, "from_pretrained", lambda *a, **k: pytest.fail("download started"))
    spec = {"kind": "hub", "id": "org/m", "revision": "b" * 40}
    with pytest.raises(SagoError) as err:
        load_backend(_submission(spec), device="cpu")
    message = str(err.value)
    assert said in message and "\n" not in message and message.startswith(f"org/m@{'b' * 12}: ")
    assert asked == [loading.HUB_TIMEOUT_S]  # one request, with a timeout of seconds
    if kind in ("offline", "connect"):
        assert message.endswith("run with HF_HUB_OFFLINE=1")


def test_dtype_rules() -> None:
    assert choose_dtype("auto", torch.device("cpu")) == torch.float32
    assert choose_dtype("float16", torch.device("cpu")) == torch.float32
    assert choose_dtype("float16", torch.device("cuda")) == torch.float16


def test_engines_resolve_by_name_and_typos_are_suggested() -> None:
    name, engine = resolve_engine("two_pass", tiny_llama())
    assert name == "two_pass" and engine.run.__name__ == "run_batch_two_pass"
    with pytest.raises(SagoError, match="did you mean 'two_pass'"):
        resolve_engine("two-pass", tiny_llama())
    name, engine = resolve_engine("single_prefill", tiny_llama())
    assert name.startswith(("single_prefill", "two_pass (single_prefill declined"))


def test_a_run_offers_every_engine_by_name_and_an_unknown_one_is_refused() -> None:
    """``sago evaluate --engine`` knows every engine, the pooled one included (by name or given whole);
    an unknown name is refused in one line."""
    from benchmark.models.hf import ENGINES
    from benchmark.models.pooled import POOLED

    assert ENGINES.names() == ["draft", "pooled", "single_prefill", "static_graph", "two_pass"]
    assert resolve_engine("pooled", tiny_llama()) == ("pooled", POOLED)
    assert resolve_engine(POOLED, tiny_llama()) == ("pooled", POOLED)
    with pytest.raises(SagoError, match="unknown engine 'fast'"):
        resolve_engine("fast", tiny_llama())


def test_a_new_run_defaults_to_pooled_on_a_cpu_and_single_prefill_elsewhere() -> None:
    """The default engine follows the device the model runs on: pooled on a CPU (the fastest there),
    single_prefill on a GPU or any other device (pooled is unmeasured there); both are real engines."""
    from benchmark.models.hf import ENGINES, default_engine

    assert default_engine("cpu") == "pooled"
    for device in ("cuda", "cuda:0", "cuda:3", "mps"):
        assert default_engine(device) == "single_prefill", device
    assert {default_engine("cpu"), default_engine("cuda")} <= set(ENGINES.names())


def test_out_of_memory_halves_the_batch_and_loses_nothing() -> None:
    calls: list[int] = []

    def picky_engine(model, prompts, baselines, *, max_new_tokens, eos_ids, pad_id) -> list[RawOutput]:
        calls.append(len(prompts))
        if len(prompts) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return [
            RawOutput([5], True, math.nan, math.nan, math.nan, 0, np.zeros((3, 4), np.float32))
            for _ in prompts
        ]

    backend = tiny_backend(batch_size=8)
    backend.engine = picky_engine
    out = backend.run([VariantRequest(f"k{i}", PROMPTS[i % 4], None) for i in range(7)], max_new_tokens=1)
    assert [o.key for o in out] == [f"k{i}" for i in range(7)]
    assert calls == [7, 4, 2, 2, 2, 1] and backend.batch_size == 2
    assert backend.describe()["batch_sizes"] == [8, 4, 2]
    backend.batch_size = 1
    backend.engine = lambda *a, **k: (_ for _ in ()).throw(torch.OutOfMemoryError("oom"))
    with pytest.raises(SagoError, match="batch size 1"):
        backend.run([VariantRequest("k", "x", None)], max_new_tokens=1)


def test_cpu_batch_size_follows_model_size() -> None:
    """Wide batches for small models (decode reads every weight once per step), narrower ones when
    the parameters or the scoring pass's float32 logits [batch, 64, vocab] grow."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from benchmark.models.loading import cpu_batch_size
    from benchmark.models.tiny import tiny_llama

    assert cpu_batch_size(tiny_llama()) == 32
    with torch.device("meta"):
        big_vocab = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=262144,
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=1,
                num_attention_heads=4,
            )
        )
        many_params = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=32000,
                hidden_size=2048,
                intermediate_size=8192,
                num_hidden_layers=12,
                num_attention_heads=16,
            )
        )
    assert cpu_batch_size(big_vocab) == 16
    assert cpu_batch_size(many_params) == 8


def test_the_pooled_engine_reads_each_call_as_four_forwards_of_batch_size_rows(tmp_path: Path) -> None:
    """``batch_size`` is prompts per forward for every engine: the pooled engine's calls hold POOL such
    forwards (a backend made for 2 rows per forward calls it on 8 prompts), its default CPU batch is the
    other engines' per forward, and a harness run of the pooled engine gives the single-prefill engine's
    responses on the same micro-batches."""
    from benchmark.models.pooled import POOL, POOLED, micro_batches

    pooled = tiny_backend(batch_size=2, engine=POOLED)
    assert pooled.engine_name == "pooled" and pooled.forward_rows == 2 and pooled.batch_size == 2 * POOL == 8
    assert pooled.describe()["batch_sizes"] == [8]
    assert tiny_backend(batch_size=8).forward_rows == 8 == tiny_backend(batch_size=8).batch_size
    assert pooled.describe()["engine_settings"] == {
        "pool": POOL,
        "refill_fraction": 4,
        "greedy_head": "float16_screen",  # a tiny Llama's logits are a plain linear head
        "scoring_head": "vocab_chunks",
    }
    assert "engine_settings" not in tiny_backend().describe()  # other engines' run.json bytes unchanged
    # rerun control rows are read in micro-batches of the control's own size (half), never the baselines'
    assert pooled._engine_options(rerun_control=True) == {"micro_rows": 1, "decode_rows": 2}
    assert pooled._engine_options(rerun_control=False) == {"micro_rows": 2, "decode_rows": 2}
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(model_dir, safe_serialization=True)
    tiny_tokenizer().save_pretrained(model_dir)
    choice = _submission({"kind": "local", "path": str(model_dir)})
    default = load_backend(choice, device="cpu", threads=1, engine="single_prefill").batch_size
    assert load_backend(choice, device="cpu", threads=1, engine=POOLED).forward_rows == default
    unnamed = load_backend(choice, device="cpu", threads=1)  # no engine named: the CPU default
    assert (unnamed.engine_name, unnamed.forward_rows, unnamed.batch_size) == (
        "pooled",
        default,
        default * POOL,
    )
    assert load_backend(choice, device="cpu", threads=1, engine=POOLED, batch_size=8).batch_size == 8 * POOL
    prompts = PROMPTS + PROMPTS[::-1]  # eight: four micro-batches of two
    scored = [VariantRequest(f"k{i}", p, "The capital of France is Paris.") for i, p in enumerate(prompts)]
    together = pooled.run(scored, max_new_tokens=8)
    single = tiny_backend(batch_size=2)
    alone = {}
    for rows in micro_batches([len(pooled.render(p)) for p in prompts]):
        alone |= dict(zip(rows, single.run([scored[i] for i in rows], max_new_tokens=8), strict=True))
    for a, b in zip(together, [alone[i] for i in range(len(prompts))], strict=True):
        assert a.response == b.response
        # y_0 scores up to float reassociation (the pooled scoring pass runs in vocabulary slices)
        assert math.isclose(a.logprob_sum, b.logprob_sum, rel_tol=1e-5, abs_tol=1e-5)
        assert math.isclose(a.entropy_mean, b.entropy_mean, rel_tol=1e-5, abs_tol=1e-5)
        np.testing.assert_array_equal(a.hidden, b.hidden)


def test_prepare_builds_the_pooled_engines_float16_head_once_and_nothing_for_other_engines() -> None:
    """bench's warm-up calls prepare(), so the timed run does not pay the one-time float16 copy of the
    output layer; other engines keep nothing."""
    from benchmark.models.pooled import POOLED

    pooled = tiny_backend(batch_size=2, engine=POOLED)
    assert "_sago_screened_head" not in pooled.model.__dict__
    pooled.prepare()
    head = pooled.model.__dict__["_sago_screened_head"]
    assert head is not None
    pooled.prepare()
    assert pooled.model.__dict__["_sago_screened_head"] is head
    plain = tiny_backend(batch_size=8)
    plain.prepare()
    assert "_sago_screened_head" not in plain.model.__dict__
