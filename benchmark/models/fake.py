"""A deterministic fake model: every output is a pure function of the request, no torch involved.

Used by fast tests of collection, resume, sharding and the CLI. Responses echo words of the prompt,
so style-sensitive code (mirroring detectors, BLEU) sees plausible text; numbers come from a hash.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

from benchmark.models.protocol import Capabilities, VariantOutput, VariantRequest


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def _unit(seed: bytes) -> float:
    """A float in [0, 1) from the first 8 bytes of a digest."""
    return int.from_bytes(seed[:8], "big") / 2**64


class FakeBackend:
    """Outputs derived from a sha256 of the prompt (and of y_0 for the confidence numbers).

    Args:
        n_layers: hidden layers (the activations have ``n_layers + 1`` rows).
        hidden_size: width of each hidden state.
        batch_size: suggested batch size (the fake does not care).

    >>> fake = FakeBackend()
    >>> out = fake.run([VariantRequest("d|1|baseline/none/0", "What is two plus two?", None)],
    ...                max_new_tokens=8)[0]
    >>> out.response == fake.run([VariantRequest("k", "What is two plus two?", None)],
    ...                          max_new_tokens=8)[0].response
    True
    """

    capabilities = Capabilities(generate=True, logprobs=True, hidden_states=True)

    def __init__(self, *, n_layers: int = 2, hidden_size: int = 8, batch_size: int = 4) -> None:
        self.name = "fake"
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.batch_size = batch_size
        self.calls: list[int] = []
        """sizes of the batches it was given, for tests of batching and resume."""

    def run(
        self, requests: Sequence[VariantRequest], *, max_new_tokens: int, rerun_control: bool = False
    ) -> list[VariantOutput]:
        """One output per request, in order; batch composition cannot matter (nor ``rerun_control``)."""
        self.calls.append(len(requests))
        return [self._one(r, max_new_tokens) for r in requests]

    def _one(self, request: VariantRequest, max_new_tokens: int) -> VariantOutput:
        seed = _digest(request.prompt)
        words = request.prompt.split() or ["empty"]
        count = min(max_new_tokens, 1 + seed[0] % 12)
        response = " ".join(words[(seed[1] + i) % len(words)] for i in range(count))
        rng = np.random.default_rng(int.from_bytes(seed[:8], "big"))
        hidden = rng.standard_normal((self.n_layers + 1, self.hidden_size)).astype(np.float32)
        lp_sum, lp_mean, entropy, scored = self._confidence(request)
        return VariantOutput(
            key=request.key,
            response=response,
            response_tokens=count,
            finished=count < max_new_tokens,
            logprob_sum=lp_sum,
            logprob_mean=lp_mean,
            entropy_mean=entropy,
            baseline_tokens=scored,
            prompt_tokens=len(words),
            hidden=hidden,
        )

    @staticmethod
    def _confidence(request: VariantRequest) -> tuple[float, float, float, int]:
        if request.baseline_response is None:
            return math.nan, math.nan, math.nan, 0
        scored = len(request.baseline_response.split())
        if scored == 0:
            return 0.0, math.nan, math.nan, 0
        seed = _digest(request.prompt, request.baseline_response)
        mean = -0.1 - 3.0 * _unit(seed)
        return mean * scored, mean, 0.5 + 4.0 * _unit(seed[8:]), scored

    def describe(self) -> dict[str, object]:
        """Provenance in the same shape as the real backend's."""
        return {
            "source": "fake",
            "location": "fake",
            "revision": None,
            "file_sha256": None,
            "dtype": "float32",
            "device": "cpu",
            "engine": "fake",
            "batch_sizes": [self.batch_size],
            "chat_template": "raw prompt",
            "n_layers": self.n_layers,
            "hidden_size": self.hidden_size,
        }
