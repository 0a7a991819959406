"""Reading what lm-eval writes with ``--log_samples --output_path OUT``, trusting nothing in it.

Each ``samples_<task>_<time>.jsonl`` (per document: ``doc``, the request in ``arguments`` and the raw
response ``resps[0][0]``) is read with the ``results_<time>.json`` of the same run, whose
``configs[<task>].metadata.sago`` is what ``sago export lm-eval`` wrote. Every problem is one line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from benchmark.errors import FileProblem, SagoError
from benchmark.lmeval.export import EXPORT_FORMAT
from benchmark.safeload import load_json_object, parse_json, read_text

SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<time>\d{4}-\d\d-\d\dT[0-9.\-]+)\.jsonl$")
SAMPLES_LIMIT = 256 << 20
RESULTS_LIMIT = 64 << 20
RERUN = "re-run lm-eval on the exported tasks with --log_samples and keep its output folder as written"


@dataclass(frozen=True)
class ExportTag:
    """``metadata.sago`` of an exported task: which set, dataset and profile its documents are."""

    set: str
    version: str
    variant_set_sha256: str
    dataset: str
    profile: str
    max_new_tokens: int
    data_sha256: str


@dataclass(frozen=True)
class Sample:
    """One logged document: the row it is, what the model was given, and what it answered."""

    item_id: str
    variant_id: str
    family: str
    place: str
    strength: float
    prompt: str
    answers: tuple[str, ...]
    context: str
    """the text lm-eval sent to the model (chat template applied or not)."""
    max_gen_toks: int | None
    until: tuple[str, ...] | None
    """the request's stop strings (None: not a list)."""
    do_sample: bool | None
    response: str
    """the raw response (before lm-eval's filters)."""


@dataclass(frozen=True)
class LmEvalSettings:
    """What the results file says about how lm-eval ran (recorded in run.json; some are checked)."""

    lm_eval_version: str
    model: str
    """lm-eval's model type, e.g. ``hf``."""
    model_name: str
    """the ``pretrained`` model it loaded."""
    model_args: Mapping[str, str]
    chat_template_sha256: str | None
    """None: ``--apply_chat_template`` was not given."""
    system_instruction: str | None
    num_fewshot: int | None
    limit: float | None
    batch_size: str | None
    device: str | None
    dtype: str | None


@dataclass(frozen=True)
class TaskSamples:
    """One samples file with its task's export tag and the run's settings."""

    path: Path
    results_path: Path
    task: str
    tag: ExportTag
    settings: LmEvalSettings
    samples: tuple[Sample, ...]


def results_file(path: Path) -> tuple[str, Path]:
    """(task name, the results file of the same run) of a samples file, or a one-line error."""
    if not path.is_file():  # a mistyped path says so, not that its name looks wrong
        raise SagoError(f"{path}: no such file; pass the samples_<task>_<time>.jsonl files lm-eval wrote")
    match = SAMPLES_NAME.fullmatch(path.name)
    if match is None:
        raise SagoError(
            f"{path}: not an lm-eval samples file (samples_<task>_<time>.jsonl); pass the files "
            "lm-eval wrote with --log_samples"
        )
    results = path.with_name(f"results_{match['time']}.json")
    if not results.is_file():
        raise SagoError(f"{path}: no {results.name} beside it (it names the task's variant set); {RERUN}")
    return match["task"], results


def read_task_samples(path: Path) -> TaskSamples:
    task, results_path = results_file(path)
    results = load_json_object(results_path, limit=RESULTS_LIMIT, fix=RERUN)
    config = _object(_object(results, "configs", results_path), task, results_path, "configs")
    metadata = _object(config, "metadata", results_path, f"configs.{task}")
    if not isinstance(metadata.get("sago"), dict):
        raise SagoError(
            f"{results_path}: task {task!r} was not written by `sago export lm-eval` (no metadata.sago); "
            "export the variant set and run lm-eval on those tasks"
        )
    tag = export_tag(metadata["sago"], results_path)
    settings = lm_eval_settings(results, task, results_path)
    lines = read_text(path, limit=SAMPLES_LIMIT, fix=RERUN).splitlines()
    samples = tuple(
        sample(parse_json(line, f"{path}:{n}", fix=RERUN), f"{path}:{n}")
        for n, line in enumerate(lines, 1)
        if line.strip()
    )
    return TaskSamples(path, results_path, task, tag, settings, samples)


def export_tag(sago: Mapping[str, Any], where: Path) -> ExportTag:
    """The ``metadata.sago`` block, typed; a newer export format or a missing key is refused."""
    version = sago.get("export")
    if not isinstance(version, int) or version > EXPORT_FORMAT:
        raise SagoError(
            f"{where}: metadata.sago.export {version!r} is not one this sago-bench reads; upgrade sago-bench"
        )
    keys = ("set", "version", "variant_set_sha256", "dataset", "profile", "data_sha256")
    texts = {k: sago.get(k) for k in keys}
    tokens = sago.get("max_new_tokens")
    if not all(isinstance(v, str) for v in texts.values()) or not isinstance(tokens, int):
        raise SagoError(
            f"{where}: metadata.sago lacks set, version, variant_set_sha256, dataset, profile, "
            "data_sha256 or max_new_tokens; re-export the tasks"
        )
    return ExportTag(**{k: str(v) for k, v in texts.items()}, max_new_tokens=tokens)


def lm_eval_settings(results: Mapping[str, Any], task: str, where: Path) -> LmEvalSettings:
    """The run settings of a results file, read leniently (an absent value is None)."""
    found = results.get("config")
    config: Mapping[str, Any] = found if isinstance(found, dict) else {}
    args = config.get("model_args")
    shots = results.get("n-shot")
    shot = shots.get(task) if isinstance(shots, dict) else None
    limit = config.get("limit")
    return LmEvalSettings(
        lm_eval_version=str(results.get("lm_eval_version", "unknown")),
        model=str(config.get("model", "unknown")),
        model_name=str(results.get("model_name", "unknown")),
        model_args={str(k): str(v) for k, v in args.items()} if isinstance(args, dict) else {},
        chat_template_sha256=_text_or_none(results.get("chat_template_sha")),
        system_instruction=_text_or_none(results.get("system_instruction")),
        num_fewshot=shot if isinstance(shot, int) else None,
        limit=float(limit) if isinstance(limit, int | float) and not isinstance(limit, bool) else None,
        batch_size=_text_or_none(config.get("batch_size")),
        device=_text_or_none(config.get("device")),
        dtype=_text_or_none(config.get("model_dtype")),
    )


def sample(line: Any, where: str) -> Sample:
    if not isinstance(line, dict):
        raise SagoError(f"{where}: not a logged sample object; {RERUN}")
    doc, request, resps = line.get("doc"), _request(line.get("arguments")), line.get("resps")
    response = _first_response(resps)
    if not isinstance(doc, dict) or request is None or response is None:
        raise SagoError(f"{where}: a sample without doc, arguments.gen_args_0 or resps; {RERUN}")
    context, options = request
    ids = [doc.get(k) for k in ("item_id", "variant_id", "family", "place")]
    prompt, strength, answers = doc.get("prompt"), doc.get("strength"), doc.get("answers")
    if not (_is_strings(ids) and isinstance(prompt, str) and _is_number(strength) and _is_strings(answers)):
        raise SagoError(
            f"{where}: the doc is not a row of a sago variant set; "
            "export the tasks with `sago export lm-eval`"
        )
    until, tokens, sampled = options.get("until"), options.get("max_gen_toks"), options.get("do_sample")
    item_id, variant_id, family, place = (str(v) for v in ids)
    return Sample(
        item_id,
        variant_id,
        family,
        place,
        float(strength),
        prompt,
        tuple(answers),
        context,
        tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        tuple(until) if _is_strings(until) else None,
        sampled if isinstance(sampled, bool) else None,
        response,
    )


def _request(arguments: object) -> tuple[str, Mapping[str, Any]] | None:
    """(context, generation settings) of ``arguments``: lm-eval 0.4.9+ logs ``{"gen_args_0": {"arg_0":
    context, "arg_1": settings}}``, older releases ``[[context, settings]]``."""
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        pair = [first.get("arg_0"), first.get("arg_1")] if isinstance(first, dict) else None
    else:
        pair = arguments[0] if isinstance(arguments, list) and arguments else None
    if isinstance(pair, list) and len(pair) >= 2 and isinstance(pair[0], str) and isinstance(pair[1], dict):
        return pair[0], pair[1]
    return None


def _object(data: Mapping[str, Any], key: str, where: Path, parent: str = "") -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise FileProblem(where, f"{parent + '.' if parent else ''}{key} is missing or not an object", RERUN)
    return value


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_strings(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _first_response(resps: object) -> str | None:
    """``resps[0][0]``, or None when it has another shape."""
    if isinstance(resps, list) and resps and isinstance(resps[0], list) and resps[0]:
        first = resps[0][0]
        return first if isinstance(first, str) else None
    return None
