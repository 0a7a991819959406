"""One submission's ``summary.json``: SGS, CIs, tests, per family, noise floor, accuracy, per item.

``summarize`` is a pure function of the deltas table; ``write_summary`` / ``load_summary`` are the
disk boundary. The per-item rows make the summary self-sufficient: the leaderboard's cross-model
statistics are computed from summaries alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark import __version__
from benchmark.schema import DEFAULT_SEED, SUMMARY_SCHEMA_VERSION
from benchmark.stats import jsonio
from benchmark.stats.sgs import (
    ALL,
    CELL_KEYS,
    CONFIDENCE,
    CONTROL_FAMILIES,
    DEFAULT_RESAMPLES,
    accuracy_table,
    instability_per_item,
    noise_floor_table,
    noise_per_item,
    sgs_table,
    with_all_dataset,
)
from benchmark.stats.significance import (
    EPSILONS,
    MARKERS,
    PRIMARY_EPSILON,
    adjust_across_cells,
    epsilon_tests,
)

SUMMARY_NAME = "summary.json"
TEST_FIELDS = ("epsilon", "t", "p_t", "p_holm", "p_bh", "marker", "wilcoxon_w", "p_wilcoxon",
               "significant_holm", "significant_bh")
GENERATOR = {"package": "sago-bench", "version": __version__}


@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis; the defaults are the published ones."""

    seed: int = DEFAULT_SEED
    """base seed of every bootstrap and subset draw."""
    resamples: int = DEFAULT_RESAMPLES
    """bootstrap resamples per interval (≥ 2000 for published numbers)."""
    epsilons: tuple[float, ...] = EPSILONS
    """thresholds of the one-sided tests."""


DEFAULT_OPTIONS = AnalysisOptions()


def header(options: AnalysisOptions, *, set_name: str, version: str, schema_version: int) -> dict[str, Any]:
    """The fields a summary and the leaderboard share."""
    return {"schema_version": schema_version, "generator": GENERATOR, "set": set_name, "version": version,
            "seed": options.seed, "bootstrap_resamples": options.resamples, "confidence": CONFIDENCE,
            "epsilons": list(options.epsilons), "primary_epsilon": PRIMARY_EPSILON,
            "markers": [{"symbol": s, "below": b} for s, b in MARKERS]}


def nest_tests(cells: pd.DataFrame, tests: pd.DataFrame, noise: pd.DataFrame) -> list[dict[str, Any]]:
    """Cell rows with their tests (one per ε, in ε order), primary marker and pooled noise floor."""
    pooled = noise[noise["control"] == "controls"].set_index(list(CELL_KEYS))["value"]
    grouped = {key: group.sort_values("epsilon") for key, group in tests.groupby(list(CELL_KEYS))}
    rows = []
    for cell in jsonio.records(cells):
        key = tuple(cell[k] for k in CELL_KEYS)
        cell_tests = jsonio.records(grouped[key][list(TEST_FIELDS)]) if key in grouped else []
        primary = [t["marker"] for t in cell_tests if t["epsilon"] == PRIMARY_EPSILON]
        cell |= {"tests": cell_tests, "marker": primary[0] if primary else "",
                 "noise_floor": pooled.get(key, float("nan"))}
        rows.append(cell)
    return rows


def _single_model(deltas: pd.DataFrame, model: str) -> pd.DataFrame:
    """The deltas with ``model`` in the model column (a summary is about one submission)."""
    names = set(deltas["model"].astype(str).unique())
    if names - {model}:
        raise ValueError(f"deltas hold models {sorted(names)}, expected only {model!r}")
    return deltas


def summarize(deltas: pd.DataFrame, *, model: str, set_name: str, version: str,
              options: AnalysisOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """The summary document of one submission on one variant set (pure; nothing is written).

    Args:
        deltas: the submission's deltas table (docs/CONTRACTS.md section 3).
        model: the submission slug, as in the deltas' ``model`` column.
        set_name: variant set name; version: its version.
        options: seed, resamples, epsilons.
    """
    deltas = _single_model(deltas, model)
    per_item = instability_per_item(deltas)
    cells = sgs_table(per_item, seed=options.seed, resamples=options.resamples)
    tests = adjust_across_cells(epsilon_tests(per_item, options.epsilons))
    noise = noise_floor_table(noise_per_item(deltas))
    per_family = sgs_table(instability_per_item(deltas, by_family=True), seed=options.seed,
                           resamples=options.resamples, keys=(*CELL_KEYS, "family"))
    proper = per_item[per_item["dataset"] != ALL]
    document = header(options, set_name=set_name, version=version, schema_version=SUMMARY_SCHEMA_VERSION)
    return document | {
        "model": model,
        "datasets": sorted(proper["dataset"].unique()),
        "families": sorted(set(deltas["family"].unique()) - CONTROL_FAMILIES),
        "cells": nest_tests(cells, tests, noise),
        "per_family": jsonio.records(per_family),
        "noise_floor": jsonio.records(noise),
        "accuracy": jsonio.records(accuracy_table(deltas)),
        "per_item": jsonio.records(proper[["dataset", "item_id", "measure", "s"]]
                                   .sort_values(["dataset", "item_id", "measure"])),
    }


def write_summary(results_dir: Path, document: Mapping[str, Any]) -> Path:
    """Write ``results_dir/summary.json`` canonically; returns its path."""
    return jsonio.write_json(results_dir / SUMMARY_NAME, document)


def load_summary(path: Path) -> dict[str, Any]:
    """Read a summary, refusing one written by a newer sago-bench (one-line ``SagoError``)."""
    return jsonio.read_versioned(path, kind="summary", newest=SUMMARY_SCHEMA_VERSION)


def per_item_frame(summaries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per-item s of every summary as one long table, with the pooled ``"all"`` rows added."""
    frames = [pd.DataFrame(s["per_item"], columns=["dataset", "item_id", "measure", "s"]).assign(model=s["model"])
              for s in summaries]
    columns = ["model", "dataset", "item_id", "measure", "s"]
    if not frames:
        return pd.DataFrame(columns=columns)
    table = pd.concat(frames, ignore_index=True)[columns].dropna(subset=["s"])
    table["s"] = table["s"].astype(float)
    return with_all_dataset(table)


def rows_frame(summaries: Sequence[Mapping[str, Any]], key: str) -> pd.DataFrame:
    """The ``key`` rows (e.g. "accuracy") of every summary in one table, each tagged with its model."""
    frames = [pd.DataFrame(s[key]).assign(model=s["model"]) for s in summaries if s[key]]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
