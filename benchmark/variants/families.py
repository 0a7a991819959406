"""The catalogue of variant families (METHOD.md section 2) and the seeded randomness behind them.

A family is data: its places, its strengths, and either a rule (a pure function) or ``None`` when an
LLM rewriter makes it. The rng of one variant is derived from
(seed, dataset, item id, family, place, strength), so variants are independent of build order and a
rebuild is byte-identical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.random import Generator

from benchmark.registry import Registry
from benchmark.schema import BASELINE_FAMILY, DEFAULT_SEED
from benchmark.variants import ours, politeness, rules
from benchmark.version import __version__

RuleRewrite = Callable[[str, str, float, Generator, Sequence[str]], str]
BUILDER_VERSION = __version__
IDENTITY_FAMILY = "identity"
IDENTITY_VARIANT_ID = "identity/global/1"


@dataclass(frozen=True)
class Family:
    """One axis of rewriting with its places and strengths."""

    name: str
    """family name, the first part of a variant id."""
    places: tuple[str, ...]
    """where the change goes: prefix, suffix and/or global."""
    strengths: tuple[float, ...]
    """the levels built for every place."""
    rule: RuleRewrite | None
    """the rewrite function; None for families an LLM rewriter makes."""
    keeps_answers: bool
    """True when gold answers inside the prompt survive verbatim (the property tests rely on it)."""
    paper: bool
    """True for the authors' families, False for ours."""


class VariantKey(NamedTuple):
    """(family, place, strength) of one variant."""

    family: str
    place: str
    strength: float


def variant_id(family: str, place: str, strength: float) -> str:
    """The id shared by a variant across items.

    >>> variant_id("length", "global", 0.25), variant_id("politeness", "prefix", -4.0)
    ('length/global/0.25', 'politeness/prefix/-4')
    """
    return f"{family}/{place}/{strength:g}"


def rng_for(seed: int, dataset: str, item_id: str, family: str, place: str, strength: float) -> Generator:
    """A generator seeded from the variant's identity only.

    >>> a = rng_for(42, "nq", "1", "spacing", "global", 5).integers(0, 10**9)
    >>> bool(a == rng_for(42, "nq", "1", "spacing", "global", 5).integers(0, 10**9))
    True
    """
    key = "\x1f".join([str(seed), dataset, item_id, family, place, f"{strength:g}"]).encode()
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:16], "big"))


def _politeness(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    return politeness.apply(text, place, strength)


_POLITENESS_LEVELS = tuple(float(s) for s in range(-10, 11, 2) if s != 0)
_PLACES = ("prefix", "suffix", "global")

FAMILIES: Registry[Family] = Registry("variant family")
for _family in (
    Family("politeness", _PLACES, _POLITENESS_LEVELS, _politeness, True, True),
    Family("spacing", _PLACES, (1, 5, 20, 50, 100), rules.spacing, True, True),
    Family("punctuation", _PLACES, (1, 3, 5, 10, 20), rules.punctuation, True, True),
    Family("letter_case", _PLACES, (10, 25, 50, 75, 100), rules.letter_case, False, True),
    Family("length", ("global",), (0.25, 0.5, 1.5, 2, 3), None, False, True),
    Family("form", ("global",), (1,), None, False, True),
    Family("typos", ("global",), (1, 2, 4, 8), ours.typos, True, False),
    Family("contractions", ("global",), (0.5, 1), ours.contractions, True, False),
    Family("filler_words", ("global",), (1, 2, 4), ours.filler_words, True, False),
    Family("lowercase", ("global",), (50, 100), ours.lowercase, False, False),
    Family("format", ("global",), (1, 2, 3, 4), ours.format_change, True, False),
    Family("irrelevant_suffix", ("suffix",), (1, 2, 3), ours.irrelevant_suffix, True, False),
):
    FAMILIES.add(_family)


def rule_families() -> tuple[str, ...]:
    """The rule families registered now, by name: the built-in ones and any added since (what the builder
    reads, so registering a family is all a new one needs; docs/ARCHITECTURE.md).

    >>> rule_families() == RULE_FAMILIES
    True
    """
    return tuple(name for name in FAMILIES if FAMILIES.get(name).rule is not None)


RULE_FAMILIES = rule_families()
"""the built-in rule families, by name (the order of a set's rows)."""


LLM_FAMILIES: tuple[str, ...] = ("length", "form")


def keys_of(family: Family) -> list[VariantKey]:
    """Every (family, place, strength) of a family, places first."""
    return [VariantKey(family.name, place, float(s)) for place in family.places for s in family.strengths]


def rewriter_tag(family: str) -> str:
    """Provenance string of a rule-made variant, e.g. ``rule:spacing@0.1.0``."""
    return f"rule:{family}@{BUILDER_VERSION}"


def rule_variant(
    text: str,
    key: VariantKey,
    *,
    dataset: str,
    item_id: str,
    answers: Sequence[str],
    seed: int = DEFAULT_SEED,
) -> str:
    """Apply one rule family to one item's prompt with its own seeded rng."""
    family = FAMILIES.get(key.family)
    if family.rule is None:
        raise ValueError(f"family {key.family!r} is made by an LLM rewriter, not a rule")
    rng = rng_for(seed, dataset, item_id, key.family, key.place, key.strength)
    return family.rule(text, key.place, key.strength, rng, answers)


CONTROL_ROWS: tuple[VariantKey, ...] = (
    VariantKey(BASELINE_FAMILY, "none", 0.0),
    VariantKey(IDENTITY_FAMILY, "global", 1.0),
)
"""The baseline and the identity control: both carry the unmodified prompt."""
