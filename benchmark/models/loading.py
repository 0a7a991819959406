"""Turn a submission into a ready backend: locate and verify the weights, pick device, dtype, threads.

Safety rules, for weights named by strangers: Hub models are pinned to a 40-hex commit, loaded from
safetensors only and never with remote code; packaged GGUF files are located through
``benchmark.packaged`` and their sha256 is checked against the submission before anything reads them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from benchmark.errors import SagoError
from benchmark.gguf import load_gguf
from benchmark.models.engine import EngineSpec
from benchmark.models.hf import HFBackend, ModelSource, default_engine, resolve_engine
from benchmark.paths import REPO_ROOT
from benchmark.submissions import ApiModel, HubModel, LocalModel, PackagedModel

CPU_BATCH_SIZES = (32, 16, 8)
"""CPU batch sizes tried, largest first; :func:`cpu_batch_size` picks one from the model's size."""
_CPU_BATCH_PARAMS = 12e9
"""batch size x parameters allowed: decode reads every weight once per step, so small models gain
most from wide batches, while large ones already keep the cores busy with few rows."""
_CPU_BATCH_LOGIT_BYTES = 1.5 * 2**30
"""cap on the scoring pass's float32 logits [batch, 64 tokens, vocab] (memory, not speed)."""
GPU_MAX_BATCH_SIZE = 512
"""largest batch :func:`gpu_batch_size` picks (decode stops gaining long before memory runs out)."""
GPU_MEMORY_SHARE = 0.8
"""share of the free GPU memory a batch may plan for; the rest covers the prefill's transient activations
(MLP intermediates, attention scores) and the allocator's fragmentation."""
GPU_PROMPT_TOKENS = 512
"""longest rendered prompt a GPU batch plans for: the sago-v1 sets' longest prompt is 1,462 characters
(about 400 tokens with a chat template). A longer one runs out of memory and halves the batch."""
GPU_DEFAULT_NEW_TOKENS = 256
"""generated tokens (and so y_0's length) a GPU batch plans for when the caller names no profile."""


@dataclass(frozen=True)
class RowTokens:
    """Token counts of one row that set its memory: the prompt, the baseline y_0 and the response."""

    prompt: int
    baseline: int
    new: int


@dataclass(frozen=True)
class GpuBatch:
    """A GPU batch size chosen from free memory, with the numbers it came from (run.json records them)."""

    batch_size: int
    free_bytes: int
    row_bytes: int

    def record(self) -> dict[str, int]:
        return dataclasses.asdict(self)


class ModelChoice(Protocol):
    """What loading needs of a submission: the weights, the dtype and the chat-template setting."""

    @property
    def model(self) -> HubModel | PackagedModel | LocalModel | ApiModel: ...

    @property
    def dtype(self) -> str: ...

    @property
    def chat_template(self) -> str: ...


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_backend(
    submission: ModelChoice,
    *,
    device: str | None = None,
    batch_size: int | None = None,
    engine: str | EngineSpec | None = None,
    threads: int | None = None,
    device_map: str | None = None,
    max_new_tokens: int = GPU_DEFAULT_NEW_TOKENS,
) -> HFBackend:
    """Load the submission's model and tokenizer and wrap them in an :class:`HFBackend`.

    Args:
        submission: a validated submission (or any :class:`ModelChoice`).
        device: "cpu", "cuda", "cuda:1", ...; default: CUDA when available, else CPU.
        batch_size: prompts per forward; default on CPU :func:`cpu_batch_size`, on a GPU
            :func:`gpu_batch_size` from the free memory (shared by the forwards an engine keeps live:
            the pooled engine's 4), halved on out-of-memory (run.json records the
            plan as ``model.batch_size_from_memory``). An engine call holds that many times the engine's
            ``forwards_per_call`` (the pooled engine: 4 micro-batches of ``batch_size`` rows).
        engine: a name in ``benchmark.models.hf.ENGINES`` ("single_prefill", "pooled", "two_pass", ...), an
            engine given whole (``benchmark.models.hf.EngineSpec``), or None: the device's default
            (``benchmark.models.hf.default_engine``: pooled on a CPU, single_prefill elsewhere).
        threads: CPU threads for torch (default: all cores).
        device_map: e.g. "auto": shard a model too large for one GPU over all visible devices
            (transformers/accelerate big-model loading); ``device`` then names the input device only.
            Recorded in provenance as ``describe()["device_map"]`` (requested and resolved).
        max_new_tokens: the profile's token limit, which sets a GPU row's memory (y_0 and the response).

    Raises:
        SagoError: weights missing, not safetensors, or not matching the pinned sha256.
    """
    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = choose_dtype(submission.dtype, target)
    if target.type == "cpu":
        torch.set_num_threads(threads or os.cpu_count() or 1)
    model, tokenizer, source = _load(submission.model, dtype, device_map)
    model = (model if device_map else model.to(target)).eval()
    engine = default_engine(str(target)) if engine is None else engine
    # the pooled engine keeps the caches of all its micro-batches live at once: plan per forward for that
    caches = resolve_engine(engine, model)[1].forwards_per_call
    planned = _planned_batch(model, target, max_new_tokens, caches) if batch_size is None else None
    size = batch_size or (planned.batch_size if planned else cpu_batch_size(model))
    return HFBackend(
        model,
        tokenizer,
        source=source,
        chat_template=submission.chat_template,
        engine=engine,
        batch_size=size,
        device_map=device_map,
        planned_batch=planned.record() if planned else None,
    )


def _planned_batch(model: Any, target: torch.device, max_new_tokens: int, caches: int) -> GpuBatch | None:
    """On a GPU, the rows per forward planned from the memory left after loading the weights, with
    ``caches`` forwards' caches live at once; None on a CPU."""
    if target.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(target)
    tokens = RowTokens(GPU_PROMPT_TOKENS, max_new_tokens, max_new_tokens)
    return plan_gpu_batch(model.config, free, tokens, model.dtype, caches=caches)


def row_bytes(config: Any, tokens: RowTokens, dtype: torch.dtype) -> int:
    """Bytes one row of a single-prefill batch holds at its peak, from the model's config.

    The KV cache (2 x layers x kv_heads x head_dim x dtype bytes per token) over the prompt, a copy of
    the prompt's cache extended by y_0 (the scoring branch) and the response's tokens; y_0's scoring
    logits [len(y_0), vocab], counted in float32; and the prefill's hidden states, which
    ``output_hidden_states`` keeps for every layer and prompt position until the prefill returns.
    Every term is an upper bound: the scoring copy is freed before decoding grows the cache.
    """
    text = config.get_text_config(decoder=True)
    layers, hidden = int(text.num_hidden_layers), int(text.hidden_size)
    kv_heads = int(getattr(text, "num_key_value_heads", None) or text.num_attention_heads)
    head_dim = int(getattr(text, "head_dim", None) or hidden // text.num_attention_heads)
    width = torch.empty((), dtype=dtype).element_size()
    kv_per_token = 2 * layers * kv_heads * head_dim * width
    kv = kv_per_token * (2 * tokens.prompt + tokens.baseline + tokens.new)
    logits = int(text.vocab_size) * max(tokens.baseline, 1) * 4
    states = (layers + 1) * tokens.prompt * hidden * width
    return kv + logits + states


def gpu_batch_size(config: Any, free_bytes: int, tokens: RowTokens, dtype: torch.dtype) -> int:
    """The GPU batch size: the largest power of two whose rows (:func:`row_bytes`) fit in
    :data:`GPU_MEMORY_SHARE` of ``free_bytes`` (the memory left once the weights are loaded), between 1
    and :data:`GPU_MAX_BATCH_SIZE`. A power of two, so the rerun control's halved batch
    (``collect.rerun_batch_size``) and an out-of-memory halving stay whole.

    >>> from benchmark.models.tiny import tiny_llama
    >>> gpu_batch_size(tiny_llama().config, 2**30, RowTokens(512, 256, 256), torch.float32)
    512
    >>> gpu_batch_size(tiny_llama().config, 0, RowTokens(512, 256, 256), torch.float32)
    1
    """
    return plan_gpu_batch(config, free_bytes, tokens, dtype).batch_size


def plan_gpu_batch(
    config: Any, free_bytes: int, tokens: RowTokens, dtype: torch.dtype, *, caches: int = 1
) -> GpuBatch:
    """:func:`gpu_batch_size` with the numbers it came from; ``caches``: forwards whose rows are live at
    once (the pooled engine's micro-batches), so each forward gets that share of the memory.

    >>> from benchmark.models.tiny import tiny_llama
    >>> config, tokens = tiny_llama().config, RowTokens(512, 256, 256)
    >>> [plan_gpu_batch(config, 2**24, tokens, torch.float32, caches=n).batch_size for n in (1, 4)]
    [8, 2]
    """
    row = row_bytes(config, tokens, dtype)
    rows = int(free_bytes * GPU_MEMORY_SHARE) // (row * caches)
    size = 1
    while size * 2 <= min(rows, GPU_MAX_BATCH_SIZE):
        size *= 2
    return GpuBatch(size, int(free_bytes), row)


def cpu_batch_size(model: Any) -> int:
    """The CPU batch size for ``model``: the largest of :data:`CPU_BATCH_SIZES` within both budgets.

    SmolLM2-135M (vocabulary 49k) gets 32, Gemma 3 270M (vocabulary 262k) 16, Qwen2.5-0.5B 16,
    models of 1.5B parameters and more 8.

    >>> from benchmark.models.tiny import tiny_llama
    >>> cpu_batch_size(tiny_llama())
    32
    """
    params = sum(p.numel() for p in model.parameters())
    vocab = int(model.config.get_text_config(decoder=True).vocab_size)
    for size in CPU_BATCH_SIZES:
        if size * params <= _CPU_BATCH_PARAMS and size * 64 * vocab * 4 <= _CPU_BATCH_LOGIT_BYTES:
            return size
    return CPU_BATCH_SIZES[-1]


def choose_dtype(requested: str, device: torch.device) -> torch.dtype:
    """float32 on CPU (half precision there is slow and not what the method specifies); on a GPU the
    submission's dtype, with "auto" meaning bfloat16 where supported, else float16.

    >>> choose_dtype("bfloat16", torch.device("cpu"))
    torch.float32
    """
    if device.type == "cpu":
        return torch.float32
    if requested != "auto":
        return _DTYPES[requested]
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def _load(
    spec: HubModel | PackagedModel | LocalModel | ApiModel, dtype: torch.dtype, device_map: str | None = None
) -> tuple[Any, Any, ModelSource]:
    if isinstance(spec, ApiModel):  # sago evaluate runs these through benchmark.models.api
        raise SagoError("an api model has no weights to load here; it is evaluated through its endpoint")
    if isinstance(spec, PackagedModel):
        loaded = load_gguf(spec.artefact, dtype=dtype, sha256=spec.sha256, device_map=device_map)
        return loaded.model, loaded.tokenizer, ModelSource("packaged", spec.artefact, None, loaded.sha256)
    # big-model placement keywords only where a device map was asked for
    placement = {"device_map": device_map} if device_map else {}
    if isinstance(spec, HubModel):
        return _load_hub(spec, dtype, placement)
    return _load_local(spec, dtype, placement)


def _load_hub(spec: HubModel, dtype: torch.dtype, placement: dict[str, str]) -> tuple[Any, Any, ModelSource]:
    check_hub(spec)
    options = {"revision": spec.revision, "trust_remote_code": False}
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.id, **options)
        model = AutoModelForCausalLM.from_pretrained(
            spec.id, use_safetensors=True, dtype=dtype, **placement, **options
        )
    except (OSError, ValueError) as err:
        raise SagoError(
            f"cannot load {spec.id}@{spec.revision[:12]} from safetensors "
            f"({_first_line(err)}); the repo must hold *.safetensors weights at that "
            "commit"
        ) from None
    return model, tokenizer, ModelSource("hub", spec.id, spec.revision, None)


HUB_TIMEOUT_S = 10.0
"""one metadata request, before any download: an unreachable Hub fails in seconds, not after the
download layer's rounds of retries (51 s measured), and in a sentence naming the cause."""
_OFFLINE_VALUES = ("1", "on", "yes", "true")


def check_hub(spec: HubModel) -> None:
    """Ask the Hub once for the pinned commit and turn each way it can fail into one line with its fix:
    offline, a gated or private model (a token), an unknown revision, no such model. With
    ``HF_HUB_OFFLINE`` set nothing is asked: the weights must then be in the Hugging Face cache."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _OFFLINE_VALUES:
        return
    from huggingface_hub import HfApi, errors

    where = f"{spec.id}@{spec.revision[:12]}"
    try:
        HfApi().model_info(spec.id, revision=spec.revision, timeout=HUB_TIMEOUT_S)
    except errors.GatedRepoError:
        raise SagoError(
            f"{where}: the model is gated on the Hub; accept its terms at https://huggingface.co/{spec.id} "
            "and set HF_TOKEN to a token of that account"
        ) from None
    except errors.RevisionNotFoundError:
        raise SagoError(
            f"{where}: the Hub has no commit {spec.revision} in {spec.id}; pin one of its commits "
            "(model.revision, 40 hex characters)"
        ) from None
    except errors.RepositoryNotFoundError:
        raise SagoError(
            f"{where}: no such model on the Hub, or a private one (then set HF_TOKEN to a token that may "
            "read it); check model.id"
        ) from None
    except errors.HfHubHTTPError as err:
        status = err.response.status_code if err.response is not None else None
        fix = "set HF_TOKEN to a valid token" if status in (401, 403) else "try again later"
        raise SagoError(f"{where}: the Hub answered HTTP {status} ({_first_line(err)}); {fix}") from None
    except Exception as err:  # the network stack's own errors (connection, DNS, timeout) share no base
        raise SagoError(
            f"{where}: cannot reach the Hub ({type(err).__name__}: {_first_line(err)}); offline? With the "
            "weights already in the Hugging Face cache, run with HF_HUB_OFFLINE=1"
        ) from None


def _load_local(
    spec: LocalModel, dtype: torch.dtype, placement: dict[str, str]
) -> tuple[Any, Any, ModelSource]:
    folder = Path(spec.path).expanduser()
    folder = folder if folder.is_absolute() else REPO_ROOT / folder
    if not folder.is_dir():
        raise SagoError(f"model.path {spec.path!r} is not a directory; point it at a saved model folder")
    if not any(folder.glob("*.safetensors")):
        raise SagoError(f"{folder} holds no *.safetensors weights; save the model with safetensors")
    options = {"trust_remote_code": False, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(folder, **options)
    model = AutoModelForCausalLM.from_pretrained(
        folder, use_safetensors=True, dtype=dtype, **placement, **options
    )
    return model, tokenizer, ModelSource("local", str(folder), None, None)


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
