"""Calibrate the similarity floor of LLM rewrites on hand-labelled pairs.

``benchmark/data/similarity_pairs.jsonl`` holds rewrites of real items, each labelled by hand as asking
the same thing (``same: true``) or not: faithful paraphrases, shortenings and form flips against rewrites
that answer the question, drop data it needs, change a name or ask something nearby. Among the pairs that
pass the exact checks, the floor is the threshold on MiniLM cosine with the best balanced accuracy,
rounded down to a multiple of 0.05 (a round number does not pretend to more precision than 48 pairs
give). Similarity is only one of the checks: numbers, names and quotations are checked exactly (see
:mod:`benchmark.variants.llm`), so the floor's job is to catch rewrites that drift to another question.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib.resources import files

import numpy as np

from benchmark.variants.llm import missing_facts
from benchmark.variants.similarity import Embedder, similarities


@dataclass(frozen=True)
class Calibration:
    """The chosen floor and how well it separates the labelled pairs."""

    threshold: float
    """similarity floor (multiple of 0.05)."""
    balanced_accuracy: float
    """mean of the accept rate on same-meaning pairs and the reject rate on the others."""
    n_same: int
    """pairs labelled as asking the same thing."""
    n_different: int
    """pairs labelled as changing the question."""


def labelled_pairs() -> list[dict[str, object]]:
    """The committed hand-labelled pairs."""
    text = files("benchmark").joinpath("data/similarity_pairs.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def calibrate(embedder: Embedder) -> Calibration:
    """Pick the floor with the best balanced accuracy on :func:`labelled_pairs` (ties: the lower floor)."""
    # Calibrate what is left to the floor: pairs that already pass the exact checks (numbers, names,
    # quotations) - a rewrite failing those is rejected whatever its similarity.
    pairs = [p for p in labelled_pairs() if not missing_facts(str(p["original"]), str(p["rewrite"]))]
    scores = np.array(similarities(embedder, [(str(p["original"]), str(p["rewrite"])) for p in pairs]))
    same = np.array([bool(p["same"]) for p in pairs])
    best = (-1.0, 0.0)
    for threshold in np.round(np.arange(0.30, 0.96, 0.05), 2):
        accuracy = (np.mean(scores[same] >= threshold) + np.mean(scores[~same] < threshold)) / 2
        if accuracy > best[0] + 1e-12:
            best = (float(accuracy), float(threshold))
    return Calibration(
        math.floor(best[1] * 20 + 1e-9) / 20, round(best[0], 4), int(same.sum()), int((~same).sum())
    )
