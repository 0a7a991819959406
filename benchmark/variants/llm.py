"""LLM-made families (length, form): prompts, validation, retry-then-drop, and the rewrite log.

Every rewrite is validated before it is frozen (METHOD.md section 2, stricter than the authors):
  * MiniLM similarity to the original >= :data:`MIN_SIMILARITY`;
  * length: word ratio within a factor :data:`LENGTH_TOLERANCE` of the target;
  * length keeps a question a question; form flips question <-> instruction;
  * no gold answer (or a yes/no/true/false verdict at the start) that the original did not contain.
A failed attempt is retried once with a differently worded request; a second failure drops the
variant, and the drop and its reason are recorded. Every attempt (accepted or not) is written to the
rewrite log, which a rebuild replays instead of re-running the model: LLM output is the one input that
is not a pure function of the pinned sources, so the log *is* its pin.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmark.variants.rewriter import Chat, Rewriter
from benchmark.variants.similarity import Embedder, similarities

MIN_SIMILARITY = 0.6
"""MiniLM cosine floor. See the card: rule-made variants that keep every word score mostly ≥ 0.8, and
paraphrases that still ask the same thing typically 0.6-0.9; below 0.6 rewrites tend to ask something else."""
LENGTH_TOLERANCE = 1.5
"""Accepted word ratio: target / 1.5 … target × 1.5 (an LLM cannot count words exactly)."""
ATTEMPTS = 2
_VERDICTS = {"yes", "no", "true", "false"}
_QUESTION_START = re.compile(
    r"^(who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|can|could|will|would|"
    r"should|shall|has|have|had|may|might|must)\b", re.IGNORECASE)
_ANSWERING = re.compile(r"^(to (find|determine|solve|calculate)|sure|here is|here's|the answer)\b", re.IGNORECASE)
_SYSTEM = "You rewrite text. Never answer it. Reply with the rewritten text only."
BUDGET_REASON = "not attempted: LLM time budget exhausted"


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
    """A question ends with '?' or opens with an interrogative or auxiliary word.

    >>> is_question("where does the optic nerve cross"), is_question("Tell me where it crosses.")
    (True, False)
    """
    stripped = text.strip()
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


def _words(text: str) -> int:
    return len(text.split())


def request(original: str, family: str, strength: float, attempt: int) -> Chat:
    """The chat that asks for one variant; attempt 1 words the request differently.

    Requests are kept short on purpose: on a CPU the prompt's prefill is most of the cost.
    """
    words = _words(original)
    if family == "length":
        target = max(1, round(words * strength))
        ask = (f"Rewrite this question in about {target} words (now {words}). Same meaning, still a question. "
               "Do not answer it." if attempt == 0 else
               f"Say this question again using roughly {target} words. Keep the meaning and the question mark.")
        budget = int(target * 1.6) + 12
    else:
        flip = "a command, not a question" if is_question(original) else "a question"
        ask = (f"Rewrite this as {flip}. Same meaning. Do not answer it." if attempt == 0 else
               f"Turn this into {flip}, keeping its meaning.")
        budget = int(words * 1.6) + 16
    return Chat(_SYSTEM, f"{ask}\n{original}", budget)


def clean(output: str) -> str:
    """First non-empty line, without a 'Rewritten question:' label or wrapping quotes.

    >>> clean('Rewritten question: "Who won?"\\nThe answer is X.')
    'Who won?'
    """
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    text = re.sub(r"^(rewritten|shortened|lengthened|new)?\s*(question|text|instruction|version)\s*:\s*", "",
                  text, flags=re.IGNORECASE)
    return text.strip().strip("\"'`“”").strip()


def rejection(original: str, rewrite: str, family: str, strength: float, answers: Sequence[str],
              similarity: float) -> str:
    """Why ``rewrite`` is not an acceptable variant of ``original`` ('' when it is).

    >>> rejection("Who wrote Hamlet?", "Who wrote Hamlet, Shakespeare?", "length", 1.5, ["Shakespeare"], 0.9)
    'leaks gold answer'
    """
    if not rewrite:
        return "empty"
    if rewrite.strip().lower() == original.strip().lower():
        return "unchanged"
    if _leaks(original, rewrite, answers):
        return "leaks gold answer"
    if similarity < MIN_SIMILARITY:
        return f"similarity {similarity:.2f} < {MIN_SIMILARITY}"
    if family == "length":
        ratio = _words(rewrite) / max(1, _words(original))
        if abs(math.log(ratio / strength)) > math.log(LENGTH_TOLERANCE):
            return f"length ratio {ratio:.2f} far from {strength:g}"
        if is_question(original) and not is_question(rewrite):
            return "no longer a question"
    elif is_question(rewrite) == is_question(original):
        return "form not changed"
    elif _ANSWERING.match(rewrite) or not 0.5 <= _words(rewrite) / max(1, _words(original)) <= 2:
        return "answers instead of rewriting"  # small models start solving ("To find ..., we need to")
    return ""


def _leaks(original: str, rewrite: str, answers: Sequence[str]) -> bool:
    lowered, before = rewrite.lower(), original.lower()
    for answer in (a.strip().lower() for a in answers if a.strip()):
        if answer in _VERDICTS:
            if re.match(rf"^{answer}\b", lowered) and not re.match(rf"^{answer}\b", before):
                return True
        elif re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", lowered) and answer not in before:
            return True
    return "the answer is" in lowered and "the answer is" not in before


@dataclass(frozen=True)
class Job:
    """One LLM variant to make."""

    dataset: str
    item_id: str
    rank: int
    original: str
    answers: tuple[str, ...]
    family: str
    strength: float

    @property
    def variant_id(self) -> str:
        return f"{self.family}/global/{self.strength:g}"


def read_log(path: Path | None) -> dict[tuple[str, str, str, int, str], Attempt]:
    """Replayable attempts from a rewrite log, keyed by (dataset, item, variant, attempt, original)."""
    if path is None or not path.exists():
        return {}
    attempts = [Attempt(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    return {(a.dataset, a.item_id, a.variant_id, a.attempt, a.original): a for a in attempts}


def write_log(path: Path, attempts: Sequence[Attempt]) -> None:
    ordered = sorted(attempts, key=lambda a: (a.dataset, a.item_id, a.variant_id, a.attempt))
    path.write_text("".join(json.dumps(asdict(a), ensure_ascii=False, sort_keys=True) + "\n" for a in ordered))


def run_jobs(jobs: Sequence[Job], rewriter: Rewriter | None, embedder: Embedder, *,
             replay: dict[tuple[str, str, str, int, str], Attempt], budget_s: float | None = None,
             clock: Callable[[], float] = time.monotonic) -> list[Attempt]:
    """Make every job's variant: replay logged attempts, ask the rewriter for the rest, validate, retry.

    Jobs run one item rank at a time (every dataset's item 0, then item 1, ...), so when ``budget_s``
    runs out the items evaluated first are the ones covered; jobs not reached are logged as not attempted.
    """
    start = clock()
    done: list[Attempt] = []
    for rank in sorted({job.rank for job in jobs}):
        pending = [job for job in jobs if job.rank == rank]
        for attempt in range(ATTEMPTS):
            over = budget_s is not None and clock() - start > budget_s
            results = _attempt_round(pending, attempt, rewriter, embedder, replay, skip_fresh=over)
            done.extend(results)
            accepted = {(a.dataset, a.item_id, a.variant_id) for a in results if a.accepted or not a.rewriter}
            pending = [j for j in pending if (j.dataset, j.item_id, j.variant_id) not in accepted]
            if not pending:
                break
    return done


def _attempt_round(jobs: Sequence[Job], attempt: int, rewriter: Rewriter | None, embedder: Embedder,
                   replay: dict[tuple[str, str, str, int, str], Attempt], *, skip_fresh: bool) -> list[Attempt]:
    logged = {i: replay.get((j.dataset, j.item_id, j.variant_id, attempt, j.original)) for i, j in enumerate(jobs)}
    fresh = [i for i, found in logged.items() if found is None]
    outputs = {i: (found.rewriter, found.output) for i, found in logged.items() if found is not None}
    skipped = {i for i, found in logged.items() if found is not None and not found.rewriter}
    if fresh and skip_fresh:
        outputs.update({i: ("", "") for i in fresh})
        skipped.update(fresh)
    elif fresh:
        if rewriter is None:
            raise ValueError("rewrite log is incomplete and no rewriter was given")
        texts = rewriter.complete([request(jobs[i].original, jobs[i].family, jobs[i].strength, attempt) for i in fresh])
        outputs.update({i: (rewriter.tag, text) for i, text in zip(fresh, texts)})
    cleaned = [clean(outputs[i][1]) for i in range(len(jobs))]
    scores = similarities(embedder, [(job.original, text or job.original) for job, text in zip(jobs, cleaned)])
    return [Attempt(job.dataset, job.item_id, job.variant_id, attempt, "", job.original, "", False,
                    BUDGET_REASON, 0.0) if i in skipped else _judge(job, attempt, outputs[i], cleaned[i], scores[i])
            for i, job in enumerate(jobs)]


def _judge(job: Job, attempt: int, made: tuple[str, str], text: str, score: float) -> Attempt:
    reason = rejection(job.original, text, job.family, job.strength, job.answers, score)
    return Attempt(job.dataset, job.item_id, job.variant_id, attempt, made[0], job.original, made[1],
                   not reason, reason, score)
