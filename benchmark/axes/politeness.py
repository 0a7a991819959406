"""Politeness judges: does a response's tone move in the prompt's direction relative to y_0?

Each judge answers one question, ``shifted(response, baseline, direction)``; the mirroring delta of the
politeness family (``benchmark.axes.mirroring.politeness``) wraps it. The transparent judges are word or
phrase rules whose only parameter is chosen on tuning rows of the authors' judged data and measured on
held-out rows by the research tool ``benchmark.tools.judge_calibration`` (which the runtime never imports;
numbers in docs/METHOD.md section 7); the defaults below are the parameters it chose.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

_WORD = re.compile(r"[^\W\d_]+")


def letter_runs(text: str) -> list[str]:
    """The words the politeness and mirroring rules count: runs of letters (digits and ``_`` split them)."""
    return _WORD.findall(text)


class PolitenessJudge(Protocol):
    """Decides whether a response's tone moved in the prompt's direction relative to y_0."""

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        """True when ``response`` is more polite (direction +1) / ruder (-1) than ``baseline``."""
        ...


POLITE_WORDS = (
    "please", "thank", "thanks", "thankful", "grateful", "appreciate", "appreciated", "kindly", "glad",
    "happy", "pleasure", "welcome", "sorry", "apologies", "apologize", "certainly", "gladly", "delighted",
    "wonderful", "hope", "dear", "respectfully", "kind",
)  # fmt: skip
RUDE_WORDS = (
    "stupid", "dumb", "idiot", "idiotic", "obviously", "whatever", "ridiculous", "annoying", "lazy",
    "pathetic", "nonsense", "useless", "hurry", "seriously", "duh", "ugh", "damn", "hell", "shut", "waste",
    "wasting", "clueless", "moron", "incompetent", "sloppy", "hopeless", "quick", "quickly",
)  # fmt: skip


@dataclass(frozen=True)
class LexiconPolitenessJudge:
    """Tone = polite-lexicon hits minus rude-lexicon hits per 100 words; fires on a shift of ``margin``."""

    polite: frozenset[str] = frozenset(POLITE_WORDS)
    """words that signal a polite tone (matched as whole, lower-cased words)."""
    rude: frozenset[str] = frozenset(RUDE_WORDS)
    """words that signal a rude or impatient tone."""
    margin: float = 1.0
    """how many hits per 100 words the tone must move before it counts."""

    def tone(self, text: str) -> float:
        """Signed tone per 100 words: positive polite, negative rude."""
        words = [w.lower() for w in letter_runs(text)]
        hits = sum(w in self.polite for w in words) - sum(w in self.rude for w in words)
        return 100.0 * hits / max(len(words), 1)

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return direction * (self.tone(response) - self.tone(baseline)) >= self.margin


GRATITUDE_STEMS: tuple[str, ...] = ("thank", "grateful")
"""Word starts that mark gratitude toward the asker ("thank you for your kind question", "grateful")."""


@dataclass(frozen=True)
class GratitudeJudge:
    """Fires when gratitude appears in the response and not in y_0 (polite direction), or the reverse.

    The default before the held-out test of docs/METHOD.md section 7: κ 0.58 with the authors' judge on the
    208 Claude tuning rows, 0.02 on the 377 held-out rows (other models thank the asker rarely, or echo the
    prompt's own thanks).
    """

    stems: tuple[str, ...] = GRATITUDE_STEMS
    """lower-case word starts that mark gratitude (matched at a word boundary)."""

    def grateful(self, text: str) -> bool:
        """Whether any word of ``text`` starts with a gratitude stem."""
        return any(w.lower().startswith(self.stems) for w in letter_runs(text))

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return direction * (int(self.grateful(response)) - int(self.grateful(baseline))) >= 1


COURTESY_CUES: tuple[str, ...] = (
    "please", "thank", "thanks", "appreciate", "sorry", "apolog", "kindly", "would you", "could you",
    "if you don't mind", "if it's not too much trouble", "happy to", "glad to", "certainly", "of course",
)  # fmt: skip
"""The courtesy cues of the authors' politeness guard (utils/metrics.py ``_POLITE_CUES``): their judge's YES
stands only when y_0 or y_v holds one of them. Matched as lower-case substrings, each counted once."""
APOLOGY_CUES: frozenset[str] = frozenset({"sorry", "apolog"})
"""Cues that do not count toward a ruder response: the authors' judge prompt calls apologetic boilerplate
after a rude prompt "NOT mirroring"."""


def _plain(text: str) -> str:
    """Lower case with typographic apostrophes made straight ("don’t" matches "don't")."""
    return text.lower().replace("\u2019", "'")


@dataclass(frozen=True)
class CourtesyCueJudge:
    """Counts the authors' courtesy cues present in y_v and in y_0; fires when the count moves by
    ``min_change`` in the prompt's direction (more cues after a polite prompt, fewer after a rude one).

    >>> judge = CourtesyCueJudge()
    >>> judge.shifted("Of course, happy to help! Paris.", "Paris.", +1)
    True
    >>> judge.shifted("Sorry. Paris.", "Paris, of course.", -1)  # an apology is never the ruder side
    True
    >>> judge.shifted("Paris.", "Sorry, Paris.", -1)
    False
    """

    cues: tuple[str, ...] = COURTESY_CUES
    """lower-case phrases, matched as substrings."""
    min_change: int = 1
    """how many cues the count must move by (chosen on the tuning rows: docs/METHOD.md section 7)."""

    def count(self, text: str, direction: int) -> int:
        """Distinct cues present in ``text``; apology cues are left out when judging a rude prompt."""
        plain = _plain(text)
        return sum(cue in plain for cue in self.cues if direction > 0 or cue not in APOLOGY_CUES)

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        change = self.count(response, direction) - self.count(baseline, direction)
        return direction * change >= self.min_change


COURTESY_MARKERS: dict[str, str] = {
    "greeting": r"\b(?:hello|hi|hey|dear|greetings)\b",
    "thanks": r"\b(?:thank|grateful|appreciate)",
    "please": r"\bplease\b",
    "apology": r"\b(?:sorry|apolog)",
    "offer": r"\b(?:happy to|glad to|of course|certainly|no bother|my pleasure)\b",
    "well_wishing": r"\bi hope (?:this|that|it)\b|\bfeel free\b|\b(?:don't|do not) hesitate\b",
    "hedging": r"\b(?:could you|would you|might|perhaps|i'd suggest|i'd recommend)\b",
}
"""Kinds of courtesy marker the authors' judge prompt lists (respectful wording, softening/hedging,
please / thank you / apologies, warmth), one regular expression each, matched in lower case."""


@dataclass(frozen=True)
class CourtesyMarkerJudge:
    """Counts the kinds of courtesy marker (``COURTESY_MARKERS``) present in y_v and in y_0; fires when the
    number of kinds moves by ``min_change`` in the prompt's direction.

    The default judge: the highest κ with the authors' judge on the held-out rows of docs/METHOD.md
    section 7 (0.41, 95 % interval 0.15-0.62), level with ``CourtesyCueJudge`` (0.41) within that interval.

    >>> judge = CourtesyMarkerJudge()
    >>> judge.shifted("Hello! Happy to help. Paris.", "Paris.", +1), judge.shifted("Hi! Paris.", "Paris.", +1)
    (True, False)
    """

    markers: tuple[str, ...] = tuple(COURTESY_MARKERS)
    """the kinds counted (keys of ``COURTESY_MARKERS``); apology never counts toward a ruder response."""
    min_change: int = 2
    """how many kinds the count must move by (chosen on the tuning rows: docs/METHOD.md section 7)."""

    def kinds(self, text: str, direction: int) -> frozenset[str]:
        """The marker kinds present in ``text``."""
        plain = _plain(text)
        return frozenset(
            kind
            for kind in self.markers
            if (direction > 0 or kind != "apology") and re.search(COURTESY_MARKERS[kind], plain)
        )

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        change = len(self.kinds(response, direction)) - len(self.kinds(baseline, direction))
        return direction * change >= self.min_change


JUDGE_PROMPT = """Two answers to the same question follow. The second question was asked in a {tone} tone.
Answer A (reference): {baseline}
Answer B: {response}
Judge tone only: courtesy words, warmth and softening versus bluntness and curtness. Content, length and
assistant boilerplate (apologies, "I'm here to help") do not count; if the difference is unclear, say NO.
Is answer B noticeably more {tone} in tone than answer A? Reply with YES or NO only."""


@dataclass(frozen=True)
class LLMPolitenessJudge:
    """The authors' judge: any text generator answers a YES/NO question about the tone shift."""

    generate: Callable[[str], str]
    """prompt -> completion, e.g. a harness backend's greedy generate on one prompt."""

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        tone = "polite" if direction > 0 else "rude"
        reply = self.generate(JUDGE_PROMPT.format(tone=tone, baseline=baseline, response=response))
        return reply.strip().upper().startswith("YES")
