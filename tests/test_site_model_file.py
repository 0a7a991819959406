"""Model pages say what ran: the weights file's facts and the exact prompt (leaderboard/model_facts.json),
only beside a run that loaded that file, escaped; and the share of degenerate responses (leaderboard.json).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from helpers.site_tree import SET, VERSION, make_site_tree

from benchmark.documents import RunDocument
from benchmark.errors import SagoError
from benchmark.model_facts import GGUFFacts, PackagedFacts, SystemTurn, read_model_facts
from benchmark.paths import LEADERBOARD_DIR
from benchmark.site.board import read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.facts import Truncation
from benchmark.site.model_file import degenerate_text, files_that_ran, precision_text, ran_this_file
from benchmark.variants.frozen import load_variant_set

HOSTILE_TURN = "<script>alert(1)</script> You are Tiny."
RENDERED = "<|im_start|>system\n" + HOSTILE_TURN + "<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n"
GGUF = GGUFFacts(
    "llama",
    "Tiny 1M",
    "Acme",
    None,
    "1M",
    "MOSTLY_Q4_1",
    2,
    1_000_000,
    5.7437,
    {"Q4_1": 0.8, "Q8_0": 0.2},
    8192,
    None,
)


def facts(slug: str, file_sha256: str, template: str | None = "1" * 64) -> PackagedFacts:
    return PackagedFacts(
        slug,
        file_sha256,
        template,
        SystemTurn(HOSTILE_TURN, "default"),
        "Q?",
        RENDERED,
        "trivia_qa item 1",
        GGUF,
    )


def run(file_sha256: str | None, chat_template: str) -> RunDocument:
    return RunDocument.from_json(
        {"schema_version": 1, "model": {"file_sha256": file_sha256, "chat_template": chat_template}}
    )


def test_facts_are_shown_only_beside_a_run_of_the_same_file_and_template() -> None:
    mine = facts("x", "a" * 64)
    assert ran_this_file(mine, run("a" * 64, "applied"))
    assert not ran_this_file(mine, run("b" * 64, "applied"))  # another file
    assert not ran_this_file(mine, run("a" * 64, "raw prompt"))  # the template was not applied
    assert not ran_this_file(mine, run(None, "applied"))  # a Hub model: no packaged file
    raw = facts("x", "a" * 64, template=None)
    assert ran_this_file(raw, run("a" * 64, "raw prompt")) and not ran_this_file(
        raw, run("a" * 64, "applied")
    )
    shown = files_that_ran({"x": run("a" * 64, "applied"), "y": run("a" * 64, "applied")}, {"x": mine})
    assert set(shown) == {"x"}


def test_degenerate_share_counts_from_the_run_block() -> None:
    rows = {"all": Truncation(10, 200, 5), "gsm8k": Truncation(5, 100, 5), "jeopardy": Truncation(5, 100, 0)}
    assert degenerate_text(rows) == "2.5 % (5 of 200 responses; gsm8k 5)"
    assert degenerate_text({"all": Truncation(10, 200)}) is None  # an older board: not recorded


def _rewrite_run(path: Path, model: dict[str, object]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data | {"model": model}), encoding="utf-8")


def test_a_model_page_shows_its_file_facts_escaped_and_its_degenerate_share(tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path / "tree")
    for slug, sha in (("acme__tiny-a", "a" * 64), ("acme__tiny-b", "b" * 64)):
        run_json = tree.submissions / slug / "results" / SET / VERSION / "run.json"
        _rewrite_run(run_json, {"source": "packaged", "file_sha256": sha, "chat_template": "applied"})
    files = {"acme__tiny-a": facts("acme__tiny-a", "a" * 64), "acme__tiny-b": facts("acme__tiny-b", "c" * 64)}
    board = read_board(tree.leaderboard)
    inputs = SiteInputs(
        board, tree.submissions, load_variant_set(SET, VERSION, tree.variants), model_files=files
    )
    site = build_site(inputs, tmp_path / "site", progress=False)
    page = (tmp_path / "site" / "models" / "acme__tiny-a.html").read_text(encoding="utf-8")
    assert HOSTILE_TURN not in page and html.escape(HOSTILE_TURN, quote=False) in page
    assert html.escape(RENDERED, quote=False) in page  # the exact prompt, in a <pre>, template tokens escaped
    assert precision_text(GGUF) in page and "8,192 tokens" in page and "Tiny 1M · Acme" in page
    other = (tmp_path / "site" / "models" / "acme__tiny-b.html").read_text(encoding="utf-8")
    assert 'id="what-ran"' not in other  # its facts describe another file than the one it ran
    row = next(m for m in board.models if m["slug"] == "acme__tiny-a")
    pooled = next(t for t in row["run"]["truncated"] if t["dataset"] == "all")  # type: ignore[index]
    assert f"({pooled['degenerate']:,} of {pooled['total']:,} responses" in page
    assert site.pages > 0


def test_a_facts_file_of_a_newer_version_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "model_facts.json"
    path.write_text(json.dumps({"schema_version": 2, "models": {}}), encoding="utf-8")
    with pytest.raises(SagoError, match="schema_version 2") as err:
        read_model_facts(path)
    assert "\n" not in str(err.value)
    assert read_model_facts(tmp_path / "absent.json") == {}


# ---- the committed site ------------------------------------------------------------------------------------
COMMITTED = json.loads((LEADERBOARD_DIR / "model_facts.json").read_text(encoding="utf-8"))["models"]
BOARD = json.loads((LEADERBOARD_DIR / "leaderboard.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("slug", sorted(COMMITTED))
def test_each_committed_model_page_states_its_file_facts(slug: str) -> None:
    """Every fact on the page is the JSON's: the system turn, the rendered prompt (escaped), the declared
    type and bits per weight, the context length, and the degenerate count of leaderboard.json."""
    entry = COMMITTED[slug]
    page = (LEADERBOARD_DIR / "site" / "models" / f"{slug}.html").read_text(encoding="utf-8")
    assert 'id="what-ran"' in page
    turn = entry["default_system_turn"]
    if turn is None:
        assert "none: the prompts were sent as written, without a chat template" in page
    else:
        assert html.escape(f"“{turn['text']}”", quote=True) in page
    assert html.escape(entry["example"]["rendered"], quote=True) in page
    gguf = entry["gguf"]
    assert (
        f"{gguf['file_type'].removeprefix('MOSTLY_')} by its file type; {gguf['bits_per_weight']:.2f} bits"
        in page
    )
    assert f"{gguf['context_length']:,} tokens" in page
    model = next(m for m in BOARD["models"] if m["slug"] == slug)
    pooled = next(t for t in model["run"]["truncated"] if t["dataset"] == "all")
    assert f"({pooled['degenerate']:,} of {pooled['total']:,} responses" in page
