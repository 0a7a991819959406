"""``sago export lm-eval``: a frozen variant set as lm-evaluation-harness tasks, one per dataset.

The folder is self-contained, so it can be moved to the machine lm-eval runs on: each dataset's parquet
file is copied beside the task YAMLs and loaded by a hook in ``utils.py`` that finds it next to itself
(a relative ``data_files`` would be read against the working directory) and checks its sha256. Each task
keeps exactly the rows ``sago evaluate --profile P`` runs (a pyarrow filter on ``item_rank`` and
``variant_id``, checked against ``select_rows`` before anything is written), one document per (item,
variant) row with every column, generated greedily as in the harness. ``metadata.sago`` pins the set by
its sha256 for ``sago import lm-eval``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import yaml

from benchmark.axes import accuracy
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.paths import check_output, replace_folder
from benchmark.profiles import Profile, select_rows
from benchmark.provenance import sha256_file
from benchmark.results import write_text
from benchmark.variants.frozen import VariantSet

EXPORT_FORMAT = 1
"""version of the ``metadata.sago`` block; the import refuses a newer one."""
LM_EVAL_PIN = "lm_eval==0.4.13"
"""the lm-eval release the export is tested with (the ``peer`` extra)."""
LM_EVAL_BATCH_SIZE = 32
"""``--batch_size`` of the lm_eval command the export's README and the project README give."""
README = "README.md"
UTILS = "utils.py"
EXPORT_FILES = re.compile(r"^(?:[a-z0-9_]+\.yaml|[a-z0-9_]+\.parquet|README\.md|utils\.py)$")
"""what an export folder holds; a folder with anything else is not replaced."""


@dataclass(frozen=True)
class ExportedTask:
    """One lm-eval task written by the export."""

    name: str
    """lm-eval task name, e.g. ``sago_v1_v2_smoke_trivia_qa``."""
    dataset: str
    rows: int
    """documents: the (item, variant) rows of the profile."""
    config: dict[str, object]


class Function(str):
    """A task value lm-eval reads as a Python function of the task folder (YAML tag ``!function``)."""


# ``yaml.safe_dump`` writes a Function with lm-eval's ``!function`` tag (no other type is touched).
yaml.add_representer(
    Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)), Dumper=yaml.SafeDumper
)

HOOKS = '''

# --- written by `sago export lm-eval` below sago's grading (benchmark/axes/accuracy.py, copied whole) ---
import hashlib as _hashlib
from pathlib import Path as _Path


def process_results(doc, results):
    """lm-eval's per-sample hook: sago's accuracy, 1.0 when the response states a gold answer."""
    return {"accuracy": is_correct(results[0], list(doc["answers"]), doc["prompt"])}


def load_rows(data_file, filters, sago, **_):
    """lm-eval's custom_dataset hook (called with the task's metadata and dataset_kwargs): the profile's
    rows of the parquet file beside this one, read from any working directory, refused unless its sha256
    is the one the export recorded."""
    import datasets
    import pyarrow.parquet as pq

    path = _Path(__file__).resolve().parent / data_file
    digest = _hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sago["data_sha256"]:
        raise ValueError(
            f"{path}: sha256 {digest[:12]}..., but the task was exported with {sago['data_sha256'][:12]}...; "
            "export the tasks again with `sago export lm-eval`"
        )
    # read as the export checked the filter (pyarrow), so no copy lands in the Hugging Face cache
    table = pq.read_table(path, filters=[tuple(f) for f in filters])
    return datasets.DatasetDict({"test": datasets.Dataset(table)})
'''


def utils_source() -> str:
    """``utils.py`` of an export: the grading module's own source (standard library only, so lm-eval needs
    no sago installed) and the hooks."""
    return Path(accuracy.__file__).read_text(encoding="utf-8") + HOOKS


def name_part(text: str) -> str:
    """A set, version or profile name as a piece of an lm-eval task name.

    >>> name_part("sago-v1"), name_part("v2")
    ('sago_v1', 'v2')
    """
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def group_name(variant_set: VariantSet, profile: Profile) -> str:
    return "_".join(name_part(p) for p in (variant_set.name, variant_set.version, profile.name))


def selection_filters(frame: pd.DataFrame, profile: Profile) -> list[list[object]]:
    """pyarrow filters (disjunctive normal form) that keep exactly ``select_rows(frame, profile)``."""
    chosen = select_rows(frame, profile)
    filters: list[list[object]] = [["item_rank", "<", profile.items_per_dataset]]
    if not profile.all_strengths:
        filters.append(["variant_id", "in", sorted(set(chosen["variant_id"]))])
    return filters


def check_filters(path: Path, frame: pd.DataFrame, profile: Profile, filters: list[list[object]]) -> int:
    """Refuse filters that would not give lm-eval exactly the profile's rows; returns the row count."""
    table = pq.read_table(path, columns=["item_id", "variant_id"], filters=[tuple(f) for f in filters])
    found = zip(table.column("item_id").to_pylist(), table.column("variant_id").to_pylist(), strict=True)
    filtered = sorted(found)
    chosen = select_rows(frame, profile)
    wanted = sorted(zip(chosen["item_id"], chosen["variant_id"], strict=True))
    if filtered != wanted:
        raise SagoError(
            f"{path.name}: the exported filter selects {len(filtered)} rows, the {profile.name} profile "
            f"{len(wanted)}; this set cannot be exported for that profile (report it)"
        )
    return len(wanted)


def _set_tag(variant_set: VariantSet) -> dict[str, object]:
    """The keys of ``metadata.sago`` that pin the set, shared by every task and the group."""
    return {
        "export": EXPORT_FORMAT,
        "set": variant_set.name,
        "version": variant_set.version,
        "variant_set_sha256": variant_set.sha256,
    }


def sago_metadata(
    variant_set: VariantSet, profile: Profile, dataset: str, rows: int, data: Path
) -> dict[str, object]:
    """The task's ``metadata.sago``: what the import checks."""
    return {
        **_set_tag(variant_set),
        "dataset": dataset,
        "data_sha256": sha256_file(data),
        "profile": profile.name,
        "max_new_tokens": profile.max_new_tokens,
        "rows": rows,
    }


def data_source(variant_set: VariantSet, dataset: str) -> Path:
    return variant_set.path / variant_set.entries[dataset].file


def task_config(variant_set: VariantSet, profile: Profile, dataset: str) -> ExportedTask:
    data = data_source(variant_set, dataset)
    frame = variant_set.frame(dataset)
    filters = selection_filters(frame, profile)
    rows = check_filters(data, frame, profile, filters)
    name = f"{group_name(variant_set, profile)}_{name_part(dataset)}"
    config: dict[str, object] = {
        "task": name,
        # the hook finds the copied file beside utils.py; a data_files path would be read against the
        # working directory lm-eval runs in, not against this folder
        "custom_dataset": Function("utils.load_rows"),
        "dataset_kwargs": {"data_file": data.name, "filters": filters},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "prompt",  # a column name: lm-eval passes the text through untouched
        "doc_to_target": "answers",
        "num_fewshot": 0,
        # greedy, the profile's token cap, and no stop string: lm-eval adds the model's end of sequence
        "generation_kwargs": {
            "until": [],
            "max_gen_toks": profile.max_new_tokens,
            "do_sample": False,
            "temperature": 0.0,
        },
        # sago's accuracy, not lm-eval's exact_match: a whole response rarely equals an alias (the issue
        # counted 0 of 1,507 SmolLM2 responses), while sago's grader asks whether it *states* one
        "process_results": Function("utils.process_results"),
        "metric_list": [{"metric": "accuracy", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {
            "version": EXPORT_FORMAT,
            "sago": sago_metadata(variant_set, profile, dataset, rows, data),
        },
    }
    return ExportedTask(name, dataset, rows, config)


def group_config(
    variant_set: VariantSet, profile: Profile, tasks: Sequence[ExportedTask]
) -> dict[str, object]:
    """The group over the exported tasks (exact match pooled over every document)."""
    return {
        "group": group_name(variant_set, profile),
        "task": [t.name for t in tasks],
        "aggregate_metric_list": [{"metric": "accuracy", "aggregation": "mean", "weight_by_size": True}],
        "metadata": {"version": EXPORT_FORMAT, "sago": {**_set_tag(variant_set), "profile": profile.name}},
    }


def readme(variant_set: VariantSet, profile: Profile, out: Path, tasks: Sequence[ExportedTask]) -> str:
    """How to run the exported group in lm-eval and bring the samples back."""
    group = group_name(variant_set, profile)
    return (
        f"# {group}: {variant_set.name}/{variant_set.version} as lm-evaluation-harness tasks\n\n"
        f"Written by `sago export lm-eval` ({profile.name} profile: {sum(t.rows for t in tasks)} documents, "
        f"greedy, {profile.max_new_tokens} new tokens). Variant-set sha256: `{variant_set.sha256}`.\n\n"
        "The folder holds everything lm-eval reads (the tasks, `utils.py` and each dataset's parquet file), "
        "so it can be copied to another machine; run from the folder that holds it:\n\n"
        "```bash\n"
        f"lm_eval --model hf --model_args pretrained=MODEL,dtype=float32,add_bos_token=False \\\n"
        f"  --include_path {out.name} --tasks {group} --apply_chat_template \\\n"
        f"  --log_samples --output_path lm-eval-out --batch_size {LM_EVAL_BATCH_SIZE}\n"
        f"sago import lm-eval lm-eval-out/*/samples_{group}_*.jsonl "
        f"--set {variant_set.name} --version {variant_set.version} --out RESULTS_DIR\n"
        "```\n\n"
        "Leave out `--apply_chat_template` (and `add_bos_token=False`) for a model evaluated with "
        "`chat_template: never` or one without a chat template; pass no `--system_instruction`, "
        "`--num_fewshot`, `--gen_kwargs` or `--limit`: sago evaluates one user turn, zero-shot, every row.\n"
    )


def export_lm_eval(
    variant_set: VariantSet, profile: Profile, out: Path, *, datasets: Sequence[str] | None = None
) -> list[Path]:
    """Write one task YAML per dataset, the group YAML and a README into ``out`` (in one swap); return
    the YAML paths."""
    chosen = list(datasets or variant_set.datasets)
    unknown = sorted(set(chosen) - set(variant_set.datasets))
    if unknown:
        raise SagoError(
            f"--datasets: unknown dataset {unknown[0]!r}; {variant_set.name}/{variant_set.version} "
            f"has {', '.join(variant_set.datasets)}"
        )
    check_out(out)
    tasks = [task_config(variant_set, profile, d) for d in chosen]
    group = group_config(variant_set, profile, tasks)
    staging = out.with_name(f".{out.name}.exporting")
    shutil.rmtree(staging, ignore_errors=True)  # what a killed export left
    documents = [(f"{t.name}.yaml", t.config) for t in tasks] + [(f"{group['group']}.yaml", group)]
    try:
        for name, document in documents:
            write_text(
                staging / name, yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
            )
        write_text(staging / UTILS, utils_source())
        for dataset in chosen:  # copied, so the folder holds everything lm-eval reads
            source = data_source(variant_set, dataset)
            shutil.copyfile(source, staging / source.name)
        write_text(staging / README, readme(variant_set, profile, out.resolve(), tasks))
        out.parent.mkdir(parents=True, exist_ok=True)
        replace_folder(staging, out)
    finally:  # a failure (a full disk) leaves no half-written folder beside ``out``
        shutil.rmtree(staging, ignore_errors=True)
    return [out / name for name, _ in documents]


def check_out(out: Path) -> None:
    """``out`` may be absent, empty, or an earlier export; anything else is refused in one line."""
    check_output(out, "--out", folder=True)
    refuse_tracked(out, "--out", own=lambda _: False, writes="task files into a folder of its own")
    strangers = (
        sorted(p.name for p in out.iterdir() if not EXPORT_FILES.fullmatch(p.name)) if out.is_dir() else []
    )
    if strangers:
        raise SagoError(
            f"--out {out}: holds {strangers[0]!r}, which an export does not write; "
            "name an empty or new folder"
        )
