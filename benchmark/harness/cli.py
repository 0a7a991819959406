"""``sago evaluate`` and ``sago bench``."""

from __future__ import annotations

import click

from benchmark import options, paths
from benchmark.errors import SagoError
from benchmark.harness.evaluate import (
    EvaluateOptions,
    check_options,
    check_selection,
    choose_slugs,
    evaluate_submission,
)
from benchmark.harness.sets import open_variant_set
from benchmark.models.hf import ENGINES
from benchmark.options import dataset_list
from benchmark.paths import check_slug
from benchmark.profiles import PROFILES, get_profile
from benchmark.results import results_dir
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.submissions import load_submission


def _run_options(function: click.decorators.FC) -> click.decorators.FC:
    """Options shared by evaluate and bench."""
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
                help=f"Run profile: {', '.join(PROFILES.names())}.",
            ),
            click.option(
                "--device", default=None, help="torch device (default: cuda when available, else cpu)."
            ),
            click.option(
                "--batch-size",
                type=options.BATCH_SIZE,
                default=None,
                help="Prompts per batch (default on CPU: 32, 16 or 8 by model size; automatic on GPU).",
            ),
            click.option("--datasets", default=None, help="Comma-separated subset of the set's datasets."),
            click.option(
                "--engine",
                default="single_prefill",
                show_default=True,
                help="single_prefill, two_pass (reference), draft (y_0 as a free draft) or pooled (draft, "
                "each batch read as 4 micro-batches whose unfinished rows decode together: its forwards "
                "hold a quarter of --batch-size rows; fastest on a CPU).",
            ),
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


@click.command()
@click.argument("slugs", nargs=-1)
@click.option("--pending", is_flag=True, help="Every submission without complete results for the set.")
@click.option("--all", "every", is_flag=True, help="Every submission.")
@_run_options
@click.option(
    "--force",
    is_flag=True,
    help="Redo the run: discard checkpoints; existing results are replaced when the new run finishes.",
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
def evaluate(
    slugs: tuple[str, ...],
    pending: bool,
    every: bool,
    set_name: str,
    version: str,
    profile: str,
    device: str | None,
    batch_size: int | None,
    datasets: str | None,
    engine: str,
    threads: int | None,
    force: bool,
    no_progress: bool,
    num_processes: int,
    device_map: str | None,
    keep_activations: bool,
) -> None:
    """Run submissions on a variant set and store raw outputs (records, activations, run.json).

    A killed run resumes where it stopped when started again with the same options.
    """
    check_selection(slugs, pending=pending, every=every)  # cheap mistakes fail before any loading
    get_profile(profile)
    ENGINES.get(engine)
    if num_processes > 1 and device_map:
        raise SagoError("--device-map spreads one model over every GPU; use it with --num-processes 1")
    options = EvaluateOptions(
        set_name=set_name,
        version=version,
        profile=profile,
        device=device,
        batch_size=batch_size,
        datasets=dataset_list(datasets),
        engine=engine,
        threads=threads,
        force=force,
        progress=not no_progress,
        device_map=device_map,
        activations="full" if keep_activations else "compact",
    )
    variant_set = open_variant_set(set_name, version)
    check_options(options, variant_set)  # every option checked before any file is touched
    chosen = choose_slugs(slugs, pending=pending, every=every, options=options, variant_set=variant_set)
    if not chosen:
        click.echo(f"nothing to evaluate: every submission has results for {set_name}/{version}")
    for slug in chosen:
        click.echo(f"evaluating {slug} on {set_name}/{version} ({profile})")
        if num_processes > 1:
            from benchmark.harness.parallel import launch_evaluate  # accelerate only when asked for

            launch_evaluate(slug, options, num_processes=num_processes)
            continue
        run_file = evaluate_submission(slug, options, variant_set=variant_set)
        if run_file is not None:
            click.echo(f"{slug}: wrote {run_file.parent}")


@click.command()
@click.option("--model", "slug", required=True, help="Submission slug to benchmark.")
@_run_options
def bench(
    slug: str,
    set_name: str,
    version: str,
    profile: str,
    device: str | None,
    batch_size: int | None,
    datasets: str | None,
    engine: str,
    threads: int | None,
) -> None:
    """Measure prompts/s, tokens/s, peak memory and the harness/bare-model wall-time ratio."""
    from benchmark.harness.bench import bench as run_bench
    from benchmark.harness.bench import require_hf
    from benchmark.models.loading import load_backend

    chosen = get_profile(profile)
    submission = load_submission(slug, paths.SUBMISSIONS_DIR)
    variant_set = open_variant_set(set_name, version)
    check_options(
        EvaluateOptions(
            set_name=set_name,
            version=version,
            profile=profile,
            device=device,
            datasets=dataset_list(datasets),
            engine=engine,
        ),
        variant_set,
    )
    backend = require_hf(
        load_backend(submission, device=device, batch_size=batch_size, engine=engine, threads=threads)
    )
    result = run_bench(
        backend, variant_set, profile=chosen, batch_size=backend.batch_size, datasets=dataset_list(datasets)
    )
    click.echo(f"bench {slug} ({profile}, {backend.describe()['device']}, engine {backend.engine_name})")
    for line in result.lines():
        click.echo(line)


@click.command(name="checkpoint-files")
@click.argument("slugs", nargs=-1, required=True)
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version.")
def checkpoint_files(slugs: tuple[str, ...], set_name: str, version: str) -> None:
    """Print the finished checkpoint files of running or stopped evaluations, one path per line.

    A long run commits them as they finish (`git add -f $(sago checkpoint-files SLUG --version v2)`), so a
    fresh clone resumes it where it stopped; a committed, unmodified checkpoint is the only one besides
    this machine's own that `sago evaluate` resumes.
    """
    from benchmark.harness.checkpoint import PartStore
    from benchmark.results import ResultsFolder
    from benchmark.variants.frozen import MANIFEST, set_dir

    if not (set_dir(set_name, version) / MANIFEST).is_file():  # a typo is an error, not an empty list
        raise SagoError(
            f"no variant set {set_name}/{version} under variants/; pass a set `sago variants list` shows"
        )
    for slug in slugs:
        folder = ResultsFolder(results_dir(check_slug(slug), set_name, version, paths.SUBMISSIONS_DIR))
        for rank in sorted(folder.checkpoint.glob("rank-*")) if folder.checkpoint.is_dir() else []:
            for path in PartStore(rank).finished_files():
                click.echo(path.relative_to(paths.REPO_ROOT).as_posix())
