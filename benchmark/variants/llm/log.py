"""The rewrite log: one JSON line per attempt, accepted or not.

LLM output is the one input of a build that is not a pure function of the pinned sources, so the log
*is* its pin: a rebuild replays it instead of running the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmark.appendlog import AppendLog, json_line


@dataclass(frozen=True)
class Attempt:
    """One request to the rewriter and what became of it (a line of the rewrite log)."""

    dataset: str
    item_id: str
    variant_id: str
    attempt: int
    rewriter: str
    original: str
    output: str
    accepted: bool
    reason: str
    """'' when accepted, else why the attempt was rejected."""
    similarity: float


LogKey = tuple[str, str, str, int, str]
"""(dataset, item, variant, attempt, original): what an attempt is replayed by."""


def read_log(path: Path | None) -> dict[LogKey, Attempt]:
    """Replayable attempts from a rewrite log, keyed by (dataset, item, variant, attempt, original).

    A later line for the same key wins, so an append-only log that was resumed reads correctly; a line
    torn by a kill (the last, unterminated) is dropped, so a killed stage resumes and asks for it again.
    """
    attempts = _log(path).load() if path is not None else []
    return {(a.dataset, a.item_id, a.variant_id, a.attempt, a.original): a for a in attempts}


def _log(path: Path) -> AppendLog[Attempt]:
    # a line that is not an attempt (e.g. a written-cells file passed by mistake) is a one-line error
    # naming the file and line
    hint = (
        " (a rewrite log holds one attempt per line, as `sago variants rewrite` writes them); pass the "
        "rewrite log, not another file"
    )
    return AppendLog(path, lambda line: Attempt(**line), asdict, what="a rewrite attempt", hint=hint)


def write_log(path: Path, attempts: Sequence[Attempt]) -> None:
    """Write every attempt, sorted by cell and attempt (the frozen set's log)."""
    ordered = sorted(attempts, key=lambda a: (a.dataset, a.item_id, a.variant_id, a.attempt))
    path.write_text("".join(json_line(asdict(a)) for a in ordered), encoding="utf-8")


def append_log(path: Path, attempts: Sequence[Attempt]) -> None:
    """Append fresh attempts, fsynced (the log of a running stage survives a kill)."""
    _log(path).append(a for a in attempts if a.rewriter)
