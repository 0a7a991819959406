"""How each evaluated model ran: the ``models[].run`` block of leaderboard.json.

A reader of a stability number needs to know what produced it: a base model given raw prompts behaves
differently from an instruct model given its chat template, and a response cut at the token cap cannot
be judged correct. ``submission.yaml`` says what was asked for; ``run.json`` and the records say what
happened. This module reads those committed files and counts; it computes no statistic. A file that is
missing or unreadable leaves its fact as None ("not recorded"): the validator reports broken results.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.documents import RunDocument, RunTimings
from benchmark.errors import SagoError
from benchmark.packaged import ARTEFACTS
from benchmark.results import ResultsFolder
from benchmark.rows import RunRow, TruncationRow
from benchmark.schema import BASELINE_VARIANT_ID
from benchmark.stats import validity
from benchmark.submissions import Submission

TRUNCATION_COLUMNS = ("finished", "response", "item_id", "variant_id")
"""What :func:`truncation` reads of a records file."""

_GGUF_TYPE = re.compile(r"[._-]((?:i?q\d+(?:_[a-z0-9]+)*)|bf16|f16|f32)\.gguf$", re.IGNORECASE)
_INSTRUCT_WORDS = re.compile(r"(?:^|[^a-z])(instruct|chat|it)(?:[^a-z]|$)", re.IGNORECASE)
_BASE_WORD = re.compile(r"(?:^|[^a-z])base(?:[^a-z]|$)", re.IGNORECASE)


def tuning_from_name(*names: str) -> str | None:
    """``"instruct"`` or ``"base"`` when a name says so (``-Instruct``, ``chat``, ``-it``, ``base``).

    >>> tuning_from_name("SmolLM2-135M-Instruct"), tuning_from_name("Gemma 3 270M base")
    ('instruct', 'base')
    >>> tuning_from_name("gpt2") is None
    True
    """
    text = " ".join(names)
    if _INSTRUCT_WORDS.search(text):
        return "instruct"
    return "base" if _BASE_WORD.search(text) else None


def gguf_type(filename: str) -> str | None:
    """The quantisation type in a GGUF file name.

    >>> gguf_type("SmolLM2-135M.Q4_1.gguf"), gguf_type("gemma-3-270m-q4_k_m.gguf"), gguf_type("x.bin")
    ('Q4_1', 'Q4_K_M', None)
    """
    found = _GGUF_TYPE.search(filename)
    return found.group(1).upper() if found else None


def quantisation(submission: Submission | None) -> str | None:
    """``GGUF <type>`` for a packaged GGUF file, ``none`` for Hub safetensors weights."""
    if submission is None:
        return None
    model = submission.model
    if model.kind == "hub":
        return "none"
    if model.kind == "packaged" and model.artefact in ARTEFACTS:
        found = gguf_type(ARTEFACTS.get(model.artefact).filename)
        return f"GGUF {found}" if found else "GGUF"
    return None


def prompt_format(run: RunDocument | None, setting: str | None) -> str | None:
    """What the run did (run.json ``model.chat_template``), else what the submission asks for.

    >>> prompt_format(None, "never"), prompt_format(None, "auto")
    ('raw', 'chat template if it has one')
    """
    applied = run.model.chat_template if run else None
    done = {"applied": "chat template", "raw prompt": "raw"}.get(applied or "")
    asked = {"always": "chat template", "never": "raw", "auto": "chat template if it has one"}
    return done or asked.get(setting or "")


def truncation(folder: ResultsFolder, deltas: Path | None = None) -> list[TruncationRow]:
    """Responses cut at the token cap, per dataset and then ``"all"``, from ``records/*.parquet``.

    Only the ``finished`` (False: the response reached ``max_new_tokens``), ``response``, ``item_id`` and
    ``variant_id`` columns are read; ``degenerate`` counts the cut responses that end in a loop
    (:func:`validity.degenerate`), ``unanswered`` the cut baseline responses that the grader did not find
    correct in deltas.parquet (an answer that may not have fitted under the cap); ``deltas``: the file to
    read that from when it is not yet in place (analyze stages freshly computed deltas until it commits,
    and reading the folder's file then would count every cut baseline as unanswered).
    """
    right = baseline_correct(deltas or folder.deltas)
    found: list[TruncationRow] = []
    for path, table in record_tables(folder, TRUNCATION_COLUMNS):
        finished, responses, items, variants = (table.column(k).to_pylist() for k in TRUNCATION_COLUMNS)
        baseline = [
            (str(i), f) for i, v, f in zip(items, variants, finished, strict=True) if v == BASELINE_VARIANT_ID
        ]
        found.append(
            {
                "dataset": path.stem,
                "cut": sum(1 for f in finished if f is False),
                "total": len(finished),
                "degenerate": sum(
                    validity.degenerate(str(r or ""), finished=f is not False)
                    for f, r in zip(finished, responses, strict=True)
                ),
                "unanswered": sum(f is False and not right.get((path.stem, i), False) for i, f in baseline),
            }
        )
    if found:
        found.append(
            {
                "dataset": validity.ALL_DATASETS,
                "cut": sum(t["cut"] for t in found),
                "total": sum(t["total"] for t in found),
                "degenerate": sum(t.get("degenerate", 0) for t in found),
                "unanswered": sum(t.get("unanswered", 0) for t in found),
            }
        )
    return found


def record_tables(folder: ResultsFolder, columns: Sequence[str]) -> Iterator[tuple[Path, pa.Table]]:
    """``columns`` of each ``records/*.parquet`` of a run; a linked or unreadable file is left out (the
    validator reports it), so every count of the run leaves out the same files."""
    for path in folder.record_files():
        if path.is_symlink():
            continue  # never follow a link out of a submission folder
        try:
            table = pq.read_table(path, columns=list(columns))
        except (OSError, ValueError, KeyError):
            continue
        yield path, table


def baseline_correct(path: Path) -> dict[tuple[str, str], bool]:
    """(dataset, item_id) -> whether the grader found the baseline response correct (a deltas.parquet);
    empty when the deltas are missing or unreadable."""
    try:
        deltas = pq.read_table(path, columns=["dataset", "item_id", "variant_id", "correct"])
    except (OSError, ValueError, KeyError):
        return {}
    return {
        (str(d), str(i)): c is True or c == 1.0
        for d, i, v, c in zip(*(deltas.column(k).to_pylist() for k in deltas.column_names), strict=True)
        if v == BASELINE_VARIANT_ID
    }


def tuning_of(submission: Submission | None, names: Sequence[str]) -> tuple[str | None, bool]:
    """``(tuning, declared)``: submission.yaml's ``tuning`` when it declares one, else "instruct" or
    "base" as the model's names say (``names`` plus its Hub id or packaged artefact), else None."""
    declared = getattr(submission, "tuning", None)
    if declared is not None:
        return declared, True
    model = submission.model if submission is not None else None
    known = [*names, getattr(model, "id", "") or "", getattr(model, "artefact", "") or ""]
    return tuning_from_name(*known), False


def read_run(folder: ResultsFolder) -> RunDocument | None:
    """The folder's run.json, or None when it is missing or unreadable."""
    if not folder.has_run():
        return None
    try:
        return folder.read_run()
    except SagoError:
        return None


def run_row(
    submission: Submission, folder: ResultsFolder, names: tuple[str, ...] = (), deltas: Path | None = None
) -> RunRow:
    """The ``models[].run`` block of one complete model from its submission.yaml, run.json and records.

    ``names`` are further names the model goes by (its board name, slug), searched for "instruct" or
    "base" when submission.yaml declares no ``tuning``; ``deltas``: the deltas file analyze read (staged
    when just computed; default the folder's).
    """
    run = read_run(folder)
    timings = run.timings if run else RunTimings()
    tuning, declared = tuning_of(submission, names)
    dtype = (run.model.dtype if run else None) or submission.dtype
    return {
        "tuning": tuning,
        "tuning_declared": declared,
        "prompt_format": prompt_format(run, submission.chat_template),
        "quantisation": quantisation(submission),
        "dtype": str(dtype) if dtype else None,
        "profile": run.profile_name if run else None,
        "items_per_dataset": run.profile.items_per_dataset if run and run.profile else None,
        "token_cap": run.profile.max_new_tokens if run and run.profile else None,
        "engine": run.engine if run else None,
        "batch_size": run.batch_size if run else None,
        "threads": run.hardware.torch_threads if run else None,
        "wall_seconds": timings.wall_seconds,
        "model_seconds": timings.model_seconds,
        "peak_rss_mib": timings.peak_rss_mib,
        "truncated": truncation(folder, deltas) if run else [],
    }
