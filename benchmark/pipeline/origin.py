"""Where a derived file came from: `sago analyze` reads ``deltas.parquet`` or ``summary.json`` as they are
only when it can vouch for them, and recomputes them otherwise.

A deltas file records the fingerprint of its inputs, but the file itself says so: anyone can write a
deltas table with the right fingerprint and made-up numbers (and a summary is plain JSON). So what is read
back must have a known origin, one of two:

- **this machine's analyze wrote it**: every file :func:`remember` is given goes into a registry in this
  machine's cache (``analyze-wrote.txt``: the file's sha256 and the sha256 of what it was made from);
- **the checkout commits it**: the bytes equal what ``HEAD`` of this code's checkout holds for the same
  submission, set and version (``submissions/<slug>/results/<set>/<version>/<file>``). What main holds was
  made by the maintainers, and a pull request may not change it (``sago submissions validate --base``).

A summary is a function of its deltas, so it is vouched for only together with the deltas it came from:
the registry pairs them, and a committed summary counts only beside its committed deltas.
"""

from __future__ import annotations

from pathlib import Path

from benchmark import gitrepo
from benchmark.paths import REPO_ROOT, SUBMISSIONS_DIR, cache_dir
from benchmark.provenance import sha256_file
from benchmark.results import naming

REGISTRY = "analyze-wrote.txt"
NOTHING = "-"
"""the registry's second field for a file made from nothing analyze checks (deltas: their inputs are
fingerprinted inside the file)."""


def registry() -> Path:
    """This machine's record of what its analyze wrote."""
    return cache_dir() / REGISTRY


def _entry(path: Path, made_from: Path | None) -> str:
    return f"{sha256_file(path)} {sha256_file(made_from) if made_from is not None else NOTHING}"


def remember(path: Path, made_from: Path | None = None) -> None:
    """Record that this machine's analyze wrote ``path`` (from ``made_from``), as the bytes are now."""
    try:
        with open(registry(), "a", encoding="utf-8") as handle:
            handle.write(_entry(path, made_from) + "\n")
    except OSError as err:  # a full disk: name the registry, not "a write"
        raise naming(err, registry()) from err


def written_here(path: Path, made_from: Path | None = None) -> bool:
    """True when the registry holds ``path``'s bytes (made from ``made_from``'s bytes)."""
    found = registry()
    if not _plain(path) or (made_from is not None and not _plain(made_from)) or not found.is_file():
        return False
    wanted = _entry(path, made_from)
    with open(found, encoding="utf-8") as handle:
        return any(line.strip() == wanted for line in handle)


def committed(path: Path) -> bool:
    """True when ``path``, a file ``<slug>/results/<set>/<version>/<name>`` of some submissions folder
    (the checkout's or a copy), holds the bytes this checkout's ``HEAD`` commits at
    ``submissions/<slug>/results/<set>/<version>/<name>``."""
    parts = path.resolve().parts
    if not _plain(path) or len(parts) < 6 or parts[-4] != "results":
        return False
    where = (SUBMISSIONS_DIR.relative_to(REPO_ROOT) / Path(*parts[-5:])).as_posix()
    return gitrepo.committed_copy(path, where, REPO_ROOT)


def vouched_for(path: Path, made_from: Path | None = None) -> bool:
    """May analyze read ``path`` as it is? (see the module docstring)"""
    if written_here(path, made_from):
        return True
    return committed(path) and (made_from is None or committed(made_from))


def _plain(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()
