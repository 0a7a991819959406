"""Reading ``leaderboard/leaderboard.json`` (docs/LEADERBOARD_JSON.md) for the site.

The site computes no statistics: :class:`Board` only indexes the rows of the file so templates can look
them up. When no leaderboard exists yet (nothing evaluated), :func:`pending_board` lists every
submission as pending so the site still builds and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from benchmark.errors import FileProblem, SagoError
from benchmark.paths import check_name, check_slug
from benchmark.safeload import load_json_object
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION
from benchmark.submissions import list_slugs, load_submission

Row = dict[str, Any]


class CellKey(NamedTuple):
    """What identifies one leaderboard cell."""

    model: str
    dataset: str
    measure: str


ALL = "all"
"""Pseudo-dataset pooling every item of every dataset."""


@dataclass(frozen=True)
class Board:
    """The parsed leaderboard plus lookups; ``data`` is the file's object, unchanged."""

    data: dict[str, Any]
    """the whole JSON object."""
    _indexes: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], list[Row]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """``(table, fields)`` -> rows by the values of those fields; filled on first lookup."""

    @property
    def models(self) -> list[Row]:
        """Every submission, complete or pending, sorted by slug."""
        return list(self.data.get("models", []))

    @property
    def complete(self) -> list[Row]:
        """Models that have results."""
        return [m for m in self.models if m.get("status") == "complete"]

    @property
    def datasets(self) -> list[str]:
        """Dataset names proper (without ``"all"``)."""
        return list(self.data.get("datasets", []))

    @property
    def measures(self) -> list[Row]:
        """``{name, axis, scale, paper, description}`` rows in schema order."""
        return list(self.data.get("measures", []))

    def measures_of(self, axis: str) -> list[Row]:
        """The measures of one axis, in schema order."""
        return [m for m in self.measures if m["axis"] == axis]

    def rows(self, table: str, **match: Any) -> list[Row]:
        """Rows of ``table`` whose fields equal every keyword given (the file's order is kept).

        The lookup goes through an index of ``table`` by the matched fields, built on first use, so a
        page that looks up every cell costs one pass over the table, not one per cell.

        >>> Board({"cells": [{"model": "a", "sgs": 1}, {"model": "b", "sgs": 2}]}).rows("cells", model="b")
        [{'model': 'b', 'sgs': 2}]
        """
        fields = tuple(sorted(match))
        return list(self._index(table, fields).get(tuple(match[f] for f in fields), ()))

    def one(self, table: str, **match: Any) -> Row | None:
        """The first row matching ``match``, or None."""
        found = self._index(table, tuple(sorted(match))).get(tuple(match[f] for f in sorted(match)))
        return found[0] if found else None

    def cell(self, key: CellKey) -> Row | None:
        """The ``cells`` row of one (model, dataset, measure), or None when the leaderboard has none.

        >>> Board({"cells": [{"model": "a", "dataset": "all", "measure": "bleu", "sgs": 1}]}).cell(
        ...     CellKey("a", "all", "bleu"))
        {'model': 'a', 'dataset': 'all', 'measure': 'bleu', 'sgs': 1}
        """
        return self.one("cells", **key._asdict())

    def _index(self, table: str, fields: tuple[str, ...]) -> dict[tuple[Any, ...], list[Row]]:
        index = self._indexes.get((table, fields))
        if index is None:
            index = {}
            for row in self.data.get(table, []):
                index.setdefault(tuple(row.get(f) for f in fields), []).append(row)
            self._indexes[(table, fields)] = index
        return index

    def name(self, slug: str) -> str:
        """Display name of a model (the slug when unknown)."""
        for model in self.models:
            if model["slug"] == slug:
                return str(model.get("name") or slug)
        return slug


LEADERBOARD_LIMIT = 64 << 20
_FIX = "run `sago analyze` to rewrite it"
# Top-level keys the site cannot do without, and the type each must have.
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
_LISTS = frozenset({"datasets", "families", "epsilons", "headline_measures"})
"""top-level lists of plain values; every other list is a table of row objects."""
_TABLES = frozenset(
    {
        "models",
        "measures",
        "markers",
        "cells",
        "per_family",
        "noise_floor",
        "accuracy",
        "pairwise",
        "friedman",
        "kendall_tau",
        "kendall_w",
        "reversals",
        "independence",
        "pareto",
    }
)
# Row fields that name things (lookups and file names use them): text, or null where not applicable.
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
    }
)


def read_board(path: Path) -> Board:
    """Load and check a leaderboard file; refuse a newer schema, a wrong shape and unsafe names.

    Slugs and dataset names become file names of the site, so they are validated here once.
    """
    data = load_json_object(path, limit=LEADERBOARD_LIMIT, fix=_FIX)
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > LEADERBOARD_SCHEMA_VERSION:
        raise SagoError(
            f"{path}: schema_version {version!r} is not one this site reads "
            f"(≤ {LEADERBOARD_SCHEMA_VERSION}); update sago-bench"
        )
    _check_shape(path, data)
    for slug in _slugs(data["models"]):
        check_slug(slug)
    for model in data["models"]:
        if model.get("status") not in ("complete", "pending"):
            raise FileProblem(
                path, f"leaderboard model {model['slug']!r} has no status 'complete' or 'pending'", _FIX
            )
    for dataset in data["datasets"]:
        check_name(dataset, "dataset")
    check_name(data["set"], "variant set")
    check_name(data["version"], "version")
    return Board(data)


def _check_shape(path: Path, data: dict[str, Any]) -> None:
    """The keys and types the site relies on; every table a list of flat rows with text names."""
    for key, kind in _REQUIRED.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise FileProblem(path, f"leaderboard key {key!r} is missing or not a {_kind(kind)}", _FIX)
    if not all(isinstance(d, str) for d in data["datasets"]):
        raise FileProblem(path, "leaderboard 'datasets' holds something other than names", _FIX)
    for key, value in data.items():
        if key in _TABLES or (isinstance(value, list) and key not in _LISTS):
            if not isinstance(value, list):
                raise FileProblem(path, f"leaderboard table {key!r} is not a list of rows", _FIX)
            for row in value:
                _check_row(path, key, row)
    if not all(isinstance(m.get("name"), str) for m in data["measures"]):
        raise FileProblem(path, "leaderboard 'measures' rows need a 'name'", _FIX)


def _check_row(path: Path, table: str, row: Any) -> None:
    if not isinstance(row, dict):
        raise FileProblem(
            path, f"leaderboard table {table!r} holds a {type(row).__name__}, not a row object", _FIX
        )
    for name in _NAME_FIELDS.intersection(row):
        if not isinstance(row[name], str | None):
            raise FileProblem(path, f"leaderboard table {table!r}: field {name!r} is not text", _FIX)


def _kind(kind: type | tuple[type, ...]) -> str:
    names = {"int": "integer", "str": "string", "list": "list", "float": "number"}
    return names[kind.__name__] if isinstance(kind, type) else "number"


def _slugs(models: Iterable[Row]) -> Iterator[str]:
    for model in models:
        yield str(model.get("slug", ""))


def pending_board(set_name: str, version: str, submissions_root: Path) -> Board:
    """A leaderboard with no results: every valid submission listed as pending.

    Used when ``leaderboard.json`` does not exist yet, so a fresh checkout still builds a site. It is
    the statistics' own leaderboard builder over pending entries: the same header (epsilons, markers,
    confidence level), measures and model rows as a leaderboard with results.
    """
    from benchmark.stats.leaderboard import Entry, build_leaderboard  # the statistics load only here

    entries = []
    for slug in list_slugs(submissions_root):
        try:
            submission = load_submission(slug, submissions_root)
        except SagoError:
            continue  # `sago submissions validate` reports it; the site shows only valid submissions
        entries.append(Entry(slug, submission.model_dump(mode="json"), None, None))
    return Board(build_leaderboard(entries, set_name=set_name, version=version))
