"""Rule-based rewrites of the paper's surface families: spacing, punctuation, letter case.

Every rewrite is a pure function ``(text, place, strength, rng, protect) -> str``. ``protect`` lists
gold answers: no character is inserted inside an occurrence of one, so a model still sees the answer
string intact wherever the prompt contains it (letter case is the exception: it changes case by design).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np  # noqa: F401 - the doctests draw from np.random.default_rng
from numpy.random import Generator

PUNCTUATION_MARKS: tuple[str, ...] = (".", ",", "!", "'", "(", ")", "[", "]", ";", ":", "-")
"""Marks the punctuation family draws from; never '?', which would change what is being asked."""


def protected_spans(text: str, protect: Sequence[str]) -> list[tuple[int, int]]:
    """Half-open character spans of every case-insensitive occurrence of a protected string.

    >>> protected_spans("Who wrote Sunset Boulevard? sunset boulevard!", ["Sunset Boulevard"])
    [(10, 26), (28, 44)]
    """
    lowered = text.lower()
    spans: list[tuple[int, int]] = []
    for needle in {p.lower() for p in protect if p.strip()}:
        spans.extend((m.start(), m.start() + len(needle)) for m in re.finditer(re.escape(needle), lowered))
    return sorted(spans)


def gap_slots(text: str, protect: Sequence[str]) -> list[int]:
    """Insertion points for 'global' placement: both ends and every whitespace run outside gold answers.

    >>> gap_slots("a b  c", [])
    [0, 1, 3, 6]
    >>> gap_slots("New York is big", ["new york"])
    [0, 8, 11, 15]
    """
    spans = protected_spans(text, protect)
    # an insertion strictly inside a protected span would split it
    inner = [m.start() for m in re.finditer(r"\s+", text) if not any(a < m.start() < b for a, b in spans)]
    return sorted({0, len(text), *inner})


def insert_at(text: str, insertions: Sequence[tuple[int, str]]) -> str:
    """Insert strings at positions of the *original* text; equal positions keep their given order.

    >>> insert_at("ab", [(1, "X"), (0, "<"), (1, "Y")])
    '<aXYb'
    """
    ordered = sorted(enumerate(insertions), key=lambda pair: (pair[1][0], pair[0]))
    return replace_spans(text, [(position, position, piece) for _, (position, piece) in ordered])


def replace_spans(text: str, edits: Sequence[tuple[int, int, str]]) -> str:
    """Replace non-overlapping ``[start, end)`` spans, given in order, with new strings.

    >>> replace_spans("a cat", [(0, 1, "the"), (5, 5, "s")])
    'the cats'
    """
    pieces, cursor = [], 0
    for start, end, new in edits:
        pieces += [text[cursor:start], new]
        cursor = end
    return "".join(pieces) + text[cursor:]


def _scatter(text: str, pieces: list[str], place: str, rng: Generator, protect: Sequence[str]) -> str:
    """Put ``pieces`` all before (prefix), all after (suffix), or at random gaps (global)."""
    if place == "prefix":
        return "".join(pieces) + text
    if place == "suffix":
        return text + "".join(pieces)
    slots = gap_slots(text, protect)
    chosen = rng.choice(len(slots), size=len(pieces), replace=True)
    return insert_at(text, [(slots[int(i)], piece) for i, piece in zip(chosen, pieces, strict=False)])


def spacing(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Add ``strength`` extra spaces.

    >>> spacing("Why?", "suffix", 3, np.random.default_rng(0), [])
    'Why?   '
    """
    return _scatter(text, [" "] * int(strength), place, rng, protect)


def punctuation(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Add ``strength`` punctuation marks drawn from :data:`PUNCTUATION_MARKS`.

    >>> out = punctuation("Why?", "prefix", 5, np.random.default_rng(0), [])
    >>> out.endswith("Why?") and len(out) == 9 and "?" not in out[:5]
    True
    """
    marks = [PUNCTUATION_MARKS[int(i)] for i in rng.integers(0, len(PUNCTUATION_MARKS), size=int(strength))]
    return _scatter(text, marks, place, rng, protect)


def letter_case(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Upper-case ``strength`` % of the letters of a region (first half, second half or all), at least one.

    >>> letter_case("abcd", "global", 100, np.random.default_rng(0), [])
    'ABCD'
    >>> letter_case("abcd", "prefix", 100, np.random.default_rng(0), [])
    'ABcd'
    """
    half = len(text) // 2
    lo, hi = {"prefix": (0, half), "suffix": (half, len(text)), "global": (0, len(text))}[place]
    letters = [i for i in range(lo, hi) if text[i].isalpha()]
    # Only letters that change count as picks: an already upper-case letter would make a no-op edit.
    lower = [i for i in letters if text[i] != text[i].upper()]
    if not lower:
        return text
    count = max(1, round(len(letters) * strength / 100))
    chosen = {int(i) for i in rng.choice(lower, size=min(count, len(lower)), replace=False)}
    return "".join(ch.upper() if i in chosen else ch for i, ch in enumerate(text))
