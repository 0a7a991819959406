"""`sago submissions validate --base REF`: a pull request adds a model, never a result.

The tree validator judges what the checkout holds; this judges what a pull request *changes*, with git,
against the commit it is based on. A pull request may add one new submission (its ``submission.yaml`` and
an optional ``README.md``) or edit the ``submission.yaml`` (and README) of one that exists. Everything else
under ``submissions/`` and ``variants/`` is the maintainers' to write: results come only from their own
evaluation, variant sets only from a release. So every other added, modified or deleted path there is one
:class:`Failure` line, and so is any hidden file or folder, link or nested repository a change would bring.
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
from benchmark.paths import check_slug
from benchmark.submissions.failures import Failure

YAML, README, RESULTS = "submission.yaml", "README.md", "results"
ONLY = f"a pull request adds or edits one submission's {YAML} (and {README}); drop this change"
MAINTAINERS = "results are written only by the maintainers' own evaluation; drop this change"


@dataclass(frozen=True)
class Layout:
    """Where the two guarded folders are, relative to the checkout's top (``/``-separated)."""

    submissions: str
    """normally ``submissions``."""
    variants: str
    """normally ``variants``."""

    def pathspecs(self) -> tuple[str, ...]:
        """What to ask git about."""
        return (self.submissions, self.variants)


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
    changes = changes_since(top, base, layout.pathspecs())
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
    own = sorted(slug for slug, found in accepted.items() if _yaml_change(slug, found, layout) is not None)
    for slug, found in accepted.items():
        for change in found:
            failure = _slug_failure(change, slug, found, layout, base_files)
            if failure is None and len(own) > 1:
                failure = Failure(
                    change.path,
                    f"the change adds or edits {len(own)} submissions ({', '.join(own)})",
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
    if parts is None:  # not asked for; git was given both folders as pathspecs
        return None
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
            "rename it '<org>__<model>' (lower-case letters, digits, '.', '-', single '_')",
        )
    if change.mode in (SYMLINK_MODE, SUBMODULE_MODE):
        kind = "symbolic link" if change.mode == SYMLINK_MODE else "nested repository"
        return Failure(change.path, f"is a {kind}", "commit a plain file")
    return None


def _yaml_change(slug: str, found: list[Change], layout: Layout) -> Change | None:
    """The change that adds or edits ``slug``'s submission.yaml, if any (it makes the slug the change's)."""
    path = f"{layout.submissions}/{slug}/{YAML}"
    return next((c for c in found if c.path == path and c.status in ("A", "M")), None)


def _slug_failure(
    change: Change, slug: str, found: list[Change], layout: Layout, base_files: frozenset[str]
) -> Failure | None:
    """The rules of one submission folder: its yaml is added or edited, never removed; a README rides
    along only with that."""
    yaml_path = f"{layout.submissions}/{slug}/{YAML}"
    if change.path == yaml_path:
        if change.status == "D":
            return Failure(
                change.path, "removes a submission", "submissions are withdrawn by the maintainers"
            )
        return None
    if _yaml_change(slug, found, layout) is not None:
        return None
    return Failure(
        change.path,
        f"{_verb(change)} the README of a submission the change does not "
        + ("edit" if yaml_path in base_files else "add"),
        f"change {README} together with the {YAML} of the submission you add or edit",
    )


def _verb(change: Change) -> str:
    return {"A": "adds", "D": "removes"}.get(change.status, "changes")
