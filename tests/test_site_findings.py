"""The words the site (and the README) say about the results: the dataset × axis grid, reversals in
words, the headline, the run header and the flat downloads, each checked against the leaderboard rows
they come from."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchmark.documents import RunDocument
from benchmark.site import findings
from benchmark.site.board import Board
from benchmark.site.downloads import cells_csv
from benchmark.site.items import ModelResults, item_views
from benchmark.site.render import num, signed
from benchmark.site.runinfo import run_header
from benchmark.site.views import comparison
from benchmark.stats.claims import claims

EXAMPLE = Path(__file__).parent / "fixtures" / "leaderboard_example.json"
COMMITTED = Path(__file__).parent.parent / "leaderboard" / "leaderboard.json"
KEPT_V1 = Path(__file__).parent.parent / "leaderboard" / "versions" / "sago-v1" / "v1" / "leaderboard.json"
"""v1's board (two models' smoke results), kept on the site beside the published one."""
MEASURES = [
    {"name": "act_cos_last", "axis": "activations", "scale": 2.0, "paper": True, "description": "d"},
    {"name": "act_cos_mean", "axis": "activations", "scale": 2.0, "paper": False, "description": "d"},
]


def two_model_board(pairs: list[dict[str, Any]], **extra: Any) -> Board:
    """Models a and b on dataset x with the given pairwise rows; the cells rank them as the diffs say."""
    a_leads = {p["measure"]: p["diff"] < 0 for p in pairs}
    cells = [
        {"model": m, "dataset": "x", "measure": name, "sgs": 0.1 if first else 0.3, "rank": 1 if first else 2}
        for name in ("act_cos_last", "act_cos_mean")
        for m, first in (("a", a_leads.get(name, True)), ("b", not a_leads.get(name, True)))
    ]
    models = [
        {"slug": "a", "name": "Model A", "status": "complete"},
        {"slug": "b", "name": "Model B", "status": "complete"},
    ]
    return Board.of(
        {
            "models": models,
            "datasets": ["x"],
            "measures": MEASURES,
            "cells": cells,
            "pairwise": pairs,
            **extra,
        }
    )


def pair(measure: str, p: float, diff: float = -0.2, **extra: Any) -> dict[str, Any]:
    return {
        "dataset": "x",
        "measure": measure,
        "model_a": "a",
        "model_b": "b",
        "diff": diff,
        "p_holm": p,
        "n_items": 16,
        **extra,
    }


@pytest.mark.parametrize(
    ("pairs", "status", "leader", "wins"),
    [
        ([pair("act_cos_last", 0.01), pair("act_cos_mean", 0.02)], findings.STEADIER, "a", 2),
        ([pair("act_cos_last", 0.01), pair("act_cos_mean", 0.20)], findings.STEADIER, "a", 1),
        ([pair("act_cos_last", 0.30), pair("act_cos_mean", 0.20)], findings.NO_DIFFERENCE, None, 0),
        (
            [pair("act_cos_last", 1.0, testable=False), pair("act_cos_mean", 1.0, testable=False)],
            findings.NOT_TESTABLE,
            None,
            0,
        ),
        ([pair("act_cos_last", 0.01), pair("act_cos_mean", 0.01, diff=0.2)], findings.MIXED, None, 0),
    ],
)
def test_grid_cell_names_a_model_only_on_corrected_significance(
    pairs: list[dict[str, Any]], status: str, leader: str | None, wins: int
) -> None:
    cell = findings.grid_cell(two_model_board(pairs), "x", "activations")
    assert (cell.status, cell.leader, cell.wins) == (status, leader, wins)


def test_headline_measure_decides_the_axis_when_the_file_names_it() -> None:
    # schema 2: the headline measure decides; the other measure only counts how many measures agree
    board = two_model_board(
        [pair("act_cos_last", 0.01, diff=0.2), pair("act_cos_mean", 0.01)], headline_measures=["act_cos_last"]
    )
    cell = findings.grid_cell(board, "x", "activations")
    assert (cell.status, cell.leader, cell.wins) == (findings.STEADIER, "b", 1)  # not "mixed"
    board = two_model_board(
        [pair("act_cos_last", 0.5), pair("act_cos_mean", 0.01)], headline_measures=["act_cos_last"]
    )
    assert findings.grid_cell(board, "x", "activations").status == findings.NO_DIFFERENCE


def test_reversals_in_words_follow_the_sign_of_the_differences() -> None:
    board = Board.of(json.loads(EXAMPLE.read_text()))
    told = findings.reversals(board)
    assert len(told) == len(board.rows("reversals"))
    for r in told:
        row = r.row
        first_is_a = row["diff_a"] < 0
        assert (r.first, r.dataset_first) == (
            (row["model_a"] if first_is_a else row["model_b"]),
            row["dataset_a"],
        )
        assert r.gap_first == pytest.approx(abs(row["diff_a"])) and r.gap_second == pytest.approx(
            abs(row["diff_b"])
        )
        low, high = r.ci_first
        assert low is not None and high is not None and low <= r.gap_first <= high
        sentence = findings.reversal_sentence(board, r)
        assert sentence.index(board.name(r.first)) < sentence.index(board.name(r.second))
        ending = f"on {r.dataset_second}." if r.significant else f"on {r.dataset_second} (not significant)."
        assert f"steadier on {r.dataset_first}" in sentence and sentence.endswith(ending)
        assert (" is steadier " in sentence) == r.significant  # a flip is a fact only when significant
    assert [r.significant for r in told] == sorted((r.significant for r in told), reverse=True)


def numbers_in(text: str) -> list[int]:
    return [int(w) for w in text.replace(",", " ").replace("(", " ").split() if w.isdigit()]


@pytest.mark.parametrize("path", [EXAMPLE, COMMITTED, KEPT_V1])
def test_headline_counts_match_the_leaderboard(path: Path) -> None:
    data = json.loads(path.read_text())
    board = Board.of(data)
    sentences = findings.headline(board)
    eps = data["primary_epsilon"]
    paper = {m["name"] for m in data["measures"] if m["paper"]}
    tests = [
        t
        for c in data["cells"]
        if c["dataset"] != "all" and c["measure"] in paper
        for t in c["tests"]
        if t["epsilon"] == eps
    ]
    counts = {
        v: sum(t["verdict"] == v for t in tests) for v in ("significant", "not significant", "not testable")
    }
    assert (
        f"{counts['significant']} of {len(tests)} are significant, "
        f"{counts['not significant']} not significant, {counts['not testable']} not testable" in sentences[0]
    )
    # no sentence names an overall winner unless every leading cell has the same model
    assert not any("overall winner:" in s and "no overall" not in s for s in sentences)
    if len(board.complete) < 2:  # a board whose other models still run: its verdicts, no comparison
        assert not any("observed flip" in s or "steadier" in s for s in sentences)
        return
    assert 3 <= len(sentences) <= 8
    flips = next(s for s in sentences if "observed flip" in s)
    told = len(data["reversals"])
    assert f"of the {told} observed flip{'s' if told != 1 else ''} in the order of a model pair" in flips
    untestable = sum(r.get("verdict") == "not testable" for r in data["reversals"])
    significant = sum(r.get("verdict") == "significant" for r in data["reversals"])
    if untestable == len(data["reversals"]):
        assert flips.startswith("None of the") and "can be tested" in flips
    else:
        assert flips.startswith(f"{significant} of the {told} observed flip")


def test_rule_no_sentence_rests_on_the_paper_t_test_alone() -> None:
    # a cell the t-test marks († on four items) but the exact test cannot: the grid, the count and the
    # README table all say "not testable", and only the labelled paper column carries the marker
    test = {
        "epsilon": 0.05,
        "n_items": 4,
        "p_t": 1e-5,
        "p_t_holm": 1e-4,
        "marker_t": "†",
        "marker_uncorrected": "†",
        "p_exact": 0.0625,
        "p_floor": 0.0625,
        "p_holm": None,
        "verdict": "not testable",
        "marker": "",
        "testable": False,
    }
    cells = [
        {
            "model": m,
            "dataset": d,
            "measure": "act_cos_last",
            "sgs": 0.2 + k * 0.1,
            "n_items": 4,
            "tests": [test],
            "marker": "",
            "verdict": "not testable",
            "extended": {"sgs": 0.2, "tests": []},
        }
        for k, m in enumerate("ab")
        for d in ("x", "all")
    ]
    board = two_model_board(
        [pair("act_cos_last", 1.0, testable=False, verdict="not testable", n_items=4)],
        cells=cells,
        primary_epsilon=0.05,
        headline_measures=["act_cos_last"],
    )
    text = " ".join(findings.headline(board))
    assert "0 of 2 are significant, 0 not significant, 2 not testable" in text
    assert "would mark 2 of the per-dataset cells" in text  # the paper's column, labelled as such
    assert findings.grid_cell(board, "x", "activations").status == findings.NOT_TESTABLE


def test_one_model_headline_states_its_verdicts_and_compares_nothing() -> None:
    """With one complete model the headline is the instability verdict the README states too, and no
    sentence compares models; without cells there is nothing to say."""
    one = {"models": [{"slug": "a", "name": "Model A", "status": "complete"}], "datasets": ["x"]}
    assert findings.headline(Board.of({**one, "measures": MEASURES})) == []
    test = {"epsilon": 0.05, "n_items": 16, "p_floor": 1.5e-5, "verdict": "significant", "marker_t": "*"}
    cells = [
        {"model": "a", "dataset": d, "measure": "act_cos_last", "sgs": 0.3, "n_items": 16, "tests": [test]}
        for d in ("x", "all")
    ]
    board = Board.of({**one, "measures": MEASURES, "cells": cells, "primary_epsilon": 0.05})
    sentences = findings.headline(board)
    assert sentences == [c["text"] for c in claims(board.document) if c["headline"]]
    assert len(sentences) == 1 and sentences[0].startswith("Is instability above ε = 0.05?")
    assert "1 of 1 are significant, 0 not significant, 0 not testable" in sentences[0]
    assert not any(word in s for s in sentences for word in ("steadier", "flips", "winner", "Model A"))


def _run(**fields: object) -> RunDocument:
    return RunDocument.from_json({"schema_version": 1, **fields})


def test_run_header_calls_a_small_profile_partial_and_never_complete() -> None:
    board = Board.of(
        {
            "set": "s",
            "version": "v1",
            "generator": {"version": "0.1.0"},
            "models": [{"slug": "a", "status": "complete"}, {"slug": "b", "status": "complete"}],
        }
    )
    smoke = {"name": "smoke", "items_per_dataset": 4, "all_strengths": False, "max_new_tokens": 32}
    paper = {"name": "paper", "items_per_dataset": 16, "all_strengths": True, "max_new_tokens": 100}
    header = run_header(
        board, {"a": _run(profile=smoke), "b": _run(profile=paper, variant_set_sha256="f" * 64)}
    )
    assert [(p.name, p.partial, p.models) for p in header.profiles] == [
        ("paper", False, ("b",)),
        ("smoke", True, ("a",)),
    ]
    assert header.partial and header.set_sha256 == "f" * 64
    assert run_header(board, {"a": _run(profile=paper), "b": _run(profile=paper)}).partial is False
    # an older run.json recorded the set's hash under variant_set.sha256
    assert run_header(board, {"a": _run(variant_set={"sha256": "e" * 64})}).set_sha256 == "e" * 64
    assert run_header(board, {}).profiles[0].name == "unknown" and run_header(board, {}).partial


def test_cells_csv_has_one_row_per_cell_with_the_files_values() -> None:
    data = json.loads(EXAMPLE.read_text())
    rows = list(csv.DictReader(io.StringIO(cells_csv(Board.of(data)))))
    assert len(rows) == len(data["cells"])
    first, cell = rows[0], data["cells"][0]
    assert (first["model"], first["dataset"], first["measure"]) == (
        cell["model"],
        cell["dataset"],
        cell["measure"],
    )
    assert float(first["sgs"]) == cell["sgs"] and float(first["ci_low"]) == cell["ci_low"]
    test = next(t for t in cell["tests"] if t["epsilon"] == data["primary_epsilon"])
    assert float(first["p_holm"]) == test["p_holm"]


@pytest.mark.parametrize(
    "name, shown",
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "\\t=1"),  # a tab or carriage return that would hide a formula is a visible escape
        ("\r=1", "\\r=1"),
    ],
)
def test_a_formula_in_a_model_name_is_text_in_cells_csv_and_numbers_stay_numbers(
    name: str, shown: str
) -> None:
    data = json.loads(EXAMPLE.read_text())
    slug = data["cells"][0]["model"]
    next(m for m in data["models"] if m["slug"] == slug)["name"] = name
    data["cells"][0]["sgs"] = -0.25
    first = next(csv.DictReader(io.StringIO(cells_csv(Board.of(data)))))
    assert first["model_name"] == shown  # shown as the text it is, never run
    assert first["sgs"] == "-0.25" and float(first["sgs"]) == -0.25  # a negative number is still a number


def test_numbers_keep_significant_digits_and_real_minus_signs() -> None:
    assert num(0.0199804) == "0.0200"  # not "0.02"
    assert num(0.0175, like=0.0199804) == "0.0175" and num(0.1, like=0.0199804) == "0.1000"
    assert signed(-0.0059341) == "−0.00593" and "-" not in signed(-3.0) + num(-1e-9)


def test_compare_lists_the_items_where_two_models_differ_most() -> None:
    board = Board.of(json.loads(EXAMPLE.read_text()))
    per_a = [{"dataset": "d", "item_id": str(i), "measure": "bleu", "s": 0.1 * i} for i in range(6)]
    per_b = [{"dataset": "d", "item_id": str(i), "measure": "bleu", "s": 0.3} for i in range(6)]
    pair = comparison(board, "acme__tiny-a", "acme__tiny-b", per_a, per_b, {("d", "5"): 5}, per_dataset=2)
    assert [(d.item_id, d.rank) for d in pair.items] == [
        ("0", None),
        ("5", 5),
    ]  # |0 − 0.3| = 0.3, |0.5 − 0.3| = 0.2
    assert len(pair.rows) == (len(board.datasets) + 1) * len(board.measures)
    row = next(r for r in pair.rows if r.pair is not None and r.pair["p_holm"] < 0.05)
    assert row.verdict == (
        findings.STEADIER,
        row.pair["model_a"] if row.pair["diff"] < 0 else row.pair["model_b"],
    )


def test_item_view_shows_only_variants_run_and_marks_flips_and_largest_changes() -> None:
    variants = ["baseline/none/0", "case/start/1", "case/start/9", "spacing/end/3"]
    frame = pd.DataFrame(
        {
            "item_rank": 0,
            "item_id": "q",
            "variant_id": variants,
            "family": [v.split("/")[0] for v in variants],
            "prompt": variants,
            "similarity": 1.0,
            "answers": [["x"]] * 4,
        }
    )
    ran = variants[:3]  # the profile skipped spacing
    records = pd.DataFrame({"item_id": "q", "variant_id": ran, "response": ran, "finished": True})
    deltas = pd.DataFrame(
        {"item_id": "q", "variant_id": ran, "delta_bleu": [0.0, -5.0, -20.0], "correct": [1.0, 1.0, 0.0]}
    )
    results = {
        "m": ModelResults(
            records.set_index(["item_id", "variant_id"]), deltas.set_index(["item_id", "variant_id"])
        )
    }
    (item,) = item_views("d", frame, results)
    assert item.in_set == 4 and [v.variant_id for v in item.variants] == ran
    answers = {v.variant_id: v.answers[0] for v in item.variants}
    assert [answers[v].flipped for v in ran] == [False, False, True]
    assert answers["case/start/9"].largest == ("bleu",) and answers["case/start/1"].largest == ()


def test_when_every_flip_is_significant_the_reversal_claim_calls_none_noise() -> None:
    """The example board keeps only its significant reversal: the sentence claims it with its corrected p
    and says nothing of "the other 0 flips"; with every row the count of the rest is named."""
    data = json.loads(EXAMPLE.read_text())
    kept = [r for r in data["reversals"] if r["significant"]]
    assert len(kept) == 1 and len(data["reversals"]) > 1

    def reversal_text(rows: list[dict[str, Any]]) -> str:
        document = Board.of({**data, "reversals": rows}).document
        return next(c["text"] for c in claims(document) if c["id"] == "reversals")

    only = reversal_text(kept)
    assert (
        only.startswith("1 of the 1 observed flip in the order")
        and f"(corrected p {kept[0]['p_holm']:.2g})" in only
    )
    assert "The other" not in only and "may be noise" not in only
    assert f"The other {len(data['reversals']) - 1} observed flips may be noise." in reversal_text(
        data["reversals"]
    )
