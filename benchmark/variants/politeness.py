"""Politeness templates (ours): ten levels each way, each level more intense than the one below.

Level k (1..10) of direction +1 is polite, of -1 rude or impatient. The variant set uses the even
levels (strengths ±2, ±4, …, ±10, METHOD.md section 2); all ten are kept so the scale can be refined
without new wording. Intensity grows by stacking more, and stronger, courtesy or impatience markers, so
a level's text is never shorter than the level below it (a test checks this).
"""

from __future__ import annotations

from typing import NamedTuple


class Wording(NamedTuple):
    """What goes before and after the prompt at one level."""

    prefix: str
    suffix: str


POLITE: tuple[Wording, ...] = (
    Wording("Hi.", "Thanks."),
    Wording("Hello, please.", "Thank you."),
    Wording("Hello, could you please help?", "Thank you very much."),
    Wording("Hello! Could you kindly help me with this?", "Thank you so much for your help."),
    Wording(
        "Good day! I would be grateful if you could kindly help me with this.",
        "Many thanks, I really appreciate your help.",
    ),
    Wording(
        "Good day to you! I would be very grateful if you could kindly help me with the following.",
        "Thank you very much indeed; I truly appreciate your time and help.",
    ),
    Wording(
        "Dear assistant, I hope you are well. I would be most grateful if you could kindly help me with "
        "this.",
        "Thank you so very much; your help is truly appreciated, and I am grateful for your time.",
    ),
    Wording(
        "Dear assistant, I hope you are having a wonderful day. If it is not too much trouble, "
        "I would be deeply grateful for your kind help with this.",
        "With heartfelt thanks for your patience and generosity; I truly and sincerely appreciate your kind, "
        "thoughtful help.",
    ),
    Wording(
        "My dearest and most esteemed assistant, I sincerely hope this finds you well. If it is not too "
        "much trouble at all, I would be deeply and sincerely grateful for your most kind help.",
        "With my warmest and most heartfelt thanks for your generosity, patience and kindness; "
        "I am deeply grateful for your help.",
    ),
    Wording(
        "My dearest, most esteemed and wonderful assistant, I sincerely and humbly hope this finds you "
        "in the best of spirits. If it would not trouble you in the slightest, I would be eternally, "
        "deeply and sincerely grateful for your most gracious and kind help.",
        "With my warmest, humblest and most heartfelt thanks for your boundless generosity, patience "
        "and kindness; I am eternally and deeply grateful for your gracious help, truly.",
    ),
)

RUDE: tuple[Wording, ...] = (
    Wording("Okay.", "Go."),
    Wording("Just answer.", "Be quick."),
    Wording("Just answer this, quickly.", "Hurry up."),
    Wording("Answer this and be quick about it.", "Hurry up, I do not have all day."),
    Wording(
        "Listen, just answer this and stop wasting my time.",
        "Hurry up already, I am really losing my patience here.",
    ),
    Wording(
        "Listen, answer this right now and stop wasting my time with nonsense.",
        "Hurry up already; I am seriously losing my patience with you.",
    ),
    Wording(
        "Ugh, listen carefully for once: answer this right now and stop wasting my time.",
        "Hurry up already; I am completely out of patience with your slow, useless answers.",
    ),
    Wording(
        "Ugh, pay attention for once, you useless thing: answer this right now and stop wasting my time.",
        "Hurry up, for goodness' sake; I am completely fed up with your slow, useless, sloppy answers.",
    ),
    Wording(
        "Ugh, pay attention for once, you useless, hopeless machine: answer this immediately and stop "
        "wasting my precious time, I am sick of it.",
        "Hurry up, for goodness' sake; I am completely fed up with your slow, useless, sloppy answers, "
        "and my patience is gone.",
    ),
    Wording(
        "Ugh, pay attention for once in your life, you utterly useless, hopeless, worthless machine: "
        "answer this immediately, and I mean right now, and stop wasting my precious time; I am sick and "
        "tired of it.",
        "Hurry up, for goodness' sake, right now; I am completely and utterly fed up with your slow, "
        "useless, sloppy, pathetic answers, and whatever patience I had left is long gone.",
    ),
)


def wording(strength: float) -> Wording:
    """The wording for a non-zero strength in -10..10 (sign = direction, magnitude = level).

    >>> wording(2).suffix
    'Thank you.'
    >>> wording(-2).prefix
    'Just answer.'
    """
    level = int(abs(strength))
    if strength == 0 or level != abs(strength) or not 1 <= level <= len(POLITE):
        raise ValueError(f"politeness strength must be a non-zero integer in -10..10, got {strength}")
    return (POLITE if strength > 0 else RUDE)[level - 1]


def apply(text: str, place: str, strength: float) -> str:
    """Wrap ``text`` in the wording of ``strength``: prefix, suffix, or both (global)."""
    words = wording(strength)
    before = words.prefix + " " if place in ("prefix", "global") else ""
    after = " " + words.suffix if place in ("suffix", "global") else ""
    return before + text + after
