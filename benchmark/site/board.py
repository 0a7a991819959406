"""Reading ``leaderboard/leaderboard.json`` (docs/LEADERBOARD_JSON.md) for the site.

The site computes no statistics: :class:`Board` wraps the typed :class:`LeaderboardDocument` (its tables
indexed, its rows typed by ``benchmark.rows``) and checks what the site turns into file names. Python
code reads the typed tables; templates look rows up by table name. When no leaderboard exists yet
(nothing evaluated), :func:`pending_board` lists every submission as pending so the site still builds
and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from benchmark.documents import LeaderboardDocument
from benchmark.errors import SagoError
from benchmark.results import ResultsFolder
from benchmark.rows import CellRow, MeasureRow, ModelRow, Table
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION
from benchmark.submissions import list_slugs, load_submission


class CellKey(NamedTuple):
    """What identifies one leaderboard cell."""

    model: str
    dataset: str
    measure: str


ALL = "all"
"""Pseudo-dataset pooling every item of every dataset."""


@dataclass(frozen=True)
class Board:
    """The typed leaderboard the site renders: its tables, lookups and the object as written."""

    document: LeaderboardDocument
    """the leaderboard, read through its typed document."""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Board:
        """A board of a leaderboard object that may leave out tables (examples, doctests).

        >>> Board.of({"models": [{"slug": "a", "name": "A", "status": "complete"}]}).name("a")
        'A'
        """
        return cls(LeaderboardDocument.from_json({"schema_version": LEADERBOARD_SCHEMA_VERSION, **data}))

    @cached_property
    def data(self) -> Mapping[str, Any]:
        """The whole JSON object, for templates (Python code reads the typed tables); dumped once."""
        return self.document.to_json()

    @property
    def models(self) -> Table[ModelRow]:
        """Every submission, complete or pending, sorted by slug."""
        return self.document.models

    @property
    def complete(self) -> list[ModelRow]:
        """Models that have results."""
        return self.document.complete

    @property
    def datasets(self) -> list[str]:
        """Dataset names proper (without ``"all"``)."""
        return list(self.document.datasets)

    @property
    def measures(self) -> Table[MeasureRow]:
        """``{name, axis, scale, paper, description}`` rows in schema order."""
        return self.document.measures

    def measures_of(self, axis: str) -> list[MeasureRow]:
        """The measures of one axis, in schema order."""
        return self.document.measures_of(axis)

    def rows(self, table: str, **match: Any) -> list[Any]:
        """Rows of the table named ``table`` whose fields equal every keyword given (for templates).

        >>> Board.of({"cells": [{"model": "a", "sgs": 1}, {"model": "b", "sgs": 2}]}).rows("cells", model="b")
        [{'model': 'b', 'sgs': 2}]
        """
        return self._table(table).where(**match)

    def one(self, table: str, **match: Any) -> Any:
        """The first row of ``table`` matching ``match``, or None (for templates)."""
        return self._table(table).first(**match)

    def _table(self, table: str) -> Table[Any]:
        found = getattr(self.document, table, None)
        if not isinstance(found, Table):
            raise KeyError(f"the leaderboard has no table {table!r}")
        return found

    def cell(self, key: CellKey) -> CellRow | None:
        """The ``cells`` row of one (model, dataset, measure), or None when the leaderboard has none.

        >>> Board.of({"cells": [{"model": "a", "dataset": "all", "measure": "bleu", "sgs": 1}]}).cell(
        ...     CellKey("a", "all", "bleu"))
        {'model': 'a', 'dataset': 'all', 'measure': 'bleu', 'sgs': 1}
        """
        return self.document.cells.first(**key._asdict())

    def name(self, slug: str) -> str:
        """Display name of a model (the slug when unknown)."""
        return self.document.name(slug)

    @property
    def version(self) -> str:
        """The version of the variant set the board's numbers come from."""
        return str(self.data["version"])

    @property
    def profile(self) -> str | None:
        """The run profile of another profile's board (None: the version's own board)."""
        return self.document.profile

    def results(self, slug: str, submissions_root: Path) -> ResultsFolder:
        """The results folder this board's numbers of ``slug`` come from (``<version>/``, or
        ``<version>-<profile>/`` on another profile's board)."""
        return ResultsFolder.of(
            slug, str(self.data["set"]), self.version, submissions_root, profile=self.profile
        )


def read_board(path: Path) -> Board:
    """Load and check a leaderboard file (:meth:`LeaderboardDocument.require` says what is refused)."""
    return Board(LeaderboardDocument.read(path).require(path))


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
        entries.append(Entry(slug, submission, None, None))
    return Board(build_leaderboard(entries, set_name=set_name, version=version))
