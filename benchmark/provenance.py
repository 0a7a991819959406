"""Provenance stamped into every result file: versions, hashes, hardware, git commit."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchmark.paths import REPO_ROOT
from benchmark.version import __version__

_LIBRARIES: tuple[str, ...] = ("torch", "transformers", "datasets", "huggingface-hub", "pandas", "scipy")
_LIBRARIES += ("numpy", "pyarrow", "safetensors", "sacrebleu", "bert-score", "accelerate", "gguf")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks so multi-GB weights do not need to fit in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of a byte string.

    >>> sha256_bytes(b"")[:12]
    'e3b0c44298fc'
    """
    return hashlib.sha256(data).hexdigest()


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries whose behaviour the numbers depend on."""
    versions: dict[str, str] = {"sago-bench": __version__, "python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checkout's HEAD commit, with ``+dirty`` when code or data have uncommitted changes."""
    try:
        head = _git(root, "rev-parse", "HEAD")
        # Results and the site are outputs, rewritten by the very run being stamped: only code and
        # data changes make the tree "dirty".
        outputs = (":(exclude)submissions/*/results/*", ":(exclude)leaderboard")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", *outputs)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


JsonScalar = str | int | float | None


@dataclass(frozen=True)
class Hardware:
    """CPU, core count, memory and accelerator of the machine a run used (run.json's ``hardware``)."""

    machine: str
    processor: str
    """``platform.processor()`` (the machine when the platform names none)."""
    cpu_count: int | None
    system: str
    memory_gib: float | None
    torch_threads: int | None
    """torch's intra-op threads (None: torch is not installed; then not written)."""
    accelerator: str | None
    """the first CUDA device's name (None: none)."""
    accelerator_count: int | None
    """CUDA devices (None: no CUDA; then not written)."""
    cpu_model: str = ""
    """('' where unknown; then not written)."""
    cpu_flags: tuple[str, ...] = ()
    """the instruction-set flags that change float kernels (avx2, avx512f, ...)."""
    torch_capability: str = ""
    """the vector level torch's kernels used in this process (e.g. AVX2 under the CPU setting)."""
    cpu_setting: tuple[tuple[str, str], ...] = ()
    """the harness's CPU-setting variables as they were in force (see :mod:`benchmark.cpu`)."""

    def to_json(self) -> dict[str, JsonScalar]:
        """The object run.json records: the keys above in order, without the two that are left out."""
        info: dict[str, JsonScalar] = {
            "machine": self.machine,
            "processor": self.processor,
            "cpu_count": self.cpu_count,
            "system": self.system,
            "memory_gib": self.memory_gib,
        }
        if self.torch_threads is not None:
            info["torch_threads"] = self.torch_threads
        info["accelerator"] = self.accelerator
        if self.accelerator_count is not None:
            info["accelerator_count"] = self.accelerator_count
        if self.cpu_model or self.torch_capability:
            info["cpu_model"] = self.cpu_model
            info["cpu_flags"] = " ".join(self.cpu_flags)
            info["torch_capability"] = self.torch_capability
            info["cpu_setting"] = " ".join(f"{k}={v}" for k, v in self.cpu_setting)
        return info


def _memory_gib() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages / 2**30, 1)


def _torch_devices() -> tuple[int | None, str | None, int | None]:
    """(torch threads, first CUDA device name, CUDA device count); None where torch or CUDA is absent."""
    try:
        import torch
    except ImportError:
        return None, None, None
    if not torch.cuda.is_available():
        return torch.get_num_threads(), None, None
    return torch.get_num_threads(), torch.cuda.get_device_name(0), torch.cuda.device_count()


def hardware() -> Hardware:
    from benchmark import cpu

    threads, accelerator, count = _torch_devices()
    model, flags = cpu.cpu_model()
    return Hardware(
        platform.machine(),
        platform.processor() or platform.machine(),
        os.cpu_count(),
        platform.system(),
        _memory_gib(),
        threads,
        accelerator,
        count,
        model,
        flags,
        cpu.torch_capability() if threads is not None else "",
        tuple(cpu.setting().items()),
    )
