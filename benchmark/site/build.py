"""Build the static leaderboard: leaderboard.json + variant set + records → a folder of HTML, CSS, JS.

The pipeline reads top to bottom in :func:`build_site`: gather downloads, render the summary pages, the
model and dataset pages, then the item browser, and swap the finished folder into place. Output names
come only from validated slugs, dataset names and integer item ranks.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from tqdm import tqdm

from benchmark.documents import SummaryDocument
from benchmark.errors import SagoError
from benchmark.model_facts import PackagedFacts
from benchmark.paths import check_name, replace_folder
from benchmark.rows import PerItemRow
from benchmark.schema import DEFAULT_SET_VERSION
from benchmark.site import findings, overview, views
from benchmark.site import profiles as profiles_view
from benchmark.site.board import Board
from benchmark.site.cite import DEFAULT_REPO_URL, Citation
from benchmark.site.downloads import Download, copy_downloads
from benchmark.site.facts import ModelFacts, all_facts
from benchmark.site.items import ItemView, item_views, read_model_results
from benchmark.site.model_file import DEGENERATE_RULE, degenerate_text, files_that_ran
from benchmark.site.render import NAV, environment, root_of
from benchmark.site.runinfo import read_runs, run_header
from benchmark.site.stack import label_cells
from benchmark.site.submit import EXAMPLE_FOLDER, EXAMPLE_YAML, EvaluationPlan, evaluation_plan
from benchmark.site.versions import (
    BoardLink,
    Change,
    board_folder,
    board_links,
    changelog,
    committed,
    run_board,
    snapshot_name,
)
from benchmark.stats import validity
from benchmark.stats.api_models import ABOUT as API_ABOUT
from benchmark.stats.api_models import ApiRow
from benchmark.submissions.fields import describe_fields
from benchmark.variants.frozen import VariantSet

MARKER = ".sago-site"
"""File that marks a folder as built by this code, so a rebuild may replace it."""
STATIC = ("site.css", "sort.js", "filter.js", "copy.js", "favicon.svg", "og-card.png")


@dataclass(frozen=True)
class SiteInputs:
    """Everything a build reads."""

    board: Board
    """the leaderboard (or a pending-only board)."""
    submissions_root: Path
    """``submissions/``: records and deltas for the item browser and the downloads."""
    variants: VariantSet | None
    """the frozen, verified variant set, or None when it is not checked out."""
    repo_url: str = DEFAULT_REPO_URL
    """repository the footer, the Submit page and the downloads link to."""
    api_rows: tuple[ApiRow, ...] = ()
    """the API table of this board (``api_models.json``; ``benchmark.stats.api_models``), shown on its own
    page and never in the open models' tables."""
    model_files: Mapping[str, PackagedFacts] = field(default_factory=dict)
    """slug -> the packaged file's facts (``model_facts.json``), shown on the page of a model whose run
    loaded that file."""

    def dataset_info(self, dataset: str) -> views.DatasetInfo | None:
        """The variant set's description of one dataset (None without the set, or the dataset in it)."""
        entries = self.variants.entries if self.variants else {}
        return views.dataset_info(dataset, entries.get(dataset))


@dataclass(frozen=True)
class BuildReport:
    """What a build wrote."""

    pages: int
    total_bytes: int
    """size of every file written."""
    largest_page: tuple[str, int]
    """(relative path, bytes) of the biggest HTML page."""

    def line(self) -> str:
        """One-line summary for the CLI."""
        name, size = self.largest_page
        return (
            f"{self.pages} pages, {self.total_bytes / 1024:.0f} KiB in all; "
            f"largest page {name} ({size / 1024:.0f} KiB)"
        )


@dataclass
class _Writer:
    """Renders templates into files under ``out`` with the shared context."""

    out: Path
    common: dict[str, Any]
    env: jinja2.Environment = field(default_factory=environment)
    pages: list[str] = field(default_factory=list)

    def page(self, path: str, template: str | None = None, **context: Any) -> None:
        """Render ``template`` (by default the page's own name plus ``.j2``) into ``out / path``."""
        html = self.env.get_template(template or f"{path}.j2").render(
            **self.common, **context, root=root_of(path), current=path
        )
        target = self.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(label_cells(html), encoding="utf-8")
        self.pages.append(path)


def build_site(
    inputs: SiteInputs,
    out: Path,
    *,
    progress: bool = True,
    others: Sequence[SiteInputs] = (),
    profiles: Sequence[SiteInputs] = (),
) -> BuildReport:
    """Render the whole site into ``out`` (e.g. ``leaderboard/site``; replaced only if an earlier build made
    it). ``inputs`` is the published board, the site's root; ``others`` are the set's other versions, each
    under ``versions/<version>/``; ``profiles`` are the boards of the published version's other run
    profiles (``sago analyze --profile``), each a complete board under ``profiles/<profile>/`` with its
    comparison page, which the published board's menu links to.
    """
    boards = [inputs, *others]
    versions = [b.board.version for b in boards]
    if len(set(versions)) != len(versions):
        raise SagoError(f"two boards for one variant-set version: {', '.join(sorted(versions))}")
    staging = _prepare(out)
    published = inputs.board.version
    evaluated = {b.board.version: len(b.board.complete) for b in boards}
    sets = {b.board.version: b.variants.sha256 for b in boards if b.variants is not None}
    extra = _profile_boards(inputs, profiles)
    shared = _Shared(
        changelog(str(inputs.board.data["set"]), sets, inputs.submissions_root),
        _plan(inputs, boards),
        tuple(str(board.board.profile) for board, _, _ in extra),
    )
    pages: list[str] = []
    try:
        for board in boards:
            folder = board_folder(board.board.version, published)
            links = board_links(board.board.version, published, evaluated)
            menu = tuple(link for _, link, _ in extra) if board is inputs else ()
            written = _render_board(
                board, staging / folder, links, shared, folder, progress=progress, menu=menu
            )
            pages += [folder + page for page in written]
        for board, _, view in extra:
            folder = profiles_view.profile_folder(str(board.board.profile))
            # the board switcher of a profile board: the published board and this one
            name = f"{board.board.version} ({board.board.profile} profile)"
            links = [
                BoardLink(published, "../" * folder.count("/"), False, True, evaluated[published]),
                BoardLink(name, "", True, False, len(board.board.complete)),
            ]
            written = _render_board(
                board, staging / folder, links, shared, folder, progress=progress, comparison=view
            )
            pages += [folder + page for page in written]
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # the previous site stays as it was
        raise
    replace_folder(staging, out)
    sizes = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    return BuildReport(
        len(pages), sum(sizes.values()), max(((p, sizes[p]) for p in pages), key=lambda pair: pair[1])
    )


@dataclass(frozen=True)
class _Shared:
    """What every board of the site shows alike."""

    changes: list[Change]
    plan: EvaluationPlan | None
    """what a new submission is run with (None without the variant set it would run on)."""
    profiles: tuple[str, ...] = ()
    """the other profiles whose boards the site renders (a run of one links to its own board)."""


def _plan(inputs: SiteInputs, boards: Sequence[SiteInputs]) -> EvaluationPlan | None:
    """The plan on the version new models are evaluated on (else the published board's set)."""
    chosen = next((b for b in boards if b.board.version == DEFAULT_SET_VERSION and b.variants), inputs)
    if chosen.variants is None:
        return None
    runs = read_runs(inputs.board, inputs.submissions_root)
    return evaluation_plan(chosen.variants, runs, list(inputs.board.models))


def _profile_boards(
    inputs: SiteInputs, profiles: Sequence[SiteInputs]
) -> list[tuple[SiteInputs, tuple[str, str], profiles_view.ComparisonView | None]]:
    """Each other profile's board, the published menu's link to its comparison page, and that page."""
    out = []
    seen: set[str] = set()
    for board in profiles:
        profile = board.board.profile
        if profile is None or profile in seen or board.board.version != inputs.board.version:
            raise SagoError(
                f"a profile board must name a profile of its own on {inputs.board.data['set']}/"
                f"{inputs.board.version} (got {profile!r} on {board.board.version})"
            )
        seen.add(profile)
        view = profiles_view.comparison_view(board.board)
        page = profiles_view.profile_folder(profile) + (
            profiles_view.COMPARISON_PAGE if view is not None else "index.html"
        )
        out.append((board, (page, view.title if view is not None else f"{profile} profile"), view))
    return out


def _render_board(
    inputs: SiteInputs,
    folder: Path,
    links: list[BoardLink],
    shared: _Shared,
    prefix: str,
    *,
    progress: bool,
    menu: tuple[tuple[str, str], ...] = (),
    comparison: profiles_view.ComparisonView | None = None,
) -> list[str]:
    """Every page of one board into ``folder``; returns their paths relative to it.

    The board of another version with no results yet gets no item pages: its prompts are in its downloads,
    and a hundred prompt-only pages per version would outweigh the rest of the site.
    """
    board = inputs.board
    runs = read_runs(board, inputs.submissions_root)
    header = run_header(board, runs)
    facts = all_facts(board, inputs.submissions_root)
    cite = Citation(inputs.repo_url, header.benchmark_version)
    # the API page is linked from the menu of its board only; the comparison of the cap from the published
    # board (``menu``) and from the profile's own board
    api = (("api.html", "API models"),) if inputs.api_rows else ()
    own = ((profiles_view.COMPARISON_PAGE, comparison.title),) if comparison is not None else ()
    writer = _Writer(
        folder,
        {
            "board": board,
            "set": board.data.get("set", ""),
            "version": board.data.get("version", ""),
            "header": header,
            "cite": cite,
            "board_url": cite.site_url + prefix,
            "nav": (*NAV, *api, *menu, *own),
            "boards": links,
            "facts": facts,
            "file_facts": files_that_ran(runs, inputs.model_files),
            "degenerate_text": degenerate_text,
            "degenerate_rule": DEGENERATE_RULE,
            "snapshot": snapshot_name(str(board.data["set"]), board.version, header.run_dates),
        },
    )
    folder.mkdir(parents=True, exist_ok=True)
    set_dir = inputs.variants.path if inputs.variants else None
    snapshot = writer.common["snapshot"]
    downloads = copy_downloads(board, inputs.submissions_root, set_dir, folder, snapshot=snapshot)
    published = next(link for link in links if link.current).published
    items = _all_items(inputs, progress=progress) if published or board.complete else {}
    _summary_pages(writer, inputs, downloads, facts)
    if comparison is not None:
        writer.page(
            profiles_view.COMPARISON_PAGE,
            title=f"What the cap changes: {comparison.title}",
            description=(
                "The same models and items under two run profiles side by side: responses cut at the cap, "
                "SGS with intervals, rank ranges, reversals, and exact paired tests of the change."
            ),
            view=comparison,
        )
    if inputs.api_rows:
        writer.page(
            "api.html",
            title="API models",
            description="Models behind an OpenAI-compatible endpoint, in a table of their own.",
            rows=inputs.api_rows,
            about=API_ABOUT,
        )
    writer.page(
        "changelog.html",
        title="Changelog",
        description="What was added to the SAGO leaderboard and when, with each result's variant-set hash.",
        changes=shared.changes,
        run_board=lambda change: run_board(change, links, shared.profiles),
        committed=lambda version: committed(version, shared.changes),
    )
    writer.page(
        "submit.html",
        title="Submit a model",
        description=(
            "How to put a model on the SAGO leaderboard: install, write submission.yaml, validate it, open "
            "a pull request; what the maintainers run and where the result appears."
        ),
        plan=shared.plan,
        fields=describe_fields(),
        example_yaml=EXAMPLE_YAML,
        example_folder=EXAMPLE_FOLDER,
    )
    _model_and_dataset_pages(writer, inputs, items)
    _compare_pages(writer, inputs, items)
    _item_pages(writer, inputs, items)
    _copy_static(folder)
    return writer.pages


def _copy_static(site: Path) -> None:
    """The stylesheet, the sort script and the marker that lets the next build replace this folder."""
    (site / "static").mkdir()
    for name in STATIC:
        data = resources.files("benchmark.site").joinpath("static", name).read_bytes()
        (site / "static" / name).write_bytes(data)
    (site / MARKER).write_text("built by `sago leaderboard build`; safe to delete and rebuild\n")


def _summary_pages(
    writer: _Writer, inputs: SiteInputs, downloads: list[Download], facts: dict[str, ModelFacts]
) -> None:
    board = inputs.board
    table = overview.leaderboard_table(board, facts)
    sources = {d: (info.stands_in_for if (info := inputs.dataset_info(d)) else None) for d in board.datasets}
    writer.page(
        "index.html",
        "overview.html.j2",
        title="Overview",
        description=(
            f"{len(board.complete)} evaluated models on the variant set {board.data['set']}/"
            f"{board.data['version']}: how much each one's behaviour changes when a question is rewritten "
            "without changing its meaning, per axis and dataset, with 95 % intervals and no overall score."
        ),
        headline=findings.headline_claims(board),
        grid=findings.grid(board),
        table=table,
        trust=overview.trust(table, sources, overview.pair_verdicts(board.data.get("pairwise", [])))
        if table.tables
        else None,
    )
    writer.page(
        "reversals.html",
        title="Ranking reversals",
        heatmaps=views.tau_heatmaps(board),
        no_tau=views.measures_without_tau(board),
        reversals=findings.reversals(board),
    )
    writer.page(
        "axes.html",
        title="Axes",
        independence=views.independence_heatmap(board),
        pareto=views.pareto_plot(board),
        pareto_sentence=views.pareto_sentence(board),
    )
    writer.page("models.html", title="Models")
    writer.page("datasets.html", title="Datasets", infos={d: inputs.dataset_info(d) for d in board.datasets})
    writer.page(
        "methodology.html",
        title="Methodology",
        loop_tail=validity.LOOP_TAIL,
        loop_period=validity.LOOP_PERIOD,
    )
    writer.page("downloads.html", title="Downloads", downloads=downloads)


def _model_and_dataset_pages(writer: _Writer, inputs: SiteInputs, items: dict[str, list[ItemView]]) -> None:
    board = inputs.board
    for model in board.models:
        slug = model["slug"]
        writer.page(
            f"models/{slug}.html",
            "model.html.j2",
            title=model.get("name") or slug,
            description=(
                f"{board.name(slug)} on the SAGO leaderboard: its instability on every measure and dataset, "
                "what the model is, and its raw outputs."
            ),
            model=model,
            profile=views.profile_plot(board, slug) if model.get("status") == "complete" else None,
        )
    for dataset in board.datasets:
        tables = views.axis_tables(board, dataset)
        writer.page(
            f"datasets/{dataset}.html",
            "dataset.html.j2",
            title=dataset,
            description=(
                f"{dataset} on the SAGO leaderboard: every model's instability per axis and measure, the "
                "paired tests, accuracy at the baseline prompt, and where the dataset comes from."
            ),
            dataset=dataset,
            tables=tables,
            by_rank=views.cells_by_rank,
            info=inputs.dataset_info(dataset),
            example=next(iter(items.get(dataset, [])), None),
            grid_row=[findings.grid_cell(board, dataset, t.axis) for t in tables],
        )


def _compare_pages(writer: _Writer, inputs: SiteInputs, items: dict[str, list[ItemView]]) -> None:
    board = inputs.board
    ranks = {(d, item.item_id): item.rank for d, found in items.items() for item in found}
    per_item = {m["slug"]: _per_item(inputs, m["slug"]) for m in board.complete}
    comparisons = [
        views.comparison(board, a, b, per_item[a], per_item[b], ranks)
        for a, b in views.model_pairs(board, both_orders=True)
    ]
    writer.page(
        "compare/index.html",
        "compare_index.html.j2",
        title="Compare two models",
        comparisons=comparisons,
        pairs=views.model_pairs(board),
    )
    for pair in comparisons:
        writer.page(
            f"compare/{pair.page}",
            "compare.html.j2",
            title=f"{board.name(pair.slug_a)} vs {board.name(pair.slug_b)}",
            description=(
                f"{board.name(pair.slug_a)} and {board.name(pair.slug_b)} side by side on every dataset and "
                "measure of the SAGO leaderboard, with paired tests and the items where they differ most."
            ),
            pair=pair,
        )


def _per_item(inputs: SiteInputs, slug: str) -> list[PerItemRow]:
    """``per_item`` rows of a model's summary.json (s_X(i) per item), or none when unreadable."""
    board = inputs.board
    path = board.results(slug, inputs.submissions_root).summary
    try:
        return list(SummaryDocument.read(path).per_item)
    except (SagoError, OSError):
        return []  # the validator reports a broken summary; the compare page then lists no items


def _all_items(inputs: SiteInputs, *, progress: bool) -> dict[str, list[ItemView]]:
    """Item views per dataset of the leaderboard, or of the variant set when nothing is evaluated yet."""
    if inputs.variants is None:
        return {}
    board = inputs.board
    # Board datasets were checked by read_board; the set's names become file names too, so check them.
    datasets = board.datasets or [check_name(d, "dataset") for d in inputs.variants.datasets]
    items: dict[str, list[ItemView]] = {}
    for dataset in tqdm(datasets, desc="item pages", unit="dataset", disable=not progress or not datasets):
        try:
            frame = inputs.variants.frame(dataset)
        except SagoError:
            items[dataset] = []  # a dataset the set does not hold: the index page says there are no items
            continue
        results = {
            m["slug"]: read_model_results(board.results(m["slug"], inputs.submissions_root).path, dataset)
            for m in board.complete
        }
        items[dataset] = item_views(
            dataset, frame, {s: found for s, found in results.items() if len(found.records)}
        )
    return items


def _item_pages(writer: _Writer, inputs: SiteInputs, items: dict[str, list[ItemView]]) -> None:
    for dataset, found in items.items():
        writer.page(
            f"items/{dataset}/index.html",
            "items_dataset.html.j2",
            title=f"Items: {dataset}",
            dataset=dataset,
            items=found,
        )
        for index, item in enumerate(found):
            writer.page(
                f"items/{dataset}/{item.rank}.html",
                "item.html.j2",
                title=f"{dataset} item {item.rank}",
                item=item,
                previous=found[index - 1] if index else None,
                next=found[index + 1] if index + 1 < len(found) else None,
            )
    writer.page(
        "items/index.html",
        "items_index.html.j2",
        title="Item browser",
        counts={d: len(found) for d, found in items.items()},
        has_variants=inputs.variants is not None,
    )


def _prepare(out: Path) -> Path:
    """A fresh staging folder beside ``out``; refuse to replace a folder this code did not build."""
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise SagoError(f"{out} exists and was not built by sago; choose another --out or empty it")
    staging = out.with_name(out.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging
