"""Several outputs written all or none: each goes to a hidden sibling of its target first, and only when
every one is written (and flushed to disk) are they renamed over their targets, in the order staged.

A journal records the plan, so the next run (:func:`recover`) undoes a run killed while ``writing`` and
finishes one killed while ``renaming`` (the last output staged is renamed last: when it is new, all are).
Only the staged files are fsynced, so a power cut (not a kill) may leave new outputs beside old ones
until the next run. Two runs at once are refused by a lock held for the whole run (:func:`exclusive`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmark.errors import SagoError
from benchmark.results import naming, write_text
from benchmark.safeload import load_json_object

WRITING, RENAMING = "writing", "renaming"


def staged_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.staged")


class Staged:
    """Outputs of one run, staged beside their targets until :meth:`commit` (see the module docstring).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> staged = Staged(folder / "journal.json")
    >>> _ = staged.write(folder / "a.txt", lambda tmp: tmp.write_text("new"))
    >>> (folder / "a.txt").exists()
    False
    >>> staged.commit()
    >>> (folder / "a.txt").read_text(), (folder / "journal.json").exists()
    ('new', False)
    """

    def __init__(self, journal: Path) -> None:
        self.journal = journal
        self._pending: dict[Path, Path] = {}  # target -> its staged file, in the order staged
        self._renaming = False

    def write(self, target: Path, write: Callable[[Path], object]) -> Path:
        """Call ``write`` on the staged file of ``target`` and return that file (read it back from there)."""
        target = target.absolute()
        staged = staged_path(target)
        self._pending[target] = staged
        self._record(WRITING)  # first: a kill during the write leaves a journal that names the file
        try:
            write(staged)
        except OSError as err:
            raise naming(err, target) from err
        return staged

    def commit(self) -> None:
        """Rename every staged file over its target (the journal first says so, for :func:`recover`)."""
        for target, staged in self._pending.items():
            try:
                with open(staged, "rb") as handle:
                    os.fsync(handle.fileno())
            except OSError as err:
                raise naming(err, target) from err
        self._record(RENAMING)
        self._renaming = True
        for target, staged in self._pending.items():
            os.replace(staged, target)
        self._pending.clear()
        self.journal.unlink(missing_ok=True)

    def discard(self) -> None:
        """Delete every staged file, unless the renames have begun (the journal lets the next run finish)."""
        if self._renaming:
            return
        for staged in self._pending.values():
            staged.unlink(missing_ok=True)
        self._pending.clear()
        self.journal.unlink(missing_ok=True)

    def _record(self, state: str) -> None:
        renames = [[str(staged), str(target)] for target, staged in self._pending.items()]
        write_text(self.journal, json.dumps({"pid": os.getpid(), "state": state, "renames": renames}) + "\n")


def recover(journal: Path) -> int:
    """Finish or undo the outputs of a killed run; how many files were renamed. A journal of a process
    still running is an error: two runs would mix outputs."""
    if not journal.is_file():
        return 0
    plan = load_json_object(journal, limit=2**20, fix="delete it and re-run")
    pid, state, renames = plan.get("pid"), plan.get("state"), plan.get("renames")
    pairs = renames if isinstance(renames, list) else None
    # Only a target's own staged sibling is ever renamed or deleted, whatever the journal says.
    if pairs is None or not all(
        isinstance(p, list)
        and len(p) == 2
        and all(isinstance(s, str) for s in p)
        and Path(p[0]) == staged_path(Path(p[1]))
        for p in pairs
    ):
        raise SagoError(f"{journal}: not a journal of staged outputs; delete it and re-run")
    if isinstance(pid, int) and pid > 0 and pid != os.getpid() and _running(pid):
        raise SagoError(
            f"another run (pid {pid}) is writing its outputs ({journal}); wait for it to finish, or delete "
            "the journal if that process is not this program"
        )
    renamed = 0
    for staged, target in (map(Path, p) for p in pairs):
        if state == RENAMING and staged.is_file():
            os.replace(staged, target)
            renamed += 1
        else:
            staged.unlink(missing_ok=True)
    journal.unlink()
    return renamed


@contextmanager
def exclusive(journal: Path) -> Iterator[None]:
    """Hold a lock beside ``journal`` for a whole run (the journal's pid check only sees a run that
    already wrote it)."""
    import fcntl

    journal.parent.mkdir(parents=True, exist_ok=True)
    with journal.with_name(journal.name + ".lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SagoError(
                f"another run is writing its outputs (it holds {handle.name}); wait for it to finish"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
