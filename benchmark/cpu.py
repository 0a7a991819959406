"""The harness's CPU setting: one instruction-set level for every float kernel, on any x86 CPU.

Float reductions take different paths on AVX2 and AVX-512 machines (ATen, MKL and oneDNN each pick the
widest vector unit they find), so a run's last bits differ between CPUs. Capping all three at AVX2 makes
them the same on every x86-64 CPU with AVX2 (the committed results were made on an AVX2-only CPU). The
variables act only when set before torch loads, so :func:`pin` runs when :mod:`benchmark` is imported.

Measured on an AVX-512 EPYC against the committed v1 smoke results: only ``ATEN_CPU_CAPABILITY`` changes
bits for SmolLM2 and Gemma; the other two change nothing for these models but may for other models or
torch builds, and cost nothing when unused.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

CPU_SETTING: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels (reductions, softmax, norms)
    "MKL_CBWR": "AVX2",  # MKL's conditional bitwise reproducibility: BLAS (the linear layers) on AVX2 paths
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN's kernels, which torch uses for some matmuls and convolutions
}

_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "fma")


def pin() -> None:
    """Set :data:`CPU_SETTING` where the environment does not (it acts only if torch is not yet imported)."""
    for name, value in CPU_SETTING.items():
        os.environ.setdefault(name, value)


def setting() -> dict[str, str]:
    """What run.json records as in force ('' where unset)."""
    return {name: os.environ.get(name, "") for name in CPU_SETTING}


def parse_recorded(text: str) -> dict[str, str]:
    """The setting a run.json recorded; other names and values that are not a plain word are ignored.

    >>> parse_recorded("ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 LD_PRELOAD=x ONEDNN_MAX_CPU_ISA=")
    {'ATEN_CPU_CAPABILITY': 'avx2', 'MKL_CBWR': 'AVX2', 'ONEDNN_MAX_CPU_ISA': ''}
    """
    recorded: dict[str, str] = {}
    for part in text.split():
        name, _, value = part.partition("=")
        if name in CPU_SETTING and re.fullmatch(r"[A-Za-z0-9_,]*", value):
            recorded[name] = value
    return recorded


def apply_recorded(text: str) -> str | None:
    """Put the recorded setting into the environment for a re-run (an empty value unsets); a line saying
    what changed, None when nothing differs. RuntimeError when torch is already imported."""
    recorded = parse_recorded(text)
    differs = {name: value for name, value in recorded.items() if os.environ.get(name, "") != value}
    if not differs:
        return None
    if "torch" in sys.modules:
        raise RuntimeError("torch is already imported: the recorded CPU setting cannot act in this process")
    for name, value in differs.items():
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
    return "re-running under the committed run's CPU setting: " + " ".join(
        f"{k}={v}" for k, v in differs.items()
    )


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, tuple[str, ...]]:
    """(model name, the relevant instruction-set flags present) from /proc/cpuinfo; ('', ()) elsewhere.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "cpuinfo"
    >>> _ = p.write_text("model name\\t: AMD EPYC\\nflags\\t\\t: fpu avx2 fma avx512f\\n")
    >>> cpu_model(p)
    ('AMD EPYC', ('avx2', 'avx512f', 'fma'))
    """
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "", ()
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    present = set(flags.group(1).split()) if flags else set()
    return (model.group(1).strip() if model else ""), tuple(f for f in _FLAGS if f in present)


def torch_capability() -> str:
    """The vector level torch's kernels use in this process ('' without torch)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return ""
    return str(torch.backends.cpu.get_cpu_capability())
