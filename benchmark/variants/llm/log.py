"""The rewrite log: one JSON line per attempt, accepted or not.

LLM output is the one input of a build that is not a pure function of the pinned sources, so the log
*is* its pin: a rebuild replays it instead of running the model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmark.errors import SagoError


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

    A later line for the same key wins, so an append-only log that was resumed reads correctly.
    """
    if path is None or not path.exists():
        return {}
    attempts = [
        _attempt(path, number, line)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if line.strip()
    ]
    return {(a.dataset, a.item_id, a.variant_id, a.attempt, a.original): a for a in attempts}


def _attempt(path: Path, number: int, line: str) -> Attempt:
    """One log line as an attempt; a line that is not one (e.g. a written-cells file passed by mistake)
    is a one-line error naming the file and line."""
    try:
        return Attempt(**json.loads(line))
    except (json.JSONDecodeError, TypeError) as err:
        reason = "not JSON" if isinstance(err, json.JSONDecodeError) else "not a rewrite attempt"
        raise SagoError(
            f"{path}:{number}: {reason} (a rewrite log holds one attempt per line, as `sago variants "
            "rewrite` writes them); pass the rewrite log, not another file"
        ) from None


def _line(attempt: Attempt) -> str:
    return json.dumps(asdict(attempt), ensure_ascii=False, sort_keys=True) + "\n"


def write_log(path: Path, attempts: Sequence[Attempt]) -> None:
    """Write every attempt, sorted by cell and attempt (the frozen set's log)."""
    ordered = sorted(attempts, key=lambda a: (a.dataset, a.item_id, a.variant_id, a.attempt))
    path.write_text("".join(_line(a) for a in ordered))


def append_log(path: Path, attempts: Sequence[Attempt]) -> None:
    """Append fresh attempts and flush them to disk (the log of a running stage survives a kill)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(_line(a) for a in attempts if a.rewriter)
        handle.flush()
        os.fsync(handle.fileno())
