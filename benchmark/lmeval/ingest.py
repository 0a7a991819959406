"""``sago import lm-eval``: lm-eval sample logs into a response-only results folder, scored as sago scores.

Every task must come from this variant set, under one profile, with sago's generation settings and
exactly the profile's rows; the deltas and summary are computed by ``sago analyze``'s own functions.
What lm-eval cannot give (hidden states, the baseline answer's log-probability and entropy) is NaN and
named in ``not_measured``, and such a result stays off the board.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from benchmark import paths
from benchmark.axes.measures import model_measures
from benchmark.axes.results import read_scorer_backbones, write_deltas
from benchmark.axes.scorers import AxisScorers
from benchmark.documents import ALL, RunDocument, SummaryDocument
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.integrity import file_hashes
from benchmark.lmeval.export import LM_EVAL_PIN, data_source
from benchmark.lmeval.samples import TaskSamples, read_task_samples
from benchmark.paths import check_output, replace_folder
from benchmark.profiles import Profile, get_profile, select_rows
from benchmark.provenance import git_commit, library_versions, sha256_file
from benchmark.results import ResultsFolder, write_document, write_parquet
from benchmark.schema import RECORD_COLUMNS, RECORDS_SCHEMA_VERSION
from benchmark.stats.summary import DEFAULT_OPTIONS, AnalysisOptions, summary_document, write_summary
from benchmark.variants.frozen import VariantSet
from benchmark.version import __version__

NOT_MEASURED = "not measured (lm-eval run)"


def not_measured_map() -> dict[str, str]:
    return {name: NOT_MEASURED for name in model_measures()}


COLLECTED_BY = "lm-eval"
# Record columns lm-eval's logs cannot fill: NaN (floats) or null (counts, flags), never 0.
_UNKNOWN_FLOATS = ("logprob_sum", "logprob_mean", "entropy_mean")
_UNKNOWN_COUNTS = ("response_tokens", "baseline_tokens", "prompt_tokens")


@dataclass(frozen=True)
class ImportResult:
    """What one import wrote."""

    folder: Path
    summary: SummaryDocument
    rows: Mapping[str, int]
    """dataset -> documents imported."""


def import_lm_eval(
    sample_files: Sequence[Path],
    variant_set: VariantSet,
    out: Path,
    *,
    name: str | None = None,
    scorers: AxisScorers | None = None,
    options: AnalysisOptions = DEFAULT_OPTIONS,
) -> ImportResult:
    """Import lm-eval samples of tasks exported from ``variant_set`` into the results folder ``out``.

    Args:
        sample_files: lm-eval's ``samples_<task>_<time>.jsonl`` files, one per dataset.
        variant_set: the verified set the tasks were exported from (its sha256 must match theirs).
        out: the results folder to write (replaced in one swap; refused inside ``submissions/``).
        name: the model's label in the tables (default: the folder name of lm-eval's ``pretrained``).
        scorers: the text and mirroring scorers (default: the ones ``sago analyze`` uses).
        options: bootstrap seed, resamples and test thresholds (default: the published ones).

    Raises:
        SagoError: one line naming the file, before anything is written.
    """
    check_out(out)
    tasks = [read_task_samples(Path(p)) for p in sample_files]
    profile = check_tasks(tasks, variant_set)
    records = {t.tag.dataset: records_of(t, variant_set.frame(t.tag.dataset), profile) for t in tasks}
    label = name or Path(tasks[0].settings.model_name).name or "lm-eval"
    staging = ResultsFolder(out.with_name(f".{out.name}.importing"))
    shutil.rmtree(staging.path, ignore_errors=True)
    try:
        for dataset, frame in records.items():
            write_parquet(staging.records(dataset), pa.Table.from_pandas(frame, preserve_index=False))
        write_document(staging.run, run_json(tasks, variant_set, profile, label, records, staging.path))
        frames = {d: variant_set.frame(d) for d in records}
        write_deltas(staging.path, frames, model=label, scorers=scorers or AxisScorers.default())
        summary = summary_document(
            pd.read_parquet(staging.deltas),
            model=label,
            set_name=variant_set.name,
            version=variant_set.version,
            options=options,
            axes=read_scorer_backbones(staging.deltas),
            not_measured=not_measured_map(),
        )
        write_summary(staging.path, summary)
        out.parent.mkdir(parents=True, exist_ok=True)
        replace_folder(staging.path, out)
    finally:
        shutil.rmtree(staging.path, ignore_errors=True)
    return ImportResult(out, summary, {d: len(f) for d, f in records.items()})


def check_out(out: Path) -> None:
    """``out`` may be new, empty or an earlier import; never a harness result or inside submissions/."""
    if out.resolve().is_relative_to(paths.SUBMISSIONS_DIR.resolve()):
        raise SagoError(
            f"--out {out}: inside submissions/, but a response-only result stays off the board; "
            "write it elsewhere (e.g. lm-eval-results/)"
        )
    check_output(out, "--out", folder=True)
    refuse_tracked(out, "--out", own=lambda _: False, writes="a results folder of its own")
    if out.is_dir() and any(out.iterdir()):
        folder = ResultsFolder(out)
        earlier = folder.run.is_file() and bool(folder.read_run().not_measured)
        if not earlier:
            raise SagoError(
                f"--out {out}: holds files of something else than an lm-eval import; name a new folder"
            )


def check_tasks(tasks: Sequence[TaskSamples], variant_set: VariantSet) -> Profile:
    """Every task is an export of ``variant_set`` under one profile, one per dataset, run as sago runs."""
    if not tasks:
        raise SagoError("no samples files given; pass lm-eval's samples_<task>_<time>.jsonl files")
    for task in tasks:
        check_tag(task, variant_set)
        check_settings(task)
    profiles = sorted({t.tag.profile for t in tasks})
    if len(profiles) > 1:
        raise SagoError(
            f"the samples are of several profiles ({', '.join(profiles)}); import one profile at a time"
        )
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.tag.dataset in seen:
            raise SagoError(
                f"{task.path}: a second samples file of dataset {task.tag.dataset!r} "
                f"(the first: {seen[task.tag.dataset].name}); pass one run's files"
            )
        seen[task.tag.dataset] = task.path
    return get_profile(profiles[0])


def check_tag(task: TaskSamples, variant_set: VariantSet) -> None:
    """The task's ``metadata.sago`` names this set, by name and by sha256, and one of its datasets."""
    tag = task.tag
    if (tag.set, tag.version) != (variant_set.name, variant_set.version):
        raise SagoError(
            f"{task.results_path}: task {task.task!r} was exported from {tag.set}/{tag.version}, not "
            f"{variant_set.name}/{variant_set.version}; pass --set {tag.set} --version {tag.version}"
        )
    if tag.variant_set_sha256 != variant_set.sha256:
        raise SagoError(
            f"{task.results_path}: task {task.task!r} was exported from a set with sha256 "
            f"{tag.variant_set_sha256[:12]}…, not {variant_set.name}/{variant_set.version} "
            f"({variant_set.sha256[:12]}…); re-export the tasks from the released set and re-run lm-eval"
        )
    if tag.dataset not in variant_set.datasets:
        raise SagoError(
            f"{task.results_path}: dataset {tag.dataset!r} is not in "
            f"{variant_set.name}/{variant_set.version}; re-export the tasks"
        )
    # The task read a copy of the parquet file: it must be the set's own file, byte for byte.
    data = sha256_file(data_source(variant_set, tag.dataset))
    if tag.data_sha256 != data:
        raise SagoError(
            f"{task.results_path}: task {task.task!r} read a {tag.dataset} file with sha256 "
            f"{tag.data_sha256[:12]}…, not {variant_set.name}/{variant_set.version}'s ({data[:12]}…); "
            "re-export the tasks from the released set and re-run lm-eval"
        )


def check_settings(task: TaskSamples) -> None:
    """Refuse a run that did not ask what sago asks: zero-shot, no system prompt, every row."""
    settings, where = task.settings, task.results_path
    if settings.num_fewshot not in (None, 0):
        raise SagoError(
            f"{where}: {task.task} ran {settings.num_fewshot}-shot; re-run lm-eval without --num_fewshot"
        )
    if settings.system_instruction:
        raise SagoError(
            f"{where}: lm-eval ran with a system instruction; re-run without --system_instruction"
        )
    if settings.limit is not None:
        raise SagoError(
            f"{where}: lm-eval ran with --limit {settings.limit:g}; re-run without it (sago needs every row)"
        )


def records_of(task: TaskSamples, frame: pd.DataFrame, profile: Profile) -> pd.DataFrame:
    """The records (``schema.RECORD_COLUMNS``) of one task: one row per sample, sorted by (item, variant).

    Each sample must be a row the profile runs, with the set's prompt and answers, asked with sago's
    generation settings; together they must be exactly the profile's rows.
    """
    chosen = select_rows(frame, profile).set_index(["item_id", "variant_id"])
    rows = []
    for number, s in enumerate(task.samples, 1):
        where = f"{task.path}:{number}"
        key = (s.item_id, s.variant_id)
        if key not in chosen.index:
            raise SagoError(
                f"{where}: {s.item_id}|{s.variant_id} is not a row the {profile.name} profile runs; "
                "re-export the tasks"
            )
        row = chosen.loc[key]
        # Some chat templates trim the message (Gemma's): the context holds the prompt's stripped text.
        if (
            s.prompt != row["prompt"]
            or list(s.answers) != list(row["answers"])
            or s.prompt.strip() not in s.context
        ):
            raise SagoError(
                f"{where}: the prompt or answers differ from {task.tag.dataset}'s row "
                f"{s.item_id}|{s.variant_id}; re-export the tasks and re-run lm-eval"
            )
        if s.max_gen_toks != profile.max_new_tokens or s.until != () or s.do_sample is not False:
            raise SagoError(
                f"{where}: generated with max_gen_toks={s.max_gen_toks}, until={list(s.until or [])!r}, "
                f"do_sample={s.do_sample}; sago's {profile.name} profile is greedy, {profile.max_new_tokens} "
                "tokens, no stop string: re-run lm-eval without --gen_kwargs"
            )
        rows.append(record_row(task.tag.dataset, s.item_id, s.variant_id, row, s.response))
    records = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    check_coverage(records, chosen, task, profile)
    return typed_records(records)


def record_row(
    dataset: str, item_id: str, variant_id: str, row: pd.Series, response: str
) -> dict[str, object]:
    """One record: the ids and family from the variant set, the response from lm-eval, the rest unknown."""
    return {
        "dataset": dataset,
        "item_id": item_id,
        "variant_id": variant_id,
        "family": str(row["family"]),
        "place": str(row["place"]),
        "strength": float(row["strength"]),
        "response": response,
        "finished": None,  # lm-eval does not say whether generation stopped on end-of-sequence
        **{c: float("nan") for c in _UNKNOWN_FLOATS},
        **{c: None for c in _UNKNOWN_COUNTS},
    }


def check_coverage(records: pd.DataFrame, chosen: pd.DataFrame, task: TaskSamples, profile: Profile) -> None:
    """The samples are the profile's rows, each once: per-item statistics need every variant."""
    keys = list(zip(records["item_id"], records["variant_id"], strict=True))
    if len(set(keys)) != len(keys):
        raise SagoError(f"{task.path}: a document is logged more than once; pass one run's samples file")
    if len(keys) != len(chosen):
        raise SagoError(
            f"{task.path}: {len(keys)} of the {len(chosen)} rows the {profile.name} profile runs on "
            f"{task.tag.dataset}; re-run lm-eval on the whole task (no --limit, no --samples)"
        )


def typed_records(records: pd.DataFrame) -> pd.DataFrame:
    """Records with the contract's types: nullable integers and flags where lm-eval gives no value."""
    typed = records.astype({c: "Int64" for c in _UNKNOWN_COUNTS} | {"finished": "boolean"})
    typed = typed.astype({c: "float64" for c in ("strength", *_UNKNOWN_FLOATS)})
    return typed.sort_values(["item_id", "variant_id"], kind="stable").reset_index(drop=True)


def run_json(
    tasks: Sequence[TaskSamples],
    variant_set: VariantSet,
    profile: Profile,
    label: str,
    records: Mapping[str, pd.DataFrame],
    folder: Path,
) -> RunDocument:
    """run.json of an import: the set and profile as a harness run records them, the lm-eval run's
    settings and files by sha256, and ``not_measured``."""
    settings = tasks[0].settings
    datasets = sorted(records)
    return RunDocument.build(
        {
            "schema_version": RECORDS_SCHEMA_VERSION,
            "harness_version": __version__,
            "collected_by": COLLECTED_BY,
            "libraries": library_versions(),
            "git_commit": git_commit(),
            "submission": label,
            "set": variant_set.name,
            "version": variant_set.version,
            "datasets": ALL if datasets == sorted(variant_set.datasets) else datasets,
            "variant_set_sha256": variant_set.sha256,
            "profile": profile.parameters(),
            "model": {"source": COLLECTED_BY, "location": settings.model_name, "dtype": settings.dtype},
            "chat_template": "applied" if settings.chat_template_sha256 else "raw prompt",
            "chat_template_sha256": settings.chat_template_sha256,
            "lm_eval": {
                "version": settings.lm_eval_version,
                "tested_with": LM_EVAL_PIN,
                "model": settings.model,
                "model_args": dict(settings.model_args),
                "batch_size": settings.batch_size,
                "device": settings.device,
                "tasks": {
                    t.task: {
                        "samples": t.path.name,
                        "samples_sha256": sha256_file(t.path),
                        "results": t.results_path.name,
                        "results_sha256": sha256_file(t.results_path),
                    }
                    for t in tasks
                },
            },
            "not_measured": not_measured_map(),
            "counts": {d: len(f) for d, f in sorted(records.items())},
            "files": file_hashes(folder),
        }
    )


def response_only(deltas: pd.DataFrame) -> pd.DataFrame:
    """A harness run's deltas as an lm-eval import of the same responses would have them: the
    model-needing measures NaN and the rerun control (a harness-only re-run of the baseline in another
    batch size) left out. ``summarize`` of this equals the import's summary when the responses are equal.
    """
    kept = deltas[deltas["family"] != "rerun"].reset_index(drop=True)
    return kept.assign(**{f"delta_{name}": float("nan") for name in model_measures()})


def differing_responses(imported: pd.DataFrame, harness: pd.DataFrame) -> pd.DataFrame:
    """The rows of two records tables (same keys) whose responses differ: ``dataset, item_id,
    variant_id, response_imported, response_harness``."""
    keys = ["dataset", "item_id", "variant_id"]
    both = imported[[*keys, "response"]].merge(
        harness[[*keys, "response"]], on=keys, how="inner", suffixes=("_imported", "_harness")
    )
    return both[both["response_imported"] != both["response_harness"]].reset_index(drop=True)
