"""Typed documents of a results folder: run.json, plan.json, summary.json and leaderboard.json.

Each is a frozen dataclass with its ``schema_version`` and the typed fields consumers read, plus
``data``: the whole JSON object exactly as written. Producers build the document and write
``to_json()``; consumers read through ``from_json`` / ``read``, which refuse a version this code does not
read with one line. Serialising gives back the same object, so the bytes on disk do not change.

plan.json has never carried a ``schema_version``: a plan without one is version 1, and none is added
(an in-progress checkpoint written before would otherwise stop resuming).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self, cast

from benchmark.errors import FileProblem, SagoError
from benchmark.rows import (
    AccuracyRow,
    AccuracyVsSgsRow,
    AggregateRow,
    CellRow,
    ClaimRow,
    FamilyRow,
    FriedmanRow,
    IndependenceRow,
    KendallTauRow,
    KendallWRow,
    MarkerRow,
    MeasureRow,
    ModelRow,
    NoiseFloorRow,
    PairwiseRow,
    ParetoRow,
    PerItemRow,
    ProportionalRow,
    ReversalRow,
    SampleRankingRow,
    SampleSizeRow,
    SmallestNRow,
    Table,
)
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION, RECORDS_SCHEMA_VERSION, SUMMARY_SCHEMA_VERSION


@dataclass(frozen=True)
class Document:
    """What every document has: a kind, a version range this code reads, and the object as written."""

    KIND: ClassVar[str] = "document"
    NEWEST: ClassVar[int] = 1
    OLDEST: ClassVar[int] = 1
    MISSING: ClassVar[int | None] = None
    """the version a document without ``schema_version`` has (None: refused)."""
    FIX: ClassVar[str] = "re-run `sago analyze`"

    schema_version: int
    data: Mapping[str, Any]
    """the whole JSON object (keys and values exactly as in the file)."""

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
    def from_json(cls, data: Mapping[str, Any], where: object = "document") -> Self:
        """The typed document of a parsed JSON object."""
        return cls(cls.version_of(data, where), data)

    @classmethod
    def read(cls, path: Path) -> Self:
        """Load ``path`` as this document; a missing, unparsable or unreadable-version file is one line."""
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SagoError(f"{path}: no such {cls.KIND} ({cls.FIX.removeprefix('re-')})") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
            raise SagoError(f"{path}: not valid JSON ({str(err)[:120]}); {cls.FIX}") from None
        if not isinstance(document, dict):
            raise SagoError(f"{path}: {cls.KIND} has no integer schema_version; {cls.FIX}")
        return cls.from_json(document, path)

    def to_json(self) -> dict[str, Any]:
        """The object to write (unchanged from what was built or read)."""
        return dict(self.data)


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``data[key]`` when it is a JSON object, else an empty one (the lenient read of a nested part)."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class RunProfile:
    """run.json's ``profile``: the evaluation setting a run used (a missing or ill-typed value is None)."""

    name: str | None = None
    """profile name (smoke, full, paper, ...)."""
    items_per_dataset: int | None = None
    """items run per dataset."""
    all_strengths: bool | None = None
    """every strength level, or only the weakest and strongest."""
    max_new_tokens: int | None = None
    """generation limit."""


def _run_profile(data: Mapping[str, Any]) -> RunProfile:
    """run.json's ``profile`` object, read leniently (old files lack some keys)."""
    strengths = data.get("all_strengths")
    return RunProfile(
        _text(data, "name"),
        _int(data, "items_per_dataset"),
        strengths if isinstance(strengths, bool) else None,
        _int(data, "max_new_tokens"),
    )


@dataclass(frozen=True)
class RunDocument(Document):
    """``run.json``: provenance of one harness run (docs/CONTRACTS.md section 2)."""

    KIND: ClassVar[str] = "run"
    NEWEST: ClassVar[int] = RECORDS_SCHEMA_VERSION
    FIX: ClassVar[str] = "re-run `sago evaluate`"

    variant_set_sha256: str | None = None
    """sha256 of the variant set's manifest the run read."""
    profile: RunProfile | None = None
    """the evaluation profile (None: run.json records none)."""
    datasets: tuple[str, ...] | None = None
    """the datasets chosen; None when the run took all of them."""
    files: Mapping[str, str] | None = None
    """``{relative path: sha256}`` of every records/activations file (None: not recorded, or malformed)."""
    files_given: bool = False
    """run.json has a ``files`` key, whatever its value (runs from before hashes have none)."""
    finished_at: str | None = None
    """``timings.finished_at``: when the last rank finished (ISO 8601)."""
    nested_variant_set_sha256: str | None = None
    """``variant_set.sha256``: where older run.json files recorded the set's hash."""
    not_measured: Mapping[str, str] = field(default_factory=dict)
    """measure -> why it was not measured (e.g. ``"not measured (lm-eval run)"``): its deltas are NaN.
    Empty for every harness run; a result with entries is response-only and stays off the board."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: object = "run") -> Self:
        profile, datasets, files = data.get("profile"), data.get("datasets"), data.get("files")
        return cls(
            cls.version_of(data, where),
            data,
            _text(data, "variant_set_sha256"),
            _run_profile(profile) if isinstance(profile, Mapping) else None,
            tuple(str(d) for d in datasets) if isinstance(datasets, list) else None,
            files if _is_hash_map(files) else None,
            "files" in data,
            _text(_object(data, "timings"), "finished_at"),
            _text(_object(data, "variant_set"), "sha256"),
            {str(k): str(v) for k, v in _object(data, "not_measured").items()},
        )

    @property
    def is_api(self) -> bool:
        """The model was answered by an endpoint (``model.source`` "api"): no teacher forcing, no
        activations, its own table on the board."""
        model = self.data.get("model")
        return isinstance(model, Mapping) and model.get("source") == "api"

    @property
    def profile_name(self) -> str | None:
        """The profile's name (None: not recorded)."""
        return self.profile.name if self.profile else None

    def is_run_of(self, *, variant_set_sha256: str, profile: str, datasets: tuple[str, ...] | None) -> bool:
        """Whether this run is of that set, profile and dataset selection (None: all datasets).

        >>> run = RunDocument.from_json({"schema_version": 1, "variant_set_sha256": "a",
        ...                              "profile": {"name": "smoke"}, "datasets": "all"})
        >>> run.is_run_of(variant_set_sha256="a", profile="smoke", datasets=None)
        True
        """
        wanted = (
            self.data.get("datasets") == "all"
            if datasets is None
            else self.datasets == tuple(sorted(datasets))
        )
        return self.variant_set_sha256 == variant_set_sha256 and self.profile_name == profile and wanted


def _is_hash_map(value: object) -> bool:
    """A ``{path: sha256}`` map: a JSON object whose every value is a string."""
    return isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())


@dataclass(frozen=True)
class PlanDocument(Document):
    """``checkpoint/rank-<r>/plan.json``: everything that determines one rank's outputs."""

    KIND: ClassVar[str] = "plan"
    MISSING: ClassVar[int | None] = 1
    FIX: ClassVar[str] = "rerun with --force"

    rank: int = 0
    """this rank's index."""
    world_size: int = 1
    """how many ranks share the run."""
    keys: tuple[str, ...] = ()
    """every record key this rank must produce."""
    started_at: str | None = None
    """when this rank first started (ISO 8601; None: not recorded)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: object = "plan") -> Self:
        rank, world_size, keys = data.get("rank"), data.get("world_size"), data.get("keys")
        if not isinstance(rank, int) or not isinstance(world_size, int) or not isinstance(keys, list):
            raise SagoError(f"{where}: plan has no integer rank and world_size or no keys; {cls.FIX}")
        return cls(
            cls.version_of(data, where),
            data,
            rank,
            world_size,
            tuple(str(k) for k in keys),
            _text(data, "started_at"),
        )

    def shared(self) -> tuple[tuple[str, str], ...]:
        """The settings every rank of one run must agree on (not its rank, keys or start time), as
        ``(key, canonical JSON of the value)`` pairs sorted by key: equal exactly when the settings are.

        >>> plan = PlanDocument.from_json({"rank": 1, "world_size": 2, "keys": [], "seed": 42})
        >>> plan.shared()
        (('seed', '42'), ('world_size', '2'))
        """
        return tuple(
            (key, json.dumps(value, sort_keys=True))
            for key, value in sorted(self.data.items())
            if key not in ("rank", "keys", "started_at", "started_by")
        )


@dataclass(frozen=True)
class SummaryDocument(Document):
    """``summary.json``: one submission's statistics (version 1, one SGS, still loads)."""

    KIND: ClassVar[str] = "summary"
    NEWEST: ClassVar[int] = SUMMARY_SCHEMA_VERSION

    model: str | None = None
    """the submission slug."""
    set: str | None = None
    """variant set name."""
    version: str | None = None
    """variant set version."""
    per_item: Table[PerItemRow] = Table()
    """s_X(i) of every item and measure (what the site's comparison pages read)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: object = "summary") -> Self:
        version = cls.version_of(data, where)
        return cls(
            version,
            data,
            _text(data, "model"),
            _text(data, "set"),
            _text(data, "version"),
            Table(tuple(cast("list[PerItemRow]", _rows(data, "per_item", cls.KIND, where)))),
        )


def _rows(data: Mapping[str, Any], key: str, kind: str, where: object) -> list[Mapping[str, Any]]:
    """The table ``key`` of a document: a list of JSON objects (absent: none); anything else is refused."""
    rows = data.get(key, [])
    if not isinstance(rows, list):
        raise FileProblem(where, f"{kind} table {key!r} is not a list of rows", _ANALYZE)
    for row in rows:
        if not isinstance(row, dict):
            found = type(row).__name__
            raise FileProblem(where, f"{kind} table {key!r} holds a {found}, not a row object", _ANALYZE)
        for name in _NAME_FIELDS.intersection(row):
            if not isinstance(row[name], str | None):
                raise FileProblem(where, f"{kind} table {key!r}: field {name!r} is not text", _ANALYZE)
    return rows


_ANALYZE = Document.FIX
# Row fields that name things (lookups and the site's file names use them): text, or null.
_NAME_FIELDS = frozenset(
    {
        "model",
        "dataset",
        "measure",
        "family",
        "control",
        "scope",
        "measure_a",
        "measure_b",
        "model_a",
        "model_b",
        "dataset_a",
        "dataset_b",
        "slug",
        "status",
        "name",
        "axis",
        "symbol",
        "marker",
        "item_id",
    }
)
# Top-level keys a leaderboard cannot do without, and the type each must have (checked by ``require``).
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema_version": int,
    "set": str,
    "version": str,
    "models": list,
    "datasets": list,
    "measures": list,
    "epsilons": list,
    "primary_epsilon": (int, float),
    "markers": list,
}
_KIND_NAMES = {"int": "integer", "str": "string", "list": "list", "float": "number"}


def _number(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _table(data: Mapping[str, Any], key: str, where: object) -> Table[Any]:
    return Table(tuple(_rows(data, key, "leaderboard", where)))


@dataclass(frozen=True)
class LeaderboardDocument(Document):
    """``leaderboard.json``: every submission on one variant set (only the current version is read).

    Every table is a :class:`~benchmark.rows.Table` of typed rows (``benchmark.rows``) with indexed
    lookups; ``from_json`` refuses a table that is not a list of row objects or a name that is not text,
    and :meth:`require` the absence of a key a reader cannot do without.
    """

    KIND: ClassVar[str] = "leaderboard"
    NEWEST: ClassVar[int] = LEADERBOARD_SCHEMA_VERSION
    OLDEST: ClassVar[int] = LEADERBOARD_SCHEMA_VERSION

    set: str | None = None
    """variant set name."""
    version: str | None = None
    """variant set version."""
    datasets: tuple[str, ...] = ()
    """dataset names proper (without ``"all"``), sorted."""
    epsilons: tuple[float, ...] = ()
    """thresholds of the one-sided tests."""
    primary_epsilon: float | None = None
    """the ε that ``cells[].marker`` and ``verdict`` refer to."""
    generator_version: str = ""
    """the sago-bench version that wrote the file."""
    alpha: float | None = None
    """the level of every verdict."""
    headline_measures: tuple[str, ...] = ()
    """one measure per axis: the one the reversal tests and the site's verdicts use."""
    models: Table[ModelRow] = Table()
    measures: Table[MeasureRow] = Table()
    markers: Table[MarkerRow] = Table()
    aggregates: Table[AggregateRow] = Table()
    claims: Table[ClaimRow] = Table()
    cells: Table[CellRow] = Table()
    per_family: Table[FamilyRow] = Table()
    noise_floor: Table[NoiseFloorRow] = Table()
    accuracy: Table[AccuracyRow] = Table()
    accuracy_vs_sgs: Table[AccuracyVsSgsRow] = Table()
    pairwise: Table[PairwiseRow] = Table()
    friedman: Table[FriedmanRow] = Table()
    kendall_tau: Table[KendallTauRow] = Table()
    kendall_w: Table[KendallWRow] = Table()
    reversals: Table[ReversalRow] = Table()
    independence: Table[IndependenceRow] = Table()
    proportional_measures: Table[ProportionalRow] = Table()
    pareto: Table[ParetoRow] = Table()
    sample_size: Table[SampleSizeRow] = Table()
    sample_size_smallest_n: Table[SmallestNRow] = Table()
    sample_size_ranking: Table[SampleRankingRow] = Table()

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: object = "leaderboard") -> Self:
        version = cls.version_of(data, where)
        datasets, epsilons = data.get("datasets", []), data.get("epsilons", [])
        if not isinstance(datasets, list) or not all(isinstance(d, str) for d in datasets):
            raise FileProblem(where, "leaderboard 'datasets' holds something other than names", cls.FIX)
        if not isinstance(epsilons, list) or not all(isinstance(e, int | float) for e in epsilons):
            raise FileProblem(where, "leaderboard 'epsilons' holds something other than numbers", cls.FIX)
        generator, headline = data.get("generator"), data.get("headline_measures")
        tables = {name: _table(data, name, where) for name in LEADERBOARD_TABLES}
        if not all(isinstance(m.get("name"), str) for m in tables["measures"]):
            raise FileProblem(where, "leaderboard 'measures' rows need a 'name'", cls.FIX)
        return cls(
            version,
            data,
            _text(data, "set"),
            _text(data, "version"),
            tuple(datasets),
            tuple(float(e) for e in epsilons),
            _number(data, "primary_epsilon"),
            str(generator.get("version", "")) if isinstance(generator, Mapping) else "",
            _number(data, "alpha"),
            tuple(str(m) for m in headline) if isinstance(headline, list) else (),
            **tables,
        )

    def require(self, where: object) -> Self:
        """This document, after refusing one that lacks a key readers cannot do without (one line)."""
        for key, kind in _REQUIRED.items():
            value = self.data.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                name = _KIND_NAMES[kind.__name__] if isinstance(kind, type) else "number"
                raise FileProblem(where, f"leaderboard key {key!r} is missing or not a {name}", self.FIX)
        return self

    @property
    def complete(self) -> list[ModelRow]:
        """Models that have results."""
        return [m for m in self.models if m["status"] == "complete"]

    def measures_of(self, axis: str) -> list[MeasureRow]:
        """The measures of one axis, in schema order."""
        return self.measures.where(axis=axis)

    def name(self, slug: str) -> str:
        """Display name of a model (the slug when unknown)."""
        model = self.models.first(slug=slug)
        return str(model.get("name") or slug) if model is not None else slug


LEADERBOARD_TABLES: tuple[str, ...] = tuple(
    name for name, kind in LeaderboardDocument.__annotations__.items() if kind.startswith("Table[")
)
"""the tables of a leaderboard: every ``Table`` field, named as its JSON key."""
