"""A Hugging Face causal LM as a :class:`~benchmark.models.protocol.ModelBackend`.

Text in, text and numbers out: the backend renders each prompt (chat template or raw), tokenizes the
baseline response, hands token ids to an engine (:data:`ENGINES`: ``engine.run_batch_two_pass``, the
single-prefill engines of ``prefill.py`` or the pooled engine of ``pooled.py``) and decodes what comes
back. On a GPU it finds its batch size by halving on out-of-memory.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from benchmark.errors import SagoError
from benchmark.models.engine import Engine, EngineSpec, RawOutput, run_batch_two_pass
from benchmark.models.pooled import POOLED
from benchmark.models.prefill import run_batch_draft, run_batch_single_prefill, unsupported_reason
from benchmark.models.protocol import Capabilities, VariantOutput, VariantRequest
from benchmark.models.static import declines as static_declines
from benchmark.models.static import run_batch_static
from benchmark.registry import Registry


def engine_help(engines: Registry[EngineSpec]) -> str:
    """``--engine``'s help: every engine of ``engines``, in registration order, with what it is, and
    which one a run gets when it names none."""
    said = [f"{spec.name} ({spec.about})" for spec in engines.entries()]
    return ", ".join(said[:-1]) + f" or {said[-1]}. Default: {DEFAULT_ENGINES}."


TWO_PASS = EngineSpec("two_pass", run_batch_two_pass, about="the reference")
ENGINES: Registry[EngineSpec] = Registry("engine")
"""The engines a run can use, by name (``--engine``); their outputs are the same (tests/test_engine.py,
tests/test_prefill.py, tests/test_screened_scoring.py: pooled's y_0 statistics within float
reassociation). Which one a new run uses by default: :func:`default_engine`."""
for _spec in (
    EngineSpec(
        "single_prefill",
        run_batch_single_prefill,
        unsupported_reason,
        about="the default off a CPU; every committed result was made with it",
    ),
    TWO_PASS,
    EngineSpec("draft", run_batch_draft, unsupported_reason, about="single_prefill with y_0 as a free draft"),
    EngineSpec(
        "static_graph",
        run_batch_static,
        static_declines,
        about="single_prefill decoding on a static cache, a captured CUDA graph on a GPU; not the default "
        "until a GPU run measures it faster",
    ),
    POOLED,
):
    ENGINES.add(_spec)

CPU_ENGINE = "pooled"
"""A new run's engine on a CPU: the fastest engine there in ``make bench-peer``'s measurements (README,
"Speed against lm-evaluation-harness")."""
OTHER_ENGINE = "single_prefill"
"""A new run's engine on any other device: the pooled engine and its float16 screens have never been
measured (for speed or for their error bound's kernels) on a GPU, so the GPU keeps the engine
``make gpu-check`` times."""


def default_engine(device: str) -> str:
    """The engine a new run uses when none is named, for a torch device name ("cpu", "cuda:0", ...).

    >>> default_engine("cpu"), default_engine("cuda:1")
    ('pooled', 'single_prefill')
    """
    return CPU_ENGINE if device.split(":")[0] == "cpu" else OTHER_ENGINE


DEFAULT_ENGINES = f"{CPU_ENGINE} on a CPU, {OTHER_ENGINE} on any other device"
"""What ``--engine``'s help says of the default (:func:`default_engine`)."""


def resolve_engine(engine: str | EngineSpec, model: object) -> tuple[str, EngineSpec]:
    """The engine ``engine`` names (an :data:`ENGINES` name, or an engine given whole) and the name
    actually used.

    The single-prefill engines decline some architectures (``prefill.unsupported_reason``); those fall
    back to the two-pass reference engine, and the returned name says so.
    """
    spec = ENGINES.get(engine) if isinstance(engine, str) else engine
    if spec.declines is not None and (why := spec.declines(model)) is not None:
        return f"two_pass ({spec.name} declined: {why})", TWO_PASS
    return spec.name, spec


@dataclass(frozen=True)
class ModelSource:
    """Where the weights came from, for run.json."""

    kind: str
    """"hub", "packaged", "local" or "tiny"."""
    location: str
    """Hub id, artefact name, directory or a description."""
    revision: str | None
    """Hub commit (40 hex) when there is one."""
    file_sha256: str | None
    """sha256 of the weights file when it was checked (packaged GGUF)."""


class HFBackend:
    """A loaded causal LM plus its tokenizer, run through one engine.

    Args:
        model: a transformers causal LM, already on its device and in eval mode.
        tokenizer: its tokenizer.
        source: provenance of the weights.
        chat_template: "auto" (use the tokenizer's template when it has one), "always" or "never".
        engine: engine name (see :data:`ENGINES`), or an engine given whole (:class:`EngineSpec`).
        batch_size: largest number of prompts per forward; halved on GPU out-of-memory. The backend's
            ``batch_size`` is prompts per engine call: the same, times the engine's
            :attr:`~EngineSpec.forwards_per_call` (``POOL`` for the pooled engine, else 1).
        device_map: the ``device_map`` the weights were loaded with (e.g. "auto"), for provenance.
        planned_batch: how a GPU batch size was chosen from free memory (``loading.GpuBatch.record``),
            recorded as ``describe()["batch_size_from_memory"]``; None when it was given or CPU-sized.
    """

    capabilities = Capabilities(generate=True, logprobs=True, hidden_states=True)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        source: ModelSource,
        chat_template: str = "auto",
        engine: str | EngineSpec = "two_pass",
        batch_size: int = 8,
        device_map: str | None = None,
        planned_batch: dict[str, int] | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.source = source
        self.name = source.location
        self.uses_chat_template = _wants_template(tokenizer, chat_template)
        self.engine_name, self.engine_spec = resolve_engine(engine, model)
        self.engine: Engine = self.engine_spec.run
        self.batch_size = batch_size * self.engine_spec.forwards_per_call
        self.batch_sizes_used: list[int] = [self.batch_size]
        self.eos_ids = _eos_ids(model, tokenizer)
        self.pad_id = _pad_id(tokenizer, self.eos_ids)
        self.device_map = device_map
        self.planned_batch = planned_batch

    @property
    def forward_rows(self) -> int:
        """Most prompts one forward holds: the batch size, divided by the engine's forwards per call."""
        return math.ceil(self.batch_size / self.engine_spec.forwards_per_call)

    def render(self, prompt: str) -> list[int]:
        """Token ids of one user turn (chat template with generation prompt) or of the raw prompt."""
        if self.uses_chat_template:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
            # The rendered template already carries any BOS token; adding specials would double it.
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return list(self.tokenizer(prompt, add_special_tokens=True)["input_ids"])

    def encode_response(self, response: str) -> list[int]:
        """Token ids of a response text as a continuation (no special tokens)."""
        return list(self.tokenizer(response, add_special_tokens=False)["input_ids"])

    def run(
        self, requests: Sequence[VariantRequest], *, max_new_tokens: int, rerun_control: bool = False
    ) -> list[VariantOutput]:
        """Run one batch; see :class:`~benchmark.models.protocol.ModelBackend`.

        Either every request carries a baseline response or none does.
        """
        given = {r.baseline_response is not None for r in requests}
        if len(given) > 1:
            raise ValueError("a batch mixes requests with and without a baseline response")
        prompts = [self.render(r.prompt) for r in requests]
        baselines = (
            [self.encode_response(r.baseline_response or "") for r in requests] if given == {True} else None
        )
        raw = self._run_chunked(prompts, baselines, max_new_tokens, self._engine_options(rerun_control))
        return [self._output(r, p, o) for r, p, o in zip(requests, prompts, raw, strict=True)]

    def _run_chunked(
        self,
        prompts: list[list[int]],
        baselines: list[list[int]] | None,
        max_new_tokens: int,
        options: dict[str, int],
    ) -> list[RawOutput]:
        """Call the engine on chunks of at most ``batch_size``; halve it on GPU out-of-memory."""
        out: list[RawOutput] = []
        start = 0
        while start < len(prompts):
            stop = start + self.batch_size
            try:
                out.extend(
                    self.engine(
                        self.model,
                        prompts[start:stop],
                        baselines[start:stop] if baselines is not None else None,
                        max_new_tokens=max_new_tokens,
                        eos_ids=self.eos_ids,
                        pad_id=self.pad_id,
                        **options,
                    )
                )
            except torch.OutOfMemoryError:
                self._back_off()
                continue
            start = stop
        return out

    def _engine_options(self, rerun_control: bool) -> dict[str, int]:
        """Extra arguments of the engine (:attr:`EngineSpec.options`; only the pooled engine has any)."""
        options = self.engine_spec.options
        return {} if options is None else options(self.forward_rows, rerun_control)

    def _back_off(self) -> None:
        if self.batch_size == 1:
            raise SagoError(
                "out of memory with batch size 1; use a smaller --profile token limit or a larger device"
            ) from None
        self.batch_size = max(1, self.batch_size // 2)
        self.batch_sizes_used.append(self.batch_size)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _output(self, request: VariantRequest, prompt: list[int], raw: RawOutput) -> VariantOutput:
        return VariantOutput(
            key=request.key,
            response=self.tokenizer.decode(raw.response_ids, skip_special_tokens=True),
            response_tokens=len(raw.response_ids),
            finished=raw.finished,
            logprob_sum=raw.logprob_sum,
            logprob_mean=raw.logprob_mean,
            entropy_mean=raw.entropy_mean,
            baseline_tokens=raw.scored_tokens,
            prompt_tokens=len(prompt),
            hidden=raw.hidden,
        )

    def prepare(self) -> None:
        """Build what the engine keeps per model now, not inside the first batch, a one-time cost like
        loading (:attr:`EngineSpec.prepare`; only the pooled engine builds anything)."""
        if self.engine_spec.prepare is not None:
            self.engine_spec.prepare(self.model)

    def describe(self) -> dict[str, object]:
        """Provenance of the model and how it was run."""
        template = getattr(self.tokenizer, "chat_template", None)
        described: dict[str, object] = {
            "source": self.source.kind,
            "location": self.source.location,
            "revision": self.source.revision,
            "file_sha256": self.source.file_sha256,
            "dtype": str(self.model.dtype).removeprefix("torch."),
            "device": str(self.model.device),
            "engine": self.engine_name,
            "batch_sizes": list(self.batch_sizes_used),
            "chat_template": "applied" if self.uses_chat_template else "raw prompt",
            "chat_template_sha256": (
                hashlib.sha256(template.encode()).hexdigest()
                if self.uses_chat_template and isinstance(template, str)
                else None
            ),
            "eos_ids": sorted(self.eos_ids),
            "pad_id": self.pad_id,
            "n_layers": int(self.model.config.num_hidden_layers),
            "hidden_size": int(self.model.config.hidden_size),
            "torch_threads": torch.get_num_threads(),
            "device_map": _placement(self.model, self.device_map),
        }
        if self.planned_batch is not None:
            # only a batch planned from GPU memory is recorded, so CPU runs' run.json bytes stay as they were
            described["batch_size_from_memory"] = dict(self.planned_batch)
        if self.engine_spec.settings is not None:
            # only an engine with settings records them, so other engines' run.json bytes stay as they were
            described["engine_settings"] = self.engine_spec.settings(self.model)
        return described


def _placement(model: Any, requested: str | None) -> dict[str, object] | None:
    """Requested and resolved module placement when the weights were loaded with a device map."""
    if requested is None:
        return None
    # accelerate sets hf_device_map only when it really spreads modules over several devices.
    resolved = getattr(model, "hf_device_map", None) or {"": str(model.device)}
    return {"requested": requested, "resolved": {str(k): str(v) for k, v in resolved.items()}}


def _wants_template(tokenizer: Any, setting: str) -> bool:
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if setting == "always" and not has_template:
        raise SagoError(
            "chat_template: always, but the tokenizer has no chat template; "
            "set chat_template: auto or never in submission.yaml"
        )
    return has_template and setting != "never"


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """End-of-sequence ids from the tokenizer and the model's generation config (chat models often
    end a turn with a token other than the tokenizer's eos)."""
    ids: set[int] = set()
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (tokenizer.eos_token_id, config_eos):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list):
            ids.update(int(v) for v in value)
    if not ids:
        raise SagoError("the model declares no end-of-sequence token; it cannot be evaluated")
    return frozenset(ids)


def _pad_id(tokenizer: Any, eos_ids: frozenset[int]) -> int:
    # Padding is masked out, so any id works; eos is the usual stand-in when no pad token exists.
    pad = tokenizer.pad_token_id
    return int(pad) if pad is not None else min(eos_ids)
