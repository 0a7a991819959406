"""Build the static leaderboard: leaderboard.json + variant set + records → a folder of HTML, CSS, JS.

The pipeline reads top to bottom in :func:`build_site`: gather downloads, render the summary pages, the
model and dataset pages, then the item browser, and swap the finished folder into place. Output names
come only from validated slugs, dataset names and integer item ranks.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from tqdm import tqdm

from benchmark.errors import SagoError
from benchmark.paths import check_name, replace_folder
from benchmark.site import views
from benchmark.site.board import Board
from benchmark.site.downloads import Download, copy_downloads
from benchmark.site.items import ItemView, ModelResults, item_views, read_model_results
from benchmark.site.render import environment, root_of
from benchmark.submissions import results_dir
from benchmark.variants.freeze import VariantSet

MARKER = ".sago-site"
"""File that marks a folder as built by this code, so a rebuild may replace it."""
STATIC = ("site.css", "sort.js")


@dataclass(frozen=True)
class SiteInputs:
    """Everything a build reads."""

    board: Board
    """the leaderboard (or a pending-only board)."""
    submissions_root: Path
    """``submissions/``: records and deltas for the item browser and the downloads."""
    variants: VariantSet | None
    """the frozen, verified variant set, or None when it is not checked out."""


@dataclass(frozen=True)
class BuildReport:
    """What a build wrote."""

    pages: int
    """number of HTML pages."""
    total_bytes: int
    """size of every file written."""
    largest_page: tuple[str, int]
    """(relative path, bytes) of the biggest HTML page."""

    def line(self) -> str:
        """One-line summary for the CLI."""
        name, size = self.largest_page
        return (f"{self.pages} pages, {self.total_bytes / 1024:.0f} KiB in all; "
                f"largest page {name} ({size / 1024:.0f} KiB)")


@dataclass
class _Writer:
    """Renders templates into files under ``out`` with the shared context."""

    out: Path
    common: dict[str, Any]
    env: jinja2.Environment = field(default_factory=environment)
    pages: list[str] = field(default_factory=list)

    def page(self, path: str, template: str, **context: Any) -> None:
        html = self.env.get_template(template).render(**self.common, **context, root=root_of(path),
                                                      current=path)
        target = self.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
        self.pages.append(path)


def build_site(inputs: SiteInputs, out: Path, *, progress: bool = True) -> BuildReport:
    """Render the whole site into ``out`` (replaced only if an earlier build made it).

    Args:
        inputs: the leaderboard, submissions and variant set to render.
        out: target folder, e.g. ``leaderboard/site``.
        progress: show a progress bar over the item pages.
    """
    staging = _prepare(out)
    board = inputs.board
    writer = _Writer(staging, {"board": board, "set": board.data.get("set", ""),
                               "version": board.data.get("version", "")})
    try:
        set_dir = inputs.variants.path if inputs.variants else None
        downloads = copy_downloads(board, inputs.submissions_root, set_dir, staging)
        _summary_pages(writer, board, downloads)
        _model_and_dataset_pages(writer, board)
        _item_pages(writer, inputs, progress=progress)
        _copy_static(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # the previous site stays as it was
        raise
    _swap(staging, out)
    return _report(out, writer.pages)


def _copy_static(site: Path) -> None:
    """The stylesheet, the sort script and the marker that lets the next build replace this folder."""
    (site / "static").mkdir()
    for name in STATIC:
        data = resources.files("benchmark.site").joinpath("static", name).read_bytes()
        (site / "static" / name).write_bytes(data)
    (site / MARKER).write_text("built by `sago leaderboard build`; safe to delete and rebuild\n")


def _summary_pages(writer: _Writer, board: Board, downloads: list[Download]) -> None:
    writer.page("index.html", "overview.html.j2", title="Overview",
                tables={d: views.axis_tables(board, d) for d in views.dataset_choices(board)})
    writer.page("reversals.html", "reversals.html.j2", title="Ranking reversals",
                heatmaps=views.tau_heatmaps(board), no_tau=views.measures_without_tau(board),
                reversals=views.significant_first(board.rows("reversals")))
    writer.page("axes.html", "axes.html.j2", title="Axes", independence=views.independence_heatmap(board),
                pareto=views.pareto_plot(board))
    writer.page("models.html", "models.html.j2", title="Models")
    writer.page("datasets.html", "datasets.html.j2", title="Datasets")
    writer.page("methodology.html", "methodology.html.j2", title="Methodology")
    writer.page("downloads.html", "downloads.html.j2", title="Downloads", downloads=downloads)


def _model_and_dataset_pages(writer: _Writer, board: Board) -> None:
    for model in board.models:
        slug = model["slug"]
        writer.page(f"models/{slug}.html", "model.html.j2", title=model.get("name") or slug, model=model,
                    profile=views.profile_plot(board, slug) if model.get("status") == "complete" else None)
    for dataset in board.datasets:
        writer.page(f"datasets/{dataset}.html", "dataset.html.j2", title=dataset, dataset=dataset,
                    tables=views.axis_tables(board, dataset), by_rank=views.cells_by_rank)


def _item_pages(writer: _Writer, inputs: SiteInputs, *, progress: bool) -> None:
    datasets = _browser_datasets(inputs)
    counts: dict[str, int] = {}
    for dataset in tqdm(datasets, desc="item pages", unit="dataset", disable=not progress or not datasets):
        items = _dataset_items(inputs, dataset)
        counts[dataset] = len(items)
        writer.page(f"items/{dataset}/index.html", "items_dataset.html.j2", title=f"Items: {dataset}",
                    dataset=dataset, items=items)
        for item in items:
            writer.page(f"items/{dataset}/{item.rank}.html", "item.html.j2",
                        title=f"{dataset} item {item.rank}", item=item)
    writer.page("items/index.html", "items_index.html.j2", title="Item browser", counts=counts,
                has_variants=inputs.variants is not None)


def _browser_datasets(inputs: SiteInputs) -> list[str]:
    """Datasets of the leaderboard, or of the variant set when nothing has been evaluated yet."""
    if inputs.variants is None:
        return []
    # Board datasets were checked by read_board; the set's names become file names too, so check them.
    return inputs.board.datasets or [check_name(d, "dataset") for d in inputs.variants.datasets]


def _dataset_items(inputs: SiteInputs, dataset: str) -> list[ItemView]:
    assert inputs.variants is not None
    try:
        frame = inputs.variants.frame(dataset)
    except SagoError:
        return []  # a dataset the set does not hold: the index page says there are no items
    board = inputs.board
    results: dict[str, ModelResults] = {}
    for model in board.complete:
        folder = results_dir(model["slug"], board.data["set"], board.data["version"], inputs.submissions_root)
        found = read_model_results(folder, dataset)
        if len(found.records):
            results[model["slug"]] = found
    return item_views(dataset, frame, results)


def _prepare(out: Path) -> Path:
    """A fresh staging folder beside ``out``; refuse to replace a folder this code did not build."""
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise SagoError(f"{out} exists and was not built by sago; choose another --out or empty it")
    staging = out.with_name(out.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _swap(staging: Path, out: Path) -> None:
    replace_folder(staging, out)


def _files(out: Path) -> Iterator[Path]:
    return (p for p in sorted(out.rglob("*")) if p.is_file())


def _report(out: Path, pages: list[str]) -> BuildReport:
    sizes = {str(p.relative_to(out)): p.stat().st_size for p in _files(out)}
    largest = max(((p, sizes[p]) for p in pages), key=lambda pair: pair[1])
    return BuildReport(len(pages), sum(sizes.values()), largest)
