"""Which checkpoints a run may resume: the ones this machine started, or the ones main tracks.

A checkpoint is resumed into results that the maintainers publish, so a planted one (a pull request that
adds ``checkpoint/`` with a matching ``plan.json`` and fabricated parts) must never be picked up. Every
plan a run writes carries a random ``started_by`` token, which is also appended to a registry in this
machine's cache. A checkpoint is trusted when its token is in that registry (this machine started it), or
when its ``plan.json`` is committed in the checkout and unmodified (the maintainers committed a long run's
finished parts so a fresh clone can resume it: what is committed on main was reviewed).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from benchmark import gitrepo
from benchmark.paths import REPO_ROOT, cache_dir

REGISTRY = "started-checkpoints.txt"


def new_token() -> str:
    """A fresh random token for a plan this machine starts, recorded as started here."""
    token = secrets.token_hex(8)
    with open(cache_dir() / REGISTRY, "a", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token


def started_here(token: object) -> bool:
    """True when this machine's registry holds ``token``."""
    path = cache_dir() / REGISTRY
    if not isinstance(token, str) or not token or not path.is_file():
        return False
    return token in path.read_text(encoding="utf-8").split()


def trusted(plan: Path, token: object) -> bool:
    """May the checkpoint whose plan is ``plan`` (carrying ``token``) be resumed?"""
    return started_here(token) or gitrepo.committed_unchanged(plan, REPO_ROOT)
