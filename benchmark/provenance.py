"""Provenance stamped into every result file: versions, hashes, hardware, git commit."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from benchmark.paths import REPO_ROOT
from benchmark.version import __version__

_LIBRARIES = (
    "torch",
    "transformers",
    "datasets",
    "huggingface-hub",
    "pandas",
    "scipy",
    "numpy",
    "pyarrow",
    "safetensors",
    "sacrebleu",
    "bert-score",
    "accelerate",
    "gguf",
)


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
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        # Results and the site are outputs, rewritten by the very run being stamped: only code and
        # data changes make the tree "dirty".
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)submissions/*/results/*",
                ":(exclude)leaderboard",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def hardware() -> dict[str, Any]:
    """CPU, core count, memory and accelerator of this machine."""
    info: dict[str, Any] = {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "system": platform.system(),
    }
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        info["memory_gib"] = None
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["accelerator"] = torch.cuda.get_device_name(0)
            info["accelerator_count"] = torch.cuda.device_count()
        else:
            info["accelerator"] = None
    except ImportError:
        info["accelerator"] = None
    return info
