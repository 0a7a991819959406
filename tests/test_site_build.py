"""The static site: every page is written, hostile strings stay text, builds are byte-identical,
links are relative and resolve, and an all-pending (or empty) repository still builds."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from helpers.site_tree import (
    HOSTILE_IMG,
    HOSTILE_NAME,
    HOSTILE_SCRIPT,
    SET,
    VERSION,
    SiteTree,
    make_site_tree,
)

from benchmark.cli import main
from benchmark.errors import SagoError
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION
from benchmark.site import views
from benchmark.site.board import pending_board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.variants.frozen import load_variant_set

LINK_RE = re.compile(r'(?:href|src)="([^"]*)"')


def build(tree: SiteTree, out: Path) -> Path:
    inputs = SiteInputs(
        read_board(tree.leaderboard), tree.submissions, load_variant_set(SET, VERSION, tree.variants)
    )
    build_site(inputs, out, progress=False)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[SiteTree, Path]:
    tree = make_site_tree(tmp_path_factory.mktemp("tree"))
    return tree, build(tree, tree.root / "site")


def pages(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))
    }


def test_every_page_is_written(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    names = set(pages(site))
    assert {
        "index.html",
        "reversals.html",
        "axes.html",
        "models.html",
        "datasets.html",
        "methodology.html",
        "downloads.html",
        "items/index.html",
    } <= names
    assert {f"models/acme__tiny-{x}.html" for x in ("a", "b", "c", "pending")} <= names
    assert {f"datasets/{d}.html" for d in ("alpaca", "trivia_qa", "truthful_qa")} <= names
    # two items per dataset of the fixture set; datasets the set lacks get an empty index
    assert {"items/alpaca/0.html", "items/alpaca/1.html", "items/trivia_qa/1.html"} <= names
    assert "no items of this dataset" in pages(site)["items/hotpot_qa/index.html"].lower()
    assert (site / "static" / "site.css").is_file() and (site / "static" / "sort.js").is_file()


def test_hostile_strings_are_escaped_everywhere(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    for name, html in pages(site).items():
        assert "Content-Security-Policy\" content=\"default-src 'none'; script-src 'self'" in html, name
        assert HOSTILE_SCRIPT not in html, name
        assert "<img src=x" not in html, name
        assert "<script>" not in html.replace('<script src="', ""), name
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    model_page = pages(site)["models/acme__tiny-a.html"]
    assert escaped in model_page and "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in model_page
    item = pages(site)["items/trivia_qa/1.html"]
    assert f"Sure! {escaped}" in item  # the response
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt; Question 1 of trivia_qa?" in item  # the prompt
    assert HOSTILE_NAME and HOSTILE_IMG  # planted by the fixture


CONTROLS = "\u200f\u061c\u200b\u202e\x1b[2K\r\u2066"
"""format and control characters a name or a response may carry: bidi marks, an invisible space, an
override, a terminal escape, a carriage return, an isolate."""


def test_control_and_format_characters_are_shown_as_escapes(tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path)
    board = json.loads(tree.leaderboard.read_text(encoding="utf-8"))
    next(m for m in board["models"] if m["slug"] == "acme__tiny-b")["name"] = f"Tiny{CONTROLS}B"
    tree.leaderboard.write_text(json.dumps(board, ensure_ascii=False), encoding="utf-8")
    records = tree.submissions / "acme__tiny-a" / "results" / SET / VERSION / "records" / "trivia_qa.parquet"
    frame = pd.read_parquet(records)
    frame.loc[frame["item_id"] == "trivia_qa-1", "response"] = f"line one\nline{CONTROLS}two"
    frame.to_parquet(records, index=False)
    site = build(tree, tmp_path / "site")
    for name, html in pages(site).items():
        raw = {c for c in html if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"}
        assert not raw, (name, raw)
    shown = "\\u200f\\u061c\\u200b\\u202e\\x1b[2K\\r\\u2066"
    assert f"Tiny{shown}B" in pages(site)["models/acme__tiny-b.html"]
    assert f"line one\nline{shown}two" in pages(site)["items/trivia_qa/1.html"]  # the newline stays


def test_links_are_relative_and_resolve(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    for name, html in pages(site).items():
        for target in LINK_RE.findall(html):
            assert not target.startswith(("/", "http:", "//")), (name, target)
            if target.startswith(("https:", "#")):
                continue
            path = (site / name).parent / target.split("#")[0]
            assert path.resolve().is_file(), (name, target)


def test_pending_and_missing_results_are_labelled(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    all_pages = pages(site)
    assert "This model is submitted but has no results yet" in all_pages["models/acme__tiny-pending.html"]
    downloads = all_pages["downloads.html"]
    assert "downloads/acme__tiny-a/records/alpaca.parquet" in downloads
    assert "No result files for this model" in downloads  # tiny-c: complete in the board, no files here


def test_item_page_shows_prompts_responses_and_deltas(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    trivia = pages(site)["items/trivia_qa/0.html"]
    assert (
        "acme__tiny-a answers spacing/suffix/5" in trivia
        and "acme__tiny-b answers spacing/suffix/5" in trivia
    )
    assert (
        '<span title="bleu">Wording (BLEU)</span> −7.50' in trivia
    )  # fixture delta: -0.25 * index 3 * R 100 / 10
    alpaca = pages(site)["items/alpaca/0.html"]
    assert "acme__tiny-a answers" in alpaca and "acme__tiny-b answers" not in alpaca  # b did not run alpaca


def test_overview_has_no_overall_winner_and_dataset_tables_follow_ranks(built: tuple[SiteTree, Path]) -> None:
    tree, site = built
    html = pages(site)["index.html"]
    denials = ("no overall winner", "no overall score and no overall rank", "and no overall score")
    text = html.lower()
    for denial in denials:
        text = text.replace(denial, "")
    assert "overall" not in text  # the page says there is none, and never names one
    assert "there is no overall score" in html.lower()
    assert 'id="headline"' in html and 'id="grid-table"' in html
    assert 'data-axis="activations"' not in html  # the full tables live on the dataset pages
    board = json.loads(tree.leaderboard.read_text())
    first = {
        c["model"]
        for c in board["cells"]
        if (c["dataset"], c["measure"], c["rank"]) == ("trivia_qa", "act_cos_last", 1)
    }
    section = pages(site)["datasets/trivia_qa.html"]
    table = section[section.index('data-axis="activations"') :]
    body = table.index("<tbody>")
    first_row = table[body : table.index("</tr>", body)]
    assert f"models/{first.pop()}.html" in first_row


def test_plots_are_inline_accessible_and_theme_aware(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    html = pages(site)["reversals.html"]
    # one τ heatmap per measure, drawn twice: at its own size and narrow enough for a phone
    assert html.count('<div class="plot-wide"><svg role="img"') == 9
    assert html.count('<div class="plot-narrow"><svg role="img"') == 9
    ids = re.findall(r'<svg role="img" aria-labelledby="([^"]+)"', html)
    assert len(ids) == 18 == len(set(ids))  # the two drawings never share an id
    assert "<title id=" in html and "<desc>" in html and "currentColor" in html
    assert "<dc:date>" not in html and "#0a0b0c" not in html


def test_rebuild_is_byte_identical(built: tuple[SiteTree, Path], tmp_path: Path) -> None:
    tree, site = built
    again = build(tree, tmp_path / "again")
    first = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_all_pending_repository_builds(tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path)
    board = pending_board(SET, VERSION, tree.submissions)
    assert {m["status"] for m in board.models} == {"pending"} and len(board.models) == 4
    report = build_site(
        SiteInputs(board, tree.submissions, load_variant_set(SET, VERSION, tree.variants)),
        tmp_path / "site",
        progress=False,
    )
    site = pages(tmp_path / "site")
    assert "No model has been evaluated yet" in site["index.html"]
    assert "has no results yet" in site["models/acme__tiny-a.html"]
    assert "items/alpaca/1.html" in site  # prompts are browsable before any model ran
    assert report.pages == len(site)


def test_cli_refuses_to_build_from_nothing(tmp_path: Path) -> None:
    # No submissions and no variant set is a typo in a path, not an empty site (see test_cli_errors).
    (tmp_path / "submissions").mkdir()
    status = main(
        [
            "leaderboard",
            "build",
            "--out",
            str(tmp_path / "site"),
            "--submissions",
            str(tmp_path / "submissions"),
            "--variants",
            str(tmp_path / "variants"),
        ]
    )
    assert status == 2
    assert not (tmp_path / "site").exists()


def test_cli_build_from_leaderboard(built: tuple[SiteTree, Path], tmp_path: Path) -> None:
    """The CLI builds what the function builds, replaces its own earlier build and links the fork it names."""
    tree, _ = built
    args = [
        "leaderboard",
        "build",
        *("--set", SET, "--version", VERSION),  # the fixture's version (the default is the board's)
        "--input",
        str(tree.leaderboard),
        "--out",
        str(tmp_path / "out"),
        "--submissions",
        str(tree.submissions),
        "--variants",
        str(tree.variants),
    ]
    assert main(args) == 0
    assert (
        main([*args, "--repo-url", "https://example.org/fork/sago"]) == 0
    )  # a second build replaces the first
    item = (tmp_path / "out" / "items" / "trivia_qa" / "1.html").read_text(encoding="utf-8")
    assert 'href="https://example.org/fork/sago"' in item


def test_cli_defaults_follow_the_paths_module_when_the_command_runs(
    built: tuple[SiteTree, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defaults are resolved at call time: with benchmark.paths pointed at a toy tree, a build without
    --input/--out/--submissions/--variants reads and writes there, never this checkout's committed site."""
    from benchmark import paths

    tree, _ = built
    leaderboard = tmp_path / "leaderboard"
    leaderboard.mkdir()
    (leaderboard / "leaderboard.json").write_bytes(tree.leaderboard.read_bytes())
    monkeypatch.setattr(paths, "LEADERBOARD_DIR", leaderboard)
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", tree.submissions)
    monkeypatch.setattr(paths, "VARIANTS_DIR", tree.variants)
    board = json.loads(tree.leaderboard.read_text(encoding="utf-8"))
    assert main(["leaderboard", "build", "--set", board["set"], "--version", board["version"]]) == 0
    assert (leaderboard / "site" / "index.html").is_file()


def test_refuses_to_replace_a_folder_it_did_not_build(built: tuple[SiteTree, Path], tmp_path: Path) -> None:
    tree, _ = built
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("x")
    with pytest.raises(SagoError, match="was not built by sago"):
        build(tree, tmp_path / "precious")
    assert (tmp_path / "precious" / "thesis.tex").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": 99}, "schema_version 99"),
        ({"schema_version": 1}, "schema_version 1 is older than this sago-bench reads"),
        ({"models": [{"slug": "../../etc__passwd"}]}, "invalid submission name"),
        ({"datasets": ["../x"]}, "invalid dataset"),
        ({"set": "../../etc"}, "invalid variant set"),
    ],
)
def test_read_board_refuses_bad_files(tmp_path: Path, change: dict[str, object], message: str) -> None:
    path = tmp_path / "leaderboard.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": LEADERBOARD_SCHEMA_VERSION,
                "set": SET,
                "version": VERSION,
                "models": [],
                "datasets": [],
                "measures": [],
                "epsilons": [],
                "primary_epsilon": 0.05,
                "markers": [],
                **change,
            }
        )
    )
    with pytest.raises(SagoError, match=re.escape(message)):
        read_board(path)


def test_a_failed_build_keeps_the_previous_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make_site_tree(tmp_path)
    inputs = SiteInputs(pending_board(SET, VERSION, tree.submissions), tree.submissions, None)
    out = tmp_path / "site"
    build_site(inputs, out, progress=False)  # pending only: the cheapest complete site
    before = (out / "index.html").read_bytes()

    def broken(board: object) -> None:
        raise SagoError("boom")

    monkeypatch.setattr(views, "tau_heatmaps", broken)
    with pytest.raises(SagoError, match="boom"):
        build_site(inputs, out, progress=False)
    assert (out / "index.html").read_bytes() == before
    assert not (tmp_path / "site.building").exists()


def test_repository_url_is_configurable_and_checked(tmp_path: Path) -> None:
    """Every page's footer and the Submit page link the repository given; a URL that is not https is
    refused before anything is built (the CLI wiring of --repo-url: test_cli_build_from_leaderboard)."""
    tree = make_site_tree(tmp_path)
    fork = "https://example.org/fork/sago"
    inputs = SiteInputs(
        pending_board(SET, VERSION, tree.submissions),
        tree.submissions,
        load_variant_set(SET, VERSION, tree.variants),
        repo_url=fork,
    )
    build_site(inputs, tmp_path / "site", progress=False)  # pending only: every template, few pages
    site = pages(tmp_path / "site")
    for name in ("index.html", "submit.html", "items/trivia_qa/1.html"):
        assert f'href="{fork}"' in site[name], name
        assert "arxiv.org/abs/2610.01428" in site[name] and "@misc{omar2026sago" in site[name]
    assert "Submit a model" in site["index.html"]  # in the navigation of every page
    args = ["leaderboard", "build", "--input", str(tree.leaderboard), "--out", str(tmp_path / "out")]
    assert main([*args, "--repo-url", 'javascript:alert(1)"']) == 2
    assert not (tmp_path / "out").exists()


def test_downloads_offer_the_leaderboard_and_a_flat_csv(built: tuple[SiteTree, Path]) -> None:
    tree, site = built
    assert json.loads((site / "downloads" / "leaderboard.json").read_text()) == json.loads(
        tree.leaderboard.read_text()
    )
    header, *rows = (site / "downloads" / "cells.csv").read_text().splitlines()
    assert header.startswith("model,model_name,dataset,axis,measure") and len(rows) == len(
        json.loads(tree.leaderboard.read_text())["cells"]
    )
    html = pages(site)["downloads.html"]
    assert 'href="downloads/leaderboard.json"' in html and 'href="downloads/cells.csv"' in html


def test_every_page_states_what_was_run_and_never_calls_a_partial_run_complete(
    built: tuple[SiteTree, Path],
) -> None:
    _, site = built
    for name, html in pages(site).items():
        header = html[html.index('id="run-header"') : html.index("</div>", html.index('id="run-header"'))]
        assert "profile <strong>smoke</strong>" in header and "partial run" in header, name
        assert "2 items per dataset" in header and "up to 32 new tokens" in header, name
    models = pages(site)["models.html"]
    assert ">complete<" not in models and "smoke profile, partial" in models


def test_dataset_page_says_where_the_data_comes_from(built: tuple[SiteTree, Path]) -> None:
    _, site = built
    html = pages(site)["datasets/trivia_qa.html"]
    assert 'id="dataset-info"' in html and "stands in for" in html and "licence" in html
    assert "Example item" in html and 'href="../items/trivia_qa/0.html"' in html


def test_api_models_get_their_own_escaped_page_and_menu_entry(tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path / "tree")
    row = {
        "model": "acme__served",
        "name": HOSTILE_NAME,
        "profile": "smoke",
        "dataset": "all",
        "generation": {"sgs": 0.0123, "ci": [0.01, 0.015], "verdict": "significant", "n_items": 24},
        "mirroring": {"sgs": 0.002, "ci": [0.001, 0.003], "verdict": "not significant", "n_items": 24},
        "own_confidence": {"n_items": 24, "delta_prob": -0.0421, "delta_entropy": 0.31},
    }
    board = read_board(tree.leaderboard)
    inputs = SiteInputs(
        board, tree.submissions, load_variant_set(SET, VERSION, tree.variants), api_rows=(row,)
    )
    site = build_site(inputs, tmp_path / "site", progress=False) and tmp_path / "site"
    page = (site / "api.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert (
        "0.0123 [0.0100, 0.0150]" in page
        and "-0.0421" in page
        and "never ranked with the open models" in page.lower()
    )
    assert 'href="api.html"' in (site / "index.html").read_text(encoding="utf-8")
    # without API rows there is no such page and no menu entry
    plain = build(tree, tmp_path / "plain")
    assert not (plain / "api.html").exists() and 'href="api.html"' not in (plain / "index.html").read_text()
