"""The overview's leaderboard table, the models' facts, one board per variant-set version, the changelog,
the dated snapshot, compare pages in the reader's order, and the tags every page carries (no browser)."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from helpers.site_tree import SET, VERSION, SiteTree, make_site_tree, write_variant_set

import benchmark
from benchmark.cli import main
from benchmark.paths import LEADERBOARD_DIR, VARIANTS_DIR
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.site import overview
from benchmark.site.board import ALL, CellKey, pending_board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.facts import all_facts, readable_count
from benchmark.site.render import num
from benchmark.site.stack import label_cells
from benchmark.site.versions import frozen_versions
from benchmark.site.views import comparison
from benchmark.variants.frozen import load_variant_set


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[SiteTree, Path]:
    """The fixture board (v1) published, and a v2 set with no results yet beside it."""
    tree = make_site_tree(tmp_path_factory.mktemp("boards"))
    write_variant_set(tree.variants, "v2")
    published = SiteInputs(
        read_board(tree.leaderboard), tree.submissions, load_variant_set(SET, VERSION, tree.variants)
    )
    pending = SiteInputs(
        pending_board(SET, "v2", tree.submissions),
        tree.submissions,
        load_variant_set(SET, "v2", tree.variants),
    )
    build_site(published, tree.root / "site", progress=False, others=[pending])
    return tree, tree.root / "site"


def page(site: Path, name: str) -> str:
    return (site / name).read_text(encoding="utf-8")


def test_table_rows_hold_the_leaderboards_numbers_for_every_dataset(
    two_versions: tuple[SiteTree, Path],
) -> None:
    tree, _ = two_versions
    board = read_board(tree.leaderboard)
    table = overview.leaderboard_table(board, all_facts(board, tree.submissions))
    assert [m["name"] for m in table.measures] == board.data["headline_measures"]
    assert [t.dataset for t in table.tables] == [ALL, *board.data["datasets"]]
    for t in table.tables:
        assert [r.slug for r in t.rows] == sorted(
            (m["slug"] for m in board.data["models"]), key=lambda s: board.name(s).lower()
        )
        for row in t.rows:
            for m in table.measures:
                assert row.cells[m["name"]] == board.cell(CellKey(row.slug, t.dataset, m["name"]))
            accuracy = board.one("accuracy", model=row.slug, dataset=t.dataset)
            assert row.accuracy == (accuracy["accuracy"] if accuracy else None)
    assert table.pending == 1 and "no overall score" in overview.NO_COMPOSITE


def test_facts_come_from_submission_run_and_records(two_versions: tuple[SiteTree, Path]) -> None:
    tree, _ = two_versions
    board = read_board(tree.leaderboard)
    facts = all_facts(board, tree.submissions)
    a = facts["acme__tiny-a"]
    parameters = board.models.first(slug="acme__tiny-a")["parameters"]  # type: ignore[index]
    assert (a.parameters, a.size, a.token_cap, a.quantisation) == (
        parameters,
        readable_count(parameters),
        32,
        "none",
    )
    assert a.tuning is None and not a.tuning_declared  # the fixture's names say neither
    # the fixture's records all stopped on end-of-sequence: 0 of 8 per dataset
    assert {d: (t.cut, t.total) for d, t in a.truncation.items()} == {
        "alpaca": (0, 8),
        "trivia_qa": (0, 8),
        ALL: (0, 16),
    }
    assert facts["acme__tiny-c"].token_cap is None and facts["acme__tiny-c"].truncation == {}  # no results
    assert facts["acme__tiny-pending"].truncation == {}


def test_overview_table_is_on_the_page_with_its_basis(two_versions: tuple[SiteTree, Path]) -> None:
    tree, site = two_versions
    html = page(site, "index.html")
    board = json.loads(tree.leaderboard.read_text())
    for dataset in [ALL, *board["datasets"]]:
        assert f'<table class="sortable leaderboard stack-mobile" id="board-{dataset}">' in html
    basis = re.search(r'<caption class="note">(.*?)</caption>', html, re.DOTALL)
    assert basis is not None
    words = " ".join(basis.group(1).split())
    assert (
        words == "Rests on 3 evaluated models (1 more pending) and 96 items per model, every dataset pooled."
    )
    assert "There is no overall score" in html


def test_every_page_has_a_description_open_graph_one_main_and_a_skip_link(
    two_versions: tuple[SiteTree, Path],
) -> None:
    _, site = two_versions
    pages = sorted(site.rglob("*.html"))
    assert any("versions/v2/" in p.as_posix() for p in pages)
    for path in pages:
        html = path.read_text(encoding="utf-8")
        name = path.relative_to(site).as_posix()
        description = re.search(r'<meta name="description" content="([^"]{40,})">', html)
        assert description, name
        for prop in ("og:title", "og:description", "og:type", "og:site_name"):
            assert f'<meta property="{prop}" content="' in html, (name, prop)
        assert html.count("<main") == 1 and '<main id="main"' in html, name
        assert '<a class="skip" href="#main">' in html, name


def test_each_version_has_a_board_and_they_link_to_each_other(two_versions: tuple[SiteTree, Path]) -> None:
    _, site = two_versions
    root, other = page(site, "index.html"), page(site, "versions/v2/index.html")
    assert '<nav class="boards" aria-label="Board versions">' in root
    assert 'href="versions/v2/index.html"' in root and 'href="../../index.html"' in other
    assert "No model has been evaluated yet" in other
    assert (site / "versions/v2/static/site.css").is_file()
    # a board without results has no item pages; its prompts are in its downloads
    assert not (site / "versions/v2/items/trivia_qa").exists()
    assert "every prompt of the variant set" in page(site, "versions/v2/items/index.html").lower()
    assert (site / "versions/v2/downloads/variants/manifest.json").is_file()


def test_changelog_lists_each_run_with_its_date_and_set_hash(two_versions: tuple[SiteTree, Path]) -> None:
    tree, site = two_versions
    html = page(site, "changelog.html")
    v1 = load_variant_set(SET, VERSION, tree.variants).sha256
    v2 = load_variant_set(SET, "v2", tree.variants).sha256
    runs = html[html.index('id="changelog-runs"') : html.index("</table>", html.index('id="changelog-runs"'))]
    assert runs.count("<tr><td") == 2  # tiny-a and tiny-b have run.json; tiny-c has no results
    assert runs.count(">2026-11-30<") == 2 and runs.count(f'data-copy="{v1}"') == 2
    sets = html[html.index('id="changelog-sets"') :]
    assert f'data-copy="{v2}"' in sets and "no results committed yet" in sets
    assert html.index(f"{SET}/v2") < html.index(f"{SET}/{VERSION}</a>: frozen")  # newest version first
    assert "acme__tiny-pending" in html[html.index('id="pending"') :]


def test_downloads_hold_a_dated_snapshot_of_the_leaderboard(two_versions: tuple[SiteTree, Path]) -> None:
    _, site = two_versions
    dated = site / "downloads" / f"leaderboard-{SET}-{VERSION}-2026-11-30.json"
    assert dated.read_bytes() == (site / "downloads" / "leaderboard.json").read_bytes()
    assert dated.name in page(site, "downloads.html")
    assert not list((site / "versions/v2/downloads").glob("leaderboard-*.json"))  # nothing to date yet


def test_hashes_are_shortened_with_a_copy_button(two_versions: tuple[SiteTree, Path]) -> None:
    _, site = two_versions
    html = page(site, "downloads.html")
    hashes = re.findall(
        r'<code class="hash" title="[^"]*">([0-9a-f]{64})</code><button type="button" class="copy"', html
    )
    assert len(hashes) >= 5
    assert '<code class="hash">' not in html  # no hash without its button


def test_compare_pages_keep_the_order_the_reader_picked(two_versions: tuple[SiteTree, Path]) -> None:
    tree, site = two_versions
    board = read_board(tree.leaderboard)
    first = page(site, "compare/acme__tiny-b--acme__tiny-a.html")
    names = [html_lib.unescape(n) for n in re.findall(r'<span class="tag m0">(.*?)</span>', first)]
    assert names and set(names) == {board.name("acme__tiny-b")}
    assert ">A<" not in first and ">B<" not in first
    ab = comparison(board, "acme__tiny-a", "acme__tiny-b", [], [], {})
    ba = comparison(board, "acme__tiny-b", "acme__tiny-a", [], [], {})
    for row_ab, row_ba in zip(ab.rows, ba.rows, strict=True):
        assert row_ab.cell_a == row_ba.cell_b and row_ab.verdict == row_ba.verdict
        if row_ab.diff.value is not None:
            assert row_ba.diff == (-row_ab.diff.value, -row_ab.diff.high, -row_ab.diff.low)  # type: ignore[operator]
    shown = num(ba.rows[0].diff.value)
    assert shown in first


def test_table_cells_get_their_columns_name() -> None:
    html = label_cells(
        '<table><thead><tr><th>model</th><th class="n">SGS<span class="unit">lower</span></th>'
        '<th>x</th></tr></thead><tbody><tr><td>A</td><td class="n">1</td><td data-label="own">2</td></tr>'
        "</tbody></table><table><tbody><tr><td>no header</td></tr></tbody></table>"
    )
    assert '<td data-label="SGS" class="n">1</td>' in html and '<td data-label="own">2</td>' in html
    assert "<td>A</td>" in html and "<td>no header</td>" in html


def test_the_committed_site_explains_its_stand_in_datasets() -> None:
    site = LEADERBOARD_DIR / "site"
    gsm8k = page(site, "datasets/gsm8k.html")
    assert "gsm8k stands in for Alpaca (long-form answers)." in gsm8k
    assert "Alpaca&#39;s open instructions are not available from PyPI" in gsm8k
    assert "is one of the datasets of the paper" in page(site, "datasets/trivia_qa.html")
    others = [v for v in frozen_versions(DEFAULT_SET, VARIANTS_DIR) if v != BOARD_SET_VERSION]
    assert others  # v1's smoke board is kept beside the published one
    for version in others:  # every other frozen version of the set has its own board
        assert (site / "versions" / version / "index.html").is_file()
    assert not (site / "versions" / BOARD_SET_VERSION).exists()  # the published version is the root


def test_cli_and_api_build_every_version_alike(
    two_versions: tuple[SiteTree, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree, site = two_versions
    folders = [
        *("--set", SET, "--version", VERSION),  # the fixture's published version, not the default board's
        *("--submissions", str(tree.submissions), "--variants", str(tree.variants)),
    ]
    assert (
        main(
            [
                "leaderboard",
                "build",
                "--input",
                str(tree.leaderboard),
                "--out",
                str(tmp_path / "cli"),
                *folders,
            ]
        )
        == 0
    )
    benchmark.build_site(
        tree.leaderboard,
        tmp_path / "api",
        submissions=tree.submissions,
        variants=tree.variants,
        progress=False,
    )
    files = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    for built in (tmp_path / "cli", tmp_path / "api"):
        again = {p.relative_to(built): p.read_bytes() for p in built.rglob("*") if p.is_file()}
        assert again.keys() == files.keys() and [k for k in files if files[k] != again[k]] == []
    # a version with results but no kept leaderboard is said out loud, never silently shown as pending
    kept = tree.leaderboard.parent / "versions" / SET / "v2" / "leaderboard.json"
    assert not kept.exists()
    (tree.submissions / "acme__tiny-a" / "results" / SET / "v2").mkdir(parents=True)
    try:
        capsys.readouterr()
        assert (
            main(
                [
                    "leaderboard",
                    "build",
                    "--input",
                    str(tree.leaderboard),
                    "--out",
                    str(tmp_path / "cli"),
                    *folders,
                ]
            )
            == 0
        )
        assert f"note: {SET}/v2 has results of 1 model(s) but no leaderboard" in capsys.readouterr().err
    finally:
        (tree.submissions / "acme__tiny-a" / "results" / SET / "v2").rmdir()


def test_a_board_without_results_still_lists_what_each_model_is(two_versions: tuple[SiteTree, Path]) -> None:
    _, site = two_versions
    html = page(site, "versions/v2/index.html")
    assert '<table class="sortable leaderboard stack-mobile" id="board-all">' in html
    assert html.count("<tr data-model=") == 4 and "No model has results yet." in html
    assert 'id="board-choice"' not in html  # one table: nothing to choose
