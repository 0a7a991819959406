"""Running the LLM stage: replay what the log holds, ask the rewriter for the rest, judge every candidate,
retry a cell with another request until one is accepted or its attempts run out."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from benchmark.variants.llm.job import Job
from benchmark.variants.llm.log import Attempt, LogKey
from benchmark.variants.llm.prompting import TEMPLATE_TAG, chained, clean, request, scope, wrapper_form
from benchmark.variants.llm.validation import rejection
from benchmark.variants.rewriter import Rewriter
from benchmark.variants.similarity import Embedder, similarities

ATTEMPTS = 6
"""Candidates per cell, each from a differently worded request; the first valid one wins."""
BUDGET_REASON = "not attempted: LLM time budget exhausted"
"""The reason logged for an attempt never asked for (the time budget ran out, or replay only)."""

ItemKey = tuple[str, str]
"""(dataset, item id)."""


def run_jobs(
    jobs: Sequence[Job],
    rewriter: Rewriter | None,
    embedder: Embedder,
    *,
    replay: Mapping[LogKey, Attempt],
    budget_s: float | None = None,
    replay_only: bool = False,
    clock: Callable[[], float] = time.monotonic,
    ranks_per_round: int = 1,
    on_fresh: Callable[[list[Attempt]], None] | None = None,
    chunk: int = 32,
    attempts: int = ATTEMPTS,
) -> list[Attempt]:
    """Make every job's variant: replay logged attempts, ask the rewriter for the rest, validate.

    Jobs run a block of item ranks at a time (every dataset's item 0, then item 1, ...), so when
    ``budget_s`` runs out the items evaluated first are the ones covered; jobs not reached are logged as
    not attempted. ``replay_only`` judges what ``replay`` holds and asks for nothing (every attempt the
    log lacks is not attempted), so it needs no rewriter. ``on_fresh`` receives every chunk of newly
    generated attempts as soon as it exists. Raising ``attempts`` above what a log holds lets another
    rewriter add candidates to its failed cells.
    """
    if budget_s is not None and budget_s < 0:
        raise ValueError(f"budget_s must be >= 0, not {budget_s} (replay_only=True asks for nothing)")
    start = clock()
    stage = _Stage(rewriter, embedder, replay, on_fresh)
    ranks = sorted({job.rank for job in jobs})
    done: list[Attempt] = []
    for first in range(0, len(ranks), ranks_per_round):
        block = set(ranks[first : first + ranks_per_round])
        pending = [job for job in jobs if job.rank in block]
        for attempt in range(attempts):
            results: list[Attempt] = []
            for at in range(0, len(pending), chunk):
                # One look at the clock per chunk: a chunk asked for is finished, whatever it costs.
                over = replay_only or (budget_s is not None and clock() - start > budget_s)
                results.extend(stage.round(pending[at : at + chunk], attempt, skip_fresh=over))
            done.extend(results)
            settled = {(a.dataset, a.item_id, a.variant_id) for a in results if a.accepted or not a.rewriter}
            pending = [j for j in pending if j.cell not in settled]
            if not pending:
                break
    return done


@dataclass(frozen=True)
class _Stage:
    """What the rounds of one :func:`run_jobs` call share, including what earlier rounds accepted."""

    rewriter: Rewriter | None
    embedder: Embedder
    replay: Mapping[LogKey, Attempt]
    on_fresh: Callable[[list[Attempt]], None] | None
    grown: dict[ItemKey, dict[float, str]] = field(default_factory=dict)
    """accepted lengthenings (strength -> text) per item, which longer ones grow from (:func:`chained`)."""
    used: dict[ItemKey, dict[str, str]] = field(default_factory=dict)
    """accepted prompt -> its variant id, per item: no two cells of an item share a text."""

    def round(self, jobs: Sequence[Job], attempt: int, *, skip_fresh: bool) -> list[Attempt]:
        """One attempt at each job: judged, made distinct, remembered, and fresh ones handed on."""
        made = [
            self._distinct(a, job)
            for a, job in zip(self._judged(jobs, attempt, skip_fresh), jobs, strict=True)
        ]
        for a in made:
            strength = float(a.variant_id.rsplit("/", 1)[1])
            if a.accepted and a.variant_id.startswith("length/") and strength > 1:
                self.grown.setdefault((a.dataset, a.item_id), {})[strength] = clean(a.output)
        fresh = [
            a
            for a, job in zip(made, jobs, strict=True)
            if a.rewriter and (*job.cell, attempt, job.original) not in self.replay
        ]
        if fresh and self.on_fresh is not None:
            self.on_fresh(fresh)
        return made

    def _judged(self, jobs: Sequence[Job], attempt: int, skip_fresh: bool) -> list[Attempt]:
        outputs, skipped = self._outputs(jobs, attempt, skip_fresh)
        cleaned = [clean(outputs[i][1]) for i in range(len(jobs))]
        scores = similarities(
            self.embedder, [(job.source, text or job.source) for job, text in zip(jobs, cleaned, strict=True)]
        )
        judged = []
        for i, job in enumerate(jobs):
            (who, output), score = outputs[i], scores[i]
            reason = BUDGET_REASON if i in skipped else rejection(job, cleaned[i], score)
            if i in skipped:  # never asked for: no rewriter, no output, no score
                who, output, score = "", "", 0.0
            judged.append(Attempt(*job.cell, attempt, who, job.original, output, not reason, reason, score))
        return judged

    def _outputs(
        self, jobs: Sequence[Job], attempt: int, skip_fresh: bool
    ) -> tuple[dict[int, tuple[str, str]], set[int]]:
        """(who made it, output) per job index, logged or asked for; and the indices not attempted."""
        logged = {i: self.replay.get((*j.cell, attempt, j.original)) for i, j in enumerate(jobs)}
        outputs = {i: (found.rewriter, found.output) for i, found in logged.items() if found is not None}
        skipped = {i for i, found in logged.items() if found is not None and not found.rewriter}
        fresh = [i for i, found in logged.items() if found is None]
        if fresh and skip_fresh:
            outputs.update(dict.fromkeys(fresh, ("", "")))
            skipped.update(fresh)
        elif fresh:
            if self.rewriter is None:
                raise ValueError("rewrite log is incomplete and no rewriter was given")
            asked = _ask(self.rewriter, [jobs[i] for i in fresh], attempt, self.grown)
            outputs.update(zip(fresh, asked, strict=True))
        return outputs, skipped

    def _distinct(self, made: Attempt, job: Job) -> Attempt:
        """An accepted candidate whose prompt another cell of the item already has is rejected, so the
        cell gets another candidate (×2 and ×3 overlap in length; the first in run order keeps the text)."""
        if not made.accepted:
            return made
        texts = self.used.setdefault((made.dataset, made.item_id), {})
        text = job.prompt(clean(made.output))
        if texts.setdefault(text, made.variant_id) != made.variant_id:
            return replace(made, accepted=False, reason=f"same text as {texts[text]}")
        return made


def _ask(
    rewriter: Rewriter, jobs: Sequence[Job], attempt: int, grown: Mapping[ItemKey, Mapping[float, str]]
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
