"""Stand-in models for trying the harness without downloading weights (and for ``make gpu-check --dry-run``).

:func:`tiny_backend` runs every real code path in seconds with meaningless outputs; either it or
:class:`~benchmark.models.fake.FakeBackend` can be passed as ``model`` to :func:`benchmark.evaluate`.
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
