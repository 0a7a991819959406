"""The results folder of one submission on one variant-set version, and the one set of atomic writers.

Layout (docs/CONTRACTS.md section 2)::

    submissions/<slug>/results/<set>/<version>/   a run of the version's board profile
                                    (<version>-<profile>/ for a run of another profile)
        run.json                      provenance of the harness run (written by finalize)
        records/<dataset>.parquet     one row per (item, variant)
        activations/<dataset>.safetensors
        deltas.parquet                derived by ``benchmark.axes`` (``sago analyze``)
        summary.json                  derived by ``benchmark.stats`` (``sago analyze``)
        checkpoint/rank-<r>/          in-progress state of a run (git-ignored):
            plan.json, done.json, <phase>-<index>.parquet / .safetensors

Every stage reaches these files through :class:`ResultsFolder`: no other module spells a file name.
Every file is written by :func:`atomic_write` (a hidden temporary sibling renamed over the target), so
a reader sees the old file or the new one, never half a file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors.numpy import save_file

from benchmark.documents import (
    DoneDocument,
    LeaderboardDocument,
    PlanDocument,
    Rendered,
    RunDocument,
    SummaryDocument,
)
from benchmark.errors import SagoError
from benchmark.jsonio import plain_json
from benchmark.paths import SUBMISSIONS_DIR, check_name, check_slug, inside
from benchmark.profiles import results_folder_name

RUN_FILE = RunDocument.FILE
SUMMARY_FILE = SummaryDocument.FILE
DELTAS_FILE = "deltas.parquet"
RECORDS_DIR = "records"
ACTIVATIONS_DIR = "activations"
CHECKPOINT_DIR = "checkpoint"
PLAN_FILE = PlanDocument.FILE
DONE_FILE = DoneDocument.FILE
LEADERBOARD_FILE = LeaderboardDocument.FILE
OWN_CONFIDENCE_DIR = "own_confidence"
"""an API run's per-row confidence from its own tokens' log-probabilities (METHOD.md section 4.1)."""
RECORDS_SUFFIX = ".parquet"
ACTIVATIONS_SUFFIX = ".safetensors"
RESULT_FILES: tuple[tuple[str, str], ...] = (
    (RECORDS_DIR, RECORDS_SUFFIX),
    (ACTIVATIONS_DIR, ACTIVATIONS_SUFFIX),
    (OWN_CONFIDENCE_DIR, RECORDS_SUFFIX),
)
"""harness outputs (sub-folder, suffix): one file per dataset, each hashed in run.json's ``files``."""
DERIVED_FILES: tuple[str, ...] = (DELTAS_FILE, SUMMARY_FILE)
"""tables ``sago analyze`` derives from the harness outputs (not hashed in run.json)."""
TOP_FILES: frozenset[str] = frozenset({RUN_FILE, *DERIVED_FILES})


def results_dir(
    slug: str, set_name: str, version: str, root: Path = SUBMISSIONS_DIR, *, profile: str | None = None
) -> Path:
    """``root/<slug>/results/<set>/<version>``, with ``-<profile>`` for a profile not the board's.

    >>> results_dir("ab__cd", "s", "v2", Path("r"), profile="paper").parts[-4:]
    ('ab__cd', 'results', 's', 'v2-paper')
    """
    check_name(version, "version")
    return inside(
        inside(root, check_slug(slug)),
        "results",
        check_name(set_name, "variant set"),
        results_folder_name(version, profile),
    )


PROFILE_BOARDS_DIR = "profiles"


def profile_board_path(leaderboard_dir: Path, set_name: str, version: str, profile: str) -> Path:
    """Where ``sago analyze --profile`` writes the board of a profile not ``version``'s board profile.

    >>> profile_board_path(Path("leaderboard"), "sago-v1", "v2", "paper").as_posix()
    'leaderboard/profiles/sago-v1/v2-paper/leaderboard.json'
    """
    folder = results_folder_name(check_name(version, "version"), profile)
    if folder == version:
        raise SagoError(f"{profile} is the board profile of {version}: its board is the version's own")
    return (
        leaderboard_dir / PROFILE_BOARDS_DIR / check_name(set_name, "variant set") / folder / LEADERBOARD_FILE
    )


@dataclass(frozen=True)
class ResultsFolder:
    """Every path of one results folder, and the rules about which of them exist.

    >>> folder = ResultsFolder(Path("r"))
    >>> folder.records("gsm8k").as_posix(), folder.plan(1).as_posix()
    ('r/records/gsm8k.parquet', 'r/checkpoint/rank-1/plan.json')
    """

    path: Path

    @classmethod
    def of(
        cls,
        slug: str,
        set_name: str,
        version: str,
        root: Path = SUBMISSIONS_DIR,
        *,
        profile: str | None = None,
    ) -> ResultsFolder:
        """The folder of ``slug``'s ``profile`` run (None: the board profile's)."""
        return cls(results_dir(slug, set_name, version, root, profile=profile))

    # ---- paths -------------------------------------------------------------------------------------
    @property
    def run(self) -> Path:
        return self.path / RUN_FILE

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def deltas(self) -> Path:
        return self.path / DELTAS_FILE

    @property
    def records_dir(self) -> Path:
        return self.path / RECORDS_DIR

    @property
    def activations_dir(self) -> Path:
        return self.path / ACTIVATIONS_DIR

    @property
    def checkpoint(self) -> Path:
        """``checkpoint/``: every rank's in-progress state."""
        return self.path / CHECKPOINT_DIR

    def records(self, dataset: str) -> Path:
        return self.records_dir / f"{dataset}{RECORDS_SUFFIX}"

    def activations(self, dataset: str) -> Path:
        return self.activations_dir / f"{dataset}{ACTIVATIONS_SUFFIX}"

    def own_confidence(self, dataset: str) -> Path:
        """``own_confidence/<dataset>.parquet`` (API runs only)."""
        return self.path / OWN_CONFIDENCE_DIR / f"{dataset}{RECORDS_SUFFIX}"

    def record_files(self) -> list[Path]:
        """Every records file, sorted (links and hidden files are not filtered)."""
        return sorted(self.records_dir.glob(f"*{RECORDS_SUFFIX}"))

    def activation_files(self) -> list[Path]:
        return sorted(self.activations_dir.glob(f"*{ACTIVATIONS_SUFFIX}"))

    def rank_dir(self, rank: int) -> Path:
        """``checkpoint/rank-<rank>/``: one rank's parts, plan and done marker."""
        return self.checkpoint / f"rank-{rank}"

    def plan(self, rank: int) -> Path:
        return self.rank_dir(rank) / PLAN_FILE

    def done(self, rank: int) -> Path:
        return self.rank_dir(rank) / DONE_FILE

    def plan_files(self) -> list[Path]:
        return sorted(self.checkpoint.glob(f"rank-*/{PLAN_FILE}"))

    def relative(self, path: Path) -> str:
        """``path`` relative to the folder, in POSIX form (the keys of run.json's ``files``)."""
        return path.relative_to(self.path).as_posix()

    # ---- readers -----------------------------------------------------------------------------------
    def read_run(self, fix: str = RunDocument.FIX) -> RunDocument:
        """run.json as its typed document (a problem: one line ending in ``fix``)."""
        return RunDocument.read(self.run, fix)

    # ---- the completeness rules ---------------------------------------------------------------------
    def has_run(self) -> bool:
        """Analysable: the harness finished a run here (finalize writes ``run.json`` last)."""
        return self.run.is_file()

    def holds_run_of(self, *, variant_set_sha256: str, profile: str, datasets: Sequence[str] | None) -> bool:
        """Nothing for ``sago evaluate`` to redo: a readable, finished run of this set, profile and dataset
        selection, and no checkpoint of another run in progress."""
        if self.checkpoint.exists():
            return False
        try:
            run = self.read_run()
        except SagoError:
            return False  # unreadable, or of a version this code does not read: redone
        chosen = tuple(datasets) if datasets else None
        return run.is_run_of(variant_set_sha256=variant_set_sha256, profile=profile, datasets=chosen)


# ---- the one set of atomic writers ------------------------------------------------------------------
def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """Call ``write`` on a hidden temporary sibling of ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as err:
        raise naming(err, path) from err
    finally:
        tmp.unlink(missing_ok=True)
    return path


def naming(err: OSError, path: Path) -> OSError:
    """``err`` as a failure to write ``path`` (a full disk reported on a hidden temporary file, or by a
    library that names no file, says which output could not be written)."""
    if err.errno is None:
        return err
    return OSError(err.errno, err.strerror or os.strerror(err.errno), str(path))


def write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(
    path: Path, document: Mapping[str, Any], dumps: Callable[[Mapping[str, Any]], str] = plain_json
) -> Path:
    """Write raw JSON that is not one of the documents (those go through :func:`write_document`)."""
    return write_text(path, dumps(document))


def write_document(path: Path, document: Rendered) -> Path:
    return write_text(path, document.dumps())


def write_parquet(path: Path, table: pa.Table, **options: Any) -> Path:
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp, **options))


def write_tensors(path: Path, tensors: Mapping[str, np.ndarray]) -> Path:
    """Keys sorted, so equal content gives equal bytes."""
    ordered = {k: np.ascontiguousarray(tensors[k]) for k in sorted(tensors)}
    return atomic_write(path, lambda tmp: save_file(ordered, str(tmp)))


# ---- what a killed swap leaves behind -----------------------------------------------------------------
LEFTOVER_SUFFIXES = (".old", ".finalizing")
"""Hidden siblings of a result folder: ``.<v>.old`` (:func:`benchmark.paths.replace_folder` killed between
its two renames) and ``.<v>.finalizing`` (:func:`benchmark.harness.finalize.finalize` killed while
writing)."""
REPAIR = "sago submissions repair"


def leftovers(root: Path = SUBMISSIONS_DIR) -> list[Path]:
    return sorted(p for p in root.glob("*/results/*/.*") if p.is_dir() and p.name.endswith(LEFTOVER_SUFFIXES))


def refuse_leftovers(root: Path, command: str) -> None:
    """One line, before anything is read: a result folder may be missing (``.old`` holds it) or half
    written, so ``command`` would publish a board without it or with the wrong one."""
    found = leftovers(root)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SagoError(
            f"{found[0]}{more}: left by a killed evaluation, so a result folder may be missing or stale; "
            f"run `{REPAIR}` first, then {command} again"
        )


def repair_leftovers(root: Path = SUBMISSIONS_DIR) -> list[str]:
    """Finish or undo what a killed swap left; one sentence per folder.

    ``.<v>.old`` beside ``<v>``: the new folder was swapped in, so the old copy goes. ``.<v>.old`` alone:
    the kill came between the renames, so the old folder is put back. ``.<v>.finalizing``: a partial
    copy; the checkpoint it came from is untouched, so it goes and `sago evaluate` finalizes again.
    """
    done = []
    for path in leftovers(root):
        name = path.name[1:].removesuffix(".old").removesuffix(".finalizing")
        target = path.with_name(name)
        if path.name.endswith(".old") and not target.exists():
            path.rename(target)
            done.append(f"{target}: restored from {path.name} (the swap was killed between its renames)")
        else:
            shutil.rmtree(path)
            done.append(f"{path}: removed (a leftover; {target.name} is the folder in use)")
    return done
