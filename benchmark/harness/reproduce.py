"""``make reproduce MODEL=<slug> PROFILE=<name>``: re-run a committed result and diff it.

The run is repeated with the committed run.json's own settings (profile, batch size, engine, torch
threads, datasets, device) into a temporary submissions folder, so nothing committed is touched. Then
every records parquet and activations file is compared byte for byte, and run.json on the fields that
determine outputs; files that differ are checked against the float tolerances below. Exit status 0
when everything is identical or within tolerance, 1 on a failure (one line each), 2 on bad input.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from benchmark import cpu, options, paths
from benchmark.documents import RunDocument
from benchmark.entry import run_command
from benchmark.errors import SagoError, visible
from benchmark.profiles import board_profile
from benchmark.results import ResultsFolder, results_dir
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.submissions import load_submission

if TYPE_CHECKING:
    from benchmark.harness.evaluate import EvaluateOptions

_OUTPUT_GLOBS = ("records/*.parquet", "activations/*.safetensors")
# Float noise a re-run on another CPU may show even under the harness's CPU setting. Everything else —
# responses, token counts, finished flags, keys, shapes — must be equal exactly. Each tolerance is a bound,
# not one pair of machines' difference: two correct float32 runs a32, b32 of the same computation are both
# near its float64 value x64, so |a32 - b32| <= |a32 - x64| + |b32 - x64| <= 2 * (the largest float32
# error). `make float64-bound` (benchmark/tools/float64_bound.py) measures that error for every committed
# v2 evidence result over the batches `make all` samples, per model and per layer, into
# docs/bench/float64-bound.json; each tolerance is at least 2 * FLOAT32_MARGIN times it
# (tests/test_reproduce.py checks the committed measurement against these constants).
FLOAT32_MARGIN = 4
"""safety factor on the measured float32 error: it is one CPU's error on a few hundred rows, and another
CPU's kernels (AVX-512, AMX) sum in other orders and a whole result has more rows than the sample."""
RECORD_RTOL = 1e-4
"""relative tolerance of a record's log-prob and entropy floats."""
RECORD_ATOL = 1e-5
"""absolute tolerance (nats) of a record's log-prob and entropy floats."""
TOKEN_ATOL = 1e-4
"""and per scored token of y_0 (nats; once for the per-token means, ``baseline_tokens`` times for
``logprob_sum``): a float32 log-softmax over a large vocabulary is itself off by up to ~5e-5 nats per
token (Gemma-3-270M, 262,144 tokens, against float64 from the same hidden states: twice that is this), and
engines that sum differently (the pooled engine's vocabulary slices sum in float64) differ by that much
per token. The model's own float32 error adds at most 2.3e-6 nats per token (Qwen2.5-Coder-0.5B,
float64-bound.json; 2 * FLOAT32_MARGIN times it is 1.8e-5, inside this)."""
ACTIVATION_ULPS = 4
"""float16 hidden states may differ by this many units in the last place of their layer's largest
magnitude (Gemma-3-270M's states reach ~37,000, where one float16 ulp is 32): 2 * FLOAT32_MARGIN * 0.5,
the largest float32-vs-float64 error measured (half an ulp: a value on a float16 rounding boundary)."""
COSINE_ATOL = 1e-4
"""absolute tolerance of a compact result's per-layer cosines: 2 * FLOAT32_MARGIN * 1.21e-5 (Gemma-3-270M's
largest float32-vs-float64 cosine error, at layer 7; float64-bound.json), rounded up. The cosines are of
float16 vectors, so float32 noise that moves one element across a float16 rounding boundary moves a cosine
far more than float32 rounding does (most layers err by 1e-7): an Intel Xeon with AMX re-ran the same
Gemma batches 3.98e-5 from the committed cosines made on AMD, which the former 1e-5 (one AMD pair's
difference) refused, and which is more than twice this CPU's error: hence the margin."""
_FLOAT_COLUMNS = ("logprob_sum", "logprob_mean", "entropy_mean")


def committed_run(
    slug: str, set_name: str, version: str, root: Path, profile: str | None = None
) -> RunDocument:
    """The committed run.json of ``slug``'s ``profile`` run (None: the board profile's) on the set
    version; a missing or unreadable one is one line."""
    folder = ResultsFolder.of(slug, set_name, version, root, profile=profile)
    if not folder.run.is_file():
        raise SagoError(
            f"{slug} has no committed {profile or board_profile(version)}-profile result for "
            f"{set_name}/{version} ({folder.run} is missing)"
        )
    return folder.read_run()


def rerun_options(run: RunDocument, profile: str) -> dict[str, Any]:
    """``EvaluateOptions`` keywords that repeat the committed run; the profile must be the committed one.

    >>> run = RunDocument.from_json({"schema_version": 1, "set": "s", "version": "v1",
    ...     "profile": {"name": "smoke"}, "batch_size": 8, "engine": "single_prefill", "device": "cpu",
    ...     "datasets": "all", "hardware": {"torch_threads": 1}})
    >>> rerun_options(run, "smoke")["threads"], rerun_options(run, "smoke")["datasets"]
    (1, None)
    """
    committed = run.profile_name
    if profile != committed:
        raise SagoError(
            f"the committed result was made with profile {committed!r}, not {profile!r}; "
            f"use PROFILE={committed}"
        )
    if run.set is None or run.version is None or run.batch_size is None or run.engine is None:
        raise SagoError(
            "the committed run.json records no set, version, batch_size or engine; it cannot be re-run "
            "as it was made"
        )
    return {
        "set_name": run.set,
        "version": run.version,
        "profile": committed,
        "device": run.device,
        "batch_size": run.batch_size,
        "engine": run.engine,
        "threads": run.hardware.torch_threads,
        # "all", or not recorded (the oldest results): every dataset
        "datasets": run.datasets,
        "force": True,
        "progress": True,
        # results from before compact storage kept every vector (run.json then records no setting)
        "activations": run.activations or "full",
        # the batches as the run cut them: results from before planner 2 record none (planner 1)
        "planner": run.planner or 1,
    }


def diff_results(committed: Path, fresh: Path, ignore: tuple[str, ...] = ()) -> list[str]:
    """One line per difference between two result folders (empty: identical outputs); run.json fields
    in ``ignore`` are not compared (the engine, when a re-run tries another one on purpose)."""
    problems = []
    for pattern in _OUTPUT_GLOBS:
        names = sorted(
            {p.relative_to(committed).as_posix() for p in committed.glob(pattern)}
            | {p.relative_to(fresh).as_posix() for p in fresh.glob(pattern)}
        )
        for name in names:
            old, new = committed / name, fresh / name
            if not old.is_file() or not new.is_file():
                problems.append(f"{name}: only in the {'fresh run' if new.is_file() else 'committed result'}")
            elif old.read_bytes() != new.read_bytes():
                problems.append(f"{name}: bytes differ")
    old_run, new_run = (ResultsFolder(d).read_run() for d in (committed, fresh))
    changed = old_run.differing(new_run, ignore)
    if changed:
        problems.append(f"run.json: {', '.join(changed)} differ")
    return problems


def tolerance_report(committed: Path, fresh: Path, problems: list[str]) -> tuple[list[str], list[str]]:
    """Split byte differences into (failures, largest differences within tolerance).

    A records file passes when every key, response and count is equal and its floats agree within
    :data:`RECORD_RTOL`/:data:`RECORD_ATOL`; an activations file when its keys and shapes are equal and
    its values agree within :data:`ACTIVATION_ULPS` float16 ulps (cosines: :data:`COSINE_ATOL`). A file
    only in one folder, or a run.json setting that differs, always fails.
    """
    import pandas as pd
    from safetensors.numpy import load_file

    failures: list[str] = []
    largest: dict[str, float] = {}
    for line in problems:
        name = line.split(":", 1)[0]
        old, new = str(committed / name), str(fresh / name)
        if "bytes differ" not in line:
            failures.append(line)
        elif name.endswith(".parquet"):
            failures += frames_within(pd.read_parquet(old), pd.read_parquet(new), name, largest)
        else:
            failures += tensors_within(load_file(old), load_file(new), name, largest)
    return failures, [f"{k} {v:.3g}" for k, v in sorted(largest.items())]


def frames_within(a: Any, b: Any, name: str, largest: dict[str, float]) -> list[str]:
    """Two records tables: keys and every non-float column equal, floats within the tolerances."""
    import numpy as np

    keys = ["dataset", "item_id", "variant_id"]
    a = a.sort_values(keys).reset_index(drop=True)
    b = b.sort_values(keys).reset_index(drop=True)
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return [f"{name}: columns or rows differ"]
    exact = [c for c in a.columns if c not in _FLOAT_COLUMNS]
    changed = [c for c in exact if not a[c].equals(b[c])]
    if changed:
        return [f"{name}: {', '.join(changed)} differ (not float noise)"]
    out = []
    for column in _FLOAT_COLUMNS:
        x, y = a[column].to_numpy(np.float64), b[column].to_numpy(np.float64)
        gap = np.abs(x - y)
        tokens = a["baseline_tokens"].to_numpy(np.float64) if column == "logprob_sum" else 1.0
        bad = ~(np.isclose(x, y, rtol=RECORD_RTOL, atol=RECORD_ATOL + TOKEN_ATOL * tokens, equal_nan=True))
        largest[column] = max(largest.get(column, 0.0), float(np.nanmax(gap, initial=0.0)))
        if bad.any():
            out.append(
                f"{name}: {column} beyond tolerance in {int(bad.sum())} rows "
                f"(largest |delta| {np.nanmax(gap):.3g})"
            )
    return out


def tensors_within(x: dict[str, Any], y: dict[str, Any], name: str, largest: dict[str, float]) -> list[str]:
    """Two activation dicts: same keys, shapes and dtypes; values within the tolerances."""
    import numpy as np

    if set(x) != set(y) or any(x[k].shape != y[k].shape or x[k].dtype != y[k].dtype for k in x):
        return [f"{name}: keys, shapes or dtypes differ"]
    worst_ulps, worst_cos = 0.0, 0.0
    for key in x:
        a, b = x[key].astype(np.float64), y[key].astype(np.float64)
        if x[key].dtype == np.float16:
            # float32 accumulation noise scales with a layer's largest value, not with each element's:
            # measure a difference in units in the last place of the row's largest magnitude
            scale = np.maximum(np.abs(a), np.abs(b)).max(axis=-1, keepdims=True)
            ulp = np.spacing(scale.astype(np.float16)).astype(np.float64)
            worst_ulps = max(worst_ulps, float(np.max(np.abs(a - b) / ulp, initial=0.0)))
        else:
            worst_cos = max(worst_cos, float(np.nanmax(np.abs(a - b), initial=0.0)))
    largest["activations (float16 ulps)"] = max(largest.get("activations (float16 ulps)", 0.0), worst_ulps)
    if worst_cos:
        largest["activation cosines"] = max(largest.get("activation cosines", 0.0), worst_cos)
    if worst_ulps > ACTIVATION_ULPS or worst_cos > COSINE_ATOL:
        return [f"{name}: beyond tolerance ({worst_ulps:.3g} float16 ulps, cosines {worst_cos:.3g})"]
    return []


@dataclass(frozen=True)
class Verdict:
    """What a re-run showed."""

    differences: list[str]
    """byte differences, one line per file (empty: identical)."""
    failures: list[str]
    """differences that are not float noise within the stated tolerances (empty: the result holds)."""
    largest: list[str]
    """the largest float differences found, for the "equal within tolerance" line."""

    def lines(self, slug: str) -> list[str]:
        """What ``make reproduce`` prints."""
        if not self.differences:
            return [f"{slug}: records, activations and run.json equal the committed result"]
        if not self.failures:
            return [
                f"{slug}: equal within tolerance: responses, tokens and settings identical, floats differ "
                f"in {len(self.differences)} files (largest differences: {'; '.join(self.largest)})"
            ]
        return self.failures


def compare(committed: Path, fresh: Path, ignore: tuple[str, ...] = ()) -> Verdict:
    """Byte comparison, then the tolerance check of whatever differs."""
    differences = diff_results(committed, fresh, ignore)
    failures, largest = tolerance_report(committed, fresh, differences)
    return Verdict(differences, failures, largest)


def use_committed_setting(run: RunDocument) -> None:
    """Make the re-run under the CPU setting the committed run recorded (a user's environment does not
    override it here: a result is re-made under its own setting). Results made before the setting was
    recorded keep the harness's default. Must run before torch loads; when torch already has, the re-run
    goes on under this process's setting and says so."""
    recorded = run.hardware.cpu_setting
    if recorded is None:
        return
    try:
        line = cpu.apply_recorded(recorded)
    except RuntimeError as error:
        click.echo(visible(f"note: {error}; the re-run uses this process's setting {cpu.setting()}"))
        return
    if line:
        click.echo(visible(line))


def _options(run: RunDocument, profile: str, engine: str | None) -> EvaluateOptions:
    """The committed run's settings, with another engine where ``engine`` names one (checked here)."""
    from benchmark.harness.evaluate import EvaluateOptions
    from benchmark.models.hf import ENGINES

    chosen = rerun_options(run, profile)
    if engine is not None:
        ENGINES.get(engine)  # an unknown name is one line, before any model loads
        chosen["engine"] = engine
    # run.json's batch_size is the plan's (prompts per engine call); --batch-size is prompts per forward,
    # and an engine that cuts each call into several forwards (pooled: 4) plans that many times as many,
    # so the re-run gets the committed plan back from a committed batch divided by them
    if chosen["engine"] in ENGINES.names():
        forwards = ENGINES.get(chosen["engine"]).forwards_per_call
        chosen["batch_size"] = max(1, chosen["batch_size"] // forwards)
    return EvaluateOptions(**chosen)


def reproduce(
    slug: str, profile: str, set_name: str, version: str, keep: bool, engine: str | None = None
) -> Verdict:
    """Re-run ``slug``'s committed result into a temporary folder and compare it with the committed one
    (with ``engine`` instead of the committed engine: do its outputs equal the committed ones?)."""
    root = paths.SUBMISSIONS_DIR
    load_submission(slug, root)
    run = committed_run(slug, set_name, version, root, profile)
    use_committed_setting(run)  # before anything imports torch
    from benchmark.harness.evaluate import copy_submission, evaluate_submission

    options = _options(run, profile, engine)
    scratch = Path(tempfile.mkdtemp(prefix=f"sago-reproduce-{slug}-"))
    try:
        copy_submission(slug, scratch)
        click.echo(
            f"re-running {slug} on {set_name}/{version} ({profile}, batch {options.batch_size}, "
            f"engine {options.engine}, {options.threads} thread(s)) in {scratch}"
        )
        evaluate_submission(slug, options, root=scratch)
        return compare(
            results_dir(slug, set_name, version, root, profile=profile),
            results_dir(slug, set_name, version, scratch, profile=profile),
            ("engine", "batch_size") if engine is not None else (),
        )
    finally:
        if keep:
            click.echo(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


@dataclass(frozen=True)
class SampledRerun:
    """A seeded sample of a committed result's batches, re-run: the committed rows and activations of
    those batches beside the fresh ones (same keys)."""

    old: Any
    """the committed records of the sampled rows (pandas DataFrame, record dtypes)."""
    fresh: Any
    """the re-run's records of the same rows."""
    old_tensors: dict[str, Any]
    """``dataset|item|variant`` -> committed activation (float16 vectors, or float64 per-layer cosines)."""
    fresh_tensors: dict[str, Any]
    """the same keys, from the re-run."""
    what: str
    """which batches, for the report line."""


def rerun_sample(
    slug: str,
    profile: str,
    set_name: str,
    version: str,
    count: int,
    seed: int,
    engine: str | None = None,
    dtype: str = "float32",
) -> SampledRerun:
    """Re-run ``count`` seeded baseline batches and ``count`` seeded variant/rerun batches of a committed
    result, exactly as the run planned them (same batch composition, y_0 and compact references read from
    the committed files); ``dtype`` "float64" casts the loaded model to float64 (a measurement of float32
    error, never a result: see :mod:`benchmark.tools.float64_bound`)."""
    import random

    root = paths.SUBMISSIONS_DIR
    submission = load_submission(slug, root)
    run = committed_run(slug, set_name, version, root, profile)
    use_committed_setting(run)  # before anything imports torch
    import pandas as pd
    from safetensors.numpy import load_file

    from benchmark.harness.collect import COMPACT, global_batches, prompt_length, runner, select_tasks
    from benchmark.harness.evaluate import local_backend
    from benchmark.harness.finalize import RECORD_DTYPES
    from benchmark.harness.sets import open_variant_set
    from benchmark.profiles import get_profile
    from benchmark.schema import BASELINE_VARIANT_ID, RECORD_COLUMNS

    options = _options(run, profile, engine)
    folder = results_dir(slug, set_name, version, root, profile=profile)
    variant_set = open_variant_set(set_name, version)
    chosen = get_profile(profile)
    assert run.batch_size is not None  # rerun_options refuses a run.json that records none
    backend = local_backend(submission, options)  # before planning: planner 2 sorts by its token counts
    tasks = select_tasks(variant_set, chosen, options.datasets)
    # the committed plan's batches (run.json's batch_size: prompts per batch, whatever the engine)
    plan = global_batches(tasks, run.batch_size, planner=options.planner, length=prompt_length(backend))
    rng = random.Random(seed)
    batches = rng.sample(plan.baselines, min(count, len(plan.baselines))) + rng.sample(
        plan.rest, min(count, len(plan.rest))
    )
    names = {t.dataset for b in batches for t in b.tasks}
    committed = pd.concat([pd.read_parquet(ResultsFolder(folder).records(d)) for d in sorted(names)])
    tensors = {d: load_file(str(ResultsFolder(folder).activations(d))) for d in sorted(names)}
    base = committed[committed["variant_id"] == BASELINE_VARIANT_ID]
    y0 = {(d, i): r for d, i, r in zip(base["dataset"], base["item_id"], base["response"], strict=True)}
    compact = run.activations == COMPACT
    reference = (
        {(d, i): tensors[d][f"{i}|{BASELINE_VARIANT_ID}"] for d, i in y0 if d in tensors} if compact else None
    )
    if dtype == "float64":
        import torch

        backend.model.to(torch.float64)  # exact: every float32 weight is a float64 value
    fresh_rows, fresh_tensors, old_tensors = [], {}, {}
    for batch in batches:
        phase_baselines = None if batch.name.startswith("base-") else y0
        part = runner(backend, chosen, phase_baselines, reference if phase_baselines else None)(batch)
        fresh_rows.append(part.records)
        for task in batch.tasks:
            key = f"{task.item_id}|{task.variant_id}"
            fresh_tensors[f"{task.dataset}|{key}"] = part.activations[task.key]
            old_tensors[f"{task.dataset}|{key}"] = tensors[task.dataset][key]
    fresh = pd.concat(fresh_rows)[list(RECORD_COLUMNS)].astype(RECORD_DTYPES)
    ids = ["dataset", "item_id", "variant_id"]
    sampled = pd.MultiIndex.from_frame(committed[ids]).isin(pd.MultiIndex.from_frame(fresh[ids]))
    old = committed[sampled][list(RECORD_COLUMNS)].astype(RECORD_DTYPES)
    what = (
        f"{len(batches)} of {len(plan.baselines) + len(plan.rest)} batches "
        f"({', '.join(b.name for b in batches)}; seed {seed}, {len(fresh)} rows, engine {options.engine}"
        + (f" instead of the committed {run.engine}" if engine is not None else "")
        + ")"
    )
    return SampledRerun(old, fresh, old_tensors, fresh_tensors, what)


def reproduce_sample(
    slug: str, profile: str, set_name: str, version: str, count: int, seed: int, engine: str | None = None
) -> tuple[Verdict, str]:
    """Re-run a seeded sample of a committed result's batches (:func:`rerun_sample`) and compare their rows
    with the committed ones.

    Hours of evidence cannot be re-run inside `make all`; a seeded sample of its batches can, and any
    change of model file, engine, CPU setting or code that alters outputs shows up in any batch.
    """
    rerun = rerun_sample(slug, profile, set_name, version, count, seed, engine)
    old, fresh, old_tensors, fresh_tensors = rerun.old, rerun.fresh, rerun.old_tensors, rerun.fresh_tensors
    largest: dict[str, float] = {}
    failures = frames_within(old, fresh, "sampled records", largest) + tensors_within(
        old_tensors, fresh_tensors, "sampled activations", largest
    )
    same = old.sort_values(["dataset", "item_id", "variant_id"]).reset_index(drop=True).equals(
        fresh.sort_values(["dataset", "item_id", "variant_id"]).reset_index(drop=True)
    ) and all(
        (old_tensors[k] == fresh_tensors[k]).all() and old_tensors[k].dtype == fresh_tensors[k].dtype
        for k in old_tensors
    )
    differences = [] if same else ["sampled batches: bytes differ"]
    return Verdict(differences, failures, [f"{k} {v:.3g}" for k, v in sorted(largest.items())]), rerun.what


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("slug", required=False)
@click.option(
    "--profile",
    default=None,
    help="The committed result's profile, checked against its run.json (default: the version's board "
    "profile, whose run is in <version>/; another profile's run is in <version>-<profile>/).",
)
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=BOARD_SET_VERSION, show_default=True)
@click.option("--keep", is_flag=True, help="Keep the temporary folder with the fresh run.")
@click.option(
    "--sample",
    type=click.IntRange(min=1, max=10_000),
    default=None,
    help="Re-run only this many seeded baseline batches and as many variant batches (their committed "
    "composition) and compare their rows: how `make all` proves hours of evidence in minutes.",
)
@click.option("--seed", type=options.SEED, default=0, show_default=True, help="Seed of --sample.")
@click.option(
    "--engine",
    default=None,
    help="Re-run with this engine instead of the committed one (single_prefill, pooled, two_pass, draft or "
    "static_graph; the committed batches, at the committed batch size divided by the engine's forwards "
    "per call): are its outputs the committed engine's? Default: the committed run's own engine, never "
    "the default of a new run.",
)
def main_command(
    slug: str | None,
    profile: str | None,
    set_name: str,
    version: str,
    keep: bool,
    sample: int | None,
    seed: int,
    engine: str | None,
) -> None:
    """Re-run a committed result (or a seeded sample of its batches) and compare it with what is committed."""
    if not slug:
        raise SagoError("name the submission: make reproduce MODEL=<slug> PROFILE=<name>")
    profile = profile or board_profile(version)
    if sample is not None:
        verdict, what = reproduce_sample(slug, profile, set_name, version, sample, seed, engine)
        click.echo(visible(f"{slug}: re-ran {what}"))
        said = "sampled rows equal"
    else:
        verdict = reproduce(slug, profile, set_name, version, keep, engine)
        said = "records, activations and run.json equal"
    for line in verdict.lines(slug):  # file and column names come from the results folder
        click.echo(visible(line.replace("records, activations and run.json equal", said)))
    if verdict.failures:
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return run_command(main_command, argv, "python -m benchmark.harness.reproduce")


if __name__ == "__main__":
    raise SystemExit(main())
