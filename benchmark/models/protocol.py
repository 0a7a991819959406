"""What a model backend is: a small protocol with declared capabilities."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class Capabilities:
    """What a backend can produce; the harness records only what is declared."""

    generate: bool
    """greedy generation of a response."""
    logprobs: bool
    """teacher-forced log-probabilities and entropies of a given continuation."""
    hidden_states: bool
    """per-layer hidden state at the last prompt token."""


@dataclass(frozen=True)
class VariantRequest:
    """One (item, variant) to run: a rendered prompt and, after the baseline phase, y_0."""

    key: str
    """f"{dataset}|{item_id}|{variant_id}", unique within a run."""
    prompt: str
    """the user message (the chat template is applied by the backend)."""
    baseline_response: str | None
    """y_0 to teacher-force under this prompt; None while the baselines themselves are generated."""


@dataclass(frozen=True)
class VariantOutput:
    """Everything one (item, variant) yields; ``hidden`` is float32 [n_layers + 1, hidden_size]."""

    key: str
    """the request's key."""
    response: str
    """greedy response, special tokens stripped."""
    response_tokens: int
    """generated token count."""
    finished: bool
    """stopped on end-of-sequence rather than the token limit."""
    logprob_sum: float
    """log p(y_0 | x_v) summed over y_0's tokens (NaN when no baseline was given)."""
    logprob_mean: float
    """per-token mean of the same."""
    entropy_mean: float
    """mean full-vocabulary entropy over y_0's positions."""
    baseline_tokens: int
    """tokens of y_0 scored."""
    prompt_tokens: int
    """tokens of the rendered prompt."""
    hidden: np.ndarray | None
    """[n_layers + 1, hidden_size] float32 at the last prompt token, or None if not declared."""
    token_logprobs: tuple[float, ...] | None = None
    """log p of each token of the response as it was sampled (an API endpoint's ``logprobs``); None from
    backends that teacher-force instead."""


class ModelBackend(Protocol):
    """A model the harness can run. Implementations: HF (hub id / local dir / packaged GGUF), fake."""

    name: str
    capabilities: Capabilities
    batch_size: int
    """prompts per engine call the backend was set up for; a run's default batch size."""

    def run(
        self, requests: Sequence[VariantRequest], *, max_new_tokens: int, rerun_control: bool = False
    ) -> list[VariantOutput]:
        """Run one batch; outputs are in request order and independent of batch composition.

        ``rerun_control``: the batch is the rerun control's (baseline prompts re-run to measure what
        batching alone changes); a backend that cuts batches into smaller forwards itself must cut this
        one at another size than the baselines' (:func:`benchmark.schema.rerun_batch_size`)."""
        ...

    def describe(self) -> dict[str, object]:
        """Provenance: source, revision or file sha256, dtype, device, chat template used."""
        ...
