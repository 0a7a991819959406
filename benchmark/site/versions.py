"""One board per variant-set version, the links between them, and the changelog of committed results.

A variant set is frozen per version (``variants/<set>/<version>/``) and results are made against one
version, so each version has its own board. The published board (``--version``) is the site's root;
every other frozen version of the set is a complete board under ``versions/<version>/``. The changelog
lists what was added when, from the committed ``run.json`` files (their finishing date, profile and the
variant-set hash each run read) and the frozen sets' manifests; it computes no statistic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmark.documents import MANIFEST
from benchmark.errors import SagoError
from benchmark.paths import check_name
from benchmark.profiles import PROFILES, board_profile
from benchmark.results import ResultsFolder
from benchmark.submissions import list_slugs, load_submission

VERSIONS_DIR = "versions"
"""Folder of the site that holds the boards of the other versions."""


@dataclass(frozen=True)
class BoardLink:
    """One board as the version switcher of a page lists it."""

    version: str
    """variant-set version, e.g. ``v2``."""
    href: str
    """the board's root relative to the current board's root (``""``, ``versions/v2/``, ``../../``)."""
    current: bool
    """the board the page belongs to."""
    published: bool
    """the site's root board (the one ``sago leaderboard build --version`` names)."""
    evaluated: int
    """models with results on this board."""


def board_folder(version: str, published: str) -> str:
    """Where a version's board lives inside the site.

    >>> board_folder("v1", "v1"), board_folder("v2", "v1")
    ('', 'versions/v2/')
    """
    return "" if version == published else f"{VERSIONS_DIR}/{check_name(version, 'version')}/"


def board_links(current: str, published: str, evaluated: dict[str, int]) -> list[BoardLink]:
    """Every board, as seen from the board of ``current``; ``evaluated``: version -> evaluated models.

    >>> [(b.version, b.href) for b in board_links("v2", "v1", {"v1": 2, "v2": 0})]
    [('v1', '../../'), ('v2', '')]
    """
    here = board_folder(current, published)
    back = "../" * here.count("/")
    return [
        BoardLink(
            v, "" if v == current else back + board_folder(v, published), v == current, v == published, n
        )
        for v, n in sorted(evaluated.items())
    ]


def frozen_versions(set_name: str, variants_root: Path) -> list[str]:
    """Versions of ``set_name`` with a manifest under ``variants_root`` (sorted)."""
    folder = variants_root / check_name(set_name, "variant set")
    found = folder.iterdir() if folder.is_dir() else ()
    return sorted(
        p.name
        for p in found
        if p.is_dir() and not p.is_symlink() and (p / MANIFEST).is_file() and _safe(p.name)
    )


def _safe(name: str) -> bool:
    try:
        check_name(name, "version")
    except SagoError:
        return False
    return True


@dataclass(frozen=True)
class Change:
    """One line of the changelog."""

    date: str | None
    """YYYY-MM-DD the run finished (None: a frozen set or a pending submission, undated)."""
    version: str | None
    """the variant-set version it concerns (None: a submission not evaluated on any)."""
    what: str
    """``"evaluated"``, ``"frozen"`` or ``"submitted"``."""
    slug: str | None
    """the submission (None for a variant set)."""
    name: str
    """model display name, or the set's ``set/version``."""
    profile: str | None
    prompts: int | None
    """prompts the run answered (sum of run.json ``counts``)."""
    sha256: str | None
    """variant-set hash: the one a run recorded, or the manifest's own for a frozen set."""
    notes: str | None = None
    """for a frozen set: what the version changed against the one before (``RELEASE_NOTES``)."""
    api: bool = False
    """a run of a model behind an endpoint: shown in the API table, not on the board."""
    own_board: str | None = None
    """the profile whose own board holds the run (``profiles/<profile>/``); None: the version's board,
    which ranks only runs of its board profile."""


RELEASE_NOTES: dict[tuple[str, str], str] = {
    ("sago-v1", "v1"): (
        "the first frozen set: six datasets, every rule family; few length and form cells (model-generated)."
    ),
    ("sago-v1", "v2"): (
        "supersedes v1 (whose results are not comparable with v2's, number for number). The length and "
        "form cells, the paper's LLM families, are written by the maintainers and read blind instead of "
        "generated (v1 had too few of them); items that repeat another up to negation or are MiniLM "
        "near-duplicates are replaced; TriviaQA answers are de-duplicated; source artefacts (CSV quoting, "
        "lost apostrophes) are repaired; rule families edit only the item's own text, never the builder's "
        "wrapper, and never inside a gold answer, a quotation or a name (docs/VARIANTS.md, 'What the v2 "
        "builder changes')."
    ),
}
"""What each frozen version changed, shown in the changelog and on a superseded board's banner."""


def _name(slug: str, root: Path) -> str:
    try:
        return load_submission(slug, root).name
    except SagoError:
        return slug


def _run_change(
    slug: str, name: str, version: str, folder: ResultsFolder, own_board: str | None = None
) -> Change | None:
    try:
        run = folder.read_run()
    except SagoError:
        return None  # the validator reports it
    return Change(
        (run.finished_at or "")[:10] or None,
        version,
        "evaluated",
        slug,
        name,
        run.profile_name,
        sum(run.counts.values()) if run.counts else None,  # records rows of every dataset together
        run.variant_set_sha256 or run.nested_variant_set_sha256,
        api=run.is_api,
        own_board=own_board,
    )


def changelog(set_name: str, sets: Mapping[str, str], submissions_root: Path) -> list[Change]:
    """Runs newest first, then each frozen set (newest version first), then submissions without results.

    ``sets`` maps every frozen version with a board to its manifest's sha256; the runs are the committed
    ``run.json`` files under ``submissions_root``.
    """
    runs: list[Change] = []
    slugs = list_slugs(submissions_root)
    for slug in slugs:
        name = _name(slug, submissions_root)
        for version in sorted(sets):
            # the board profile's run, then any other profile's (its own board: profiles/<profile>/)
            for profile in (None, *sorted(set(PROFILES.names()) - {board_profile(version)})):
                folder = ResultsFolder.of(slug, set_name, version, submissions_root, profile=profile)
                change = _run_change(slug, name, version, folder, profile) if folder.run.is_file() else None
                if change is not None:
                    runs.append(change)
    evaluated = {c.slug for c in runs}
    runs.sort(key=lambda c: (c.date or "", c.version or "", c.name), reverse=True)
    frozen = [
        Change(
            None, v, "frozen", None, f"{set_name}/{v}", None, None, sets[v], RELEASE_NOTES.get((set_name, v))
        )
        for v in sorted(sets, reverse=True)
    ]
    waiting = [
        Change(None, None, "submitted", slug, _name(slug, submissions_root), None, None, None)
        for slug in slugs
        if slug not in evaluated and (submissions_root / slug / "submission.yaml").is_file()
    ]
    return runs + frozen + waiting


def run_board(change: Change, links: Sequence[BoardLink], profile_boards: Collection[str]) -> str | None:
    """The root of the board that holds a run, relative to the page's own board root (None: the site has
    no such board). A run of another profile belongs to that profile's board, which the site renders only
    for the published version (``profile_boards``: the profiles it renders).

    >>> links = board_links("v2", "v2", {"v1": 0, "v2": 4})
    >>> paper = Change(None, "v2", "evaluated", "m", "M", "paper", None, None, own_board="paper")
    >>> run_board(paper, links, ["paper"]), run_board(paper, links, []), run_board(paper, links[:1], [])
    ('profiles/paper/', None, None)
    >>> run_board(Change(None, "v1", "evaluated", "m", "M", "smoke", None, None), links, [])
    'versions/v1/'
    """
    link = next((b for b in links if b.version == change.version), None)
    if link is None or change.own_board is None:
        return None if link is None else link.href
    if not link.published or change.own_board not in profile_boards:
        return None
    return f"{link.href}profiles/{check_name(change.own_board, 'profile')}/"


def committed(version: str, changes: Sequence[Change]) -> str:
    """How many results a version's board holds, and how many runs of other profiles sit on their own
    boards (never counted as the version's: its board does not rank them). API runs have their own table.

    >>> runs = [Change(None, "v2", "evaluated", s, s, "evidence", None, None) for s in "abc"]
    >>> paper = Change(None, "v2", "evaluated", "a", "a", "paper", None, None, own_board="paper")
    >>> committed("v2", [*runs, paper])
    '3 results committed, and 1 paper-profile run on its own board'
    >>> committed("v1", runs)
    'no results committed yet'
    """
    runs = [c for c in changes if c.what == "evaluated" and c.version == version and not c.api]
    own = sum(c.own_board is None for c in runs)
    said = f"{own} result{'s' if own != 1 else ''} committed" if own else "no results committed yet"
    others = Counter(c.own_board for c in runs if c.own_board is not None)
    for profile, n in sorted(others.items()):
        own_boards = "its own board" if n == 1 else "their own board"
        said += f", and {n} {profile}-profile run{'s' if n != 1 else ''} on {own_boards}"
    return said


def snapshot_name(set_name: str, version: str, dates: Sequence[str]) -> str | None:
    """File name of the dated copy of leaderboard.json: dated by its newest run (None without runs).

    >>> snapshot_name("sago-v1", "v1", ["2026-11-29", "2026-11-30"])
    'leaderboard-sago-v1-v1-2026-11-30.json'
    """
    return f"leaderboard-{set_name}-{version}-{max(dates)}.json" if dates else None
