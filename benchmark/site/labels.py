"""Readable names of the axes; the ids stay in tooltips.

Presentation only: the numbers and the measure definitions come from ``leaderboard.json``. A measure's
label is declared with the measure (``benchmark.axes.measures.measure_label``).
"""

from __future__ import annotations

AXIS_LABELS: dict[str, str] = {
    "activations": "Activations",
    "generation": "Generation",
    "confidence": "Confidence",
    "mirroring": "Mirroring",
}

AXIS_QUESTIONS: dict[str, str] = {
    "activations": "does the model's internal state at the last prompt token move?",
    "generation": "does the greedy response change?",
    "confidence": "does the model become more or less sure of its baseline response?",
    "mirroring": "does the response copy the rewrite's style?",
}
"""One line per axis: what its measures ask."""


def axis_label(axis: str) -> str:
    """The human name of an axis.

    >>> axis_label("generation")
    'Generation'
    """
    return AXIS_LABELS.get(axis, axis)
