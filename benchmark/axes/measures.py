"""Every measure of instability, declared once: what it is, how it is scaled and shown, and its function.

A measure is one row of the table at the end of this module (or one :func:`measure` decorator) with the
function that computes its unscaled delta per record row (METHOD.md section 4). Everything else reads the
registry :data:`MEASURES`:

* ``benchmark.axes.deltas`` calls each function and writes a ``delta_<name>`` column;
* ``benchmark.stats`` scales by R, reduces per item and dataset, and lists the measures in
  ``leaderboard.json`` (``measures``, ``headline_measures``);
* ``benchmark.site`` shows the label; ``docs/ARCHITECTURE.md`` holds :func:`measures_markdown`'s table.

The registration order is the column order of the deltas table and the order of every table after it,
so a new measure goes last. This module imports no torch: the model-based scores load on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import pandas as pd

from benchmark.axes import activations as act
from benchmark.axes.mirroring import mirroring_delta
from benchmark.axes.politeness import PolitenessJudge
from benchmark.axes.scorers import AxisScorers
from benchmark.axes.text import bleu, score_distinct
from benchmark.registry import Registry
from benchmark.schema import AXES, BASELINE_VARIANT_ID, DELTA_ID_COLUMNS, RESPONSE_AXES


@dataclass(frozen=True)
class Pairs:
    """Each record row beside its item's baseline row; the input of every measure function."""

    frame: pd.DataFrame
    """record columns, the baseline's response/confidence columns suffixed ``_0``, and ``answers``."""
    activations: Mapping[str, np.ndarray]
    """``f"{item_id}|{variant_id}"`` -> ``[n_layers + 1, hidden]`` hidden states."""

    def texts(self) -> tuple[list[str], list[str]]:
        """(y_v, y_0) for every row."""
        return list(self.frame["response"]), list(self.frame["response_0"])


class MeasureFn(Protocol):
    """Unscaled delta per row of ``pairs`` (float64 [n]; NaN where the measure does not apply)."""

    def __call__(self, pairs: Pairs, scorers: AxisScorers) -> np.ndarray: ...


Direction = Literal["down", "both"]
"""How to read a delta: ``"down"``: a similarity to the baseline minus its value for identical outputs,
so Δ ≤ 0 and 0 means unchanged; ``"both"``: a change from the baseline, of either sign."""


@dataclass(frozen=True)
class Measure:
    """One measure of instability and how its delta is scaled (METHOD.md section 4)."""

    name: str
    """column stem: the deltas table holds ``delta_<name>``."""
    axis: str
    """one of the four axes (``schema.AXES``): activations, generation, confidence, mirroring."""
    scale: float
    """R: the scaled delta is Δ / R (so a maximal change of a bounded measure is about 1)."""
    direction: Direction
    """how a delta reads: ``"down"`` (Δ ≤ 0) or ``"both"`` (either sign); SGS squares it either way."""
    label: str
    """short human name the site shows (the name stays in tooltips)."""
    headline: bool
    """True for the axis's one headline measure: the family reversals are tested and corrected over."""
    paper: bool
    """True when the authors report this measure; False for ours."""
    description: str
    """one line for tables and the methodology page."""
    delta: MeasureFn
    """computes the unscaled delta of every record row."""


MEASURES: Registry[Measure] = Registry("measure")
"""name -> declaration, in registration order (see :func:`all_measures`)."""


def measure(
    name: str,
    *,
    axis: str,
    scale: float,
    direction: Direction,
    label: str,
    description: str,
    paper: bool = False,
    headline: bool = False,
) -> Callable[[MeasureFn], MeasureFn]:
    """Declare the decorated function as the measure ``name`` (refuses a second one of that name).

    Raises:
        ValueError: an unknown axis, a scale that is not positive, or a second headline for an axis.
    """

    def register(delta: MeasureFn) -> MeasureFn:
        _add(Measure(name, axis, scale, direction, label, headline, paper, description, delta))
        return delta

    return register


def _add(declared: Measure) -> None:
    check_measure(declared)
    MEASURES.add(declared)


def check_measure(declared: Measure) -> None:
    """Refuse a declaration that breaks the rules every reader of the registry relies on (a toy measure
    a test registers with ``MEASURES.added`` is checked with this too)."""
    if declared.axis not in AXES:
        raise ValueError(f"measure {declared.name!r}: axis {declared.axis!r} is not one of {AXES}")
    if not declared.scale > 0:
        raise ValueError(f"measure {declared.name!r}: scale R must be positive, not {declared.scale}")
    if declared.headline and any(m.headline and m.axis == declared.axis for m in all_measures()):
        raise ValueError(f"measure {declared.name!r}: axis {declared.axis!r} already has a headline measure")


def all_measures() -> tuple[Measure, ...]:
    """Every registered measure, in registration order (the deltas table's column order)."""
    return tuple(MEASURES.entries())


def measure_names() -> tuple[str, ...]:
    """The names of :func:`all_measures`, in order."""
    return tuple(m.name for m in all_measures())


def headline_measures() -> tuple[str, ...]:
    """One measure per axis: the family over which cross-dataset reversals are tested and corrected
    (the other measures of an axis are near-copies and would only inflate the multiplicity)."""
    return tuple(m.name for m in all_measures() if m.headline)


def paper_measures() -> tuple[str, ...]:
    """The measures the authors report."""
    return tuple(m.name for m in all_measures() if m.paper)


def model_measures() -> tuple[str, ...]:
    """The measures that need the model itself (hidden states, log-probabilities, entropies): every
    measure outside ``schema.RESPONSE_AXES``."""
    return tuple(m.name for m in all_measures() if m.axis not in RESPONSE_AXES)


def delta_columns() -> tuple[str, ...]:
    """Every column of the deltas table, in order: ids, ``delta_<name>`` per measure, ``correct``."""
    return (*DELTA_ID_COLUMNS, *(f"delta_{name}" for name in measure_names()), "correct")


def measure_label(name: str) -> str:
    """The human name of a measure; a name not registered shows as itself.

    >>> measure_label("act_cos_last"), measure_label("new_thing")
    ('Last-layer state', 'new_thing')
    """
    return MEASURES.get(name).label if name in MEASURES else name


def measures_markdown() -> str:
    """The registry as the Markdown table docs/ARCHITECTURE.md shows (a test keeps the two equal)."""
    rows = [
        "| measure | axis | R | Δ reads | headline | from | label | what Δ is |",
        "|---|---|---|---|---|---|---|---|",
    ]
    reads = {"down": "≤ 0", "both": "either sign"}
    for m in all_measures():
        cells = [f"`{m.name}`", m.axis, f"{m.scale:g}", reads[m.direction], "yes" if m.headline else ""]
        cells += ["paper" if m.paper else "ours", m.label, m.description]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


# ---- the measures ---------------------------------------------------------------------------------


def _activation(reduce: Callable[[np.ndarray], float]) -> MeasureFn:
    """``reduce`` of the per-layer cosines between each row's states and its baseline's, minus 1."""

    def delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
        out = np.full(len(pairs.frame), np.nan)
        rows = zip(pairs.frame["item_id"], pairs.frame["variant_id"], strict=True)
        for i, (item, variant) in enumerate(rows):
            here = pairs.activations.get(act.activation_key(item, variant))
            base = pairs.activations.get(act.activation_key(item, BASELINE_VARIANT_ID))
            if here is not None and base is not None:
                out[i] = reduce(act.layer_cosines(here, base)) - 1.0
        return out

    return delta


def _confidence(column: str) -> MeasureFn:
    """The record column under the rewrite minus the same under the baseline prompt."""

    def delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
        change = pairs.frame[column].astype(float) - pairs.frame[f"{column}_0"].astype(float)
        return np.asarray(change, dtype=np.float64)

    return delta


def _bleu(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    once = functools.cache(functools.partial(bleu, form=scorers.bleu_form))  # most (y_v, y_0) pairs repeat
    return np.array([once(c, r) for c, r in zip(*pairs.texts(), strict=True)], dtype=np.float64) - 100.0


def _bertscore(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return score_distinct(scorers.bertscore, *pairs.texts()) - 1.0


def _embed_cos(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return score_distinct(scorers.embedding, *pairs.texts()) - 1.0


def mirror_targets(frame: pd.DataFrame, length_target: str) -> np.ndarray:
    """The strength each row's mirroring rule reads: a length row's achieved prompt ratio where the
    variant set records one and ``length_target`` is "achieved"; the nominal strength otherwise.

    >>> f = pd.DataFrame({"family": ["length", "length", "spacing"], "strength": [2.0, 3.0, 5.0],
    ...                   "length_ratio": [1.9, float("nan"), float("nan")]})
    >>> mirror_targets(f, "achieved").tolist(), mirror_targets(f, "nominal").tolist()
    ([1.9, 3.0, 5.0], [2.0, 3.0, 5.0])
    """
    strength = np.asarray(frame["strength"], dtype=np.float64)
    if length_target != "achieved" or "length_ratio" not in frame.columns:
        return strength
    ratio = np.asarray(frame["length_ratio"], dtype=np.float64)
    use = np.asarray(frame["family"] == "length") & np.isfinite(ratio)
    return np.asarray(np.where(use, ratio, strength), dtype=np.float64)


def _mirroring(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    f = pairs.frame
    targets, judges = mirror_targets(f, scorers.length_target), _row_judges(f, scorers.politeness)
    rows = zip(f["family"], f["response"], f["response_0"], targets, judges, strict=True)
    return np.array([mirroring_delta(*row, scorers.mirroring_rules) for row in rows])


def _row_judges(frame: pd.DataFrame, judge: PolitenessJudge) -> list[PolitenessJudge]:
    """The politeness judge of each row: a judge that reads the prompts (the authors' API judge has an
    ``in_context``) gets the row's two prompts, strength and place; any other is the same for every row."""
    bind = getattr(judge, "in_context", None)
    if bind is None:
        return [judge] * len(frame)
    from benchmark.axes.api_judge import RowContext

    return [
        bind(RowContext(str(p0), str(pv), float(s), str(place)))
        for p0, pv, s, place in zip(
            frame["prompt_0"], frame["prompt"], frame["strength"], frame["place"], strict=True
        )
    ]


_DECLARED: tuple[tuple[str, str, float, Direction, str, bool, bool, str, MeasureFn], ...] = (
    # name, axis, R, Δ reads, label, headline, paper (the authors report it), what Δ is, delta
    ("act_cos_last", "activations", 2.0, "down", "Last-layer state", True, True,
     "cosine of last-layer state at the last prompt token, minus 1", _activation(act.cosine_last)),
    ("act_cos_mean", "activations", 2.0, "down", "All-layer state", False, False,
     "the same cosine averaged over all layers, minus 1", _activation(act.cosine_mean)),
    ("bleu", "generation", 100.0, "down", "Wording (BLEU)", False, True,
     "sentence BLEU of the response against the baseline response, minus 100", _bleu),
    ("bertscore", "generation", 1.0, "down", "Meaning (BERTScore)", True, True,
     "BERTScore F1 against the baseline response, minus 1", _bertscore),
    ("embed_cos", "generation", 2.0, "down", "Meaning (embedding)", False, False,
     "MiniLM embedding cosine to the baseline response, minus 1", _embed_cos),
    ("logprob", "confidence", 250.0, "both", "Answer log-prob", True, True,
     "change in summed log p(baseline response | prompt)", _confidence("logprob_sum")),
    ("logprob_mean", "confidence", 2.5, "both", "Log-prob per token", False, False,
     "change in per-token mean log p(baseline response | prompt)", _confidence("logprob_mean")),
    ("entropy", "confidence", 10.0, "both", "Next-token entropy", False, True,
     "change in mean next-token entropy over the baseline response", _confidence("entropy_mean")),
    ("mirroring", "mirroring", 1.0, "both", "Style mirroring", True, True,
     "response mirrors the rewrite's style (0/1), minus the same for the baseline", _mirroring),
)  # fmt: skip
"""The measures, in registration order (the deltas table's column order: a new one goes last)."""
for _row in _DECLARED:
    _add(Measure(*_row))
