"""One append-only JSON-lines log for everything a run must not lose: paid API answers and LLM rewrites.

Each entry is one line, fsynced as it arrives, so a kill tears at most the last line: that line alone is
forgiven (dropped on load, cut before the next append); any other bad line is refused, naming
``file:line``. JSON lines, not SQLite, because rewrite logs are committed and reviewed as text.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from benchmark.errors import SagoError

E = TypeVar("E")

_WRITING = threading.Lock()  # a pool's threads share a log; a cut must not race an append


def request_key(*parts: object) -> str:
    """sha256 of the request's parts as one JSON list with sorted keys.

    >>> request_key("https://api.openai.com", "gpt-4o-mini", "Hi")[:16]
    'ee75e2c6ade59606'
    """
    return hashlib.sha256(json.dumps(list(parts), sort_keys=True).encode("utf-8")).hexdigest()


def json_line(value: object) -> str:
    """``value`` as one log line: sorted keys and UTF-8 text as is, so a rebuild writes the same bytes."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n"


@dataclass(frozen=True)
class AppendLog(Generic[E]):
    """The entries of one JSON-lines file: :meth:`load` them all, :meth:`append` new ones durably."""

    path: Path
    decode: Callable[[Any], E]
    """a parsed line -> its entry; raises ``TypeError``, ``KeyError`` or ``ValueError`` when it is none."""
    encode: Callable[[E], object]
    what: str
    """an entry in words ("a rewrite attempt"), for the error naming a bad line."""
    hint: str = ""

    def load(self) -> list[E]:
        """Every entry in file order (none when the file is missing); blank lines are skipped."""
        if not self.path.is_file():
            return []
        *whole, tail = self.path.read_bytes().split(b"\n")
        entries = [self._entry(number, line) for number, line in enumerate(whole, start=1) if line.strip()]
        return entries + self._kept(tail)

    def _kept(self, tail: bytes) -> list[E]:
        """An unterminated last line's entry when it reads; none when it was torn by a kill."""
        try:
            return [self._entry(0, tail)] if tail.strip() else []
        except SagoError:
            return []

    def _entry(self, number: int, line: bytes) -> E:
        try:
            value = json.loads(line)
        except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
            reason = "not JSON"
        else:
            try:
                return self.decode(value)
            except (TypeError, KeyError, ValueError):
                reason = f"not {self.what}"
        raise SagoError(f"{self.path}:{number}: {reason}{self.hint}")

    def append(self, entries: Iterable[E]) -> None:
        data = "".join(json_line(self.encode(e)) for e in entries).encode("utf-8")
        if not data:
            return
        with _WRITING:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as out:
                tail = _unterminated(out)
                if self._kept(tail):  # an entry without its newline (written by hand): end its line
                    data = b"\n" + data
                elif tail:  # torn by a kill: cut, so it never becomes a bad line in the middle
                    out.truncate(out.tell() - len(tail))
                out.write(data)
                out.flush()
                os.fsync(out.fileno())


def _unterminated(out: BinaryIO) -> bytes:
    """The file's bytes after its last newline; the position is left at the end."""
    end = out.seek(0, os.SEEK_END)
    out.seek(max(end - 1, 0))
    if out.read(1) in (b"", b"\n"):
        return b""
    out.seek(0)
    return out.read().rsplit(b"\n", 1)[-1]
