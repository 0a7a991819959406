"""A measure is one registry entry: a toy measure reaches the deltas, leaderboard.json, the site and the docs.

The toy is registered for one test only (``MEASURES.added``); everything after that is the real pipeline
on the synthetic site checkout (tests/helpers/site_tree.py): deltas from records, per-item and dataset
statistics, the leaderboard document, the site build.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.leaderboard_example import validated_submission
from helpers.site_tree import RECORDS, SET, VERSION, make_site_tree

from benchmark import jsonio
from benchmark.axes.measures import (
    MEASURES,
    Measure,
    Pairs,
    all_measures,
    check_measure,
    delta_columns,
    headline_measures,
    measure,
    measure_label,
    measures_markdown,
)
from benchmark.axes.results import write_deltas
from benchmark.axes.scorers import AxisScorers
from benchmark.documents import SummaryDocument
from benchmark.results import SUMMARY_FILE
from benchmark.schema import AXES
from benchmark.site.board import read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.stats.leaderboard import Entry, build_leaderboard
from benchmark.stats.summary import AnalysisOptions, summarize
from benchmark.variants.frozen import load_variant_set


def toy_words(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    """Change in the response's word count against the baseline response."""
    return np.array([len(y.split()) - len(y0.split()) for y, y0 in zip(*pairs.texts(), strict=True)], float)


TOY = Measure(
    name="toy_words",
    axis="generation",
    scale=10.0,
    direction="both",
    label="Toy word count",
    headline=False,
    paper=False,
    description="change in the response's word count",
    delta=toy_words,
)


class SameWords:
    """A model-free PairScorer: share of the reference's words in the candidate."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        return np.array(
            [
                len(set(c.split()) & set(r.split())) / max(1, len(set(r.split())))
                for c, r in zip(candidates, references, strict=True)
            ]
        )


@pytest.fixture
def toy() -> Iterator[Measure]:
    check_measure(TOY)
    with MEASURES.added(TOY.name, TOY):
        yield TOY


def test_the_toy_is_registered_only_inside_the_fixture(toy: Measure) -> None:
    assert all_measures()[-1] is toy and delta_columns()[-2:] == ("delta_toy_words", "correct")
    assert measure_label("toy_words") == "Toy word count"
    assert "| `toy_words` | generation | 10 | either sign |  | ours | Toy word count |" in measures_markdown()
    assert "log p(baseline response \\| prompt)" in measures_markdown()  # a cell never splits the row


def test_outside_the_fixture_the_toy_is_gone() -> None:
    assert "toy_words" not in MEASURES and measure_label("toy_words") == "toy_words"


def test_a_toy_measure_reaches_deltas_leaderboard_and_site(toy: Measure, tmp_path: Path) -> None:
    tree = make_site_tree(tmp_path)
    variants = load_variant_set(SET, VERSION, tree.variants)
    scorers = AxisScorers(SameWords(), SameWords())
    options = AnalysisOptions(resamples=200)
    entries = []
    for slug in sorted(RECORDS):
        results = tree.submissions / slug / "results" / SET / VERSION
        deltas = pd.read_parquet(write_deltas(results, variants.frames(), model=slug, scorers=scorers))
        # deltas: one column, the function's values (item 1's politeness reply of tiny-a is 5 words, not 3)
        assert list(deltas.columns) == list(delta_columns()) and "delta_toy_words" in deltas.columns
        by_row = deltas.set_index(["item_id", "variant_id"])["delta_toy_words"]
        assert by_row[("trivia_qa-0", "baseline/none/0")] == 0.0
        expected = 2.0 if slug == "acme__tiny-a" else 0.0
        assert by_row[("trivia_qa-1", "politeness/prefix/2")] == expected
        summary = SummaryDocument.from_json(
            json.loads(
                jsonio.dumps(summarize(deltas, model=slug, set_name=SET, version=VERSION, options=options))
            )
        )
        submission = validated_submission(slug)
        entries.append(
            Entry(slug, submission, summary, f"submissions/{slug}/results/{SET}/{VERSION}/{SUMMARY_FILE}")
        )
    document = build_leaderboard(entries, set_name=SET, version=VERSION, options=options).to_json()
    # leaderboard.json: declared with its scale and description, and an SGS cell per model
    declared = {m["name"]: m for m in document["measures"]}
    assert declared["toy_words"] == {
        "name": "toy_words",
        "axis": "generation",
        "scale": 10.0,
        "paper": False,
        "headline": False,
        "description": "change in the response's word count",
    }
    assert list(declared)[-1] == "toy_words" and document["headline_measures"] == list(headline_measures())
    toy_cells = [c for c in document["cells"] if c["measure"] == "toy_words" and c["dataset"] == "trivia_qa"]
    assert {c["model"] for c in toy_cells} == set(RECORDS)
    tiny_a = next(c for c in toy_cells if c["model"] == "acme__tiny-a")
    assert tiny_a["sgs"] > 0
    # the site: the methodology table and the item page show the toy under its label
    board_file = tmp_path / "board.json"
    board_file.write_text(jsonio.dumps(document), encoding="utf-8")
    site = tmp_path / "site"
    build_site(SiteInputs(read_board(board_file), tree.submissions, variants), site, progress=False)
    methodology = (site / "methodology.html").read_text(encoding="utf-8")
    assert "Toy word count<br><code>toy_words</code>" in methodology
    item = (site / "items" / "trivia_qa" / "1.html").read_text(encoding="utf-8")
    assert '<span title="toy_words">Toy word count</span> +2.00' in item


@pytest.mark.parametrize(
    "change, message",
    [
        ({"axis": "vibes"}, "axis 'vibes' is not one of"),
        ({"scale": 0.0}, "scale R must be positive"),
        ({"headline": True}, "axis 'generation' already has a headline measure"),
    ],
)
def test_a_bad_declaration_is_refused(change: dict[str, object], message: str) -> None:
    bad = Measure(**{**TOY.__dict__, **change})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        check_measure(bad)


def test_the_decorator_refuses_a_second_measure_of_a_name() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        measure("bleu", axis="generation", scale=1.0, direction="down", label="x", description="x")(toy_words)


def test_every_axis_has_exactly_one_headline_measure() -> None:
    headline_axes = [MEASURES.get(name).axis for name in headline_measures()]
    assert sorted(headline_axes) == sorted(AXES)
