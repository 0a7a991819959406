"""Our rule-based families (METHOD.md section 2, "ours"): typos, contractions, fillers, lowercase,
format templates and an irrelevant suffix. Same signature as :mod:`benchmark.variants.rules`.

None of them inserts into or edits a gold answer where the prompt contains one, and none touches digits
(a changed number changes the question).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np  # noqa: F401 - the doctests draw from np.random.default_rng
from numpy.random import Generator

from benchmark.variants.guards import is_word, next_to_number
from benchmark.variants.rules import gap_slots, insert_at, protected_spans, replace_spans
from benchmark.variants.textfacts import word_list

# QWERTY neighbours, so a typo is one a hurried typist would make.
_NEIGHBOURS: dict[str, str] = dict(
    zip(
        "qwertyuiopasdfghjklzxcvbnm",
        word_list(
            "wa qes wrd etf ryg tuh yij uok ipl ol qsz adwx sfex dgrc fhtv gjyb hkun jlim kop asx zsdc xdfv "
            "cfgb vghn bhjm njk"
        ),
        strict=True,
    )
)


def _unprotected(matches: Iterable[re.Match[str]], text: str, protect: Sequence[str]) -> list[re.Match[str]]:
    """The ``matches`` that overlap no protected span of ``text``."""
    spans = protected_spans(text, protect)
    return [m for m in matches if not any(start < m.end() and m.start() < end for start, end in spans)]


def _typo(word: str, rng: Generator) -> str | None:
    """One keyboard slip inside ``word`` (never its first letter) that is not another dictionary word."""
    for _ in range(8):
        position, kind = int(rng.integers(1, len(word))), int(rng.integers(0, 4))
        letter = word[position]
        near = _NEIGHBOURS.get(letter.lower(), letter)
        if kind == 0:
            swap = near[int(rng.integers(0, len(near)))]
            made = word[:position] + (swap.upper() if letter.isupper() else swap) + word[position + 1 :]
        elif kind == 1 and position + 1 < len(word):
            made = word[:position] + word[position + 1] + letter + word[position + 2 :]
        elif kind == 2:
            made = word[:position] + word[position + 1 :]
        else:
            made = word[:position] + letter + word[position:]
        if made != word and not is_word(made):
            return made
    return None


def typos(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Make exactly ``strength`` keyboard typos, one per word, or return ``text`` unchanged if it cannot.

    A typo (neighbour key, swap, drop or double a letter) never hits a word's first letter, a protected
    span (gold answer, quotation, name, spelled word) or produces another dictionary word, so the
    strength is the number of edits actually made.

    >>> typos("Where is the Eiffel Tower?", "global", 1, np.random.default_rng(1), ["Eiffel Tower"])[-13:]
    'Eiffel Tower?'
    >>> typos("Who won?", "global", 1, np.random.default_rng(1), [])
    'Who won?'
    """
    # Words of 4+ letters only: short words are too easy to destroy.
    words = _unprotected(re.finditer(r"(?<![\w'’])[A-Za-z]{4,}(?![\w'’])", text), text, protect)
    if len(words) < int(strength):
        return text
    edits: list[tuple[int, int, str]] = []
    for index in rng.permutation(len(words)):
        if len(edits) == int(strength):
            break
        word = words[int(index)]
        made = _typo(word.group(0), rng)
        if made is not None:
            edits.append((word.start(), word.end(), made))
    if len(edits) < int(strength):
        return text
    return replace_spans(text, sorted(edits))


_CONTRACTED: dict[str, str] = dict(
    pair.split("|")
    for pair in word_list(
        "do not|don't,does not|doesn't,did not|didn't,is not|isn't,are not|aren't,was not|wasn't,"
        "were not|weren't,cannot|can't,will not|won't,would not|wouldn't,could not|couldn't,"
        "should not|shouldn't,has not|hasn't,have not|haven't,had not|hadn't,it is|it's,what is|what's,"
        "who is|who's,where is|where's,that is|that's,there is|there's,how is|how's,I am|I'm,"
        "you are|you're,they are|they're,we are|we're,let us|let's",
        ",",
    )
)
"""Expanded form -> its contraction (the family toggles either way)."""
_TOGGLE = {k.lower(): v for k, v in _CONTRACTED.items()} | {v.lower(): k for k, v in _CONTRACTED.items()}
_TOGGLE_RE = re.compile(
    r"\b(" + "|".join(re.escape(k) for k in sorted(_TOGGLE, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def _match_case(source: str, target: str) -> str:
    return target[0].upper() + target[1:] if source[0].isupper() else target


def contractions(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Contract expanded forms and expand contractions at a ``strength`` fraction of the sites (≥ 1).

    >>> contractions("What is it? It doesn't fly.", "global", 1, np.random.default_rng(0), [])
    "What's it? It does not fly."
    """
    sites = _unprotected(_TOGGLE_RE.finditer(text), text, protect)
    if not sites:
        return text
    count = max(1, round(len(sites) * strength))
    chosen = {int(i) for i in rng.choice(len(sites), size=min(count, len(sites)), replace=False)}
    toggled = [(m.start(), m.end(), _match_case(m.group(0), _TOGGLE[m.group(0).lower()])) for m in sites]
    return replace_spans(text, [edit for index, edit in enumerate(toggled) if index in chosen])


FILLERS = word_list(
    "um,|uh,|well,|like,|so,|basically,|actually,|you know,|I mean,|kind of|sort of|literally", "|"
)


def filler_words(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Insert ``strength`` spoken fillers at word boundaries outside protected spans and away from numbers.

    >>> filler_words("Who won the cup?", "global", 1, np.random.default_rng(1), [])
    'Who won basically, the cup?'
    """
    slots = [s for s in gap_slots(text, protect) if 0 < s < len(text) and not next_to_number(text, s)] or [0]
    words = [FILLERS[int(i)] for i in rng.integers(0, len(FILLERS), size=int(strength))]
    places = [slots[int(i)] for i in rng.choice(len(slots), size=len(words), replace=True)]
    return insert_at(text, [(p, f" {w}" if p else f"{w} ") for p, w in zip(places, words, strict=False)])


def lowercase(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Lower-case ``strength`` % of the words that contain a capital (at least one); 100 = all lower-case.

    >>> lowercase("Who Wrote Hamlet?", "global", 100, np.random.default_rng(0), [])
    'who wrote hamlet?'
    """
    words = [m for m in re.finditer(r"\S+", text) if any(c.isupper() for c in m.group(0))]
    if not words:
        return text
    count = max(1, round(len(words) * strength / 100))
    chosen = sorted(int(i) for i in rng.choice(len(words), size=min(count, len(words)), replace=False))
    return replace_spans(text, [(w.start(), w.end(), w.group(0).lower()) for w in (words[i] for i in chosen)])


# More scaffolding with each level: a bare label, a question/answer frame, a sectioned template.
FORMAT_TEMPLATES: tuple[str, ...] = (
    "Q: {text}",
    "Question: {text}\nAnswer:",
    "### Question\n{text}\n\n### Answer\n",
    "=== INPUT ===\n{text}\n=== END OF INPUT ===\n\nRespond below.\n---\n",
)


def format_change(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Wrap the prompt in template ``strength`` (1..4) of :data:`FORMAT_TEMPLATES`.

    >>> format_change("Who?", "global", 2, np.random.default_rng(0), [])
    'Question: Who?\\nAnswer:'
    """
    return FORMAT_TEMPLATES[int(strength) - 1].format(text=text)


IRRELEVANT: tuple[str, ...] = (
    "By the way, it rained here this morning.",
    "My neighbour just painted her fence green.",
    "I am typing this on a new keyboard.",
    "The coffee machine at work broke again today.",
    "I had pasta for lunch.",
    "My cat is asleep on the sofa right now.",
    "The train was late again this morning.",
    "I still need to water the plants later.",
    "There is a concert in the park this weekend.",
    "I bought a new pair of running shoes yesterday.",
)


def irrelevant_suffix(text: str, place: str, strength: float, rng: Generator, protect: Sequence[str]) -> str:
    """Append ``strength`` distinct irrelevant sentences about the asker's day.

    >>> irrelevant_suffix("Who?", "suffix", 1, np.random.default_rng(0), []).startswith("Who? ")
    True
    """
    chosen = rng.choice(len(IRRELEVANT), size=int(strength), replace=False)
    return text + " " + " ".join(IRRELEVANT[int(i)] for i in chosen)
