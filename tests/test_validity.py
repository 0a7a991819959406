"""Validity labels (docs/METHOD.md §6.1): boards built to trip each rule carry the label in every sentence
and table that states the number, and the counts behind the labels are the records' own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.sentences import PLAIN_WORDS, plain_words

from benchmark.documents import LeaderboardDocument
from benchmark.results import ResultsFolder
from benchmark.site.render import environment
from benchmark.stats import validity
from benchmark.stats.claims import _accuracy_text, claims, results_markdown
from benchmark.stats.facts import truncation
from benchmark.stats.ranking import PairedDraws, pairwise_rows
from benchmark.stats.verdicts import STEADIER, grid

EXAMPLE = Path(__file__).parent / "fixtures" / "leaderboard_example.json"
AXES = {
    "act_cos_last": "activations",
    "bertscore": "generation",
    "logprob": "confidence",
    "mirroring": "mirroring",
}


def test_a_loop_is_a_cut_response_whose_tail_repeats_one_short_unit() -> None:
    assert validity.degenerate("Paris is " + "the " * 12, finished=False)
    assert validity.degenerate("Step 1" + "\n" * 30, finished=False)
    assert not validity.degenerate("Paris is " + "the " * 12, finished=True)  # it ended: not cut
    assert not validity.degenerate("the " * 5, finished=False)  # shorter than the tail inspected
    assert not validity.degenerate("Natalia sold 48 clips in April and half as many in May.", finished=False)


def test_truncation_counts_the_cut_responses_that_loop_and_the_cut_baselines_graded_wrong(
    tmp_path: Path,
) -> None:
    folder = ResultsFolder(tmp_path)
    folder.records_dir.mkdir(parents=True)
    responses = ["ok.", "a long answer that was cut at the cap", "x" + "ab" * 20, "y" + "ab" * 20, "12 is"]
    base, other = "baseline/none/0", "typos/prefix/1"
    table = pa.table(
        {
            "finished": [True, False, False, True, False],
            "response": responses,
            "item_id": ["1", "2", "3", "3", "4"],
            "variant_id": [base, base, base, other, base],
        }
    )
    pq.write_table(table, folder.records_dir / "gsm8k.parquet")
    # items 2 and 3 are cut and graded wrong; item 4 is cut but right, so it is not "unanswered"
    deltas = pa.table(
        {
            "dataset": ["gsm8k"] * 4,
            "item_id": ["1", "2", "3", "4"],
            "variant_id": [base] * 4,
            "correct": [1.0, 0.0, 0.0, 1.0],
        }
    )
    staged = tmp_path / "deltas.parquet.staged"  # analyze's freshly computed deltas, not yet in place
    pq.write_table(deltas, staged)
    assert truncation(folder)[0]["unanswered"] == 3  # no grades found: every cut baseline unanswered
    assert truncation(folder, staged)[0]["unanswered"] == 2
    pq.write_table(deltas, folder.deltas)
    rows = truncation(folder)
    assert rows == truncation(folder, staged)  # the first analyze and a rebuild count the same
    assert rows[0] == {"dataset": "gsm8k", "cut": 3, "total": 5, "degenerate": 1, "unanswered": 2}
    assert rows[-1]["dataset"] == "all" and rows[-1]["degenerate"] == 1 and rows[-1]["unanswered"] == 2


def test_accuracy_counts_cut_answers_apart_and_sits_beside_its_trivial_baseline() -> None:
    gold = {("strategyqa", str(i)): a for i, a in enumerate(["yes", "yes", "yes", "no"])}
    models = [
        {
            "slug": "m",
            "run": {"truncated": [{"dataset": "strategyqa", "cut": 3, "total": 4, "unanswered": 2}]},
        }
    ]
    rows = [{"model": "m", "dataset": "strategyqa", "n_items": 4, "accuracy": 0.25}]
    (row,) = validity.annotate_accuracy(rows, {"m": set(gold)}, gold, models)
    assert row["baseline"] == 0.75  # always "yes" scores 3 of 4
    assert row["n_cut"] == 2 and row["accuracy_answered"] == 0.5  # 1 right of the 2 not cut
    assert row["validity"] == ["cut", "≤ baseline"]
    text = _accuracy_text(row)  # type: ignore[arg-type]
    assert text == (
        "1 of 4 (25.0 %) items; 2 cut at the cap, not graded wrong: 1 of the other 2; "
        "trivial baseline 75.0 % [cut, ≤ baseline]"
    )
    above = validity.annotate_accuracy([rows[0] | {"accuracy": 1.0}], {"m": set(gold)}, gold, [])
    assert above[0]["validity"] == [] and above[0]["n_cut"] == 0


def test_pairwise_rows_count_the_tied_items() -> None:
    values = np.array([[0.1, 0.1]] * 5 + [[0.2, 0.3]] * 3)
    draws = np.tile(values.mean(axis=0), (10, 1))
    (row,) = pairwise_rows(PairedDraws("gsm8k", "mirroring", ("a", "b"), values, draws))
    assert row["n_tied"] == 5 and row["n_items"] == 8


def test_a_pair_is_tied_from_half_of_its_items_and_carries_both_cells_labels() -> None:
    assert validity.pair_labels(8, 16, [[], []]) == ["tied"]
    assert validity.pair_labels(7, 16, [[], []]) == []
    assert validity.pair_labels(0, 16, [["cut"], ["degenerate", "cut"]]) == ["cut", "degenerate"]


def test_only_the_axes_that_read_the_response_are_cut() -> None:
    row = {"dataset": "gsm8k", "cut": 783, "total": 784, "degenerate": 400}
    assert validity.cell_labels("generation", row) == ["cut", "degenerate"]
    assert validity.cell_labels("mirroring", row) == ["cut", "degenerate"]
    assert validity.cell_labels("activations", row) == []
    assert validity.cell_labels("generation", {"dataset": "x", "cut": 391, "total": 784}) == []


def _tripped(*, cut: bool, tied: bool) -> LeaderboardDocument:
    """The example board with every response cut and/or every paired item tied, labels re-annotated."""
    data: dict[str, Any] = copy.deepcopy(json.loads(EXAMPLE.read_text()))
    for model in data["models"]:
        if model.get("run"):
            model["run"]["truncated"] = [
                {"dataset": d, "cut": 280 if cut else 0, "total": 280} for d in [*data["datasets"], "all"]
            ]
    for row in data["pairwise"]:
        row["n_tied"] = row["n_items"] if tied else 0
        row["verdict"], row["p_holm"], row["testable"] = "significant", 0.001, True
    axes = {m["name"]: m["axis"] for m in data["measures"]}
    data["cells"] = validity.annotate_cells(data["cells"], data["models"], axes)
    data["pairwise"] = validity.annotate_pairs(data["pairwise"], data["cells"])
    data["claims"] = []
    return LeaderboardDocument.from_json(data)


@pytest.mark.parametrize(("cut", "tied"), [(True, False), (False, True), (True, True)])
def test_every_steadier_verdict_names_its_labels(cut: bool, tied: bool) -> None:
    board = _tripped(cut=cut, tied=tied)
    cells = [c for row in grid(board) for c in row if c.status == STEADIER]
    assert cells, "the tripped example must name a steadier model somewhere"
    sentences = " ".join(c["text"] for c in claims(board))
    for cell in cells:
        expected = [
            label
            for label, on in (("cut", cut and cell.axis != "activations"), ("tied", tied))
            if on  # activations are read before the response: never cut
        ]
        assert list(cell.labels) == expected
        if cell.dataset != "all":
            assert validity.labelled(cell.dataset, expected) in sentences


def test_the_readme_tables_label_cut_cells_and_only_those() -> None:
    block = results_markdown(_tripped(cut=True, tied=False))
    table = next(part for part in block.split("\n\n") if part.startswith("| model | n |"))
    header, _, *rows = table.splitlines()
    columns = [c.strip() for c in header.strip("|").split("|")]
    for row in rows:
        for column, text in zip(columns, (c.strip() for c in row.strip("|").split("|")), strict=True):
            if column in AXES:
                assert text.endswith("[cut]") == (AXES[column] != "activations"), (column, text)


def test_the_site_shows_the_labels_beside_a_number_and_a_verdict() -> None:
    env = environment()
    page = env.from_string(
        '{% from "macros.html.j2" import sgs, validity %}'
        '{{ sgs(cell) }}|{{ sgs(ext, ["tied"]) }}|{{ validity([]) }}'
    )
    cell = {"sgs": 0.5, "ci_low": 0.4, "ci_high": 0.6, "validity": ["cut"]}
    html = page.render(cell=cell, ext={"sgs": 0.5, "ci_low": 0.4, "ci_high": 0.6})
    first, second, third = html.split("|")
    assert "[cut]" in first and "[tied]" in second and third == ""


def test_the_reversal_sentence_counts_every_candidate_and_says_why_some_cannot_be_tested() -> None:
    data: dict[str, Any] = copy.deepcopy(json.loads(EXAMPLE.read_text()))
    assert data["reversals"], "the example needs a reversal"
    for row in data["reversals"]:
        row["family_size"], row["candidates"] = 355, 360
    text = next(
        c["text"]
        for c in claims(LeaderboardDocument.from_json(data | {"claims": []}))
        if c["id"] == "reversals"
    )
    assert "Holm over the 355 testable of 360 candidates; 5 cannot reach α because tied items" in text


def test_the_noise_sentence_names_the_pooled_and_the_per_dataset_maximum() -> None:
    data: dict[str, Any] = copy.deepcopy(json.loads(EXAMPLE.read_text()))
    paper = {m["name"] for m in data["measures"] if m["paper"]}
    for cell in data["cells"]:
        cell["noise_floor"] = 0.002 if cell["dataset"] == "all" else 0.001
    data["cells"][[c["dataset"] != "all" and c["measure"] in paper for c in data["cells"]].index(True)][
        "noise_floor"
    ] = 0.009
    text = next(
        c["text"] for c in claims(LeaderboardDocument.from_json(data | {"claims": []})) if c["id"] == "noise"
    )
    assert "at most 0.002 with all datasets pooled and at most 0.009 in any one dataset" in text


def test_each_long_finding_leads_with_a_short_plain_sentence_that_keeps_its_labels() -> None:
    board = _tripped(cut=True, tied=False)
    stated = claims(board)
    plain = {c["id"]: c["plain"] for c in stated if "plain" in c}
    assert {"instability", "grid", "pooled"} <= set(plain)
    for sentence in plain.values():
        assert len(sentence.split()) <= 30, sentence
    pooled = [c for row in grid(board) for c in row if c.dataset == "all" and c.status == STEADIER]
    for cell in pooled:  # a pooled verdict on a cut axis says so in the short sentence too
        if cell.labels:
            assert f"[{', '.join(cell.labels)}]" in plain["pooled"]
    block = results_markdown(board)
    for key, sentence in plain.items():  # README: the plain sentence, the full one as its footnote
        full = next(c["text"] for c in stated if c["id"] == key)
        assert f"{sentence}[^{key}]" in block and f"[^{key}]: {full}" in block


COMMITTED = Path(__file__).parent.parent / "leaderboard" / "leaderboard.json"
PAPER_BOARD = (
    Path(__file__).parent.parent / "leaderboard" / "profiles" / "sago-v1" / "v2-paper" / "leaderboard.json"
)
"""the paper profile's board (two models, SmolLM2 and Gemma 3 270M)."""


@pytest.mark.parametrize("source", ["tripped", "committed", "paper"])
def test_every_finding_has_a_plain_sentence_that_keeps_its_labels_and_drops_the_test(source: str) -> None:
    """Each finding first as one short sentence with its validity labels; the test, n and correction
    only in the full one (the README's footnote, the site's details)."""
    files = {"committed": COMMITTED, "paper": PAPER_BOARD}
    board = _tripped(cut=True, tied=True) if source == "tripped" else LeaderboardDocument.read(files[source])
    stated = claims(board)
    if source == "paper":  # the committed file states the same findings the generator states today
        assert [(c["id"], c.get("plain")) for c in board.to_json()["claims"]] == [
            (c["id"], c["plain"]) for c in stated
        ]
    assert stated and all("plain" in c for c in stated), [c["id"] for c in stated if "plain" not in c]
    names = [m["name"] for m in board.to_json()["models"]]
    for claim in stated:
        plain, full = claim["plain"], claim["text"]
        assert plain_words(plain, names) <= PLAIN_WORDS, plain
        assert plain != full and len(plain) < len(full), claim["id"]
        for label in validity.LABELS:  # a label the full sentence states, the plain one states too
            assert (f"{label}]" in full or f"[{label}" in full) <= (label in plain), (claim["id"], label)
        assert "Holm" not in plain and "sign-flip" not in plain and "((" not in plain, claim["id"]
    block = results_markdown(board)
    for claim in stated:
        assert f"{claim['plain']}[^{claim['id']}]" in block and f"[^{claim['id']}]: {claim['text']}" in block


def test_the_site_lists_every_finding_plain_first_with_the_full_one_in_details() -> None:
    from benchmark.site import findings
    from benchmark.site.board import Board

    board = Board.of(_tripped(cut=True, tied=False).to_json() | {"claims": []})
    pairs = findings.all_claims(board)
    stated = claims(board.document)
    assert pairs == [(c["plain"], c["text"]) for c in stated]
    assert findings.headline_claims(board) == [(c["plain"], c["text"]) for c in stated if c["headline"]]


def test_the_site_headline_shows_the_plain_sentence_with_the_full_one_in_details() -> None:
    from benchmark.site import findings
    from benchmark.site.board import Board

    board = Board.of(_tripped(cut=True, tied=False).to_json() | {"claims": []})
    pairs = findings.headline_claims(board)
    stated = {c["text"]: c for c in claims(board.document) if c["headline"]}
    for sentence, detail in pairs:
        if detail is None:
            assert sentence in stated and "plain" not in stated[sentence]
        else:
            assert stated[detail]["plain"] == sentence
    html = (
        environment()
        .from_string(
            "{% for sentence, detail in headline %}<li>{{ sentence }}{% if detail %}<details>"
            "{{ detail }}</details>{% endif %}</li>{% endfor %}"
        )
        .render(headline=pairs)
    )
    assert html.count("<details>") == sum(d is not None for _, d in pairs) >= 3
