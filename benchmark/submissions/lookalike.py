"""Names that read alike: a submission may not take a display name or slug that a reader would mistake
for another model's.

:func:`skeleton` reduces a name to what a reader sees: Unicode NFKC (fullwidth and compatibility forms),
case folding, a table of letters that look like Latin ones (Cyrillic and Greek homoglyphs, ``0``/``o``,
``1``/``l``/``i``, ``rn``/``m``, ``vv``/``w``), and no separators, marks or invisible characters. Two names
with the same skeleton are confusable. The table is ours and small on purpose: it covers the lookalikes
of the letters and digits model names are written in, not the whole of Unicode's confusables list.
"""

from __future__ import annotations

import unicodedata

_LOOKALIKES = str.maketrans(
    {
        # Cyrillic letters drawn like Latin ones (lower case: names are case-folded first)
        "а": "a", "в": "b", "е": "e", "ё": "e", "з": "3", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "l", "ї": "l", "ј": "j",
        "ԁ": "d", "ԛ": "q", "ԝ": "w", "ү": "y", "һ": "h", "ӏ": "l", "ɡ": "g",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "l", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
        "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
        # Latin and digits that read as one another
        "0": "o", "1": "l", "i": "l", "ı": "l", "|": "l",
    }
)  # fmt: skip
_DIGRAPHS = (("rn", "m"), ("vv", "w"))


def skeleton(name: str) -> str:
    """What ``name`` looks like to a reader, as a comparison key.

    >>> skeleton("Qwen2.5-Coder-1.5B") == skeleton("qwen2.5 coder 1.5b")
    True
    >>> skeleton("Ѕmol\\u200bLM2 135M") == skeleton("SmolLM2-135M")  # Cyrillic Ѕ, a zero-width space
    True
    >>> skeleton("Gemma-3-270m") == skeleton("Gernma 3 270M"), skeleton("0.5B") == skeleton("1.5B")
    (True, False)
    """
    folded = unicodedata.normalize("NFKC", name).casefold()
    bare = unicodedata.normalize("NFD", folded)
    letters = "".join(ch for ch in bare.translate(_LOOKALIKES) if ch.isalnum())
    for pair, single in _DIGRAPHS:
        letters = letters.replace(pair, single)
    return letters
