"""Stand-in models for trying the harness without downloading weights (and for ``make gpu-check --dry-run``).

- :func:`tiny_backend`: a random-init tiny Llama (``benchmark.models.tiny``) behind the real
  :class:`~benchmark.models.hf.HFBackend`: every real code path (chat template, engines, hidden states),
  in seconds on a CPU, meaningless outputs.
- :class:`~benchmark.models.fake.FakeBackend`: no model at all; outputs are a hash of the prompt.

Either can be passed as ``model`` to :func:`benchmark.evaluate`. The test suite's own fixtures (a toy
variant set, synthetic deltas) live under ``tests/helpers/``.
"""

from __future__ import annotations

from benchmark.models.engine import EngineSpec
from benchmark.models.fake import FakeBackend
from benchmark.models.hf import HFBackend, ModelSource

__all__ = ["FakeBackend", "tiny_backend"]


def tiny_backend(
    seed: int = 0,
    *,
    batch_size: int = 4,
    engine: str | EngineSpec = "single_prefill",
    chat_template: str = "auto",
) -> HFBackend:
    """The random-init tiny Llama of ``benchmark.models.tiny`` as a backend (real code paths, fast)."""
    from benchmark.models.tiny import tiny_llama, tiny_tokenizer

    source = ModelSource("tiny", f"tiny-llama-seed{seed}", None, None)
    return HFBackend(
        tiny_llama(seed),
        tiny_tokenizer(),
        source=source,
        chat_template=chat_template,
        engine=engine,
        batch_size=batch_size,
    )
