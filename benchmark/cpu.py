"""The harness's CPU setting: one instruction-set level for every float kernel, on any x86 CPU.

Float reductions take different paths on AVX2 and AVX-512 machines (torch's ATen kernels, MKL's BLAS and
oneDNN each pick the widest vector unit they find), so log-probs and hidden states of one run differ in
their last bits between CPUs, and a byte-for-byte reproduction made on another machine fails. Capping all
three at AVX2 makes a run's floats the same on every x86-64 CPU that has AVX2 (the committed results were
made on an AVX2-only CPU, so they are what this setting reproduces). The variables only act when they are
set before torch loads, so :func:`pin` runs when :mod:`benchmark` is imported; a value the user set
already is kept, and :func:`describe` records what was in force.
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
"""Environment variables of the harness's CPU setting, set unless the user set them."""

_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "fma")


def pin() -> bool:
    """Set :data:`CPU_SETTING` where the environment does not; False when torch was imported first
    (then the setting cannot act in this process and :func:`describe` says so)."""
    for name, value in CPU_SETTING.items():
        os.environ.setdefault(name, value)
    return "torch" not in sys.modules


def setting() -> dict[str, str]:
    """The values of the setting's variables in this process ('' where unset)."""
    return {name: os.environ.get(name, "") for name in CPU_SETTING}


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
