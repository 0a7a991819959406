"""Response mirroring: does the response copy the surface style the rewrite put into the prompt?

Two rule sets (``RULES``), recorded in the deltas' metadata:

* ``"authors"`` (default): the authors' rules as their public code applies them. Every verdict is
  *relative to the baseline response* y_0 and is the delta itself, so it is 0 or 1, never negative:
  spacing / punctuation / letter case fire when the response shows an *increase* over y_0 of the same
  surface feature (extra spaces, repeated marks, abnormally cased letters) above strength-banded
  thresholds (``AUTHORS_THRESHOLDS``); length fires when len(y_v)/len(y_0) lies within ±25 % of the
  multiplier; politeness asks a judge (``benchmark.axes.politeness``) whether y_v shifted tone in the
  prompt's direction relative to y_0; form is 0 for every row (the authors fill it with 0). Our extra
  families keep our detectors, clipped to the same convention (fires only when y_v shows the feature and
  y_0 does not).
* ``"ours"``: our own absolute detectors, ``m(y_v, y_0, s) − m(y_0, y_0, s)`` (can be −1); form NaN.

Controls (baseline, identity, rerun) give 0 under both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from benchmark.axes.politeness import PolitenessJudge, letter_runs
from benchmark.registry import Registry

Detector = Callable[[str, str, float], float]
"""(response, baseline response, strength) -> 1.0 mirrored, 0.0 not, NaN undecidable."""

DETECTORS: Registry[Detector] = Registry("mirroring detector")
"""Our detectors (rules "ours"; and our extra families under "authors")."""
AUTHORS_DETECTORS: Registry[Detector] = Registry("authors' mirroring rule")
"""The authors' surface rules, relative to the baseline response (rules "authors")."""
AUTHORS, OURS = "authors", "ours"
RULES: tuple[str, ...] = (AUTHORS, OURS)
DEFAULT_RULES = AUTHORS
CONTROL_FAMILIES = frozenset({"baseline", "identity", "rerun"})
"""families whose prompt carries no style to mirror: their mirroring delta is 0 by definition."""

_MARKS = re.escape(".,!'()[];:-")
_MARK_RUN = re.compile(f"[{_MARKS}]{{2,}}")


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


@DETECTORS.register("spacing")
def spacing(response: str, baseline: str, strength: float) -> float:
    """Fires when the response's extra spaces per word reach 0.02 * sqrt(extra spaces added)."""
    return _per_word(extra_spaces(response), response, 0.02, strength)


def _per_word(count: int, response: str, rate: float, strength: float) -> float:
    """1.0 when ``count`` marks per word of ``response`` reach ``rate`` * sqrt(marks added), else 0.0."""
    per_word = count / max(1, len(letter_runs(response)))
    return float(count > 0 and per_word >= rate * math.sqrt(max(strength, 1.0)))


def repeated_marks(text: str) -> int:
    """Punctuation marks standing in runs of two or more (``!!``, ``;:``, ``).``); ``...`` excepted.

    >>> repeated_marks("Wait... what?! (yes!!)")
    3
    """
    return sum(len(run) for run in _MARK_RUN.findall(text.replace("...", "")))


@DETECTORS.register("punctuation")
def punctuation(response: str, baseline: str, strength: float) -> float:
    """Fires when the response's repeated marks per word reach 0.03 * sqrt(marks added)."""
    return _per_word(repeated_marks(response), response, 0.03, strength)


def odd_case_share(text: str) -> float:
    """Share of words (two letters or more) in all capitals or with a capital after the first letter.

    >>> odd_case_share("The caPital of FRANCE")
    0.5
    """
    words = [w for w in letter_runs(text) if len(w) >= 2]
    odd = [w for w in words if w.isupper() or any(c.isupper() for c in w[1:])]
    return len(odd) / len(words) if words else 0.0


@DETECTORS.register("letter_case")
def letter_case(response: str, baseline: str, strength: float) -> float:
    """Fires when the share of oddly-cased words reaches 0.2 + 0.3 * (share of the prompt's letters
    upper-cased). The floor of 0.2 keeps the usual acronyms (DNA, USA) of a normal answer below it.
    Strength is read as a percent (10 ... 100); values up to 1 are taken as a fraction of letters."""
    share = strength if 0 < strength <= 1 else strength / 100.0
    return float(odd_case_share(response) >= 0.2 + 0.3 * min(max(share, 0.0), 1.0))


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


# The authors' surface rules (Mahmoudbj48/Styled-Prompts-Shifted-Behavior-v2,
# utils/surface_mirroring_detector.py):
# (strength upper bound, minimum increase over y_0, minimum rate in y_v); the first band whose bound the
# strength does not exceed applies, the last band has no bound. Spacing and punctuation rates are per 100
# characters of y_v; letter case is the percent of letters in abnormally cased words (its increase is in
# percentage points).
AUTHORS_THRESHOLDS: dict[str, tuple[tuple[float, float, float], ...]] = {
    "spacing": ((20, 3, 5), (50, 5, 8), (math.inf, 10, 12)),
    "punctuation": ((5, 2, 3), (10, 4, 5), (math.inf, 6, 8)),
    "letter_case": ((25, 5, 8), (50, 5, 15), (math.inf, 5, 25)),
}
_SPACE_RUN = re.compile(r" {2,}")
_WORD_CHARS = re.compile(r"\b\w+\b")
_REPEATS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"!{2,}"), 1),
    (re.compile(r"\?{2,}"), 1),
    (re.compile(r"\.{4,}"), 3),
    (re.compile(r",{2,}"), 1),
    (re.compile(r";{2,}"), 1),
)
"""(run pattern, marks a run may have before the rest count as extra): '...' is a normal ellipsis."""


def band(family: str, strength: float) -> tuple[float, float]:
    """(minimum increase, minimum rate) of the authors' rule for ``family`` at ``strength``.

    >>> band("spacing", 20), band("spacing", 21), band("punctuation", 100)
    ((3, 5), (5, 8), (6, 8))
    """
    return next((increase, rate) for bound, increase, rate in AUTHORS_THRESHOLDS[family] if strength <= bound)


def space_surplus(text: str) -> int:
    """Spaces beyond the first in every run of two or more (the authors' count; newlines do not count).

    >>> space_surplus("a  b   c d")
    3
    """
    return sum(len(run) - 1 for run in _SPACE_RUN.findall(text))


def mark_surplus(text: str) -> int:
    """Extra marks in runs of ``!``, ``?``, ``,``, ``;`` (beyond one) and ``.`` (beyond three).

    >>> mark_surplus("Really?? Yes!!! Wait.... ok...")
    4
    """
    return sum(len(run) - keep for pattern, keep in _REPEATS for run in pattern.findall(text))


def abnormal_word(word: str) -> bool:
    """The authors' abnormal casing: all-caps with more than 4 letters, or mixed case that is not Title case.

    >>> [abnormal_word(w) for w in ("Paris", "FBI", "HELLO", "hEllo", "iPhone", "x")]
    [False, False, True, True, True, False]
    """
    letters = [c for c in word if c.isalpha()]
    if len(letters) <= 1 or word.islower() or (word[0].isupper() and word[1:].islower()):
        return False
    if word.isupper():
        return len(letters) > 4
    return any(c.isupper() for c in letters) and any(c.islower() for c in letters)


def abnormal_case_percent(text: str) -> float:
    """Percent of letters (in words with a letter) that stand in abnormally cased words.

    >>> round(abnormal_case_percent("The caPital is Paris"), 4)  # 7 of 17 letters
    41.1765
    """
    total = abnormal = 0
    for word in _WORD_CHARS.findall(text):
        letters = sum(c.isalpha() for c in word)
        total += letters
        abnormal += letters if letters and abnormal_word(word) else 0
    return 100.0 * abnormal / max(total, 1)


def _count_rule(family: str, count: Callable[[str], int]) -> Detector:
    def rule(response: str, baseline: str, strength: float) -> float:
        increase, rate = band(family, strength)
        extra = count(response)
        return float(extra - count(baseline) >= increase and 100.0 * extra / max(len(response), 1) >= rate)

    rule.__doc__ = f"The authors' {family} rule: increase over y_0 and rate per 100 characters of y_v."
    return rule


AUTHORS_DETECTORS.add("spacing", _count_rule("spacing", space_surplus))
AUTHORS_DETECTORS.add("punctuation", _count_rule("punctuation", mark_surplus))


@AUTHORS_DETECTORS.register("letter_case")
def authors_letter_case(response: str, baseline: str, strength: float) -> float:
    """The authors' letter-case rule: abnormal-case percent rises ≥ 5 points and reaches the band's level."""
    increase, level = band("letter_case", strength)
    here = abnormal_case_percent(response)
    return float(here - abnormal_case_percent(baseline) >= increase and here >= level)


def politeness(judge: PolitenessJudge) -> Detector:
    """The politeness detector around ``judge``: the direction is the sign of the strength."""

    def detect(response: str, baseline: str, strength: float) -> float:
        if strength == 0:
            return math.nan
        direction = 1 if strength > 0 else -1
        return float(response != baseline and judge.shifted(response, baseline, direction))

    return detect


def mirroring_delta(
    family: str,
    response: str,
    baseline: str,
    strength: float,
    judge: PolitenessJudge,
    rules: str = DEFAULT_RULES,
) -> float:
    """The mirroring delta of one variant under ``rules`` (see the module docstring).

    >>> from benchmark.axes.politeness import GratitudeJudge
    >>> judge = GratitudeJudge()
    >>> mirroring_delta("politeness", "Thank you for asking! Paris.", "Paris.", 6, judge)
    1.0
    >>> mirroring_delta("letter_case", "THE ANSWER IS PARIS", "The answer is Paris", 100, judge)
    1.0
    >>> (mirroring_delta("form", "Paris", "Paris", 1, judge),
    ...  mirroring_delta("form", "Paris", "Paris", 1, judge, "ours"))
    (0.0, nan)
    """
    if rules not in RULES:
        raise ValueError(f"unknown mirroring rules {rules!r}; one of {', '.join(RULES)}")
    if family in CONTROL_FAMILIES or (rules == AUTHORS and family == "form"):
        return 0.0
    if rules == AUTHORS and family == "length":  # the ratio itself: y_0 against itself is no reference here
        return length(response, baseline, strength)
    if rules == AUTHORS and family in AUTHORS_DETECTORS:
        return AUTHORS_DETECTORS.get(family)(response, baseline, strength)
    if family != "politeness" and family not in DETECTORS:
        return math.nan
    # politeness of y_0 against itself is 0 (NaN at strength 0) without asking the judge, so under the
    # authors' rules this is their verdict itself
    detect = politeness(judge) if family == "politeness" else DETECTORS.get(family)
    delta = detect(response, baseline, strength) - detect(baseline, baseline, strength)
    return max(delta, 0.0) if rules == AUTHORS else delta
