"""The built site in a real browser (Debian's headless Chromium driven by Playwright), from file://.

Every page opens without console errors, failed requests or network access; every relative link
resolves; a sort header reorders its table; an item opens in the item browser; hostile model names
and responses show as text and never run. A reader's view: no page scrolls sideways on a 390 px phone,
every page states what was run, the overview's sentences are the leaderboard's, filters and the
compare picker work, plot text is legible, and served over HTTP nothing 404s (the favicon included).
Without /usr/bin/chromium these tests skip locally but fail under CI (the environment variable CI set),
so CI cannot pass them by accident.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from helpers.site_tree import HOSTILE_IMG, HOSTILE_NAME, HOSTILE_SCRIPT, PROFILE, SET, VERSION, make_site_tree

from benchmark.axes.measures import measure_names
from benchmark.site import findings
from benchmark.site.board import read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.variants.frozen import load_variant_set

pytestmark = pytest.mark.browser
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Watch:
    """Everything a page did that a test may object to."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


PAIR = "acme__tiny-a--acme__tiny-b.html"
PAGE_TYPES = (
    "index.html",
    "reversals.html",
    "compare/index.html",
    f"compare/{PAIR}",
    "models.html",
    "models/acme__tiny-a.html",
    "models/acme__tiny-pending.html",
    "datasets.html",
    "datasets/trivia_qa.html",
    "items/index.html",
    "items/trivia_qa/index.html",
    "items/trivia_qa/1.html",
    "axes.html",
    "methodology.html",
    "downloads.html",
    "submit.html",
)
"""One page of every kind the site has."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = make_site_tree(tmp_path_factory.mktemp("browser"))
    inputs = SiteInputs(
        read_board(tree.leaderboard), tree.submissions, load_variant_set(SET, VERSION, tree.variants)
    )
    build_site(inputs, tree.root / "site", progress=False)
    (tree.root / "site" / "leaderboard.json.src").write_text(
        tree.leaderboard.read_text()
    )  # for the headline test
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


def watched(context: object) -> tuple[object, Watch]:
    opened = context.new_page()  # type: ignore[attr-defined]
    watch = Watch()
    opened.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: watch.errors.append(str(e)))
    opened.on("requestfailed", lambda r: watch.errors.append(f"failed: {r.url} {r.failure}"))
    opened.on("request", lambda r: watch.requests.append(r.url))

    def on_dialog(dialog: object) -> None:
        watch.dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    opened.on("dialog", on_dialog)
    return opened, watch


@pytest.fixture
def page(browser: object) -> Iterator[tuple[object, Watch]]:
    context = browser.new_context(color_scheme="dark")  # type: ignore[attr-defined]
    yield watched(context)
    context.close()


@pytest.fixture
def phone(browser: object) -> Iterator[tuple[object, Watch]]:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="light")  # type: ignore[attr-defined]
    yield watched(context)
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
            "a[href], link[href], script[src], img[src]", "els => els.map(e => e.href || e.src)"
        )
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
    browser_page.goto((site / "datasets" / "trivia_qa.html").as_uri())  # type: ignore[attr-defined]
    table = browser_page.locator("table.ranking").nth(1)  # type: ignore[attr-defined]
    column = "td:nth-child(3)"  # SGS of the generation table's second measure

    def values() -> list[float]:
        return [
            float(v)
            for v in table.locator(f"tbody {column}").evaluate_all("cells => cells.map(c => c.dataset.sort)")
        ]

    before = values()
    header = table.locator("th").nth(2)
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
    who = browser_page.locator("details[open] .answer .who", has_text="Tiny A").first  # type: ignore[attr-defined]
    assert who.inner_text().split()[: len(HOSTILE_NAME.split())] == HOSTILE_NAME.split()
    browser_page.get_by_role("link", name="← item 0").first.click()  # type: ignore[attr-defined]
    assert browser_page.url.endswith("items/trivia_qa/0.html")  # type: ignore[attr-defined]
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


def test_no_page_scrolls_sideways_on_a_phone_and_every_page_says_what_was_run(
    site: Path, phone: tuple[object, Watch]
) -> None:
    browser_page, watch = phone
    for name in PAGE_TYPES:
        browser_page.goto((site / name).as_uri())  # type: ignore[attr-defined]
        widths = browser_page.evaluate(  # type: ignore[attr-defined]
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], f"{name} scrolls sideways at 390 px: {widths}"
        header = browser_page.locator("#run-header")  # type: ignore[attr-defined]
        assert header.is_visible(), name
        text = " ".join(header.inner_text().split())
        assert (
            f"profile {PROFILE['name']}" in text
            and f"{PROFILE['items_per_dataset']} items per dataset" in text
        )
        assert f"up to {PROFILE['max_new_tokens']} new tokens" in text and "partial run" in text, name
        assert "complete" not in text.lower()
    assert watch.errors == []


def test_item_page_stacks_prompt_and_responses_on_a_phone(site: Path, phone: tuple[object, Watch]) -> None:
    browser_page, _ = phone
    browser_page.goto((site / "items" / "trivia_qa" / "0.html").as_uri())  # type: ignore[attr-defined]
    variant = browser_page.locator("details[open] article.variant").first  # type: ignore[attr-defined]
    prompt = variant.locator(".prompt").bounding_box()
    answers = variant.locator(".answer").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())"
    )
    assert (
        len(answers) == 2 and prompt["width"] > 300
    )  # the prompt uses the phone's width, not a 50 px column
    assert all(a["top"] >= prompt["y"] + prompt["height"] for a in answers)  # responses below the prompt
    assert answers[1]["top"] >= answers[0]["bottom"]  # and below each other


def test_overview_headline_is_the_leaderboards(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "index.html").as_uri())  # type: ignore[attr-defined]
    shown = browser_page.locator("#headline li").all_inner_texts()  # type: ignore[attr-defined]
    board = read_board(site / "leaderboard.json.src")
    assert shown == findings.headline(board) and len(shown) >= 3
    data = board.data
    paper = {m["name"] for m in data["measures"] if m["paper"]}
    tests = [
        t
        for c in data["cells"]
        if c["dataset"] != "all" and c["measure"] in paper
        for t in c["tests"]
        if t["epsilon"] == data["primary_epsilon"]
    ]
    assert f"{sum(t['significant'] for t in tests)} of {len(tests)} are significant" in shown[0]
    cells = browser_page.locator("#grid-table tbody td")  # type: ignore[attr-defined]
    assert cells.count() == (len(data["datasets"]) + 1) * 4
    leader = browser_page.locator("#grid-table .leader").first  # type: ignore[attr-defined]
    assert leader.inner_text() in {m["name"] for m in data["models"]}
    assert watch.errors == []


def test_filters_and_the_compare_picker_work(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "models.html").as_uri())  # type: ignore[attr-defined]
    rows = browser_page.locator("#models-table tbody tr")  # type: ignore[attr-defined]
    total = rows.count()
    browser_page.fill("input[data-filter='models-table']", "tiny b")  # type: ignore[attr-defined]
    assert [r.is_visible() for r in rows.all()].count(True) == 1
    assert browser_page.locator("[data-count-for='models-table']").inner_text() == f"1 of {total} shown"  # type: ignore[attr-defined]
    browser_page.goto((site / "reversals.html").as_uri())  # type: ignore[attr-defined]
    items = browser_page.locator("#reversal-list li")  # type: ignore[attr-defined]
    before = items.count()
    browser_page.fill("input[data-filter='reversal-list']", "truthful_qa")  # type: ignore[attr-defined]
    visible = [li.inner_text() for li in items.all() if li.is_visible()]
    assert 0 < len(visible) < before and all("truthful_qa" in text for text in visible)

    browser_page.goto((site / "compare" / "index.html").as_uri())  # type: ignore[attr-defined]
    browser_page.select_option("select[name=a]", "acme__tiny-b")  # type: ignore[attr-defined]
    browser_page.select_option("select[name=b]", "acme__tiny-b")  # type: ignore[attr-defined]
    assert browser_page.locator("#compare-go").get_attribute("aria-disabled") is not None  # type: ignore[attr-defined]
    browser_page.select_option("select[name=b]", "acme__tiny-a")  # type: ignore[attr-defined]
    browser_page.click("#compare-go")  # type: ignore[attr-defined]
    assert browser_page.url.endswith(f"compare/{PAIR}")  # type: ignore[attr-defined]
    rows = browser_page.locator("#compare-table tbody tr")  # type: ignore[attr-defined]
    board = json.loads((site / "leaderboard.json.src").read_text())
    assert rows.count() == (len(board["datasets"]) + 1) * len(board["measures"])
    first = rows.first.locator("td").all_inner_texts()
    cell_a = next(
        c
        for c in board["cells"]
        if (c["model"], c["dataset"], c["measure"]) == ("acme__tiny-a", "all", board["measures"][0]["name"])
    )
    assert float(first[2]) == pytest.approx(cell_a["sgs"], rel=5e-3)
    browser_page.locator("#compare-items a", has_text="item 1").first.click()  # type: ignore[attr-defined]
    assert browser_page.url.endswith("items/trivia_qa/1.html")  # type: ignore[attr-defined]
    assert watch.errors == []


def test_plots_are_legible_and_described(site: Path, browser: object) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    opened = context.new_page()
    ids = set(measure_names())
    for name in ("reversals.html", "axes.html", "models/acme__tiny-a.html"):
        opened.goto((site / name).as_uri())
        sizes = opened.evaluate("""() => Array.from(document.querySelectorAll('svg.plot')).flatMap(svg => {
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim())
                .map(t => parseFloat(getComputedStyle(t).fontSize) * scale); })""")
        assert sizes and min(sizes) >= 11, (name, min(sizes))
        titles = opened.locator("svg.plot > title").all_text_contents()
        assert titles and not ids & set(titles), titles
    context.close()


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves the site without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_served_over_http_nothing_is_missing(served: str, browser: object) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    opened, watch = watched(context)
    missing: list[str] = []
    opened.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)  # type: ignore[attr-defined]
    for name in PAGE_TYPES:
        # networkidle: the favicon is fetched after "load"; leaving earlier would abort it
        opened.goto(served + name, wait_until="networkidle")  # type: ignore[attr-defined]
    icons = opened.locator("link[rel=icon]").evaluate_all("els => els.map(e => e.href)")  # type: ignore[attr-defined]
    assert icons and opened.request.get(icons[0]).ok  # type: ignore[attr-defined]
    # leaving a page may abort its favicon fetch (net::ERR_ABORTED): a navigation, not a missing file
    assert missing == [] and [e for e in watch.errors if "ERR_ABORTED" not in e] == []
    context.close()
