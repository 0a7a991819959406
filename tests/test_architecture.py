"""docs/ARCHITECTURE.md stays true: every file it names exists, and its measures table is the registry's."""

from __future__ import annotations

import re
from pathlib import Path

from benchmark.axes.measures import measures_markdown

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
EXTENSIONS = (".py", ".md", ".json", ".toml", ".parquet", ".yaml", ".jsonl", ".j2", ".safetensors")
PLACEHOLDERS = ("<", ">", "…", "*", " ", "{")


def named_paths(text: str) -> list[tuple[str, Path]]:
    """(as written, where it points) for every file or folder the page names: code spans that look like a
    path (a slash, or a file name with a known extension) and Markdown link targets (relative to docs/).
    Spans with a placeholder (``<set>``, ``…``, ``*``) or a space are patterns or commands, not paths.
    A bare file name (``run.json``) points at the first file of that name in the checkout."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code blocks hold commands and examples
    found = []
    for span in re.findall(r"`([^`\n]+)`", prose):
        if any(p in span for p in PLACEHOLDERS) or span.startswith(("-", "$")):
            continue
        if "/" in span:
            found.append((span, ROOT / span))
        elif span.endswith(EXTENSIONS):
            found.append((span, _somewhere(span)))
    for target in re.findall(r"\]\(([^)#\s]+)\)", prose):
        if "://" not in target:
            found.append((target, PAGE.parent / target))
    return found


def _somewhere(name: str) -> Path:
    """``name`` at the root, else the first file of that name in the checkout's own folders."""
    for folder in (
        ROOT,
        *(ROOT / d for d in ("benchmark", "docs", "tests", "variants", "submissions", "leaderboard")),
    ):
        if (folder / name).exists():
            return folder / name
        if folder != ROOT and (hit := next(folder.rglob(name), None)) is not None:
            return hit
    return ROOT / name


def test_the_finder_reads_spans_and_links_and_skips_patterns() -> None:
    text = (
        "See [METHOD.md](METHOD.md) and `benchmark/cli.py`, `pyproject.toml`, `run.json`; not "
        "`sago analyze`, `variants/<set>/`, `results/…/deltas.parquet` or [a site](https://example.org).\n"
        "```\nbenchmark/nowhere.py\n```\n"
    )
    found = named_paths(text)
    assert [written for written, _ in found] == [
        "benchmark/cli.py",
        "pyproject.toml",
        "run.json",
        "METHOD.md",
    ]
    assert found[2][1].name == "run.json" and found[2][1].is_file()  # a committed result's


def test_every_path_the_page_names_exists() -> None:
    named = named_paths(PAGE.read_text(encoding="utf-8"))
    assert len(named) > 40  # the page is a map: it names the files
    missing = [written for written, path in named if not path.exists()]
    assert missing == [], f"docs/ARCHITECTURE.md names files that do not exist: {missing}"


def test_the_measures_table_is_the_registry() -> None:
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- measures:begin[^\n]*-->\n(.*?)\n<!-- measures:end -->", text, flags=re.DOTALL)
    assert block is not None, "docs/ARCHITECTURE.md lost its measures markers"
    assert block.group(1) == measures_markdown(), (
        "docs/ARCHITECTURE.md's measures table is stale; paste this between the markers:\n"
        + measures_markdown()
    )
