"""How long a plain sentence of the board is, as a reader counts it."""

from __future__ import annotations

from collections.abc import Iterable

PLAIN_WORDS = 25
"""about how many words a plain sentence may have (issue 48: "about 25 words at most")."""


def plain_words(sentence: str, names: Iterable[str]) -> int:
    """Words in ``sentence``, a model's display name counted as one (``Gemma 3 270M base (Q4_K_M GGUF)``
    is one name a reader takes in at once, not six words).

    >>> plain_words("A is steadier than Gemma 3 270M (GGUF).", ["Gemma 3 270M (GGUF)"])
    5
    """
    for name in sorted(names, key=len, reverse=True):
        sentence = sentence.replace(name, "M")
    return len(sentence.split())
