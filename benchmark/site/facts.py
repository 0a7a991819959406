"""What each model is: size, base or instruct, prompt format, quantisation, token cap and truncation.

``leaderboard.json`` carries what ``submission.yaml`` says (name, parameters, dtype, the chat-template
setting); what actually happened in the run is in ``run.json`` (template applied or raw prompt, dtype,
token cap) and the records (how many responses stopped at the cap). This module reads those committed
files and counts; it computes no statistic. A file that is missing or unreadable leaves its fact as
``None`` ("not recorded" on the page), never an error: the validator reports broken results.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmark.documents import RunDocument
from benchmark.errors import SagoError
from benchmark.packaged import ARTEFACTS
from benchmark.results import ResultsFolder
from benchmark.rows import ModelRow
from benchmark.site.board import ALL, Board
from benchmark.submissions import Submission, load_submission

_GGUF_TYPE = re.compile(r"[._-]((?:i?q\d+(?:_[a-z0-9]+)*)|bf16|f16|f32)\.gguf$", re.IGNORECASE)
_INSTRUCT_WORDS = re.compile(r"(?:^|[^a-z])(instruct|chat|it)(?:[^a-z]|$)", re.IGNORECASE)
_BASE_WORD = re.compile(r"(?:^|[^a-z])base(?:[^a-z]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Truncation:
    """How many responses stopped at the token cap instead of an end-of-sequence token."""

    cut: int
    """responses that reached ``max_new_tokens``."""
    total: int
    """responses recorded."""

    @property
    def share(self) -> float | None:
        """``cut / total`` (None without responses)."""
        return self.cut / self.total if self.total else None


@dataclass(frozen=True)
class ModelFacts:
    """One model's description for the leaderboard table and its page."""

    slug: str
    """submission slug."""
    parameters: int | None
    """parameter count from submission.yaml."""
    tuning: str | None
    """``"base"`` or ``"instruct"`` (None: neither declared nor evident from the name)."""
    tuning_declared: bool
    """``tuning`` comes from submission.yaml (else from the model's name)."""
    prompt_format: str | None
    """``"chat template"``, ``"raw"`` or, before a run, what the setting asks for."""
    quantisation: str | None
    """e.g. ``"GGUF Q4_1"`` or ``"none"`` (None: not recorded)."""
    dtype: str | None
    """dtype the weights ran in (run.json, else submission.yaml)."""
    token_cap: int | None
    """``max_new_tokens`` of the run's profile."""
    truncation: Mapping[str, Truncation] = field(default_factory=dict)
    """per dataset, and ``"all"`` for every dataset together."""

    @property
    def size(self) -> str:
        """The parameter count in words: ``135M``, ``7.62B``."""
        return readable_count(self.parameters)


def readable_count(value: int | None) -> str:
    """A parameter count as people write it (three significant digits).

    >>> readable_count(134515008), readable_count(7615616512), readable_count(10**9), readable_count(None)
    ('135M', '7.62B', '1B', '–')
    """
    if value is None or value <= 0:
        return "\u2013"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return str(value)


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


def _quantisation(submission: Submission | None) -> str | None:
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


def _prompt_format(run: RunDocument | None, setting: str | None) -> str | None:
    """What the run did (run.json ``model.chat_template``), else what the submission asks for."""
    applied = _model_field(run, "chat_template")
    if applied == "applied":
        return "chat template"
    if applied == "raw prompt":
        return "raw"
    return {"always": "chat template", "never": "raw", "auto": "chat template if it has one"}.get(
        setting or ""
    )


def _model_field(run: RunDocument | None, key: str) -> Any:
    model = run.data.get("model") if run else None
    return model.get(key) if isinstance(model, Mapping) else None


def truncation(folder: ResultsFolder) -> dict[str, Truncation]:
    """Responses cut at the token cap, per dataset and ``"all"``, from ``records/*.parquet``.

    Only the ``finished`` column is read (False: the response reached ``max_new_tokens``).
    """
    found: dict[str, Truncation] = {}
    for path in folder.record_files():
        if path.is_symlink():
            continue  # never follow a link out of a submission folder
        try:
            finished = pq.read_table(path, columns=["finished"]).column("finished").to_pylist()
        except (OSError, ValueError, KeyError):
            continue  # the validator reports unreadable records
        found[path.stem] = Truncation(sum(1 for f in finished if f is False), len(finished))
    if found:
        found[ALL] = Truncation(sum(t.cut for t in found.values()), sum(t.total for t in found.values()))
    return found


def _submission(slug: str, root: Path) -> Submission | None:
    try:
        return load_submission(slug, root)
    except SagoError:
        return None  # `sago submissions validate` reports it


def _run(model: ModelRow, board: Board, root: Path) -> tuple[ResultsFolder, RunDocument | None]:
    folder = ResultsFolder.of(model["slug"], board.data["set"], board.data["version"], root)
    if model.get("status") != "complete":
        return folder, None
    try:
        return folder, folder.read_run()
    except SagoError:
        return folder, None


def model_facts(board: Board, model: ModelRow, submissions_root: Path) -> ModelFacts:
    """The facts of one model of ``board`` from its submission.yaml, run.json and records."""
    submission = _submission(model["slug"], submissions_root)
    folder, run = _run(model, board, submissions_root)
    declared = getattr(submission, "tuning", None)
    names = [str(model.get("name") or ""), model["slug"]]
    if submission is not None:
        names.append(getattr(submission.model, "id", "") or getattr(submission.model, "artefact", ""))
    dtype = _model_field(run, "dtype") or model.get("dtype")
    cap = run.profile.max_new_tokens if run and run.profile else None
    parameters = model.get("parameters")
    return ModelFacts(
        model["slug"],
        parameters if isinstance(parameters, int) and not isinstance(parameters, bool) else None,
        declared or tuning_from_name(*names),
        declared is not None,
        _prompt_format(run, str(model.get("chat_template") or "")),
        _quantisation(submission),
        str(dtype) if dtype else None,
        cap,
        truncation(folder) if run is not None else {},
    )


def all_facts(board: Board, submissions_root: Path) -> dict[str, ModelFacts]:
    """:func:`model_facts` of every model of the board, by slug."""
    return {m["slug"]: model_facts(board, m, submissions_root) for m in board.models}


def percent(share: float | None) -> str:
    """A share in per cent for a table cell.

    >>> percent(0.0), percent(0.123456), percent(1.0), percent(None), percent(0.0004)
    ('0 %', '12.3 %', '100 %', '–', '0.04 %')
    """
    if share is None or not math.isfinite(share):
        return "\u2013"
    value = 100 * share
    if value in (0, 100):
        return f"{value:.0f} %"
    return f"{value:.3g} %"
