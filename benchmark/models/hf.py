"""A Hugging Face causal LM as a :class:`~benchmark.models.protocol.ModelBackend`.

Text in, text and numbers out: the backend renders each prompt (chat template or raw), tokenizes the
baseline response, hands token ids to an engine (``engine.run_batch_two_pass`` or the single-prefill
engine) and decodes what comes back. On a GPU it finds its batch size by halving on out-of-memory.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from benchmark.errors import SagoError
from benchmark.models.chunked import sliced_screen
from benchmark.models.engine import Engine, RawOutput, run_batch_two_pass
from benchmark.models.pooled import POOL, REFILL_FRACTION, run_batch_pooled
from benchmark.models.prefill import run_batch_draft, run_batch_single_prefill, unsupported_reason
from benchmark.models.protocol import Capabilities, VariantOutput, VariantRequest
from benchmark.models.screen import plain_head, screened_head
from benchmark.registry import Registry
from benchmark.schema import rerun_batch_size

ENGINES: Registry[Engine] = Registry("engine")
"""The engines by name (``--engine``); both give the same outputs (tests/test_engine.py)."""
ENGINES.add("two_pass", run_batch_two_pass)
ENGINES.add("single_prefill", run_batch_single_prefill)
ENGINES.add("draft", run_batch_draft)
ENGINES.add("pooled", run_batch_pooled)
_DECLINES: dict[str, Callable[[object], str | None]] = {
    "single_prefill": unsupported_reason,
    "draft": unsupported_reason,
    "pooled": unsupported_reason,
}
"""engines that refuse some architectures: name -> why not (None: supported)."""

FULL_CAPABILITIES = Capabilities(generate=True, logprobs=True, hidden_states=True)


def engine_pool(name: str) -> int:
    """Micro-batches per call of the engine called ``name``: its forwards hold a batch's ``1 / pool``
    rows (:data:`POOL` for the pooled engine, else 1). Batch sizes that must mean the same forward width
    under two engines scale by it.

    >>> engine_pool("pooled"), engine_pool("single_prefill")
    (4, 1)
    """
    return POOL if name == "pooled" else 1


def resolve_engine(name: str, model: object) -> tuple[str, Engine]:
    """The engine called ``name`` and the name actually used.

    The single-prefill engine declines some architectures (``prefill.unsupported_reason``); those fall
    back to the two-pass reference engine, and the returned name says so.
    """
    engine = ENGINES.get(name)
    reason = _DECLINES.get(name)
    if reason is not None and (why := reason(model)) is not None:
        return f"two_pass ({name} declined: {why})", run_batch_two_pass
    return name, engine


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
        engine: engine name (see :data:`ENGINES`).
        batch_size: largest number of prompts per engine call; halved on GPU out-of-memory.
        device_map: the ``device_map`` the weights were loaded with (e.g. "auto"), for provenance.
    """

    capabilities = FULL_CAPABILITIES

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        source: ModelSource,
        chat_template: str = "auto",
        engine: str = "two_pass",
        batch_size: int = 8,
        device_map: str | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.source = source
        self.name = source.location
        self.uses_chat_template = _wants_template(tokenizer, chat_template)
        self.engine_name, self.engine = resolve_engine(engine, model)
        self.batch_size = batch_size
        self.batch_sizes_used: list[int] = [batch_size]
        self.eos_ids = _eos_ids(model, tokenizer)
        self.pad_id = _pad_id(tokenizer, self.eos_ids)
        self.device_map = device_map

    @property
    def forward_rows(self) -> int:
        """Most prompts one forward holds: the batch size, or a :data:`POOL`-th of it for the pooled
        engine (which reads each batch as that many micro-batches)."""
        return math.ceil(self.batch_size / engine_pool(self.engine_name))

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
        """Extra arguments of the engine: the pooled engine's micro-batch size and decode width (its
        forward width; micro-batches of rerun control rows at the control's own, different size)."""
        if self.engine is not run_batch_pooled:
            return {}
        micro = rerun_batch_size(self.forward_rows) if rerun_control else self.forward_rows
        return {"micro_rows": micro, "decode_rows": self.forward_rows}

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
        """Build what the engine keeps per model now, not inside the first batch: the pooled engine's
        float16 copy of the output layer (seconds for a large vocabulary), a one-time cost like loading."""
        if self.engine is run_batch_pooled:
            screened_head(self.model)
            sliced_screen(self.model)

    def _scoring_head(self) -> str:
        if sliced_screen(self.model) is not None:
            return "float16_screen"
        return "vocab_chunks" if plain_head(self.model) is not None else "model_logits"

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
        if self.engine is run_batch_pooled:
            # only the pooled engine records settings, so other engines' run.json bytes stay as they were
            described["engine_settings"] = {
                "pool": POOL,
                "refill_fraction": REFILL_FRACTION,
                # how decode steps pick greedy tokens (benchmark/models/screen.py) and how the y_0 scoring
                # pass reads the output layer (benchmark/models/chunked.py)
                "greedy_head": "float16_screen" if screened_head(self.model) is not None else "model_logits",
                "scoring_head": self._scoring_head(),
            }
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
