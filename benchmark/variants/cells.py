"""The maintainers' written length and form cells: their source file, their readings, their exact checks.

``variants/rewrites/<set>-<version>.cells.jsonl`` holds one row per cell (dataset, item, variant): the
text a maintainer wrote following the paper's instructions, the spans that must survive, word counts, the
achieved word ratio, a floor flag where the item is too short for the band (or why the cell is not
makeable), and its readings: the author's, then a blind one by a reader who did not write it and saw
neither the author's notes nor the spans, then, where those two disagree, a third that decides.

A cell enters the variant set when its readings accept it; every accepted cell must then pass
:func:`problems` (exact checks of :mod:`benchmark.variants.textfacts` facts) or the build fails. Soft
signals (:func:`warnings`) are shown to readers and never decide.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from benchmark.errors import SagoError
from benchmark.variants import textfacts as tf
from benchmark.variants.sources import Item

LENGTHS: tuple[float, ...] = (0.25, 0.5, 1.5, 2.0, 3.0)
FORM_ID = "form/global/1"
CELL_IDS: tuple[str, ...] = (*(f"length/global/{m:g}" for m in LENGTHS), FORM_ID)
"""The six cells of an item, in length order, then form."""
BAND_TOLERANCE = 0.1
"""×1.5, ×2, ×3: the achieved ratio lies within (1 ± this) × m."""
SHORT_BANDS: dict[float, tuple[float, float]] = {0.5: (0.60, 0.85), 0.25: (0.30, 0.80)}
"""Shortenings: the highest ratio allowed (without, with a floor flag)."""
CHECKS = tf.word_list("same_answer nothing_added polarity_modality same_format right_kind grammatical")
"""What every reading records per cell (plus ``floor_holds`` for a cell with a floor flag)."""


@dataclass(frozen=True)
class Reading:
    """One person's reading of one cell."""

    reader: str
    """who read it (an opaque maintainer id)."""
    role: str
    """'author' (the writer's own reading), 'blind' (second) or 'third' (decides a disagreement)."""
    accept: bool
    """the reader's verdict: the cell asks the same thing in the right kind and band."""
    checks: dict[str, bool] = field(default_factory=dict)
    """each of :data:`CHECKS` (and ``floor_holds``) as the reader judged it."""
    note: str = ""
    """the reader's reason where something failed."""


@dataclass(frozen=True)
class Version:
    """An earlier text of a cell, replaced after its readers rejected it (or a sibling needed room)."""

    text: str
    author: str
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class Cell:
    """One written cell and everything recorded about it (a line of the cells file)."""

    dataset: str
    item_id: str
    variant_id: str
    text: str
    """length: the rewrite of the item's own text (the wrapper is added back); form: the whole prompt."""
    spans: tuple[str, ...] = ()
    """what must survive verbatim: numbers, names, titles, quotations, the word the item hinges on."""
    floor: str | None = None
    """why a shortening cannot reach its band (it then has the looser floor band)."""
    not_makeable: str | None = None
    """why no faithful rewrite exists in the band (the cell is left out and counted)."""
    source_words: int = 0
    words: int = 0
    ratio: float | None = None
    """achieved word ratio (length cells): ``words / source_words``, four decimals."""
    kind: str = ""
    """the kind of the rewrite's request: question, instruction or statement."""
    readings: tuple[Reading, ...] = ()
    """readings of the current text: the author's, the blind one, and a third where they disagreed."""
    earlier: tuple[Version, ...] = ()
    """the cell's earlier texts with their readings, oldest first (the record of every reading)."""

    @property
    def family(self) -> str:
        return self.variant_id.split("/", 1)[0]

    @property
    def multiplier(self) -> float:
        """The nominal length multiplier (1 for form)."""
        return float(self.variant_id.rsplit("/", 1)[1])

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.dataset, self.item_id, self.variant_id)

    def prompt(self, item: Item) -> str:
        """The variant's prompt: a length rewrite goes back into the item's wrapper."""
        return item.template.replace("{text}", self.text) if self.family == "length" else self.text

    def accepted(self) -> bool:
        """The readings' verdict: the blind reading, or the third where it and the author disagree."""
        blind = [r for r in self.readings if r.role == "blind"]
        third = [r for r in self.readings if r.role == "third"]
        if self.not_makeable or not blind:
            return False
        return blind[-1].accept or bool(third and third[-1].accept)

    def status(self) -> str:
        """'made', 'not makeable', 'unread' or 'rejected by its readers'."""
        if self.not_makeable:
            return "not makeable"
        if not any(r.role == "blind" for r in self.readings):
            return "unread"
        return "made" if self.accepted() else "rejected by its readers"


def measured(cell: Cell, item: Item) -> Cell:
    """``cell`` with its word counts, achieved ratio and kind recomputed from its text."""
    source = item.text if cell.family == "length" else item.prompt
    ratio = (
        round(tf.words(cell.text) / tf.words(source), 4) if cell.family == "length" and cell.text else None
    )
    return replace(
        cell,
        source_words=tf.words(source),
        words=tf.words(cell.text),
        ratio=ratio,
        kind=request_kind(cell.text, item) if cell.text else "",
    )


def request_kind(text: str, item: Item) -> str:
    """The kind of what ``text`` asks: a wrapped item's own text (a clue, a statement) is data, not the
    request, so it is taken out before the asking sentence is read."""
    if item.template != "{text}" and item.text in text:
        text = text.replace(item.text, " ")
    return tf.kind(text)


def problems(cell: Cell, item: Item, siblings: Mapping[str, Cell]) -> list[str]:
    """Every exact check ``cell`` fails (empty: it passes); ``siblings``: the item's cells by variant id."""
    if cell.not_makeable:
        return []
    if not cell.text.strip():
        return ["empty text"]
    length = cell.family == "length"
    source = item.text if length else item.prompt
    return [
        *_span_problems(cell, source),
        *_number_problems(cell.text, source),
        *[f"gold answer {a!r} newly present" for a in tf.new_answers(source, cell.text, item.answers)],
        *_kind_problems(cell, item),
        *(_band_problems(cell, item) if length else _form_problems(cell, item)),
        *_text_problems(cell.text, source),
        *_sibling_problems(cell, item, siblings),
    ]


def _span_problems(cell: Cell, source: str) -> list[str]:
    out = []
    for span in cell.spans:
        if not tf.has_phrase(source, span.lower()) and not tf.has_phrase(source, span):
            out.append(f"span {span!r} is not in the original")
        elif not tf.has_phrase(cell.text, span):
            out.append(f"span {span!r} is missing")
    return out


def _number_problems(text: str, source: str) -> list[str]:
    have, had = set(tf.numbers(text)), set(tf.numbers(source))
    out = [f"new number {n}" for n in sorted(have - had)]
    return out + [f"number {n} lost" for n in sorted(had - have)]


def _kind_problems(cell: Cell, item: Item) -> list[str]:
    if cell.family == "length":
        was, now = tf.kind(item.text), tf.kind(cell.text)
        return [] if was == now else [f"kind changed from {was} to {now}"]
    was, now = request_kind(item.prompt, item), request_kind(cell.text, item)
    wanted = {"question": "instruction", "instruction": "question", "statement": "instruction"}[was]
    return [] if now == wanted else [f"form of a {was} must be a {wanted}, is a {now}"]


def band(multiplier: float, floor: bool) -> tuple[float, float]:
    """(lowest, highest) achieved ratio a length cell may have.

    >>> band(2.0, False), band(0.5, False), band(0.25, True)
    ((1.8, 2.2), (0.0, 0.6), (0.0, 0.8))
    """
    if multiplier > 1:
        return (round(multiplier * (1 - BAND_TOLERANCE), 4), round(multiplier * (1 + BAND_TOLERANCE), 4))
    return (0.0, SHORT_BANDS[multiplier][1 if floor else 0])


def _band_problems(cell: Cell, item: Item) -> list[str]:
    if cell.floor and cell.multiplier > 1:
        return ["a floor flag only applies to a shortening"]
    ratio = tf.words(cell.text) / tf.words(item.text)
    low, high = band(cell.multiplier, bool(cell.floor))
    return [] if low <= ratio <= high else [f"word ratio {ratio:.2f} outside {low:.2f}-{high:.2f}"]


def _form_problems(cell: Cell, item: Item) -> list[str]:
    out = []
    if item.template != "{text}" and item.text not in cell.text:
        out.append("the item's own text is not verbatim")
    out += [
        f"{k!r} of the wrapper is lost"
        for k in re.findall(r"Category: [^.]+\.", item.template)
        if k not in cell.text
    ]
    if item.template == "{text}":
        asking = tf.asking_sentence(item.text)
        premises = [s for s in tf.sentences(item.text) if s != asking]
        out += [f"premise not verbatim: {p[:40]!r}" for p in premises if p not in cell.text]
    true_false = bool(item.answers) and {a.lower() for a in item.answers} <= {"true", "false"}
    if true_false and not (tf.has_phrase(cell.text, "true") and tf.has_phrase(cell.text, "false")):
        out.append("a true/false item must still ask true or false")
    return out


def _text_problems(text: str, source: str) -> list[str]:
    new = ((tf.META, "meta text"), (tf.SOLVING, "starts a solution"))  # unless the original has it too
    out = [why for pattern, why in new if pattern.search(text) and not pattern.search(source)]
    return out + (["more than one line"] if "\n" in text else [])


def _sibling_problems(cell: Cell, item: Item, siblings: Mapping[str, Cell]) -> list[str]:
    out = []
    made = {v: c for v, c in siblings.items() if not c.not_makeable and c.text}
    if cell.prompt(item) == item.prompt:
        out.append("same text as the baseline")
    out += [
        f"same text as {v}"
        for v, other in made.items()
        if v != cell.variant_id and other.prompt(item) == cell.prompt(item)
    ]
    if cell.family == "length":
        counts = [(m, tf.words(made[v].text)) for m in LENGTHS if (v := f"length/global/{m:g}") in made]
        mine = tf.words(cell.text)
        for m, n in sorted([*counts, (1.0, tf.words(item.text))]):
            if (m < cell.multiplier and n >= mine) or (m > cell.multiplier and n <= mine):
                out.append(f"word count {mine} does not rise strictly with the multiplier (x{m:g} has {n})")
    return out


def warnings(cell: Cell, item: Item) -> list[str]:
    """Soft signals for a reader (never verdicts): negations, question word, new content words."""
    source = item.text if cell.family == "length" else item.prompt
    out = []
    if len(tf.NEGATIONS.findall(source)) != len(tf.NEGATIONS.findall(cell.text)):
        out.append("the number of negations changed")
    wh = re.compile(r"\b(who|whom|whose|what|when|where|which|why|how)\b", re.IGNORECASE)
    if {w.lower() for w in wh.findall(source)} - {w.lower() for w in wh.findall(cell.text)}:
        out.append("a question word of the original is gone")
    new = sorted(tf.word_stems(cell.text) - tf.word_stems(source))
    if new:
        out.append("new words: " + ", ".join(new[:12]))
    return out


# --- the file -------------------------------------------------------------------------------------------


def _reading(raw: Mapping[str, object]) -> Reading:
    checks = raw.get("checks", {})
    if not isinstance(checks, dict):
        raise ValueError("checks must be an object")
    return Reading(
        str(raw["reader"]), str(raw["role"]), bool(raw["accept"]), dict(checks), str(raw.get("note", ""))
    )


def read_cells(path: Path) -> list[Cell]:
    """Every cell of a cells file; a malformed line is a one-line error naming it."""
    cells = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SagoError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            readings = tuple(_reading(r) for r in raw.pop("readings", []))
            earlier = tuple(
                Version(str(v["text"]), str(v["author"]), tuple(_reading(r) for r in v.get("readings", [])))
                for v in raw.pop("earlier", [])
            )
            raw["spans"] = tuple(raw.get("spans", ()))
            cells.append(Cell(**raw, readings=readings, earlier=earlier))
        except (ValueError, TypeError, KeyError) as exc:
            raise SagoError(f"{path}:{number}: not a cell ({exc})") from None
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        raise SagoError(f"{path}: a cell appears twice")
    return cells


def write_cells(path: Path, cells: Iterable[Cell], order: Sequence[tuple[str, str]]) -> None:
    """Write ``cells`` in item order (``order`` = (dataset, item_id) pairs), then :data:`CELL_IDS` order,
    one canonical JSON line each (sorted keys, no ASCII escaping), so the file diffs and hashes stably."""
    rank = {key: i for i, key in enumerate(order)}
    ids = {v: i for i, v in enumerate(CELL_IDS)}
    ordered = sorted(cells, key=lambda c: (rank.get((c.dataset, c.item_id), len(rank)), ids[c.variant_id]))
    lines = [
        json.dumps({**asdict(c), "spans": list(c.spans)}, ensure_ascii=False, sort_keys=True) for c in ordered
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)


def audit(
    cells: Sequence[Cell], items: Mapping[tuple[str, str], Item]
) -> dict[tuple[str, str, str], list[str]]:
    """Exact-check problems of every cell that is not marked not makeable, keyed by cell."""
    grouped: dict[tuple[str, str], dict[str, Cell]] = {}  # (dataset, item_id) -> variant id -> cell
    for cell in cells:
        grouped.setdefault((cell.dataset, cell.item_id), {})[cell.variant_id] = cell
    out = {}
    for cell in cells:
        item = items.get((cell.dataset, cell.item_id))
        if item is None:
            out[cell.key] = ["no such item in the set's sample"]
            continue
        found = problems(cell, item, grouped[(cell.dataset, cell.item_id)])
        if found:
            out[cell.key] = found
    return out


def summary(cells: Sequence[Cell]) -> dict[str, object]:
    """What the manifest and card say of the written cells: status per dataset and cell, the blind
    readers' agreement with the authors, third readings, and the median achieved ratio per length cell."""
    status: dict[str, dict[str, dict[str, int]]] = {}
    for cell in cells:
        counts = status.setdefault(cell.dataset, {}).setdefault(cell.variant_id, {})
        counts[cell.status()] = counts.get(cell.status(), 0) + 1
    read = [c for c in cells if any(r.role == "blind" for r in c.readings)]
    agreed = sum(next(r for r in c.readings if r.role == "blind").accept for c in read)
    # the first blind reading each cell ever had (of its first text that was read)
    first_read = [blind[0] for c in cells if (blind := [r for r in _all_readings(c) if r.role == "blind"])]
    ratios: dict[str, float | None] = {}
    for variant_id in CELL_IDS[: len(LENGTHS)]:
        made = [c.ratio for c in cells if c.variant_id == variant_id and c.accepted() and c.ratio]
        ratios[variant_id] = round(statistics.median(made), 4) if made else None
    return {
        "cells": len(cells),
        "made": sum(c.status() == "made" for c in cells),
        "floors": sum(bool(c.floor) and c.status() == "made" for c in cells),
        "read_blind": len(read),
        "blind_agreed": agreed,
        "third_readings": sum(any(r.role == "third" for r in c.readings) for c in cells),
        "first_blind_read": len(first_read),
        "first_blind_agreed": sum(r.accept for r in first_read),
        "third_readings_ever": sum(any(r.role == "third" for r in _all_readings(c)) for c in cells),
        "rewritten": sum(bool(c.earlier) for c in cells),
        "status": {
            d: {v: dict(sorted(s.items())) for v, s in sorted(by.items())} for d, by in sorted(status.items())
        },
        "median_ratio": ratios,
    }


def _all_readings(cell: Cell) -> list[Reading]:
    """Every reading the cell ever had, its earlier texts' first."""
    return [r for v in cell.earlier for r in v.readings] + list(cell.readings)
