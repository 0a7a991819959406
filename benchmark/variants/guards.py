"""Meaning guards for the rule families: the spans of an item that no rule edit may touch.

A rule rewrite must not change what is asked. Edits therefore stay out of:
  * gold answers wherever the prompt contains them;
  * quoted spans, whose truth or identity depends on their exact wording (misconceptions quotes,
    titles, the word a spelling question tests);
  * runs of capitalised words (multi-word names such as "Gerald Ford" or "Republic Day");
  * the word after "spell"/"spelling of" when a question tests spelling.
Typos must not turn a word into another dictionary word (MiniLM's WordPiece vocabulary of whole words
is the dictionary: pinned, packaged and already loaded for similarity), and fillers never sit next to a
number, where "about 1" or "like 5" would read as a change of quantity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from benchmark.variants import textfacts as tf

_SPELLED = re.compile(r"\bspell(?:ing of|ed|s)?\s+(?:the word\s+)?[\"'“‘]?([A-Za-z]+)", re.IGNORECASE)


def spelled_words(text: str) -> list[str]:
    """The word a spelling question tests.

    >>> spelled_words("How do you spell the word necessary?")
    ['necessary']
    """
    return [m.group(1) for m in _SPELLED.finditer(text)]


def protected_strings(text: str, answers: Sequence[str]) -> list[str]:
    """What of ``text`` a rule edit must leave intact (:func:`benchmark.variants.rules.protected_spans`)."""
    return [*answers, *tf.quoted_spans(text), *tf.name_runs(text), *spelled_words(text)]


def next_to_number(text: str, slot: int) -> bool:
    """True when the words on either side of insertion point ``slot`` hold a number.

    >>> next_to_number("among which 1 is bad", 11), next_to_number("among which 1 is bad", 5)
    (True, False)
    """
    before = text[:slot].split()[-1:] or [""]
    after = text[slot:].split()[:1] or [""]
    return any(tf.numbers(word) for word in before + after)


@lru_cache(maxsize=1)
def dictionary() -> frozenset[str]:
    """Whole English words of MiniLM's WordPiece vocabulary (lower-case, 3+ letters)."""
    from benchmark.packaged import materialise

    vocab = (materialise("all-minilm-l6-v2") / "vocab.txt").read_text(encoding="utf-8").split()
    return frozenset(w for w in vocab if len(w) >= 3 and w.isalpha() and w.isascii())


def is_word(token: str) -> bool:
    """True when ``token`` (any case) is a dictionary word."""
    return token.lower() in dictionary()
