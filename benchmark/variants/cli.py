"""``sago variants``: build, verify, list, publish and download frozen variant sets."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from benchmark import options
from benchmark.documents import MANIFEST
from benchmark.errors import SagoError, visible
from benchmark.gitrepo import refuse_tracked
from benchmark.paths import VARIANTS_DIR
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.variants import llm
from benchmark.variants.frozen import load_variant_set, read_manifest
from benchmark.variants.rewriter import (
    DEFAULT_MODEL,
    HttpRewriter,
    LlamaCppRewriter,
    LocalModelRewriter,
    Rewriter,
)
from benchmark.variants.similarity import Embedder

if TYPE_CHECKING:
    from benchmark.variants.sources import Source

_set = click.option("--set", "set_name", default=DEFAULT_SET, help="Variant-set name.")
_version = click.option("--version", default=DEFAULT_SET_VERSION, help="Release version.")
_root = click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    default=VARIANTS_DIR,
    help="Folder holding <set>/<version>/.",
)
_EXISTING_FILE = click.Path(path_type=Path, dir_okay=False, exists=True)
Decorator = Callable[[Callable[..., None]], Callable[..., None]]
REWRITERS: tuple[str, ...] = ("local", "llamacpp", "http", "none")
REWRITERS_HELP = (
    "local (transformers here), llamacpp (a local llama-server, much faster on a CPU), http (an "
    "OpenAI-compatible endpoint) or none (build only: freeze without new rewrites)."
)


def _group(*options: Decorator, into: type[Sample | RewriterChoice] | None = None) -> Decorator:
    """Several click options as one decorator, applied in the order listed (so --help lists them so);
    ``into``: the command gets their values as one argument of that dataclass (named after it in
    snake case) instead of one argument per option."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @wraps(command)
        def bundled(**values: Any) -> None:
            assert into is not None
            bundle = into(**{field.name: values.pop(field.name) for field in fields(into)})
            command(**values, **{"sample" if into is Sample else "choice": bundle})

        decorated = command if into is None else bundled
        for option in reversed(options):
            decorated = option(decorated)
        return decorated

    return decorate


@dataclass(frozen=True)
class Sample:
    """Which items and LLM cells a set has, as `build` samples them (build, rewrite and coverage); each
    field is the option of its name in :data:`_sample`, whose help says what it is."""

    set_name: str
    version: str
    datasets: tuple[str, ...]
    n_items: int
    llm_items: int
    attempts: int

    def chosen(self) -> tuple[str, ...]:
        """The datasets built: those asked for, or the suite's."""
        from benchmark.variants.suites import SUITES

        return self.datasets or SUITES.get(self.set_name).datasets

    def sources(self) -> dict[str, Source]:
        """Each chosen dataset's pinned source."""
        from benchmark.variants.sources import suite_source
        from benchmark.variants.suites import SUITES

        return {name: suite_source(SUITES.get(self.set_name), name) for name in self.chosen()}


@dataclass(frozen=True)
class RewriterChoice:
    """The rewriter that makes length/form cells, and the CPU threads it (and MiniLM) may use; each field
    is the option of its name in :func:`_rewriter_options`, whose help says what it is."""

    rewriter: str
    rewriter_model: str | None
    rewriter_url: str | None
    llama_server: str | None
    threads: int

    def factory(self, batch_size: int = 16) -> Callable[[], Rewriter] | None:
        """What builds the rewriter when the first cell needs it (None: ``none``)."""
        model, url = self.rewriter_model, self.rewriter_url
        if self.rewriter == "none":
            return None
        if self.rewriter == "http":
            if not url or not model:
                raise SagoError("--rewriter http needs --rewriter-url and --rewriter-model")
            return lambda: HttpRewriter(url, model)
        if self.rewriter == "llamacpp":
            binary, threads = self.llama_server, self.threads
            return lambda: LlamaCppRewriter(model or DEFAULT_MODEL, binary=binary, threads=threads)
        return lambda: LocalModelRewriter(model or DEFAULT_MODEL, batch_size=batch_size)


_sample = _group(
    _set,
    _version,
    click.option("--dataset", "datasets", multiple=True, help="Only these datasets (repeatable)."),
    click.option("--n-items", type=options.ITEMS, default=64, help="Items sampled per dataset."),
    click.option(
        "--llm-items", type=options.SOME_ITEMS, default=16, help="Items (by rank) that get length/form."
    ),
    click.option(
        "--attempts",
        type=click.IntRange(1, 20),
        default=llm.ATTEMPTS,
        help="Candidates per LLM cell; raise it to let another rewriter retry cells a log has dropped.",
    ),
    into=Sample,
)


def _rewriter_options(default: str) -> Decorator:
    """The options of :class:`RewriterChoice`; ``default``: the rewriter a command uses unless told."""
    return _group(
        click.option(
            "--rewriter",
            type=click.Choice(REWRITERS),
            default=default,
            help=f"What writes new length/form cells: {REWRITERS_HELP} Logged rewrites are replayed first.",
        ),
        click.option("--rewriter-model", help="Packaged artefact (local) or model name (http)."),
        click.option("--rewriter-url", help="Base URL of an OpenAI-compatible endpoint (http)."),
        click.option(
            "--llama-server",
            help="llama.cpp server binary (llamacpp; default: the one `sago variants llama-server` built).",
        ),
        click.option(
            "--threads",
            type=options.THREADS,
            default=1,
            help="Torch CPU threads. 1 is fastest on a busy machine and keeps float results reproducible.",
        ),
        into=RewriterChoice,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
def variants() -> None:
    """Build, verify, publish and download frozen variant sets."""


@variants.command()
@_sample
@_root
@_rewriter_options(default="local")
@click.option(
    "--llm-budget-s",
    type=options.SECONDS,
    default=1200.0,
    help="Wall-clock budget for new LLM generation; items not reached are logged as not attempted.",
)
@click.option(
    "--embedding-cache/--no-embedding-cache",
    default=True,
    help="Reuse MiniLM vectors from the cache folder (vectors depend only on token ids).",
)
@click.option(
    "--replay",
    type=_EXISTING_FILE,
    help="Rewrite log (llm_rewrites.jsonl) to replay instead of asking the rewriter.",
)
@click.option(
    "--min-llm-coverage",
    type=options.SHARE,
    default=0.95,
    help="Refuse to freeze a set where fewer length/form cells than this share are made.",
)
@click.option(
    "--cells",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The maintainers' written length/form cells with their readings "
    "[default: variants/rewrites/<set>-<version>.cells.jsonl when it exists]; the rewriter is asked "
    "only for cells it lacks.",
)
def build(
    sample: Sample,
    root: Path,
    choice: RewriterChoice,
    llm_budget_s: float,
    embedding_cache: bool,
    replay: Path | None,
    min_llm_coverage: float,
    cells: Path | None,
) -> None:
    """Build a set from its pinned sources; on an existing release, prove the rebuild is byte-identical."""
    import torch

    from benchmark.variants.build import BuildSpec
    from benchmark.variants.families import LLM_FAMILIES
    from benchmark.variants.release import build_release

    torch.set_num_threads(choice.threads)
    committed = VARIANTS_DIR / "rewrites" / f"{sample.set_name}-{sample.version}.cells.jsonl"
    cells = cells or (committed if committed.is_file() else None)
    if cells is not None and not cells.is_file():
        raise SagoError(f"--cells {cells} does not exist")
    no_llm = choice.rewriter == "none" and cells is None
    spec = BuildSpec(
        sample.set_name,
        sample.version,
        sample.chosen(),
        n_items=sample.n_items,
        llm_items=sample.llm_items,
        llm_families=() if no_llm else LLM_FAMILIES,
        llm_budget_s=llm_budget_s,
        llm_attempts=sample.attempts,
        min_llm_coverage=0.0 if no_llm else min_llm_coverage,
        cells=cells,
    )
    embedder = _minilm(embedding_cache)
    outcome = build_release(
        spec, sample.sources(), embedder, root=root, replay_from=replay, rewriter=choice.factory()
    )
    verb = "built" if outcome.created else "rebuilt byte-identically:"
    click.echo(f"{verb} {outcome.path} (variant-set sha256 {outcome.manifest_sha256})")


@variants.command()
@_sample
@click.option(
    "--log",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Append-only rewrite log (commit it: a killed or later run resumes from it).",
)
@_rewriter_options(default="llamacpp")
@click.option("--batch-size", type=options.BATCH_SIZE, default=8, help="Requests per generate call (local).")
@click.option("--budget-s", type=options.SECONDS, help="Stop asking for new rewrites after this long.")
def rewrite(
    sample: Sample, log: Path, choice: RewriterChoice, batch_size: int, budget_s: float | None
) -> None:
    """Run the LLM stage alone (length, form), resumably; `build --replay LOG` freezes without a model."""
    import torch

    from benchmark.variants.build import LazyRewriter

    factory = choice.factory(batch_size)
    if factory is None:
        raise SagoError("--rewriter none writes nothing: choose local, llamacpp or http to grow a log")
    refuse_tracked(log, "--log", own=lambda p: is_rewrite_log(log, p), writes="a rewrite log (*.jsonl)")
    torch.set_num_threads(choice.threads)
    jobs, embedder = _llm_jobs(sample)
    log.parent.mkdir(parents=True, exist_ok=True)
    made = llm.run_jobs(
        jobs,
        LazyRewriter(factory),
        embedder,
        replay=llm.read_log(log),
        budget_s=budget_s,
        ranks_per_round=2,
        chunk=24,
        attempts=sample.attempts,
        on_fresh=lambda fresh: llm.append_log(log, fresh),
    )
    accepted = {(a.dataset, a.item_id, a.variant_id) for a in made if a.accepted}
    click.echo(f"{len(accepted)}/{len(jobs)} cells accepted ({len(made)} attempts); log {log}")


def is_rewrite_log(log: Path, tracked: str) -> bool:
    """A committed file ``--log`` may append to: a rewrite log, not the maintainers' written cells and
    not the frozen copy inside a released set (its manifest hashes it)."""
    name = Path(tracked).name
    return (
        name.endswith(".jsonl")
        and not name.endswith(".cells.jsonl")
        and not (Path(os.path.realpath(log)).parent / MANIFEST).exists()
    )


def _minilm(cached: bool = True) -> Embedder:
    """MiniLM, its vectors kept in the cache folder when ``cached``."""
    from benchmark.paths import cache_dir
    from benchmark.variants.similarity import minilm

    return minilm(cache_dir() / "embeddings" / "all-minilm-l6-v2.sqlite" if cached else None)


def _llm_jobs(sample: Sample) -> tuple[list[llm.Job], Embedder]:
    """The LLM cells of a set (as `build` samples them) and the embedder that validates rewrites."""
    from benchmark.variants.build import BuildSpec, llm_jobs, sample_items

    spec = BuildSpec(
        sample.set_name, sample.version, sample.chosen(), n_items=sample.n_items, llm_items=sample.llm_items
    )
    embedder = _minilm()
    return llm_jobs(spec, sample_items(spec, sample.sources(), embedder)), embedder


@variants.command()
@_sample
@click.option("--log", type=_EXISTING_FILE, required=True, help="The rewrite log to judge.")
def coverage(sample: Sample, log: Path) -> None:
    """Judge a rewrite log with this code's validator, without a model: accepted / tried / all cells
    per dataset and variant, and the rejection reasons (what `build --replay LOG` would freeze)."""
    jobs, embedder = _llm_jobs(sample)
    made = llm.run_jobs(
        jobs, None, embedder, replay=llm.read_log(log), replay_only=True, attempts=sample.attempts
    )
    click.echo(coverage_table(jobs, made))


def coverage_table(jobs: Sequence[llm.Job], made: Sequence[llm.Attempt]) -> str:
    """Plain-text table: per variant id and dataset, cells accepted/tried, then totals and reasons."""
    tried = {(a.dataset, a.item_id, a.variant_id) for a in made if a.rewriter}
    accepted = {(a.dataset, a.item_id, a.variant_id) for a in made if a.accepted}
    datasets = sorted({job.dataset for job in jobs})
    variant_ids = sorted({job.variant_id for job in jobs})
    lines = ["variant".ljust(20) + "".join(d[:13].rjust(14) for d in datasets)]
    for variant_id in variant_ids:
        row = variant_id.ljust(20)
        for dataset in datasets:
            cs = [job.cell for job in jobs if job.dataset == dataset and job.variant_id == variant_id]
            row += f"{sum(c in accepted for c in cs)}/{sum(c in tried for c in cs)}/{len(cs)}".rjust(14)
        lines.append(row)
    reasons = Counter(a.reason.split(" ")[0] for a in made if a.rewriter and not a.accepted)
    lines.append(
        f"accepted {len(accepted)} of {len(jobs)} cells ({len(accepted) / max(1, len(jobs)):.1%}); "
        f"tried {len(tried)}; attempts {sum(1 for a in made if a.rewriter)}"
    )
    lines.append("rejections: " + ", ".join(f"{r} {n}" for r, n in reasons.most_common()))
    return "\n".join(lines)


_expected = click.option(
    "--expected-sha256",
    metavar="HASH",
    help="The set's published hash (sha256 of manifest.json); refuse any other set.",
)
_located = _group(_set, _version, _root, _expected)
"""Which released set a command reads, and its published hash."""


@variants.command()
@_located
def verify(set_name: str, version: str, root: Path, expected_sha256: str | None) -> None:
    """Verify a set completely; exit 2 with one line naming the offending file if anything is off.

    Checks: the manifest's shape; its sha256 against --expected-sha256 (the published hash); every
    listed file's sha256; no unlisted file in the folder; every table's schema, row count, per-family
    counts and `dataset` column against the manifest.
    """
    variant_set = load_variant_set(set_name, version, root, expected_sha256=expected_sha256)
    rows = sum(entry.rows for entry in variant_set.entries.values())
    click.echo(
        f"ok {variant_set.path}: {len(variant_set.datasets)} datasets, {rows} rows, "
        f"variant-set sha256 {variant_set.sha256}"
    )


@variants.command(name="list")
@_root
def list_sets(root: Path) -> None:
    """List the sets and versions present under --root (manifests are read, files are not hashed)."""
    if not root.is_dir():
        raise SagoError(f"--root {root} is not a folder; pass the folder holding <set>/<version>/")
    manifests = sorted(root.glob(f"*/*/{MANIFEST}"))
    if not manifests:
        raise SagoError(f"no variant sets under {root}; fetch one with `sago variants download`")
    problems = []
    for manifest_path in manifests:
        try:
            manifest = read_manifest(manifest_path.parent)
        except SagoError as err:
            problems.append(err)
            continue
        name = visible(f"{manifest_path.parent.parent.name}/{manifest_path.parent.name}")  # folder names
        click.echo(f"{name}: {len(manifest.datasets)} datasets, {manifest.rows} rows")
    more = f" (and {len(problems) - 1} more broken set(s))" if len(problems) > 1 else ""
    if problems:
        raise SagoError(f"{problems[0]}{more}")


@variants.command()
@_located
@click.option("--repo-id", required=True, help="Hub dataset repo, ORG/NAME.")
@click.option("--tag", required=True, help="Release tag to create, e.g. v1.")
@click.option("--private", is_flag=True, help="Create the repo as private.")
def publish(
    set_name: str,
    version: str,
    root: Path,
    expected_sha256: str | None,
    repo_id: str,
    tag: str,
    private: bool,
) -> None:
    """Verify the set (as `verify` does), then upload it to a Hub dataset repo and tag the release."""
    from benchmark.variants.hub import publish as publish_set

    load_variant_set(set_name, version, root, expected_sha256=expected_sha256)  # nothing leaves unverified
    with _hub_errors(f"publishing to {repo_id}"):
        url = publish_set(set_name, version, repo_id, tag, root=root, private=private)
    click.echo(f"published {set_name}/{version} to {repo_id} at tag {tag}: {url}")


@variants.command()
@_located
@click.option("--repo-id", required=True, help="Hub dataset repo, ORG/NAME.")
@click.option("--revision", required=True, help="Tag or commit to fetch, e.g. v1.")
def download(
    set_name: str, version: str, root: Path, expected_sha256: str | None, repo_id: str, revision: str
) -> None:
    """Fetch a released set from the Hub into --root and verify it."""
    from benchmark.variants.hub import download as download_set

    with _hub_errors(f"downloading {repo_id}@{revision}"):
        variant_set = download_set(
            repo_id, revision, set_name, version, root=root, expected_sha256=expected_sha256
        )
    click.echo(f"downloaded and verified {variant_set.path} (variant-set sha256 {variant_set.sha256})")


@contextmanager
def _hub_errors(doing: str) -> Iterator[None]:
    """Network and Hub failures (unreachable, no such repo or revision) as one line."""
    try:
        yield
    except (OSError, ValueError) as err:  # SagoError (ours, already one line) is neither
        first = str(err).splitlines()[0][:160] if str(err) else ""
        fix = "check the repository id, the revision and the network"
        raise SagoError(f"{doing} failed ({type(err).__name__}: {first}); {fix}") from None


@variants.command("llama-server")
@click.option("--jobs", type=options.THREADS, default=2, help="Parallel compile jobs.")
def llama_server(jobs: int) -> None:
    """Build llama.cpp's server from the pinned llama-cpp-python sdist (minutes; for --rewriter llamacpp)."""
    from benchmark.variants.llamacpp import build_server

    click.echo(build_server(jobs))
