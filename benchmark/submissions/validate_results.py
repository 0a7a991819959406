"""Checks of one ``results/<set>/<version>/`` folder (see docs/CONTRACTS.md sections 2-4).

Results are written by ``sago evaluate`` and ``sago analyze``, but they arrive by pull request, so the
validator trusts nothing in them: every file must be one the pipeline writes, within a size limit,
readable, with a schema version this code knows and made on a variant set that exists in ``variants/``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmark import paths
from benchmark.documents import MANIFEST, REGENERATE, ManifestDocument, RunDocument, SummaryDocument
from benchmark.engine_names import STAND_IN, known_engine, local_engine
from benchmark.errors import FileProblem, SagoError, human_size
from benchmark.integrity import (
    EVALUATE,
    OWN_CONFIDENCE_TYPES,
    RECORD_TYPES,
    delta_types,
    hash_problems,
    load_table,
    plain_files,
)
from benchmark.paths import inside, is_name
from benchmark.profiles import PROFILES, parse_results_folder_name, results_folder_name
from benchmark.provenance import sha256_file
from benchmark.results import (
    ACTIVATIONS_DIR,
    ACTIVATIONS_SUFFIX,
    CHECKPOINT_DIR,
    DELTAS_FILE,
    OWN_CONFIDENCE_DIR,
    RECORDS_DIR,
    RECORDS_SUFFIX,
    RESULT_FILES,
    RUN_FILE,
    SUMMARY_FILE,
    TOP_FILES,
    ResultsFolder,
)
from benchmark.safetensors_check import TensorInfo, read_safetensors, tensor_arrays
from benchmark.schema import BASELINE_VARIANT_ID
from benchmark.submissions.failures import Failure
from benchmark.submissions.plausible import activation_problem, copied_problem, records_problem
from benchmark.submissions.schema import ApiModel, HubModel, PackagedModel, Submission

MiB = 1 << 20
VARIANT_KEYS = ("item_id", "variant_id", "family", "place", "strength", "prompt", "item_rank")
"""the variant-set columns the plausibility checks read."""
# Largest file of each kind we accept. GitHub refuses files over 100 MB, so activations stop there;
# the others are an order of magnitude above what 64 items x ~90 variants produce.
SIZE_LIMITS: dict[str, int] = {
    RUN_FILE: RunDocument.LIMIT,
    SUMMARY_FILE: SummaryDocument.LIMIT,
    DELTAS_FILE: 32 * MiB,
    RECORDS_DIR: 32 * MiB,
    ACTIVATIONS_DIR: 100 * MiB,
    OWN_CONFIDENCE_DIR: 32 * MiB,
}
# checkpoint/ is git-ignored in-progress state: it never reaches a pull request, so it is not judged.
IGNORED = frozenset({CHECKPOINT_DIR})
SUB_FOLDERS = dict(RESULT_FILES)


@dataclass(frozen=True)
class KnownSet:
    """What results may claim about one released variant set."""

    hashes: frozenset[str]
    """sha256 values that identify the set (the manifest's own hash, and a declared one)."""
    datasets: frozenset[str]
    folder: Path | None = None
    tables: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """dataset -> (its table's path in the folder, the sha256 the manifest lists for it)."""

    def frame(self, dataset: str) -> pd.DataFrame | None:
        """The set's table of ``dataset`` when it is the file the manifest hashes (None otherwise)."""
        table = self.tables.get(dataset)
        if self.folder is None or table is None:
            return None
        try:
            path = inside(self.folder, table[0])
        except SagoError:
            return None
        if not path.is_file() or path.is_symlink() or path.stat().st_size > SIZE_LIMITS[RECORDS_DIR]:
            return None
        found = path.stat()
        return _variant_frame(str(path), table[1], found.st_size, found.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _variant_frame(path: str, sha256: str, size: int, mtime_ns: int) -> pd.DataFrame | None:
    """A variant table once its bytes have the listed hash (cached by size and time: a change rehashes)."""
    if sha256_file(Path(path)) != sha256:
        return None
    try:
        return pq.read_table(path, columns=list(VARIANT_KEYS)).to_pandas()
    except (pa.ArrowException, OSError, ValueError, KeyError):
        return None


def known_variant_sets(variants_root: Path) -> dict[tuple[str, str], KnownSet]:
    """Each ``(set, version)`` under ``variants_root`` with its hashes and datasets; a manifest that does
    not read still identifies its set by hash (``sago variants verify`` reports it), with no datasets."""
    known: dict[tuple[str, str], KnownSet] = {}
    if not variants_root.is_dir():
        return known
    for path in sorted(variants_root.glob(f"*/*/{MANIFEST}")):
        hashes = {sha256_file(path)}
        try:
            manifest: ManifestDocument | None = ManifestDocument.read(path)
        except SagoError:
            manifest = None
        if manifest is not None and manifest.declared_sha256 is not None:
            hashes.add(manifest.declared_sha256)
        files = manifest.files if manifest is not None else {}
        datasets = manifest.datasets if manifest is not None else {}
        tables = {name: (entry.file, files[entry.file]) for name, entry in datasets.items()}
        known[(path.parent.parent.name, path.parent.name)] = KnownSet(
            frozenset(hashes), frozenset(datasets), path.parent, tables
        )
    return known


def in_progress(folder: Path) -> bool:
    """True when a results folder holds only an evaluation's checkpoint (a run not finished yet)."""
    entries = [e.name for e in folder.iterdir()] if folder.is_dir() else []
    return entries == [CHECKPOINT_DIR]


def check_result_folder(
    folder: Path, rel: Path, known: dict[tuple[str, str], KnownSet], submission: Submission | None = None
) -> list[Failure]:
    """Every check of one results folder; ``rel`` is how paths are printed, and run.json must name the
    model of ``submission`` (None: it did not parse)."""
    results = ResultsFolder(folder)
    if in_progress(folder):  # a long run's committed checkpoint: no result yet, nothing to judge
        return []
    failures = list(_strays(folder, rel))
    version, profile = parse_results_folder_name(folder.name)
    key = (folder.parent.name, version)
    known_set = known.get(key)
    if known_set is None:
        present = ", ".join(f"{s}/{v}" for s, v in sorted(known)) or "none"
        problem = f"variant set {key[0]}/{key[1]} is not among the frozen sets ({present})"
        fix = "evaluate on a released set, or pass --variants the folder that holds this one"
        failures.append(Failure(str(rel), problem, fix))
    run, found = _check_run_json(results.run, rel / RUN_FILE, known_set, submission)
    failures.extend(found)
    if run is not None:
        failures.extend(_check_profile(run, rel, folder.name, submission))
        # every records/activations file is listed in run.json's ``files`` with its sha256, and matches
        failures.extend(Failure(str(rel / p.path), p.problem, p.fix) for p in hash_problems(folder, run))
    failures.extend(_check_datasets(folder, rel, known_set, run))
    analyze = "run `sago analyze` to rewrite it"
    failures.extend(_check_parquet(results.deltas, rel / DELTAS_FILE, delta_types(), DELTAS_FILE, analyze)[1])
    failures.extend(_check_summary(results.summary, rel / SUMMARY_FILE))
    return failures


def _strays(folder: Path, rel: Path) -> Iterator[Failure]:
    for entry in sorted(folder.iterdir()):
        if entry.name in IGNORED or (entry.name in TOP_FILES and entry.is_file()):
            continue
        suffix = SUB_FOLDERS.get(entry.name)
        if suffix is None or not entry.is_dir():
            fix = "keep only files written by `sago evaluate` / `sago analyze`"
            yield Failure(str(rel / entry.name), "stray entry in a results folder", fix)
            continue
        for inner in sorted(entry.iterdir()):
            if inner.suffix != suffix or not inner.is_file() or not is_name(inner.stem):
                fix = f"only <dataset>{suffix} files belong here"
                yield Failure(str(rel / entry.name / inner.name), f"unexpected entry in {entry.name}/", fix)


def _too_big(path: Path, rel: Path, kind: str) -> Failure | None:
    limit, size = SIZE_LIMITS[kind], path.stat().st_size
    if size <= limit:
        return None
    fix = "evaluate fewer items per file or ask the maintainers about Git LFS"
    return Failure(str(rel), f"{human_size(size)} is over the {human_size(limit)} limit for {kind}", fix)


def _load_json(
    path: Path, rel: Path, document: type[RunDocument | SummaryDocument]
) -> tuple[dict[str, Any] | None, list[Failure]]:
    """Parse a document's JSON object within its size limit and depth bound; failures, not exceptions."""
    big = _too_big(path, rel, document.FILE)
    if big is not None:
        return None, [big]
    try:
        return document.parse(path, REGENERATE), []
    except FileProblem as err:
        return None, [Failure(str(rel), err.problem, err.fix)]


def _check_run_json(
    path: Path, rel: Path, known_set: KnownSet | None, submission: Submission | None
) -> tuple[RunDocument | None, list[Failure]]:
    """run.json's own problems, then what it says against the frozen set and submission.yaml."""
    if path.is_symlink():
        return None, []  # reported as a link
    if not path.is_file():
        return None, [
            Failure(str(rel), "missing", "commit run.json written by `sago evaluate` with the results")
        ]
    data, failures = _load_json(path, rel, RunDocument)
    if data is None:
        return None, failures
    run, problems = RunDocument.check(data)
    failures = [Failure(str(rel), p.problem, p.fix) for p in problems]
    if run is None:
        return None, failures
    claimed = run.claimed_variant_set
    if known_set is not None and claimed is not None and claimed not in known_set.hashes:
        problem = f"variant-set sha256 {claimed[:12]}… matches no known set"
        failures.append(Failure(str(rel), problem, "re-run `sago evaluate` on the released variant set"))
    failures.extend(
        Failure(str(rel), f"engine {name[:80]!r} is none the harness has", "re-run `sago evaluate`")
        for name in _engines(run)
        if not known_engine(name)
    )
    if run.not_measured and not _api_run(run, submission):
        problem = (
            f"a response-only result ({', '.join(sorted(run.not_measured))} not measured) stays off the board"
        )
        fix = "commit only submission.yaml; the maintainers run `sago evaluate` for all four axes"
        failures.append(Failure(str(rel), problem, fix))
    if submission is not None:
        failures.extend(_check_run_model(run, path, rel, submission))
    return run, failures


def _check_profile(run: RunDocument, rel: Path, name: str, submission: Submission | None) -> list[Failure]:
    """The folder's name says whose run it holds (an API model's run is always in ``<version>/``)."""
    version, expected = parse_results_folder_name(name)
    found = run.profile_name
    if _api_run(run, submission) and name == version:
        return []
    if name != results_folder_name(version, expected):
        problem = f"a run of {version}'s board profile {expected} belongs in {version}/, not {name}/"
        return [Failure(str(rel.parent), problem, f"move it to {version}/")]
    if found is not None and found != expected:  # no profile at all: run.json's own checks say so
        place = results_folder_name(version, found) if found in PROFILES.names() else f"{version}-<profile>"
        problem = f"a {found}-profile run in {name}/, which holds {expected}-profile runs"
        return [Failure(str(rel), problem, f"move the results folder to {place}/")]
    return []


def _api_run(run: RunDocument, submission: Submission | None) -> bool:
    """An API model's run, which cannot measure what needs the weights (its own table on the board)."""
    return submission is not None and isinstance(submission.model, ApiModel) and run.is_api


def _engines(run: RunDocument) -> list[str]:
    """The engine names run.json records (top level and ``model.engine``; one when they agree)."""
    return list(dict.fromkeys(name for name in (run.engine, run.model.engine) if name is not None))


def _check_run_model(run: RunDocument, path: Path, rel: Path, submission: Submission) -> list[Failure]:
    """run.json must describe the model that submission.yaml names (not results of another model, nor of
    an engine that cannot run it: the tests' stand-in model is refused in the project's own folder)."""
    fix = "re-run `sago evaluate` for this submission"
    if run.submission_model != submission.model.model_dump():
        return [Failure(str(rel), "submission_model differs from the model in submission.yaml", fix)]
    model, spec = run.model, submission.model
    wanted = "the endpoint's (api)" if isinstance(spec, ApiModel) else "one that runs local weights"
    in_project = path.resolve().is_relative_to(paths.SUBMISSIONS_DIR.resolve())  # what a pull request changes
    for name in _engines(run):
        if name == STAND_IN and not in_project:
            continue  # a test's fixture checkout of stand-in results (tests/helpers)
        if known_engine(name) and local_engine(name) == isinstance(spec, ApiModel):
            problem = f"engine {name!r} is not {wanted}, as submission.yaml's model needs"
            return [Failure(str(rel), problem, fix)]
    if isinstance(spec, PackagedModel) and model.file_sha256 != spec.sha256:
        return [Failure(str(rel), "model.file_sha256 is not the sha256 submission.yaml pins", fix)]
    if isinstance(spec, HubModel) and model.revision != spec.revision:
        return [Failure(str(rel), "model.revision is not the revision submission.yaml pins", fix)]
    if isinstance(spec, ApiModel) and (model.source, model.revision) != ("api", spec.snapshot):
        return [Failure(str(rel), "model is not the API snapshot submission.yaml names", fix)]
    return []


def _check_datasets(
    folder: Path, rel: Path, known_set: KnownSet | None, run: RunDocument | None
) -> list[Failure]:
    """Every dataset's records, with its activations beside them, then activations without records."""
    results = ResultsFolder(folder)
    files = plain_files(results.records_dir, RECORDS_SUFFIX)
    if not files:
        fix = "commit the records written by `sago evaluate`"
        return [Failure(str(rel / RECORDS_DIR), "no records/<dataset>.parquet files", fix)]
    failures = _coverage(rel / RECORDS_DIR, {p.stem for p in files}, known_set, run)
    for path in files:
        failures.extend(_check_dataset(path, rel, folder, known_set, run))
    for path in plain_files(results.activations_dir, ACTIVATIONS_SUFFIX):
        if not results.records(path.stem).is_file():
            where = rel / ACTIVATIONS_DIR / path.name
            failures.append(Failure(str(where), "has no readable records file beside it", EVALUATE))
    return failures


def _coverage(
    where: Path, found: set[str], known_set: KnownSet | None, run: RunDocument | None
) -> list[Failure]:
    """The datasets with records are the ones run.json says were run ("all": the set's)."""
    if run is not None and run.all_datasets and known_set is not None and known_set.datasets:
        expected = set(known_set.datasets)
    elif run is not None and run.datasets is not None:
        expected = set(run.datasets)
    else:
        return []  # not recorded (older runs), or reported elsewhere
    if found == expected:
        return []
    missing, extra = sorted(expected - found), sorted(found - expected)
    problem = (
        f"records are not the datasets run.json's 'datasets' names (missing {len(missing)}: "
        f"{', '.join(missing[:3])[:80]}; extra {len(extra)}: {', '.join(extra[:3])[:80]})"
    )
    return [Failure(str(where), problem, EVALUATE)]


def _check_dataset(
    path: Path, rel: Path, folder: Path, known_set: KnownSet | None, run: RunDocument | None
) -> list[Failure]:
    """One dataset: its records file, its activations, and whether the two look run rather than made."""
    where = rel / RECORDS_DIR / path.name
    datasets = known_set.datasets if known_set is not None else None
    if datasets is not None and path.stem not in datasets:
        outside = f"dataset {path.stem!r} is not in this variant set"
        return [Failure(str(where), outside, "evaluate only the set's datasets")]
    table, failures = _check_parquet(path, where, RECORD_TYPES, RECORDS_DIR, EVALUATE, dataset=path.stem)
    if table is None:
        return failures
    counts = run.counts if run is not None else None
    if counts is not None and counts.get(path.stem) != table.num_rows:
        return [Failure(str(where), "row count differs from run.json's counts", EVALUATE)]
    records = table.to_pandas()
    frame = known_set.frame(path.stem) if known_set is not None else None
    if known_set is not None and known_set.folder is not None and frame is None:
        stale = f"the variant set's table of {path.stem!r} is missing or differs from its manifest"
        fix = "restore the released set (`sago variants verify` names the file)"
        return [Failure(str(where), stale, fix)]
    profile = run.evaluation_profile if run is not None else None
    api = run is not None and run.is_api
    problem = records_problem(records, frame, profile, api=api)
    if problem is not None:
        return [Failure(str(where), problem, EVALUATE)]
    activations = ResultsFolder(folder).activations(path.stem)
    arrays = None
    if activations.is_file() and not activations.is_symlink():
        keys = set(zip(records["item_id"], records["variant_id"], strict=True))
        arrays, found = _check_activations(activations, rel / ACTIVATIONS_DIR / activations.name, keys, run)
        if found:
            return found
    if api:  # no teacher-forced numbers or hidden states to compare (all NaN, none stored)
        return _check_own_confidence(folder, rel, path.stem, table.num_rows)
    problem = copied_problem(records, frame, arrays)
    return [] if problem is None else [Failure(str(where), problem, EVALUATE)]


def _check_own_confidence(folder: Path, rel: Path, dataset: str, rows: int) -> list[Failure]:
    """An API run's own-token confidence: present, typed, one row per record, and a mean probability in
    (0, 1] wherever tokens were returned (NaN is refused)."""
    path = ResultsFolder(folder).own_confidence(dataset)
    where = rel / OWN_CONFIDENCE_DIR / path.name
    if not path.is_file() or path.is_symlink():
        return [Failure(str(where), "missing: an API run's own-token confidence", EVALUATE)]
    table, failures = _check_parquet(path, where, OWN_CONFIDENCE_TYPES, OWN_CONFIDENCE_DIR, EVALUATE)
    if table is None or failures:
        return failures
    if table.num_rows != rows:
        return [Failure(str(where), f"{table.num_rows} rows for {rows} records", EVALUATE)]
    returned = table.column("own_tokens").to_numpy(zero_copy_only=False) > 0  # the others have no mean
    prob = table.column("own_prob_mean").to_numpy(zero_copy_only=False)[returned]
    if not ((prob > 0) & (prob <= 1 + 1e-12)).all():
        return [Failure(str(where), "a mean token probability that is not in (0, 1]", EVALUATE)]
    return []


def _check_parquet(
    path: Path, rel: Path, types: dict[str, str], kind: str, fix: str, *, dataset: str | None = None
) -> tuple[pa.Table | None, list[Failure]]:
    """A parquet file (when present) within its limits, loaded with exactly the contract's columns."""
    if not path.is_file() or path.is_symlink():
        return None, []
    big = _too_big(path, rel, kind)
    if big is not None:
        return None, [big]
    table, problem = load_table(path, types, dataset=dataset)
    return table, [] if problem is None else [Failure(str(rel), problem, fix)]


def _check_summary(path: Path, rel: Path) -> list[Failure]:
    if not path.is_file() or path.is_symlink():
        return []
    summary, failures = _load_json(path, rel, SummaryDocument)
    problems = SummaryDocument.check(summary)[1] if summary is not None else []
    return failures + [Failure(str(rel), p.problem, p.fix) for p in problems]


def activation_layout_ok(tensors: Mapping[str, TensorInfo]) -> bool:
    """Full: every tensor float16 [layers + 1, hidden] of one shape. Compact: the baselines so, every
    other row float64 [layers + 1] (its per-layer cosine to the item's baseline)."""
    vectors = {k for k, t in tensors.items() if k.endswith(f"|{BASELINE_VARIANT_ID}") or len(t.shape) == 2}
    shapes = {tensors[k].shape for k in vectors}
    if any(tensors[k].dtype != "F16" or len(tensors[k].shape) != 2 for k in vectors) or len(shapes) > 1:
        return False
    layers = next(iter(shapes))[0] if shapes else -1
    return all(t.dtype == "F64" and t.shape == (layers,) for k, t in tensors.items() if k not in vectors)


def _check_activations(
    path: Path, rel: Path, keys: set[tuple[str, str]], run: RunDocument | None
) -> tuple[dict[str, np.ndarray] | None, list[Failure]]:
    """A fully parsed safetensors file, one tensor per record, shaped as run.json's model, with plausible
    values; and its arrays (mapped, not read)."""
    big = _too_big(path, rel, ACTIVATIONS_DIR)
    if big is not None:
        return None, [big]
    try:
        tensors = read_safetensors(path)
    except FileProblem as err:
        return None, [Failure(str(rel), err.problem, err.fix)]
    if not activation_layout_ok(tensors):
        layout = (
            "tensors are neither float16 [layers + 1, hidden] of one shape (full) nor, for compact "
            "results, such baselines with float64 [layers + 1] cosines for every other row"
        )
        return None, [Failure(str(rel), layout, EVALUATE)]
    if set(tensors) != {f"{i}|{v}" for i, v in keys}:
        return None, [Failure(str(rel), "keys differ from the records' item_id|variant_id", EVALUATE)]
    arrays = tensor_arrays(path, tensors)
    problem = activation_problem(tensors, arrays, run.model.shape if run is not None else None)
    return arrays, [] if problem is None else [Failure(str(rel), problem, EVALUATE)]
