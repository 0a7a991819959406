"""One quantity, two measures: the table that lets the claims and the site say so, and the sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmark.documents import LeaderboardDocument
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION
from benchmark.stats.claims import claims
from benchmark.stats.proportional import constant_factor, proportional_measures


def rows(model: str, dataset: str, measure: str, values: list[float]) -> list[dict[str, object]]:
    return [
        {"model": model, "dataset": dataset, "item_id": f"i{k}", "measure": measure, "s": v}
        for k, v in enumerate(values)
    ]


def test_rule_a_measure_at_a_fixed_scale_of_another_is_found() -> None:
    # log-prob per token vs summed log-prob when every answer has 32 tokens: s scales by 32 · 2.5 / 250
    mean = [0.1, 0.25, 0.05, 0.4]
    table = pd.DataFrame(
        rows("g", "d", "logprob_mean", mean)
        + rows("g", "d", "logprob", [0.32 * v for v in mean])
        + rows("g", "d", "bleu", [0.3, 0.1, 0.7, 0.2])
    )
    found = proportional_measures(table)
    assert found.to_dict("records") == [
        {
            "model": "g",
            "dataset": "d",
            "measure_a": "logprob",
            "measure_b": "logprob_mean",
            "n_items": 4,
            "factor": 0.32,
        }
    ]


def test_answers_of_varying_length_are_not_one_quantity() -> None:
    assert constant_factor(np.array([0.1, 0.3]), np.array([1.0, 2.0])) is None
    assert constant_factor(np.array([0.0, 0.0]), np.array([0.0, 0.0])) is None  # nothing to scale


def test_the_claims_say_so_and_count_the_pair_once() -> None:
    document = LeaderboardDocument.from_json(
        {
            "schema_version": LEADERBOARD_SCHEMA_VERSION,
            "models": [{"slug": "g", "name": "G", "status": "complete"}],
            "measures": [
                {"name": "logprob", "axis": "confidence", "paper": True},
                {"name": "logprob_mean", "axis": "confidence", "paper": False},
            ],
            "cells": [{"model": "g", "dataset": "all", "measure": "logprob", "sgs": 0.1, "tests": []}],
            "primary_epsilon": 0.05,
            "proportional_measures": [
                {
                    "model": "g",
                    "dataset": "all",
                    "measure_a": "logprob",
                    "measure_b": "logprob_mean",
                    "n_items": 24,
                    "factor": 0.32,
                }
            ],
        }
    )
    said = {c["id"]: c["text"] for c in claims(document)}
    assert "answer log-prob = 0.32 × log-prob per token for G" in said["proportional"]
    assert "one finding, not two" in said["proportional"]
    assert "paper-measure cells" in said["instability"]  # the count covers paper measures only
    with pytest.raises(KeyError):
        said["grid"]  # one model: nothing to compare
