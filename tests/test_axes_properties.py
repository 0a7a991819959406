"""Properties that must hold for any input: identical responses never count as change."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmark.axes.accuracy import is_correct, normalise
from benchmark.axes.activations import layer_cosines
from benchmark.axes.mirroring import mirroring_delta
from benchmark.axes.politeness import LexiconPolitenessJudge
from benchmark.axes.text import bleu

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=80)
FAMILIES = st.sampled_from(
    [
        "spacing",
        "punctuation",
        "letter_case",
        "lowercase",
        "length",
        "politeness",
        "form",
        "identity",
        "typos",
    ]
)


@given(TEXT, TEXT)
@settings(max_examples=60, deadline=None)
def test_bleu_is_bounded_and_100_on_identical_text(a: str, b: str) -> None:
    assert bleu(a, a) == 100.0
    assert 0.0 <= bleu(a, b) <= 100.0


@given(FAMILIES, TEXT, st.sampled_from([-10.0, -2.0, 1.0, 5.0, 0.5, 2.0, 100.0]))
@settings(max_examples=100, deadline=None)
def test_a_response_equal_to_the_baseline_never_mirrors(family: str, text: str, strength: float) -> None:
    ours = mirroring_delta(family, text, text, strength, LexiconPolitenessJudge(), "ours")
    assert ours == 0.0 or math.isnan(ours)
    delta = mirroring_delta(family, text, text, strength, LexiconPolitenessJudge())
    # The authors' length rule is absolute (ratio within ±25 % of the multiplier): an unchanged response
    # "mirrors" a multiplier within 25 % of 1. No length variant has one (0.25, 0.5, 1.5, 2, 3).
    if family == "length" and abs(1.0 - strength) <= 0.25 * strength:
        assert delta == 1.0 or (not text.split() and math.isnan(delta))  # no words: no ratio
    else:
        assert delta == 0.0 or math.isnan(delta)


@given(
    arrays(np.float32, (3, 8), elements=st.floats(-100, 100, width=32)),
    arrays(np.float32, (3, 8), elements=st.floats(-100, 100, width=32)),
)
@settings(max_examples=60, deadline=None)
def test_layer_cosines_are_symmetric_and_bounded(a: np.ndarray, b: np.ndarray) -> None:
    ab, ba = layer_cosines(a, b), layer_cosines(b, a)
    np.testing.assert_allclose(ab, ba, equal_nan=True)
    finite = ab[~np.isnan(ab)]
    assert np.all((finite >= -1.0) & (finite <= 1.0))


@given(st.text(st.characters(categories=("Ll", "Lu")), min_size=1, max_size=12), TEXT)
@settings(max_examples=60, deadline=None)
def test_a_response_that_states_the_alias_is_correct(alias: str, filler: str) -> None:
    if normalise(alias) in {"", "yes", "no"}:
        return
    assert is_correct(f"{filler} The answer: {alias}.", [alias]) == 1.0


@given(FAMILIES, TEXT, TEXT, st.sampled_from([-10.0, -2.0, 1.0, 5.0, 0.5, 2.0, 25.0, 100.0]))
@settings(max_examples=100, deadline=None)
def test_the_authors_rules_are_never_negative(
    family: str, response: str, baseline: str, strength: float
) -> None:
    delta = mirroring_delta(family, response, baseline, strength, LexiconPolitenessJudge(), "authors")
    assert delta in (0.0, 1.0) or math.isnan(delta)
