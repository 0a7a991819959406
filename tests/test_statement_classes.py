"""The classes of misleading statement an outside audit found on the v2 board (issue 48), checked on the
committed site against the leaderboard.json it was built from, so a rebuild cannot bring one back:

- an accuracy never stands without its trivial baseline and its labels, on the overview's table and in
  "How far to trust these numbers" as on the model pages (every model's is at or below it);
- "not testable" gives the reason it has: too few items *differ*, which tied items cause as much as few
  items do (2 of the board's reversals are untestable with 16 items each);
- the glossary's item instability pools the families the headline SGS pools, not "all families";
- a compare page names the two Holm families its rows are corrected in, the ones leaderboard.json states.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from benchmark.site.render import num

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "leaderboard" / "site"
BOARDS = {
    "": ROOT / "leaderboard" / "leaderboard.json",
    "profiles/paper/": ROOT / "leaderboard" / "profiles" / "sago-v1" / "v2-paper" / "leaderboard.json",
}
"""Each board of the committed site (its folder in the site) and the leaderboard.json it shows."""


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _page(name: str) -> str:
    return (SITE / name).read_text(encoding="utf-8")


def _accuracy_cell(page: str, dataset: str, slug: str) -> str:
    table = page[page.index(f'id="board-{dataset}"') :]
    row = table[table.index(f'<tr data-model="{slug}">') :]
    row = row[: row.index("</tr>")]
    match = re.search(r'data-label="baseline accuracy"[^>]*>(.*?)</td>', row, flags=re.S)
    assert match, (dataset, slug)
    return _text(match.group(1))


def _expected(row: dict) -> str:  # type: ignore[type-arg]
    labels = f" [{', '.join(row['validity'])}]" if row["validity"] else ""
    trivial = f" trivial {num(row['baseline'])}" if row["baseline"] is not None else ""
    return f"{num(row['accuracy'])}{labels}{trivial}"


@pytest.mark.parametrize("folder", list(BOARDS))
def test_every_accuracy_on_the_overview_stands_beside_its_trivial_baseline_and_labels(folder: str) -> None:
    board = json.loads(BOARDS[folder].read_text(encoding="utf-8"))
    page = _page(folder + "index.html")
    rows = board["accuracy"]
    assert rows and all(r["baseline"] is not None for r in rows)
    for row in rows:
        assert _accuracy_cell(page, row["dataset"], row["model"]) == _expected(row), row
    trust = page[page.index('id="trust-models"') :]
    trust = _text(trust[: trust.index("</ul>")])
    for row in (r for r in rows if r["dataset"] == "all"):
        name = next(m["name"] for m in board["models"] if m["slug"] == row["model"])
        labels = f" [{', '.join(row['validity'])}]" if row["validity"] else ""
        accuracy = f"accuracy {100 * row['accuracy']:.1f} % of {row['n_items']}"
        baseline = f" (trivial baseline {100 * row['baseline']:.1f} %){labels}"
        # the model's cut share comes first, then its accuracy with the baseline beside it
        assert re.search(
            re.escape(f"{name}: ") + "[^;]*; " + re.escape(accuracy + baseline) + r"(?! \[)", trust
        ), name


def test_not_testable_says_too_few_items_differ_never_only_too_few_items() -> None:
    board = json.loads(BOARDS[""].read_text(encoding="utf-8"))
    untestable = [r for r in board["reversals"] if not r["testable"]]
    assert untestable and all(r["n_items_a"] == r["n_items_b"] == 16 for r in untestable)  # ties, not n
    reasons = {
        "reversals.html": "“not testable” means too few items differ between the two models (few items, or "
        "items tied",
        "index.html": "“not testable” when too few items differ between the models (few items, or tied ones)",
    }
    for name, reason in reasons.items():
        assert reason in _text(_page(name)), name
    compare = sorted((SITE / "compare").glob("*--*.html"))
    assert compare
    for path in compare:
        assert "“not testable” means too few items differ between the two (few items, or items tied" in _text(
            path.read_text(encoding="utf-8")
        ), path.name
    for path in SITE.rglob("*.html"):  # the old reasons, which ties made wrong
        text = path.read_text(encoding="utf-8")
        assert "datasets have too few items for any result" not in text, path
        assert "the items are too few for any difference" not in text, path


@pytest.mark.parametrize("folder", list(BOARDS))
def test_the_glossary_pools_the_families_the_headline_sgs_pools(folder: str) -> None:
    board = json.loads(BOARDS[folder].read_text(encoding="utf-8"))
    paper = next(a for a in board["aggregates"] if a["name"] == "paper")
    assert len(paper["families"]) == 6  # the page words it "six"
    glossary = _page(folder + "methodology.html")
    entry = re.search(r"<dt>s<sub>X</sub>\(i\)</dt><dd>(.*?)</dd>", glossary, flags=re.S)
    assert entry
    text = _text(entry.group(1))
    assert "the paper's six for SGS, every rewrite family for SGS-ext" in text
    assert "all families" not in text


def test_compare_pages_name_the_holm_families_the_board_corrects_in() -> None:
    board = json.loads(BOARDS[""].read_text(encoding="utf-8"))
    stated = board["correction"]["pairwise"]
    proper, pooled = (
        "every (dataset × measure × model pair) of the datasets proper",
        "every (measure × model pair)",
    )
    assert proper in stated and f"separately over {pooled}" in stated
    for path in sorted((SITE / "compare").glob("*--*.html")):
        text = _text(path.read_text(encoding="utf-8"))
        assert f"Holm-corrected over {proper}" in text, path.name
        assert f"for the pooled “all” rows separately over {pooled} of the pooled items" in text, path.name


def test_a_profile_board_says_which_models_it_has_not_run_and_ranks_no_lone_model() -> None:
    """The paper board's other models are evaluated on the published board: on the paper board they are
    not run with its profile yet, not "submitted, not evaluated"; and a lone model there gets no rank."""
    published = json.loads(BOARDS[""].read_text(encoding="utf-8"))
    paper = json.loads(BOARDS["profiles/paper/"].read_text(encoding="utf-8"))
    missing = [m["slug"] for m in paper["models"] if m["status"] != "complete"]
    done = {m["slug"] for m in published["models"] if m["status"] == "complete"}
    assert missing and set(missing) <= done
    page = _page("profiles/paper/index.html")
    assert "Not run with the paper profile yet:" in page and "not evaluated yet" not in page
    assert f"({len(missing)} more not run with the paper profile yet)" in _text(page)
    complete = sum(m["status"] == "complete" for m in paper["models"])
    assert complete >= 1
    assert ('class="unit rank"' in page) == (complete > 1)  # a lone model gets no rank range
    assert 'class="unit rank"' in _page("index.html")  # four models: their rank ranges stay
