"""Data-parallel evaluation: one process per device (or CPU share), launched by ``accelerate``.

Sharding is by *batch* of the single-process plan, not by item: every rank cuts exactly the batches
a one-process run would cut (same prompts, same padding) and runs every ``world_size``-th of them.
A float computed in a batch depends on the batch's shape, so this is what makes the merged records
and activations byte-identical to a one-process run. The price is one barrier: the variant phase
teacher-forces y_0, which may come from another rank's baseline batch, so all ranks finish the
baseline phase first. A rank killed at any point resumes from its own checkpoint on relaunch.

Usage (each process reads its rank and world size from accelerate's ``PartialState``)::

    accelerate launch --multi_gpu --num_processes 2 -m benchmark.harness.parallel SLUG --profile smoke

``--multi_gpu`` only selects accelerate's torchrun launcher; without CUDA the ranks talk over gloo.
:func:`launch_command` builds that command line for ``sago evaluate --num-processes N``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import torch

from benchmark import paths
from benchmark.errors import SagoError
from benchmark.harness.checkpoint import PartStore

# collect()'s own batch runner, plan record and plan check are reused (not copied) so that a batch run
# here is exactly a batch run there; tests/test_parallel.py compares the bytes against collect().
from benchmark.harness.collect import (
    Batch,
    RankResult,
    Task,
    baseline_responses,
    check_or_write_plan,
    plan_batches,
    plan_record,
    rerun_batch_size,
    rerun_task,
    run_batches,
    runner,
    select_tasks,
    utc_timestamp,
)
from benchmark.harness.evaluate import EvaluateOptions, discard_checkpoint, has_finished_run
from benchmark.harness.profiles import Profile, get_profile
from benchmark.harness.sets import VariantSetLike, open_variant_set
from benchmark.models.protocol import ModelBackend
from benchmark.results import CHECKPOINT_DIR, DONE_FILE, write_json
from benchmark.results import results_dir as submission_results_dir
from benchmark.schema import BASELINE_FAMILY, DEFAULT_SEED, DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.submissions import load_submission

SHARDING = "batch"
"""recorded in each rank's plan: a checkpoint sharded by item (``collect``) is not resumed by this."""


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


def global_batches(tasks: Sequence[Task], batch_size: int) -> tuple[list[Batch], list[Batch]]:
    """The one-process plan: (baseline batches, variant + rerun batches), exactly as ``collect`` cuts them."""
    baselines = [t for t in tasks if t.family == BASELINE_FAMILY]
    rest = (plan_batches("var", [t for t in tasks if t.family != BASELINE_FAMILY], batch_size)
            + plan_batches("rerun", [rerun_task(t) for t in baselines], rerun_batch_size(batch_size)))
    return plan_batches("base", baselines, batch_size), rest


def rank_share(results_dir: Path, tasks: Sequence[Task], *, batch_size: int, rank: int,
               world_size: int) -> RankShare:
    """Every ``world_size``-th batch of each phase, starting at ``rank``.

    >>> t = [Task("d", str(i), "baseline/none/0", "baseline", "none", 0.0, "x" * i) for i in range(5)]
    >>> share = rank_share(Path("/tmp/r"), t, batch_size=2, rank=1, world_size=2)
    >>> [b.name for b in share.baselines], [b.name for b in share.rest]
    (['base-00001'], ['rerun-00001', 'rerun-00003'])
    """
    baselines, rest = global_batches(tasks, batch_size)
    return RankShare(rank, world_size, PartStore(results_dir / CHECKPOINT_DIR / f"rank-{rank}"),
                     tuple(baselines[rank::world_size]), tuple(rest[rank::world_size]))


def start_rank(backend: ModelBackend, variant_set: VariantSetLike, results_dir: Path, *, profile: Profile,
               batch_size: int, datasets: Sequence[str] | None, rank: int, world_size: int,
               seed: int = DEFAULT_SEED, run_info: Mapping[str, Any] | None = None) -> RankShare:
    """Plan this rank's share and write (or check, on resume) its ``plan.json``."""
    torch.manual_seed(seed)
    tasks = select_tasks(variant_set, profile, datasets)
    share = rank_share(results_dir, tasks, batch_size=batch_size, rank=rank, world_size=world_size)
    plan = plan_record(backend, variant_set, profile, [], batch_size=batch_size, rank=rank,
                        world_size=world_size, seed=seed, run_info=run_info or {}, sharding=SHARDING)
    # finalize() checks the merged records against the union of the ranks' planned keys.
    plan["keys"] = sorted(t.key for b in share.baselines + share.rest for t in b.tasks)
    check_or_write_plan(share.store.folder, plan)
    return share


def run_baseline_phase(share: RankShare, backend: ModelBackend, profile: Profile, *,
                       progress: bool = True) -> tuple[int, int]:
    """Generate and score this rank's baseline batches; returns (batches run, batches skipped)."""
    run = runner(backend, profile, baselines=None)
    return run_batches(share.store, share.baselines, run, progress, f"baselines (rank {share.rank})")


def run_variant_phase(share: RankShare, backend: ModelBackend, profile: Profile, *,
                      progress: bool = True) -> tuple[int, int]:
    """Run this rank's variant and rerun batches with y_0 read from *every* rank's baseline parts.

    Call it only after all ranks finished :func:`run_baseline_phase` (a barrier).
    """
    y0: dict[tuple[str, str], str] = {}
    for rank in range(share.world_size):
        y0.update(baseline_responses(PartStore(share.store.folder.parent / f"rank-{rank}")))
    run = runner(backend, profile, baselines=y0)
    return run_batches(share.store, share.rest, run, progress, f"variants (rank {share.rank})")


def finish_rank(share: RankShare, backend: ModelBackend) -> None:
    """Mark the rank done (finalize refuses to merge ranks without this file)."""
    write_json(share.store.folder / DONE_FILE, {"model": backend.describe(), "finished_at": utc_timestamp()})


def collect_rank(backend: ModelBackend, variant_set: VariantSetLike, results_dir: Path, *, profile: Profile,
                 batch_size: int, barrier: Callable[[], None], datasets: Sequence[str] | None = None,
                 rank: int = 0, world_size: int = 1, seed: int = DEFAULT_SEED,
                 run_info: Mapping[str, Any] | None = None, progress: bool = True) -> RankResult:
    """One rank's whole collection: plan, baseline phase, ``barrier()``, variant phase, done marker.

    Call :func:`benchmark.harness.finalize.finalize` on one process after a final barrier.
    """
    share = start_rank(backend, variant_set, results_dir, profile=profile, batch_size=batch_size,
                       datasets=datasets, rank=rank, world_size=world_size, seed=seed, run_info=run_info)
    ran, skipped = run_baseline_phase(share, backend, profile, progress=progress)
    barrier()
    ran2, skipped2 = run_variant_phase(share, backend, profile, progress=progress)
    finish_rank(share, backend)
    return RankResult(share.store.folder, ran + ran2, skipped + skipped2)


def run_distributed(make_backend: Callable[[torch.device], ModelBackend], variant_set: VariantSetLike,
                    results_dir: Path, *, profile: Profile, batch_size: int | None = None,
                    datasets: Sequence[str] | None = None, seed: int = DEFAULT_SEED,
                    run_info: Mapping[str, Any] | None = None, progress: bool = True) -> Path | None:
    """Run this process's rank as accelerate assigned it; the main process finalizes at the end.

    Args:
        make_backend: builds the model on the device given (``cuda:<local rank>``, or the CPU).
        variant_set, results_dir, profile, batch_size, datasets, seed, run_info, progress: as for
            :func:`collect_rank`; every rank must pass the same values. ``batch_size`` None: the
            backend's own (equal on every rank, since all ranks load the same model).

    Returns:
        run.json's path on the main process, None on the others.
    """
    from accelerate import PartialState

    from benchmark.harness.finalize import finalize

    state = PartialState(cpu=not torch.cuda.is_available())  # CPU: gloo; GPUs: nccl, one per process
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", state.local_process_index) if cuda else torch.device("cpu")
    backend = make_backend(device)
    batch_size = batch_size or int(getattr(backend, "batch_size", 8))
    result = collect_rank(backend, variant_set, results_dir, profile=profile, batch_size=batch_size,
                          barrier=state.wait_for_everyone, datasets=datasets, rank=state.process_index,
                          world_size=state.num_processes, seed=seed, run_info=run_info,
                          progress=progress and state.is_local_main_process)
    click.echo(f"rank {state.process_index}: ran {result.batches_run} batches, "
               f"skipped {result.batches_skipped} finished ones", err=True)
    state.wait_for_everyone()
    if not state.is_main_process:
        return None
    parallel = {"world_size": state.num_processes, "sharding": SHARDING, "launcher": "accelerate",
                "distributed_type": str(state.distributed_type.value),
                "torch_threads": torch.get_num_threads()}
    return finalize(results_dir, world_size=state.num_processes, extra={"parallel": parallel})


def launch_command(program: Sequence[str], *, num_processes: int, port: int | None = None) -> list[str]:
    """The ``accelerate launch`` command that starts ``program`` (a script and its arguments, or
    ``["-m", module, ...]``) once per rank.

    >>> launch_command(["-m", "benchmark.harness.parallel", "my-model"], num_processes=2)[-3:]
    ['-m', 'benchmark.harness.parallel', 'my-model']
    """
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
               "--num_processes", str(num_processes), "--num_machines", "1", "--mixed_precision", "no",
               "--dynamo_backend", "no"]
    if port is not None:
        command += ["--main_process_port", str(port)]
    return [*command, *program]


def evaluate_distributed(slug: str, options: EvaluateOptions, *, root: Path | None = None) -> Path | None:
    """``sago evaluate SLUG`` as one rank of an accelerate launch (see the module docstring).

    CPU threads per rank default to the cores divided by the number of ranks. Records are
    byte-identical to a one-process run with the same batch size and the same thread count.
    """
    from accelerate import PartialState

    from benchmark.models.loading import load_backend

    root = root or paths.SUBMISSIONS_DIR
    submission = load_submission(slug, root)
    profile = get_profile(options.profile)
    variant_set = open_variant_set(options.set_name, options.version)
    out = submission_results_dir(slug, options.set_name, options.version, root)
    state = PartialState(cpu=not torch.cuda.is_available())
    if options.force:
        if state.is_main_process:
            discard_checkpoint(out)  # results are replaced when finalize() swaps the new run in
        state.wait_for_everyone()
    elif has_finished_run(out, variant_set.sha256, profile, options.datasets):
        return None
    threads = options.threads or max(1, (os.cpu_count() or 1) // state.num_processes)
    info = {"submission": slug, "set": options.set_name, "version": options.version,
            "datasets": sorted(options.datasets) if options.datasets else "all",
            "submission_model": submission.model.model_dump(),
            "chat_template_setting": submission.chat_template}

    def make_backend(device: torch.device) -> ModelBackend:
        return load_backend(submission, device=str(device), batch_size=options.batch_size,
                            engine=options.engine, threads=threads)

    return run_distributed(make_backend, variant_set, out, profile=profile, batch_size=options.batch_size,
                           datasets=options.datasets, run_info=info, progress=options.progress)


def evaluate_argv(slug: str, options: EvaluateOptions) -> list[str]:
    """Command-line arguments of this module that reproduce ``options``.

    >>> evaluate_argv("m", EvaluateOptions(profile="cpu", batch_size=4, datasets=("a", "b")))[:5]
    ['m', '--set', 'sago-v1', '--version', 'v1']
    """
    argv = [slug, "--set", options.set_name, "--version", options.version, "--profile", options.profile,
            "--engine", options.engine]
    for flag, value in (("--batch-size", options.batch_size), ("--threads", options.threads),
                        ("--datasets", ",".join(options.datasets) if options.datasets else None)):
        if value is not None:
            argv += [flag, str(value)]
    return argv + ["--force"] * options.force + ["--no-progress"] * (not options.progress)


def launch_evaluate(slug: str, options: EvaluateOptions, *, num_processes: int) -> None:
    """Run ``slug`` on ``num_processes`` ranks through ``accelerate launch`` and wait for it."""
    command = launch_command(["-m", "benchmark.harness.parallel", *evaluate_argv(slug, options)],
                             num_processes=num_processes)
    if subprocess.run(command, check=False).returncode != 0:
        raise SagoError(f"the {num_processes}-process run of {slug} failed (see the log above); "
                        "run the same command again to resume it")


@click.command()
@click.argument("slug")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True)
@click.option("--profile", default="smoke", show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=None)
@click.option("--datasets", default=None, help="Comma-separated subset of the set's datasets.")
@click.option("--engine", default="single_prefill", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="CPU threads per rank.")
@click.option("--force", is_flag=True)
@click.option("--no-progress", is_flag=True)
def worker(slug: str, set_name: str, version: str, profile: str, batch_size: int | None, datasets: str | None,
           engine: str, threads: int | None, force: bool, no_progress: bool) -> None:
    """One rank of a data-parallel ``sago evaluate`` (run it through ``accelerate launch``)."""
    chosen = tuple(n.strip() for n in datasets.split(",") if n.strip()) if datasets else None
    options = EvaluateOptions(set_name=set_name, version=version, profile=profile, batch_size=batch_size,
                              datasets=chosen or None, engine=engine, threads=threads, force=force,
                              progress=not no_progress)
    run_file = evaluate_distributed(slug, options)
    if run_file is not None:
        click.echo(f"{slug}: wrote {run_file.parent}")
    elif int(os.environ.get("RANK", "0")) == 0:  # only the main rank finalizes, so None there = skipped
        click.echo(f"{slug}: complete results exist; skipped (use --force to redo)", err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point with the CLI's convention: a user error is one line and exit status 2."""
    try:
        worker.main(args=argv, prog_name="benchmark.harness.parallel", standalone_mode=False)
    except SagoError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except click.ClickException as err:
        err.show()
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
