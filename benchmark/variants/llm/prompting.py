"""What the model rewriter is asked: few-shot requests, worded differently per attempt, and from
:data:`SCOPED_FROM` on the narrower asks a small model keeps the facts of (a sentence at a time, a chain
of lengthenings, the wrapper's fixed counterpart); and :func:`clean`, which reads a reply.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from benchmark.variants import textfacts as tf
from benchmark.variants.llm.job import Job
from benchmark.variants.llm.validation import is_question, kind_phrase, target_words
from benchmark.variants.rewriter import Chat

SCOPED_FROM = 3
"""From this attempt on, a text of several sentences is rewritten a sentence at a time (see :func:`scope`):
a 1.5B rewriter keeps the facts of one sentence far more reliably than those of a whole problem."""
STOP = ("\n\n", "\nText", "\nExample", "\nRewrite", "\nNote", "\nExplanation")
"""Where a rewrite ends: :func:`clean` keeps the first line, so generating past these is wasted time."""
SAMPLED_TEMPERATURE = 0.8
"""Temperature of the attempts that sample (all but 0 and :data:`SCOPED_FROM`, which are greedy)."""
_SYSTEM = (
    "You rewrite text. Keep its exact meaning and every name, number and quotation. Never answer it. "
    "Reply with the rewritten text only."
)

# Few-shot pairs per request kind: (original, rewrite). Short on purpose: on a CPU the prompt's prefill
# is most of the cost of a rewrite.
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
_SHORTEN = "Drop filler words and redundant modifiers."
_LENGTHEN = (
    "Add words by restating it more fully (repeat its key words), not by adding politeness, "
    "details or new facts."
)
_TWO_SENTENCES = (
    "Write two sentences: one that names the topic with the question's own words, then the "
    "whole question restated. Add no facts."
)

WRAPPER_FORMS = {
    "What is the answer to this clue?": "Tell me what the answer to this clue is.",
    "Is the following statement true or false?": "Say whether the following statement is true or false.",
}
"""Imperative counterparts of the builder's wrapper questions (Jeopardy, misconceptions). There the
sentence that carries the request's form is the wrapper's, which the builder wrote, so from
:data:`SCOPED_FROM` on a form cell flips it with this fixed text instead of asking a model."""
TEMPLATE_TAG = "template:wrapper-form"
"""The ``rewriter`` of a form candidate made from :data:`WRAPPER_FORMS`."""


@dataclass(frozen=True)
class _Ask:
    """The family-specific part of a request."""

    instruction: str
    shot: tuple[str, str]
    """the example (original, rewrite)."""
    target_line: str
    """'Length: … words.' for a length request, '' for form."""
    max_new_tokens: int


def request(job: Job, attempt: int) -> Chat:
    """The few-shot chat that asks for one candidate; each attempt words the request differently.

    Attempts 0 and :data:`SCOPED_FROM` are greedy; the others sample (:data:`SAMPLED_TEMPERATURE`) with
    a seed derived from the cell, so a cell gets candidates that differ even where a small model ignores
    the change of wording. From :data:`SCOPED_FROM` on, a one-sentence question lengthened ×2 or more is
    asked as two sentences (a topic sentence that adds no fact, then the question).
    """
    ask = _length_ask(job, attempt) if job.family == "length" else _form_ask(job, attempt)
    original, shot = job.source, ask.shot
    # The fixed part (instruction, example) comes first so a server that caches the prompt prefix
    # reuses it across items; what varies (target, text) comes last.
    fixed = (
        f"{ask.instruction}\n\nExample:\nText ({tf.words(shot[0])} words): {shot[0]}\n"
        f"Rewrite ({tf.words(shot[1])} words): {shot[1]}\n\n"
    )
    varying = f"{ask.target_line}Text ({tf.words(original)} words): {original}\nRewrite:"
    # the sampling seed is the cell's and the attempt's, so every request is reproducible
    digest = hashlib.sha256("\x1f".join([*job.cell, str(attempt)]).encode()).digest()
    return Chat(
        _SYSTEM,
        fixed + varying,
        ask.max_new_tokens,
        temperature=0.0 if attempt in (0, SCOPED_FROM) else SAMPLED_TEMPERATURE,
        seed=int.from_bytes(digest[:4], "big"),
        stop=STOP,
    )


def _length_ask(job: Job, attempt: int) -> _Ask:
    original, strength = job.source, job.strength
    target = target_words(original, job.item_text, strength)
    size = "shorter" if strength < 1 else "1.5" if strength < 1.75 else "2" if strength < 2.5 else "3"
    shot, how = _SHOTS[size], _SHORTEN if strength < 1 else _LENGTHEN
    # A one-sentence question rarely grows 2-3x when restated; a topic sentence first lets it.
    one_sentence_question = is_question(original) and len(tf.sentences(original)) == 1
    if attempt >= SCOPED_FROM and strength >= 2 and one_sentence_question:
        shot, how = _SHOTS["two_sentences"], _TWO_SENTENCES
    instruction = _LENGTH_WORDINGS[attempt % len(_LENGTH_WORDINGS)].format(
        how=how, form=kind_phrase(original), direction="shorter" if strength < 1 else "longer"
    )
    bound = "about" if attempt == 0 else "at most" if strength < 1 else "at least"
    return _Ask(instruction, shot, f"Length: {bound} {target} words.\n", int(target * 2.2) + 16)


def _form_ask(job: Job, attempt: int) -> _Ask:
    question = is_question(job.source)
    form = "an instruction (a command, not a question)" if question else "a question ending with '?'"
    return _Ask(
        _FORM_WORDINGS[attempt % len(_FORM_WORDINGS)].format(form=form),
        _SHOTS["to_instruction" if question else "to_question"],
        "",
        int(tf.words(job.source) * 2) + 16,
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
    spans = tf.sentence_spans(source)
    if attempt < SCOPED_FROM or len(spans) < 2:
        return None
    parts = _cut(source, spans)
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


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """``text`` as [between, sentence, between, …, sentence, between]: sentences at the odd indices."""
    parts: list[str] = []
    at = 0
    for start, end in spans:
        parts.extend([text[at:start], text[start:end]])
        at = end
    return [*parts, text[at:]]


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
    rest = job.strength * tf.words(job.source) / max(1, tf.words(base))
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


_LABEL = re.compile(
    r"^(rewritten|shortened|lengthened|new|rephrased)?\s*(question|text|instruction|version|rewrite)\s*:\s*",
    re.IGNORECASE,
)
"""A label a model puts before its rewrite ("Rewritten question: ...")."""


def clean(output: str) -> str:
    """First non-empty line, without a 'Rewrite:' label or wrapping quotes.

    >>> clean('Rewritten question: "Who won?"\\nThe answer is X.')
    'Who won?'
    """
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    text = _LABEL.sub("", lines[0] if lines else "").strip()
    if len(text) > 1 and text[0] in "\"'`“" and text[-1] in "\"'`”" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    return text.strip("`").strip()
