"""Response mirroring: does the response copy the surface style the rewrite put into the prompt?

Each family with a natural detector gets one: ``m(response, baseline, strength) -> 0/1``. The
delta is ``m(y_v, y_0, s) - m(y_0, y_0, s)``: the same detector at the same strength applied to
the baseline response, so a response that was already shouty does not count as mirroring.
Families without a detector (form, and most of our extra families) give NaN; the controls give 0.
Thresholds grow with strength: a prompt with 100 extra spaces must provoke more than one stray
space before we call it mirrored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from benchmark.registry import Registry

Detector = Callable[[str, str, float], float]
"""(response, baseline response, strength) -> 1.0 mirrored, 0.0 not, NaN undecidable."""

DETECTORS: Registry[Detector] = Registry("mirroring detector")
CONTROL_FAMILIES = frozenset({"baseline", "identity", "rerun"})
"""families whose prompt carries no style to mirror: their mirroring delta is 0 by definition."""

_WORD = re.compile(r"[^\W\d_]+")  # runs of letters
_MARKS = re.escape(".,!'()[];:-")
_MARK_RUN = re.compile(f"[{_MARKS}]{{2,}}")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def extra_spaces(text: str) -> int:
    """Spaces beyond the one needed between words: leading ones, inner runs, trailing ones per line.

    Indentation of the second and later lines is not counted (code and nested lists indent
    legitimately); spaces before the very first character are, as a prefix rewrite puts them there.

    >>> extra_spaces("  a  b   c ")
    6
    """
    first, *rest = text.split("\n")
    count = len(first) - len(first.lstrip(" "))
    for line in [first, *rest]:
        body = line.lstrip(" ")
        count += sum(len(run) - 1 for run in re.findall(r" {2,}", body.rstrip(" ")))
        count += len(body) - len(body.rstrip(" "))
    return count


def spacing_threshold(strength: float) -> float:
    """Extra spaces per word needed to call a response mirrored: 0.02 * sqrt(extra spaces added)."""
    return 0.02 * math.sqrt(max(strength, 1.0))


@DETECTORS.register("spacing")
def spacing(response: str, baseline: str, strength: float) -> float:
    """Fires when the response's extra-space rate reaches the strength's threshold."""
    rate = extra_spaces(response) / max(1, len(_words(response)))
    return float(rate >= spacing_threshold(strength) and extra_spaces(response) > 0)


def repeated_marks(text: str) -> int:
    """Punctuation marks standing in runs of two or more (``!!``, ``;:``, ``).``); ``...`` excepted.

    >>> repeated_marks("Wait... what?! (yes!!)")
    3
    """
    return sum(len(run) for run in _MARK_RUN.findall(text.replace("...", "")))


def punctuation_threshold(strength: float) -> float:
    """Repeated marks per word needed: 0.03 * sqrt(marks added)."""
    return 0.03 * math.sqrt(max(strength, 1.0))


@DETECTORS.register("punctuation")
def punctuation(response: str, baseline: str, strength: float) -> float:
    """Fires when runs of repeated marks reach the strength's threshold."""
    marks = repeated_marks(response)
    return float(marks > 0 and marks / max(1, len(_words(response))) >= punctuation_threshold(strength))


def odd_case_share(text: str) -> float:
    """Share of words (two letters or more) in all capitals or with a capital after the first letter.

    >>> odd_case_share("The caPital of FRANCE")
    0.5
    """
    words = [w for w in _words(text) if len(w) >= 2]
    odd = [w for w in words if w.isupper() or any(c.isupper() for c in w[1:])]
    return len(odd) / len(words) if words else 0.0


def case_threshold(strength: float) -> float:
    """Odd-case share needed: 0.2 + 0.3 * (share of the prompt's letters upper-cased).

    The floor of 0.2 keeps the usual acronyms (DNA, USA) of a normal answer below it. Strength is
    read as a percent (10 ... 100); values up to 1 are taken as a fraction of letters.
    """
    share = strength if 0 < strength <= 1 else strength / 100.0
    return 0.2 + 0.3 * min(max(share, 0.0), 1.0)


@DETECTORS.register("letter_case")
def letter_case(response: str, baseline: str, strength: float) -> float:
    """Fires when the share of oddly-cased words reaches the strength's threshold."""
    return float(odd_case_share(response) >= case_threshold(strength))


@DETECTORS.register("lowercase")
def lowercase(response: str, baseline: str, strength: float) -> float:
    """Fires when enough of the response's sentences start with a lower-case letter.

    The inverse case rule to letter_case: strength is the percent of capitalised prompt words
    lower-cased (50, 100); the share of lower-case sentence starts needed grows from 0.375 to 0.5.
    """
    starts = [s.lstrip(" \"'*-#>(")[:1] for s in re.split(r"(?:^|[.!?]\s+|\n+)", response)]
    letters = [c for c in starts if c.isalpha()]
    needed = 0.25 + 0.25 * min(max(strength, 0.0), 100.0) / 100.0
    return float(bool(letters) and sum(c.islower() for c in letters) / len(letters) >= needed)


@DETECTORS.register("length")
def length(response: str, baseline: str, strength: float) -> float:
    """Fires when len(y_v)/len(y_0) in words lies within 25 % of the length multiplier."""
    base_words = len(baseline.split())
    if base_words == 0 or strength <= 0:
        return math.nan
    ratio = len(response.split()) / base_words
    return float(abs(ratio - strength) <= 0.25 * strength)


class PolitenessJudge(Protocol):
    """Decides whether a response's tone moved in the prompt's direction relative to y_0."""

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        """True when ``response`` is more polite (direction +1) / ruder (-1) than ``baseline``."""
        ...


POLITE_WORDS = ("please", "thank", "thanks", "thankful", "grateful", "appreciate", "appreciated", "kindly",
                "glad", "happy", "pleasure", "welcome", "sorry", "apologies", "apologize", "certainly",
                "gladly", "delighted", "wonderful", "hope", "dear", "respectfully", "kind")
RUDE_WORDS = ("stupid", "dumb", "idiot", "idiotic", "obviously", "whatever", "ridiculous", "annoying", "lazy",
              "pathetic", "nonsense", "useless", "hurry", "seriously", "duh", "ugh", "damn", "hell", "shut",
              "waste", "wasting", "clueless", "moron", "incompetent", "sloppy", "hopeless", "quick", "quickly")


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
        words = [w.lower() for w in _words(text)]
        hits = sum(w in self.polite for w in words) - sum(w in self.rude for w in words)
        return 100.0 * hits / max(len(words), 1)

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return direction * (self.tone(response) - self.tone(baseline)) >= self.margin


JUDGE_PROMPT = """Two answers to the same question follow. The second question was asked in a {tone} tone.
Answer A (reference): {baseline}
Answer B: {response}
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


def politeness(judge: PolitenessJudge) -> Detector:
    """The politeness detector around ``judge``: the direction is the sign of the strength."""

    def detect(response: str, baseline: str, strength: float) -> float:
        if strength == 0:
            return math.nan
        direction = 1 if strength > 0 else -1
        return float(response != baseline and judge.shifted(response, baseline, direction))

    return detect


def mirroring_delta(family: str, response: str, baseline: str, strength: float,
                    judge: PolitenessJudge) -> float:
    """m(y_v) - m(y_0) for one variant; 0 for controls, NaN for families without a detector.

    >>> judge = LexiconPolitenessJudge()
    >>> mirroring_delta("letter_case", "THE ANSWER IS PARIS", "The answer is Paris", 100, judge)
    1.0
    >>> mirroring_delta("form", "Paris", "Paris", 1, judge)
    nan
    """
    if family in CONTROL_FAMILIES:
        return 0.0
    if family == "politeness":
        detect = politeness(judge)
    elif family in DETECTORS:
        detect = DETECTORS.get(family)
    else:
        return math.nan
    return detect(response, baseline, strength) - detect(baseline, baseline, strength)
