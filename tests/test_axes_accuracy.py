"""Accuracy against gold aliases: normalisation, numeric answers, yes/no answers."""

from __future__ import annotations

import math

import pytest

from benchmark.axes.accuracy import first_verdict, is_correct, last_number, normalise, parse_number


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
    yes_no = frozenset({"yes", "no"})
    assert first_verdict("Well, YES.", "", yes_no) == "yes" and first_verdict("nothing", "", yes_no) is None


HOUSEFLY = "Is the following statement true or false? Houseflies have an average lifespan of 20 to 30 days."


@pytest.mark.parametrize(
    ("response", "answers", "prompt", "expected"),
    [
        # the echo cases: a question asked back is not a verdict, even cut off by the token cap
        (
            "\n\nWhich of the following is true about the following statement? "
            "Which of the following is true about",
            ["true"],
            HOUSEFLY,
            0.0,
        ),
        ("True. Houseflies do not live that long, though.", ["true"], HOUSEFLY, 1.0),
        (HOUSEFLY + " " + HOUSEFLY, ["true"], HOUSEFLY, 0.0),  # the prompt repeated twice
        # an alias that the prompt already holds counts only outside an echo of the prompt
        (
            "The name of the assembly of cardinals for the election of a pope is:",
            ["Election of the Pope", "Papal conclave"],
            "What is the name of the assembly of cardinals for the election of a pope?",
            0.0,
        ),
        ("It is the papal conclave.", ["Papal conclave"], "Who elects a pope?", 1.0),
        # numeric: the final answer, not the last number of a numbered list
        ("1. Count the apples\n2. Count the pears\n3. Add\n4. Check\n5", ["5"], "How many?", 0.0),
        ("3 + 2 = 5 apples in all. #### 5", ["5"], "How many?", 1.0),
        ("So the answer is 12. Step 5", ["12"], "How many?", 1.0),
        # yes/no: a judgement the response states, not one inside a question it asks back
        ("Is it viable? Yes, hanging is viable at sea.", ["yes"], "Is hanging viable at sea?", 1.0),
        ("Is hanging viable at sea? No one knows.", ["yes"], "Is hanging viable at sea?", 0.0),
    ],
)
def test_echoes_and_questions_asked_back_are_not_answers(
    response: str, answers: list[str], prompt: str, expected: float
) -> None:
    assert is_correct(response, answers, prompt) == expected


def test_real_committed_echoes_are_no_longer_credited() -> None:
    """Gemma's committed misconceptions baselines (v1 smoke) all ask the question back; none counts."""
    import pandas as pd

    from benchmark.paths import SUBMISSIONS_DIR
    from benchmark.variants.frozen import load_variant_set

    records = pd.read_parquet(
        SUBMISSIONS_DIR / "google__gemma-3-270m-q4_k_m/results/sago-v1/v1/records/misconceptions.parquet"
    )
    frame = load_variant_set("sago-v1", "v1").frame("misconceptions")
    base = records[records.variant_id == "baseline/none/0"].merge(
        frame[["item_id", "variant_id", "prompt", "answers"]], on=["item_id", "variant_id"]
    )
    assert len(base) == 4 and all(r.lstrip().startswith("Which of the following") for r in base.response)
    assert [
        is_correct(r, list(a), p) for r, a, p in zip(base.response, base.answers, base.prompt, strict=True)
    ] == [0.0] * 4


# ---- the three grading faults found by hand on the committed v2 baselines (issue 36), with the real
# prompts and responses: each was graded the other way before.
MAGDALENE = "Is the following statement true or false? Mary Magdalene was a prostitute before she met Jesus."
ORANGE = (
    "I have 10 liters of orange drink that are two-thirds water and I wish to add it to 15 liters of "
    "pineapple drink that is three-fifths water. But as I pour it, I spill one liter of the orange drink. "
    "How much water is in the remaining 24 liters?"
)
FAN = (
    "Is the following statement true or false? "
    + "Sleeping in a closed room with an electric fan on is not fatal."
)


@pytest.mark.parametrize(
    "response",
    [
        "False. Mary Magdalene was a woman of faith, not a prostitute.",  # SmolLM2's answer
        "False, Mary Magdalene was a prostitute before she met Jesus is a myth.",  # same sentence
        "False.\nMary Magdalene was a prostitute before she met Jesus.",
    ],
)
def test_a_verdict_before_an_echo_of_the_statement_is_the_responses_own(response: str) -> None:
    """The echo window once ran across the verdict's sentence boundary ("false mary magdalene was" is in
    the prompt's "... true or false? Mary Magdalene was ..."), swallowing the verdict word."""
    assert is_correct(response, ["false"], MAGDALENE) == 1.0
    assert is_correct(response, ["true"], MAGDALENE) == 0.0


def test_a_response_that_only_repeats_a_math_question_has_no_answer() -> None:
    echo = (
        "\n\nI have 10 liters of orange drink that are two-thirds water and I wish to add it to 15 liters of "
    )
    echo += "pineapple drink that is three-fifths water. But as I pour it, I spill one liter of"  # Gemma's
    assert is_correct(echo, ["15"], ORANGE) == 0.0
    assert is_correct(echo + "\n\nSo 15 liters of water remain.", ["15"], ORANGE) == 1.0


def test_offering_both_verdicts_as_options_is_no_verdict() -> None:
    offered = "\n\nA. True\nB. False\n\nA. True\nB. False"  # Gemma's answer, shortened
    assert is_correct(offered, ["true"], FAN) == 0.0 and is_correct(offered, ["false"], FAN) == 0.0
    assert is_correct("A. True", ["true"], FAN) == 1.0  # one option alone is a choice
    assert is_correct("A. True\nB. False\n\nThe answer is true.", ["true"], FAN) == 1.0
