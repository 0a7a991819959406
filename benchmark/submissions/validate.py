"""`sago submissions validate`: check every submission folder and its results before they are merged.

The checks a reviewer would otherwise do by eye on a pull request, each problem one :class:`Failure`
line ``path: problem — fix``; the walk never stops at the first one.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmark.endpoints import is_local_form
from benchmark.errors import FileProblem, SagoError
from benchmark.packaged import ARTEFACTS
from benchmark.paths import SLUG_RULE, VARIANTS_DIR, check_slug, is_name
from benchmark.submissions.failures import Failure
from benchmark.submissions.lookalike import hidden_character, skeleton
from benchmark.submissions.messages import name_of
from benchmark.submissions.readme import FIX as README_FIX
from benchmark.submissions.readme import README_LIMIT, readme_problem
from benchmark.submissions.schema import (
    SUBMISSION_YAML_LIMIT,
    ApiModel,
    HubModel,
    LocalModel,
    PackagedModel,
    Submission,
    SubmissionInvalid,
    load_submission,
)
from benchmark.submissions.validate_results import (
    KnownSet,
    check_result_folder,
    in_progress,
    known_variant_sets,
)

# Files allowed at the top of submissions/ and inside one submission folder.
ROOT_FILES = frozenset({"README.md", ".gitkeep"})
SUBMISSION_FILES = frozenset({"submission.yaml", "README.md"})


@dataclass(frozen=True)
class Report:
    """Everything the validator found in one tree."""

    failures: tuple[Failure, ...]
    submissions: int
    result_folders: int
    changed: int | None = None
    """paths changed against ``--base`` (None: no comparison was asked for)."""
    in_progress: int = 0
    """result folders holding only a committed checkpoint (a run still going: no run.json yet)."""

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        verdict = "ok" if self.ok else f"{len(self.failures)} problem(s)"
        compared = "" if self.changed is None else f", {self.changed} changed path(s) against the base"
        going = f" (+{self.in_progress} in progress: checkpoint only)" if self.in_progress else ""
        checked = f"{self.submissions} submission(s), {self.result_folders} result folder(s) checked"
        return f"{verdict}: {checked}{going}{compared}"


def validate_tree(root: Path, variants_root: Path = VARIANTS_DIR) -> Report:
    """Validate every folder under ``root`` (normally ``submissions/``) against ``variants_root``."""
    if not root.is_dir():
        raise SagoError(f"{root} is not a folder; pass --root pointing at the submissions folder")
    if not variants_root.is_dir():  # else every result would be blamed for a set that is merely elsewhere
        raise SagoError(
            f"--variants {variants_root} is not a folder; pass the folder of frozen variant sets (variants/)"
        )
    label = Path(root.name)
    known = known_variant_sets(variants_root)
    failures: list[Failure] = []
    seen: dict[str, str] = {}  # weights identity, name or slug skeleton -> slug that claimed it first
    submissions = results = in_progress = 0
    for entry in sorted(root.iterdir()):
        rel = label / entry.name
        if entry.is_symlink():
            failures.append(Failure(str(rel), "is a symbolic link", "commit plain files and folders only"))
        elif entry.is_file():
            if entry.name not in ROOT_FILES:
                fix = "move it into a submission folder or delete it"
                failures.append(Failure(str(rel), "stray file at the top of submissions/", fix))
        elif entry.name.startswith("."):
            fix = "delete it: submissions/ holds only submission folders"
            failures.append(Failure(str(rel), "hidden folder under submissions/", fix))
        else:
            submissions += 1
            found, folders, going = _check_submission(entry, rel, known, seen)
            failures.extend(found)
            results += folders
            in_progress += going
    return Report(tuple(failures), submissions, results, in_progress=in_progress)


def _check_submission(
    folder: Path, rel: Path, known: dict[tuple[str, str], KnownSet], seen: dict[str, str]
) -> tuple[list[Failure], int, int]:
    """All checks of one submission folder: the failures, complete result folders, checkpoint-only ones."""
    try:
        slug = check_slug(folder.name)
    except SagoError:
        return [Failure(str(rel), "folder name is not a valid slug", f"rename it {SLUG_RULE}")], 0, 0
    failures = [*_links_and_strays(folder, rel), *_readme_failures(folder / "README.md", rel / "README.md")]
    yaml_path = folder / "submission.yaml"
    has_results = (folder / "results").exists()
    if not yaml_path.is_file():
        problem = "results for a model that is not submitted" if has_results else "no submission.yaml"
        fix = "add submission.yaml as described in docs/SUBMITTING.md"
        failures.append(Failure(str(rel / "submission.yaml"), problem, fix))
        return failures, 0, 0
    found, submission = _check_submission_yaml(folder.parent, slug, rel, seen)
    failures.extend(found)
    folders = going = 0
    for version_dir in _result_folders(folder / "results", rel / "results", failures):
        if in_progress(version_dir):
            going += 1
        else:
            folders += 1
        where = rel / "results" / version_dir.parent.name / version_dir.name
        failures.extend(check_result_folder(version_dir, where, known, submission))
    return failures, folders, going


def _links_and_strays(folder: Path, rel: Path) -> Iterator[Failure]:
    """Symbolic links anywhere in the folder, and files beside submission.yaml that do not belong."""
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            where = str(rel / path.relative_to(folder))
            yield Failure(where, "is a symbolic link", "commit plain files and folders only")
    for entry in sorted(folder.iterdir()):
        if entry.name == "results" and entry.is_dir():
            continue
        if entry.name not in SUBMISSION_FILES or not entry.is_file():
            fix = "keep only submission.yaml, README.md and results/"
            yield Failure(str(rel / entry.name), "stray entry in a submission folder", fix)


def _readme_failures(path: Path, rel: Path) -> list[Failure]:
    if path.is_symlink() or not path.is_file():
        return []
    failures = []
    if path.stat().st_mode & 0o111:
        failures.append(Failure(str(rel), "is executable", "commit it as a plain file: chmod -x"))
    with path.open("rb") as stream:  # never more than the limit: a hostile file may be huge
        problem = readme_problem(stream.read(README_LIMIT + 1))
    if problem is not None:
        failures.append(Failure(str(rel), problem, README_FIX))
    return failures


def _check_submission_yaml(
    root: Path, slug: str, rel: Path, seen: dict[str, str]
) -> tuple[list[Failure], Submission | None]:
    where = str(rel / "submission.yaml")
    if (root / slug / "submission.yaml").is_symlink():
        return [], None  # reported by _links_and_strays; never read through a link
    if (root / slug / "submission.yaml").stat().st_size > SUBMISSION_YAML_LIMIT:
        fix = "keep submission.yaml to the documented keys; long notes belong in README.md"
        return [Failure(where, f"larger than {SUBMISSION_YAML_LIMIT // 1024} KiB", fix)], None
    try:
        submission = load_submission(slug, root)
    except SubmissionInvalid as err:
        return [Failure(where, problem, fix) for problem, fix in err.problems], None
    except FileProblem as err:
        return [Failure(where, err.problem, err.fix)], None
    except SagoError as err:
        return [Failure(where, str(err), "see docs/SUBMITTING.md")], None
    failures = [*_check_pinning(submission, where), *_hidden_failures(submission, where)]
    identity = weights_identity(submission)
    # (what is claimed, the problem naming the older claimant {old!r}, the fix)
    claims: list[tuple[str, str, str]] = []
    if identity is not None:
        fix = "submit each model once; remove this folder"
        claims.append((f"weights {identity}", "same weights as submission {old!r}", fix))
    for what, text in (("name", submission.name), ("slug", slug)):
        if skeleton(text):
            problem = f"its {what} reads like the {what} of submission {{old!r}}"
            fix = f"choose a {what} a reader cannot mistake for another model's"
            claims.append((f"{what} {skeleton(text)}", problem, fix))
    for key, problem, fix in claims:
        if key in seen and seen[key] != slug:
            failures.append(_duplicate(root, rel.parent, seen[key], slug, problem, fix))
        else:
            seen.setdefault(key, slug)
    return failures, submission


def _hidden_failures(submission: Submission, where: str) -> list[Failure]:
    """No text a submission writes may hold a character a reader cannot see (a lookalike of a name)."""
    failures = []
    for keys, text in _texts(submission.model_dump(mode="json")):
        hidden = hidden_character(text)
        if hidden is not None:
            problem = f"{name_of(keys)} holds an invisible or unassigned character ({hidden})"
            fix = "write it with visible letters, digits, punctuation and plain spaces only"
            failures.append(Failure(where, problem, fix))
    return failures


def _texts(value: object, keys: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, str):
        yield keys, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from _texts(inner, (*keys, str(key)))


def _duplicate(root: Path, label: Path, first: str, second: str, problem: str, fix: str) -> Failure:
    """Blame the newer of two submissions claiming the same (``problem`` names the older ``{old!r}``)."""
    later = _established(root / second) > _established(root / first)
    old, new = (second, first) if later else (first, second)
    return Failure(str(label / new / "submission.yaml"), problem.format(old=old), fix)


def _established(folder: Path) -> tuple[bool, bool]:
    """How settled a submission is (results, submission.yaml tracked by git): else a new slug that sorts
    first blames the old one."""
    try:
        args = ["git", "ls-files", "--error-unmatch", "submission.yaml"]
        done = subprocess.run(args, cwd=folder, capture_output=True, timeout=30, check=False)
        tracked = done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        tracked = False
    return (folder / "results").is_dir(), tracked


def _check_pinning(submission: Submission, where: str) -> list[Failure]:
    """The leaderboard only takes weights pinned to exact bytes that anybody can fetch."""
    model = submission.model
    if isinstance(model, LocalModel):
        fix = "use kind: hub with a 40-hex revision, or kind: packaged with its sha256"
        return [Failure(where, "model.kind 'local' cannot be reproduced by others", fix)]
    if isinstance(model, PackagedModel):
        if model.artefact not in ARTEFACTS:
            fix = f"use one of: {', '.join(ARTEFACTS.names())}"
            return [Failure(where, f"unknown packaged artefact {model.artefact!r}", fix)]
        expected = ARTEFACTS.get(model.artefact).sha256
        if expected is not None and expected != model.sha256:
            problem = f"sha256 does not match packaged artefact {model.artefact!r}"
            return [Failure(where, problem, f"set model.sha256 to {expected}")]
    served = {ARTEFACTS.get(name).sha256 for name in ARTEFACTS.names()}  # what `sago serve` can serve
    if isinstance(model, ApiModel) and is_local_form(model.base_url) and model.snapshot not in served:
        problem = (
            f"model.base_url {model.base_url} is a local endpoint, which only serves a packaged model "
            "(`sago serve`), and model.snapshot is no packaged file's sha256"
        )
        fix = "point base_url at your https:// endpoint on a public host name (docs/SUBMITTING.md)"
        return [Failure(where, problem, fix)]
    return []


def weights_identity(submission: Submission) -> str | None:
    """A key equal for two submissions of the same weights (None: local); Hub ids compare lower-cased."""
    model = submission.model
    if isinstance(model, HubModel):
        return f"hub:{model.id.lower()}@{model.revision}"
    if isinstance(model, PackagedModel):
        return f"sha256:{model.sha256}"
    if isinstance(model, ApiModel):  # the same snapshot behind the same name, wherever it is served
        return f"api:{model.model.lower()}@{model.snapshot.lower()}"
    return None


def _result_folders(results: Path, rel: Path, failures: list[Failure]) -> Iterator[Path]:
    """Yield ``results/<set>/<version>/`` folders; anything else at those two levels is a failure."""
    if not results.is_dir() or results.is_symlink():
        return
    for set_dir in sorted(results.iterdir()):
        if not _is_named_folder(set_dir, rel / set_dir.name, "variant set", failures):
            continue
        for version_dir in sorted(set_dir.iterdir()):
            if _is_named_folder(version_dir, rel / set_dir.name / version_dir.name, "version", failures):
                yield version_dir


def _is_named_folder(path: Path, rel: Path, what: str, failures: list[Failure]) -> bool:
    if path.is_symlink():
        return False  # already reported by _links_and_strays
    if not path.is_dir():
        fix = "results hold only <set>/<version>/ folders written by `sago evaluate`"
        failures.append(Failure(str(rel), "stray file in results/", fix))
        return False
    if not is_name(path.name):
        fix = "use the set and version names from variants/ (e.g. sago-v1/v1)"
        failures.append(Failure(str(rel), f"invalid {what} folder name", fix))
        return False
    return True
