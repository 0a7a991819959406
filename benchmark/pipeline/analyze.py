"""``sago analyze`` end to end: deltas (if stale) → summary per submission → combined leaderboard.

Reads top to bottom: find submissions, bring each complete one's deltas up to date, summarise it,
then build the leaderboard from every summary plus the pending submissions' metadata. Nothing derived is
taken on trust: deltas and summaries are read back only when their origin is known (this machine's
analyze wrote them, or the checkout commits them: :mod:`benchmark.pipeline.origin`) and are recomputed
otherwise.

Every output (deltas, summaries, the leaderboard) is written all or none (:mod:`benchmark.staging`):
staged beside its target, renamed only when all are written, the leaderboard last. A failure, a full
disk included, leaves every file as it was; a run killed while renaming is finished by the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import click
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from benchmark import jsonio
from benchmark.documents import LeaderboardDocument, Rendered, SummaryDocument
from benchmark.errors import FileProblem, SagoError
from benchmark.integrity import (
    EVALUATE,
    RECORD_TYPES,
    Problem,
    delta_types,
    hash_problems,
    parquet_problem,
    plain_files,
)
from benchmark.pipeline import origin
from benchmark.profiles import board_profile, get_profile
from benchmark.results import ACTIVATIONS_SUFFIX, OWN_CONFIDENCE_DIR, RECORDS_SUFFIX, ResultsFolder
from benchmark.safetensors_check import read_safetensors
from benchmark.schema import SUMMARY_SCHEMA_VERSION
from benchmark.staging import Staged, exclusive, recover
from benchmark.stats.api_models import API_TABLE_FILE, ApiRow, ApiTable, api_rows
from benchmark.stats.facts import run_row
from benchmark.stats.leaderboard import Entry, build_leaderboard
from benchmark.stats.profile_compare import cut_flags, profile_comparison
from benchmark.stats.rewrite_accuracy import rewrite_accuracy_rows
from benchmark.stats.summary import DEFAULT_OPTIONS, AnalysisOptions, load_summary, summary_document
from benchmark.stats.validity import gold_answers
from benchmark.submissions import Submission, list_slugs, load_submission

VariantFrames = Callable[[], Mapping[str, pd.DataFrame]]
POLITENESS_AXIS = "politeness"
"""the scorer choice naming the politeness judge (``AxisScorers.backbones``)."""


@dataclass(frozen=True)
class AnalyzeRequest:
    """What ``sago analyze`` was asked to do."""

    set_name: str
    version: str
    root: Path
    """the ``submissions/`` folder."""
    out: Path
    """where the combined leaderboard goes."""
    slugs: tuple[str, ...] = ()
    """re-analyse only these (others keep their summary); empty = all."""
    options: AnalysisOptions = DEFAULT_OPTIONS
    """seed, resamples, epsilons."""
    profile: str | None = None
    """whose runs: None (or the version's board profile) analyses ``<version>/``, another profile the
    ``<version>-<profile>/`` folders, into a board of its own (never pooled with the board profile's)."""
    compare_with: Path | None = None
    """for another profile: the board profile's leaderboard.json, which the ``profile_comparison`` block
    sets this profile's board beside (None, or no such file: no comparison)."""

    @property
    def other_profile(self) -> str | None:
        """The profile analysed when it is not the version's board profile (None for the board profile)."""
        return None if self.profile == board_profile(self.version) else self.profile

    def folder(self, slug: str, *, profile: str | None = None) -> ResultsFolder:
        """``slug``'s results folder of this request's profile (``profile`` overrides it)."""
        chosen = self.profile if profile is None else profile
        return ResultsFolder.of(slug, self.set_name, self.version, self.root, profile=chosen)


def current_axes() -> dict[str, str]:
    """The scorer and rule choices a recomputation would use now (nothing is loaded)."""
    from benchmark.axes import AxisScorers  # heavy imports (text scorers) only when needed

    return dict(AxisScorers.default().backbones)


def deltas_are_stale(folder: Path, axes: Mapping[str, str] | None = None) -> bool:
    """True when ``deltas.parquet`` is missing, was computed from other *content* or settings, or has
    other measures than those registered now (a measure added or removed).

    The deltas file records the sha256 of every input (run.json, records, activations), the axes version
    and the scorer/rule choices (``benchmark.axes.results.input_fingerprint``); a file without that record
    (written by an older sago-bench) is stale. File times are never consulted.
    """
    from benchmark.axes.measures import delta_columns
    from benchmark.axes.results import input_fingerprint, read_input_fingerprint

    target = ResultsFolder(folder).deltas
    if not target.is_file():
        return True
    try:
        stored = read_input_fingerprint(target)
        columns = tuple(pq.read_schema(target).names)
    except (pa.ArrowInvalid, OSError, ValueError):
        return False  # unreadable: not silently recomputed, check_results names the file instead
    if stored is None or columns != delta_columns():
        return True
    return stored != input_fingerprint(folder, current_axes() if axes is None else axes)


def deltas_to_recompute(folder: Path, axes: Mapping[str, str] | None = None) -> bool:
    """True when analyze computes ``deltas.parquet`` afresh instead of reading it: it is missing or stale
    (:func:`deltas_are_stale`), or nothing vouches for where it came from (:mod:`benchmark.pipeline.origin`:
    this machine's analyze wrote it, or the checkout commits it). An unreadable file is neither: it is
    reported by :func:`check_results`, never silently replaced.
    """
    if deltas_are_stale(folder, axes):
        return True
    deltas = ResultsFolder(folder).deltas
    try:
        pq.read_schema(deltas)
    except (pa.ArrowException, OSError, ValueError):
        return False
    return not origin.vouched_for(deltas)


class Deltas(NamedTuple):
    """A submission's deltas and the file they were read from (the staged file when recomputed)."""

    frame: pd.DataFrame
    path: Path
    """``deltas.parquet``, or its staged sibling until the run commits."""


def load_deltas(
    folder: Path,
    slug: str,
    variant_frames: VariantFrames,
    staged: Staged,
    axes: Mapping[str, str] | None = None,
) -> Deltas:
    """The submission's deltas, recomputed through ``benchmark.axes`` first unless they can be read as
    they are (:func:`deltas_to_recompute` under ``axes``); a recomputed table is staged, not yet written."""
    results = ResultsFolder(folder)
    path = results.deltas
    if deltas_to_recompute(folder, axes):
        from benchmark.axes.results import DELTAS_OPTIONS, deltas_table

        table = deltas_table(folder, variant_frames(), model=slug)
        path = staged.write(results.deltas, lambda tmp: pq.write_table(table, tmp, **DELTAS_OPTIONS))
        # Recorded now, before the rename: the registry holds content hashes, the same for the staged
        # file and the final one (a run that fails later leaves a record of bytes no file holds).
        origin.remember(path)
    return Deltas(pd.read_parquet(path), path)


def check_results(folder: Path, axes: Mapping[str, str] | None = None) -> None:
    """Refuse a results folder analyze cannot read, before anything is computed or written.

    Deltas that will be read as they are must load with the contract's types; deltas that will be
    recomputed are not read, so then the inputs are checked: files changed since run.json hashed them,
    untyped records, malformed activations (results from before run.json had hashes are checked for
    types only).
    """
    results = ResultsFolder(folder)
    refuse_response_only(results)
    if not deltas_to_recompute(folder, axes):
        problem = parquet_problem(results.deltas, delta_types())
        if problem is not None:
            raise SagoError(
                f"{results.deltas}: {problem}; delete it and re-run `sago analyze` to recompute it"
            )
        return
    run = results.read_run()
    problems = hash_problems(folder, run) if run.files_given else []
    problems += [
        Problem(results.relative(p), found, EVALUATE)
        for p in plain_files(results.records_dir, RECORDS_SUFFIX)
        if (found := parquet_problem(p, RECORD_TYPES, dataset=p.stem)) is not None
    ]
    for path in plain_files(results.activations_dir, ACTIVATIONS_SUFFIX):
        try:
            read_safetensors(path)
        except FileProblem as err:
            problems.append(Problem(results.relative(path), err.problem, err.fix))
    if problems:
        raise SagoError(f"{folder / problems[0].path}: {problems[0].problem}; {problems[0].fix}")


def refuse_response_only(results: ResultsFolder) -> None:
    """A result that names measures it could not measure (an lm-eval import) stays off the board; an API
    model's run (``model.source`` "api") is analysed for the API table."""
    try:
        run = results.read_run() if results.run.is_file() else None
    except SagoError:
        return  # an unreadable run.json is reported where the run's inputs are checked
    missing = run.not_measured if run is not None and not run.is_api else {}
    if missing:
        raise SagoError(
            f"{results.run}: a response-only result ({next(iter(missing.values()))}: "
            f"{', '.join(sorted(missing))}) stays off the board; move it out of the submissions folder "
            "(its summary.json is already written) and let `sago evaluate` measure all four axes"
        )


def default_variant_frames(set_name: str, version: str) -> VariantFrames:
    """A loader of the variant set's frames that reads (and verifies) the set at most once."""

    @cache
    def frames() -> Mapping[str, pd.DataFrame]:
        from benchmark.variants import load_variant_set

        loaded: Mapping[str, pd.DataFrame] = load_variant_set(set_name, version).frames()
        return loaded

    return frames


def summary_for(
    slug: str, folder: Path, request: AnalyzeRequest, variant_frames: VariantFrames, staged: Staged
) -> tuple[SummaryDocument, Path]:
    """Recompute (selected or missing) or load (otherwise) the summary of one complete submission; also
    the deltas file it was made from (staged when recomputed).

    A stored summary is read only for a submission ``--slug`` leaves out, and only when it is vouched for
    together with the deltas it was made from (:func:`benchmark.pipeline.origin.vouched_for`), those deltas
    need no recomputing, and its options are the requested ones; anything else is recomputed.
    """
    results = ResultsFolder(folder)
    existing = results.summary
    axes = freshness_axes(folder, slug, request)
    left_out = bool(request.slugs) and slug not in request.slugs
    if (
        left_out
        and not deltas_to_recompute(folder, axes)
        and origin.vouched_for(existing, made_from=results.deltas)
    ):
        summary, options = load_summary(existing), request.options
        stored = summary.to_json()  # of the current schema, computed with these options
        if (
            stored.get("schema_version") == SUMMARY_SCHEMA_VERSION
            and stored.get("seed") == options.seed
            and stored.get("bootstrap_resamples") == options.resamples
            and stored.get("epsilons") == list(options.epsilons)
        ):
            return summary, results.deltas
    if left_out and deltas_to_recompute(folder, axes) and paid_judge():
        raise SagoError(
            f"{results.deltas} must be recomputed, and with the paid judge {paid_judge()} that would send "
            f"judge requests for {slug} too; add --slug {slug}, or run without --judge first"
        )
    deltas = load_deltas(folder, slug, variant_frames, staged, axes)
    if deltas.frame.empty:
        raise SagoError(f"{results.deltas}: no rows; re-run `sago evaluate {slug}`")
    from benchmark.axes import read_scorer_backbones

    document = summary_document(
        deltas.frame,
        model=slug,
        set_name=request.set_name,
        version=request.version,
        options=request.options,
        axes=read_scorer_backbones(deltas.path),
    )
    return document, deltas.path


def freshness_axes(folder: Path, slug: str, request: AnalyzeRequest) -> Mapping[str, str] | None:
    """The scorer choices ``slug``'s deltas are checked against: the current ones (None), except that a
    submission ``--slug`` leaves out keeps the politeness judge its deltas were made with. Choosing a judge
    for one model (``--slug X --judge openai:...``) must not re-judge, and pay for, every other model's rows.
    """
    if not request.slugs or slug in request.slugs:
        return None
    from benchmark.axes.results import read_input_fingerprint

    target = ResultsFolder(folder).deltas
    try:
        stored = read_input_fingerprint(target) if target.is_file() else None
    except (pa.ArrowInvalid, OSError, ValueError):
        return None  # unreadable: check_results names it
    judged = dict(stored.axes).get(POLITENESS_AXIS) if stored is not None else None
    if judged is None:
        return None
    return {**current_axes(), POLITENESS_AXIS: judged}


def paid_judge() -> str | None:
    """The politeness judge chosen for this process when it sends paid requests (``openai:<model>``)."""
    import os

    from benchmark.axes.scorers import POLITENESS_ENV

    name = os.environ.get(POLITENESS_ENV, "")
    return name if name.startswith("openai:") else None


def _folder_of(slug: str, submission: Submission, request: AnalyzeRequest) -> ResultsFolder | None:
    """Where ``submission``'s run of the request's profile is: an API model's run is always in
    ``<version>/`` (:func:`benchmark.harness.evaluate.run_folder`), so on another profile's board it has
    none (None: pending there, and out of that board's API table)."""
    if submission.model.kind == "api":
        return None if request.other_profile else request.folder(slug, profile=board_profile(request.version))
    return request.folder(slug)


def collect_entries(
    request: AnalyzeRequest, variant_frames: VariantFrames, staged: Staged
) -> tuple[list[Entry], dict[str, Path]]:
    """One ``Entry`` per submission folder: complete ones with a fresh summary, others pending; and per
    complete submission the deltas file its summary was made from."""
    slugs = list_slugs(request.root)
    unknown = sorted(set(request.slugs) - set(slugs))
    if unknown:
        raise SagoError(f"no submission folder for {', '.join(unknown)}; see `ls submissions/`")
    # Every input is checked before anything is computed or written: one bad file fails the run early.
    metas = {slug: load_submission(slug, request.root) for slug in slugs}
    folders = {slug: _folder_of(slug, metas[slug], request) for slug in slugs}
    for slug, folder in folders.items():
        if folder is not None and folder.has_run():
            check_results(folder.path, freshness_axes(folder.path, slug, request))
    entries, made_from = [], {}
    for slug in tqdm(slugs, desc="analyze", unit="submission", leave=False):
        meta, results = metas[slug], folders[slug]
        if results is None or not results.has_run():
            entries.append(Entry(slug, meta, None, None))
            continue
        summary, made_from[slug] = summary_for(slug, results.path, request, variant_frames, staged)
        relative = results.summary.relative_to(request.root.resolve().parent).as_posix()
        run = run_row(meta, results, (meta.name, slug), deltas=made_from[slug])
        rewrites = tuple(rewrite_accuracy_rows(pd.read_parquet(made_from[slug]), slug))
        entries.append(Entry(slug, meta, summary, relative, run, rewrites))
    return entries, made_from


JOURNAL = "analyze-staged.json"
"""The journal of analyze's staged outputs, beside the record of what it wrote (this machine's cache)."""


def journal() -> Path:
    """Where analyze keeps the plan of its renames until they are done (:mod:`benchmark.staging`)."""
    return origin.registry().with_name(JOURNAL)


def refuse_pending_analysis(command: str = "`sago leaderboard build`") -> None:
    """One line when an analyze was killed while renaming its outputs: summaries and leaderboard.json
    may then disagree, and ``command`` would publish the mix. `sago analyze` finishes the renames first."""
    if journal().is_file():
        raise SagoError(
            f"{journal()}: an analyze was killed while renaming its outputs, so summaries and the "
            f"leaderboard may disagree; run `sago analyze` (it finishes them first), then {command} again"
        )


def run_analysis(request: AnalyzeRequest, variant_frames: VariantFrames | None = None) -> LeaderboardDocument:
    """Write every summary and the leaderboard, all or none; return the leaderboard document."""
    with exclusive(journal()):
        finished = recover(journal())  # a run killed while renaming its outputs is finished first
        if finished:
            click.echo(
                f"note: finished renaming {finished} output(s) of an analyze that was killed", err=True
            )
        frames = variant_frames or default_variant_frames(request.set_name, request.version)
        staged = Staged(journal())
        try:
            entries, made_from = collect_entries(request, frames, staged)
            # API models have their own table (another confidence, no activations): never on the open board
            board = [e for e in entries if e.submission.model.kind != "api"]
            document = build_leaderboard(
                board,
                set_name=request.set_name,
                version=request.version,
                options=request.options,
                gold=gold_answers(frames()),  # the accuracy's trivial baseline reads the reference answers
            )
            for entry in entries:
                if entry.summary is not None:
                    stage_summary(entry, made_from[entry.slug], request, staged)
            api = ApiTable(request.set_name, request.version, tuple(api_table_rows(entries, request)))
            table = request.out.with_name(API_TABLE_FILE)
            if api.rows or table.exists():
                staged.write(table, lambda tmp: _write(tmp, api))
            if request.other_profile is not None:
                document = profile_board(document, request, request.other_profile, entries, made_from)
            final = document
            staged.write(request.out, lambda tmp: _write(tmp, final))  # renamed last
            staged.commit()
        except BaseException:
            staged.discard()
            raise
        return document


def profile_board(
    document: LeaderboardDocument,
    request: AnalyzeRequest,
    profile: str,
    entries: Sequence[Entry],
    made_from: Mapping[str, Path],
) -> LeaderboardDocument:
    """Another profile's board: ``document`` with its ``profile`` named and, when the board profile's
    leaderboard is at ``request.compare_with``, the ``profile_comparison`` block that sets the two side by
    side (:func:`benchmark.stats.profile_compare.profile_comparison`); ``made_from``: each model's deltas
    in this profile, which the cap-only rows cut to the variants the board profile also ran."""
    data: dict[str, Any] = document.to_json() | {"profile": profile}
    board = _board_profile_document(request)
    if board is not None:  # the comparison reads each model's board-profile summary and deltas
        first = board_profile(request.version)
        per_item_b = {e.slug: list(e.summary.per_item) for e in entries if e.summary is not None}
        summaries = {slug: request.folder(slug, profile=first).summary for slug in per_item_b}
        per_item_a = {  # a board-profile summary that is not there has no rows
            slug: list(SummaryDocument.read(path).per_item) if path.is_file() else []
            for slug, path in summaries.items()
        }
        deltas_a = {
            slug: pd.read_parquet(path)
            for slug in per_item_b
            if (path := request.folder(slug, profile=first).deltas).is_file()
        }
        deltas_b = {slug: pd.read_parquet(made_from[slug]) for slug in deltas_a}
        # the responses cut on the prompts both profiles ran: the cap's effect on cutting, like for like
        records_a = {slug: cut_flags(request.folder(slug, profile=first)) for slug in deltas_a}
        records_b = {slug: cut_flags(request.folder(slug)) for slug in deltas_a}
        data["profile_comparison"] = profile_comparison(
            board,
            document,
            per_item_a,
            per_item_b,
            profiles=(first, profile),
            max_new_tokens=(get_profile(first).max_new_tokens, get_profile(profile).max_new_tokens),
            deltas=(deltas_a, deltas_b),
            records=(records_a, records_b),
        )
    return LeaderboardDocument.from_json(jsonio.clean(data))


def _board_profile_document(request: AnalyzeRequest) -> LeaderboardDocument | None:
    """The board profile's leaderboard the comparison reads (None without one); one of another set or
    version is refused in one line."""
    path = request.compare_with
    if path is None or not path.is_file():
        return None
    board = LeaderboardDocument.read(path)
    if (board.set, board.version) != (request.set_name, request.version) or board.profile:
        raise SagoError(
            f"{path} is not the {board_profile(request.version)}-profile board of "
            f"{request.set_name}/{request.version}; pass --compare-with the version's own leaderboard.json"
        )
    return board


def api_table_rows(entries: Sequence[Entry], request: AnalyzeRequest) -> list[ApiRow]:
    """The API table's rows: each analysed API model's headline cells and own-token confidence shifts."""
    rows: list[ApiRow] = []
    for entry in entries:
        if entry.submission.model.kind != "api" or entry.summary is None:
            continue
        results = request.folder(entry.slug, profile=board_profile(request.version))
        profile = results.read_run().profile_name
        rows += api_rows(
            entry.slug, entry.submission.name, entry.summary, own_confidence_frames(results), profile
        )
    return rows


def own_confidence_frames(results: ResultsFolder) -> list[pd.DataFrame]:
    """An API run's own-token confidence tables; none when run.json says it was not measured (the endpoint
    refused log-probabilities: then no reply, or only the first few, has them, and no shift is shown)."""
    if results.read_run().model.own_confidence not in (None, "measured"):
        return []
    return [pd.read_parquet(p) for p in plain_files(results.path / OWN_CONFIDENCE_DIR, RECORDS_SUFFIX)]


def stage_summary(entry: Entry, deltas: Path, request: AnalyzeRequest, staged: Staged) -> None:
    """Stage one summary and record it, with the deltas it came from, as this machine's analyze's."""
    summary, folder = entry.summary, _folder_of(entry.slug, entry.submission, request)
    assert summary is not None and folder is not None  # only entries with a run have a summary to stage
    origin.remember(staged.write(folder.summary, lambda tmp: _write(tmp, summary)), made_from=deltas)


def _write(path: Path, document: Rendered) -> None:
    """Write a staged document as it renders itself (staging renames it into place afterwards)."""
    path.write_text(document.dumps(), encoding="utf-8")
