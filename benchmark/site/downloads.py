"""Files offered on the downloads page, copied into the site so every link stays relative.

The variant set's parquet files, manifest and card, and each complete submission's ``run.json``,
``summary.json``, ``deltas.parquet`` and ``records/*.parquet``. Activations are not copied (tens of MB
per model); the page points to the repository for them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmark.provenance import sha256_file
from benchmark.site.board import Board
from benchmark.submissions import results_dir

_RESULT_FILES = ("run.json", "summary.json", "deltas.parquet")
_SET_FILES = ("manifest.json", "README.md")


@dataclass(frozen=True)
class Download:
    """One file on the downloads page."""

    group: str
    """``"variants"`` or the slug of a submission."""
    label: str
    """the file's path inside its group, e.g. ``records/trivia_qa.parquet``."""
    href: str
    """link relative to the site root."""
    size: int
    """bytes."""
    sha256: str
    """hex digest, so a download can be verified."""


def copy_downloads(board: Board, submissions_root: Path, variants_dir: Path | None,
                   site: Path) -> list[Download]:
    """Copy every downloadable file under ``site/downloads/`` and describe it.

    Args:
        board: the leaderboard (its complete models are offered).
        submissions_root: the ``submissions/`` folder.
        variants_dir: ``variants/<set>/<version>/`` or None.
        site: the site folder being built.
    """
    found: list[Download] = []
    if variants_dir is not None and variants_dir.is_dir():
        found += _copy(variants_dir, _set_files(variants_dir), "variants", site)
    for model in board.complete:
        folder = results_dir(model["slug"], board.data["set"], board.data["version"], submissions_root)
        found += _copy(folder, _result_files(folder), model["slug"], site)
    return found


def _set_files(folder: Path) -> Iterator[Path]:
    yield from (folder / name for name in _SET_FILES if (folder / name).is_file())
    yield from sorted((folder / "data").glob("*.parquet"))


def _result_files(folder: Path) -> Iterator[Path]:
    yield from (folder / name for name in _RESULT_FILES if (folder / name).is_file())
    yield from sorted((folder / "records").glob("*.parquet"))


def _copy(base: Path, files: Iterator[Path], group: str, site: Path) -> list[Download]:
    copied = []
    for source in files:
        if source.is_symlink():
            continue  # never follow a link out of a submission folder
        label = source.relative_to(base).as_posix()
        href = f"downloads/{group}/{label}"
        target = site / href
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(Download(group, label, href, target.stat().st_size, sha256_file(target)))
    return copied
