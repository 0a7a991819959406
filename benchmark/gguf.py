"""Load a packaged GGUF model with transformers: the one place that does (harness, rewriter, benchmarks).

transformers and torch are imported on the first load, not with this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.errors import SagoError
from benchmark.packaged import materialise
from benchmark.provenance import sha256_file

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class LoadedGGUF:
    """A packaged GGUF model, ready to run."""

    model: Any
    """the ``transformers`` causal LM, in eval mode."""
    tokenizer: Any
    """its tokenizer, read from the same file."""
    path: Path
    """the GGUF file in the cache."""
    sha256: str | None
    """the file's sha256 when the caller pinned one (then checked equal), else None."""


def load_gguf(
    artefact: str, *, dtype: torch.dtype, sha256: str | None = None, device_map: str | None = None
) -> LoadedGGUF:
    """Load the packaged GGUF ``artefact``, dequantised to ``dtype``; refused when its sha256 is not
    ``sha256`` (a submission's pin). ``device_map`` None: load on the CPU."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = materialise(artefact)
    if sha256 is not None and (actual := sha256_file(path)) != sha256:
        raise SagoError(
            f"{path.name} has sha256 {actual[:16]}…, the submission pins "
            f"{sha256[:16]}…; fix model.sha256 or delete the cached file"
        )
    folder, name = str(path.parent), path.name
    placement = {"device_map": device_map} if device_map else {}
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype, **placement)
    model.eval()  # type: ignore[no-untyped-call]
    return LoadedGGUF(model, tokenizer, path, sha256)
