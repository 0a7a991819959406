"""`sago submissions validate --base REF`: a pull request adds a model, and changes nothing else.

A pull request from outside may add ``submissions/<new-slug>/submission.yaml`` and a ``README.md`` beside
it; everything else (results, variant sets, code, this validator) is the maintainers' to write. So every
other changed path is one :class:`Failure` line, and so is any hidden file, link, nested repository or
executable a change would bring, in the working tree and in each commit (a merge keeps them all). CI runs
this with the base head's code (``.ci/gate``), so a pull request cannot loosen the rules it is judged by.
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
    blob,
    changes_between,
    changes_since,
    commits_since,
    merge_base,
    paths_at,
    tip,
    top_level,
)
from benchmark.paths import SLUG_RULE, check_slug
from benchmark.submissions.failures import Failure
from benchmark.submissions.readme import FIX as README_FIX
from benchmark.submissions.readme import README_LIMIT, readme_problem
from benchmark.submissions.schema import SUBMISSION_YAML_LIMIT

YAML, README, RESULTS = "submission.yaml", "README.md", "results"
ONLY = f"a pull request adds one new submission's {YAML} (and {README}); drop this change"
MAINTAINERS = "results are written only by the maintainers' own evaluation; drop this change"
OUTSIDE = (
    f"a pull request adds one new submission's {YAML} and {README} under submissions/; everything else "
    "is changed by the maintainers (CODEOWNERS); drop this change"
)
EXECUTABLE_MODE = "100755"
MAX_COMMITS = 20
"""A pull request with more commits is asked to squash them (each is read, and a submission needs one)."""
HISTORY = "the pull request's history would keep it: drop or squash that commit (git rebase -i)"


@dataclass(frozen=True)
class Layout:
    """Where the two guarded folders are, relative to the checkout's top (``/``-separated): normally
    ``submissions`` and ``variants``."""

    submissions: str
    variants: str


def validate_changes(root: Path, variants_root: Path, ref: str) -> tuple[list[Failure], int]:
    """The failures of everything the working tree and each commit since ``ref`` change, and how many
    paths the working tree changes. HEAD must contain ``ref``'s current head: then the checkout is what
    the base becomes once merged, and a branch cut before a rule was added cannot slip past it."""
    top = top_level(root) if root.is_dir() else None
    if top is None:
        raise SagoError(f"--root {root} is not inside a git checkout; --base compares commits")
    layout = Layout(_relative(root, top, "--root"), _relative(variants_root, top, "--variants"))
    base, head = merge_base(top, ref), tip(top, ref)
    if base != head:
        raise SagoError(
            f"HEAD is based on {base[:12]}, not on the head of {ref[:80]} ({head[:12]}); rebase on it: "
            f"git fetch origin && git rebase {ref[:80]}"
        )
    base_files = paths_at(top, base, layout.submissions)
    changes = changes_since(top, base, ())  # the whole checkout: code, tests and CI are guarded too
    failures = change_failures(changes, layout, base_files)
    named = {failure.path for failure in failures}
    earlier = [f for f in history_failures(top, base, layout, base_files) if f.path not in named]
    return sorted([*failures, *earlier], key=lambda f: f.path), len(changes)


def history_failures(top: Path, base: str, layout: Layout, base_files: frozenset[str]) -> list[Failure]:
    """The failures of each commit since ``base`` (a merge keeps every commit, so a file one adds and a
    later one removes is still added): each must be plain, each path it touches must pass."""
    commits = commits_since(top, base)
    if len(commits) > MAX_COMMITS:
        fix = f"squash them into at most {MAX_COMMITS} (one is enough for a submission)"
        return [Failure(f"HEAD ({commits[-1][0][:12]})", f"the pull request has {len(commits)} commits", fix)]
    failures: dict[str, Failure] = {}
    slugs: dict[str, str] = {}  # slug -> the first path of it a commit touches
    for commit, *parents in commits:
        later = commit != commits[-1][0]  # a problem of HEAD itself is fixed in the file, not the history
        if len(parents) != 1:
            fix = f"rebase the pull request on its base instead of merging it in (git rebase {base[:12]})"
            failures[f"commit {commit[:12]}"] = Failure(f"commit {commit[:12]}", "is a merge commit", fix)
            continue
        for change in changes_between(top, parents[0], commit):
            failure = _commit_failure(top, commit, change, layout, base_files, later=later)
            if failure is not None:
                failures.setdefault(change.path, failure)
            else:
                slugs.setdefault(PurePosixPath(change.path).parts[-2], change.path)
    if len(slugs) > 1:
        problem = f"the commits touch {len(slugs)} submissions ({', '.join(sorted(slugs))})"
        for path in slugs.values():
            failures.setdefault(path, Failure(path, problem, HISTORY))
    return list(failures.values())


def _commit_failure(
    top: Path, commit: str, change: Change, layout: Layout, base_files: frozenset[str], *, later: bool
) -> Failure | None:
    """What one commit's change of one path breaks (its problem names the commit; ``later``: a later
    commit follows, so fixing the file is not enough)."""
    found = _path_failure(change, layout)
    if found is None:  # a submission file: of an existing submission, or bounded like the final tree's
        slug = PurePosixPath(change.path).parts[-2]
        found = _existing_failure(change, slug, layout, base_files)
    if found is None and change.status != "D":
        found = _blob_failure(top, commit, change.path)
    if found is None:
        return None
    fix = f"{found.fix}; {HISTORY}" if later else found.fix
    return Failure(found.path, f"commit {commit[:12]} {found.problem}", fix)


def _blob_failure(top: Path, commit: str, path: str) -> Failure | None:
    """The bounds of a submission file's bytes as one commit holds them."""
    if path.endswith(YAML):
        if blob(top, commit, path, SUBMISSION_YAML_LIMIT) is None:
            return Failure(path, f"holds a {YAML} larger than {SUBMISSION_YAML_LIMIT // 1024} KiB", ONLY)
        return None
    problem = readme_problem(blob(top, commit, path, README_LIMIT))
    return None if problem is None else Failure(path, f"{README} {problem}", README_FIX)


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
    """One failure per offending path; ``base_files`` tell an existing submission from a new one."""
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
                problem = f"the change adds {len(own)} submissions ({', '.join(own)})"
                failure = Failure(change.path, problem, "open one pull request per submission")
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
        fix = "variant sets change only in a maintainers' release; drop this change"
        return Failure(change.path, f"{_verb(change)} a file of a frozen variant set", fix)
    parts = _within(change.path, layout.submissions)
    if parts is None:  # the code, tests, CI, leaderboard, site, a case-variant `Submissions/`, ...
        return Failure(change.path, f"{_verb(change)} a file outside submissions/", OUTSIDE)
    if change.status != "D" and any(part.startswith(".") for part in parts):
        return Failure(change.path, "hidden file or folder under submissions/", ONLY)
    if len(parts) > 2 and parts[1] == RESULTS:
        return Failure(change.path, f"{_verb(change)} a result", MAINTAINERS)
    if len(parts) != 2 or parts[1] not in (YAML, README):
        other = f"{_verb(change)} a file other than a submission's {YAML} or {README}"
        return Failure(change.path, other, ONLY)
    try:
        check_slug(parts[0])
    except SagoError:
        return Failure(change.path, "folder name is not a valid slug", f"rename it {SLUG_RULE}")
    if change.mode in (SYMLINK_MODE, SUBMODULE_MODE):
        kind = "symbolic link" if change.mode == SYMLINK_MODE else "nested repository"
        return Failure(change.path, f"is a {kind}", "commit a plain file")
    if change.mode == EXECUTABLE_MODE:
        return Failure(change.path, "is executable (git mode 100755)", "commit it as a plain file: chmod -x")
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
    existing = _existing_failure(change, slug, layout, base_files)
    if existing is not None or _yaml_added(slug, found, layout):
        return existing
    problem = f"{_verb(change)} the README of a submission the change does not add"
    return Failure(change.path, problem, f"add {README} together with the {YAML} of the submission you add")


def _existing_failure(
    change: Change, slug: str, layout: Layout, base_files: frozenset[str]
) -> Failure | None:
    """An existing submission's files are never edited or removed by a pull request."""
    yaml_path = f"{layout.submissions}/{slug}/{YAML}"
    if yaml_path not in base_files:
        return None
    article = "the" if change.path == yaml_path else "a"
    problem = f"{_verb(change)} {article} file of the existing submission {slug!r}"
    fix = "an existing model's files are changed or withdrawn by the maintainers: open an issue"
    return Failure(change.path, problem, fix)


def _verb(change: Change) -> str:
    return {"A": "adds", "D": "removes"}.get(change.status, "changes")
