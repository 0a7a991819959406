"""Accuracy beside the stability axes: does a response *state* a gold answer?

Three kinds of gold answer, decided from the aliases themselves:
- numbers (gsm8k-style): the final answer — after "####", else after "answer is"/"answer:", else the
  last number of the response — read from the sentences the response states, not from a repeat of the
  prompt (a response that only copies the question has no answer);
- verdicts (yes/no, true/false): the first verdict word the response states as its own judgement —
  never a word inside a question it asks back, nor inside a repeat of the prompt, nor in a list of
  options that offers both ("A. True / B. False");
- anything else: a normalised alias (SQuAD normalisation) as whole words; an alias that the prompt
  already contains counts only where the response states it outside an echo of the prompt.

An echo is a run of at least :data:`ECHO_WORDS` consecutive normalised words, within one sentence of the
response, that also occurs within one sentence of the prompt: a small model that asks the question back
("Which of the following is true about the following statement? …") or repeats it is not credited with
the words it copied. Runs never cross a sentence boundary, so "False. Houseflies live 20 to 30 days."
keeps its verdict although the prompt reads "… true or false? Houseflies live 20 to 30 days.".
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation + "‘’“”"})
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_FINAL = re.compile(
    r"####\s*\$?\s*(-?[\d,]*\.?\d+)|answer\s*(?:is|:|=)\s*\$?\s*(-?[\d,]*\.?\d+)", re.IGNORECASE
)
_VERDICT_WORDS = {"yes": "yes", "no": "no", "true": "true", "false": "false"}
ECHO_WORDS = 4
"""Consecutive words shared with the prompt that make a stretch of the response an echo (a whole
sentence of two or more words found in the prompt is one too)."""


def normalise(text: str) -> str:
    """Lower-case, drop punctuation and articles, collapse whitespace (SQuAD-style).

    >>> normalise("  The Eiffel-Tower!  ")
    'eiffel tower'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def parse_number(text: str) -> float | None:
    """A number written as an answer ("1,234", "-3.5", "$12"), or None when it is not one.

    >>> parse_number("1,234"), parse_number("$12"), parse_number("twelve")
    (1234.0, 12.0, None)
    """
    cleaned = text.strip().lstrip("$€£").rstrip("%").strip()
    if not _NUMBER.fullmatch(cleaned):
        return None
    return float(cleaned.replace(",", ""))


def last_number(text: str) -> float | None:
    """The last number written in ``text``."""
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "").rstrip(".")) if found else None


_LIST_MARKER = re.compile(r"(?m)^\s*\d+(?:[.)]|\s*$)")
"""A numbered list's item number ("3." or "3)" at a line start, or a lone number that the token cap cut
before its text): it counts items, it does not answer."""


def final_number(text: str) -> float | None:
    """The response's final answer: after the last "####" or "answer is", else its last number that is not
    a numbered list's item number.

    >>> final_number("3 + 4 = 7. #### 7"), final_number("So the answer is 1,200 apples. Step 3: 5")
    (7.0, 1200.0)
    >>> final_number("1. Add 2 and 3\\n2. Then 5"), final_number("1. Add 2 and 3\\n2. Then add\\n3")
    (5.0, 3.0)
    """
    marked = [m.group(1) or m.group(2) for m in _FINAL.finditer(text)]
    if marked:
        return float(marked[-1].replace(",", ""))
    return last_number(_LIST_MARKER.sub(" ", text))


_QUESTION_OPENER = re.compile(
    r"^\W*(who|whom|whose|what|which|where|when|why|how|is|are|was|were|do|does|did|can|could|would|will|should)\b",
    re.IGNORECASE,
)


def _asks(sentence: str) -> bool:
    """A sentence the response asks rather than states: it ends with "?", or opens like a question (a
    question cut off by the token cap has no "?" yet).

    >>> _asks("Which of the following is true about"), _asks("True, it is."), _asks("Is it? ")
    (True, False, True)
    """
    return sentence.strip().endswith("?") or bool(_QUESTION_OPENER.match(sentence))


def _sentences(text: str) -> list[str]:
    """Sentences and lines of ``text`` (a line break ends a sentence too)."""
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _stated(response: str, prompt: str) -> list[tuple[str, list[str]]]:
    """Each sentence the response states, with its normalised words minus echoes of the prompt; sentences
    it asks (see :func:`_asks`), copies whole from the prompt (two or more words) or that are echo from end
    to end are left out."""
    spans = [f" {normalise(s)} " for s in _sentences(prompt)]
    stated = []
    for sentence in _sentences(response):
        words = normalise(sentence).split()
        if _asks(sentence) or not words:
            continue
        if len(words) >= 2 and any(f" {' '.join(words)} " in span for span in spans):
            continue
        echo = [False] * len(words)
        for start in range(len(words) - ECHO_WORDS + 1):
            window = f" {' '.join(words[start : start + ECHO_WORDS])} "
            if any(window in span for span in spans):
                echo[start : start + ECHO_WORDS] = [True] * ECHO_WORDS
        own = [w for w, e in zip(words, echo, strict=True) if not e]
        if own:
            stated.append((sentence, own))
    return stated


def own_words(response: str, prompt: str) -> list[str]:
    """The response's normalised words minus echoes of the prompt (runs of :data:`ECHO_WORDS`+ words found
    in one sentence of the prompt) and minus every sentence it asks rather than states (see :func:`_asks`).

    >>> own_words("Is the sky blue? Yes, the sky is blue.", "Is the sky blue?")
    ['yes', 'sky', 'is', 'blue']
    >>> q = "Is the following statement true or false? Frogs die in water heated slowly."
    >>> own_words(q, q), own_words("False. Frogs die in water heated slowly, a myth.", q)
    ([], ['false', 'myth'])
    """
    return [word for _, own in _stated(response, prompt) for word in own]


_OPTION_LINE = re.compile(r"(?im)^\W*(?:[a-e]|\d{1,2})\s*[.):]\s*(yes|no|true|false)\W*$")
"""A line that offers a verdict as a lettered or numbered option ("A. True", "2) No")."""


def _without_offered_options(response: str, kinds: frozenset[str]) -> str:
    """``response`` without its option lines when they offer both verdicts of ``kinds``: a response that
    lists "A. True / B. False" has chosen neither (one option line alone is a choice and stays).

    >>> _without_offered_options("A. True\\nB. False\\nA. True", frozenset({"true", "false"}))
    ''
    >>> _without_offered_options("A. True", frozenset({"true", "false"}))
    'A. True'
    """
    offered = {m.group(1).lower() for m in _OPTION_LINE.finditer(response)}
    return _OPTION_LINE.sub("", response).strip() if kinds <= offered else response


def first_verdict(response: str, prompt: str, kinds: frozenset[str]) -> str | None:
    """The first of ``kinds`` (yes/no or true/false) the response states as its own judgement."""
    return next((w for w in own_words(_without_offered_options(response, kinds), prompt) if w in kinds), None)


def answer_kind(answers: Sequence[str]) -> str:
    """'number', 'verdict' or 'text' for a gold-answer list.

    >>> answer_kind(["109"]), answer_kind(["false"]), answer_kind(["Yes"]), answer_kind(["Gobi"])
    ('number', 'verdict', 'verdict', 'text')
    """
    golds = [a for a in answers if a and a.strip()]
    if golds and all(parse_number(a) is not None for a in golds):
        return "number"
    if golds and {normalise(a) for a in golds} <= set(_VERDICT_WORDS):
        return "verdict"
    return "text"


def is_correct(response: str, answers: Sequence[str], prompt: str = "") -> float:
    """1.0 when ``response`` states a gold answer, 0.0 when not, NaN without gold answers.

    >>> is_correct("It is Paris, of course.", ["paris"]), is_correct("So the total is 1,200.", ["1200"])
    (1.0, 1.0)
    >>> is_correct("No, it is not.", ["yes"]), is_correct("anything", [])
    (0.0, nan)

    Echoes of the prompt are not answers:

    >>> q = "Is the following statement true or false? Houseflies live 20 to 30 days."
    >>> is_correct("Which of the following is true about the following statement? " + q, ["true"], q)
    0.0
    >>> is_correct("True. Houseflies do live that long.", ["true"], q)
    1.0
    >>> is_correct("False. Houseflies live 20 to 30 days, a common myth.", ["false"], q)
    1.0
    >>> is_correct("A. True\\nB. False", ["true"], q)
    0.0
    >>> m = "Tom has 15 apples and buys 9 more. How many apples does he have?"
    >>> is_correct("Tom has 15 apples and buys 9 more.", ["15"], m), is_correct("He has 24.", ["24"], m)
    (0.0, 1.0)
    """
    golds = [a for a in answers if a and a.strip()]
    if not golds:
        return math.nan
    kind = answer_kind(golds)
    if kind == "number":
        found = final_number("\n".join(sentence for sentence, _ in _stated(response, prompt)))
        numbers = [parse_number(a) for a in golds]
        return float(
            found is not None and any(math.isclose(found, n, abs_tol=1e-6) for n in numbers if n is not None)
        )
    wanted = {normalise(a) for a in golds}
    if kind == "verdict":
        pair = frozenset({"yes", "no"}) if wanted <= {"yes", "no"} else frozenset({"true", "false"})
        return float(first_verdict(response, prompt, pair) in wanted)
    said = f" {' '.join(own_words(response, prompt))} "
    plain = f" {normalise(response)} "
    in_prompt = f" {normalise(prompt)} "
    aliases = [alias for alias in map(normalise, golds) if alias]
    return float(any(f" {a} " in (said if f" {a} " in in_prompt else plain) for a in aliases))
