"""What git says about the checkout: which files are committed, and what a change adds against a base.

Two trust decisions rest on it: a file byte-equal to what ``HEAD`` commits was reviewed by the
maintainers, and a pull request is judged by the paths it changes against its base. Without git or a
repository, a yes/no reads as "nothing is committed" and a requested comparison is a one-line error.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmark.errors import SagoError

TIMEOUT_S = 60
SYMLINK_MODE, SUBMODULE_MODE = "120000", "160000"


def git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``root``; OSError when git is missing, SubprocessError on the time limit."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}  # read-only: never take the index lock
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, timeout=TIMEOUT_S, check=False, env=env
    )


def _ok(root: Path, *args: str) -> bytes | None:
    """stdout of a successful ``git args``; None on any failure (no git, no repository, non-zero status)."""
    try:
        done = git(root, *args)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def top_level(path: Path) -> Path | None:
    """The working tree that holds ``path`` (a folder), or None outside a git checkout."""
    out = _ok(path, "rev-parse", "--show-toplevel")
    return Path(os.fsdecode(out.strip())) if out else None


def committed_copy(path: Path, repo_path: str, root: Path) -> bool:
    """True when ``path`` (anywhere, e.g. a copy) holds exactly what ``HEAD`` commits at ``repo_path``."""
    if not path.is_file() or path.is_symlink():
        return False
    committed = _ok(root, "rev-parse", "--verify", "--quiet", f"HEAD:{repo_path}")
    # --path: the clean filters of repo_path apply, so the id is the one git would store for these bytes
    found = _ok(root, "hash-object", f"--path={repo_path}", "--", str(path.resolve()))
    return committed is not None and found is not None and committed.strip() == found.strip()


def committed_unchanged(path: Path, root: Path) -> bool:
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return committed_copy(path, relative.as_posix(), root)


@dataclass(frozen=True)
class Change:
    """One path a change adds, modifies or deletes (renames count as a deletion and an addition)."""

    status: str
    """``A`` added, ``M`` modified, ``D`` deleted, ``T`` type changed (file <-> link)."""
    path: str
    """relative to the checkout's top, ``/``-separated, undecodable bytes kept as surrogates."""
    mode: str
    """git mode after the change (``000000`` for a deletion)."""


def merge_base(root: Path, ref: str) -> str:
    """The commit a branch based on ``ref`` started from (``ref`` itself when HEAD contains it)."""
    if not ref or ref.startswith("-"):
        raise SagoError(f"--base {ref!r} is not a git revision; pass e.g. origin/main")
    if top_level(root) is None:
        raise SagoError(
            f"{root} is not inside a git checkout; --base compares commits, so clone the repository"
        )
    base = _ok(root, "merge-base", tip(root, ref), "HEAD")
    if base is None:
        raise SagoError(
            f"--base {ref[:80]!r} shares no history with HEAD; fetch the full history (git fetch --unshallow)"
        )
    return base.decode().strip()


def changes_since(root: Path, base: str, pathspecs: tuple[str, ...]) -> list[Change]:
    """Every path under ``pathspecs`` that differs between ``base`` and the working tree, untracked files
    git does not ignore included (what the next commit could carry), sorted."""
    top = top_level(root)
    if top is None:
        raise SagoError(f"{root} is not inside a git checkout; --base compares commits")
    specs = ("--", *(f":(top,literal){p}" for p in pathspecs))
    tracked = _ok(
        top, "diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=none", base, *specs
    )
    untracked = _ok(top, "ls-files", "-z", "--others", "--exclude-standard", *specs)
    if tracked is None or untracked is None:
        raise SagoError(f"git could not compare {top} with {base[:12]}; check that git works in the checkout")
    found = _parse_raw(tracked)
    for raw in untracked.split(b"\0"):
        if raw:
            path = os.fsdecode(raw)
            found.append(Change("A", path, _worktree_mode(top / path)))
    return sorted(found, key=lambda c: c.path)


def _parse_raw(out: bytes) -> list[Change]:
    """``git diff --raw -z``: ``:<old mode> <new mode> <old id> <new id> <status>\\0<path>\\0`` per path."""
    fields = out.split(b"\0")
    changes = []
    for head, raw in zip(fields[0::2], fields[1::2], strict=False):
        if not head.startswith(b":"):
            continue
        _, new_mode, _, _, status = head[1:].decode().split(" ")
        changes.append(Change(status[:1], os.fsdecode(raw), new_mode))
    return changes


def _worktree_mode(path: Path) -> str:
    if path.is_symlink():
        return SYMLINK_MODE
    if path.is_dir():  # an untracked nested repository: git lists its folder
        return SUBMODULE_MODE
    return "100755" if os.access(path, os.X_OK) else "100644"


def paths_at(root: Path, commit: str, folder: str) -> frozenset[str]:
    """Every file path ``commit`` holds under ``folder`` (relative to the checkout's top)."""
    out = _ok(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit, "--", folder)
    if out is None:
        raise SagoError(f"git could not list {folder} at {commit[:12]}; check that git works in the checkout")
    return frozenset(os.fsdecode(p) for p in out.split(b"\0") if p)


def tracked_under(path: Path) -> list[str]:
    """The files git tracks at or under ``path``, relative to the checkout's top ([] outside one). The
    path is resolved first (``new/../README.md`` and a link count as the file they reach) and the match
    ignores case (on a case-insensitive file system ``readme.md`` *is* ``README.md``)."""
    path = Path(os.path.realpath(path))
    anchor = path
    while not anchor.is_dir() and anchor != anchor.parent:
        anchor = anchor.parent
    top = top_level(anchor)
    if top is None:
        return []
    try:
        relative = path.relative_to(top.resolve())
    except ValueError:
        return []
    spec = f":(top,literal,icase){relative.as_posix()}" if relative.parts else ":(top)."
    out = _ok(top, "ls-files", "-z", "--", spec)
    return sorted(os.fsdecode(p) for p in out.split(b"\0") if p) if out else []


def refuse_tracked(path: Path, option: str, *, own: Callable[[str], bool], writes: str) -> None:
    """Refuse an output path that would overwrite a tracked file not ``own`` to the command
    (``sago analyze --out README.md`` must not replace the README)."""
    strangers = [p for p in tracked_under(path) if not own(p)]
    if strangers:
        more = f" (and {len(strangers) - 1} more)" if len(strangers) > 1 else ""
        raise SagoError(
            f"{option} {path}: would overwrite {strangers[0]}{more}, which git tracks and this command does "
            f"not write (it writes {writes}); pass another path"
        )


def tip(root: Path, ref: str) -> str:
    """The commit ``ref`` names now (a branch's head, not where some branch left it)."""
    commit = _ok(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit is None:
        raise SagoError(
            f"--base {ref[:80]!r} names no commit in this checkout; fetch it first (git fetch origin main)"
        )
    return commit.decode().strip()


def commits_since(root: Path, base: str) -> list[tuple[str, ...]]:
    """``(commit, *parents)`` of every commit HEAD holds and ``base`` does not, oldest first."""
    out = _ok(root, "rev-list", "--reverse", "--parents", f"{base}..HEAD")
    if out is None:
        raise SagoError(f"git could not list the commits since {base[:12]}; check that git works")
    return [tuple(line.split()) for line in out.decode().splitlines() if line]


def changes_between(root: Path, old: str, new: str) -> list[Change]:
    """Every path the commit ``new`` adds, modifies or deletes against the commit ``old``."""
    out = _ok(root, "diff-tree", "-r", "-z", "--raw", "--no-renames", old, new)
    if out is None:
        raise SagoError(f"git could not compare {old[:12]} with {new[:12]}; check that git works")
    return sorted(_parse_raw(out), key=lambda c: c.path)


def blob(root: Path, commit: str, path: str, limit: int) -> bytes | None:
    """The bytes ``commit`` holds at ``path``; None, unread, above ``limit`` (a hostile commit may hold a
    huge file)."""
    spec = f"{commit}:{path}"
    size = _ok(root, "cat-file", "-s", spec)
    if size is None:
        raise SagoError(f"git could not read {path} at {commit[:12]}; check that git works")
    if int(size) > limit:
        return None
    return _ok(root, "cat-file", "blob", spec) or b""
