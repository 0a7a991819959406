"""The built site in a real browser (Debian's headless Chromium driven by Playwright), from file://.

Every page opens without console errors, failed requests or network access; every relative link
resolves; a sort header reorders its table; an item opens in the item browser; hostile model names
and responses show as text and never run. Without /usr/bin/chromium these tests skip locally but
fail under CI (the environment variable CI set), so CI cannot pass them by accident.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from test_site_fixture import HOSTILE_IMG, HOSTILE_NAME, HOSTILE_SCRIPT, SET, VERSION, make_site_tree

from benchmark.site.board import read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.variants.freeze import load_variant_set

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@dataclass
class Watch:
    """Everything a page did that a test may object to."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = make_site_tree(tmp_path_factory.mktemp("browser"))
    inputs = SiteInputs(read_board(tree.leaderboard), tree.submissions, load_variant_set(SET, VERSION, tree.variants))
    build_site(inputs, tree.root / "site", progress=False)
    return tree.root / "site"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing in CI: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[tuple[object, Watch]]:
    context = browser.new_context(color_scheme="dark")  # type: ignore[attr-defined]
    opened = context.new_page()
    watch = Watch()
    opened.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: watch.errors.append(str(e)))
    opened.on("requestfailed", lambda r: watch.errors.append(f"failed: {r.url}"))
    opened.on("request", lambda r: watch.requests.append(r.url))

    def on_dialog(dialog: object) -> None:
        watch.dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    opened.on("dialog", on_dialog)
    yield opened, watch
    context.close()


def local_file(url: str) -> Path:
    return Path(unquote(urlparse(url).path))


def test_every_page_loads_cleanly_and_links_resolve(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    html_pages = sorted(site.rglob("*.html"))
    assert len(html_pages) > 20
    for path in html_pages:
        browser_page.goto(path.as_uri())  # type: ignore[attr-defined]
        links = browser_page.eval_on_selector_all(  # type: ignore[attr-defined]
            "a[href], link[href], script[src], img[src]", "els => els.map(e => e.href || e.src)")
        for link in links:
            scheme = urlparse(link).scheme
            if scheme == "https":  # a submission's own web page: shown, never fetched
                continue
            assert scheme == "file", (path, link)
            assert local_file(link).is_file(), f"{path.relative_to(site)} links to missing {link}"
    assert watch.errors == []
    assert watch.dialogs == []
    assert {urlparse(u).scheme for u in watch.requests} <= {"file", "data"}


def test_sort_header_reorders_the_table(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "index.html").as_uri())  # type: ignore[attr-defined]
    table = browser_page.locator("table.ranking").nth(1)  # type: ignore[attr-defined]
    column = "td:nth-child(5)"  # SGS of the activations table's second measure

    def values() -> list[float]:
        return [float(v) for v in table.locator(f"tbody {column}").evaluate_all(
            "cells => cells.map(c => c.dataset.sort)")]

    before = values()
    header = table.locator("th").nth(4)
    header.click()
    ascending = values()
    assert header.get_attribute("aria-sort") == "ascending"
    assert ascending == sorted(before)
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert values() == sorted(before, reverse=True) != before
    assert watch.errors == []


def test_open_an_item_and_read_hostile_strings_as_text(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "items" / "trivia_qa" / "index.html").as_uri())  # type: ignore[attr-defined]
    browser_page.get_by_role("link", name="Question 1 of trivia_qa?").click()  # type: ignore[attr-defined]
    assert browser_page.url.endswith("items/trivia_qa/1.html")  # type: ignore[attr-defined]
    response = browser_page.get_by_text(f"Sure! {HOSTILE_SCRIPT} {HOSTILE_IMG}")  # type: ignore[attr-defined]
    assert not response.is_visible()  # inside a closed family
    browser_page.locator("summary", has_text="politeness").click()  # type: ignore[attr-defined]
    assert response.is_visible()
    assert browser_page.get_by_text(f"{HOSTILE_IMG} Question 1 of trivia_qa?").is_visible()  # type: ignore[attr-defined]
    header = browser_page.locator("th", has_text="Tiny A").first  # type: ignore[attr-defined]
    assert header.inner_text().split() == HOSTILE_NAME.split()
    assert browser_page.locator("main img, main script").count() == 0  # type: ignore[attr-defined]
    assert watch.dialogs == [] and watch.errors == []


def test_hostile_model_name_is_text_on_its_page(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "models" / "acme__tiny-a.html").as_uri())  # type: ignore[attr-defined]
    heading = browser_page.locator("h1")  # type: ignore[attr-defined]
    assert heading.is_visible()
    assert heading.inner_text() == HOSTILE_NAME
    assert browser_page.locator("script:not([src])").count() == 0  # type: ignore[attr-defined]
    assert watch.dialogs == [] and watch.errors == []
