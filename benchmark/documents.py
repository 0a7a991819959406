"""Typed documents: run.json, plan.json, done.json, summary.json and leaderboard.json of the results,
and the variant set's manifest.json.

Each results document is one pydantic model (:class:`Doc`) read strictly: its fields are the file's keys
with their JSON types (a :data:`Number` is kept as written: ``2`` stays ``2``, and ``true`` is no
number), undeclared keys are kept as written, and writing gives back the keys read, so a committed file
re-dumps to its bytes (``tests/test_document_bytes.py``). A value of the wrong type anywhere refuses the
whole file: a reader raises the first problem as one line naming the file and the field's path, the
validator lists them all (:func:`schema_problems`). plan.json and done.json have never carried a
``schema_version``: without one they are version 1 (older checkpoints must keep resuming).
manifest.json is one too, with the checks that keep its paths and names inside the set's folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, ClassVar, Literal, Protocol, Self, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass
from pydantic_core import ErrorDetails, core_schema

from benchmark import jsonio, rows
from benchmark.errors import FileProblem, SagoError, visible
from benchmark.paths import check_name, check_slug, is_name
from benchmark.profiles import Profile
from benchmark.rows import ProfileComparison, Table
from benchmark.safeload import load_json
from benchmark.schema import (
    LEADERBOARD_SCHEMA_VERSION,
    RECORDS_SCHEMA_VERSION,
    SUMMARY_SCHEMA_VERSION,
    VARIANT_SCHEMA_VERSION,
)

REGENERATE = "regenerate it with the sago CLI"
"""the fix of a document whose version cannot be read (the validator's words)."""
EVALUATE_AGAIN = "regenerate it with `sago evaluate`"
"""the fix of a run.json that says something no run of the harness writes."""
CLOCK_SKEW = timedelta(hours=1)
"""how far a run.json date may lie ahead of this machine's clock (two machines' clocks disagree a little)."""


def _number(value: object) -> int | float:
    """A JSON number as written: ``2`` stays an int (a lax float writes it back as ``2.0``), a boolean is
    no number, and neither is an integer past a float's range (the statistics take it as a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a number")
    try:
        float(value)
    except OverflowError:
        raise ValueError("a number within a float's range") from None
    return value


# One validator rather than ``StrictInt | StrictFloat``: a union reports one error per member.
Number = Annotated[int | float, PlainValidator(_number)]
Text = StrictStr | None
Int = StrictInt | None

# What a field expected, by pydantic's error type (the rest keep pydantic's own words).
_EXPECTED = {
    "int_type": "an integer", "float_type": "a number", "string_type": "text", "bool_type": "true or false",
    "dict_type": "an object", "model_type": "an object", "list_type": "a list", "tuple_type": "a list",
    "missing": "a value",
}  # fmt: skip


def schema_problems(err: ValidationError) -> list[str]:
    """Every error of a document's validation as one line, ``path: expected what``, one line per path
    (a value that matched no member of a union is one line: ``expected 'all' or a list``).

    >>> try:
    ...     RunTimings.model_validate({"model_seconds": "2", "started_at": 1})
    ... except ValidationError as err:
    ...     schema_problems(err)
    ['started_at: expected text', 'model_seconds: expected a number']
    """
    wanted: dict[str, list[str]] = {}
    for error in err.errors():
        path = ".".join(visible(str(part))[:80] for part in error["loc"] if not _union_member(part))
        wanted.setdefault(path or "the document", []).append(_expected(error))
    return [f"{path}: expected {' or '.join(dict.fromkeys(what))}" for path, what in wanted.items()]


def _union_member(part: str | int) -> bool:
    """A union member's name in an error's path (``int``, ``tuple[str, ...]``), not a key of the file."""
    return isinstance(part, str) and (part in ("int", "float", "str", "bool") or "[" in part)


def _expected(error: ErrorDetails) -> str:
    if error["type"] == "literal_error":
        return str(error.get("ctx", {}).get("expected"))
    if error["type"] == "string_pattern_mismatch":
        return f"text matching {error.get('ctx', {}).get('pattern')}"
    words = _EXPECTED.get(error["type"], error["msg"])
    return visible(words.removeprefix("Value error, ").removeprefix("Input should be "))[:120]


@dataclass(frozen=True)
class DocumentProblem:
    """One thing wrong with a document, for a checker that reports rather than refuses (the validator)."""

    problem: str
    fix: str

    def line(self) -> str:
        """The problem and its fix as one line."""
        return f"{self.problem}; {self.fix}"


class Rendered(Protocol):
    """Anything written as one JSON file that renders its own text (every document, the API table)."""

    def dumps(self) -> str: ...


class Part(BaseModel):
    """A JSON object as a pydantic model: frozen, its undeclared keys kept as written."""

    model_config = ConfigDict(frozen=True, extra="allow")


class Doc(Part):
    """A versioned document as one pydantic model: its fields are the file's keys, and writing it gives
    back the keys it was read with (``exclude_unset``: a key the file lacked stays absent). Its kind and
    the version range this code reads are class constants."""

    KIND: ClassVar[str] = "document"
    FILE: ClassVar[str] = ""
    NEWEST: ClassVar[int] = 1
    OLDEST: ClassVar[int] = 1
    MISSING: ClassVar[int | None] = None
    """the version a document without ``schema_version`` has (None: refused)."""
    FIX: ClassVar[str] = "re-run `sago analyze`"
    LIMIT: ClassVar[int] = 64 << 20
    """the largest file :meth:`read` loads (bytes)."""
    STATISTICS: ClassVar[bool] = False

    @classmethod
    def version_of(cls, data: Mapping[str, Any], where: object) -> int:
        """The document's ``schema_version``, after refusing one this code does not read (one line)."""
        version = data.get("schema_version", cls.MISSING)
        if not isinstance(version, int) or isinstance(version, bool):
            raise SagoError(f"{where}: {cls.KIND} has no integer schema_version; {cls.FIX}")
        if version > cls.NEWEST:
            raise SagoError(
                f"{where}: {cls.KIND} schema_version {version} is newer than this sago-bench "
                f"reads ({cls.NEWEST}); upgrade sago-bench"
            )
        if version < cls.OLDEST:
            raise SagoError(
                f"{where}: {cls.KIND} schema_version {version} is older than this sago-bench "
                f"reads ({cls.OLDEST}); {cls.FIX}"
            )
        return version

    @classmethod
    def version_problem(cls, version: object) -> DocumentProblem | None:
        """``schema_version`` as a checker reports it (missing, not a positive integer, or too new)."""
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            return DocumentProblem("missing or invalid schema_version", REGENERATE)
        if version > cls.NEWEST:
            return DocumentProblem(
                f"schema_version {version} is newer than this code reads ({cls.NEWEST})",
                "update sago-bench, or regenerate with the released version",
            )
        return None

    @classmethod
    def read(cls, path: Path, fix: str | None = None) -> Self:
        """Load ``path`` as this document; any problem is one line ending in ``fix`` (default ``FIX``)."""
        if not path.exists():
            raise SagoError(f"{path}: no such {cls.KIND} ({cls.FIX.removeprefix('re-')})")
        return cls.from_json(cls.parse(path, fix), path)

    @classmethod
    def parse(cls, path: Path, fix: str | None = None) -> dict[str, Any]:
        """The JSON object in ``path`` (at most :attr:`LIMIT` bytes), not yet read as this document."""
        document = load_json(path, limit=cls.LIMIT, fix=fix or cls.FIX)
        if not isinstance(document, dict):
            raise FileProblem(path, f"{cls.KIND} is not a JSON object", fix or cls.FIX)
        return document

    def dumps(self) -> str:
        """Provenance is written as recorded; statistics canonically (rebuilt, the same bytes)."""
        return (jsonio.dumps if self.STATISTICS else jsonio.plain_json)(self.to_json())

    DUMP: ClassVar[Literal["json", "python"]] = "json"
    """python: numbers stay as computed (numpy included) until :meth:`dumps` cleans them."""

    @model_validator(mode="before")
    @classmethod
    def _versioned(cls, data: Any, info: ValidationInfo) -> Any:
        """Refuses a version this code does not read, one line naming the file (the context). Old keys
        would be repaired here, by testing for the old key."""
        if isinstance(data, Mapping):
            cls.version_of(data, info.context or cls.FILE)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: object = None) -> Self:
        """The typed document of a parsed JSON object; its first problem is one line naming the file."""
        try:
            return cls.model_validate(data, context=where or cls.FILE)
        except ValidationError as err:
            raise FileProblem(where or cls.FILE, schema_problems(err)[0], cls.FIX) from None

    @classmethod
    def check(cls, data: Mapping[str, Any]) -> tuple[Self | None, list[DocumentProblem]]:
        """A checker's reading: every problem of the file, one line each, the version's first (its fields
        are still read under a version this code does not read); None when the fields cannot be read."""
        version = cls.version_problem(data.get("schema_version", cls.MISSING))
        found = [version] if version is not None else []
        try:
            document = cls.model_validate({**data, "schema_version": cls.NEWEST} if version else data)
        except ValidationError as err:
            return None, found + [DocumentProblem(line, cls.FIX) for line in schema_problems(err)]
        return document, found + list(document.problems())

    def problems(self) -> tuple[DocumentProblem, ...]:
        """What in this document no run of the pipeline writes, beyond its types (empty: nothing)."""
        return ()

    def to_json(self) -> dict[str, Any]:
        """The keys read, as read."""
        return self.model_dump(mode=self.DUMP, by_alias=True, exclude_unset=True)

    def undeclared(self, key: str) -> Any:
        """An undeclared key's value as written (None: the file has no such key)."""
        return (self.model_extra or {}).get(key)


class RunProfile(Part):
    """run.json's ``profile``: the evaluation setting a run used (None: not recorded)."""

    name: Text = None
    items_per_dataset: Int = None
    all_strengths: StrictBool | None = None
    """every strength level, or only the weakest and strongest."""
    max_new_tokens: Int = None
    description: Text = None
    every_level_of: tuple[StrictStr, ...] = ()
    """families run at every level (empty: none, also when not recorded)."""

    def problem(self) -> str | None:
        """Why this profile cannot say which rows the run produced (None: it can)."""
        counted = all(n is not None and n >= 1 for n in (self.items_per_dataset, self.max_new_tokens))
        if not (counted and self.all_strengths is not None):
            return (
                "profile needs items_per_dataset and max_new_tokens (integers ≥ 1) "
                "and all_strengths (boolean)"
            )
        return None

    def evaluation_profile(self) -> Profile | None:
        """The profile as the harness runs it, from run.json's own parameters (None: :meth:`problem`).

        >>> RunProfile(name="smoke", items_per_dataset=4, all_strengths=False, max_new_tokens=32
        ...            ).evaluation_profile().items_per_dataset
        4
        """
        if self.problem() is not None:
            return None
        assert self.items_per_dataset is not None and self.max_new_tokens is not None  # problem() checks
        return Profile(
            (self.name or "unnamed")[:40],
            self.items_per_dataset,
            bool(self.all_strengths),
            self.max_new_tokens,
            (self.description or "")[:200],
            self.every_level_of,
        )


class RunModel(Part):
    """run.json's ``model``: what was run and how it was loaded (None: not recorded)."""

    source: Text = None
    """where the weights came from: ``hub``, ``packaged``, ``api``, ``lm-eval``, a backend's name."""
    location: Text = None
    """the Hub id, file path or endpoint."""
    revision: Text = None
    """the Hub revision (an API model: the submission's ``snapshot``)."""
    file_sha256: Text = None
    """sha256 of a packaged weights file."""
    dtype: Text = None
    device: Text = None
    engine: Text = None
    chat_template: Text = None
    """``applied`` or ``raw prompt``: what the run did with the prompts."""
    n_layers: Int = None
    hidden_size: Int = None
    own_confidence: Text = None
    """an API run: ``measured``, or why the own-token confidence was not (None: not recorded)."""

    @property
    def is_api(self) -> bool:
        """Answered by an endpoint: no teacher forcing, no activations, its own confidence table."""
        return self.source == "api"

    @property
    def shape(self) -> tuple[int, int] | None:
        """(layers + 1, hidden size) of a stored hidden state, when both are recorded (≥ 1).

        >>> RunModel(n_layers=30, hidden_size=576).shape, RunModel(n_layers=0, hidden_size=576).shape
        ((31, 576), None)
        """
        layers, hidden = self.n_layers, self.hidden_size
        if layers is None or hidden is None or layers < 1 or hidden < 1:
            return None
        return layers + 1, hidden


class RunTimings(Part):
    """run.json's ``timings`` (None: not recorded; the dates are judged by :meth:`RunDocument.problems`)."""

    started_at: Text = None
    """when the first rank started (ISO 8601)."""
    finished_at: Text = None
    """when the last rank finished (ISO 8601)."""
    model_seconds: Number | None = None
    """compute time of the model alone, every rank together."""
    peak_rss_mib: Number | None = None
    """the largest resident memory of a rank."""

    @property
    def wall_seconds(self) -> float | None:
        """Seconds from start to finish, stopped time of a resumed run included (None: not recorded).

        >>> RunTimings(started_at="2026-11-30T11:29:06+00:00", finished_at="2026-11-30T11:43:57+00:00"
        ...            ).wall_seconds
        891.0
        """
        try:
            started = datetime.fromisoformat(str(self.started_at))
            finished = datetime.fromisoformat(str(self.finished_at))
            return (finished - started).total_seconds()
        except (ValueError, TypeError):  # missing, malformed, or one stamp without a time zone
            return None


class RunHardware(Part):
    """The parts of run.json's ``hardware`` that readers use (written by ``provenance.Hardware``)."""

    cpu_count: Int = None
    torch_threads: Int = None
    accelerator: Text = None
    """the first CUDA device's name (None: none)."""
    cpu_setting: Text = None
    """the harness's CPU-setting variables as recorded (a re-run applies them: ``benchmark.cpu``)."""


class OlderSet(Part):
    """run.json's ``variant_set`` in older files: where the set's hash was recorded."""

    sha256: Text = None


ALL = "all"
"""run.json's ``datasets`` when the run took every dataset of the set."""


class RunDocument(Doc):
    """``run.json``: provenance of one harness run (docs/CONTRACTS.md section 2). A field of the wrong
    type refuses the file; :meth:`problems` says what else in it no harness run writes. The
    fields are declared in the order the file lists its keys (sorted: ``jsonio.plain_json`` sorts)."""

    KIND: ClassVar[str] = "run"
    FILE: ClassVar[str] = "run.json"
    LIMIT: ClassVar[int] = 1 << 20
    NEWEST: ClassVar[int] = RECORDS_SCHEMA_VERSION
    FIX: ClassVar[str] = "re-run `sago evaluate`"
    DETERMINED: ClassVar[tuple[str, ...]] = (
        "variant_set_sha256", "profile", "seed", "batch_size", "engine", "dtype", "counts", "tokens",
        "datasets", "chat_template", "world_size", "activations", "planner",
    )  # fmt: skip
    """the keys a faithful re-run reproduces (timings, git commit and hardware may differ)."""

    activations: Text = None
    """the activations layout (``compact``; None: not recorded, which is full)."""
    batch_size: Int = None
    batch_sizes_used: Any = None
    """rank -> the batch sizes the engine actually used (written for the record, compared as written)."""
    chat_template: Text = None
    """``applied`` or ``raw prompt`` (the model's own record is ``model.chat_template``)."""
    chat_template_setting: Any = None
    chat_template_sha256: Any = None
    collected_by: Text = None
    """who collected the records when not the harness (``lm-eval``)."""
    counts: dict[str, StrictInt] | None = None
    """dataset -> records rows."""
    chosen: Literal["all"] | tuple[StrictStr, ...] | None = Field(None, alias="datasets")
    """``datasets``: :data:`ALL`, or the names chosen (read through :attr:`datasets`)."""
    device: Text = None
    dtype: Text = None
    engine: Text = None
    files: dict[str, StrictStr] | None = None
    """``{relative path: sha256}`` of every records/activations file (None: not recorded)."""
    git_commit: Any = None
    hardware: RunHardware = RunHardware()
    harness_version: Any = None
    libraries: Any = None
    lm_eval: Any = None
    """an imported lm-eval run: its version, tasks and settings."""
    model: RunModel = RunModel()
    not_measured: dict[str, StrictStr] = {}
    """measure -> why it was not measured (e.g. ``"not measured (lm-eval run)"``): its deltas are NaN.
    Empty for every harness run; a result with entries is response-only and stays off the board."""
    parallel: Any = None
    """a launcher's ranks and their placement."""
    planner: Int = None
    """the batch planner that cut the run's batches (``collect.PLANNER``; None: not recorded, which is 1)."""
    profile: RunProfile | None = None
    schema_version: int = 0
    seed: Int = None
    set: Text = None
    submission: Text = None
    """the submission's slug."""
    submission_model: dict[str, object] | None = None
    """submission.yaml's ``model`` as the run recorded it (None: not recorded); compared, never read."""
    timings: RunTimings = RunTimings()
    tokens: dict[str, StrictInt] = {}
    """requests, prompt, generated and scored tokens, every rank together."""
    variant_set: OlderSet | None = None
    variant_set_sha256: Text = None
    version: Text = None
    world_size: Int = None

    @classmethod
    def build(cls, fields: Mapping[str, object], extra: Mapping[str, object] | None = None) -> Self:
        """A finished run's run.json: ``fields`` (declared keys) and ``extra`` (added or replacing keys)
        in :data:`RUN_KEYS` order, undeclared keys last."""
        undeclared = set(fields) - set(RUN_KEYS)
        assert not undeclared, f"run.json keys not declared by RunDocument: {sorted(undeclared)}"
        merged: dict[str, object] = {**fields, **(extra or {})}
        ordered = {key: merged[key] for key in RUN_KEYS if key in merged}
        ordered |= {key: merged[key] for key in sorted(merged) if key not in ordered}
        return cls.from_json(ordered)

    def with_files(self, files: Mapping[str, str]) -> Self:
        """This run.json with ``files`` replaced (every other key keeps its value and place)."""
        return self.model_copy(update={"files": dict(files)})

    @property
    def datasets(self) -> tuple[str, ...] | None:
        """the datasets chosen; None when the run took all of them (or run.json names none)."""
        return self.chosen if isinstance(self.chosen, tuple) else None

    @property
    def all_datasets(self) -> bool:
        return self.chosen == ALL

    @property
    def files_given(self) -> bool:
        """run.json has a ``files`` key, whatever its value (runs from before hashes have none)."""
        return "files" in self.model_fields_set

    @property
    def nested_variant_set_sha256(self) -> str | None:
        """``variant_set.sha256``: where older run.json files recorded the set's hash."""
        return self.variant_set.sha256 if self.variant_set is not None else None

    @property
    def finished_at(self) -> str | None:
        return self.timings.finished_at

    @property
    def is_api(self) -> bool:
        return self.model.is_api

    @property
    def profile_name(self) -> str | None:
        return self.profile.name if self.profile else None

    @property
    def evaluation_profile(self) -> Profile | None:
        return self.profile.evaluation_profile() if self.profile else None

    @property
    def variant_set_hashes(self) -> frozenset[str]:
        """Every variant-set sha256 the file claims, now and in older files' ``variant_set.sha256``."""
        hashes = (self.variant_set_sha256, self.nested_variant_set_sha256)
        return frozenset(h for h in hashes if h is not None)

    @property
    def claimed_variant_set(self) -> str | None:
        """The one variant-set sha256 the file claims (None: none, or two different ones)."""
        hashes = self.variant_set_hashes
        return next(iter(hashes)) if len(hashes) == 1 else None

    def is_run_of(self, *, variant_set_sha256: str, profile: str, datasets: tuple[str, ...] | None) -> bool:
        """Whether this run is of that set, profile and dataset selection (None: all datasets).

        >>> run = RunDocument.from_json({"schema_version": 1, "variant_set_sha256": "a",
        ...                              "profile": {"name": "smoke"}, "datasets": "all"})
        >>> run.is_run_of(variant_set_sha256="a", profile="smoke", datasets=None)
        True
        """
        wanted = self.all_datasets if datasets is None else self.datasets == tuple(sorted(datasets))
        return self.variant_set_sha256 == variant_set_sha256 and self.profile_name == profile and wanted

    def differing(self, other: RunDocument, ignore: tuple[str, ...] = ()) -> list[str]:
        """The :attr:`DETERMINED` keys (less ``ignore``) whose values differ between two runs, in order.

        >>> a = RunDocument.from_json({"schema_version": 1, "seed": 1, "engine": "x"})
        >>> a.differing(RunDocument.from_json({"schema_version": 1, "seed": 2, "engine": "y"}), ("engine",))
        ['seed']
        """
        mine, theirs = self.to_json(), other.to_json()
        return [k for k in self.DETERMINED if k not in ignore and mine.get(k) != theirs.get(k)]

    def problems(self, now: datetime | None = None) -> tuple[DocumentProblem, ...]:
        """What in this run.json no run of the harness writes beyond its types, one line each (empty:
        nothing); :meth:`check` reads a file with them."""
        found = [self._hash_problem(), self._profile_problem(), self._date_problem(now or datetime.now(UTC))]
        return tuple(p for p in found if p is not None)

    def _hash_problem(self) -> DocumentProblem | None:
        if not self.variant_set_hashes:
            return DocumentProblem("no variant-set sha256", EVALUATE_AGAIN)
        if self.claimed_variant_set is None:
            two = "variant_set_sha256 and variant_set.sha256 differ: the run names two variant sets"
            return DocumentProblem(two, EVALUATE_AGAIN)
        return None

    def _profile_problem(self) -> DocumentProblem | None:
        if self.profile is None:
            return DocumentProblem(f"has no profile object; {EVALUATE_AGAIN}", EVALUATE_AGAIN)
        problem = self.profile.problem()
        return DocumentProblem(problem, EVALUATE_AGAIN) if problem is not None else None

    def _date_problem(self, now: datetime) -> DocumentProblem | None:
        """A run without timings, as older runs have, has no problem: the site says "not recorded"."""
        found: dict[str, datetime] = {}
        for key in ("started_at", "finished_at"):
            value = getattr(self.timings, key)
            if value is None:
                continue
            try:
                when = datetime.fromisoformat(value)
            except ValueError:
                return DocumentProblem(
                    f"timings.{key} {value[:40]!r} is not an ISO-8601 date", EVALUATE_AGAIN
                )
            when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
            if when > now + CLOCK_SKEW:
                return DocumentProblem(f"timings.{key} {when.isoformat()} is in the future", EVALUATE_AGAIN)
            found[key] = when
        if len(found) == 2 and found["started_at"] > found["finished_at"]:
            return DocumentProblem("timings.started_at is after finished_at", EVALUATE_AGAIN)
        return None


RUN_KEYS: tuple[str, ...] = tuple(sorted(f.alias or k for k, f in RunDocument.model_fields.items()))
"""run.json's keys in the order the file lists them (sorted: ``jsonio.plain_json`` writes sorted keys)."""


class PlanDocument(Doc):
    """``checkpoint/rank-<r>/plan.json``: everything that determines one rank's outputs (the settings are
    undeclared keys, kept as written)."""

    KIND: ClassVar[str] = "plan"
    FILE: ClassVar[str] = "plan.json"
    MISSING: ClassVar[int | None] = 1
    FIX: ClassVar[str] = "rerun with --force"

    schema_version: int = 1
    rank: StrictInt
    world_size: StrictInt
    keys: tuple[StrictStr, ...]
    """every record key this rank must produce."""
    started_at: Text = None

    def shared(self) -> tuple[tuple[str, str], ...]:
        """The settings every rank of one run must agree on, as sorted ``(key, canonical JSON)`` pairs.

        >>> plan = PlanDocument.from_json({"rank": 1, "world_size": 2, "keys": [], "seed": 42})
        >>> plan.shared()
        (('seed', '42'), ('world_size', '2'))
        """
        return tuple(
            (key, json.dumps(value, sort_keys=True))
            for key, value in sorted(self.to_json().items())
            if key not in ("rank", "keys", "started_at", "started_by")
        )


class DoneDocument(Doc):
    """``checkpoint/rank-<r>/done.json``: one rank finished. Like plan.json, no ``schema_version``."""

    KIND: ClassVar[str] = "done"
    FILE: ClassVar[str] = "done.json"
    MISSING: ClassVar[int | None] = 1
    FIX: ClassVar[str] = "rerun with --force"

    schema_version: int = 1
    model: RunModel
    """the backend's own description (run.json's ``model`` is rank 0's, its undeclared keys included)."""
    finished_at: StrictStr
    peak_rss_mib: Number | None = None

    @classmethod
    def build(cls, model: Mapping[str, object], finished_at: str, peak_rss_mib: float) -> Self:
        return cls.from_json({"model": dict(model), "finished_at": finished_at, "peak_rss_mib": peak_rss_mib})


# Row fields that name things (lookups and the site's file names use them): text, or null.
_NAME_FIELDS = frozenset(
    {"model", "dataset", "measure", "family", "control", "scope", "measure_a", "measure_b", "model_a"}
    | {"model_b", "dataset_a", "dataset_b", "slug", "status", "name", "axis", "symbol", "marker", "item_id"}
)


def _table(rows: list[dict[str, Any]]) -> Table[Any]:
    for index, row in enumerate(rows):
        for name in sorted(_NAME_FIELDS.intersection(row)):
            if not isinstance(row[name], str | None):
                raise ValueError(f"text or null in row {index}'s {name!r}")
    return Table(tuple(rows))


class _Rows:
    """pydantic metadata of a table: a list of JSON objects whose naming fields are text (:func:`_table`),
    written back as its list of rows."""

    def __get_pydantic_core_schema__(self, source: object, handler: GetCoreSchemaHandler) -> Any:
        written = core_schema.plain_serializer_function_ser_schema(list)
        rows = handler.generate_schema(list[dict[str, Any]])
        return core_schema.no_info_after_validator_function(_table, rows, serialization=written)


R = TypeVar("R", bound=Mapping[str, object])
Rows = Annotated[Table[R], _Rows()]


class SummaryDocument(Doc):
    """``summary.json``: one submission's statistics (version 1, one SGS, still loads)."""

    KIND: ClassVar[str] = "summary"
    FILE: ClassVar[str] = "summary.json"
    LIMIT: ClassVar[int] = 16 << 20
    NEWEST: ClassVar[int] = SUMMARY_SCHEMA_VERSION
    STATISTICS: ClassVar[bool] = True
    DUMP: ClassVar[Literal["json", "python"]] = "python"  # a fresh summary holds numpy numbers

    schema_version: int = 0
    model: Text = None
    """the submission slug."""
    set: Text = None
    version: Text = None
    per_item: Rows[rows.PerItemRow] = Table()
    """s_X(i) of every item and measure (what the site's comparison pages read)."""


_REQUIRED = ("set", "version", "models", "datasets", "measures", "epsilons", "primary_epsilon", "markers")
"""the keys a leaderboard's readers cannot do without (checked by ``require``)."""


class LeaderboardDocument(Doc):
    """``leaderboard.json``: every submission on one variant set (only the current version is read)."""

    KIND: ClassVar[str] = "leaderboard"
    FILE: ClassVar[str] = "leaderboard.json"
    NEWEST: ClassVar[int] = LEADERBOARD_SCHEMA_VERSION
    OLDEST: ClassVar[int] = LEADERBOARD_SCHEMA_VERSION
    STATISTICS: ClassVar[bool] = True

    schema_version: int = 0
    set: Text = None
    version: Text = None
    datasets: tuple[StrictStr, ...] = ()
    """dataset names proper (without ``"all"``), sorted."""
    epsilons: tuple[Number, ...] = ()
    primary_epsilon: Number | None = None
    """the ε that ``cells[].marker`` and ``verdict`` refer to."""
    alpha: Number | None = None
    headline_measures: tuple[StrictStr, ...] = ()
    """one measure per axis: the one the reversal tests and the site's verdicts use."""
    models: Rows[rows.ModelRow] = Table()
    measures: Rows[rows.MeasureRow] = Table()
    markers: Rows[rows.MarkerRow] = Table()
    aggregates: Rows[rows.AggregateRow] = Table()
    claims: Rows[rows.ClaimRow] = Table()
    cells: Rows[rows.CellRow] = Table()
    per_family: Rows[rows.FamilyRow] = Table()
    noise_floor: Rows[rows.NoiseFloorRow] = Table()
    accuracy: Rows[rows.AccuracyRow] = Table()
    accuracy_vs_sgs: Rows[rows.AccuracyVsSgsRow] = Table()
    pairwise: Rows[rows.PairwiseRow] = Table()
    friedman: Rows[rows.FriedmanRow] = Table()
    kendall_tau: Rows[rows.KendallTauRow] = Table()
    kendall_w: Rows[rows.KendallWRow] = Table()
    reversals: Rows[rows.ReversalRow] = Table()
    independence: Rows[rows.IndependenceRow] = Table()
    proportional_measures: Rows[rows.ProportionalRow] = Table()
    pareto: Rows[rows.ParetoRow] = Table()
    sample_size: Rows[rows.SampleSizeRow] = Table()
    sample_size_smallest_n: Rows[rows.SmallestNRow] = Table()
    sample_size_ranking: Rows[rows.SampleRankingRow] = Table()

    profile: Text = None
    """the run profile of a ``sago analyze --profile`` board (None: the version's own board)."""

    @field_validator("measures")
    @classmethod
    def _named(cls, measures: Table[rows.MeasureRow]) -> Table[rows.MeasureRow]:
        if not all(isinstance(m.get("name"), str) for m in measures):
            raise ValueError("rows that each have a 'name'")
        return measures

    def require(self, where: object) -> Self:
        """This document, after refusing (one line) a missing key, a model status other than "complete"
        or "pending", or a name the site could not use as a file name (checked here once for every reader).
        """
        for key in _REQUIRED:
            if getattr(self, key) is None or key not in self.model_fields_set:
                raise FileProblem(where, f"leaderboard key {key!r} is missing", self.FIX)
        for model in self.models:
            check_slug(str(model.get("slug", "")))
            if model.get("status") not in ("complete", "pending"):
                problem = f"leaderboard model {model['slug']!r} has no status 'complete' or 'pending'"
                raise FileProblem(where, problem, self.FIX)
        for dataset in self.datasets:
            check_name(dataset, "dataset")
        check_name(str(self.set), "variant set")
        check_name(str(self.version), "version")
        return self

    @property
    def complete(self) -> list[rows.ModelRow]:
        return [m for m in self.models if m["status"] == "complete"]

    @property
    def profile_comparison(self) -> ProfileComparison | None:
        """Another profile's board beside the board profile's (``benchmark.stats.profile_compare``)."""
        found = self.undeclared("profile_comparison")
        return cast("ProfileComparison", found) if isinstance(found, Mapping) else None

    def measures_of(self, axis: str) -> list[rows.MeasureRow]:
        return self.measures.where(axis=axis)

    def name(self, slug: str) -> str:
        """Display name of a model (the slug when unknown)."""
        model = self.models.first(slug=slug)
        return str(model.get("name") or slug) if model is not None else slug


LEADERBOARD_TABLES: tuple[str, ...] = tuple(
    name for name, kind in LeaderboardDocument.__annotations__.items() if kind.startswith("Rows[")
)


# ---- manifest.json: a frozen variant set -----------------------------------------------------------------

MANIFEST = "manifest.json"
"""the manifest's file name in a set's folder; its sha256 is "the variant-set hash" results record."""
HEX64 = re.compile(r"^[0-9a-f]{64}$")
_RESTORE = "restore the released set (`sago variants download`) or rebuild it"
Count = Annotated[StrictInt, Field(ge=0)]
Sha256 = Annotated[str, StringConstraints(strict=True, pattern=HEX64.pattern)]


class DatasetEntry(Part):
    """One dataset as its set's manifest lists it: the table, its size and where the items come from."""

    file: StrictStr
    """the table, relative to the set's folder (one of the manifest's ``files``)."""
    rows: Count
    """variant rows (prompts)."""
    items: Int = None
    stated_license: Text = Field(None, alias="license")
    source: dict[str, StrictStr] = {}
    """the source's pins and origin as written (archive, its sha256, member, licence ...)."""

    @property
    def license(self) -> str | None:
        """licence as the manifest states it: the dataset's, else its source's (None: not recorded)."""
        return self.stated_license or self.source.get("license") or None

    @property
    def archive(self) -> str | None:
        """the pinned archive the items were read from, e.g. ``bigbench==1.0.0``."""
        return self.source.get("archive") or None

    @property
    def member(self) -> str | None:
        return self.source.get("member") or None

    @property
    def stands_in_for(self) -> str | None:
        """the paper's dataset this one replaces."""
        return self.source.get("stands_in_for") or None


def _unsafe(relative: str) -> bool:
    """A path that climbs out of the set's folder, is absolute, uses backslashes or names the manifest
    (whose hash cannot be inside it)."""
    climbs = relative.startswith("/") or ".." in PurePosixPath(relative).parts
    return not relative or climbs or "\\" in relative or "\x00" in relative or relative == MANIFEST


class ManifestDocument(Doc):
    """``variants/<set>/<version>/manifest.json``: every file's sha256, the sources, the counts and what
    was not made (docs/CONTRACTS.md section 1). Reading refuses a shape a reader could be misled by (one
    line naming the key); what needs the files on disk is checked by ``benchmark.variants.frozen``."""

    KIND: ClassVar[str] = "manifest"
    FILE: ClassVar[str] = MANIFEST
    NEWEST: ClassVar[int] = VARIANT_SCHEMA_VERSION
    FIX: ClassVar[str] = _RESTORE
    LIMIT: ClassVar[int] = 16 << 20

    schema_version: int = 0
    set: Text = None
    version: Text = None
    files: dict[str, Sha256]
    """relative path -> sha256 of every file of the set but the manifest."""
    datasets: dict[str, DatasetEntry]
    order: tuple[StrictStr, ...] | None = Field(None, alias="dataset_order")
    counts: dict[str, dict[str, Count]] = {}
    """dataset -> family -> rows (may leave datasets out)."""
    not_produced: dict[str, StrictStr] = {}
    not_made: dict[str, dict[str, dict[str, Count]]] = {}
    """dataset -> family -> reason -> cells left out (e.g. ``duplicate``)."""
    # Descriptive, as written: the dataset card shows them, no code decides on them.
    families: dict[str, dict[str, object]] = {}
    llm: dict[str, object] = {}
    written: dict[str, object] | None = None
    """the maintainers' written cells (None: a set built without them)."""
    declared_sha256: Text = Field(None, alias="sha256")
    """the hash of an earlier manifest of the same set, still accepted for its results."""

    @field_validator("files")
    @classmethod
    def _safe(cls, files: dict[str, str]) -> dict[str, str]:
        unsafe = [path for path in files if _unsafe(path)]
        if unsafe:
            raise ValueError(f"safe relative paths, not {unsafe[0][:80]!r}")
        if not files:
            raise ValueError("at least one file")
        return files

    @field_validator("datasets")
    @classmethod
    def _listed(cls, datasets: dict[str, DatasetEntry], info: ValidationInfo) -> dict[str, DatasetEntry]:
        """Each dataset has a safe name and a table listed in ``files`` (when those could be read)."""
        if not datasets:
            raise ValueError("at least one dataset")
        for name, entry in datasets.items():
            if not is_name(name):
                raise ValueError(f"dataset names, not the invalid dataset {name[:80]!r}")
            if entry.file not in info.data.get("files", {entry.file: ""}):
                raise ValueError(f"{name}'s file to be listed in 'files'")
        return datasets

    @field_validator("order")
    @classmethod
    def _every_dataset(cls, order: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        if order is not None and sorted(order) != sorted(info.data.get("datasets", order)):
            raise ValueError("exactly the datasets")
        return order

    @field_validator("counts")
    @classmethod
    def _known(cls, counts: dict[str, dict[str, int]], info: ValidationInfo) -> dict[str, dict[str, int]]:
        if set(counts) - set(info.data.get("datasets", counts)):
            raise ValueError("only datasets that are in 'datasets'")
        return counts

    @property
    def dataset_order(self) -> tuple[str, ...]:
        """dataset names in build order (JSON keys are sorted on disk; this is the order of ``--datasets``;
        without the key, the file's order)."""
        return self.order if self.order is not None else tuple(self.datasets)

    @staticmethod
    def dataset(
        *, file: str, rows: int, items: int, license: str, source: Mapping[str, str]
    ) -> dict[str, object]:
        """One ``datasets`` entry as :meth:`build` takes it."""
        return {"file": file, "source": dict(source), "license": license, "items": items, "rows": rows}

    @classmethod
    def build(
        cls,
        *,
        set_name: str,
        version: str,
        builder_version: str,
        seed: int,
        n_items: int,
        llm_items: int,
        libraries: Mapping[str, str],
        datasets: Mapping[str, Mapping[str, object]],
        families: Mapping[str, Mapping[str, object]],
        controls: Mapping[str, str],
        counts: Mapping[str, Mapping[str, int]],
        similarity: Mapping[str, object],
        llm: Mapping[str, object],
        written: Mapping[str, object] | None,
        not_produced: Mapping[str, str],
        not_made: Mapping[str, Mapping[str, Mapping[str, int]]],
        files: Mapping[str, str],
    ) -> Self:
        """The manifest of a freshly built set: ``datasets`` in build order (each from :meth:`dataset`),
        ``written`` None: no such key. No timestamps: a rebuild must give the same bytes."""
        data: dict[str, Any] = {
            "schema_version": cls.NEWEST,
            "set": set_name,
            "version": version,
            "builder_version": builder_version,
            "seed": seed,
            "n_items": n_items,
            "llm_items": llm_items,
            "libraries": dict(libraries),
            "dataset_order": list(datasets),
            "datasets": {name: dict(entry) for name, entry in datasets.items()},
            "families": {name: dict(family) for name, family in families.items()},
            "controls": dict(controls),
            "counts": {name: dict(c) for name, c in counts.items()},
            "similarity": dict(similarity),
            "llm": dict(llm),
            **({"written": dict(written)} if written is not None else {}),
            "not_produced": dict(sorted(not_produced.items())),
            "not_made": {
                name: {family: dict(sorted(why.items())) for family, why in sorted(made.items())}
                for name, made in sorted(not_made.items())
            },
            "files": dict(sorted(files.items())),
        }
        return cls.from_json(data, f"the built {MANIFEST} of {set_name}/{version}")

    def with_files(self, added: Mapping[str, str]) -> Self:
        """This manifest with more files listed (the dataset card, hashed after it was rendered)."""
        return self.from_json(
            {**self.to_json(), "files": dict(sorted({**self.files, **added}.items()))},
            f"the built {MANIFEST} of {self.set}/{self.version}",
        )

    @property
    def rows(self) -> int:
        return sum(entry.rows for entry in self.datasets.values())
