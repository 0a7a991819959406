"""Whether a model's rewrite is an acceptable variant of its cell (:func:`rejection`, '' when it is).

Numbers, quotations, sentences, question words and the start of a solution or of meta text come from
:mod:`benchmark.variants.textfacts`, shared with the guards and the written cells' checker; what is
particular to a model's candidate (which words a family may add or drop, the length target, the kind
of request) is here.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence

from benchmark.variants import textfacts as tf
from benchmark.variants.llm.job import Job

MIN_SIMILARITY = 0.85
"""MiniLM cosine floor, calibrated on the hand-labelled pairs in ``benchmark/data/similarity_pairs.jsonl``
(see :func:`benchmark.variants.calibration.calibrate` and docs/VARIANTS.md)."""
LENGTH_TOLERANCE = 1.5
"""Accepted word ratio: target / 1.5 … target × 1.5 (an LLM cannot count words exactly)."""

_IMPERATIVE_START = re.compile(
    r"^(tell|give|name|state|explain|find|identify|determine|calculate|compute|work out|say|list|provide|"
    r"describe|write|decide|answer|indicate|let me know|please tell|figure out|specify|report|share|judge|"
    r"assess|evaluate|classify|solve|help)\b",
    re.IGNORECASE,
)
"""Verbs that open an instruction (the model path's list: it reads the first or last sentence only)."""


_WH_CLASSES = {
    **{w: w for w in ("who", "whose", "what", "when", "where", "why", "how")},
    "whom": "who",
    "which": "what",
}
"""Question words by the kind of answer they ask for."""
_STOP_CAPS = tf.word_list(
    """I A An The This That These Those It Its In On At Of For And Or But If When Where Who What Which
    Why How Is Are Was Were Do Does Did Can Could Will Would Should Each Every Some All Her His Their
    Our My Your Mr Mrs Ms Dr St"""
)
"""Capitalised words that are not names even mid-sentence."""
_FUNCTION_WORDS = tf.word_list(
    """a an the this that these those it its is are was were be been being am do does did done doing
    have has had having will would shall should can could may might must of in on at to for from by
    with about as into onto upon over under after before during through between among than then and or
    but if so because while whether when where who whom whose what which why how there here i me my we
    our us you your he him his she her they them their one some any all each every both either such
    same other another also only just very really actually more most much many own up out"""
)
"""Words that carry no content of their own: a rewrite may add or drop them freely."""
_FRAMING_WORDS = tf.word_list(
    """tell say give state find determine explain name list identify describe know let please want like
    question answer statement given following true false clue category whether calculate compute work
    figure provide specify decide indicate report share assess judge evaluate classify solve
    help"""
)
"""Words that frame a request rather than state its content: a rewrite may add them (form, topics)."""
_POINTER = re.compile(r"\b(this|these)\b", re.IGNORECASE)
"""A Jeopardy clue's 'this ...' is what it asks for."""


def is_question(text: str) -> bool:
    """A request is a question when its first or last sentence ends with '?' (or, without end
    punctuation, opens with an interrogative word): "Is the following statement true or false? X." asks.

    >>> is_question("where does the optic nerve cross"), is_question("Tell me where it crosses.")
    (True, False)
    >>> is_question("Is the following statement true or false? Frogs die."), is_question("What? Explain it.")
    (True, True)
    >>> is_question("Darrell is 7. Calculate Allen's age.")
    False
    """
    stripped = text.strip().rstrip("\"'”’)")
    first = re.split(r"(?<=[.!?])\s", stripped, maxsplit=1)[0].rstrip("\"'”’)")
    if stripped.endswith("?") or first.endswith("?"):
        return True
    if stripped.endswith((".", "!", ":")):
        return False
    return bool(tf.QUESTION_START.match(stripped))


def is_instruction(text: str) -> bool:
    """An instruction is not a question and its first or last sentence opens with an imperative verb
    (premises may come first: "Gunther had 48 bananas. Tell me how many he has left.").

    >>> is_instruction("Tell me how many legs a spider has."), is_instruction("How many legs?")
    (True, False)
    >>> is_instruction("Darrell is 7. Calculate Allen's age."), is_instruction("Darrell is 7. Allen is 9.")
    (True, False)
    """
    stripped = text.strip()
    parts = tf.sentences(stripped)
    return any(_IMPERATIVE_START.match(p) for p in (parts[0], parts[-1])) and not is_question(stripped)


def kind_phrase(text: str) -> str:
    """The kind of request, as a length request names what the rewrite must stay.

    >>> kind_phrase("Who won?"), kind_phrase("Tell me who won."), kind_phrase("Tom won.")
    ('a question', 'an instruction', 'a statement')
    """
    return "a question" if is_question(text) else "an instruction" if is_instruction(text) else "a statement"


def asks_for(text: str) -> str:
    """The class of the question word a request opens its question with ('' for a yes/no question).

    >>> asks_for("Sara Moore shot at which President?"), asks_for("Tell me who won."), asks_for("Is it?")
    ('what', 'who', '')
    """
    return next((_WH_CLASSES[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _WH_CLASSES), "")


def entities_in(text: str) -> list[str]:
    """Capitalised words not at a sentence start (names, places, titles) and quoted spans.

    >>> entities_in('Darrell and Allen met. Then "Bomb Plot" in the Oval Office.')
    ['Allen', 'Plot', 'Oval', 'Office', '"Bomb Plot"']
    """
    names = []
    for match in re.finditer(r"(?<![\w'’])[A-Z][\w'’\-]*", text):
        before = text[: match.start()].rstrip()
        at_start = not before or before[-1] in '.!?:;"“(' or before.endswith("Clue")
        word = match.group(0).rstrip("'’")
        if not at_start and word not in _STOP_CAPS and len(word) > 1:
            names.append(word)
    return names + tf.quoted_spans(text)


def _plain(text: str) -> str:
    return text.lower().replace("’", "'").replace("“", '"').replace("”", '"')


def missing_facts(original: str, rewrite: str) -> list[str]:
    """Numbers, names and quotations of ``original`` that ``rewrite`` lost (quotations verbatim).

    >>> missing_facts("Allen is 162 years old in Ohio.", "How old is Allen?")
    ['162', 'Ohio']
    """
    have_numbers, lowered = tf.numbers(rewrite), _plain(rewrite)
    lost = [n for n in dict.fromkeys(tf.numbers(original)) if n not in have_numbers]
    return lost + [e for e in dict.fromkeys(entities_in(original)) if _plain(e).strip('"') not in lowered]


def content_words(text: str) -> list[str]:
    """Lower-cased words that carry content (no function words, negations or digits).

    >>> content_words("Would Avengers Comics be out of place in a DC Comics store?")
    ['avengers', 'comics', 'place', 'dc', 'comics', 'store']
    """
    words = re.findall(r"[a-z][a-z'’]*", text.lower())
    return [
        w
        for w in (w.rstrip("'’").replace("’", "'").removesuffix("'s") for w in words)
        if w and w not in _FUNCTION_WORDS and not tf.NEGATIONS.fullmatch(w)
    ]


def _same_word(a: str, b: str) -> bool:
    """Two forms of one word: a shared prefix of 5 letters (or the whole shorter word, when a short
    word differs by at most an ending of 2 letters): 'heat'/'heated', 'describe'/'described', not
    'king'/'kind'."""
    shared = len(os.path.commonprefix([a, b]))
    shorter = min(len(a), len(b))
    return shared >= min(shorter, 5) and (shorter > 4 or abs(len(a) - len(b)) <= 2)


def _unmatched(words: list[str], others: list[str]) -> list[str]:
    return [
        w
        for w in dict.fromkeys(words)
        if w not in _FRAMING_WORDS and not any(_same_word(w, v) for v in others)
    ]


def _new_facts(original: str, rewrite: str) -> list[str]:
    """Numbers, then names, of ``rewrite`` that ``original`` lacks."""
    lowered = original.lower().replace("’", "'")
    new_names = [
        e
        for e in dict.fromkeys(entities_in(rewrite))
        if re.sub(r"['’]s$", "", e.strip('"“”')).lower().replace("’", "'") not in lowered
    ]
    have = tf.numbers(original)
    return [n for n in dict.fromkeys(tf.numbers(rewrite)) if n not in have] + new_names


def word_changes(original: str, rewrite: str, family: str, strength: float) -> str:
    """Why the words of ``rewrite`` do not fit its family ('' when they do).

    A lengthening keeps every content word of the original (it restates more fully, it does not swap
    'skip' for 'fulfill'); a shortening uses only words of the original (it drops, it does not swap
    'out of place' for 'fit'); a form flip keeps every content word and adds only framing words
    ('tell', 'whether', ...). None may add a number or a name, or change how often the text negates.

    >>> word_changes("Would Avengers Comics be out of place in a DC Comics store?",
    ...              "Could Avengers Comics fit in a DC Comics store?", "length", 0.5)
    'adds fit'
    >>> word_changes("Can actress Danica McKellar skip astronaut education requirements?",
    ...              "Could actress Danica McKellar fulfill the astronaut education requirements?",
    ...              "length", 1.5)
    'drops skip'
    >>> word_changes("Is hanging legal at sea?", "Is hanging not legal at sea?", "length", 1.5)
    'negation changed'
    >>> word_changes("Did Bill Clinton resign?", "Did Bill Clinton's term end in resigning?", "length", 2)
    ''
    >>> word_changes("who described dna", "Who was the person who described the DNA, exactly?", "length", 3)
    ''
    """
    if len(tf.NEGATIONS.findall(original)) != len(tf.NEGATIONS.findall(rewrite)):
        return "negation changed"
    new = _new_facts(original, rewrite)
    if new:
        return "adds " + ", ".join(new[:3])
    if _POINTER.search(original) and not _POINTER.search(rewrite):
        return "drops the pointer (this/these)"
    return _content_changes(original, rewrite, family, strength)


def _content_changes(original: str, rewrite: str, family: str, strength: float) -> str:
    """The content words a family may not add or drop (see :func:`word_changes`)."""
    before, after = content_words(original), content_words(rewrite)
    dropped, added = _unmatched(before, after), _unmatched(after, before)
    if family == "length" and strength < 1:
        return "adds " + ", ".join(added[:3]) if added else ""
    if dropped:
        return "drops " + ", ".join(dropped[:3])
    if family == "length" and len(added) > 1 + len(set(before)) // 2:
        # Restating more fully repeats and frames; a run of new content words is a new claim
        # ("..., while not inherently fatal, can lead to various health issues, including heatstroke").
        return f"adds {len(added)} content words"
    if family == "form" and added:
        return "adds " + ", ".join(added[:3])
    return ""


def target_words(original: str, item_text: str, strength: float) -> int:
    """Words a length rewrite aims at; a shortening never goes below what the item's facts need.

    The floor is the item's numbers and names plus a few words to ask with; ×0.5 keeps a margin above
    ×0.25's floor so the two cells stay different texts.

    >>> question = "where does the optic nerve cross the midline"
    >>> target_words(question, "x", 0.25), target_words(question, "x", 0.5)
    (4, 6)
    """
    words = tf.words(original)
    needed = len(tf.numbers(item_text)) + sum(tf.words(e) for e in entities_in(item_text)) + 4
    if strength >= 1:
        return max(1, round(words * strength))
    floor = needed if strength <= 0.25 else round(needed * 1.3) + 1
    return max(1, min(words, max(round(words * strength), floor)))


def rejection(job: Job, rewrite: str, similarity: float) -> str:
    """Why ``rewrite`` (of ``job.source``) is not an acceptable variant for ``job`` ('' when it is).

    The checks run in a fixed order and the first that fails names the reason: the text itself (empty,
    unchanged, meta, a solution, a leaked answer), the item's facts, the family's words, similarity,
    then the family's shape (length and kind kept, or the kind flipped).
    """
    return (
        _surface(job, rewrite)
        or _lost(job, rewrite)
        or word_changes(job.source, rewrite, job.family, job.strength)
        or (f"similarity {similarity:.2f} < {MIN_SIMILARITY}" if similarity < MIN_SIMILARITY else "")
        or (_length_shape(job, rewrite) if job.family == "length" else _form_shape(job.source, rewrite))
    )


def _surface(job: Job, rewrite: str) -> str:
    original = job.source
    if not rewrite:
        return "empty"
    if rewrite.strip().lower() == original.strip().lower():
        return "unchanged"
    if tf.META.search(rewrite):
        return "meta text"
    if tf.SOLVING.search(rewrite) and not tf.SOLVING.search(original):
        return "answers instead of rewriting"  # small models start solving ("To find ..., we can first")
    return "leaks gold answer" if _leaks(original, rewrite, job.answers) else ""


def _lost(job: Job, rewrite: str) -> str:
    """The item's numbers, names and quotations, and the wrapper content to keep, that ``rewrite`` lost."""
    lost = missing_facts(job.item_text, rewrite) + [k for k in job.keep if k.lower() not in rewrite.lower()]
    return "drops " + ", ".join(lost[:3]) if lost else ""


def _length_shape(job: Job, rewrite: str) -> str:
    """A length rewrite reaches its target ratio (in the right direction) and keeps the request's kind."""
    original = job.source
    ratio = tf.words(rewrite) / max(1, tf.words(original))
    target = target_words(original, job.item_text, job.strength) / max(1, tf.words(original))
    if abs(math.log(ratio / target)) > math.log(LENGTH_TOLERANCE) or (ratio - 1) * (job.strength - 1) <= 0:
        return f"length ratio {ratio:.2f} far from {target:.2f}"
    if is_question(original) != is_question(rewrite) or (
        is_instruction(original) and not is_instruction(rewrite)
    ):
        return "form changed"
    return _asks_the_same(original, rewrite)


def _form_shape(original: str, rewrite: str) -> str:
    """A form rewrite flips question <-> instruction, about as long, asking with the same question word."""
    if is_question(original):
        if not is_instruction(rewrite):
            return "not an instruction"
    elif not is_question(rewrite):
        return "not a question"
    if not 0.5 <= tf.words(rewrite) / max(1, tf.words(original)) <= 2:
        return "answers instead of rewriting"  # small models start solving ("To find ..., we need to")
    return _asks_the_same(original, rewrite) if is_question(original) else ""


def _asks_the_same(original: str, rewrite: str) -> str:
    """'' when both ask with the same kind of question word (who/what/when/... or yes/no)."""
    before, after = asks_for(original), asks_for(rewrite)
    return "" if before == after else f"asks {after or 'yes/no'} instead of {before or 'yes/no'}"


def _leaks(original: str, rewrite: str, answers: Sequence[str]) -> bool:
    """``rewrite`` names a gold answer (or a verdict word, or 'the answer is') that ``original`` did not."""
    lowered, before = rewrite.lower(), original.lower()
    for answer in (a.strip().lower() for a in answers if a.strip()):
        if answer in tf.VERDICT_WORDS:
            if re.search(rf"\b{answer}\b", lowered) and not re.search(rf"\b{answer}\b", before):
                return True
        elif re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", lowered) and answer not in before:
            return True
    return "the answer is" in lowered and "the answer is" not in before
