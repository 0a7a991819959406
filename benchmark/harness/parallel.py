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
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

import click
import torch
from accelerate import PartialState

from benchmark import options
from benchmark.entry import run_command
from benchmark.errors import SagoError
from benchmark.harness.collect import ParallelRun, Ranks, RunSettings, collect
from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission, options_argv, options_from_flags
from benchmark.harness.finalize import finalize
from benchmark.harness.sets import VariantSetLike, open_variant_set
from benchmark.models.hf import ENGINES, engine_help
from benchmark.models.protocol import ModelBackend
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION


def _accelerate_state() -> PartialState:
    """This process's rank as ``accelerate launch`` started it (CPU: gloo; GPUs: nccl, one per process)."""
    return PartialState(cpu=not torch.cuda.is_available())


def _ranks(state: PartialState) -> Ranks:
    return Ranks(state.process_index, state.num_processes, state.wait_for_everyone)


def _device(state: PartialState) -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", state.local_process_index)
    return torch.device("cpu")


def _provenance(state: PartialState) -> ParallelRun:
    """run.json's ``parallel`` entry (read after the model is loaded, which sets the thread count)."""
    return ParallelRun(state.num_processes, str(state.distributed_type.value), torch.get_num_threads())


def run_distributed(
    make_backend: Callable[[torch.device], ModelBackend],
    variant_set: VariantSetLike,
    results_dir: Path,
    *,
    progress: bool = True,
    **settings: Unpack[RunSettings],
) -> Path | None:
    """Run this process's rank of an already built backend; the main process finalizes at the end and
    gets run.json's path (the others None).

    ``make_backend`` builds the model on the device given (``cuda:<local rank>``, or the CPU); the other
    arguments are :func:`~benchmark.harness.collect.collect`'s, the same on every rank. Without a batch
    size, the backend's own (equal on every rank, since all ranks load the same model).
    """
    state = _accelerate_state()
    backend = make_backend(_device(state))
    ranks = _ranks(state)
    settings.setdefault("batch_size", backend.batch_size)
    progress = progress and state.is_local_main_process
    result = collect(backend, variant_set, results_dir, ranks=ranks, progress=progress, **settings)
    click.echo(
        f"rank {state.process_index}: ran {result.batches_run} batches, "
        f"skipped {result.batches_skipped} finished ones",
        err=True,
    )
    ranks.barrier()
    if not ranks.is_main:
        return None
    return finalize(results_dir, world_size=ranks.world_size, extra=_provenance(state).run_json())


def launch_command(program: Sequence[str], *, num_processes: int, port: int | None = None) -> list[str]:
    """The ``accelerate launch`` command that starts ``program`` (a script and its arguments, or
    ``["-m", module, ...]``) once per rank.

    >>> launch_command(["-m", "benchmark.harness.parallel", "my-model"], num_processes=2)[-3:]
    ['-m', 'benchmark.harness.parallel', 'my-model']
    """
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    command += ["--num_processes", str(num_processes), "--num_machines", "1"]
    command += ["--mixed_precision", "no", "--dynamo_backend", "no"]
    if port is not None:
        command += ["--main_process_port", str(port)]
    return [*command, *program]


def evaluate_distributed(slug: str, options: EvaluateOptions, *, root: Path | None = None) -> Path | None:
    """``sago evaluate SLUG`` as one rank of an accelerate launch: :func:`evaluate_submission` with this
    process's rank, device and share of the CPU threads (the cores divided by the number of ranks).

    Records are byte-identical to a one-process run with the same batch size and the same thread count.
    """
    variant_set = open_variant_set(options.set_name, options.version)  # a bad --set fails first
    state = _accelerate_state()
    threads = options.threads or max(1, (os.cpu_count() or 1) // state.num_processes)
    progress = options.progress and state.is_local_main_process
    mine = replace(options, device=str(_device(state)), threads=threads, progress=progress)
    return evaluate_submission(
        slug,
        mine,
        root=root,
        ranks=_ranks(state),
        variant_set=variant_set,
        provenance=lambda: _provenance(state),
    )


def evaluate_argv(slug: str, options: EvaluateOptions) -> list[str]:
    """Command-line arguments of this module that reproduce ``options``.

    >>> evaluate_argv("m", EvaluateOptions(profile="cpu", batch_size=4, datasets=("a", "b")))[:5]
    ['m', '--set', 'sago-v1', '--version', 'v2']
    """
    # each rank picks its own device; a device map is refused with more than one process
    return [slug, *options_argv(replace(options, device=None, device_map=None))]


def launch_evaluate(slug: str, options: EvaluateOptions, *, num_processes: int) -> None:
    """Run ``slug`` on ``num_processes`` ranks through ``accelerate launch`` and wait for it."""
    command = launch_command(
        ["-m", "benchmark.harness.parallel", *evaluate_argv(slug, options)], num_processes=num_processes
    )
    if subprocess.run(command, check=False).returncode != 0:
        raise SagoError(
            f"the {num_processes}-process run of {slug} failed (see the log above); "
            "run the same command again to resume it"
        )


@click.command()
@click.argument("slug")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True)
@click.option("--profile", default="smoke", show_default=True)
@click.option("--batch-size", type=options.BATCH_SIZE, default=None)
@click.option("--datasets", default=None, help="Comma-separated subset of the set's datasets.")
@click.option("--engine", default=None, help=engine_help(ENGINES))
@click.option("--threads", type=options.THREADS, default=None, help="CPU threads per rank.")
@click.option("--force", is_flag=True)
@click.option("--no-progress", is_flag=True)
@click.option(
    "--keep-activations", is_flag=True, help="Every row's hidden-state vectors (see sago evaluate)."
)
def worker(slug: str, **flags: Any) -> None:
    """One rank of a data-parallel ``sago evaluate`` (run it through ``accelerate launch``)."""
    options = options_from_flags(**flags)
    run_file = evaluate_distributed(slug, options)
    if run_file is not None:  # only the main rank finalizes (and says when it skipped)
        click.echo(f"{slug}: wrote {run_file.parent}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return run_command(worker, argv, "python -m benchmark.harness.parallel")


if __name__ == "__main__":
    raise SystemExit(main())
