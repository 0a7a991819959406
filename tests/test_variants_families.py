"""Rule-based families: known outputs, strength scales, and properties over random prompts (hypothesis)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.errors import SagoError
from benchmark.variants import ours, politeness, rules
from benchmark.variants.families import (
    FAMILIES,
    RULE_FAMILIES,
    VariantKey,
    keys_of,
    rng_for,
    rule_variant,
    variant_id,
)

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789'-,", min_size=1, max_size=9)
INSERT_ONLY = ("politeness", "spacing", "punctuation", "filler_words", "format", "irrelevant_suffix")


@st.composite
def prompts(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    """A question-like prompt and a gold answer that is (usually) a run of its words."""
    words = draw(st.lists(WORD, min_size=1, max_size=14))
    start = draw(st.integers(0, len(words) - 1))
    stop = draw(st.integers(start + 1, min(len(words), start + 3)))
    answer = " ".join(words[start:stop])
    extra = draw(st.sampled_from(["", "do not", "it is", "42"]))
    return " ".join(words) + "?", tuple(a for a in (answer, extra) if a)


def _all_keys() -> list[VariantKey]:
    return [key for name in RULE_FAMILIES for key in keys_of(FAMILIES.get(name))]


def _occurrences(text: str, answers: tuple[str, ...]) -> list[str]:
    return [text[a:b] for a, b in rules.protected_spans(text, answers)]


def _is_subsequence(short: str, long: str) -> bool:
    chars = iter(long)
    return all(c in chars for c in short)


@settings(max_examples=60, deadline=None)
@given(prompts(), st.sampled_from(_all_keys()))
def test_same_seed_gives_same_bytes(case: tuple[str, tuple[str, ...]], key: VariantKey) -> None:
    text, answers = case
    first = rule_variant(text, key, dataset="d", item_id="7", answers=answers)
    again = rule_variant(text, key, dataset="d", item_id="7", answers=answers)
    assert first.encode() == again.encode()


@settings(max_examples=150, deadline=None)
@given(prompts(), st.sampled_from([k for k in _all_keys() if FAMILIES.get(k.family).keeps_answers]))
def test_gold_answers_survive_verbatim(case: tuple[str, tuple[str, ...]], key: VariantKey) -> None:
    text, answers = case
    out = rule_variant(text, key, dataset="d", item_id="1", answers=answers)
    for occurrence in _occurrences(text, answers):
        assert occurrence in out, (key, text, out)


@settings(max_examples=150, deadline=None)
@given(prompts(), st.sampled_from([k for k in _all_keys() if k.family in INSERT_ONLY]))
def test_insert_only_families_keep_the_whole_question_in_order(
    case: tuple[str, tuple[str, ...]], key: VariantKey
) -> None:
    text, answers = case
    out = rule_variant(text, key, dataset="d", item_id="2", answers=answers)
    assert _is_subsequence(text, out)
    if key.family != "politeness":  # a polite request may itself be a question ("Could you help?")
        assert out.count("?") == text.count("?")


@settings(max_examples=100, deadline=None)
@given(prompts(), st.sampled_from([k for k in _all_keys() if k.family in ("letter_case", "lowercase")]))
def test_case_families_only_change_case(case: tuple[str, tuple[str, ...]], key: VariantKey) -> None:
    text, answers = case
    out = rule_variant(text, key, dataset="d", item_id="3", answers=answers)
    assert out.lower() == text.lower()


@settings(max_examples=100, deadline=None)
@given(prompts(), st.sampled_from([k for k in _all_keys() if k.family in ("typos", "contractions")]))
def test_word_level_families_keep_digits_and_word_count_bound(
    case: tuple[str, tuple[str, ...]], key: VariantKey
) -> None:
    text, answers = case
    out = rule_variant(text, key, dataset="d", item_id="4", answers=answers)
    assert re.findall(r"\d", out) == re.findall(r"\d", text)
    if key.family == "typos":
        assert len(out.split()) == len(text.split())  # a typo never merges or splits words


def test_spacing_adds_exactly_strength_spaces_at_the_right_place() -> None:
    text = "Who painted the Mona Lisa?"
    assert (
        rule_variant(text, VariantKey("spacing", "prefix", 5), dataset="d", item_id="1", answers=())
        == " " * 5 + text
    )
    assert (
        rule_variant(text, VariantKey("spacing", "suffix", 1), dataset="d", item_id="1", answers=())
        == text + " "
    )
    out = rule_variant(
        text, VariantKey("spacing", "global", 20), dataset="d", item_id="1", answers=["Mona Lisa"]
    )
    assert len(out) == len(text) + 20 and "Mona Lisa" in out and out.split() == text.split()


@pytest.mark.parametrize("strength", [1, 3, 5, 10, 20])
def test_punctuation_adds_strength_marks_never_a_question_mark(strength: int) -> None:
    text = "Who painted the Mona Lisa?"
    for place in ("prefix", "suffix", "global"):
        out = rule_variant(
            text, VariantKey("punctuation", place, strength), dataset="d", item_id="1", answers=()
        )
        added = len(out) - len(text)
        assert added == strength and out.count("?") == 1
        assert all(
            c in rules.PUNCTUATION_MARKS
            for c in (out[:added] if place == "prefix" else out[-added:] if place == "suffix" else "")
        )


# Python rounds halves to even: 2.5 -> 2, 7.5 -> 8; at least one letter is always changed.
@pytest.mark.parametrize(
    ("strength", "half", "whole"), [(10, 1, 2), (25, 2, 5), (50, 5, 10), (75, 8, 15), (100, 10, 20)]
)
def test_letter_case_upper_cases_the_share_of_the_region(strength: int, half: int, whole: int) -> None:
    text = "abcdefghij" + "klmnopqrst"  # 10 letters per half
    for place, region, expected in (
        ("prefix", slice(0, 10), half),
        ("suffix", slice(10, 20), half),
        ("global", slice(0, 20), whole),
    ):
        out = rules.letter_case(text, place, strength, np.random.default_rng(0), [])
        assert sum(c.isupper() for c in out[region]) == expected
        assert sum(c.isupper() for c in out) == expected  # nothing outside the region


def test_typos_touch_neither_first_letters_nor_gold_answers() -> None:
    text = "Which famous Parisian tower was designed by Gustave Eiffel?"
    for seed in range(20):
        out = ours.typos(text, "global", 4, np.random.default_rng(seed), ["Gustave Eiffel"])
        assert out.endswith("Gustave Eiffel?") and out != text
        assert (
            ours.typos(text, "global", 8, np.random.default_rng(seed), ["Gustave Eiffel"]) == text
        )  # 5 words
        assert [w[0] for w in out.split()] == [w[0] for w in text.split()]


def test_contractions_toggle_both_ways_and_keep_capitals() -> None:
    rng = np.random.default_rng(0)
    assert ours.contractions("It is big. Do not go.", "global", 1, rng, []) == "It's big. Don't go."
    assert ours.contractions("Isn't it? I'm here.", "global", 1, rng, []) == "Is not it? I am here."
    assert ours.contractions("It is not here.", "global", 1, rng, ["is not"]) == "It is not here."


def test_filler_lowercase_format_and_suffix_scales() -> None:
    text = "Who Wrote The Odyssey?"
    fillers = ours.filler_words(text, "global", 4, np.random.default_rng(0), [])
    assert sum(fillers.count(f) for f in ours.FILLERS) >= 4
    assert ours.lowercase(text, "global", 50, np.random.default_rng(0), []).count(" ") == 3
    assert (
        sum(w[0].isupper() for w in ours.lowercase(text, "global", 50, np.random.default_rng(0), []).split())
        == 2
    )
    assert [
        ours.format_change(text, "global", s, np.random.default_rng(0), []).count("\n") for s in (1, 2, 3, 4)
    ] == [0, 1, 4, 6]
    suffix = ours.irrelevant_suffix(text, "suffix", 3, np.random.default_rng(0), [])
    assert suffix.startswith(text + " ") and sum(s in suffix for s in ours.IRRELEVANT) == 3


def test_politeness_has_ten_monotone_levels_each_way() -> None:
    for table in (politeness.POLITE, politeness.RUDE):
        assert len(table) == 10 and len({w.prefix for w in table}) == 10
        for low, high in itertools.pairwise(table):
            assert len(high.prefix.split()) >= len(low.prefix.split())
            assert len(high.suffix.split()) >= len(low.suffix.split())
    assert politeness.apply("Q?", "global", 2) == "Hello, please. Q? Thank you."
    assert politeness.apply("Q?", "suffix", -2) == "Q? Be quick."
    with pytest.raises(ValueError):
        politeness.wording(11)


def test_catalogue_matches_the_paper() -> None:
    assert FAMILIES.get("politeness").strengths == (-10, -8, -6, -4, -2, 2, 4, 6, 8, 10)
    assert FAMILIES.get("spacing").strengths == (1, 5, 20, 50, 100)
    assert FAMILIES.get("punctuation").strengths == (1, 3, 5, 10, 20)
    assert FAMILIES.get("letter_case").strengths == (10, 25, 50, 75, 100)
    assert FAMILIES.get("length").strengths == (0.25, 0.5, 1.5, 2, 3)
    paper_rows = sum(len(keys_of(FAMILIES.get(n))) for n in FAMILIES if FAMILIES.get(n).paper)
    assert paper_rows == 81  # "about 81 variants per item" (METHOD.md section 2)
    assert sum(not FAMILIES.get(n).paper for n in FAMILIES) >= 4
    assert variant_id("politeness", "global", -10.0) == "politeness/global/-10"


def test_rng_depends_on_every_part_of_the_variant_identity() -> None:
    base = ("42", "nq", "1", "spacing", "global", 5)
    draw = rng_for(42, "nq", "1", "spacing", "global", 5).integers(0, 2**62)
    for changed in [
        (43, "nq", "1", "spacing", "global", 5),
        (42, "tq", "1", "spacing", "global", 5),
        (42, "nq", "2", "spacing", "global", 5),
        (42, "nq", "1", "punctuation", "global", 5),
        (42, "nq", "1", "spacing", "prefix", 5),
        (42, "nq", "1", "spacing", "global", 20),
    ]:
        assert rng_for(*changed).integers(0, 2**62) != draw, (base, changed)


def test_unknown_family_is_a_one_line_error() -> None:
    with pytest.raises(SagoError, match="did you mean 'spacing'"):
        FAMILIES.get("spacnig")
