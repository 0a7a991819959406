"""`sago submissions validate --base REF`: a pull request adds a model, and changes nothing else.

The tree validator judges what the checkout holds; this judges what a pull request *changes*, with git,
against the commit it is based on, over the whole checkout. A pull request from outside may add one new
submission: ``submissions/<new-slug>/submission.yaml`` and an optional ``README.md`` beside it. Everything
else is the maintainers' to write: results come only from their own evaluation, variant sets only from a
release, an existing model's file from its maintainers, and the code, the tests, the CI scripts, the
leaderboard and the site (which includes this validator) only through a maintainers' review. So every
other added, modified or deleted path is one :class:`Failure` line naming it, and so is any hidden file or
folder, link or nested repository a change would bring. CI runs this check with the *base* commit's code
(``.ci/gate``), so a pull request cannot loosen the rules it is judged by.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchmark.errors import SagoError
from benchmark.gitrepo import (
    SUBMODULE_MODE,
    SYMLINK_MODE,
    Change,
    changes_since,
    merge_base,
    paths_at,
    top_level,
)
from benchmark.paths import SLUG_RULE, check_slug
from benchmark.submissions.failures import Failure

YAML, README, RESULTS = "submission.yaml", "README.md", "results"
ONLY = f"a pull request adds one new submission's {YAML} (and {README}); drop this change"
MAINTAINERS = "results are written only by the maintainers' own evaluation; drop this change"
OUTSIDE = (
    f"a pull request adds one new submission's {YAML} and {README} under submissions/; everything else "
    "is changed by the maintainers (CODEOWNERS); drop this change"
)


@dataclass(frozen=True)
class Layout:
    """Where the two guarded folders are, relative to the checkout's top (``/``-separated)."""

    submissions: str
    """normally ``submissions``."""
    variants: str
    """normally ``variants``."""


def validate_changes(root: Path, variants_root: Path, ref: str) -> tuple[list[Failure], int]:
    """The failures of everything the working tree changes under ``root`` (``submissions/``) and
    ``variants_root`` against the merge base of ``ref`` and HEAD, and how many paths changed.

    Raises:
        SagoError: one line when git cannot answer (no checkout, unknown ``ref``, folders outside it).
    """
    top = top_level(root) if root.is_dir() else None
    if top is None:
        raise SagoError(f"--root {root} is not inside a git checkout; --base compares commits")
    layout = Layout(_relative(root, top, "--root"), _relative(variants_root, top, "--variants"))
    base = merge_base(top, ref)
    changes = changes_since(top, base, ())  # the whole checkout: code, tests and CI are guarded too
    return change_failures(changes, layout, paths_at(top, base, layout.submissions)), len(changes)


def _relative(folder: Path, top: Path, option: str) -> str:
    try:
        relative = folder.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        relative = "."
    if relative == ".":
        raise SagoError(
            f"{option} {folder} is not a folder inside the checkout {top}; "
            "--base guards folders of the checkout"
        )
    return relative


def change_failures(changes: Iterable[Change], layout: Layout, base_files: frozenset[str]) -> list[Failure]:
    """One failure per offending path of ``changes``; ``base_files`` are the paths the base commit holds
    under ``layout.submissions`` (to tell an existing submission from a new one)."""
    changes = list(changes)
    failures: dict[str, Failure] = {}
    accepted: dict[str, list[Change]] = {}  # slug -> its changes that pass the per-path rules
    for change in changes:
        failure = _path_failure(change, layout)
        if failure is not None:
            failures[change.path] = failure
        else:
            accepted.setdefault(PurePosixPath(change.path).parts[-2], []).append(change)
    own = sorted(slug for slug, found in accepted.items() if _yaml_added(slug, found, layout))
    for slug, found in accepted.items():
        for change in found:
            failure = _slug_failure(change, slug, found, layout, base_files)
            if failure is None and len(own) > 1:
                failure = Failure(
                    change.path,
                    f"the change adds {len(own)} submissions ({', '.join(own)})",
                    "open one pull request per submission",
                )
            if failure is not None:
                failures[change.path] = failure
    return [failures[path] for path in sorted(failures)]


def _within(path: str, folder: str) -> tuple[str, ...] | None:
    """The parts of ``path`` below ``folder``, or None when it is not below it."""
    parts, top = PurePosixPath(path).parts, PurePosixPath(folder).parts
    return parts[len(top) :] if parts[: len(top)] == top and len(parts) > len(top) else None


def _path_failure(change: Change, layout: Layout) -> Failure | None:
    """The rules a path breaks on its own (None: it may be a submission file of some slug)."""
    if _within(change.path, layout.variants) is not None:
        return Failure(
            change.path,
            f"{_verb(change)} a file of a frozen variant set",
            "variant sets change only in a maintainers' release; drop this change",
        )
    parts = _within(change.path, layout.submissions)
    if parts is None:  # the code, tests, CI, leaderboard, site, a case-variant `Submissions/`, ...
        return Failure(change.path, f"{_verb(change)} a file outside submissions/", OUTSIDE)
    if change.status != "D" and any(part.startswith(".") for part in parts):
        return Failure(change.path, "hidden file or folder under submissions/", ONLY)
    if len(parts) > 2 and parts[1] == RESULTS:
        return Failure(change.path, f"{_verb(change)} a result", MAINTAINERS)
    if len(parts) != 2 or parts[1] not in (YAML, README):
        return Failure(
            change.path, f"{_verb(change)} a file other than a submission's {YAML} or {README}", ONLY
        )
    try:
        check_slug(parts[0])
    except SagoError:
        return Failure(
            change.path,
            "folder name is not a valid slug",
            f"rename it {SLUG_RULE}",
        )
    if change.mode in (SYMLINK_MODE, SUBMODULE_MODE):
        kind = "symbolic link" if change.mode == SYMLINK_MODE else "nested repository"
        return Failure(change.path, f"is a {kind}", "commit a plain file")
    return None


def _yaml_added(slug: str, found: list[Change], layout: Layout) -> bool:
    """Whether the change adds ``slug``'s submission.yaml (it makes the slug the change's)."""
    path = f"{layout.submissions}/{slug}/{YAML}"
    return any(c.path == path and c.status == "A" for c in found)


def _slug_failure(
    change: Change, slug: str, found: list[Change], layout: Layout, base_files: frozenset[str]
) -> Failure | None:
    """The rules of one submission folder: a new slug's yaml is added, an existing one is never edited or
    removed; a README rides along only with a new yaml."""
    yaml_path = f"{layout.submissions}/{slug}/{YAML}"
    if yaml_path in base_files:
        return Failure(
            change.path,
            f"{_verb(change)} {'the' if change.path == yaml_path else 'a'} file of the existing submission "
            f"{slug!r}",
            "an existing model's files are changed or withdrawn by the maintainers: open an issue",
        )
    if _yaml_added(slug, found, layout):
        return None
    return Failure(
        change.path,
        f"{_verb(change)} the README of a submission the change does not add",
        f"add {README} together with the {YAML} of the submission you add",
    )


def _verb(change: Change) -> str:
    return {"A": "adds", "D": "removes"}.get(change.status, "changes")
