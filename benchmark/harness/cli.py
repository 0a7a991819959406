"""``sago evaluate`` and ``sago checkpoint-files`` (``sago bench`` is a performance tool:
``benchmark/tools/bench.py``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from benchmark import options, paths
from benchmark.endpoints import LOCAL_ENDPOINT_ENV
from benchmark.errors import SagoError
from benchmark.harness.evaluate import (
    EvaluateOptions,
    check_options,
    check_selection,
    choose_slugs,
    copy_submission,
    evaluate_submission,
    kept_batches,
    options_argv,
    options_from_flags,
    run_folder,
    scratch_root,
)
from benchmark.harness.sets import VariantSetLike, checked_frame, open_variant_set
from benchmark.models.engine import EngineSpec
from benchmark.models.hf import ENGINES, engine_help
from benchmark.paths import check_slug
from benchmark.profiles import BOARD_PROFILES, PROFILES, Profile, board_profile, get_profile, rows_run
from benchmark.registry import Registry
from benchmark.results import LEADERBOARD_FILE
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION


def run_options(function: click.decorators.FC) -> click.decorators.FC:
    """Options shared by evaluate and ``sago bench`` (each adds its own --engine)."""
    for option in reversed(
        (
            click.option(
                "--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name."
            ),
            click.option(
                "--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version."
            ),
            click.option(
                "--profile",
                default="smoke",
                show_default=True,
                help="Run profile (how much of the set runs; README 'Profiles' counts the model runs "
                f"each makes): {'; '.join(PROFILES.get(n).summary() for n in PROFILES.names())}. "
                "A run of the version's board profile "
                f"({', '.join(f'{v}: {p}' for v, p in sorted(BOARD_PROFILES.items()))}) goes to "
                "results/<set>/<version>/, a run of any other to results/<set>/<version>-<profile>/ "
                "(so the default smoke run on v2 writes v2-smoke/ beside the committed evidence run).",
            ),
            click.option(
                "--device", default=None, help="torch device (default: cuda when available, else cpu)."
            ),
            click.option(
                "--batch-size",
                type=options.BATCH_SIZE,
                default=None,
                help="Prompts per forward (default on CPU: 32, 16 or 8 by model size; automatic on GPU). "
                "The pooled engine, the CPU default, reads each batch of the plan (run.json's batch_size) "
                "as 4 such forwards.",
            ),
            click.option("--datasets", default=None, help="Comma-separated subset of the set's datasets."),
            click.option(
                "--threads",
                type=options.THREADS,
                default=None,
                help="CPU threads for torch (default: all cores).",
            ),
        )
    ):
        function = option(function)
    return function


def engine_option(engines: Registry[EngineSpec]) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """``--engine``, with every engine of ``engines`` in its help."""
    return click.option("--engine", default=None, help=engine_help(engines))


@click.command()
@click.argument("slugs", nargs=-1)
@click.option("--pending", is_flag=True, help="Every submission without complete results for the set.")
@click.option("--all", "every", is_flag=True, help="Every submission.")
@run_options
@engine_option(ENGINES)
@click.option(
    "--force",
    is_flag=True,
    help="Redo the run: discard a checkpoint of other options (one of these same options is resumed; "
    "delete its checkpoint/ folder to start that from zero); existing results are replaced when the new "
    "run finishes.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Scratch folder laid out like the checkout: results go to OUT/submissions/<slug>/results/<set>/"
    "<version>/ beside a copy of submission.yaml and resume there; the committed results are never "
    "touched. The run prints the analyze and leaderboard commands for OUT.",
)
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@click.option(
    "--num-processes",
    type=options.PROCESSES,
    default=1,
    show_default=True,
    help="Data-parallel ranks (accelerate launch; one GPU each, or CPU shares over gloo).",
)
@click.option("--device-map", default=None, help='"auto": shard a model too big for one GPU over all GPUs.')
@click.option(
    "--keep-activations",
    is_flag=True,
    help="Keep every row's hidden-state vectors (large; never committed). Default: baselines keep "
    "their vectors, every other row its per-layer cosine to them, which is all the measures need.",
)
@click.option(
    "--second-worker",
    is_flag=True,
    help="Help a started one-process run of one submission (same options) from its last unfinished "
    "variant batch backwards, in a second process on another core; stops where the two meet and never "
    "writes the results (the run's own process does). The batches, and so the bytes, are the run's own.",
)
def evaluate(
    slugs: tuple[str, ...], pending: bool, every: bool, out: Path | None, num_processes: int, **flags: Any
) -> None:
    """Run submissions on a variant set and store raw outputs (records, activations, run.json).

    A killed run resumes where it stopped when started again with the same options (--force included);
    Ctrl-C prints the batches kept and that command.
    """
    check_selection(slugs, pending=pending, every=every)  # cheap mistakes fail before any loading
    options = options_from_flags(**flags)
    get_profile(options.profile)
    if options.engine is not None:  # None: the device's default, resolved where the model loads
        ENGINES.get(options.engine)
    if num_processes > 1 and options.device_map:
        raise SagoError("--device-map spreads one model over every GPU; use it with --num-processes 1")
    if options.second_worker and (options.force or num_processes > 1 or pending or every or len(slugs) != 1):
        raise SagoError(
            "--second-worker helps one started one-process run: name one submission, without --force, "
            "--pending, --all or --num-processes"
        )
    if out is not None and (pending or num_processes > 1):
        raise SagoError(
            "--out takes named submissions (or --all) in one process; --pending and --num-processes "
            "read and write the submissions folder"
        )
    set_name, version, profile = options.set_name, options.version, options.profile
    variant_set = open_variant_set(set_name, version)
    check_options(options, variant_set)  # every option checked before any file is touched
    chosen = choose_slugs(slugs, pending=pending, every=every, options=options, variant_set=variant_set)
    if not chosen:
        click.echo(f"nothing to evaluate: every submission has results for {set_name}/{version}")
    root = None if out is None else scratch_root(out)
    runs = planned_runs(variant_set, get_profile(profile), options.datasets)
    for slug in chosen:
        if root is not None:
            copy_submission(slug, root)
        click.echo(f"evaluating {slug} on {set_name}/{version} ({profile}: {runs:,} model runs)")
        if num_processes > 1:
            from benchmark.harness.parallel import launch_evaluate  # accelerate only when asked for

            launch_evaluate(slug, options, num_processes=num_processes)
            continue
        try:
            run_file = evaluate_submission(slug, options, root=root, variant_set=variant_set)
        except KeyboardInterrupt:
            out_dir = run_folder(slug, options, root or paths.SUBMISSIONS_DIR)
            kept = kept_batches(out_dir, options, variant_set)
            click.echo(
                f"\ninterrupted: kept {kept} in {out_dir}; resume with: {resume_command(slug, options, out)}",
                err=True,
            )
            raise
        if run_file is not None:
            click.echo(f"{slug}: wrote {run_file.parent}")
    if out is not None and chosen:
        click.echo(scratch_next_steps(out, set_name, version, profile))


def resume_command(slug: str, options: EvaluateOptions, out: Path | None) -> str:
    """The command that resumes ``slug``'s stopped run: the options its plan depends on, as given (with
    --force too, which keeps a checkpoint of the same run)."""
    words = ["sago", "evaluate", slug, *options_argv(replace(options, progress=True))]
    return shlex.join(words + (["--out", str(out)] if out is not None else []))


def scratch_next_steps(out: Path, set_name: str, version: str, profile: str | None = None) -> str:
    """The two commands that turn a scratch result into a board and a site, beside it in ``out``
    (``--profile`` named when the run is not of the version's board profile)."""
    chosen = f"--set {set_name} --version {version}"
    # only analyze takes --profile: the board it writes names its profile, which the site build reads
    profiled = chosen + (f" --profile {profile}" if profile and profile != board_profile(version) else "")
    submissions, board, site = out / "submissions", out / LEADERBOARD_FILE, out / "site"
    return (
        f"next: sago analyze {profiled} --submissions-dir {submissions} --out {board}\n"
        f"then: sago leaderboard build {chosen} --input {board} --submissions {submissions} --out {site}"
    )


def planned_runs(variant_set: VariantSetLike, profile: Profile, datasets: tuple[str, ...] | None) -> int:
    """How many model runs the profile makes on the chosen datasets (said before a long run starts)."""
    names = datasets or variant_set.datasets
    return rows_run([checked_frame(variant_set, name) for name in names], profile)


@click.command(name="checkpoint-files")
@click.argument("slugs", nargs=-1, required=True)
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version.")
@click.option(
    "--profile",
    default=None,
    help="The run's profile (default: the version's board profile; another profile's run is in "
    "<version>-<profile>/).",
)
def checkpoint_files(slugs: tuple[str, ...], set_name: str, version: str, profile: str | None) -> None:
    """Print the finished checkpoint files of running or stopped evaluations, one path per line.

    A long run commits them as they finish (`git add -f $(sago checkpoint-files SLUG --version v2)`), so a
    fresh clone resumes it where it stopped; a committed, unmodified checkpoint is the only one besides
    this machine's own that `sago evaluate` resumes.
    """
    from benchmark.documents import MANIFEST
    from benchmark.harness.checkpoint import PartStore
    from benchmark.results import ResultsFolder
    from benchmark.variants.frozen import set_dir

    if not (set_dir(set_name, version) / MANIFEST).is_file():  # a typo is an error, not an empty list
        raise SagoError(
            f"no variant set {set_name}/{version} under variants/; pass a set `sago variants list` shows"
        )
    for slug in slugs:
        folder = ResultsFolder.of(check_slug(slug), set_name, version, paths.SUBMISSIONS_DIR, profile=profile)
        for rank in sorted(folder.checkpoint.glob("rank-*")) if folder.checkpoint.is_dir() else []:
            for path in PartStore(rank).finished_files():
                click.echo(path.relative_to(paths.REPO_ROOT).as_posix())


@click.command(name="serve", context_settings={"ignore_unknown_options": True})
@click.argument("artefact")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.option(
    "--port", type=click.IntRange(1024, 65535), default=8094, show_default=True, help="Loopback port."
)
@click.option("--threads", type=options.THREADS, default=1, show_default=True, help="llama.cpp threads.")
@click.option(
    "--slots", type=click.IntRange(1, 64), default=2, show_default=True, help="Requests decoded together."
)
def serve(artefact: str, command: tuple[str, ...], port: int, threads: int, slots: int) -> None:
    """Serve the packaged ARTEFACT over the OpenAI-compatible protocol on 127.0.0.1:PORT (llama.cpp's
    llama-server, built by `sago variants llama-server`) while COMMAND runs, then stop it.

    Example: sago serve smollm2-135m-instruct-q4_1 -- sago evaluate
    huggingfacetb__smollm2-135m-instruct-q4_1-llama-server --profile smoke
    """
    import subprocess

    from benchmark.packaged import ARTEFACTS
    from benchmark.variants.llamacpp import served

    if artefact not in ARTEFACTS.names():
        raise SagoError(f"unknown packaged artefact {artefact!r}; one of {', '.join(ARTEFACTS.names())}")
    argv = list(command[1:] if command and command[0] == "--" else command)
    if argv and argv[0] == "sago":  # the same interpreter and checkout as this command
        import sys

        argv = [sys.executable, "-m", "benchmark", *argv[1:]]
    with served(artefact, port=port, threads=threads, slots=slots) as url:
        click.echo(f"serving {artefact} at {url}", err=True)
        # the command may send keyless requests to this one local address (benchmark.endpoints)
        env = {**os.environ, LOCAL_ENDPOINT_ENV: url}
        code = subprocess.run(argv, check=False, env=env).returncode
    if code:
        raise SystemExit(code)
