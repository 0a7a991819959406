"""The timing core of the performance tools: the prompts a profile runs, the clocks, the table, the JSON.

``sago bench``, bench-peer, bench-floor, bench-gpu and gpu-check are each a workload and the columns they
print; how a workload is chosen, warmed up and timed, and how its rows are printed and written, is here
once, so two tools' numbers are read the same way (after the pattern of pyperf's ``Runner``).
"""

from __future__ import annotations

import math
import re
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import click
import torch
from click.decorators import FC

from benchmark.harness.collect import PLANNER, Batch, Length, Task, global_batches, rerun_task, select_tasks
from benchmark.harness.sets import VariantSetLike
from benchmark.jsonio import plain_json
from benchmark.profiles import Profile
from benchmark.provenance import git_commit, hardware
from benchmark.results import write_text
from benchmark.schema import BASELINE_FAMILY

T = TypeVar("T")
SCHEMA_VERSION = 1
"""of the JSON reports written by :func:`write_report`: raised when a key is renamed or changes meaning."""


def profile_tasks(
    variant_set: VariantSetLike, profile: Profile, datasets: Sequence[str] | None
) -> list[Task]:
    """Every request a run of ``profile`` makes: the selected rows, then a rerun control per baseline."""
    tasks = select_tasks(variant_set, profile, datasets)
    return tasks + [rerun_task(t) for t in tasks if t.family == BASELINE_FAMILY]


def profile_batches(
    variant_set: VariantSetLike,
    profile: Profile,
    datasets: Sequence[str] | None,
    batch_size: int,
    length: Length = len,
) -> list[Batch]:
    """The batches a new run of ``profile`` at ``batch_size`` makes, baselines first (the harness's plan;
    ``length``: the backend's, :func:`~benchmark.harness.collect.prompt_length`)."""
    tasks = select_tasks(variant_set, profile, datasets)
    plan = global_batches(tasks, batch_size, planner=PLANNER, length=length)
    return [*plan.baselines, *plan.rest]


@dataclass(frozen=True)
class Timing:
    """The clocks of one piece of work: wall-clock and process CPU seconds (on a shared machine the CPU time,
    not the wall clock, measures the work), and on CUDA the peak memory allocated (NaN elsewhere)."""

    seconds: float
    cpu_seconds: float
    peak_memory_gib: float


@dataclass(frozen=True)
class Timed(Generic[T]):
    """What the timed work returned, and its clocks."""

    value: T
    timing: Timing


def sync(device: torch.device | None) -> None:
    """Wait for a CUDA device's queued kernels, so a clock read after them counts them."""
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(
    work: Callable[[], T], *, warm_up: Callable[[], object] | None = None, device: torch.device | None = None
) -> Timed[T]:
    """Run ``warm_up`` untimed (first-call costs: allocations, lazy imports, compiled graphs), then time
    ``work`` on both clocks and, on CUDA, its peak memory."""
    if warm_up is not None:
        warm_up()
    cuda = device is not None and device.type == "cuda"
    sync(device)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    start, start_cpu = time.perf_counter(), time.process_time()
    value = work()
    sync(device)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda else math.nan
    return Timed(value, Timing(seconds, cpu_seconds, peak))


@dataclass(frozen=True)
class Laps:
    """Wall seconds of named phases summed over many laps (gpu-check's prefill and decode, timed apart)."""

    device: torch.device | None
    seconds: dict[str, float] = field(default_factory=dict)
    """phase -> seconds so far."""

    @contextmanager
    def lap(self, phase: str) -> Iterator[None]:
        """Add the block's wall time (its CUDA kernels included) to ``phase``."""
        sync(self.device)
        start = time.perf_counter()
        yield
        sync(self.device)
        self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)  # Linux reports KiB, macOS bytes


Column = tuple[str, str, Callable[[Any], object]]
"""(header, format spec of its values, e.g. ``">9.2f"``, the value of a row); a text value is only aligned."""


def table(
    columns: Sequence[Column], rows: Iterable[object], *, nan: str = "nan", rule: bool = False
) -> list[str]:
    """The lines of a fixed-width table: a header (``rule``: with dashes under it), then a line per row,
    cells one space apart. A row is what the columns read, or a tuple of its cells as they are (a total
    line); a NaN cell reads ``nan``.

    >>> table([("name", "<6", str), ("s", ">5.1f", len)], ["ab", ("total", float("nan"))], nan="n/a")
    ['name       s', 'ab       2.0', 'total    n/a']
    """

    def cell(value: object, spec: str) -> str:
        if isinstance(value, float) and math.isnan(value):
            value = nan
        if isinstance(value, str):  # a header, a label or a NaN: aligned as the column, at its width
            width = re.match(r"[<>^]?(\d*)", spec)
            return format(value, ("<" if spec.startswith("<") else ">") + (width.group(1) if width else ""))
        return format(value, spec)

    def line(row: object) -> str:
        values = row if isinstance(row, tuple) else tuple(value(row) for _, _, value in columns)
        return " ".join(cell(v, spec) for v, (_, spec, _) in zip(values, columns, strict=True)).rstrip()

    header = " ".join(cell(h, spec) for h, spec, _ in columns).rstrip()
    return [header, *(["-" * len(header)] if rule else []), *map(line, rows)]


def no_nan(value: Any) -> Any:
    """``value`` with every NaN float replaced by None (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [no_nan(v) for v in value]
    return value


def report_option(flag: str, help: str) -> Callable[[FC], FC]:
    """The option naming where a tool writes its :func:`write_report` JSON (the command's ``report``)."""
    return click.option(flag, "report", type=click.Path(dir_okay=False, path_type=Path), help=help)


def write_report(path: Path, fields: Mapping[str, Any]) -> Path:
    """Write ``{schema_version, meta, **fields}`` as JSON (NaN as null), ``meta`` being this machine and
    checkout (a report, not one of the benchmark's documents)."""
    meta = {"hardware": hardware().to_json(), "commit": git_commit()}
    return write_text(path, plain_json({"schema_version": SCHEMA_VERSION, "meta": meta, **no_nan(fields)}))
