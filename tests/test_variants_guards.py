"""Meaning guards of variant set v2: each test fails when its guard is removed.

Rule families must not edit quotations, names, gold answers or a spelled word; fillers stay away from
numbers; typos make exactly ``strength`` non-dictionary edits; irrelevant sentences hold no numbers;
edits land in the item's own text, not its wrapper; an item's variants never share a text; and the
LLM validator refuses rewrites that drop facts, add meta text, leak the answer or miss the form.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from benchmark.variants import guards, llm, ours, rules
from benchmark.variants import textfacts as tf
from benchmark.variants.build import BuildSpec, _rule_rows, rule_text
from benchmark.variants.families import FAMILIES, RULE_FAMILIES, VariantKey, keys_of
from benchmark.variants.sources import (
    JEOPARDY_TEMPLATE,
    MISCONCEPTIONS_TEMPLATE,
    Item,
    restore_apostrophes,
    sample,
    statement_key,
    trivia_answers,
    unquote_csv,
)

QUOTED = Item(
    "q1",
    'In his essay, Locke says, "The comprehension of our understandings comes short" of things.',
    ("true",),
    MISCONCEPTIONS_TEMPLATE,
)
NAMED = Item(
    "n1", "Sara Jane Moore tried to assassinate which American President in San Francisco?", ("Gerald Ford",)
)
NUMBERS = Item(
    "m1", "Among 12 apples, 3 are bad and 4 are small. How many apples are good and large?", ("5",)
)
SPELLING = Item("s1", "How do you spell the word necessary when writing a formal letter?", ("necessary",))
CLUE = Item(
    "j1",
    "In 1823 James Fenimore Cooper wrote The Pioneers, the first of these tales.",
    ("Leatherstocking Tales",),
    JEOPARDY_TEMPLATE.replace("{category}", "literature"),
)
EDITING = [f for f in RULE_FAMILIES if f not in ("politeness", "format", "irrelevant_suffix")]


def _variants(
    item: Item, families: list[str] | tuple[str, ...] = RULE_FAMILIES
) -> list[tuple[VariantKey, str]]:
    return [(key, rule_text("d", item, key, 42)) for name in families for key in keys_of(FAMILIES.get(name))]


@pytest.mark.parametrize("family", [f for f in EDITING if f not in ("letter_case", "lowercase")])
def test_no_edit_inside_a_quotation(family: str) -> None:
    quote = tf.quoted_spans(QUOTED.text)[0]
    for key, text in _variants(QUOTED, [family]):
        assert quote in text, (key, text)


@pytest.mark.parametrize("family", ["typos", "filler_words", "spacing", "punctuation", "contractions"])
def test_no_edit_inside_a_name(family: str) -> None:
    for key, text in _variants(NAMED, [family]):
        for name in ("Sara Jane Moore", "American President", "San Francisco"):
            assert name in text, (key, text)


def test_fillers_never_next_to_a_number() -> None:
    for key, text in _variants(NUMBERS, ["filler_words"]):
        for filler in ours.FILLERS:
            for match in re.finditer(re.escape(filler), text):
                around = text[max(0, match.start() - 4) : match.end() + 4]
                assert not re.search(r"\d", around), (key, text)


def test_typos_never_touch_the_spelled_word_or_the_answer() -> None:
    for key, text in _variants(SPELLING, ["typos"]):
        assert "necessary" in text, (key, text)


def test_typos_make_exactly_strength_non_dictionary_edits() -> None:
    item = Item("t1", "Which famous composer wrote the opera Carmen during the nineteenth century in Paris?")
    made = 0
    for key, text in _variants(item, ["typos"]):
        if text == item.prompt:
            continue
        made += 1
        before, after = item.prompt.split(), text.split()
        changed = [(a, b) for a, b in zip(before, after, strict=False) if a != b]
        assert len(before) == len(after) and len(changed) == int(key.strength), (key, text)
        for _, word in changed:
            assert not guards.is_word(re.sub(r"[^A-Za-z]", "", word)), (key, word)
    assert made == len(FAMILIES.get("typos").strengths)


def test_typos_refuse_a_strength_they_cannot_make() -> None:
    assert ours.typos("Who won the cup?", "global", 8, np.random.default_rng(0), []) == "Who won the cup?"


def test_irrelevant_sentences_hold_no_numbers() -> None:
    for sentence in ours.IRRELEVANT:
        assert not tf.numbers(sentence), sentence


def test_edits_land_in_the_items_text_not_its_wrapper() -> None:
    head, tail = CLUE.template.split("{text}")
    for key, text in _variants(CLUE, EDITING):
        assert text.startswith(head) and text.endswith(tail), (key, text)
    for key, text in _variants(Item("x", "Is the sky green?", (), MISCONCEPTIONS_TEMPLATE), ["spacing"]):
        if key.place == "prefix":
            assert text.startswith("Is the following statement true or false? "), text


def test_letter_case_changes_a_letter_when_one_can_change() -> None:
    text = "ABCDEFGHIJKLMNOPQRSTUVWXYz"
    out = rules.letter_case(text, "global", 10, np.random.default_rng(0), [])
    assert out != text and out.upper() == text.upper()


def test_an_items_variants_never_share_a_text() -> None:
    for item in (QUOTED, NAMED, NUMBERS, SPELLING, CLUE, Item("short", "WHO?")):
        not_made: dict[str, dict[str, int]] = {}
        rows = _rule_rows("d", [item], 42, not_made)
        texts = [str(r["prompt"]) for r in rows if r["family"] not in ("baseline", "identity")]
        assert len(texts) == len(set(texts)) and item.prompt not in texts
        produced = len(texts) + sum(n for why in not_made.values() for n in why.values())
        assert produced == sum(len(keys_of(FAMILIES.get(f))) for f in RULE_FAMILIES)


def test_statement_and_its_negation_share_a_key() -> None:
    items = [
        Item("1", "Exposure to microwave ovens significantly increases the risk of cancer."),
        Item("2", "Exposure to microwave ovens does not significantly increase the risk of cancer."),
        Item("3", "Fortune cookies were invented in Japan."),
    ]
    assert statement_key(items[0].text) == statement_key(items[1].text) != statement_key(items[2].text)
    assert len(sample(items, None)) == 2


def test_trivia_answers_canonical_first_and_source_artefacts_repaired() -> None:
    answer = {
        "value": "Undertaker",
        "normalized_value": "undertaker",
        "normalized_aliases": ["personas of the undertaker", "undertaker", "the undertaker"],
    }
    assert trivia_answers(answer) == ("Undertaker", "personas of the undertaker", "the undertaker")
    assert (
        unquote_csv('"In which movie did Garbo say, ""I want to be alone""."')
        == 'In which movie did Garbo say, "I want to be alone".'
    )
    assert restore_apostrophes("why wasnt agent matthews in it") == "why wasn't agent matthews in it"


def _job(
    original: str, family: str = "length", strength: float = 2.0, answers: tuple[str, ...] = ()
) -> llm.Job:
    return llm.Job("d", "1", 0, original, answers, family, strength)


@pytest.mark.parametrize(
    ("job", "rewrite", "reason"),
    [
        (
            _job(
                "Darrell and Allen's ages are in the ratio of 7:11. If their total age now is 162, calculate "
                "Allen's age 10 years from now.",
                strength=0.5,
            ),
            "Calculate Allen's age in 10 years.",
            "drops 7",
        ),
        (
            _job("Who was the chief guest of the 2014 Republic Day?"),
            "Here is the rewritten question: Who was the "
            "main invited chief guest at the 2014 Republic Day parade?",
            "meta text",
        ),
        (
            _job("Who wrote Hamlet?", answers=("Shakespeare",)),
            "Who wrote Hamlet, Shakespeare or someone else?",
            "leaks gold answer",
        ),
        (
            _job("Who wrote the play Hamlet?", "form", 1),
            "Who was it that wrote the play Hamlet?",
            "not an instruction",
        ),
        (
            _job("Calculate the total cost of 3 pens at 2 dollars each.", "form", 1),
            "Please calculate the total cost of 3 pens at 2 dollars each.",
            "not a question",
        ),
        (
            _job("Who wrote the famous play Hamlet in England?", strength=3.0),
            "Who wrote the famous play Hamlet in England?!",
            "unchanged",
        ),
        (
            _job(
                "Darrell and Allen's ages are in the ratio of 7:11. If their total age now is 162, calculate "
                "Allen's age 10 years from now.",
                strength=1.5,
            ),
            "To find Allen's age 10 years from now, we can first "
            "use the ratio 7:11 of Darrell's and Allen's ages and their total of 162, then add 10 years.",
            "answers",
        ),
        (
            llm.Job(
                "d",
                "1",
                0,
                "Category: word origins. Clue: Drama is Greek. What is the answer to this clue?",
                (),
                "form",
                1,
                "Drama is Greek.",
                keep=("word origins",),
            ),
            "Find the answer to the clue: drama is Greek.",
            "drops word origins",
        ),
        # word-level guards: each case passes every other check
        (
            _job("Would Avengers Comics be out of place in a DC Comics store?", strength=0.5),
            "Would Avengers Comics fit in a DC Comics store?",
            "adds fit",
        ),
        (
            _job("Can actress Danica McKellar skip astronaut education requirements?", strength=1.5),
            "Could the actress Danica McKellar fulfill all the astronaut education requirements?",
            "drops skip",
        ),
        (
            _job("Will a sloth explode if it is upside down?", strength=1.5),
            "Will a sloth really explode if it is not upside down?",
            "negation changed",
        ),
        (
            _job("Who was the chief guest of the 2014 Republic Day?", strength=1.5),
            "Who was the chief guest of the 2014 Republic Day in New Delhi?",
            "adds New",
        ),
        (
            _job("Who was the chief guest of the 2014 Republic Day?", strength=1.5),
            "Who was the chief guest of the 2014 Republic Day, held on 26 January?",
            "adds 26",
        ),
        (
            _job("Who was the chief guest of the 2014 Republic Day?", "form", 1),
            "Tell me who the famous foreign chief guest of the 2014 Republic Day was.",
            "adds famous",
        ),
        (
            _job("Is sleeping with a fan on fatal?", strength=3.0),
            "Is sleeping with a fan on fatal, given heatstroke, dehydration and various other health issues?",
            "adds 5 content words",
        ),
        (
            _job("In 1823 Cooper wrote The Pioneers, the first of these tales.", strength=0.5),
            "In 1823 Cooper wrote The Pioneers, the first tale.",
            "drops the pointer",
        ),
        (
            _job('Is it true that Locke wrote "the comprehension of our understandings"?', strength=1.5),
            "Is it really true that Locke once wrote about the comprehension of understandings?",
            "drops",
        ),
    ],
)
def test_llm_validator_rejects(job: llm.Job, rewrite: str, reason: str) -> None:
    got = llm.rejection(job, rewrite, 0.99)
    assert got.startswith(reason) or (reason == "unchanged" and got), got


def test_llm_validator_accepts_a_faithful_rewrite() -> None:
    job = _job("Who was the chief guest of the 2014 Republic Day?", strength=2.0)
    rewrite = "Who was the person invited to be the chief guest at the 2014 Republic Day celebrations?"
    assert llm.rejection(job, rewrite, 0.9) == ""
    assert llm.rejection(job, rewrite, llm.MIN_SIMILARITY - 0.01).startswith("similarity")
    form = _job("Who was the chief guest of the 2014 Republic Day?", "form", 1)
    assert llm.rejection(form, "Tell me who the chief guest of the 2014 Republic Day was.", 0.9) == ""


def test_similarity_floor_is_the_calibrated_one() -> None:
    from benchmark.variants.calibration import calibrate
    from benchmark.variants.similarity import minilm

    assert calibrate(minilm()).threshold == llm.MIN_SIMILARITY


def test_a_set_with_thin_llm_families_is_not_frozen(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """v1 froze with 1.9 % of its LLM cells; a release now needs min_llm_coverage of them."""
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    from helpers.variant_build import EchoRewriter, HashEmbedder, fixture_sources

    from benchmark.errors import SagoError
    from benchmark.variants.release import build_release

    spec = BuildSpec("toy", "v2", ("trivia_qa",), n_items=3, llm_items=2, min_llm_coverage=0.95)
    with pytest.raises(SagoError, match=r"only 2 of 12 length/form cells \(17%\) are made"):
        build_release(
            spec, fixture_sources(), HashEmbedder(), root=tmp_path, rewriter=EchoRewriter, progress=False
        )
    assert not (tmp_path / "toy" / "v2").exists()
