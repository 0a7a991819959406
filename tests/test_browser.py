"""The built site in a real browser (Debian's headless Chromium driven by Playwright), from file://.

Every page opens without console errors, failed requests or network access; every relative link
resolves; a sort header reorders its table; an item opens in the item browser; hostile model names
and responses show as text and never run. A reader's view: no page scrolls sideways on a 390 px phone,
every page states what was run, the overview's sentences are the leaderboard's, filters and the
compare picker work, plot text is legible, and served over HTTP nothing 404s (the favicon included).
The overview's table shows the leaderboard's numbers for every model, measure and dataset and sorts by
every column; model colours show in light mode; no table scrolls inside its box on a phone or overflows
on a laptop; axe-core (vendored, hash-pinned) finds nothing on any page type at either width in either
colour scheme (the second profile's board and its comparison page included); the Submit page's example
validates and lists only keys of the schema.
Without /usr/bin/chromium these tests skip locally but fail under CI (the environment variable CI set),
so CI cannot pass them by accident.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from helpers.site_tree import (
    HOSTILE_IMG,
    HOSTILE_NAME,
    HOSTILE_SCRIPT,
    OTHER_PROFILE,
    PROFILE,
    SET,
    VERSION,
    make_site_tree,
    write_profile_board,
    write_variant_set,
)

from benchmark.axes.measures import measure_names
from benchmark.provenance import sha256_file
from benchmark.site import findings
from benchmark.site.board import pending_board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.cli import profile_boards
from benchmark.site.render import num
from benchmark.submissions.fields import describe_fields
from benchmark.submissions.validate import validate_tree
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
    pending: set[object] = field(default_factory=set)
    """requests neither finished nor failed yet"""
    aborted: list[str] = field(default_factory=list)
    """requests cancelled by the browser (net::ERR_ABORTED): the test's next navigation cancels what the
    last page still had in flight (a favicon under load), which is not the page's fault"""

    def failed(self, request: object) -> None:
        self.pending.discard(request)
        failure = request.failure  # type: ignore[attr-defined]
        url = request.url  # type: ignore[attr-defined]
        if failure == "net::ERR_ABORTED":
            self.aborted.append(url)
        else:
            self.errors.append(f"failed: {url} {failure}")


SETTLE_SECONDS = 30.0


def settle(page: object, watch: Watch) -> None:
    """Wait until every request the page made has finished or failed (a loaded page can still be
    fetching its favicon), so the next navigation aborts nothing."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while watch.pending and time.monotonic() < deadline:
        page.wait_for_timeout(10)  # type: ignore[attr-defined]
    assert not watch.pending, [r.url for r in watch.pending]  # type: ignore[attr-defined]


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
    "changelog.html",
    "versions/v2/index.html",
)
"""One page of every kind the site has."""
PROFILE_FOLDER = f"profiles/{OTHER_PROFILE['name']}/"
PROFILE_PAGES = tuple(
    PROFILE_FOLDER + name
    for name in (
        "index.html",
        "comparison.html",
        "reversals.html",
        f"compare/{PAIR}",
        "models/acme__tiny-a.html",
        "datasets/trivia_qa.html",
        "items/trivia_qa/1.html",
        "changelog.html",
    )
)
"""The second profile's board (``sago analyze --profile paper``): its own pages and the comparison page."""
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
"""axe-core 4.14.1 (tests/vendor/README.md): checked before it is injected, never fetched."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = make_site_tree(tmp_path_factory.mktemp("browser"))
    label_accuracy_as_the_real_board(tree.leaderboard)
    write_variant_set(tree.variants, "v2")  # a frozen version without results: its own, pending board
    write_profile_board(tree)  # a second profile's board, found where `sago analyze --profile` puts it
    board, variants = read_board(tree.leaderboard), load_variant_set(SET, VERSION, tree.variants)
    inputs = SiteInputs(board, tree.submissions, variants)
    pending = SiteInputs(
        pending_board(SET, "v2", tree.submissions),
        tree.submissions,
        load_variant_set(SET, "v2", tree.variants),
    )
    profiles = profile_boards(board, tree.leaderboard, tree.submissions, variants)
    build_site(inputs, tree.root / "site", progress=False, others=[pending], profiles=profiles)
    (tree.root / "site" / "leaderboard.json.src").write_text(
        tree.leaderboard.read_text()
    )  # for the headline test
    return tree.root / "site"


def label_accuracy_as_the_real_board(path: Path) -> None:
    """Give every accuracy a trivial baseline above it and the committed v2 board's longest labels ("[cut,
    ≤ baseline]"): the overview's table must fit a laptop with them (on v2 they pushed it 162 px wide)."""
    board = json.loads(path.read_text(encoding="utf-8"))
    for row in board["accuracy"]:  # every accuracy below its baseline, as on v2
        row["baseline"] = min(1.0, round(row["accuracy"] + 0.1, 6))
        row["validity"] = ["cut", "≤ baseline"]
    path.write_text(json.dumps(board, ensure_ascii=False, sort_keys=True), encoding="utf-8")


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
    opened.on("requestfailed", watch.failed)
    opened.on("requestfinished", lambda r: watch.pending.discard(r))
    opened.on("request", lambda r: (watch.requests.append(r.url), watch.pending.add(r)))

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
        settle(browser_page, watch)
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
    # Every page settled before the next navigation, so nothing should be aborted; were something (a
    # browser-internal cancel), it must at least be a file that exists (a missing one fails differently).
    assert all(local_file(u).is_file() for u in watch.aborted if urlparse(u).scheme == "file"), watch.aborted


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
    for name in PAGE_TYPES + PROFILE_PAGES:
        browser_page.goto((site / name).as_uri())  # type: ignore[attr-defined]
        widths = browser_page.evaluate(  # type: ignore[attr-defined]
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], f"{name} scrolls sideways at 390 px: {widths}"
        header = browser_page.locator("#run-header")  # type: ignore[attr-defined]
        assert header.is_visible(), name
        text = " ".join(header.inner_text().split())
        if name.startswith("versions/"):  # the board of a version nothing has run on yet
            assert "nothing yet: every submission is pending" in text and f"{SET}/v2" in text, name
            continue
        ran = OTHER_PROFILE if name.startswith(PROFILE_FOLDER) else PROFILE
        assert f"profile {ran['name']}" in text and f"{ran['items_per_dataset']} items per dataset" in text
        assert f"up to {ran['max_new_tokens']} new tokens" in text and "partial run" in text, name
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
    # each finding's plain sentence is shown; its full sentence (test, n, correction) one click away
    pairs = findings.headline_claims(board)
    assert shown == [f"{plain}\ntest, n and correction" if full else plain for plain, full in pairs]
    assert len(shown) >= 3
    details = browser_page.locator("#headline li details")  # type: ignore[attr-defined]
    assert details.all_text_contents() == [f"test, n and correction{full}" for _, full in pairs if full]
    assert [full or plain for plain, full in pairs] == findings.headline(board)
    shown = findings.headline(board)  # the full sentences, which the checks below read
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
    leaders = browser_page.locator("#grid-table .leader")  # type: ignore[attr-defined]
    named = [c for row in findings.grid(board) for c in row if c.leader]
    if leaders.count():  # a steadier model is named only where the corrected test says so
        assert leaders.first.inner_text() in {m["name"] for m in data["models"]}
    else:
        assert not named
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
    # the order picked is kept: tiny-b first, in the heading and in the first column of numbers
    assert browser_page.url.endswith("compare/acme__tiny-b--acme__tiny-a.html")  # type: ignore[attr-defined]
    board = json.loads((site / "leaderboard.json.src").read_text())
    names = {m["slug"]: m["name"] for m in board["models"]}
    heading = browser_page.locator("h1").inner_text()  # type: ignore[attr-defined]
    assert heading.index(names["acme__tiny-b"]) < heading.index(names["acme__tiny-a"])
    rows = browser_page.locator("#compare-table tbody tr")  # type: ignore[attr-defined]
    assert rows.count() == (len(board["datasets"]) + 1) * len(board["measures"])
    first = rows.first.locator("td").all_inner_texts()
    cell_b = next(
        c
        for c in board["cells"]
        if (c["model"], c["dataset"], c["measure"]) == ("acme__tiny-b", "all", board["measures"][0]["name"])
    )
    assert float(first[2].split()[-1].replace("\u2212", "-")) == pytest.approx(cell_b["sgs"], rel=5e-3)
    headers = browser_page.locator("#compare-table thead th").all_inner_texts()  # type: ignore[attr-defined]
    assert names["acme__tiny-b"] in headers[2] and names["acme__tiny-a"] in headers[3]
    browser_page.locator("#compare-items a", has_text="item 1").first.click()  # type: ignore[attr-defined]
    assert browser_page.url.endswith("items/trivia_qa/1.html")  # type: ignore[attr-defined]
    assert watch.errors == []


def test_plots_are_legible_and_described(site: Path, browser: object) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    opened = context.new_page()
    ids = set(measure_names())
    for name in ("reversals.html", "axes.html", "models/acme__tiny-a.html"):
        opened.goto((site / name).as_uri())
        sizes = opened.evaluate("""() => Array.from(document.querySelectorAll('svg.plot'))
            .filter(svg => svg.getBoundingClientRect().width > 0).flatMap(svg => {
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
    for name in PAGE_TYPES + PROFILE_PAGES:
        # networkidle: the favicon is fetched after "load"; leaving earlier would abort it
        opened.goto(served + name, wait_until="networkidle")  # type: ignore[attr-defined]
    icons = opened.locator("link[rel=icon]").evaluate_all("els => els.map(e => e.href)")  # type: ignore[attr-defined]
    assert icons and opened.request.get(icons[0]).ok  # type: ignore[attr-defined]
    # leaving a page may abort its favicon fetch (net::ERR_ABORTED): a navigation, not a missing file
    assert missing == [] and [e for e in watch.errors if "ERR_ABORTED" not in e] == []
    context.close()


def context_for(browser: object, width: int, scheme: str) -> object:
    return browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)  # type: ignore[attr-defined]


def test_overview_table_shows_the_leaderboards_numbers_for_every_dataset(
    site: Path, page: tuple[object, Watch]
) -> None:
    browser_page, watch = page
    browser_page.goto((site / "index.html").as_uri())  # type: ignore[attr-defined]
    board = read_board(site / "leaderboard.json.src")
    measures = board.data["headline_measures"]
    choice = browser_page.locator("select[data-show-one='board-tables']")  # type: ignore[attr-defined]
    assert choice.is_visible()
    checked = 0
    for dataset in ["all", *board.datasets]:
        choice.select_option(dataset)
        sections = browser_page.locator("section.board-choice")  # type: ignore[attr-defined]
        assert [s.is_visible() for s in sections.all()].count(True) == 1
        table = browser_page.locator(f"#board-{dataset}")  # type: ignore[attr-defined]
        assert table.is_visible()
        rows = table.locator("tbody tr")
        assert {r.get_attribute("data-model") for r in rows.all()} == {m["slug"] for m in board.models}
        for row in rows.all():
            slug = row.get_attribute("data-model")
            for measure in measures:
                td = row.locator(f"td[data-measure='{measure}']")
                cell = board.one("cells", model=slug, dataset=dataset, measure=measure)
                shown = " ".join(td.inner_text().split())
                if cell is None:
                    assert shown == "–"
                    continue
                low, high = num(cell["ci_low"], like=cell["sgs"]), num(cell["ci_high"], like=cell["sgs"])
                ranks = f"rank {cell['rank_low']}" + (
                    f"–{cell['rank_high']}" if cell["rank_high"] != cell["rank_low"] else ""
                )
                assert shown == f"{num(cell['sgs'])} [{low}, {high}] {ranks}", (dataset, slug, measure)
                assert float(td.get_attribute("data-sort")) == cell["sgs"]
                checked += 1
            accuracy = board.one("accuracy", model=slug, dataset=dataset)
            td = row.locator("td[data-label='baseline accuracy']")
            shown = " ".join(td.inner_text().split())
            if accuracy is None:
                assert shown == "–"
                continue
            labels = f" [{', '.join(accuracy['validity'])}]" if accuracy.get("validity") else ""
            baseline = accuracy.get("baseline")  # never an accuracy without its trivial baseline
            trivial = f" trivial {num(baseline)}" if baseline is not None else ""
            assert shown == f"{num(accuracy['accuracy'])}{labels}{trivial}", (dataset, slug)
    assert checked == len(board.complete) * len(measures) * (len(board.datasets) + 1)
    assert watch.errors == []


def test_overview_table_sorts_by_every_column(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "index.html").as_uri())  # type: ignore[attr-defined]
    table = browser_page.locator("#board-all")  # type: ignore[attr-defined]
    headers = table.locator("thead th")
    assert headers.count() == 13  # model, four measures, accuracy, items, six facts, and no composite

    def keys(index: int) -> list[str]:
        return table.locator(f"tbody td:nth-child({index + 1})").evaluate_all(
            "cells => cells.map(c => c.hasAttribute('data-sort') ? c.dataset.sort : c.textContent.trim())"
        )

    def ordered(values: list[str], reverse: bool) -> list[str]:
        present = [v for v in values if v != ""]
        numeric = all(_is_number(v) for v in present)
        key = (lambda v: float(v)) if numeric else (lambda v: v.lower())
        return sorted(present, key=key, reverse=reverse) + [v for v in values if v == ""]

    for index in range(headers.count()):
        header = headers.nth(index)
        header.locator("button").click()
        assert header.get_attribute("aria-sort") == "ascending"
        values = keys(index)
        assert values == ordered(values, reverse=False), (index, values)
        header.locator("button").click()
        values = keys(index)
        assert values == ordered(values, reverse=True), (index, values)
    assert watch.errors == []


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _luminance(colour: str) -> float:
    parts = [float(p) for p in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]]
    linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_model_colours_show_in_light_mode(site: Path, browser: object) -> None:
    context = context_for(browser, 1280, "light")
    opened = context.new_page()  # type: ignore[attr-defined]
    for name, selector in (
        ("index.html", "#grid-table .leader"),
        (f"compare/{PAIR}", "#compare-table .tag"),
        (f"compare/{PAIR}", "p.legend .tag"),
    ):
        opened.goto((site / name).as_uri())
        chips = opened.locator(selector)
        if name == "index.html" and not any(
            c.leader for row in findings.grid(read_board(site / "leaderboard.json.src")) for c in row
        ):
            continue  # no steadier model is named on this board's grid: no chip to colour
        assert chips.count() > 0, (name, selector)
        for colours in chips.evaluate_all(
            "els => els.map(e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color])"
        ):
            background, text = colours
            assert background not in ("rgba(0, 0, 0, 0)", "transparent"), (name, selector)
            lighter, darker = sorted((_luminance(background), _luminance(text)), reverse=True)
            assert (lighter + 0.05) / (darker + 0.05) >= 4.5, (name, colours)
    opened.goto((site / "items" / "trivia_qa" / "1.html").as_uri())
    flag = opened.locator("mark.flag").first
    if flag.count():
        assert flag.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    context.close()


def test_plot_text_is_at_least_11_px_on_a_phone(site: Path, browser: object) -> None:
    context = context_for(browser, 390, "light")
    opened = context.new_page()  # type: ignore[attr-defined]
    for name in ("reversals.html", "axes.html", "models/acme__tiny-a.html"):
        opened.goto((site / name).as_uri())
        sizes = opened.evaluate("""() => Array.from(document.querySelectorAll('svg.plot'))
            .filter(svg => svg.getBoundingClientRect().width > 0).map(svg => {
              const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
              return Math.min(...Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim())
                  .map(t => parseFloat(getComputedStyle(t).fontSize) * scale)); })""")
        assert sizes and min(sizes) >= 11, (name, sizes)
    context.close()


OVERFLOW = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const main = document.querySelector('main');
  const right = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  return Array.from(main.querySelectorAll('table')).filter(t => t.getClientRects().length).map(t => {
    const box = t.closest('.scroll') || t.parentElement;
    const name = t.id || t.className || 'table';
    return [name, box.scrollWidth - box.clientWidth, t.getBoundingClientRect().right - right];
  }).filter(([, scrolls, beyond]) => scrolls > 1 || beyond > 1);
}"""


@pytest.mark.parametrize("width", [390, 1280])
def test_no_table_scrolls_inside_its_box_or_overflows(site: Path, browser: object, width: int) -> None:
    context = context_for(browser, width, "light")
    opened = context.new_page()  # type: ignore[attr-defined]
    tables = 0
    for name in PAGE_TYPES + PROFILE_PAGES:
        opened.goto((site / name).as_uri())
        tables += opened.locator("main table").count()
        assert opened.evaluate(OVERFLOW) == [], (name, width)
    assert tables > 30
    context.close()


def test_tables_become_labelled_rows_on_a_phone(site: Path, browser: object) -> None:
    context = context_for(browser, 390, "light")
    opened = context.new_page()  # type: ignore[attr-defined]
    opened.goto((site / "datasets" / "trivia_qa.html").as_uri())
    cell = opened.locator("table.ranking tbody tr").first.locator("td").nth(1)
    label = cell.evaluate("e => getComputedStyle(e, '::before').content")
    assert label.strip('"').endswith(": ") and len(label) > 4
    assert opened.locator("table.ranking thead").first.is_hidden()
    context.close()


def _axe(opened: object) -> list[tuple[str, int, list[str]]]:
    # evaluated through the debugging protocol: the pages' Content-Security-Policy (script-src 'self')
    # stays in force for the page's own scripts and is not weakened for the test
    opened.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")  # type: ignore[attr-defined]
    return opened.evaluate(  # type: ignore[attr-defined, no-any-return]
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => [v.id, v.nodes.length, v.nodes.slice(0, 3).map(n => n.target.join(' '))])"""
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_axe_finds_no_violation_on_any_page_type(
    site: Path, browser: object, width: int, scheme: str
) -> None:
    assert sha256_file(AXE) == AXE_SHA256, "tests/vendor/axe.min.js is not the pinned axe-core"
    context = context_for(browser, width, scheme)
    opened = context.new_page()  # type: ignore[attr-defined]
    found = {}
    for name in PAGE_TYPES + PROFILE_PAGES:
        opened.goto((site / name).as_uri())
        opened.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        if violations := _axe(opened):
            found[name] = violations
    assert found == {}
    context.close()


def test_skip_link_is_the_first_stop_and_reaches_the_content(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, _ = page
    browser_page.goto((site / "datasets" / "trivia_qa.html").as_uri())  # type: ignore[attr-defined]
    browser_page.keyboard.press("Tab")  # type: ignore[attr-defined]
    focused = browser_page.evaluate("document.activeElement.className")  # type: ignore[attr-defined]
    assert focused == "skip" and browser_page.locator("a.skip").is_visible()  # type: ignore[attr-defined]
    browser_page.keyboard.press("Enter")  # type: ignore[attr-defined]
    assert browser_page.evaluate("document.activeElement.id") == "main"  # type: ignore[attr-defined]
    assert browser_page.locator("main").count() == 1  # type: ignore[attr-defined]


def test_copy_button_copies_a_whole_hash(site: Path, page: tuple[object, Watch]) -> None:
    browser_page, watch = page
    browser_page.goto((site / "downloads.html").as_uri())  # type: ignore[attr-defined]
    button = browser_page.locator("button.copy").first  # type: ignore[attr-defined]
    code = browser_page.locator("code.hash").first  # type: ignore[attr-defined]
    assert button.is_visible() and len(button.get_attribute("data-copy")) == 64
    assert code.evaluate("e => e.getBoundingClientRect().width") < 160  # shortened on screen
    button.click()
    # the label changes when the clipboard's promise settles, which a loaded machine may delay
    browser_page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.querySelector('button.copy').textContent !== 'copy'", timeout=10_000
    )
    assert button.inner_text() == "copied"
    assert watch.errors == []


def test_submit_page_example_validates_and_lists_only_schema_keys(
    site: Path, page: tuple[object, Watch], tmp_path: Path
) -> None:
    browser_page, _ = page
    browser_page.goto((site / "submit.html").as_uri())  # type: ignore[attr-defined]
    example = browser_page.locator("#submission-example").inner_text()  # type: ignore[attr-defined]
    folder = tmp_path / "submissions" / "example-org__example-model-1b-instruct"
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(example + "\n", encoding="utf-8")
    report = validate_tree(tmp_path / "submissions", site.parent / "variants")
    assert report.ok and report.submissions == 1, [f.line() for f in report.failures]
    listed = browser_page.locator("#submission-fields tr[data-key]").evaluate_all(  # type: ignore[attr-defined]
        "rows => rows.map(r => r.dataset.key)"
    )
    assert listed and sorted(listed) == sorted(f.path for f in describe_fields())
    steps = browser_page.locator("#submit-steps > li").all_inner_texts()  # type: ignore[attr-defined]
    for words in ("pip install", "sago submissions validate", "pull request", "profile", "Where the result"):
        assert any(words in step for step in steps), words


def test_a_phone_sorts_with_a_menu_instead_of_the_hidden_headers(
    site: Path, phone: tuple[object, Watch]
) -> None:
    browser_page, watch = phone
    browser_page.goto((site / "index.html").as_uri())  # type: ignore[attr-defined]
    section = browser_page.locator("section.board-choice[data-choice='all']")  # type: ignore[attr-defined]
    menu = section.locator("label.sort-menu select")
    assert menu.is_visible() and section.locator("thead").is_hidden()
    options = menu.locator("option").all_inner_texts()
    assert len(options) == 1 + 2 * 13 and "size, high to low" in options
    menu.select_option(label="size, high to low")
    sizes = section.locator("tbody td[data-label='size']").evaluate_all("cs => cs.map(c => c.dataset.sort)")
    present = [float(v) for v in sizes if v]
    assert present == sorted(present, reverse=True) and len(present) >= 2
    assert watch.errors == []


@pytest.mark.parametrize(("width", "scheme"), [(1280, "dark"), (390, "light")])
def test_how_far_to_trust_stands_above_the_table_with_every_models_limits(
    site: Path, browser: object, width: int, scheme: str
) -> None:
    board = json.loads((site / "leaderboard.json.src").read_text())
    complete = [m for m in board["models"] if m.get("status") == "complete"]
    context = context_for(browser, width, scheme)
    opened = context.new_page()  # type: ignore[attr-defined]
    opened.goto((site / "index.html").as_uri())
    box = opened.locator("#trust")
    assert box.is_visible()
    table = opened.locator("table.leaderboard").first
    assert box.bounding_box()["y"] < table.bounding_box()["y"]
    text = " ".join(box.inner_text().split())
    assert "items per dataset" in text and "responses cut" in text and "accuracy" in text
    assert opened.locator("#trust-models > li").count() == len(complete)
    assert opened.locator("table.matrix").count() == len(board["headline_measures"])
    context.close()
