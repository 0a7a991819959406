"""Accuracy against gold aliases: normalisation, numeric answers, yes/no answers."""

from __future__ import annotations

import math

import pytest

from benchmark.axes.accuracy import first_yes_no, is_correct, last_number, normalise, parse_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Beatles", "beatles"),
        ("  An   apple, a day! ", "apple day"),
        ("Saint-Étienne", "saint étienne"),
        ("“Quoted” answer.", "quoted answer"),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("response", "answers", "expected"),
    [
        ("I believe it was the Beatles.", ["The Beatles", "Beatles"], 1.0),
        ("It was the Rolling Stones.", ["The Beatles"], 0.0),
        ("THE EIFFEL TOWER!!", ["eiffel tower"], 1.0),
        ("The answer is Parisian cuisine.", ["Paris"], 0.0),  # whole words only
        ("Natalie shares 48 clips in April and 24 in May, so 72 in total.", ["72"], 1.0),
        ("She has 72 clips in April, so the total is 120.", ["72"], 0.0),  # the *last* number counts
        ("The total cost is $1,250.", ["1250"], 1.0),
        ("That makes 2.50 dollars", ["2.5"], 1.0),
        ("There is no number here.", ["3"], 0.0),
        ("Yes, because no bird is a mammal.", ["yes"], 1.0),
        ("No. Yes-men would say otherwise.", ["Yes"], 0.0),  # the *first* yes/no word counts
        ("I know the answer", ["no"], 0.0),  # "know" is not "no"
        ("Maybe.", ["no"], 0.0),
    ],
)
def test_is_correct(response: str, answers: list[str], expected: float) -> None:
    assert is_correct(response, answers) == expected


def test_no_gold_gives_nan() -> None:
    assert math.isnan(is_correct("Paris", []))
    assert math.isnan(is_correct("Paris", ["", "  "]))


def test_number_helpers() -> None:
    assert parse_number("-3.5") == -3.5 and parse_number("12%") == 12.0 and parse_number("12 apples") is None
    assert last_number("from 3 to 1,000,000.") == 1_000_000.0 and last_number("none") is None
    assert first_yes_no("Well, YES.") == "yes" and first_yes_no("nothing") is None
