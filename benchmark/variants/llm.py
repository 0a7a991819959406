"""LLM-made families (length, form): prompts, validation, retry-then-drop, and the rewrite log.

Every rewrite is validated before it is frozen (METHOD.md section 2, stricter than the authors):
  * MiniLM similarity to the original >= :data:`MIN_SIMILARITY`;
  * length: word ratio within a factor :data:`LENGTH_TOLERANCE` of the target;
  * length keeps a question a question; form flips question <-> instruction;
  * no gold answer (or a yes/no/true/false verdict at the start) that the original did not contain;
  * every number, named entity and quotation of the item's own text survives, and none is added;
  * words fit the family (:func:`word_changes`): lengthening keeps every content word, shortening adds
    none, form adds only framing words; negations unchanged; a clue keeps its pointer;
  * no meta text ("Here is the rewritten ...").
Each cell gets up to :data:`ATTEMPTS` candidates from differently worded few-shot requests; the first
valid one wins, and when none is valid the cell is dropped with every reason recorded. Every attempt
(accepted or not) is written to the
rewrite log, which a rebuild replays instead of re-running the model: LLM output is the one input that
is not a pure function of the pinned sources, so the log *is* its pin.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from benchmark.variants import textfacts as tf
from benchmark.variants.rewriter import Chat, Rewriter
from benchmark.variants.similarity import Embedder, similarities

MIN_SIMILARITY = 0.85
"""MiniLM cosine floor, calibrated on the hand-labelled pairs in ``benchmark/data/similarity_pairs.jsonl``
(see :func:`benchmark.variants.calibration.calibrate` and docs/VARIANTS.md)."""
LENGTH_TOLERANCE = 1.5
"""Accepted word ratio: target / 1.5 … target × 1.5 (an LLM cannot count words exactly)."""
ATTEMPTS = 6
"""Candidates per cell, each from a differently worded request; the first valid one wins."""
SCOPED_FROM = 3
"""From this attempt on, a text of several sentences is rewritten a sentence at a time (see :func:`scope`):
a 1.5B rewriter keeps the facts of one sentence far more reliably than those of a whole problem."""
_VERDICTS = {"yes", "no", "true", "false"}
_QUESTION_START = re.compile(
    r"^(who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|can|could|will|would|"
    r"should|shall|has|have|had|may|might|must)\b",
    re.IGNORECASE,
)
_ANSWERING = tf.SOLVING
_META = tf.META
_IMPERATIVE_START = re.compile(
    r"^(tell|give|name|state|explain|find|identify|determine|calculate|compute|work out|say|list|provide|"
    r"describe|write|decide|answer|indicate|let me know|please tell|figure out|specify|report|share|judge|"
    r"assess|evaluate|classify|solve|help)\b",
    re.IGNORECASE,
)
_SYSTEM = (
    "You rewrite text. Keep its exact meaning and every name, number and quotation. Never answer it. "
    "Reply with the rewritten text only."
)
BUDGET_REASON = "not attempted: LLM time budget exhausted"
STOP = ("\n\n", "\nText", "\nExample", "\nRewrite", "\nNote", "\nExplanation")
"""Where a rewrite ends: :func:`clean` keeps the first line, so generating past these is wasted time."""

# Few-shot pairs per request kind: (instruction, original, rewrite). Short on purpose: on a CPU the
# prompt's prefill is most of the cost of a rewrite.
_SHOTS: dict[str, tuple[str, str]] = {
    "shorter": (
        "In which year did the Berlin Wall, which divided the city, finally fall?",
        "When did the Berlin Wall fall?",
    ),
    "1.5": (
        "When did the first man walk on the Moon?",
        "In what year did the first man ever walk on the Moon's surface?",
    ),
    "2": ("Who painted the Mona Lisa?", "Who was it, exactly, that painted the Mona Lisa?"),
    "3": (
        "Who painted the Mona Lisa?",
        "I have a question about the Mona Lisa: who was it, exactly, that painted the Mona Lisa?",
    ),
    "two_sentences": (
        "Who painted the Mona Lisa?",
        "I have a question about the Mona Lisa. Who was it that actually painted the Mona Lisa?",
    ),
    "to_instruction": ("How many legs does a spider have?", "Tell me how many legs a spider has."),
    "to_question": (
        "Calculate the total cost of 3 pens at $2 each.",
        "What is the total cost of 3 pens at $2 each?",
    ),
}
_FORM_WORDINGS = (
    "Rewrite the text as {form}. Keep every name, number and detail. Do not answer it.",
    "Say the same thing as {form}, without answering it and without dropping any detail.",
    "Turn this into {form} with exactly the same meaning. Only output the new text.",
)
_LENGTH_WORDINGS = (
    "Rewrite the text to the length given below. {how} Keep it {form}, keep every name, number and "
    "quotation, and do not answer it.",
    "Make this text {direction} as given below. Same meaning, same names and numbers, still {form}. "
    "Do not answer it.",
    "Rephrase the text to the length given below. {how} Do not answer or add facts.",
)
_WH_CLASSES = {
    "who": "who",
    "whom": "who",
    "whose": "whose",
    "what": "what",
    "which": "what",
    "when": "when",
    "where": "where",
    "why": "why",
    "how": "how",
}


@dataclass(frozen=True)
class Attempt:
    """One request to the rewriter and what became of it (a line of the rewrite log)."""

    dataset: str
    item_id: str
    variant_id: str
    attempt: int
    rewriter: str
    original: str
    output: str
    accepted: bool
    reason: str
    """'' when accepted, else why the attempt was rejected."""
    similarity: float


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
    return bool(_QUESTION_START.match(stripped))


def is_instruction(text: str) -> bool:
    """An instruction is not a question and its first or last sentence opens with an imperative verb
    (premises may come first: "Gunther had 48 bananas. Tell me how many he has left.").

    >>> is_instruction("Tell me how many legs a spider has."), is_instruction("How many legs?")
    (True, False)
    >>> is_instruction("Darrell is 7. Calculate Allen's age."), is_instruction("Darrell is 7. Allen is 9.")
    (True, False)
    """
    stripped = text.strip()
    parts = sentences(stripped)
    return any(_IMPERATIVE_START.match(p) for p in (parts[0], parts[-1])) and not is_question(stripped)


WRAPPER_FORMS = {
    "What is the answer to this clue?": "Tell me what the answer to this clue is.",
    "Is the following statement true or false?": "Say whether the following statement is true or false.",
}
"""Imperative counterparts of the builder's wrapper questions (Jeopardy, misconceptions). There the
sentence that carries the request's form is the wrapper's, which the builder wrote, so from
:data:`SCOPED_FROM` on a form cell flips it with this fixed text instead of asking a model."""
TEMPLATE_TAG = "template:wrapper-form"
"""The ``rewriter`` of a form candidate made from :data:`WRAPPER_FORMS`."""

sentence_spans = tf.sentence_spans


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`textfacts.sentence_spans`).

    >>> sentences("He met Dr. Ng. Then? Ok.")
    ['He met Dr. Ng.', 'Then?', 'Ok.']
    """
    return [text[a:b] for a, b in sentence_spans(text)]


def asks_for(text: str) -> str:
    """The class of the question word a request opens its question with ('' for a yes/no question).

    >>> asks_for("Sara Moore shot at which President?"), asks_for("Tell me who won."), asks_for("Is it?")
    ('what', 'who', '')
    """
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _WH_CLASSES:
            return _WH_CLASSES[word]
    return ""


def words_of(text: str) -> int:
    """Whitespace-separated words."""
    return len(text.split())


_STOP_CAPS = frozenset(
    [
        "I",
        "A",
        "An",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "It",
        "Its",
        "In",
        "On",
        "At",
        "Of",
        "For",
        "And",
        "Or",
        "But",
        "If",
        "When",
        "Where",
        "Who",
        "What",
        "Which",
        "Why",
        "How",
        "Is",
        "Are",
        "Was",
        "Were",
        "Do",
        "Does",
        "Did",
        "Can",
        "Could",
        "Will",
        "Would",
        "Should",
        "Each",
        "Every",
        "Some",
        "All",
        "Her",
        "His",
        "Their",
        "Our",
        "My",
        "Your",
        "Mr",
        "Mrs",
        "Ms",
        "Dr",
        "St",
    ]
)


def numbers_in(text: str) -> list[str]:
    """Numbers of a text by value, digits and number words alike (:func:`textfacts.numbers`).

    >>> numbers_in("Their ages are in the ratio 7:11; in ten years, 1,047 people and a half.")
    ['7', '11', '10', '1047', '1/2']
    """
    return tf.numbers(text)


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


def missing_facts(original: str, rewrite: str) -> list[str]:
    """Numbers, names and quotations of ``original`` that ``rewrite`` lost (quotations verbatim).

    >>> missing_facts("Allen is 162 years old in Ohio.", "How old is Allen?")
    ['162', 'Ohio']
    """
    have_numbers = numbers_in(rewrite)
    lowered = rewrite.lower().replace("’", "'").replace("“", '"').replace("”", '"')
    lost = [n for n in dict.fromkeys(numbers_in(original)) if n not in have_numbers]
    for entity in dict.fromkeys(entities_in(original)):
        plain = entity.lower().replace("’", "'").replace("“", '"').replace("”", '"')
        needle = plain.strip('"') if not entity.startswith(('"', "“")) else plain.strip('"')
        if needle not in lowered:
            lost.append(entity)
    return lost


_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "done",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "about",
        "as",
        "into",
        "onto",
        "upon",
        "over",
        "under",
        "after",
        "before",
        "during",
        "through",
        "between",
        "among",
        "than",
        "then",
        "and",
        "or",
        "but",
        "if",
        "so",
        "because",
        "while",
        "whether",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "what",
        "which",
        "why",
        "how",
        "there",
        "here",
        "i",
        "me",
        "my",
        "we",
        "our",
        "us",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "they",
        "them",
        "their",
        "one",
        "some",
        "any",
        "all",
        "each",
        "every",
        "both",
        "either",
        "such",
        "same",
        "other",
        "another",
        "also",
        "only",
        "just",
        "very",
        "really",
        "actually",
        "more",
        "most",
        "much",
        "many",
        "own",
        "up",
        "out",
    ]
)
"""Words that carry no content of their own: a rewrite may add or drop them freely."""
_FRAMING_WORDS = frozenset(
    [
        "tell",
        "say",
        "give",
        "state",
        "find",
        "determine",
        "explain",
        "name",
        "list",
        "identify",
        "describe",
        "know",
        "let",
        "please",
        "want",
        "like",
        "question",
        "answer",
        "statement",
        "given",
        "following",
        "true",
        "false",
        "clue",
        "category",
        "whether",
        "calculate",
        "compute",
        "work",
        "figure",
        "provide",
        "specify",
        "decide",
        "indicate",
        "report",
        "share",
        "assess",
        "judge",
        "evaluate",
        "classify",
        "solve",
        "help",
    ]
)
"""Words that frame a request rather than state its content: a rewrite may add them (form, topics)."""
_NEGATIONS = re.compile(r"\b(not|no|never|none|nobody|nothing|neither|nor|without)\b|n't\b", re.IGNORECASE)


def content_words(text: str) -> list[str]:
    """Lower-cased words that carry content (no function words, negations or digits).

    >>> content_words("Would Avengers Comics be out of place in a DC Comics store?")
    ['avengers', 'comics', 'place', 'dc', 'comics', 'store']
    """
    words = re.findall(r"[a-z][a-z'’]*", text.lower())
    return [
        w
        for w in (w.rstrip("'’").replace("’", "'").removesuffix("'s") for w in words)
        if w and w not in _FUNCTION_WORDS and not _NEGATIONS.fullmatch(w)
    ]


def _same_word(a: str, b: str) -> bool:
    """Two forms of one word: a shared prefix of 5 letters (or the whole shorter word, when a short
    word differs by at most an ending of 2 letters): 'heat'/'heated', 'describe'/'described', not
    'king'/'kind'."""
    shared = len(os.path.commonprefix([a, b]))
    shorter = min(len(a), len(b))
    return shared >= min(shorter, 5) and (shorter > 4 or abs(len(a) - len(b)) <= 2)


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
    if len(_NEGATIONS.findall(original)) != len(_NEGATIONS.findall(rewrite)):
        return "negation changed"
    before, after = content_words(original), content_words(rewrite)
    dropped = [
        w
        for w in dict.fromkeys(before)
        if w not in _FRAMING_WORDS and not any(_same_word(w, v) for v in after)
    ]
    added = [
        w
        for w in dict.fromkeys(after)
        if w not in _FRAMING_WORDS and not any(_same_word(w, v) for v in before)
    ]
    lowered = original.lower()
    new_names = [
        e
        for e in dict.fromkeys(entities_in(rewrite))
        if re.sub(r"['’]s$", "", e.strip('"“”')).lower().replace("’", "'") not in lowered.replace("’", "'")
    ]
    new_numbers = [n for n in dict.fromkeys(numbers_in(rewrite)) if n not in numbers_in(original)]
    if new_numbers or new_names:
        return "adds " + ", ".join((new_numbers + new_names)[:3])
    if re.search(r"\b(this|these)\b", original, re.IGNORECASE) and not re.search(
        r"\b(this|these)\b", rewrite, re.IGNORECASE
    ):
        return "drops the pointer (this/these)"  # a Jeopardy clue's 'this ...' is what it asks for
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


def _target_words(original: str, item_text: str, strength: float) -> int:
    """Words a length rewrite aims at; a shortening never goes below what the item's facts need.

    The floor is the item's numbers and names plus a few words to ask with; ×0.5 keeps a margin above
    ×0.25's floor so the two cells stay different texts.

    >>> question = "where does the optic nerve cross the midline"
    >>> _target_words(question, "x", 0.25), _target_words(question, "x", 0.5)
    (4, 6)
    """
    words = words_of(original)
    needed = len(numbers_in(item_text)) + sum(words_of(e) for e in entities_in(item_text)) + 4
    if strength >= 1:
        return max(1, round(words * strength))
    floor = needed if strength <= 0.25 else round(needed * 1.3) + 1
    return max(1, min(words, max(round(words * strength), floor)))


def request(job: Job, attempt: int) -> Chat:
    """The few-shot chat that asks for one candidate; each attempt words the request differently.

    Attempts 0 and :data:`SCOPED_FROM` are greedy; the others sample (temperature 0.8) with a seed derived
    from the cell, so a cell gets candidates that differ even where a small model ignores the change of
    wording. From :data:`SCOPED_FROM` on, a one-sentence question lengthened ×2 or more is asked as two
    sentences (a topic sentence that adds no fact, then the question).
    """
    original, words = job.source, words_of(job.source)
    question = is_question(original)
    if job.family == "length":
        target = _target_words(original, job.item_text, job.strength)
        shot = _SHOTS[
            "shorter"
            if job.strength < 1
            else "1.5"
            if job.strength < 1.75
            else "2"
            if job.strength < 2.5
            else "3"
        ]
        how = (
            "Drop filler words and redundant modifiers."
            if job.strength < 1
            else "Add words by restating it more fully (repeat its key words), not by adding politeness, "
            "details or new facts."
        )
        if attempt >= SCOPED_FROM and job.strength >= 2 and question and len(sentence_spans(original)) == 1:
            # A one-sentence question rarely grows 2-3x when restated; a topic sentence first lets it.
            shot = _SHOTS["two_sentences"]
            how = (
                "Write two sentences: one that names the topic with the question's own words, then the "
                "whole question restated. Add no facts."
            )
        ask = _LENGTH_WORDINGS[attempt % len(_LENGTH_WORDINGS)].format(
            how=how,
            form="a question"
            if question
            else "an instruction"
            if is_instruction(original)
            else "a statement",
            direction="shorter" if job.strength < 1 else "longer",
        )
        bound = "about" if attempt == 0 else "at most" if job.strength < 1 else "at least"
        target_line = f"Length: {bound} {target} words.\n"
        budget = int(target * 2.2) + 16
    else:
        shot = _SHOTS["to_instruction" if question else "to_question"]
        form = "an instruction (a command, not a question)" if question else "a question ending with '?'"
        ask = _FORM_WORDINGS[attempt % len(_FORM_WORDINGS)].format(form=form)
        target_line = ""
        budget = int(words * 2) + 16
    # The fixed part (instruction, example) comes first so a server that caches the prompt prefix
    # reuses it across items; what varies (target, text) comes last.
    example = (
        f"Example:\nText ({words_of(shot[0])} words): {shot[0]}\n"
        f"Rewrite ({words_of(shot[1])} words): {shot[1]}\n\n"
    )
    seed = int.from_bytes(hashlib.sha256("\x1f".join([*job.cell, str(attempt)]).encode()).digest()[:4], "big")
    return Chat(
        _SYSTEM,
        f"{ask}\n\n{example}{target_line}Text ({words} words): {original}\nRewrite:",
        budget,
        temperature=0.0 if attempt in (0, SCOPED_FROM) else 0.8,
        seed=seed,
        stop=STOP,
    )


@dataclass(frozen=True)
class Scope:
    """What one attempt asks the rewriter for: ``parts`` are the source cut into sentences (with the
    text between them), ``chosen`` the indices of the parts rewritten, each by its own request."""

    parts: tuple[str, ...]
    chosen: tuple[int, ...]
    jobs: tuple[Job, ...]

    def assemble(self, outputs: Sequence[str]) -> str:
        """The candidate: the source with each chosen sentence replaced by its cleaned rewrite."""
        parts = list(self.parts)
        for index, output in zip(self.chosen, outputs, strict=True):
            parts[index] = clean(output)
        return "".join(parts)


def scope(job: Job, attempt: int) -> Scope | None:
    """The sentences a scoped attempt rewrites one by one, or None when the whole source is one request.

    Attempts before :data:`SCOPED_FROM` and one-sentence sources are whole requests. Form rewrites only
    the sentence that asks (the last, or the first when only it ends with '?'), so the premises of a
    math problem or the statement a true/false item asks about stay verbatim; length rewrites every
    sentence to the multiplier, each keeping its own numbers and names.

    >>> job = Job("d", "1", 0, "Tom has 3 cats. He buys 2. How many cats does he have?", (), "form", 1)
    >>> s = scope(job, 3)
    >>> s.chosen, s.jobs[0].original
    ((5,), 'How many cats does he have?')
    >>> s.assemble(["Tell me how many cats he has."])
    'Tom has 3 cats. He buys 2. Tell me how many cats he has.'
    """
    source = job.source
    spans = sentence_spans(source)
    if attempt < SCOPED_FROM or len(spans) < 2:
        return None
    parts: list[str] = []
    at = 0
    for start, end in spans:
        parts.extend([source[at:start], source[start:end]])
        at = end
    parts.append(source[at:])
    sentence_parts = list(range(1, len(parts), 2))
    if job.family == "length":
        chosen = sentence_parts
    elif is_question(source) and not parts[sentence_parts[-1]].rstrip().endswith("?"):
        chosen = sentence_parts[:1]
    else:
        chosen = sentence_parts[-1:]
    jobs = tuple(
        replace(job, original=parts[i], item_text=parts[i], template="{text}", keep=()) for i in chosen
    )
    return Scope(tuple(parts), tuple(chosen), jobs)


def clean(output: str) -> str:
    """First non-empty line, without a 'Rewrite:' label or wrapping quotes.

    >>> clean('Rewritten question: "Who won?"\\nThe answer is X.')
    'Who won?'
    """
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    text = re.sub(
        r"^(rewritten|shortened|lengthened|new|rephrased)?\s*(question|text|instruction|version|rewrite)"
        r"\s*:\s*",
        "",
        text,
        flags=re.IGNORECASE,
    )
    text = text.strip()
    if len(text) > 1 and text[0] in "\"'`“" and text[-1] in "\"'`”" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    return text.strip("`").strip()


def rejection(job: Job, rewrite: str, similarity: float) -> str:
    """Why ``rewrite`` (of ``job.source``) is not an acceptable variant for ``job`` ('' when it is)."""
    original = job.source
    if not rewrite:
        return "empty"
    if rewrite.strip().lower() == original.strip().lower():
        return "unchanged"
    if _META.search(rewrite):
        return "meta text"
    if _ANSWERING.search(rewrite) and not _ANSWERING.search(original):
        return "answers instead of rewriting"  # small models start solving ("To find ..., we can first")
    if _leaks(original, rewrite, job.answers):
        return "leaks gold answer"
    lost = missing_facts(job.item_text, rewrite) + [k for k in job.keep if k.lower() not in rewrite.lower()]
    if lost:
        return "drops " + ", ".join(lost[:3])
    changed = word_changes(original, rewrite, job.family, job.strength)
    if changed:
        return changed
    if similarity < MIN_SIMILARITY:
        return f"similarity {similarity:.2f} < {MIN_SIMILARITY}"
    ratio = words_of(rewrite) / max(1, words_of(original))
    if job.family == "length":
        target = _target_words(original, job.item_text, job.strength) / max(1, words_of(original))
        if (
            abs(math.log(ratio / target)) > math.log(LENGTH_TOLERANCE)
            or (ratio - 1) * (job.strength - 1) <= 0
        ):
            return f"length ratio {ratio:.2f} far from {target:.2f}"
        if is_question(original) != is_question(rewrite) or (
            is_instruction(original) and not is_instruction(rewrite)
        ):
            return "form changed"
        return _asks_the_same(original, rewrite)
    if is_question(original):
        if not is_instruction(rewrite):
            return "not an instruction"
    elif not is_question(rewrite):
        return "not a question"
    if not 0.5 <= ratio <= 2:
        return "answers instead of rewriting"  # small models start solving ("To find ..., we need to")
    return _asks_the_same(original, rewrite) if is_question(original) else ""


def _asks_the_same(original: str, rewrite: str) -> str:
    """'' when both ask with the same kind of question word (who/what/when/... or yes/no)."""
    before, after = asks_for(original), asks_for(rewrite)
    return "" if before == after else f"asks {after or 'yes/no'} instead of {before or 'yes/no'}"


def _leaks(original: str, rewrite: str, answers: Sequence[str]) -> bool:
    lowered, before = rewrite.lower(), original.lower()
    for answer in (a.strip().lower() for a in answers if a.strip()):
        if answer in _VERDICTS:
            if re.search(rf"\b{answer}\b", lowered) and not re.search(rf"\b{answer}\b", before):
                return True
        elif re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", lowered) and answer not in before:
            return True
    return "the answer is" in lowered and "the answer is" not in before


@dataclass(frozen=True)
class Job:
    """One LLM variant (a cell) to make."""

    dataset: str
    item_id: str
    rank: int
    original: str
    """the baseline prompt the rewriter sees (wrapper included)."""
    answers: tuple[str, ...]
    family: str
    strength: float
    item_text: str = ""
    """the item's own text: its numbers, names and quotations must survive (defaults to ``original``)."""
    template: str = "{text}"
    """the item's wrapper: a length rewrite edits the item's text and is put back into it."""
    keep: tuple[str, ...] = ()
    """wrapper content a form rewrite of the whole request must keep too (e.g. a Jeopardy category)."""

    def __post_init__(self) -> None:
        if not self.item_text:
            object.__setattr__(self, "item_text", self.original)

    @property
    def source(self) -> str:
        """What the rewriter rewrites: the item's own text for length, the whole request for form."""
        return self.item_text if self.family == "length" else self.original

    def prompt(self, rewrite: str) -> str:
        """The variant's prompt from a cleaned rewrite of :attr:`source`."""
        return variant_prompt(self.family, self.template, rewrite)

    @property
    def variant_id(self) -> str:
        return f"{self.family}/global/{self.strength:g}"

    @property
    def cell(self) -> tuple[str, str, str]:
        return (self.dataset, self.item_id, self.variant_id)


def variant_prompt(family: str, template: str, rewrite: str) -> str:
    """A length rewrite is of the item's own text and goes back into its wrapper; form rewrites all of it.

    >>> variant_prompt("length", "Q: {text}", "Who?"), variant_prompt("form", "Q: {text}", "Tell me who.")
    ('Q: Who?', 'Tell me who.')
    """
    return template.replace("{text}", rewrite) if family == "length" else rewrite


LogKey = tuple[str, str, str, int, str]


def read_log(path: Path | None) -> dict[LogKey, Attempt]:
    """Replayable attempts from a rewrite log, keyed by (dataset, item, variant, attempt, original).

    A later line for the same key wins, so an append-only log that was resumed reads correctly.
    """
    if path is None or not path.exists():
        return {}
    attempts = [Attempt(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    return {(a.dataset, a.item_id, a.variant_id, a.attempt, a.original): a for a in attempts}


def _line(attempt: Attempt) -> str:
    return json.dumps(asdict(attempt), ensure_ascii=False, sort_keys=True) + "\n"


def write_log(path: Path, attempts: Sequence[Attempt]) -> None:
    ordered = sorted(attempts, key=lambda a: (a.dataset, a.item_id, a.variant_id, a.attempt))
    path.write_text("".join(_line(a) for a in ordered))


def append_log(path: Path, attempts: Sequence[Attempt]) -> None:
    """Append fresh attempts and flush them to disk (the log of a running stage survives a kill)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(_line(a) for a in attempts if a.rewriter)
        handle.flush()
        os.fsync(handle.fileno())


def run_jobs(
    jobs: Sequence[Job],
    rewriter: Rewriter | None,
    embedder: Embedder,
    *,
    replay: dict[LogKey, Attempt],
    budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    ranks_per_round: int = 1,
    on_fresh: Callable[[list[Attempt]], None] | None = None,
    chunk: int = 32,
    attempts: int = ATTEMPTS,
) -> list[Attempt]:
    """Make every job's variant: replay logged attempts, ask the rewriter for the rest, validate.

    Jobs run a block of item ranks at a time (every dataset's item 0, then item 1, ...), so when
    ``budget_s`` runs out the items evaluated first are the ones covered; jobs not reached are logged as
    not attempted. ``on_fresh`` receives every chunk of newly generated attempts as soon as it exists.
    Raising ``attempts`` above what a log holds lets another rewriter add candidates to its failed cells.
    """
    start = clock()
    done: list[Attempt] = []
    ranks = sorted({job.rank for job in jobs})
    grown: dict[tuple[str, str], dict[float, str]] = {}  # accepted lengthenings per item, for chaining
    used: dict[tuple[str, str], dict[str, str]] = {}  # accepted prompt -> variant id, per item
    for first in range(0, len(ranks), ranks_per_round):
        block = set(ranks[first : first + ranks_per_round])
        pending = [job for job in jobs if job.rank in block]
        for attempt in range(attempts):
            results: list[Attempt] = []
            for at in range(0, len(pending), chunk):
                over = budget_s is not None and clock() - start > budget_s
                part = _attempt_round(
                    pending[at : at + chunk],
                    attempt,
                    rewriter,
                    embedder,
                    replay,
                    skip_fresh=over,
                    grown=grown,
                )
                part = [
                    _distinct(made, job, used)
                    for made, job in zip(part, pending[at : at + chunk], strict=True)
                ]
                for made in part:
                    if made.accepted and made.variant_id.startswith("length/") and _strength(made) > 1:
                        grown.setdefault((made.dataset, made.item_id), {})[_strength(made)] = clean(
                            made.output
                        )
                fresh = [
                    a
                    for a, job in zip(part, pending[at : at + chunk], strict=False)
                    if a.rewriter and (*job.cell, attempt, job.original) not in replay
                ]
                if fresh and on_fresh is not None:
                    on_fresh(fresh)
                results.extend(part)
            done.extend(results)
            settled = {(a.dataset, a.item_id, a.variant_id) for a in results if a.accepted or not a.rewriter}
            pending = [j for j in pending if j.cell not in settled]
            if not pending:
                break
    return done


def _distinct(made: Attempt, job: Job, used: dict[tuple[str, str], dict[str, str]]) -> Attempt:
    """An accepted candidate whose prompt another cell of the item already has is rejected, so the cell
    gets another candidate (×2 and ×3 overlap in length; the first in run order keeps the text)."""
    if not made.accepted:
        return made
    texts = used.setdefault((made.dataset, made.item_id), {})
    text = job.prompt(clean(made.output))
    if texts.setdefault(text, made.variant_id) != made.variant_id:
        return replace(made, accepted=False, reason=f"same text as {texts[text]}")
    return made


def _strength(made: Attempt) -> float:
    return float(made.variant_id.rsplit("/", 1)[1])


def _attempt_round(
    jobs: Sequence[Job],
    attempt: int,
    rewriter: Rewriter | None,
    embedder: Embedder,
    replay: dict[LogKey, Attempt],
    *,
    skip_fresh: bool,
    grown: Mapping[tuple[str, str], Mapping[float, str]] | None = None,
) -> list[Attempt]:
    logged = {i: replay.get((*j.cell, attempt, j.original)) for i, j in enumerate(jobs)}
    fresh = [i for i, found in logged.items() if found is None]
    outputs = {i: (found.rewriter, found.output) for i, found in logged.items() if found is not None}
    skipped = {i for i, found in logged.items() if found is not None and not found.rewriter}
    if fresh and skip_fresh:
        outputs.update({i: ("", "") for i in fresh})
        skipped.update(fresh)
    elif fresh:
        if rewriter is None:
            raise ValueError("rewrite log is incomplete and no rewriter was given")
        outputs.update(
            dict(zip(fresh, _ask(rewriter, [jobs[i] for i in fresh], attempt, grown or {}), strict=True))
        )
    cleaned = [clean(outputs[i][1]) for i in range(len(jobs))]
    scores = similarities(
        embedder, [(job.source, text or job.source) for job, text in zip(jobs, cleaned, strict=False)]
    )
    return [
        Attempt(
            job.dataset, job.item_id, job.variant_id, attempt, "", job.original, "", False, BUDGET_REASON, 0.0
        )
        if i in skipped
        else _judge(job, attempt, outputs[i], cleaned[i], scores[i])
        for i, job in enumerate(jobs)
    ]


def _ask(
    rewriter: Rewriter,
    jobs: Sequence[Job],
    attempt: int,
    grown: Mapping[tuple[str, str], Mapping[float, str]],
) -> list[tuple[str, str]]:
    """(who made it, output) per job: the raw reply for a whole request, the assembled text for a scoped
    one (what the log keeps, so a replay needs neither the model nor the scoping rule)."""
    jobs = [chained(job, attempt, grown.get((job.dataset, job.item_id), {})) or job for job in jobs]
    scopes = [scope(job, attempt) for job in jobs]
    fixed = [wrapper_form(job, s) for job, s in zip(jobs, scopes, strict=True)]
    chats = [
        request(piece, attempt)
        for job, s, f in zip(jobs, scopes, fixed, strict=True)
        if f is None
        for piece in (s.jobs if s else (job,))
    ]
    replies = iter(rewriter.complete(chats) if chats else [])
    return [
        (TEMPLATE_TAG, f)
        if f is not None
        else (rewriter.tag, s.assemble([next(replies) for _ in s.jobs]) if s else next(replies))
        for s, f in zip(scopes, fixed, strict=True)
    ]


def chained(job: Job, attempt: int, grown: Mapping[float, str]) -> Job | None:
    """From :data:`SCOPED_FROM` on, a ×2 or ×3 lengthening starts from the item's longest accepted
    shorter lengthening (×1.5, ×2) and asks only for the rest of the growth: a small rewriter adds a
    half again far more reliably than it triples a text. The candidate is still judged against the
    original; the log keeps the candidate, so a replay needs no chain. None when there is no base.

    >>> job = Job("d", "1", 0, "Who wrote Hamlet?", (), "length", 3)
    >>> chained(job, SCOPED_FROM, {1.5: "Who was it that wrote Hamlet?"}).original
    'Who was it that wrote Hamlet?'
    """
    if job.family != "length" or job.strength < 2 or attempt < SCOPED_FROM:
        return None
    bases = [text for strength, text in sorted(grown.items()) if 1 < strength < job.strength]
    if not bases:
        return None
    base = bases[-1]
    rest = job.strength * words_of(job.source) / max(1, words_of(base))
    if rest < 1.2:
        return None
    return replace(job, original=base, item_text=base, template="{text}", strength=round(rest, 2))


def wrapper_form(job: Job, scoped: Scope | None) -> str | None:
    """The form candidate of a scoped attempt whose asking sentence is the builder's wrapper question:
    the wrapper's fixed counterpart (:data:`WRAPPER_FORMS`), the item's own text verbatim; else None.

    >>> job = Job("d", "1", 0, "Is the following statement true or false? Frogs die.", (), "form", 1)
    >>> wrapper_form(job, scope(job, SCOPED_FROM))
    'Say whether the following statement is true or false. Frogs die.'
    """
    if job.family != "form" or scoped is None or len(scoped.chosen) != 1:
        return None
    counterpart = WRAPPER_FORMS.get(scoped.parts[scoped.chosen[0]].strip())
    return None if counterpart is None else scoped.assemble([counterpart])


def _judge(job: Job, attempt: int, made: tuple[str, str], text: str, score: float) -> Attempt:
    reason = rejection(job, text, score)
    return Attempt(
        job.dataset,
        job.item_id,
        job.variant_id,
        attempt,
        made[0],
        job.original,
        made[1],
        not reason,
        reason,
        score,
    )
