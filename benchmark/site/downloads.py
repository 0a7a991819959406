"""Files offered on the downloads page, copied into the site so every link stays relative.

The variant set's parquet files, manifest and card, and each complete submission's ``run.json``,
``summary.json``, ``deltas.parquet`` and ``records/*.parquet``. Activations are not copied (tens of MB
per model); the page points to the repository for them.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmark.axes.measures import measure_label
from benchmark.documents import MANIFEST
from benchmark.errors import visible
from benchmark.provenance import sha256_file
from benchmark.results import LEADERBOARD_FILE
from benchmark.site.board import Board

_SET_FILES = (MANIFEST, "README.md")


@dataclass(frozen=True)
class Download:
    """One file on the downloads page."""

    group: str
    """``"leaderboard"``, ``"variants"`` or the slug of a submission."""
    label: str
    """the file's path inside its group, e.g. ``records/trivia_qa.parquet``."""
    href: str
    """link relative to the site root."""
    size: int
    """bytes."""
    sha256: str
    """hex digest, so a download can be verified."""


def copy_downloads(
    board: Board,
    submissions_root: Path,
    variants_dir: Path | None,
    site: Path,
    *,
    snapshot: str | None = None,
) -> list[Download]:
    """Copy every downloadable file (the board's tables, the variant set in ``variants_dir``, each complete
    model's results) under ``site/downloads/`` and describe it; ``snapshot`` names a dated copy of
    ``leaderboard.json`` to offer too."""
    found = _write_tables(board, site, snapshot)
    if variants_dir is not None and variants_dir.is_dir():
        listed = [variants_dir / name for name in _SET_FILES if (variants_dir / name).is_file()]
        found += _copy(
            variants_dir, [*listed, *sorted((variants_dir / "data").glob("*.parquet"))], "variants", site
        )
    for model in board.complete:
        folder = board.results(model["slug"], submissions_root)
        documents = [path for path in (folder.run, folder.summary, folder.deltas) if path.is_file()]
        found += _copy(folder.path, [*documents, *folder.record_files()], model["slug"], site)
    return found


# a table, one line per kind of column (the formatter would put each name on a line of its own)
# fmt: off
CSV_COLUMNS = (
    "model", "model_name", "dataset", "axis", "measure", "measure_name", "n_items",
    "sgs", "ci_low", "ci_high", "sgs_extended", "noise_floor",
    "rank", "rank_low", "rank_high", "tie_group",
    "epsilon", "p_exact", "p_holm", "verdict", "p_t", "p_t_holm",
)
# fmt: on
"""Columns of ``cells.csv``: one row per (model, dataset, measure) cell, the test at the primary ε: the
exact test's ``p_exact`` (raw) and ``p_holm``/``verdict`` (corrected), then the paper's t-test (``p_t`` raw,
``p_t_holm`` corrected)."""


FORMULA_STARTS = ("=", "+", "-", "@")
"""What a spreadsheet reads as the start of a formula."""


def neutral_cell(value: object) -> object:
    r"""A CSV cell a spreadsheet shows as the text it is.

    Text (names and labels: every ``str`` value) has its control and format characters written as
    escapes, as everywhere on the site — so a leading tab or carriage return, which can hide a formula,
    becomes a visible ``\t`` — and text that starts like a formula gets a leading apostrophe
    (``=HYPERLINK(…)`` is shown, not run). Numbers are never touched, so a negative number stays a number.

    Leading spaces do not hide a formula either (an import that trims spaces would run it).

    >>> neutral_cell("=HYPERLINK(1)"), neutral_cell("-2+3"), neutral_cell(-0.25), neutral_cell("\t=1")
    ("'=HYPERLINK(1)", "'-2+3", -0.25, '\\t=1')
    >>> neutral_cell("  =1+1")
    "'  =1+1"
    """
    if not isinstance(value, str):
        return value
    text = visible(value)
    return f"'{text}" if text.lstrip(" ").startswith(FORMULA_STARTS) else text


def cells_csv(board: Board) -> str:
    """Every cell of the leaderboard as CSV text (no statistic computed: the file's values, flattened).

    >>> board = Board.of({"primary_epsilon": 0.05, "measures": [{"name": "bleu", "axis": "generation"}],
    ...                "models": [{"slug": "a", "name": "A"}], "cells": [{"model": "a", "dataset": "x",
    ...                "measure": "bleu", "sgs": 0.5, "tests": [{"epsilon": 0.05, "p_holm": 0.01}]}]})
    >>> cells_csv(board).splitlines()[1]
    'a,A,x,generation,bleu,Wording (BLEU),,0.5,,,,,,,,,0.05,,0.01,,,'
    """
    axes = {m["name"]: m["axis"] for m in board.measures}
    eps = board.document.primary_epsilon
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for cell in board.document.cells:
        test: Mapping[str, object] = next((t for t in cell.get("tests", []) if t.get("epsilon") == eps), {})
        row = {
            **cell,
            **test,
            "model_name": board.name(cell["model"]),
            "axis": axes.get(cell["measure"], ""),
            "measure_name": measure_label(cell["measure"]),
            "epsilon": eps,
            "verdict": test.get("verdict") or "",
            "sgs_extended": (cell.get("extended") or {}).get("sgs"),
        }
        writer.writerow({k: neutral_cell(v) for k, v in row.items()})
    return buffer.getvalue()


def _write_tables(board: Board, site: Path, snapshot: str | None) -> list[Download]:
    """``leaderboard.json`` (as read), its dated copy ``snapshot`` and ``cells.csv`` under ``downloads/``."""
    folder = site / "downloads"
    folder.mkdir(parents=True, exist_ok=True)
    board_text = json.dumps(board.data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    texts = {LEADERBOARD_FILE: board_text, **({snapshot: board_text} if snapshot else {})}
    texts["cells.csv"] = cells_csv(board)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [_download("leaderboard", name, f"downloads/{name}", site) for name in texts]


def _copy(base: Path, files: list[Path], group: str, site: Path) -> list[Download]:
    copied = []
    for source in files:
        if source.is_symlink():
            continue  # never follow a link out of a submission folder
        label = source.relative_to(base).as_posix()
        href = f"downloads/{group}/{label}"
        target = site / href
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(_download(group, label, href, site))
    return copied


def _download(group: str, label: str, href: str, site: Path) -> Download:
    """The entry of a file already written at ``site/href``: its size and digest."""
    return Download(group, label, href, (site / href).stat().st_size, sha256_file(site / href))
