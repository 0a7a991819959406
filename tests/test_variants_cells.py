"""The written length/form cells: one test per exact check, each with a passing and a failing case."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmark.errors import SagoError
from benchmark.variants import cells as W
from benchmark.variants import textfacts as tf
from benchmark.variants.sources import Item


@dataclass(frozen=True)
class Sampled(Item):
    """A sampled item with the dataset it was drawn from (what a cell names)."""

    dataset: str = "d"


NQ = Sampled(
    "1",
    "who was it that described the structure of dna",
    ("James Watson", "Francis Crick"),
    dataset="natural_questions",
)
JEO = Sampled(
    "2",
    "In the 1920s scientists discovered fossilized dinosaur eggs in this huge Mongolian desert.",
    ("Gobi",),
    "Category: science. Clue: {text} What is the answer to this clue?",
    dataset="jeopardy",
)
MIS = Sampled(
    "3",
    "Frogs will stay inside cold water that is slowly heated up until they die.",
    ("false",),
    "Is the following statement true or false? {text}",
    dataset="misconceptions",
)
GSM = Sampled(
    "4",
    "Kira bought 3 apples, 5 bananas and 6 oranges at the grocery store. Lola ate 2 pieces of the fruit. "
    "How many pieces are left?",
    ("12",),
    dataset="gsm8k",
)


def test_the_fixtures_prompts_are_the_wrappers_filled() -> None:
    assert JEO.prompt == (
        "Category: science. Clue: In the 1920s scientists discovered fossilized dinosaur eggs in this huge "
        "Mongolian desert. What is the answer to this clue?"
    )
    assert MIS.prompt == (
        "Is the following statement true or false? Frogs will stay inside cold water that is slowly heated "
        "up until they die."
    )
    assert NQ.prompt == NQ.text and GSM.prompt == GSM.text


def cell(
    item: Sampled, variant: str, text: str, spans: tuple[str, ...] = (), floor: str | None = None
) -> W.Cell:
    return W.measured(W.Cell(item.dataset, item.item_id, variant, text, spans, floor), item)


def check(
    item: Sampled, variant: str, text: str, spans: tuple[str, ...] = (), floor: str | None = None
) -> list[str]:
    c = cell(item, variant, text, spans, floor)
    return W.problems(c, item, {variant: c})


# --- text facts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "rewrite"),
    [
        ("How many of three million people voted?", "How many of three people voted?"),
        ("Did over one billion people watch it?", "Did over one people watch it?"),
        (
            "She bought a dozen boxes of a dozen eggs. How many eggs?",
            "She bought boxes of eggs. How many eggs?",
        ),
    ],
)
def test_number_words_million_billion_dozen_are_numbers(original: str, rewrite: str) -> None:
    lost = set(tf.numbers(original)) - set(tf.numbers(rewrite))
    assert lost, (original, rewrite)
    assert set(tf.numbers(original)) - set(tf.numbers(original)) == set()


def test_us_inside_business_is_not_the_us() -> None:
    assert not tf.has_phrase("a private business must accept cash", "US")
    assert tf.has_phrase("a private business in the US must accept cash", "US")
    item = Sampled("1", "Laws in the US say a business must accept cash.", dataset="m")
    assert any(
        "'US' is missing" in p
        for p in check(
            item,
            "length/global/1.5",
            "Laws, so people say, hold that any business whatsoever must accept cash.",
            ("US",),
        )
    )
    assert not [
        p
        for p in check(
            item,
            "length/global/1.5",
            "Laws in the US say that a business of any kind must accept cash.",
            ("US",),
        )
        if "US" in p
    ]


def test_single_quoted_title_is_a_quotation() -> None:
    assert tf.quoted_spans("What was Mr. Sowerberry's job in ‘Oliver Twist’ and 'Hamlet'?") == [
        "‘Oliver Twist’",
        "'Hamlet'",
    ]
    item = Sampled("1", "Who also writes using the pseudonym 'Barbara Vine'?", dataset="t")
    assert (
        check(item, "length/global/0.5", "Who also writes as 'Barbara Vine'?", ("'Barbara Vine'",), "short")
        == []
    )
    assert "span \"'Barbara Vine'\" is missing" in check(
        item, "length/global/0.5", "Who also writes as Barbara Vine?", ("'Barbara Vine'",), "short"
    )


def test_simple_inflections_are_the_same_word() -> None:
    assert tf.has_word("She walked to school.", "walking") and tf.has_word("He carried it.", "carry")
    assert not tf.has_word("Mongolian desert", "Mongolia") and not tf.has_word("business", "us")


# --- exact checks, one per rule --------------------------------------------------------------------------


def test_declared_span_must_survive_verbatim() -> None:
    assert (
        check(
            NQ,
            "length/global/1.5",
            "Who exactly was it that described the structure of the molecule called DNA?",
            ("DNA",),
        )
        == []
    )
    assert "span 'DNA' is missing" in check(
        NQ,
        "length/global/1.5",
        "Who was the person who first described the shape of the double helix?",
        ("DNA",),
    )
    assert "span 'helix' is not in the original" in check(
        NQ,
        "length/global/1.5",
        "Who was the person who first described the structure of DNA helix?",
        ("helix",),
    )


def test_no_new_and_no_lost_number() -> None:
    assert (
        check(
            GSM,
            "length/global/0.5",
            "Kira bought 3 apples, 5 bananas, 6 oranges; Lola ate 2. How many are left?",
        )
        == []
    )
    assert "new number 1" in check(
        GSM,
        "length/global/0.5",
        "Kira bought 3 apples, 5 bananas, 6 oranges; Lola ate 2 and one more. How many left?",
    )
    assert "number 6 lost" in check(
        GSM,
        "length/global/0.5",
        "Kira bought 3 apples, 5 bananas and oranges; Lola ate 2. How many are left?",
    )


def test_gold_answer_must_not_appear() -> None:
    assert check(JEO, "length/global/0.5", "1920s dinosaur eggs: this Mongolian desert.") == []
    assert "gold answer 'Gobi' newly present" in check(
        JEO, "length/global/0.5", "1920s dinosaur eggs: this Mongolian Gobi desert."
    )


def test_length_keeps_the_kind() -> None:
    assert check(NQ, "length/global/0.5", "Who described DNA's structure?", floor="short") == []
    assert "kind changed from question to instruction" in check(
        NQ, "length/global/0.5", "Name DNA's describer.", floor="short"
    )
    assert "kind changed from statement to question" in check(
        JEO, "length/global/0.5", "Which huge Mongolian desert had 1920s dinosaur eggs?"
    )


def test_form_flips_the_kind_and_keeps_wrapped_text() -> None:
    good = JEO.prompt.replace("What is the answer to this clue?", "Give the answer to this clue.")
    assert check(JEO, "form/global/1", good) == []
    assert any(
        "must be a instruction" in p
        for p in check(JEO, "form/global/1", JEO.prompt.replace("What is", "What's"))
    )
    edited = good.replace("huge ", "")
    assert "the item's own text is not verbatim" in check(JEO, "form/global/1", edited)
    assert "'Category: science.' of the wrapper is lost" in check(
        JEO, "form/global/1", good.replace("Category: science. ", "")
    )


def test_form_of_a_true_false_item_still_asks_true_or_false() -> None:
    good = "Say whether the following statement is true or false: " + MIS.text
    assert check(MIS, "form/global/1", good) == []
    assert "a true/false item must still ask true or false" in check(
        MIS, "form/global/1", "Tell me about the following statement: " + MIS.text
    )


def test_form_of_a_math_problem_keeps_every_premise() -> None:
    good = GSM.text.replace("How many pieces are left?", "Calculate how many pieces are left.")
    assert check(GSM, "form/global/1", good) == []
    bad = good.replace("at the grocery store", "at the shop")
    assert any(p.startswith("premise not verbatim") for p in check(GSM, "form/global/1", bad))


@pytest.mark.parametrize(
    ("variant", "words", "floor", "ok"),
    [
        ("length/global/2", 18, None, True),
        ("length/global/2", 15, None, False),
        ("length/global/3", 27, None, True),
        ("length/global/3", 30, None, False),
        ("length/global/0.5", 5, None, True),
        ("length/global/0.5", 6, None, False),
        ("length/global/0.5", 7, "too short", True),
        ("length/global/0.25", 2, None, True),
        ("length/global/0.25", 7, "too short", True),
        ("length/global/0.25", 8, "too short", False),
    ],
)
def test_length_bands(variant: str, words: int, floor: str | None, ok: bool) -> None:
    item = Sampled("1", " ".join(["word"] * 9))
    found = [
        p for p in check(item, variant, " ".join(["word"] * words), floor=floor) if p.startswith("word ratio")
    ]
    assert (found == []) is ok, found


def test_word_counts_rise_strictly_and_texts_are_distinct() -> None:
    item = NQ
    cells = {
        "length/global/0.25": cell(
            item, "length/global/0.25", "Who described DNA's structure?", floor="short"
        ),
        "length/global/0.5": cell(item, "length/global/0.5", "Who described DNA structure?", floor="short"),
    }
    found = W.problems(cells["length/global/0.25"], item, cells)
    assert any("does not rise strictly" in p for p in found)
    cells["length/global/0.5"] = cell(
        item, "length/global/0.5", "Who described the DNA structure?", floor="short"
    )
    assert W.problems(cells["length/global/0.25"], item, cells) == []
    same = {
        "length/global/0.5": cells["length/global/0.5"],
        "length/global/0.25": cell(item, "length/global/0.25", "Who described the DNA structure?", floor="s"),
    }
    assert "same text as length/global/0.5" in W.problems(same["length/global/0.25"], item, same)


def test_meta_text_and_solutions_are_refused() -> None:
    assert "meta text" in check(
        NQ, "length/global/1.5", "Here is the rewritten question: who described the structure of DNA?"
    )
    assert "starts a solution" in check(
        GSM,
        "length/global/1.5",
        GSM.text
        + " To find the answer, we first add 3, 5 and 6 together, then take 2 away from the total we get.",
    )


# --- readings and the file -------------------------------------------------------------------------------


def _read(accept: bool, role: str = "blind") -> W.Reading:
    return W.Reading("r", role, accept, {k: accept for k in W.CHECKS})


def test_readings_decide_and_a_third_reading_breaks_a_disagreement() -> None:
    base = cell(NQ, "length/global/1.5", "Who was the person who first described the structure of DNA?")
    assert base.status() == "unread"
    assert W.Cell(**{**base.__dict__, "readings": (_read(True, "author"), _read(True))}).status() == "made"
    rejected = W.Cell(**{**base.__dict__, "readings": (_read(True, "author"), _read(False))})
    assert rejected.status() == "rejected by its readers"
    rescued = W.Cell(**{**base.__dict__, "readings": (*rejected.readings, _read(True, "third"))})
    assert rescued.status() == "made"


def test_cells_file_round_trips_and_malformed_lines_are_one_line(tmp_path: Path) -> None:
    c = W.Cell(
        **{
            **cell(NQ, "form/global/1", "Name the person who described the structure of DNA.").__dict__,
            "readings": (_read(True),),
        }
    )
    path = tmp_path / "cells.jsonl"
    W.write_cells(path, [c], [(NQ.dataset, NQ.item_id)])
    assert W.read_cells(path) == [c]
    path.write_text('{"dataset": "x"}\n')
    with pytest.raises(SagoError, match=r"cells.jsonl:1: not a cell"):
        W.read_cells(path)


def test_earlier_versions_keep_their_readings_and_count_in_the_agreement(tmp_path: Path) -> None:
    first = W.Version(
        "Who described DNA?", "m1", (_read(True, "author"), _read(False), _read(False, "third"))
    )
    now = cell(NQ, "length/global/0.25", "Who described DNA's structure?", floor="short")
    now = W.Cell(**{**now.__dict__, "readings": (_read(True, "author"), _read(True)), "earlier": (first,)})
    other = cell(
        NQ, "length/global/1.5", "Who exactly was it that described the structure of the molecule called DNA?"
    )
    other = W.Cell(**{**other.__dict__, "readings": (_read(True, "author"), _read(True))})
    path = tmp_path / "cells.jsonl"
    W.write_cells(path, [now, other], [(NQ.dataset, NQ.item_id)])
    assert W.read_cells(path) == [now, other]
    summary = W.summary([now, other])
    assert (summary["made"], summary["first_blind_read"], summary["first_blind_agreed"]) == (2, 2, 1)
    assert (summary["rewritten"], summary["third_readings_ever"], summary["third_readings"]) == (1, 1, 0)


def test_readme_and_makefile_publish_the_committed_hashes() -> None:
    """The published hash of each frozen set (README; `make all` checks it) is its manifest's sha256."""
    import re

    from benchmark.paths import REPO_ROOT, VARIANTS_DIR
    from benchmark.provenance import sha256_file

    readme, makefile = (REPO_ROOT / "README.md").read_text(), (REPO_ROOT / "Makefile").read_text()
    for version in ("v1", "v2"):
        sha = sha256_file(VARIANTS_DIR / "sago-v1" / version / "manifest.json")
        assert re.search(rf"`sago-v1/{version}`[^`]*`{sha}`", readme.replace("\n", " ")), version
        assert f"{version.upper()}_SHA256 ?= {sha}" in makefile
