"""Readable names of the axes; the ids stay in tooltips.

Presentation only: the numbers and the measure definitions come from ``leaderboard.json``. A measure's
label is declared with the measure (``benchmark.axes.measures.measure_label``).
"""

from __future__ import annotations

from benchmark.schema import AXIS_LABELS as AXIS_LABELS
from benchmark.schema import axis_label as axis_label

AXIS_QUESTIONS: dict[str, str] = {
    "activations": "does the model's internal state at the last prompt token move?",
    "generation": "does the greedy response change?",
    "confidence": "does the model become more or less sure of its baseline response?",
    "mirroring": "does the response copy the rewrite's style?",
}
"""One line per axis: what its measures ask."""
