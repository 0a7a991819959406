"""Collection: the only code that calls a model backend.

One flow for any number of processes: :func:`global_batches` plans the whole run's batches, each
rank runs every ``world_size``-th of them (one process: all of them), in two phases with a barrier
between them, each batch checkpointed on its own:

1. ``base-*``: every selected item's baseline prompt x_0 — generate y_0, then score y_0 under x_0.
2. ``var-*`` / ``rerun-*``: every other variant x_v with y_0 teacher-forced (one engine call gives
   y_v, h_v and the confidence numbers), and the control rows ``rerun/none/0``: x_0 run again in
   another batch (planner 1: ``rerun-*`` batches of half the size; planner 2: among the variants),
   which measures how much batching alone moves the numbers.

Batches are formed from prompts sorted by length, so padding stays small (:data:`PLANNER` says how:
planner 1, which every result made before it records by recording none, cuts the rerun rows in a third
phase of their own; planner 2 sorts by token length and packs the rerun rows among the variants). A
restarted run re-plans
the same batches and skips those whose part file exists, so its records equal an uninterrupted run's,
and the ranks' merged records equal a one-process run's. :func:`second_worker` lets a second process
work backwards through a one-process run's variant batches in the same checkpoint (two one-thread
processes on two cores, the same bytes).
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import dropwhile
from pathlib import Path
from typing import Any, NamedTuple, Required, TypedDict, Unpack

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from benchmark.axes.activations import layer_cosines
from benchmark.documents import DoneDocument, PlanDocument
from benchmark.errors import SagoError
from benchmark.harness import trust
from benchmark.harness.checkpoint import Part, PartStore
from benchmark.harness.sets import VariantSetLike, checked_frame
from benchmark.models.protocol import ModelBackend, VariantOutput, VariantRequest
from benchmark.profiles import Profile, select_rows
from benchmark.results import CHECKPOINT_DIR, PLAN_FILE, write_document
from benchmark.schema import (
    BASELINE_FAMILY,
    DEFAULT_SEED,
    OWN_CONFIDENCE_COLUMNS,
    RECORD_COLUMNS,
    RERUN_FAMILY,
    RERUN_VARIANT_ID,
    rerun_batch_size,
)

FULL = "full"
"""Activations setting: every row's hidden-state vectors are kept."""
COMPACT = "compact"
"""Activations setting: baselines keep their vectors, every other row its per-layer cosine to them."""
SHARDING = "batch"
"""recorded in each rank's plan: a checkpoint of an earlier version's item-sharded collection is refused."""
# Backend description fields that change outputs; a checkpoint made with other values is refused.
_MODEL_IDENTITY = ("source", "location", "revision", "file_sha256", "dtype", "engine")


@dataclass(frozen=True)
class Task:
    """One (item, variant) to run."""

    dataset: str
    item_id: str
    variant_id: str
    family: str
    place: str
    strength: float
    prompt: str

    @property
    def key(self) -> str:
        """``dataset|item_id|variant_id``, unique within a run."""
        return f"{self.dataset}|{self.item_id}|{self.variant_id}"

    @property
    def item(self) -> tuple[str, str]:
        return self.dataset, self.item_id


@dataclass(frozen=True)
class Batch:
    """Tasks run together; ``name`` is the part name its checkpoint gets."""

    name: str
    tasks: tuple[Task, ...]

    @property
    def phase(self) -> str:
        """The planner's phase: ``base``, ``var`` or ``rerun`` (the name less its number).

        >>> Batch("rerun-00003", ()).phase
        'rerun'
        """
        return self.name.rsplit("-", 1)[0]


@dataclass(frozen=True)
class RankResult:
    """What one call of :func:`collect` did."""

    folder: Path
    """the rank's checkpoint folder."""
    batches_run: int
    """batches computed in this call."""
    batches_skipped: int
    """batches found finished in the checkpoint."""


@dataclass(frozen=True)
class Ranks:
    """This process's place in a run of ``world_size`` processes; the defaults are a one-process run."""

    rank: int = 0
    world_size: int = 1
    barrier: Callable[[], None] = lambda: None  # one process has nobody to wait for
    """returns once every rank reached it (accelerate's ``wait_for_everyone``)."""

    @property
    def is_main(self) -> bool:
        """The rank that discards old checkpoints and finalizes."""
        return self.rank == 0


ONE_PROCESS = Ranks()


@dataclass(frozen=True)
class ParallelRun:
    """How a data-parallel launch ran (read after the model is loaded, which sets the thread count)."""

    world_size: int
    """processes in the launch."""
    distributed_type: str
    """accelerate's distributed type, e.g. ``MULTI_GPU``."""
    torch_threads: int
    """torch's intra-op threads in the main process."""
    launcher: str = "accelerate"
    """what started the processes."""

    def run_json(self) -> dict[str, dict[str, int | str]]:
        """The entries it adds to run.json: ``parallel``."""
        return {
            "parallel": {
                "world_size": self.world_size,
                "sharding": SHARDING,
                "launcher": self.launcher,
                "distributed_type": self.distributed_type,
                "torch_threads": self.torch_threads,
            }
        }


PLANNER = 2
"""The batch planner new runs use, recorded as ``planner`` in plan.json and run.json (a run.json without
it was planned by planner 1). Raise it when a change moves any task into another batch: a batch's shape
decides its floats, so the planner is part of what a re-run must repeat to reproduce the bytes."""
PLANNERS = (1, 2)
"""every planner :func:`global_batches` can still re-plan (committed results keep their own)."""

Length = Callable[[str], int]
"""a prompt's length as the planner sorts it (planner 2: the backend's token count; :func:`prompt_length`)."""


class BatchPlan(NamedTuple):
    """Every batch of a run, in its two phases; ranks divide these between them."""

    baselines: tuple[Batch, ...]
    """baseline-phase batches (y_0 generated, then scored under x_0)."""
    rest: tuple[Batch, ...]
    """variant and rerun batches (y_0 teacher-forced)."""


def global_batches(
    tasks: Sequence[Task], batch_size: int, *, planner: int, length: Length = len
) -> BatchPlan:
    """The whole run's batches, the same whatever the number of ranks; ``planner`` is the run's
    (:data:`PLANNER` for a new run, the recorded one when a committed run is re-run), ``length`` the
    prompt length planner 2 sorts by (planner 1 sorts by characters whatever it is given).

    Planner 1: baselines and variants cut at ``batch_size``, the rerun control rows in a phase of their own
    cut at :func:`rerun_batch_size` (a small run ends on two tiny batches). Planner 2:
    :func:`packed_batches`.
    """
    if planner not in PLANNERS:
        raise SagoError(f"batch planner {planner} is unknown here (this version has {PLANNERS}); update sago")
    if planner == 2:
        return packed_batches(tasks, batch_size, length)
    baselines = [t for t in tasks if t.family == BASELINE_FAMILY]
    variants = plan_batches("var", [t for t in tasks if t.family != BASELINE_FAMILY], batch_size)
    controls = plan_batches("rerun", [rerun_task(t) for t in baselines], rerun_batch_size(batch_size))
    return BatchPlan(tuple(plan_batches("base", baselines, batch_size)), tuple(variants + controls))


def packed_batches(tasks: Sequence[Task], batch_size: int, length: Length) -> BatchPlan:
    """Planner 2: baselines first (the variants are teacher-forced on their y_0), then the variants and
    the rerun control rows in one list; both sorted by ``length`` (then key) and cut at ``batch_size``,
    so rows of like length share a batch (less padding) and no forward is spent on a tiny phase-end batch.

    The control still measures what batching alone changes: a rerun row is its baseline prompt run again
    in a batch of other prompts. Planner 1 got that from another batch size (its control batches are
    halves of the baseline batches); here it comes from the neighbours, variants of any item, and
    :func:`mixed_controls` breaks the rare batch that would hold exactly its rows' baseline batch again.

    >>> t = [Task("d", str(i), "baseline/none/0", "baseline", "none", 0.0, "x" * i) for i in (1, 2)]
    >>> t.append(Task("d", "1", "case/all/1", "case", "all", 1.0, "X"))
    >>> plan = packed_batches(t, 2, len)
    >>> [[x.key for x in b.tasks] for b in plan.rest]
    [['d|1|case/all/1', 'd|1|rerun/none/0'], ['d|2|rerun/none/0']]
    """
    known = {p: length(p) for p in {t.prompt for t in tasks}}  # each distinct prompt tokenized once

    def order(rows: Sequence[Task]) -> list[Task]:
        return sorted(rows, key=lambda t: (known[t.prompt], t.key))

    baselines = order([t for t in tasks if t.family == BASELINE_FAMILY])
    base = [Batch(f"base-{n:05d}", tuple(b)) for n, b in enumerate(_cut(baselines, batch_size))]
    rest = order([t for t in tasks if t.family != BASELINE_FAMILY] + [rerun_task(t) for t in baselines])
    mixed = mixed_controls(_cut(rest, batch_size), base, order)
    return BatchPlan(tuple(base), tuple(Batch(f"var-{n:05d}", tuple(b)) for n, b in enumerate(mixed)))


def _cut(rows: Sequence[Task], size: int) -> list[list[Task]]:
    if size < 1:
        raise SagoError(f"batch size must be at least 1, got {size}")
    return [list(rows[start : start + size]) for start in range(0, len(rows), size)]


def mixed_controls(
    cut: list[list[Task]], baselines: Sequence[Batch], order: Callable[[Sequence[Task]], list[Task]]
) -> list[list[Task]]:
    """``cut`` with every batch that holds only rerun rows whose baseline batch held exactly those items
    (the same prompts again, the control measuring nothing) made to swap one row with a neighbour batch.

    One pass suffices: such a batch holds its whole baseline batch B, so the row it gets is not B's and
    the neighbour, given one of B's rows, cannot hold all of B (B has two rows or more; a one-row B is
    the last baseline batch, hence the last rerun batch, which swaps with the previous, full one). Batch
    size 1 is left as it is: a batch of one prompt cannot hold another, for a control as for planner 1,
    whose two-row control batches the backend cuts back to its own batch size of one.
    """
    home = {t.item: frozenset(x.item for x in b.tasks) for b in baselines for t in b.tasks}

    def repeats_baseline(batch: list[Task]) -> bool:
        return all(t.family == RERUN_FAMILY for t in batch) and {t.item for t in batch} == home[batch[0].item]

    if len(cut) < 2 or len(cut[0]) < 2:
        return cut
    for i, batch in enumerate(cut):
        if repeats_baseline(batch):
            j = i + 1 if i + 1 < len(cut) else i - 1
            mine, theirs = (len(batch) - 1, 0) if j > i else (0, len(cut[j]) - 1)
            batch[mine], cut[j][theirs] = cut[j][theirs], batch[mine]
            cut[i], cut[j] = order(batch), order(cut[j])
    if any(repeats_baseline(b) for b in cut):
        raise RuntimeError("planner 2 left a rerun batch that repeats its baseline batch")  # see docstring
    return cut


def prompt_length(backend: ModelBackend) -> Length:
    """Planner 2's length: the token count of the prompt as the model reads it (chat template included),
    from the backend's ``render``; characters for a backend that has no tokenizer (an endpoint)."""
    render = getattr(backend, "render", None)
    if not callable(render):
        return len
    return lambda prompt: len(render(prompt))


@dataclass(frozen=True)
class RankShare:
    """The batches of the global plan that one rank runs."""

    rank: int
    world_size: int
    store: PartStore
    """this rank's checkpoint folder, ``checkpoint/rank-<rank>``."""
    baselines: tuple[Batch, ...]
    """baseline-phase batches (y_0 generated, then scored under x_0)."""
    rest: tuple[Batch, ...]
    """variant and rerun batches (y_0 teacher-forced)."""


def rank_share(
    results_dir: Path,
    tasks: Sequence[Task],
    *,
    batch_size: int,
    rank: int,
    world_size: int,
    planner: int = PLANNER,
    length: Length = len,
) -> RankShare:
    """Every ``world_size``-th batch of each phase, starting at ``rank``.

    Sharding is by batch, not by item: a float computed in a batch depends on the batch's shape, so
    every rank cuts exactly the batches a one-process run cuts, and the merged records are the same bytes.

    >>> t = [Task("d", str(i), "baseline/none/0", "baseline", "none", 0.0, "x" * i) for i in range(5)]
    >>> share = rank_share(Path("/tmp/r"), t, batch_size=2, rank=1, world_size=2, planner=1)
    >>> [b.name for b in share.baselines], [b.name for b in share.rest]
    (['base-00001'], ['rerun-00001', 'rerun-00003'])
    """
    if not 0 <= rank < world_size:
        raise SagoError(f"rank {rank} is outside world size {world_size}")
    plan = global_batches(tasks, batch_size, planner=planner, length=length)
    return RankShare(
        rank,
        world_size,
        PartStore(results_dir / CHECKPOINT_DIR / f"rank-{rank}"),
        plan.baselines[rank::world_size],
        plan.rest[rank::world_size],
    )


class RunSettings(TypedDict, total=False):
    """What decides a run's plan and outputs: the keyword arguments :func:`collect`, :func:`second_worker`
    and :func:`start_rank` share (every rank of a run must pass the same values)."""

    profile: Required[Profile]
    """which items and strengths, and the token limit."""
    batch_size: int
    """prompts per batch (the backend may split a batch further on out-of-memory); default 8."""
    datasets: Sequence[str] | None
    """subset of the set's datasets (default: all)."""
    seed: int
    """seeds torch before any model call."""
    run_info: Mapping[str, Any] | None
    """extra provenance carried into run.json (submission, set name, version)."""
    planner: int
    """the batch planner (default :data:`PLANNER`; a re-run of a committed result passes the one it
    records)."""
    activations: str
    """``"full"`` (the default) keeps every hidden-state vector; ``"compact"`` keeps the baselines'
    vectors and, for every other row, only its per-layer cosine to the item's baseline (what the
    activation measures read), which is ~1/500 of the size."""


def collect(
    backend: ModelBackend,
    variant_set: VariantSetLike,
    results_dir: Path,
    *,
    ranks: Ranks = ONE_PROCESS,
    progress: bool = True,
    force: bool = False,
    **settings: Unpack[RunSettings],
) -> RankResult:
    """Run this rank's share of the selected (item, variant)s and checkpoint every batch.

    A one-process run is the ``world_size`` = 1 case: the same plan, phases and files.

    Parts go under ``results_dir/checkpoint/rank-<rank>/``; ``ranks`` holds the barrier between the two
    phases (the variant phase teacher-forces y_0, which may come from another rank's baseline batch);
    ``force`` keeps this rank's checkpoint only when its plan is this run's. Call
    :func:`benchmark.harness.finalize.finalize` once every rank is done.
    """
    rank, world_size = ranks.rank, ranks.world_size
    share = start_rank(
        backend, variant_set, results_dir, rank=rank, world_size=world_size, force=force, **settings
    )
    profile = settings["profile"]
    ran, skipped = run_baseline_phase(share, backend, profile, progress=progress)
    ranks.barrier()
    compact = settings.get("activations", FULL) == COMPACT
    ran2, skipped2 = run_variant_phase(share, backend, profile, progress=progress, compact=compact)
    finish_rank(share, backend)
    return RankResult(share.store.folder, ran + ran2, skipped + skipped2)


def start_rank(
    backend: ModelBackend,
    variant_set: VariantSetLike,
    results_dir: Path,
    *,
    rank: int,
    world_size: int,
    force: bool = False,
    **settings: Unpack[RunSettings],
) -> RankShare:
    """Plan this rank's share and write (or check, on resume) its ``plan.json``; with ``force``, a
    checkpoint of another run is discarded first and one of this same run kept (:func:`keep_or_discard`)."""
    activations, batch_size = settings.get("activations", FULL), settings.get("batch_size", 8)
    seed, profile = settings.get("seed", DEFAULT_SEED), settings["profile"]
    if activations not in (FULL, COMPACT):
        raise SagoError(f"activations must be {FULL!r} or {COMPACT!r}, not {activations!r}")
    torch.manual_seed(seed)
    tasks = select_tasks(variant_set, profile, settings.get("datasets"))
    planner = settings.get("planner", PLANNER)
    share = rank_share(
        results_dir,
        tasks,
        batch_size=batch_size,
        rank=rank,
        world_size=world_size,
        planner=planner,
        length=prompt_length(backend),
    )
    model = backend.describe()
    plan: dict[str, Any] = {  # everything that determines this rank's outputs, then the keys it must produce
        "variant_set_sha256": variant_set.sha256,
        "profile": profile.parameters(),
        "model": {k: model.get(k) for k in _MODEL_IDENTITY},
        "batch_size": batch_size,
        "rank": rank,
        "world_size": world_size,
        "seed": seed,
        "run_info": settings.get("run_info") or {},
        "sharding": SHARDING,
        # only a compact run records the setting, so full runs keep their earlier plan and run.json bytes
        **({"activations": COMPACT} if activations == COMPACT else {}),
        # likewise planner 1 is recorded by recording none: re-planned, a committed run keeps its bytes
        **({"planner": planner} if planner != 1 else {}),
        # finalize() checks the merged records against the union of the ranks' planned keys
        "keys": sorted(t.key for b in share.baselines + share.rest for t in b.tasks),
    }
    if force and (said := keep_or_discard(share.store, plan, len(share.baselines) + len(share.rest))):
        print(said, file=sys.stderr)
    check_or_write_plan(share.store.folder, plan)
    return share


def run_baseline_phase(
    share: RankShare, backend: ModelBackend, profile: Profile, *, progress: bool = True
) -> tuple[int, int]:
    """Generate and score this rank's baseline batches; returns (batches run, batches skipped)."""
    run = runner(backend, profile, baselines=None)
    return run_batches(share.store, share.baselines, run, progress, f"baselines (rank {share.rank})")


def run_variant_phase(
    share: RankShare, backend: ModelBackend, profile: Profile, *, progress: bool = True, compact: bool = False
) -> tuple[int, int]:
    """Run this rank's variant and rerun batches with y_0 read from *every* rank's baseline parts.

    Call it only after all ranks finished :func:`run_baseline_phase` (a barrier). ``compact``: store
    each variant's per-layer cosine to its item's baseline hidden state instead of the vectors.
    """
    run = variant_runner(share, backend, profile, compact=compact)
    return run_batches(share.store, share.rest, run, progress, f"variants (rank {share.rank})")


def variant_runner(share: RankShare, backend: ModelBackend, profile: Profile, *, compact: bool) -> Runner:
    """The variant phase's runner: y_0 (and, when ``compact``, the baseline states) from every rank's
    baseline parts."""
    y0: dict[tuple[str, str], str] = {}
    reference: dict[tuple[str, str], np.ndarray] = {}  # the baselines' float16 hidden states
    for rank in range(share.world_size):
        store = PartStore(share.store.folder.parent / f"rank-{rank}")
        frame = store.records("base-")
        if not frame.empty:
            rows = zip(frame["dataset"], frame["item_id"], frame["response"], strict=True)
            y0.update({(d, i): r for d, i, r in rows})
        for key, array in store.activations("base-").items() if compact else ():
            dataset, item_id, _ = key.split("|", 2)
            reference[dataset, item_id] = array
    return runner(backend, profile, baselines=y0, reference=reference if compact else None)


def finish_rank(share: RankShare, backend: ModelBackend) -> None:
    """Mark the rank done (finalize refuses to merge ranks without this file)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    done = DoneDocument.build(backend.describe(), utc_timestamp(), round(peak, 1))
    write_document(share.store.folder / DoneDocument.FILE, done)


def started_run(results_dir: Path) -> Path:
    """The checkpoint folder of a started one-process run in ``results_dir``, or a one-line refusal."""
    folder = results_dir / CHECKPOINT_DIR / "rank-0"
    if not (folder / PLAN_FILE).is_file() or (results_dir / CHECKPOINT_DIR / "rank-1").exists():
        raise SagoError(
            f"{results_dir} holds no started one-process run; start the run itself first, then its "
            "second worker"
        )
    return folder


def second_worker(
    backend: ModelBackend,
    variant_set: VariantSetLike,
    results_dir: Path,
    *,
    progress: bool = True,
    **settings: Unpack[RunSettings],
) -> RankResult:
    """A second process on a started one-process run: its variant batches from the last unfinished one
    backwards, stopping at the first one already finished (where it meets the run's own process).

    The run's own process works forwards through the same list, so two one-thread processes share the
    variant phase. They also share memory bandwidth: on the 2-core machine of the committed 1.5B run, the
    forward process took 117-133 s per batch alone (var-00340..344) and 126-149 s beside a second worker
    (var-00336..339), about 10-15 % slower, so the pair did about 1.7x one process's batches. Nothing
    about the result changes: the plan must equal the run's (``plan.json``), and every batch is cut and
    computed as the run's own process would, so its part is the same bytes (a part's ``seconds``
    statistic aside). It never writes the results: when the two meet, the run's own process (restarted,
    or still running) finds every batch finished and finalizes; a second worker that then finds the
    run finalized (its plan.json gone with the checkpoint) stops as well. Arguments are :func:`collect`'s.
    """
    folder = started_run(results_dir)
    share = start_rank(backend, variant_set, results_dir, rank=0, world_size=1, **settings)
    finished = share.store.finished()
    left = sum(b.name not in finished for b in share.baselines)
    if left:
        raise SagoError(
            f"{folder}: {left} baseline batches are not finished; a second worker starts once the run "
            "is in its variant phase (the variants need every baseline answer)"
        )
    compact = settings.get("activations", FULL) == COMPACT
    run = variant_runner(share, backend, settings["profile"], compact=compact)
    # A restarted second worker first passes the stretch at the end that it (or another) finished.
    backwards = list(dropwhile(lambda b: b.name in finished, reversed(share.rest)))
    ran = 0
    with tqdm(desc="variants (second worker, last first)", unit="batch", disable=not progress) as bar:
        for batch in backwards:
            if met(share.store, batch.name):
                break  # met the run's own process: the batches before this one are its
            part = run(batch)
            if met(share.store, batch.name):
                break  # the run's own process wrote it meanwhile (or finalized): keep its part
            share.store.write(part)
            if not share.store.planned():  # finalized during the write: the write made a new folder
                share.store.withdraw(part.name)
                break
            ran += 1
            bar.update(1)
    return RankResult(share.store.folder, ran, sum(b.name in finished for b in share.rest))


def met(store: PartStore, name: str) -> bool:
    """Whether a second worker has met the run's own process at batch ``name``: the run finished it, or
    finished everything and finalized (its checkpoint, plan.json included, is gone; a write now would
    start an orphan checkpoint beside the results)."""
    return store.has(name) or not store.planned()


def select_tasks(variant_set: VariantSetLike, profile: Profile, datasets: Sequence[str] | None) -> list[Task]:
    """The profile's rows of the chosen datasets."""
    names = list(datasets) if datasets else list(variant_set.datasets)
    unknown = sorted(set(names) - set(variant_set.datasets))
    if unknown:
        raise SagoError(f"unknown dataset {unknown[0]!r}; the set has: {', '.join(variant_set.datasets)}")
    tasks = [
        Task(
            name,
            str(r.item_id),
            str(r.variant_id),
            str(r.family),
            str(r.place),
            float(r.strength),
            str(r.prompt),
        )
        for name in names
        for r in select_rows(checked_frame(variant_set, name), profile).itertuples(index=False)
    ]
    if not tasks:
        raise SagoError(f"profile {profile.name!r} selects no rows of {', '.join(names)}; check the set")
    return tasks


def rerun_task(baseline: Task) -> Task:
    """The control row: the baseline prompt under the id ``rerun/none/0``."""
    return replace(baseline, variant_id=RERUN_VARIANT_ID, family=RERUN_FAMILY, place="none", strength=0.0)


def plan_batches(phase: str, tasks: Sequence[Task], batch_size: int) -> list[Batch]:
    """Sort by prompt length (then key, for a total order) and cut into batches.

    >>> t = [Task("d", str(i), "v", "f", "p", 0.0, "x" * n) for i, n in enumerate([5, 1, 3])]
    >>> [[x.item_id for x in b.tasks] for b in plan_batches("var", t, 2)]
    [['1', '2'], ['0']]
    """
    ordered = sorted(tasks, key=lambda t: (len(t.prompt), t.key))
    return [Batch(f"{phase}-{n:05d}", tuple(b)) for n, b in enumerate(_cut(ordered, batch_size))]


Runner = Callable[[Batch], Part]


def runner(
    backend: ModelBackend,
    profile: Profile,
    baselines: Mapping[tuple[str, str], str] | None,
    reference: Mapping[tuple[str, str], np.ndarray] | None = None,
) -> Runner:
    """A function that computes one batch's part (baselines phase when ``baselines`` is None); with a
    ``reference`` (compact activations) each row keeps its per-layer cosine to that baseline state."""

    def run(batch: Batch) -> Part:
        start = time.perf_counter()
        if baselines is None:
            outputs = _generate_and_score_baselines(backend, batch.tasks, profile.max_new_tokens)
        else:
            requests = [VariantRequest(t.key, t.prompt, baselines[t.item]) for t in batch.tasks]
            # planner 1's rerun batches hold only control rows; planner 2 mixes them with variants, and a
            # backend that cuts its own forwards cuts such a batch at the control's size too
            control = any(t.family == RERUN_FAMILY for t in batch.tasks)
            outputs = backend.run(requests, max_new_tokens=profile.max_new_tokens, rerun_control=control)
        part = _part(
            batch,
            outputs,
            time.perf_counter() - start,
            backend.capabilities.hidden_states,
            own=not backend.capabilities.logprobs,
        )
        if reference is None:
            return part
        tasks = {t.key: t for t in batch.tasks}
        cosines = {k: layer_cosines(v, reference[tasks[k].item]) for k, v in part.activations.items()}
        return replace(part, activations=cosines)

    return run


def _generate_and_score_baselines(
    backend: ModelBackend, tasks: Sequence[Task], max_new_tokens: int
) -> list[VariantOutput]:
    """Generate y_0, then score it under x_0 like every variant (same pass, same numbers)."""
    generated = backend.run(
        [VariantRequest(t.key, t.prompt, None) for t in tasks], max_new_tokens=max_new_tokens
    )
    scored = backend.run(
        [VariantRequest(t.key, t.prompt, g.response) for t, g in zip(tasks, generated, strict=True)],
        max_new_tokens=0,
    )
    return [
        replace(
            s,
            response=g.response,
            response_tokens=g.response_tokens,
            finished=g.finished,
            token_logprobs=g.token_logprobs,
            # an endpoint reports the prompt's tokens when it generates (its scoring pass sends nothing)
            prompt_tokens=s.prompt_tokens or g.prompt_tokens,
        )
        for g, s in zip(generated, scored, strict=True)
    ]


def _part(
    batch: Batch, outputs: Sequence[VariantOutput], seconds: float, with_hidden: bool, *, own: bool = False
) -> Part:
    """One batch's checkpoint part; ``own``: a backend that cannot teacher-force (an API) also keeps the
    confidence of its own tokens (``OWN_CONFIDENCE_COLUMNS``, beside the records in the part)."""
    rows = [_record(t, o) | (_own(o) if own else {}) for t, o in zip(batch.tasks, outputs, strict=True)]
    activations = {
        o.key: o.hidden.astype(np.float16) for o in outputs if with_hidden and o.hidden is not None
    }
    stats = {
        "seconds": round(seconds, 4),
        "requests": len(outputs),
        "prompt_tokens": sum(o.prompt_tokens for o in outputs),
        "generated_tokens": sum(o.response_tokens for o in outputs),
        "scored_tokens": sum(o.baseline_tokens for o in outputs),
    }
    columns = ["key", *RECORD_COLUMNS, *(OWN_COLUMNS if own else ())]
    return Part(batch.name, pd.DataFrame(rows, columns=columns), activations, stats)


OWN_COLUMNS = tuple(c for c in OWN_CONFIDENCE_COLUMNS if c not in RECORD_COLUMNS)
"""the columns an API part adds to the records columns."""


def _own(out: VariantOutput) -> dict[str, Any]:
    from benchmark.models.api import own_confidence

    prob, entropy = own_confidence(out.token_logprobs)
    return {"own_tokens": len(out.token_logprobs or ()), "own_prob_mean": prob, "own_entropy": entropy}


def _record(task: Task, out: VariantOutput) -> dict[str, Any]:
    """One records row: the task's identity columns, then what the backend said of it."""
    if out.key != task.key:
        raise RuntimeError(f"backend returned {out.key!r} for {task.key!r}: outputs out of order")
    return {"key": task.key} | {c: getattr(task if hasattr(task, c) else out, c) for c in RECORD_COLUMNS}


def run_batches(
    store: PartStore, batches: Sequence[Batch], run: Runner, progress: bool, label: str
) -> tuple[int, int]:
    """Run the batches not yet in ``store``; returns (run, skipped).

    A batch finished by someone else while this loop runs (a second worker working backwards: see
    :func:`second_worker`) is skipped when the loop reaches it, so the run's own process, still running,
    stops computing where the two meet and goes on to finish."""
    finished = store.finished()
    todo = [b for b in batches if b.name not in finished]
    ran = 0
    with tqdm(
        total=len(batches),
        initial=len(batches) - len(todo),
        desc=label,
        unit="batch",
        disable=not progress,
        leave=False,
    ) as bar:
        for batch in todo:
            if not store.has(batch.name):
                store.write(run(batch))
                ran += 1
            bar.update(1)
    return ran, len(batches) - ran


def plan_differences(path: Path, plan: dict[str, Any]) -> list[str] | None:
    """The keys in which the stored ``plan.json`` at ``path`` differs from ``plan`` (``[]``: the same run);
    None when the checkpoint is not one this machine may resume (:mod:`benchmark.harness.trust`)."""
    stored = PlanDocument.read(path).to_json()
    if not trust.trusted(path, stored.get("started_by")):
        return None
    old = {k: v for k, v in stored.items() if k not in ("started_at", "started_by")}
    plan = json.loads(json.dumps(plan, default=str))  # compare as it would read back
    return sorted(k for k in set(old) | set(plan) if old.get(k) != plan.get(k))


def keep_or_discard(store: PartStore, plan: dict[str, Any], batches: int) -> str | None:
    """``--force``: keep a checkpoint of this very run (same plan.json: its batches are the bytes this run
    would compute) and discard one of any other run; returns the sentence that says which, or None when
    there is no checkpoint."""
    path = store.folder / PLAN_FILE
    if not path.is_file():
        return None
    finished = len(store.finished())
    changed = plan_differences(path, plan)
    if changed == []:
        return f"--force kept the checkpoint of this same run ({finished} of {batches} batches finished)"
    shutil.rmtree(store.folder)
    why = "not started on this machine" if changed is None else f"{', '.join(changed)} differ"
    return f"--force discarded the checkpoint of another run ({why}; {finished} finished batches)"


def check_or_write_plan(folder: Path, plan: dict[str, Any]) -> None:
    """Write ``plan.json`` on a first start; on a restart refuse a plan that differs from the stored one."""
    path = folder / PLAN_FILE
    if path.exists():
        changed = plan_differences(path, plan)
        if changed is None:
            raise SagoError(
                f"{folder} holds a checkpoint this machine did not start and the checkout does not track; "
                "it will not be resumed into results: delete it, or rerun with --force"
            )
        if changed:
            note = _planner_note(path, plan) if "planner" in changed else ""
            raise SagoError(
                f"{folder} holds a checkpoint of a different run ({', '.join(changed)} differ{note}); "
                "rerun with --force to discard it"
            )
        return
    stamped = {**plan, "started_at": utc_timestamp(), "started_by": trust.new_token()}
    write_document(path, PlanDocument.from_json(stamped, path))


def _planner_note(path: Path, plan: Mapping[str, Any]) -> str:
    """Why a ``planner`` difference refuses a resume: the checkpoint's batches are cut otherwise."""
    stored = PlanDocument.read(path).to_json().get("planner", 1)
    return (
        f": its batches were cut by batch planner {stored}, this run cuts them with planner "
        f"{plan.get('planner', 1)}, and a batch's composition decides its floats"
    )


def utc_timestamp() -> str:
    """Wall-clock time for provenance files (never part of the records, which must be reproducible)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
