"""Accuracy beside the stability axes: does a response contain a gold answer?

Three kinds of gold answer, decided from the aliases themselves:
- numbers (gsm8k-style): the *last* number in the response must equal one of them numerically;
- yes/no: the *first* yes/no word of the response must match;
- anything else: some normalised alias must appear, as whole words, in the normalised response.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation + "‘’“”"})
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_YES_NO = re.compile(r"\b(yes|no)\b")


def normalise(text: str) -> str:
    """Lower-case, drop punctuation and articles, collapse whitespace (SQuAD-style).

    >>> normalise("  The Eiffel-Tower!  ")
    'eiffel tower'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def parse_number(text: str) -> float | None:
    """A number written as an answer ("1,234", "-3.5", "$12"), or None when it is not one.

    >>> parse_number("1,234"), parse_number("$12"), parse_number("twelve")
    (1234.0, 12.0, None)
    """
    cleaned = text.strip().lstrip("$€£").rstrip("%").strip()
    if not _NUMBER.fullmatch(cleaned):
        return None
    return float(cleaned.replace(",", ""))


def last_number(text: str) -> float | None:
    """The last number written in ``text`` (gsm8k convention: the final answer comes last)."""
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "").rstrip(".")) if found else None


def first_yes_no(text: str) -> str | None:
    """The first standalone "yes" or "no" in ``text``, lower-cased."""
    match = _YES_NO.search(text.lower())
    return match.group(1) if match else None


def is_correct(response: str, answers: Sequence[str]) -> float:
    """1.0 when ``response`` matches a gold answer, 0.0 when not, NaN without gold answers.

    >>> is_correct("It is Paris, of course.", ["paris"]), is_correct("So the total is 1,200.", ["1200"])
    (1.0, 1.0)
    >>> is_correct("No, it is not.", ["yes"]), is_correct("anything", [])
    (0.0, nan)
    """
    golds = [a for a in answers if a and a.strip()]
    if not golds:
        return math.nan
    numbers = [parse_number(a) for a in golds]
    if all(n is not None for n in numbers):
        found = last_number(response)
        return float(
            found is not None and any(math.isclose(found, n, abs_tol=1e-6) for n in numbers if n is not None)
        )
    if {normalise(a) for a in golds} <= {"yes", "no"}:
        return float(first_yes_no(response) in {normalise(a) for a in golds})
    padded = f" {normalise(response)} "
    return float(any(f" {alias} " in padded for alias in map(normalise, golds) if alias))
