"""A run stopped part-way, as Ctrl-C stops it, for the tests of resuming."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from benchmark.harness import checkpoint


@contextmanager
def stopped_after(monkeypatch: pytest.MonkeyPatch, batches: int) -> Iterator[None]:
    """Inside the block the checkpoint keeps ``batches`` finished parts, then the next write raises
    KeyboardInterrupt (the run stops there); after it, parts are written as usual again."""
    write = checkpoint.PartStore.write
    written: list[str] = []

    def stop(store: checkpoint.PartStore, part: checkpoint.Part) -> None:
        if len(written) == batches:
            raise KeyboardInterrupt
        write(store, part)
        written.append(part.name)

    monkeypatch.setattr(checkpoint.PartStore, "write", stop)
    try:
        yield
    finally:
        monkeypatch.setattr(checkpoint.PartStore, "write", write)
