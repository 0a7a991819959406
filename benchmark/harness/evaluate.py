"""Evaluate one submission on one variant set: load → collect → finalize, reading top to bottom."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import click

from benchmark import paths
from benchmark.chat_api import ChatClient, ChatSettings
from benchmark.documents import PlanDocument
from benchmark.endpoints import endpoint_refusal, guarded_connector, is_local_form
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.harness.checkpoint import PartStore
from benchmark.harness.collect import (
    ONE_PROCESS,
    PLANNER,
    PLANNERS,
    ParallelRun,
    Ranks,
    collect,
    global_batches,
    second_worker,
    select_tasks,
    started_run,
)
from benchmark.harness.finalize import finalize
from benchmark.harness.sets import VariantSetLike, open_variant_set
from benchmark.models.api import CACHE_FILE as API_CACHE_FILE
from benchmark.models.api import ApiBackend
from benchmark.models.protocol import ModelBackend
from benchmark.options import dataset_list
from benchmark.paths import check_slug
from benchmark.profiles import Profile, get_profile
from benchmark.results import PLAN_FILE, ResultsFolder, results_dir
from benchmark.schema import DEFAULT_SEED, DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.submissions import ApiModel, list_slugs, load_submission

if TYPE_CHECKING:
    from benchmark.models.hf import HFBackend
    from benchmark.models.loading import ModelChoice  # torch: imported only where a model loads

# Values transformers/accelerate accept for ``device_map`` as a string.
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")
# What ``--out`` copies beside a scratch result: the file `load_submission` reads.
SUBMISSION_FILE = "submission.yaml"


@dataclass(frozen=True)
class EvaluateOptions:
    """How to run (the ``sago evaluate`` flags)."""

    set_name: str = DEFAULT_SET
    """variant set name."""
    version: str = DEFAULT_SET_VERSION
    """variant set version."""
    profile: str = "smoke"
    """profile name (see ``benchmark.profiles``)."""
    device: str | None = None
    """torch device; default CUDA when available."""
    batch_size: int | None = None
    """prompts per forward (``--batch-size``); default 32, 16 or 8 by model size on CPU, 64 halved on
    out-of-memory on GPU. A planned batch holds that many times the engine's forwards per call
    (:func:`planned_batch_size`: 4 for the pooled engine, 1 for the others)."""
    datasets: tuple[str, ...] | None = None
    """subset of the set's datasets; default all."""
    engine: str | None = None
    """engine name; None: the device's default (``benchmark.models.hf.default_engine``: pooled on a CPU,
    single_prefill elsewhere), or, resuming a stopped run, the engine its checkpoint was started with."""
    threads: int | None = None
    """CPU threads for torch; default all cores."""
    force: bool = False
    """redo the run: discard a checkpoint of other options (one of the same run is resumed); results are
    replaced only once the new run finished."""
    progress: bool = True
    """show progress bars."""
    device_map: str | None = None
    """e.g. "auto": shard one model over all visible GPUs (see ``load_backend``)."""
    activations: str = "compact"
    """"compact" (default): baselines keep their hidden-state vectors, every other row its per-layer
    cosine to them (all the activation measures need; ~1/500 of the size); "full"
    (``--keep-activations``): every row's vectors, as results made before compact storage have."""
    planner: int = PLANNER
    """the batch planner (``collect.PLANNER``); a re-run of a committed result uses the one it records."""
    second_worker: bool = False
    """``--second-worker``: help a started one-process run from its last unfinished variant batch
    backwards (:func:`benchmark.harness.collect.second_worker`); never writes the results."""


def options_from_flags(
    *, datasets: str | None, no_progress: bool, keep_activations: bool, **flags: Any
) -> EvaluateOptions:
    """The options a command's parsed flags say: ``--datasets a,b``, ``--no-progress``,
    ``--keep-activations`` and the options named as :class:`EvaluateOptions` names them."""
    activations = "full" if keep_activations else "compact"
    return EvaluateOptions(
        datasets=dataset_list(datasets), progress=not no_progress, activations=activations, **flags
    )


def options_argv(options: EvaluateOptions) -> list[str]:
    """The flags of ``sago evaluate`` (and of the parallel worker) that give ``options`` back.

    >>> options_argv(EvaluateOptions(profile="cpu", batch_size=4, force=True))[-4:]
    ['cpu', '--batch-size', '4', '--force']
    >>> options_argv(EvaluateOptions(engine="single_prefill"))[6:8]
    ['--engine', 'single_prefill']
    """
    argv = ["--set", options.set_name, "--version", options.version, "--profile", options.profile]
    for flag, value in (
        ("--engine", options.engine),  # none: each process takes its device's default
        ("--batch-size", options.batch_size),
        ("--threads", options.threads),
        ("--datasets", ",".join(options.datasets) if options.datasets else None),
        ("--device", options.device),
        ("--device-map", options.device_map),
    ):
        if value is not None:
            argv += [flag, str(value)]
    flags = ["--force"] * options.force + ["--no-progress"] * (not options.progress)
    return argv + flags + ["--keep-activations"] * (options.activations == "full")


class Given(TypedDict, total=False):
    """What a caller may hand :func:`evaluate_submission` and :func:`evaluate_model` ready-made."""

    backend: ModelBackend | None
    """an already loaded model (tests, benchmarks); default: load the submission's."""
    variant_set: VariantSetLike | None
    """an already opened set; default: ``open_variant_set(options.set_name, options.version)``."""
    ranks: Ranks
    """this process's place in a data-parallel run (see ``benchmark.harness.parallel``); default one
    process."""
    provenance: Callable[[], ParallelRun] | None
    """how a parallel launch ran (run.json's ``parallel``), asked for when the run is finalized."""


def evaluate_submission(
    slug: str, options: EvaluateOptions, *, root: Path | None = None, **given: Unpack[Given]
) -> Path | None:
    """Run submission ``slug`` of ``root`` (default ``paths.SUBMISSIONS_DIR``) and write its results;
    resumes from a checkpoint when one exists. ``given``: what the caller hands over ready-made.

    Returns:
        The run.json path; None when complete results existed and ``force`` was off, and on every
        rank but the main one.
    """
    root = root or paths.SUBMISSIONS_DIR
    submission = load_submission(slug, root)
    out = run_folder(slug, options, root, api=isinstance(submission.model, ApiModel))
    return evaluate_model(submission, options, out, label=slug, **given)


def local_backend(submission: ModelChoice, options: EvaluateOptions, **more: Any) -> HFBackend:
    """The submission's weights loaded as the run options say (``more``: other arguments of
    ``load_backend``), with what the engine keeps per model built (the pooled engine's float16 output
    layer: a one-time cost, like loading, kept out of the first batch's time); torch and transformers
    are imported only here."""
    from benchmark.models.loading import load_backend

    backend = load_backend(
        submission,
        device=options.device,
        batch_size=options.batch_size,
        engine=options.engine,
        threads=options.threads,
        device_map=options.device_map,
        **more,
    )
    backend.prepare()
    return backend


def run_folder(slug: str, options: EvaluateOptions, root: Path, *, api: bool = False) -> Path:
    """Where this run of ``slug`` goes: ``<version>/`` for the version's board profile,
    ``<version>-<profile>/`` for any other (:func:`benchmark.results.results_dir`). An API model's run
    stays in ``<version>/`` whatever its profile: it is shown only in the API table, which states each
    row's profile and ranks nothing."""
    profile = None if api else options.profile
    return results_dir(slug, options.set_name, options.version, root, profile=profile)


def evaluate_model(
    submission: ModelChoice | None,
    options: EvaluateOptions,
    out: Path,
    *,
    label: str,
    backend: ModelBackend | None = None,
    variant_set: VariantSetLike | None = None,
    ranks: Ranks = ONE_PROCESS,
    provenance: Callable[[], ParallelRun] | None = None,
) -> Path | None:
    """:func:`evaluate_submission` for a model described in memory, writing its results into ``out``.

    ``label`` names the run in messages and in run.json's ``submission``; ``submission`` may be None
    when ``backend`` is given (run.json then records the backend's name as the model). The other
    arguments are :func:`evaluate_submission`'s.
    """
    if submission is None and backend is None:
        raise SagoError(f"{label}: nothing to run; pass a model to load or a loaded backend")
    profile = get_profile(options.profile)
    variant_set = variant_set or open_variant_set(options.set_name, options.version)
    # Everything that can be wrong with the options or the set fails here, before any file is touched.
    check_options(options, variant_set)
    select_tasks(variant_set, profile, options.datasets)  # a corrupted set fails before the model loads
    model = submission.model if submission is not None else None
    if backend is None and not options.second_worker and isinstance(model, ApiModel):
        # an API model that would send a key outside the rule or reach a non-public address is refused
        # (:mod:`benchmark.endpoints`) before a file is touched or anything is sent, unless a finished run
        # makes this a skip (a second worker of an API run is refused below)
        problem = endpoint_refusal(model.base_url, model.key_env)
        if problem and (
            options.force or not has_finished_run(out, variant_set.sha256, profile, options.datasets)
        ):
            raise SagoError(f"{label}: refused to send requests: {problem}")
    if _nothing_to_do(out, options, profile, variant_set.sha256, ranks, label):
        return None
    extra: dict[str, object] = dict(provenance().run_json()) if provenance else {}
    if options.second_worker:  # refused before a model loads
        started_run(out)
        if isinstance(model, ApiModel) or isinstance(backend, ApiBackend):
            raise SagoError(f"{label}: --second-worker is for local models; an API run waits on its endpoint")
    stored = checkpoint_plan(out)  # read once: the planner and engine a plain restart keeps
    if backend is None and isinstance(model, ApiModel):
        backend = api_backend_for(model, options)
    if isinstance(backend, ApiBackend):
        backend.attach_cache(ResultsFolder(out).checkpoint / API_CACHE_FILE)
        extra = {**extra, "not_measured": api_not_measured()}
    if backend is None:
        assert submission is not None  # checked above
        options = replace(options, engine=resumed_engine(stored, options))
        # a GPU row's memory, so its batch size, depends on the profile's token limit
        backend = local_backend(submission, options, max_new_tokens=profile.max_new_tokens)
    settings: dict[str, Any] = {
        "profile": profile,
        "batch_size": planned_batch_size(options, backend),
        "datasets": options.datasets,
        "seed": DEFAULT_SEED,
        "run_info": _run_info(label, options, submission, backend.name),
        "progress": options.progress,
        "activations": options.activations,
        "planner": resumed_planner(stored, options),
    }
    if options.second_worker:
        done = second_worker(backend, variant_set, out, **settings)
        click.echo(
            f"{label}: the second worker ran {done.batches_run} variant batches and met finished ones; "
            "the run's own process writes the results (restart it if it stopped)",
            err=True,
        )
        return None
    collect(backend, variant_set, out, ranks=ranks, force=options.force and ranks.world_size == 1, **settings)
    ranks.barrier()
    if not ranks.is_main:
        return None
    return finalize(out, world_size=ranks.world_size, extra=extra or None)


def scratch_root(out: Path) -> Path:
    """The submissions folder ``sago evaluate --out OUT`` writes: ``OUT/submissions``, laid out like the
    checkout's (``OUT/leaderboard.json`` and ``OUT/site`` then sit beside it, as in the checkout), and never
    the checkout's submissions folder or anything in it (a trial run must not replace a committed result)."""
    workspace = Path(os.path.abspath(out.expanduser()))
    if workspace.exists() and not workspace.is_dir():
        raise SagoError(f"--out {out}: is a file, not a folder; pass a folder or a new path")
    target = workspace / "submissions"
    submissions = paths.SUBMISSIONS_DIR.resolve()
    if target.resolve().is_relative_to(submissions):  # the folder itself included
        raise SagoError(
            f"--out {out}: its submissions folder would be {submissions}, where the committed results "
            "live; pass a scratch folder such as .scratch/run (leave --out off to write the submission's "
            "own results)"
        )
    # nothing git tracks is overwritten (a tracked submissions-like folder elsewhere: a test fixture)
    refuse_tracked(target, "--out", own=lambda _: False, writes="a scratch run under OUT/submissions/")
    target.mkdir(parents=True, exist_ok=True)
    return target


def copy_submission(slug: str, root: Path) -> None:
    """Put ``slug``'s submission.yaml under ``root`` (refreshed each run), so the scratch root reads
    like the submissions folder for ``sago analyze --submissions-dir`` and the site's build."""
    source = paths.SUBMISSIONS_DIR / check_slug(slug) / SUBMISSION_FILE
    folder = root / slug
    folder.mkdir(exist_ok=True)
    shutil.copyfile(source, folder / SUBMISSION_FILE)


def kept_batches(out: Path, options: EvaluateOptions, variant_set: VariantSetLike) -> str:
    """What a stopped one-process run left in ``out``'s checkpoint: ``12 of 40 batches``."""
    stored = checkpoint_plan(out)
    if stored is None:
        return "no finished batch"
    batch_size, planner = stored.get("batch_size"), stored.get("planner", 1)
    tasks = select_tasks(variant_set, get_profile(options.profile), options.datasets)
    # a count only: a planner cuts as many batches whatever length it sorts by
    plan = global_batches(tasks, batch_size, planner=planner) if isinstance(batch_size, int) else None
    total = len(plan.baselines) + len(plan.rest) if plan else None
    finished = len(PartStore(ResultsFolder(out).checkpoint / "rank-0").finished())
    return f"{finished} of {total} batches" if total else f"{finished} finished batches"


def checkpoint_plan(out: Path) -> Mapping[str, Any] | None:
    """The plan.json of a stopped one-process run in ``out`` (rank 0; a plan without ``planner`` was cut
    by planner 1), or None."""
    store = PartStore(ResultsFolder(out).checkpoint / "rank-0")
    return PlanDocument.read(store.folder / PLAN_FILE).to_json() if store.planned() else None


def resumed_planner(stored: Mapping[str, Any] | None, options: EvaluateOptions) -> int:
    """The planner of a stopped run's checkpoint (its plan.json, ``stored``) when this run resumes it,
    else ``options.planner``.

    A checkpoint started before planner 2 existed (a long run across a ``git pull``) has its batches cut
    by planner 1; resuming it with the new default would be refused, and ``--force`` would throw its
    finished batches (and an API run's paid replies) away. So a plain restart keeps the planner that cut
    the checkpoint; ``--force`` and an explicit planner (a re-run of a committed result) keep their own.
    """
    if options.force or options.planner != PLANNER:
        return options.planner
    planner = options.planner if stored is None else stored.get("planner", 1)
    return planner if planner in PLANNERS else options.planner


def resumed_engine(stored: Mapping[str, Any] | None, options: EvaluateOptions) -> str | None:
    """The engine of a stopped run's checkpoint (its plan.json, ``stored``) when this run names none and
    resumes it, else ``options.engine`` (None: the device's default, ``benchmark.models.hf.default_engine``).

    A run started before the default changed (single_prefill to pooled on a CPU) recorded its engine in
    plan.json; a plain restart with the new default would be refused as a different run, and ``--force``
    would throw its finished batches away. So a restart keeps the engine that started the checkpoint;
    ``--force`` and a named engine keep their own.
    """
    from benchmark.models.hf import ENGINES  # torch: only where a model loads

    if options.force or options.engine is not None:
        return options.engine
    engine = (stored or {}).get("model", {}).get("engine")
    # a declined engine is recorded as "two_pass (... declined: ...)": the default declines the same way
    return engine if isinstance(engine, str) and engine in ENGINES.names() else None


def planned_batch_size(options: EvaluateOptions, backend: ModelBackend) -> int:
    """Prompts per planned batch (plan.json's and run.json's ``batch_size``): the backend's prompts per
    engine call. ``--batch-size`` is prompts per forward; an engine that cuts each call into several
    forwards (the pooled engine: 4 micro-batches) takes that many times as many prompts per batch, so a
    pooled run of ``--batch-size 8`` plans batches of 32, each read as 4 forwards of 8 rows."""
    if options.batch_size is None:
        return backend.batch_size
    spec = getattr(backend, "engine_spec", None)  # only a Hugging Face backend has an engine
    return options.batch_size * (spec.forwards_per_call if spec is not None else 1)


def api_backend_for(model: ApiModel, options: EvaluateOptions) -> ApiBackend:
    """The backend of an ``api`` submission; options meaning something only for local weights are refused."""
    for flag, value in (
        ("--device", options.device),
        ("--device-map", options.device_map),
        ("--threads", options.threads),
    ):
        if value is not None:
            raise SagoError(f"{flag} does not apply to an API model (it runs on the endpoint's machines)")
    if options.engine is not None:
        raise SagoError("--engine does not apply to an API model (the endpoint decodes)")
    # refuse_unsafe_endpoint has checked the URL and key; a missing key fails in ChatClient
    settings = ChatSettings(model.base_url, model.model, model.key_env)
    client = ChatClient(settings, connect=guarded_connector(local=is_local_form(model.base_url)))
    backend = ApiBackend(settings, snapshot=model.snapshot, concurrency=model.concurrency, client=client)
    if options.batch_size:
        backend.batch_size = options.batch_size
    return backend


def api_not_measured() -> dict[str, str]:
    """run.json's ``not_measured`` of an API run: every measure that needs the weights."""
    from benchmark.axes.measures import model_measures

    why = "an API endpoint shows no hidden states and scores no given continuation"
    return {name: why for name in model_measures()}


def _nothing_to_do(
    out: Path, options: EvaluateOptions, profile: Profile, sha256: str, ranks: Ranks, label: str
) -> bool:
    """With --force, discard an old checkpoint (and go on); else whether this run's results exist."""
    if options.force:
        # One process decides per checkpoint once its plan is known (collect keeps one of this same run);
        # ranks of a parallel run start clean. Committed results stay until finalize() swaps the new in.
        if ranks.world_size > 1:
            if ranks.is_main:
                shutil.rmtree(ResultsFolder(out).checkpoint, ignore_errors=True)
            ranks.barrier()
        return False
    if not has_finished_run(out, sha256, profile, options.datasets):
        refuse_replacing_another_run(out, label, profile.name)
        return False
    if ranks.is_main:
        click.echo(
            f"{label}: results for {options.set_name}/{options.version} ({profile.name}) exist; "
            f"skipped (use --force to redo{_scratch_hint(out)})",
            err=True,
        )
    return True


def _run_info(
    label: str, options: EvaluateOptions, submission: ModelChoice | None, backend_name: str
) -> dict[str, object]:
    """What run.json says about the request: who was run, on which set and datasets, from which source."""
    return {
        "submission": label,
        "set": options.set_name,
        "version": options.version,
        "datasets": sorted(options.datasets) if options.datasets else "all",
        "submission_model": (
            submission.model.model_dump()
            if submission is not None
            else {"kind": "backend", "name": backend_name}
        ),
        "chat_template_setting": submission.chat_template if submission is not None else None,
    }


def refuse_replacing_another_run(out: Path, label: str, profile: str) -> None:
    """Without --force, a finished run of another profile, set or dataset selection in ``out`` is never
    replaced. A run of another profile has a folder of its own (``<version>-<profile>/``), so this guards
    ``--out`` folders and dataset selections; it stays for any folder that holds another run."""
    folder = ResultsFolder(out)
    if not folder.run.is_file():
        return
    try:
        run = folder.read_run()
    except SagoError:
        return  # unreadable: nothing a reader could use is lost by redoing it
    chosen = "all datasets" if run.all_datasets else ", ".join(run.datasets or ())
    raise SagoError(
        f"{label}: {out} holds a finished {run.profile_name or 'unnamed'}-profile run ({chosen}, variant "
        f"set {str(run.variant_set_sha256)[:12]}) that this {profile}-profile run would replace; pass "
        f"--profile {run.profile_name} to keep it, or --force to replace it{_scratch_hint(out)}"
    )


def _scratch_hint(out: Path) -> str:
    """``, or --out DIR ...`` where ``out`` is a submission's own results: the harmless way to try."""
    if not out.resolve().is_relative_to(paths.SUBMISSIONS_DIR.resolve()):
        return ""
    return ", or --out DIR for a trial run in a scratch folder that leaves the committed results alone"


def has_finished_run(
    out: Path, variant_set_sha256: str, profile: Profile, datasets: Sequence[str] | None = None
) -> bool:
    """True when ``out`` holds a finished run of this set, profile and dataset selection (nothing to redo)."""
    return ResultsFolder(out).holds_run_of(
        variant_set_sha256=variant_set_sha256, profile=profile.name, datasets=datasets
    )


def check_options(options: EvaluateOptions, variant_set: VariantSetLike) -> None:
    """Refuse any option that would fail later (after files were touched or the model loaded)."""
    get_profile(options.profile)
    unknown = sorted(set(options.datasets or ()) - set(variant_set.datasets))
    if unknown:
        raise SagoError(
            f"--datasets: unknown dataset {unknown[0]!r}; {options.set_name}/{options.version} "
            f"has {', '.join(variant_set.datasets)}"
        )
    if options.device_map is not None and options.device_map not in DEVICE_MAPS:
        raise SagoError(
            f"--device-map {options.device_map!r} is not supported; use one of {', '.join(DEVICE_MAPS)}"
        )
    if options.device is not None:
        check_device(options.device)


def check_device(name: str) -> None:
    """Refuse a device torch does not know or this machine does not have."""
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError, TypeError):
        raise SagoError(f"--device {name!r} is not a torch device; use cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise SagoError(f"--device {name!r}: no CUDA GPU is visible on this machine; use --device cpu")
        if device.index is not None and device.index >= count:
            raise SagoError(f"--device {name!r}: only {count} GPU(s) visible (cuda:0..cuda:{count - 1})")
    elif device.type != "cpu":
        raise SagoError(f"--device {name!r}: only cpu and cuda devices are supported")


def check_selection(slugs: Sequence[str], *, pending: bool, every: bool) -> None:
    """Exactly one way of choosing submissions must be used."""
    if bool(slugs) + pending + every != 1:
        raise SagoError("name submissions, or pass exactly one of --pending / --all")


def choose_slugs(
    slugs: Sequence[str],
    *,
    pending: bool,
    every: bool,
    options: EvaluateOptions,
    root: Path | None = None,
    variant_set: VariantSetLike | None = None,
) -> list[str]:
    """The submissions a command names: explicit slugs, ``--all``, or ``--pending``.

    Every chosen submission is validated before any model runs, so a broken file fails fast.
    """
    check_selection(slugs, pending=pending, every=every)
    root = root or paths.SUBMISSIONS_DIR
    chosen = list(slugs) if slugs else list_slugs(root)
    for slug in chosen:
        load_submission(slug, root)
    if not pending:
        return chosen
    profile = get_profile(options.profile)
    sha = (variant_set or open_variant_set(options.set_name, options.version)).sha256
    return [
        s
        for s in chosen
        if not has_finished_run(
            run_folder(s, options, root, api=isinstance(load_submission(s, root).model, ApiModel)),
            sha,
            profile,
            options.datasets,
        )
    ]
