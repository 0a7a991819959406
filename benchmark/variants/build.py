"""Build a variant set: sample items, apply every family, score similarity, freeze.

Reads top to bottom: :func:`build_set` = for each dataset, sample → rule variants → LLM variants →
similarity → table; then :func:`benchmark.variants.freeze.freeze` writes parquet, log, manifest, card.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from benchmark.errors import SagoError
from benchmark.schema import BASELINE_FAMILY, DEFAULT_SEED, VARIANT_COLUMNS
from benchmark.variants import cells as written
from benchmark.variants import llm
from benchmark.variants import textfacts as tf
from benchmark.variants.families import (
    CONTROL_ROWS,
    FAMILIES,
    LLM_FAMILIES,
    VariantKey,
    keys_of,
    rewriter_tag,
    rule_families,
    rule_variant,
    variant_id,
)
from benchmark.variants.guards import protected_strings
from benchmark.variants.rewriter import Chat, Rewriter
from benchmark.variants.similarity import Embedder, cosine_matrix, similarities
from benchmark.variants.sources import Item, Source, load_sample

Row = dict[str, object]
"""One row of a variant table (:data:`~benchmark.schema.VARIANT_COLUMNS`)."""
NotMade = dict[str, dict[str, int]]
"""family -> reason -> cells of a dataset that have no row."""


@dataclass(frozen=True)
class BuildSpec:
    """What to build; everything that decides the bytes of the result is in here or in the sources."""

    set_name: str
    version: str
    datasets: tuple[str, ...]
    n_items: int = 64
    """items sampled per dataset."""
    llm_items: int = 16
    """items (by rank) that get the LLM families; the default evaluation profile uses 16."""
    seed: int = DEFAULT_SEED
    """global seed: sampling and every variant's rng."""
    llm_families: tuple[str, ...] = LLM_FAMILIES
    """LLM families to attempt; an empty tuple freezes the set without them."""
    llm_budget_s: float | None = None
    """wall-clock budget of new LLM generation; jobs not reached are logged as not attempted."""
    llm_attempts: int = llm.ATTEMPTS
    """candidates per LLM cell (replayed from the log, or asked for)."""
    min_llm_coverage: float = 0.0
    """share of LLM cells that need an accepted rewrite before the set may be frozen (v1 froze at 1.9 %)."""
    cells: Path | None = None
    """the maintainers' written cells (``variants/rewrites/<set>-<version>.cells.jsonl``); the model
    rewriter is asked only for cells the file lacks."""


@dataclass
class BuildResult:
    """Tables and bookkeeping handed to the freezer."""

    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """dataset -> variant table (VARIANT_COLUMNS, sorted)."""
    attempts: list[llm.Attempt] = field(default_factory=list)
    """every LLM attempt, accepted or rejected."""
    not_produced: dict[str, str] = field(default_factory=dict)
    """family -> why it is absent from the set."""
    rewriter: str = ""
    """tags of the rewriters whose outputs were used ('' when none)."""
    not_made: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """dataset -> family -> reason ('no_site', 'duplicate') -> cells left out."""
    written: list[written.Cell] = field(default_factory=list)
    """the written cells of the datasets built (made or not), as read from ``spec.cells``."""


def build_set(
    spec: BuildSpec,
    sources: Mapping[str, Source],
    embedder: Embedder,
    *,
    rewriter: Callable[[], Rewriter] | None = None,
    replay: dict[tuple[str, str, str, int, str], llm.Attempt] | None = None,
    checkpoint: Path | None = None,
    progress: bool = True,
) -> BuildResult:
    """Build every dataset of ``spec``; the rewriter factory is only called when the log lacks an attempt.

    ``checkpoint``, when given, receives the rewrite log as soon as the LLM stage ends, so minutes of
    generation survive a later failure (pass it back as the replay log).
    """
    result = BuildResult()
    samples = sample_items(spec, sources, embedder)
    jobs = llm_jobs(spec, samples)
    if spec.cells is not None:
        result.written = checked_cells(spec.cells, spec, samples)
        have = {c.key for c in result.written}
        jobs = [job for job in jobs if job.cell not in have]
    if jobs:
        result.attempts = llm.run_jobs(
            jobs,
            LazyRewriter(rewriter),
            embedder,
            replay=replay or {},
            budget_s=spec.llm_budget_s,
            attempts=spec.llm_attempts,
        )
        result.rewriter = ",".join(sorted({a.rewriter for a in result.attempts if a.rewriter}))
        if checkpoint is not None:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            llm.write_log(checkpoint, result.attempts)
    for family in set(LLM_FAMILIES) - set(spec.llm_families):
        result.not_produced[family] = "not requested for this build (no LLM rewriter configured)"
    for name in tqdm(spec.datasets, desc="datasets", disable=not progress):
        not_made = result.not_made.setdefault(name, {})
        rows = _rule_rows(name, samples[name], spec.seed, not_made)
        seen = {str(r["prompt"]) for r in rows}
        rows += _written_rows(name, samples[name], result.written, seen, not_made)
        rows += _llm_rows(name, samples[name], result.attempts, seen, not_made)
        result.frames[name] = _table(rows, embedder)
    return result


class LazyRewriter:
    """Loads the model only if some attempt is missing from the replay log (a rebuild never loads it)."""

    def __init__(self, factory: Callable[[], Rewriter] | None) -> None:
        self._factory = factory

    @cached_property
    def _rewriter(self) -> Rewriter:
        if self._factory is None:
            raise ValueError("rewrite log is incomplete and no rewriter was given")
        return self._factory()

    @property
    def tag(self) -> str:
        return self._rewriter.tag

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        return self._rewriter.complete(chats)


def sample_items(spec: BuildSpec, sources: Mapping[str, Source], embedder: Embedder) -> dict[str, list[Item]]:
    """Each dataset's seeded sample of distinct items (no near-duplicates, no negated copies)."""
    return {
        name: load_sample(sources[name], spec.n_items, spec.seed, lambda t: cosine_matrix(embedder, t))
        for name in spec.datasets
    }


def llm_jobs(spec: BuildSpec, samples: Mapping[str, Sequence[Item]]) -> list[llm.Job]:
    """Every LLM cell of the first ``spec.llm_items`` items of each dataset."""
    return [
        llm.Job(
            name,
            item.item_id,
            rank,
            item.prompt,
            item.answers,
            key.family,
            key.strength,
            item.text,
            item.template,
            tuple(re.findall(r"Category: ([^.]+)\.", item.template)) if family == "form" else (),
        )
        for name in spec.datasets
        for rank, item in enumerate(samples[name][: spec.llm_items])
        for family in spec.llm_families
        for key in keys_of(FAMILIES.get(family))
    ]


def checked_cells(path: Path, spec: BuildSpec, samples: Mapping[str, Sequence[Item]]) -> list[written.Cell]:
    """The written cells of the datasets built, each measured again from its text; an accepted cell that
    fails an exact check, or a cell of an item not in the sample, stops the build (one line)."""
    items = {(name, item.item_id): item for name in spec.datasets for item in samples[name][: spec.llm_items]}
    cells = [c for c in written.read_cells(path) if c.dataset in spec.datasets]
    stray = [c.key for c in cells if (c.dataset, c.item_id) not in items]
    if stray:
        raise SagoError(
            f"{path}: {len(stray)} cells name items outside the sample, e.g. {'/'.join(stray[0])}"
        )
    cells = [written.measured(c, items[(c.dataset, c.item_id)]) for c in cells]
    failed = {
        k: v for k, v in written.audit(cells, items).items() if k in {c.key for c in cells if c.accepted()}
    }
    if failed:
        key, found = next(iter(sorted(failed.items())))
        raise SagoError(
            f"{path}: {len(failed)} accepted cells fail the exact checks, "
            f"e.g. {'/'.join(key)}: {'; '.join(found)}"
        )
    return cells


WRITTEN_TAG = "maintainers:written+read-blind"
"""``rewriter`` of a written cell accepted by its blind reading (a third reading adds ``+third``)."""


def written_tag(cell: written.Cell) -> str:
    """Provenance of a written cell's row: who made it and how it was read."""
    return WRITTEN_TAG + ("+third" if any(r.role == "third" for r in cell.readings) else "")


def _written_rows(
    dataset: str, items: Sequence[Item], cells: Sequence[written.Cell], seen: set[str], not_made: NotMade
) -> list[Row]:
    """Rows of the accepted written cells; every other written cell is counted under its status."""
    by_id = {item.item_id: (rank, item) for rank, item in enumerate(items)}
    rows = []
    for cell in (c for c in cells if c.dataset == dataset):
        rank, item = by_id[cell.item_id]
        text = cell.prompt(item)
        status = cell.status() if text not in seen or not cell.accepted() else "duplicate"
        if status != "made":
            _not_made(not_made, cell.family, status)
            continue
        seen.add(text)
        key = VariantKey(cell.family, "global", cell.multiplier)
        rows.append(_row(dataset, item, rank, key, text, written_tag(cell), cell.ratio))
    return rows


def _not_made(not_made: NotMade, family: str, why: str) -> None:
    """Count one cell of ``family`` that has no row, under the reason it has none."""
    counts = not_made.setdefault(family, {})
    counts[why] = counts.get(why, 0) + 1


def _row(
    dataset: str, item: Item, rank: int, key: VariantKey, prompt: str, tag: str, ratio: float | None = None
) -> Row:
    return {
        "dataset": dataset,
        "item_id": item.item_id,
        "variant_id": variant_id(*key),
        "family": key.family,
        "place": key.place,
        "strength": float(key.strength),
        "prompt": prompt,
        "similarity": float("nan"),
        "rewriter": tag,
        "answers": list(item.answers),
        "item_rank": rank,
        "length_ratio": float("nan") if ratio is None else float(ratio),
    }


# Families that frame the whole request (they act on the wrapped prompt); every other rule family
# edits only the item's own text, which is then put back into its wrapper.
FRAMING_FAMILIES = frozenset({"politeness", "format", "irrelevant_suffix"})
RETRIES = 3
"""Fresh seeded draws for a rule cell whose text collapses onto another variant of the same item."""


def rule_text(dataset: str, item: Item, key: VariantKey, seed: int, retry: int = 0) -> str:
    """The prompt of one rule-made variant (framing families wrap the prompt, others edit the item's text)."""
    salt = f"{item.item_id}#{retry}" if retry else item.item_id
    protect = protected_strings(item.text, item.answers)
    if key.family in FRAMING_FAMILIES:
        return rule_variant(item.prompt, key, dataset=dataset, item_id=salt, answers=protect, seed=seed)
    return item.wrap(rule_variant(item.text, key, dataset=dataset, item_id=salt, answers=protect, seed=seed))


def _rule_rows(dataset: str, items: Sequence[Item], seed: int, not_made: NotMade) -> list[Row]:
    """Controls plus every rule cell whose text differs from the baseline and from every other cell."""
    rows = []
    for rank, item in enumerate(items):
        for key in CONTROL_ROWS:
            tag = "source" if key.family == BASELINE_FAMILY else rewriter_tag(key.family)
            rows.append(_row(dataset, item, rank, key, item.prompt, tag))
        seen = {item.prompt}
        for key in (k for name in rule_families() for k in keys_of(FAMILIES.get(name))):
            text = rule_text(dataset, item, key, seed)
            retry = 0
            while text in seen and text != item.prompt and retry < RETRIES:
                retry += 1
                text = rule_text(dataset, item, key, seed, retry)
            if text == item.prompt or text in seen:  # no site for the edit, or only a copy of another cell
                _not_made(not_made, key.family, "no_site" if text == item.prompt else "duplicate")
                continue
            seen.add(text)
            rows.append(_row(dataset, item, rank, key, text, rewriter_tag(key.family)))
    return rows


def _llm_rows(
    dataset: str, items: Sequence[Item], attempts: Sequence[llm.Attempt], seen: set[str], not_made: NotMade
) -> list[Row]:
    """The accepted LLM cells (first valid candidate), minus any whose text another cell already has."""
    by_id = {item.item_id: (rank, item) for rank, item in enumerate(items)}
    rows = []
    for attempt in sorted(
        (a for a in attempts if a.dataset == dataset and a.accepted),
        key=lambda a: (by_id[a.item_id][0], a.variant_id, a.attempt),
    ):
        rank, item = by_id[attempt.item_id]
        family, place, strength = attempt.variant_id.split("/")
        text = llm.variant_prompt(family, item.template, llm.clean(attempt.output))
        if text in seen:
            _not_made(not_made, family, "duplicate")
            continue
        seen.add(text)
        words = tf.words(llm.clean(attempt.output))
        ratio = round(words / max(1, tf.words(item.text)), 4) if family == "length" else None
        key = VariantKey(family, place, float(strength))
        rows.append(_row(dataset, item, rank, key, text, attempt.rewriter, ratio))
    return rows


def _table(rows: list[Row], embedder: Embedder) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))
    base = frame[frame.family == BASELINE_FAMILY]
    baselines = dict(zip(base.item_id, base.prompt, strict=True))
    pairs = [(baselines[i], p) for i, p in zip(frame.item_id, frame.prompt, strict=False)]
    frame["similarity"] = similarities(embedder, pairs)
    return frame.sort_values(["item_rank", "variant_id"], kind="stable").reset_index(drop=True)


def llm_coverage(attempts: Sequence[llm.Attempt]) -> tuple[int, int]:
    """(cells with an accepted rewrite, cells asked for) over a build's LLM attempts."""
    cells = {(a.dataset, a.item_id, a.variant_id) for a in attempts}
    return len({(a.dataset, a.item_id, a.variant_id) for a in attempts if a.accepted}), len(cells)


def dropped(attempts: Sequence[llm.Attempt]) -> list[dict[str, object]]:
    """LLM variants with no accepted attempt, with the reason of each failed attempt."""
    accepted = {(a.dataset, a.item_id, a.variant_id) for a in attempts if a.accepted}
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for a in sorted(attempts, key=lambda a: (a.dataset, a.item_id, a.variant_id, a.attempt)):
        key = (a.dataset, a.item_id, a.variant_id)
        if key not in accepted:
            reasons.setdefault(key, []).append(a.reason)
    return [
        {"dataset": d, "item_id": i, "variant_id": v, "reasons": r}
        for (d, i, v), r in sorted(reasons.items())
    ]


def log_path(out_dir: Path) -> Path:
    """Where the rewrite log of a set lives."""
    return out_dir / "llm_rewrites.jsonl"
