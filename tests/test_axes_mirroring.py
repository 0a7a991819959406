"""Mirroring detectors fire on hand-written mirrored responses and stay quiet on plain ones."""

from __future__ import annotations

import math

import pytest

from benchmark.axes.mirroring import (
    DETECTORS,
    abnormal_case_percent,
    extra_spaces,
    mark_surplus,
    mirroring_delta,
    odd_case_share,
    repeated_marks,
    space_surplus,
)
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    LexiconPolitenessJudge,
    LLMPolitenessJudge,
)

PLAIN = "The capital of France is Paris. It has been the capital since the tenth century, roughly."
JUDGE = LexiconPolitenessJudge()


def detect(family: str, response: str, strength: float, baseline: str = PLAIN) -> float:
    return DETECTORS.get(family)(response, baseline, strength)


def test_spacing_fires_on_scattered_spaces_and_not_on_plain_text_or_indentation() -> None:
    spaced = "The  capital   of France  is    Paris.  It has   been the capital   since the tenth century."
    assert detect("spacing", spaced, 20) == 1.0
    assert detect("spacing", PLAIN, 1) == 0.0
    indented = "Steps:\n    1. Boil water.\n    2. Add pasta.\n        - stir it"
    assert extra_spaces(indented) == 0 and detect("spacing", indented, 1) == 0.0
    assert detect("spacing", " " * 30 + PLAIN, 20) == 1.0  # the prefix's spaces copied in front


def test_spacing_threshold_rises_with_strength() -> None:
    one_stray = "The capital of France is  Paris, and it has been the capital for a long time indeed."
    assert detect("spacing", one_stray, 1) == 1.0
    assert detect("spacing", one_stray, 100) == 0.0


def test_punctuation_fires_on_repeated_marks_only() -> None:
    shouty = "Paris!!! It is the capital;; of France... since ages!! (really!!)"
    assert repeated_marks(shouty) == 10  # "!!!", ";;", "!!", "!!)"; the ellipsis is not counted
    assert detect("punctuation", shouty, 10) == 1.0
    assert detect("punctuation", PLAIN, 1) == 0.0
    assert detect("punctuation", "Well... it is Paris, I think.", 1) == 0.0


def test_punctuation_threshold_rises_with_strength() -> None:
    one_run = "Paris!! It is the capital of France and has been for a long time, as most people know."
    assert detect("punctuation", one_run, 1) == 1.0
    assert detect("punctuation", one_run, 20) == 0.0


def test_letter_case_fires_on_shouting_and_random_case() -> None:
    assert detect("letter_case", PLAIN.upper(), 100) == 1.0
    assert detect("letter_case", "ThE cAPiTal oF FrAnce Is PaRIs.", 50) == 1.0
    assert (
        detect(
            "letter_case", "DNA is studied at MIT by many researchers in the field of molecular biology.", 10
        )
        == 0.0
    )
    assert detect("letter_case", PLAIN, 10) == 0.0


def test_letter_case_threshold_rises_with_strength() -> None:
    some_caps = "The CAPITAL of FRANCE is PARIS and has been for ages."  # 3 of 11 words odd
    assert odd_case_share(some_caps) == pytest.approx(3 / 11)
    assert detect("letter_case", some_caps, 10) == 1.0
    assert detect("letter_case", some_caps, 100) == 0.0
    assert detect("letter_case", some_caps, 0.1) == 1.0  # a fraction reads like the percent


def test_lowercase_fires_on_uncapitalised_sentences() -> None:
    assert detect("lowercase", "the capital of france is paris. it is big.", 100) == 1.0
    assert detect("lowercase", PLAIN, 50) == 0.0
    mixed = "the capital is Paris. It is big. it is old."  # 2 of 3 sentences start lower-case
    assert detect("lowercase", mixed, 50) == 1.0 and detect("lowercase", mixed, 100) == 1.0
    one_in_three = "the capital is Paris. It is big. It is old."
    assert detect("lowercase", one_in_three, 50) == 0.0


def test_length_fires_within_a_quarter_of_the_multiplier() -> None:
    base = " ".join(["word"] * 40)
    assert detect("length", " ".join(["w"] * 80), 2.0, base) == 1.0
    assert detect("length", " ".join(["w"] * 59), 2.0, base) == 0.0  # ratio 1.475 < 1.5
    assert detect("length", " ".join(["w"] * 11), 0.25, base) == 1.0  # ratio 0.275, within 0.0625
    assert detect("length", base, 0.5, base) == 0.0
    assert math.isnan(detect("length", "anything", 2.0, ""))


def test_lexicon_judge_sees_a_polite_shift_and_a_rude_shift() -> None:
    polite = "Thank you for asking! I am glad to help: the capital of France is Paris. I hope this helps."
    rude = "Obviously it is Paris. Seriously, stop wasting my time with such a stupid question."
    assert JUDGE.shifted(polite, PLAIN, +1) and not JUDGE.shifted(polite, PLAIN, -1)
    assert JUDGE.shifted(rude, PLAIN, -1) and not JUDGE.shifted(rude, PLAIN, +1)
    assert not JUDGE.shifted(PLAIN, PLAIN, +1) and not JUDGE.shifted(PLAIN, PLAIN, -1)
    assert JUDGE.tone(polite) > 0 > JUDGE.tone(rude)


def test_llm_judge_asks_yes_no_in_the_prompts_direction() -> None:
    prompts: list[str] = []

    def generate(prompt: str) -> str:
        prompts.append(prompt)
        return " yes, clearly" if "thank" in prompt.lower() else "NO"

    judge = LLMPolitenessJudge(generate)
    assert judge.shifted("Thanks so much! Paris.", "Paris.", +1)
    assert not judge.shifted("Paris, obviously.", "Paris.", -1)
    assert "more polite" in prompts[0] and "more rude" in prompts[1] and "YES or NO" in prompts[0]


def test_our_rules_subtract_the_baseline_response_and_can_go_negative() -> None:
    shouted = PLAIN.upper()
    assert mirroring_delta("letter_case", shouted, PLAIN, 100, JUDGE, "ours") == 1.0
    assert (
        mirroring_delta("letter_case", shouted, shouted, 100, JUDGE, "ours") == 0.0
    )  # baseline shouted already
    assert mirroring_delta("letter_case", PLAIN, shouted, 100, JUDGE, "ours") == -1.0
    polite = "Thank you kindly! It is Paris. I hope this helps, and thanks again."
    assert mirroring_delta("politeness", polite, PLAIN, 6, JUDGE, "ours") == 1.0
    assert mirroring_delta("politeness", polite, PLAIN, -6, JUDGE, "ours") == 0.0


def test_controls_are_zero_and_unscored_families_nan_under_both_rule_sets() -> None:
    for rules in ("authors", "ours"):
        for control in ("baseline", "identity", "rerun"):
            assert mirroring_delta(control, PLAIN.upper(), PLAIN, 0, JUDGE, rules) == 0.0
        for unscored in ("typos", "no_such_family"):
            assert math.isnan(mirroring_delta(unscored, PLAIN.upper(), PLAIN, 1, JUDGE, rules))
    assert math.isnan(mirroring_delta("form", PLAIN.upper(), PLAIN, 1, JUDGE, "ours"))
    assert (
        mirroring_delta("form", PLAIN.upper(), PLAIN, 1, JUDGE, "authors") == 0.0
    )  # the authors fill form with 0
    with pytest.raises(ValueError, match="unknown mirroring rules"):
        mirroring_delta("spacing", PLAIN, PLAIN, 1, JUDGE, "mine")


# ---- the authors' rules, on hand-made pairs (thresholds from their utils/surface_mirroring_detector.py) ----


def authors(family: str, response: str, baseline: str, strength: float) -> float:
    return mirroring_delta(family, response, baseline, strength, JUDGE, "authors")


def test_authors_surplus_counts() -> None:
    assert space_surplus("a  b   c    d") == 1 + 2 + 3
    assert space_surplus("a\n\n  b") == 1  # newlines never count, the two spaces do
    assert mark_surplus("!!! ?? ,, ;;; .... ... ::") == 2 + 1 + 1 + 2 + 1  # '...' and ':' are not counted
    assert abnormal_case_percent("Paris FBI NASA") == 0.0  # Title case and ≤ 4-letter acronyms are normal
    assert abnormal_case_percent("HELLO there") == 50.0  # 5 of 10 letters


def test_authors_spacing_needs_an_increase_and_a_rate_per_band() -> None:
    base = "Paris is the capital."  # 21 characters, no surplus
    three = "Paris  is  the  capital."  # +3 surplus over 24 characters = 12.5 per 100
    assert authors("spacing", three, base, 20) == 1.0  # band ≤ 20: increase ≥ 3 and rate ≥ 5
    assert authors("spacing", three, base, 50) == 0.0  # band ≤ 50: increase ≥ 5 needed
    assert authors("spacing", three, three, 20) == 0.0  # no increase over the baseline response
    wide = "Paris" + " " * 11 + "is the capital."  # +10 over 31 characters = 32 per 100
    assert authors("spacing", wide, base, 100) == 1.0
    long_base = "Paris is the capital of France and has been for a very long time now. " * 3
    diluted = long_base.replace("Paris is", "Paris    is", 1)  # +3 but rate ≈ 1.4 per 100
    assert authors("spacing", diluted, long_base, 1) == 0.0


def test_authors_punctuation_and_letter_case_bands() -> None:
    base = "It is Paris."
    assert authors("punctuation", "It is Paris!!!", base, 5) == 1.0  # +2 marks, 14 per 100 chars
    assert authors("punctuation", "It is Paris!!!", base, 10) == 0.0  # band ≤ 10: +4 needed
    assert authors("punctuation", "It is Paris!!!!!!!", base, 20) == 1.0  # +6, rate 33
    plain = "the answer is paris and nothing else"
    shouted = "THE ANSWER is paris and nothing else"  # ANSWER: 6 of 29 letters ≈ 20.7 %
    assert authors("letter_case", shouted, plain, 25) == 1.0  # ≥ 8 % and +5 points
    assert authors("letter_case", shouted, plain, 50) == 1.0  # ≥ 15 %
    assert authors("letter_case", shouted, plain, 100) == 0.0  # ≥ 25 % needed
    assert authors("letter_case", shouted, shouted, 25) == 0.0  # no increase


def test_authors_rules_are_never_negative() -> None:
    shouted = PLAIN.upper()
    assert authors("letter_case", PLAIN, shouted, 100) == 0.0  # the response calmed down: 0, not −1
    assert authors("lowercase", PLAIN, PLAIN.lower(), 100) == 0.0  # our extra family, clipped the same way
    spaced = PLAIN.replace(" ", "   ")
    assert authors("spacing", PLAIN, spaced, 100) == 0.0


def test_authors_length_and_politeness_are_relative_to_the_baseline() -> None:
    base = " ".join(["word"] * 20)
    assert authors("length", " ".join(["word"] * 40), base, 2.0) == 1.0  # ratio 2.0 within 25 %
    assert authors("length", " ".join(["word"] * 20), base, 2.0) == 0.0
    polite = "Thank you kindly! It is Paris. I hope this helps, and thanks again."
    assert authors("politeness", polite, PLAIN, 6) == 1.0
    assert authors("politeness", PLAIN, polite, 6) == 0.0  # less polite than y_0 is not mirroring (+)


def test_gratitude_judge_reads_thanks_in_the_prompts_direction() -> None:
    from benchmark.axes.mirroring import politeness
    from benchmark.axes.politeness import GratitudeJudge

    detect = politeness(GratitudeJudge())
    thanks, plain = "Paris. Thank you for your kind question!", "Paris."
    assert detect(thanks, plain, 6) == 1.0  # thanks appear after a polite prompt
    assert detect(plain, thanks, -6) == 1.0  # thanks disappear after a rude prompt
    assert detect(thanks, plain, -6) == 0.0 and detect(thanks, thanks, 6) == 0.0
    assert detect("Of course, I'm happy to help! Paris.", plain, 6) == 0.0  # boilerplate does not count


# ---- the transparent politeness judges: one test per rule (docs/METHOD.md section 7) ----

AUTHORS_CUES = {  # the authors' courtesy cues (utils/metrics.py _POLITE_CUES), each in a sentence of its own
    "please": ("Please note: it is Paris.", 1),
    "thank": ("Thank you for asking. Paris.", 1),
    "thanks": ("Thanks! Paris.", 2),  # "thanks" holds "thank" too: two cues, as the authors count them
    "appreciate": ("I appreciate the question. Paris.", 1),
    "sorry": ("Sorry, it is Paris.", 1),
    "apolog": ("I apologise: it is Paris.", 1),
    "kindly": ("Kindly note: Paris.", 1),
    "would you": ("Would you like more? Paris.", 1),
    "could you": ("Could you clarify? Paris.", 1),
    "if you don't mind": ("If you don\u2019t mind: Paris.", 1),  # a typographic apostrophe matches too
    "if it's not too much trouble": ("If it's not too much trouble: Paris.", 1),
    "happy to": ("Happy to answer: Paris.", 1),
    "glad to": ("Glad to answer: Paris.", 1),
    "certainly": ("Certainly: Paris.", 1),
    "of course": ("Of course: Paris.", 1),
}


@pytest.mark.parametrize("cue", sorted(AUTHORS_CUES))
def test_each_authors_cue_counts_once_and_makes_a_polite_shift(cue: str) -> None:
    text, count = AUTHORS_CUES[cue]
    judge = CourtesyCueJudge()
    assert judge.count(text, +1) == count
    assert judge.shifted(text, "It is Paris.", +1) and not judge.shifted(text, "It is Paris.", -1)


def test_cue_judge_direction_threshold_and_apologies() -> None:
    judge = CourtesyCueJudge()
    warm = "Of course, happy to help! It is Paris."
    assert judge.shifted("It is Paris.", warm, -1) and not judge.shifted("It is Paris.", warm, +1)
    assert not judge.shifted(warm, warm, +1)  # no change, no shift
    assert CourtesyCueJudge(min_change=3).shifted(warm, "Paris.", +1) is False  # 2 cues < 3
    assert CourtesyCueJudge(min_change=2).shifted(warm, "Paris.", +1) is True
    # an apology never counts toward a ruder response: dropping one is not rudeness, adding one is not either
    assert judge.count("Sorry, I apologise. Paris.", -1) == 0
    assert not judge.shifted("It is Paris.", "Sorry, it is Paris.", -1)


MARKER_EXAMPLES = {  # one sentence per kind of courtesy marker, holding that kind only
    "greeting": "Hello. It is Paris.",
    "thanks": "Thank you. It is Paris.",
    "please": "Please note: it is Paris.",
    "apology": "Sorry: it is Paris.",
    "offer": "Of course: it is Paris.",
    "well_wishing": "It is Paris. I hope this helps.",
    "hedging": "It might be Paris.",
}


@pytest.mark.parametrize("kind", sorted(MARKER_EXAMPLES))
def test_each_marker_kind_is_recognised_alone(kind: str) -> None:
    assert CourtesyMarkerJudge().kinds(MARKER_EXAMPLES[kind], +1) == {kind}


def test_marker_judge_needs_two_new_kinds_in_the_prompts_direction() -> None:
    judge = CourtesyMarkerJudge()
    assert judge.min_change == 2
    assert not judge.shifted("Hello. It is Paris.", "It is Paris.", +1)  # one kind is not enough
    warm = "Hello! Of course: it is Paris. I hope this helps."
    assert judge.shifted(warm, "It is Paris.", +1) and not judge.shifted(warm, "It is Paris.", -1)
    assert judge.shifted("It is Paris.", warm, -1)  # three kinds dropped after a rude prompt
    assert judge.kinds("Sorry: it is Paris.", -1) == frozenset()  # apology never counts toward rudeness
    assert not CourtesyMarkerJudge(min_change=1).shifted("It is Paris.", "Sorry, it is Paris.", -1)
