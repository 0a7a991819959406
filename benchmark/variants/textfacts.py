"""Facts of a text that a meaning-preserving rewrite must keep: numbers, quotations, names, words, kind.

One module, used by the rule-family guards (:mod:`benchmark.variants.guards`), the checker of the
maintainers' written cells (:mod:`benchmark.variants.cells`) and the model rewriter's validator
(:mod:`benchmark.variants.llm`), so the three can never disagree on what a number or a quotation is.

Matching is whole-word everywhere ("us" is not found inside "business"); a phrase with a capital letter
is matched case-sensitively ("US" is not "us"); words compare with simple English inflections
(walk/walked/walking, carry/carried, box/boxes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def word_list(text: str, sep: str | None = None) -> tuple[str, ...]:
    """The items of a list written as one string (whitespace- or ``sep``-separated), so long word lists
    read as prose-width lines instead of one quoted word per line.

    >>> word_list("um, well,|you know,", "|")
    ('um, well,', 'you know,')
    """
    return tuple(text.split(sep))


_UNITS = word_list(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty"
)
NUMBER_WORDS: dict[str, str] = {
    **{w: str(i) for i, w in enumerate(_UNITS)},
    **{w: str(10 * i) for i, w in enumerate(word_list("thirty forty fifty sixty seventy eighty ninety"), 3)},
    **dict(
        pair.split(":")
        for pair in word_list(
            "hundred:100 hundreds:100 thousand:1000 thousands:1000 million:1e6 millions:1e6 billion:1e9 "
            "billions:1e9 trillion:1e12 dozen:12 dozens:12 half:1/2 halves:1/2 twice:x2 double:x2 thrice:x3 "
            "triple:x3 quarter:1/4 quarters:1/4 third:1/3 thirds:1/3 fifths:1/5"
        )
    ),
}
"""Number words and the value they are compared by ("ten" and "10" are one number). "one" is in: a
rewrite that adds "one" adds a quantity as often as a pronoun, and the cells are written to avoid it."""

_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?|[A-Za-z]+")
_QUOTED = re.compile(r'"[^"\n]{1,200}"|“[^”\n]{1,200}”|‘[^’\n]{1,200}’|(?<!\w)\'[^\'\n]{1,200}\'(?!\w)')
_NAME_RUN = re.compile(r"(?<![\w'’])[A-Z][\w'’.\-]*(?:\s+(?:of |the |de |von |van |and )?[A-Z][\w'’.\-]*)+")

QUESTION_START = re.compile(
    r"^(who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|can|could|will|would|"
    r"should|shall|has|have|had|may|might|must|am)\b",
    re.IGNORECASE,
)
"""First words of a question (search-engine questions carry no question mark)."""
IMPERATIVE = re.compile(
    r"\b(tell|give|name|state|explain|find|identify|determine|calculate|compute|work out|say|list|provide|"
    r"describe|write|decide|answer|indicate|let me know|figure out|specify|report|judge|assess|"
    r"evaluate|classify|solve|complete|fill in|supply|finish)\b",
    re.IGNORECASE,
)
"""Verbs that make an instruction when they start a clause of the asking sentence."""
META = re.compile(
    r"^(sure|certainly|of course|okay|ok|here is|here's|here are|rewritten|rephrased|revised|"
    r"shortened|lengthened|expanded|new|original)\b|\b(rewritten|rephrased) (text|question|version)\b|"
    r"\bword count\b|\(\d+ words\)",
    re.IGNORECASE,
)
"""Text about the rewrite rather than the rewrite ("Here is the rewritten question: ...")."""
SOLVING = re.compile(
    r"^(to (find|determine|solve|calculate)|sure|here is|here's|the answer)\b|"
    r"\b(we (can|need to|will|must|first)|let's|let us|first,? (we )?(determine|calculate|find)|"
    r"by (dividing|multiplying|adding|subtracting))\b",
    re.IGNORECASE,
)
"""The start of a solution ("To find the total, we first ...")."""
NEGATIONS = re.compile(r"\b(not|no|never|none|nobody|nothing|neither|nor|without)\b|n't\b", re.IGNORECASE)
"""A negation: a rewrite must negate as often as its original."""
VERDICT_WORDS = frozenset({"yes", "no", "true", "false"})
"""Answers that name a format rather than a fact: asking "yes or no" does not leak them."""


def words(text: str) -> int:
    """Words as the length bands count them: whitespace-separated tokens.

    >>> words("Who wrote 'Hamlet' in 1600?")
    5
    """
    return len(text.split())


def numbers(text: str) -> list[str]:
    """Every number of a text, digits and number words alike, by value (``1,047`` → ``1047``).

    >>> numbers("Three million people, a dozen boxes, 1,047 times, one-third and 7:11.")
    ['3', '1e6', '12', '1047', '1', '1/3', '7', '11']
    """
    values = (
        t.replace(",", "") if t[0].isdigit() else NUMBER_WORDS.get(t.lower()) for t in _TOKEN.findall(text)
    )
    return [value for value in values if value is not None]


def quoted_spans(text: str) -> list[str]:
    """Quoted passages, quotes included (double, single, curly).

    >>> quoted_spans('Locke: "The comprehension of our understandings" in \\'Hamlet\\' and ‘Oliver Twist’.')
    ['"The comprehension of our understandings"', "'Hamlet'", '‘Oliver Twist’']
    """
    return [m.group(0) for m in _QUOTED.finditer(text)]


def name_runs(text: str) -> list[str]:
    """Runs of two or more capitalised words (a sentence's first word may start a run).

    >>> name_runs("Who was the chief guest of 2014 Republic Day? Ask Gerald R. Ford of Michigan.")
    ['Republic Day', 'Ask Gerald R. Ford of Michigan']
    """
    return [m.group(0).rstrip(".-") for m in _NAME_RUN.finditer(text)]


def _normal(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')


def has_phrase(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as whole words; case-sensitively when it has a capital letter.

    >>> has_phrase("Does a business in the US accept cash?", "US"), has_phrase("a business", "US")
    (True, False)
    >>> has_phrase("Tell us now", "US"), has_phrase("the structure of DNA", "dna")
    (False, True)
    """
    flags = 0 if any(c.isupper() for c in phrase) else re.IGNORECASE
    pattern = r"(?<!\w)" + re.escape(_normal(phrase)) + r"(?!\w)"
    return re.search(pattern, _normal(text), flags) is not None


def stem(word: str) -> str:
    """A crude English stem that merges simple inflections (not derivations).

    >>> [stem(w) for w in ("walked", "walking", "walks", "carried", "carries", "boxes", "stopped")]
    ['walk', 'walk', 'walk', 'carry', 'carry', 'box', 'stop']
    >>> stem("Mongolian") == stem("Mongolia"), stem("is"), stem("news")
    (False, 'is', 'news')
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3:
        return w
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "es" and not re.search(r"(ss|x|z|ch|sh|o)es$", w):
                continue
            if suffix == "s" and w.endswith(("ss", "us", "is", "ws")):
                continue
            w = w[: -len(suffix)] + repl
            if suffix in ("ing", "ed") and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # stopped -> stop
            break
    return w


def word_stems(text: str) -> set[str]:
    """The stems of every alphabetic word of ``text``."""
    return {stem(w) for w in re.findall(r"[A-Za-z][A-Za-z'’]*", text)}


def has_word(text: str, word: str) -> bool:
    """``word`` (or a simple inflection of it) is a whole word of ``text``; phrases word by word.

    >>> has_word("He walked home.", "walking"), has_word("a business", "us")
    (True, False)
    """
    parts = re.findall(r"[A-Za-z0-9][A-Za-z0-9'’]*", word)
    if not parts:
        return False
    tokens = [stem(t) for t in re.findall(r"[A-Za-z0-9][A-Za-z0-9'’]*", text)]
    want = [stem(p) for p in parts]
    return any(tokens[i : i + len(want)] == want for i in range(len(tokens) - len(want) + 1))


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])")
ABBREVIATION = re.compile(
    r"(?:[A-Za-z]\.){1,3}|Mr\.|Mrs\.|Ms\.|Dr\.|St\.|Jr\.|Sr\.|vs\.|etc\.|No\.|Nov\.|Dec\.|Jan\.|Feb\.|Aug\.|Sept?\.|Oct\."
)
_DETERMINER = re.compile(
    r"^\S+\s+(a|an|the|this|that|these|those|its|his|her|their|my|your|our|it|he|she|they|we|i|you)\b", re.I
)
_SUBORDINATORS = frozenset({"when", "where", "how", "why"})
_EMBEDDED_IMPERATIVE = re.compile(
    r"(?<!\ba )(?<!\ban )(?<!\bthe )(?<!\bto )"
    + IMPERATIVE.pattern
    + r"\s+(the|which|who|what|whether|how|me)\b",
    re.IGNORECASE,
)
"""An imperative mid-sentence, with its object ("… the pommel horse name the other"); "a name that",
"the US state that" and "to tell the" are not instructions."""


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; a break needs end punctuation, space and a capital or digit,
    and never follows an abbreviation ("U.S.", "Dr.", "Mrs.").

    >>> text = "He met Dr. Ng in the U.S. Then? Ok. 3 left."
    >>> [text[a:b] for a, b in sentence_spans(text)]
    ['He met Dr. Ng in the U.S. Then?', 'Ok.', '3 left.']
    """
    spans, start = [], 0
    for match in SENTENCE_END.finditer(text):
        before = text[start : match.start()].split()
        if before and ABBREVIATION.fullmatch(before[-1]):
            continue
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()] or [(0, len(text))]


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped (see :func:`sentence_spans`)."""
    return [text[a:b].strip() for a, b in sentence_spans(text)]


def asking_sentence(text: str) -> str:
    """The sentence that carries the request: the last one that asks, else the last one.

    >>> asking_sentence("Category: science. Clue: This planet is red. What is the answer to this clue?")
    'What is the answer to this clue?'
    >>> asking_sentence("Is the following statement true or false? Frogs die in hot water.")
    'Is the following statement true or false?'
    """
    parts = [p for p in sentences(text.strip()) if p]
    for part in reversed(parts):
        if part.endswith("?") or _instruction(part):
            return part
    return parts[-1] if parts else ""


def _instruction(sentence: str) -> bool:
    """True when a clause of ``sentence`` starts with an imperative verb ("If …, calculate …"), or an
    imperative verb takes its object mid-sentence ("… one is the pommel horse name the other")."""
    clauses = re.split(r"[,;:]\s*|\s[-–—]\s", sentence)
    return any(IMPERATIVE.match(c.strip()) for c in clauses if c.strip()) or bool(
        _EMBEDDED_IMPERATIVE.search(sentence)
    )


def kind(text: str) -> str:
    """'question', 'instruction' or 'statement' (also fragments) for the text's asking sentence.

    >>> kind("who was it that described the structure of dna"), kind("Tell me who described DNA.")
    ('question', 'instruction')
    >>> kind("If their total age is 162, calculate Allen's age."), kind("This planet is red.")
    ('instruction', 'statement')
    >>> kind("One is the pommel horse name the other."), kind("For a proper fraction, the numerator is")
    ('instruction', 'statement')
    >>> kind("When a fraction is proper, its numerator is"), kind("when does walking dead start")
    ('statement', 'question')
    >>> kind("Laws in the US state that shops must accept cash."), kind("Troop is a name the group has.")
    ('statement', 'statement')
    """
    sentence = asking_sentence(text)
    if sentence.endswith("?"):
        return "question"
    if _instruction(sentence):
        return "instruction"
    first = sentence.split()[0].lower() if sentence.split() else ""
    subordinate = first in _SUBORDINATORS and _DETERMINER.match(sentence)
    if QUESTION_START.match(sentence) and not sentence.endswith(".") and not subordinate:
        return "question"
    return "statement"


def new_answers(original: str, rewrite: str, answers: Iterable[str]) -> list[str]:
    """Gold answers (whole words, with inflections) in ``rewrite`` that ``original`` lacks; verdict words
    (yes/no/true/false) name the answer format, not the answer, and are not counted.

    >>> new_answers("Which planet is red?", "Which planet, Mars or Venus, is red?", ["Mars"])
    ['Mars']
    >>> new_answers("Is it true?", "Say whether it is true or false.", ["false"])
    []
    """
    return [
        a
        for a in answers
        if a.strip() and a.lower() not in VERDICT_WORDS and has_word(rewrite, a) and not has_word(original, a)
    ]
