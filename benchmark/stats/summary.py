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

from benchmark import jsonio
from benchmark.documents import SummaryDocument
from benchmark.results import ResultsFolder, write_document
from benchmark.schema import DEFAULT_SEED, SUMMARY_SCHEMA_VERSION
from benchmark.stats.sgs import (
    AGGREGATE_LABELS,
    AGGREGATES,
    ALL,
    CELL_KEYS,
    CONFIDENCE,
    CONTROL_FAMILIES,
    DEFAULT_RESAMPLES,
    EXTENDED,
    PAPER,
    accuracy_table,
    instability_per_item,
    noise_floor_table,
    noise_per_item,
    sgs_table,
    with_all_dataset,
)
from benchmark.stats.significance import (
    ADJUSTED_COLUMNS,
    ALPHA,
    CORRECTION_FAMILY,
    EPSILONS,
    MARKERS,
    NOT_TESTABLE,
    PRIMARY_EPSILON,
    RAW_TEST_COLUMNS,
    adjust_across_cells,
    epsilon_tests,
)
from benchmark.version import __version__

TEST_FIELDS = (*RAW_TEST_COLUMNS, *ADJUSTED_COLUMNS)
STAT_FIELDS = ("n_items", "sgs", "ci_low", "ci_high")
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
    return {
        "schema_version": schema_version,
        "generator": GENERATOR,
        "set": set_name,
        "version": version,
        "seed": options.seed,
        "bootstrap_resamples": options.resamples,
        "confidence": CONFIDENCE,
        "epsilons": list(options.epsilons),
        "primary_epsilon": PRIMARY_EPSILON,
        "alpha": ALPHA,
        "markers": [{"symbol": s, "below": b} for s, b in MARKERS],
        "correction": {
            "method": "holm",
            "cells": CORRECTION_FAMILY,
            "markers": (
                "every marker and verdict is from the Holm-adjusted exact sign-flip p (p_holm); the paper's "
                "t-test is a labelled column: p_t and marker_uncorrected raw, p_t_holm and marker_t corrected"
            ),
        },
    }


def aggregate_row(name: str, families: list[str]) -> dict[str, Any]:
    """One row of the ``aggregates`` block (a summary's and the leaderboard's): what the SGS pools."""
    return {"name": name, "label": AGGREGATE_LABELS[name], "headline": name == PAPER, "families": families}


def aggregate_rows(deltas: pd.DataFrame) -> list[dict[str, Any]]:
    """The ``aggregates`` block: which families each SGS pools (only families present in ``deltas``)."""
    present = set(deltas["family"].unique()) - CONTROL_FAMILIES
    return [
        aggregate_row(name, sorted(present if families is None else present & set(families)))
        for name, families in AGGREGATES.items()
    ]


def tests_by_cell(tests: pd.DataFrame) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Test rows (``TEST_FIELDS``, in ε order) per cell key, converted to JSON-ready dicts in one pass."""
    ordered = tests.sort_values([*CELL_KEYS, "epsilon"], kind="stable")
    grouped: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for key, row in zip(
        ordered[list(CELL_KEYS)].itertuples(index=False, name=None),
        jsonio.records(ordered[list(TEST_FIELDS)]),
        strict=True,
    ):
        grouped.setdefault(key, []).append(row)
    return grouped


def with_tests(stats: Mapping[str, Any], tests: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's statistics with its ``tests`` (one per ε, in ε order) and the primary test's marker and
    verdict (the leaderboard calls it again with its board-wide corrected tests)."""
    primary = [t for t in tests if t["epsilon"] == PRIMARY_EPSILON]
    return dict(stats) | {
        "tests": tests,
        "marker": primary[0]["marker"] if primary else "",
        "verdict": primary[0]["verdict"] if primary else NOT_TESTABLE,
    }


def cell_stats(cells: pd.DataFrame, tests: pd.DataFrame) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per cell key: SGS, CI, tests, and the primary test's marker and verdict (:func:`with_tests`)."""
    grouped = tests_by_cell(tests)
    out = {}
    for cell in jsonio.records(cells):
        key = tuple(cell[k] for k in CELL_KEYS)
        out[key] = with_tests({f: cell[f] for f in STAT_FIELDS}, grouped.get(key, []))
    return out


EMPTY_STATS: dict[str, Any] = dict.fromkeys(STAT_FIELDS) | {
    "n_items": 0,
    "tests": [],
    "marker": "",
    "verdict": NOT_TESTABLE,
}


def nest_cells(
    paper: dict[tuple[Any, ...], dict[str, Any]],
    extended: dict[tuple[Any, ...], dict[str, Any]],
    noise: pd.DataFrame,
) -> list[dict[str, Any]]:
    """One row per cell: the paper SGS (headline) flat, the extended SGS under ``extended``, noise floor."""
    pooled = noise[noise["control"] == "controls"].set_index(list(CELL_KEYS))["value"]
    return [
        dict(zip(CELL_KEYS, key, strict=True))
        | paper.get(key, EMPTY_STATS)
        | {"extended": extended.get(key, EMPTY_STATS), "noise_floor": pooled.get(key, float("nan"))}
        for key in sorted(set(paper) | set(extended))
    ]


def aggregate_tables(
    deltas: pd.DataFrame, aggregate: str, options: AnalysisOptions
) -> tuple[pd.DataFrame, dict[tuple[Any, ...], dict[str, Any]]]:
    """(per-item s, cell stats) of one aggregate; tests corrected within this aggregate's cells."""
    per_item = instability_per_item(deltas, aggregate=aggregate)
    cells = sgs_table(per_item, seed=options.seed, resamples=options.resamples)
    tests = adjust_across_cells(epsilon_tests(per_item, options.epsilons))
    return per_item, cell_stats(cells, tests)


def per_item_rows(paper: pd.DataFrame, extended: pd.DataFrame) -> list[dict[str, Any]]:
    """``{dataset, item_id, measure, s, s_extended}`` over the datasets proper."""
    keys = ["dataset", "item_id", "measure"]
    both = paper[paper["dataset"] != ALL][[*keys, "s"]].merge(
        extended[extended["dataset"] != ALL][[*keys, "s"]].rename(columns={"s": "s_extended"}),
        on=keys,
        how="outer",
    )
    return jsonio.records(both.sort_values(keys))


def summarize(
    deltas: pd.DataFrame,
    *,
    model: str,
    set_name: str,
    version: str,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    axes: Mapping[str, str] | None = None,
    not_measured: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The summary document of one submission on one variant set (pure; nothing is written).

    Args:
        deltas: the submission's deltas table (docs/CONTRACTS.md section 3).
        model: the submission slug, as in the deltas' ``model`` column.
        axes: how the deltas were scored (mirroring rules, politeness judge, BLEU form, backbones).
        not_measured: measure -> why the run could not measure it (its deltas are NaN, so it has no
            cell); written as ``not_measured`` only when given, so harness results keep their bytes.
    """
    names = set(deltas["model"].astype(str).unique())
    if names - {model}:  # a summary is about one submission
        raise ValueError(f"deltas hold models {sorted(names)}, expected only {model!r}")
    paper_items, paper = aggregate_tables(deltas, PAPER, options)
    extended_items, extended = aggregate_tables(deltas, EXTENDED, options)
    noise = noise_floor_table(noise_per_item(deltas))
    per_family = sgs_table(
        instability_per_item(deltas, by_family=True, aggregate=EXTENDED),
        seed=options.seed,
        resamples=options.resamples,
        keys=(*CELL_KEYS, "family"),
    )
    proper = extended_items[extended_items["dataset"] != ALL]
    document = header(options, set_name=set_name, version=version, schema_version=SUMMARY_SCHEMA_VERSION)
    return (
        document
        | {
            "model": model,
            "axes": dict(axes or {}),
            "aggregates": aggregate_rows(deltas),
            "datasets": sorted(proper["dataset"].unique()),
            "families": sorted(set(deltas["family"].unique()) - CONTROL_FAMILIES),
            "cells": nest_cells(paper, extended, noise),
            "per_family": jsonio.records(per_family),
            "noise_floor": jsonio.records(noise),
            "accuracy": jsonio.records(accuracy_table(deltas)),
            "per_item": per_item_rows(paper_items, extended_items),
        }
        | ({"not_measured": dict(sorted(not_measured.items()))} if not_measured else {})
    )


def summary_document(
    deltas: pd.DataFrame,
    *,
    model: str,
    set_name: str,
    version: str,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    axes: Mapping[str, str] | None = None,
    not_measured: Mapping[str, str] | None = None,
) -> SummaryDocument:
    """:func:`summarize` as the typed document other packages read and write."""
    return SummaryDocument.from_json(
        summarize(
            deltas,
            model=model,
            set_name=set_name,
            version=version,
            options=options,
            axes=axes,
            not_measured=not_measured,
        )
    )


def write_summary(results_dir: Path, document: SummaryDocument) -> Path:
    """Write ``results_dir/summary.json`` canonically; returns its path."""
    return write_document(ResultsFolder(results_dir).summary, document)


def load_summary(path: Path) -> SummaryDocument:
    """Read a summary, refusing one written by a newer sago-bench (one-line ``SagoError``)."""
    return SummaryDocument.read(path)


def per_item_frame(summaries: Sequence[Mapping[str, Any]], aggregate: str = PAPER) -> pd.DataFrame:
    """Per-item s of one aggregate of every summary as one long table, plus the pooled ``"all"`` rows."""
    column = "s" if aggregate == PAPER else "s_extended"
    frames = [
        pd.DataFrame(s["per_item"], columns=["dataset", "item_id", "measure", column])
        .rename(columns={column: "s"})
        .assign(model=s["model"])
        for s in summaries
    ]
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
