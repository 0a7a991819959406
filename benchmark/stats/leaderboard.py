"""``leaderboard/leaderboard.json``: every submission together (format: docs/LEADERBOARD_JSON.md).

``build_leaderboard`` is pure: it takes the submissions' metadata and their summaries (which carry the
per-item values) and returns the document. Cross-model statistics — corrected p-values, ranks, paired
comparisons, agreement between datasets, reversals, axis independence, the sample-size study — are
computed here, because they need more than one model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark import jsonio
from benchmark.axes.measures import all_measures, headline_measures
from benchmark.documents import LEADERBOARD_TABLES, LeaderboardDocument, SummaryDocument
from benchmark.errors import SagoError
from benchmark.rows import RunRow
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION, SUMMARY_SCHEMA_VERSION
from benchmark.stats import ranking, rewrite_accuracy, validity
from benchmark.stats.agreement import REVERSAL_FAMILY, kendall_tau_table, kendall_w_table, reversal_table
from benchmark.stats.claims import claims
from benchmark.stats.independence import accuracy_vs_sgs, independence_table, pareto_table
from benchmark.stats.proportional import proportional_measures
from benchmark.stats.ranking import PAIRWISE_FAMILY, friedman_table, paired_draws, pairwise_table, rank_table
from benchmark.stats.rewrite_accuracy import RewriteRow
from benchmark.stats.sample_size import ranking_agreement_table, sample_size_table, smallest_n_table
from benchmark.stats.sgs import CELL_KEYS, EXTENDED, PAPER
from benchmark.stats.significance import RAW_TEST_COLUMNS, adjust_across_cells
from benchmark.stats.summary import (
    DEFAULT_OPTIONS,
    AnalysisOptions,
    aggregate_row,
    header,
    per_item_frame,
    rows_frame,
    tests_by_cell,
    with_tests,
)
from benchmark.submissions import Submission

MEASURE_FIELDS = ("name", "axis", "scale", "paper", "headline", "description")
"""What ``measures[]`` states of each registered measure."""


@dataclass(frozen=True)
class Entry:
    """One submission folder as the leaderboard sees it."""

    slug: str
    """folder name under ``submissions/``."""
    submission: Submission
    """the validated ``submission.yaml``."""
    summary: SummaryDocument | None
    """its summary on this variant set, or None while results are pending."""
    summary_path: str | None
    """repo-relative path of that summary (None while pending)."""
    run: RunRow | None = None
    """how the result was made (:func:`benchmark.stats.facts.run_row`; None while pending)."""
    rewrite_accuracy: tuple[RewriteRow, ...] = ()
    """uncorrected accuracy-under-rewrite rows (:func:`rewrite_accuracy.rewrite_accuracy_rows`)."""


def model_row(entry: Entry) -> dict[str, Any]:
    """The ``models[]`` row of one submission (docs/LEADERBOARD_JSON.md)."""
    meta = entry.submission.model_dump(mode="json")
    n_items = None
    if entry.summary is not None:
        n_items = len({(r["dataset"], r["item_id"]) for r in entry.summary.per_item})
    return {
        "slug": entry.slug,
        "name": meta["name"],
        "source": meta["model"],
        "status": "complete" if entry.summary is not None else "pending",
        **{
            k: meta.get(k)
            for k in ("parameters", "dtype", "chat_template", "license", "contact", "url", "notes")
        },
        "summary": entry.summary_path,
        "n_items": n_items,
        "run": entry.run if entry.summary is not None else None,
    }


RAW_FLOATS = ("t", "p_t", "p_exact", "p_floor")


def tests_frame(summaries: Sequence[Mapping[str, Any]], aggregate: str = PAPER) -> pd.DataFrame:
    """Raw tests of one aggregate of every summary, re-adjusted across *all* models' cells."""

    rows = [
        {k: cell[k] for k in CELL_KEYS} | {k: test[k] for k in RAW_TEST_COLUMNS}
        for summary in summaries
        for cell in summary["cells"]
        for test in (cell if aggregate == PAPER else cell["extended"])["tests"]
    ]
    raw = pd.DataFrame(rows, columns=[*CELL_KEYS, *RAW_TEST_COLUMNS])
    for column in RAW_FLOATS:
        raw[column] = raw[column].astype(float)  # null in JSON comes back as None
    raw["n_items"] = raw["n_items"].astype(int)
    return adjust_across_cells(raw)


def cell_rows(
    summaries: Sequence[Mapping[str, Any]], tests: Mapping[str, pd.DataFrame], ranks: pd.DataFrame
) -> list[dict[str, Any]]:
    """The ``cells[]`` rows: each summary cell with leaderboard-wide corrected tests and its rank fields."""
    by_cell = {aggregate: tests_by_cell(table) for aggregate, table in tests.items()}
    rank_of = {tuple(r[k] for k in CELL_KEYS): r for r in jsonio.records(ranks)}
    rows = []
    for summary in summaries:
        for cell in summary["cells"]:
            key = tuple(cell[k] for k in CELL_KEYS)
            ranked = rank_of.get(key, {})
            extended = with_tests(cell["extended"], by_cell[EXTENDED].get(key, []))
            rows.append(
                with_tests(cell, by_cell[PAPER].get(key, []))
                | {"extended": extended}
                | {f: ranked.get(f) for f in ranking.RANK_FIELDS}
            )
    return sorted(rows, key=lambda r: tuple(r[k] for k in CELL_KEYS))


def _cells_frame(summaries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """``model, dataset, measure, sgs`` of the paper (headline) SGS."""
    rows = [{k: c[k] for k in (*CELL_KEYS, "sgs")} for s in summaries for c in s["cells"] if c["n_items"]]
    table = pd.DataFrame(rows, columns=[*CELL_KEYS, "sgs"])
    table["sgs"] = table["sgs"].astype(float)
    return table


def _sorted(table: pd.DataFrame, *keys: str) -> list[dict[str, Any]]:
    return jsonio.records(table.sort_values(list(keys), kind="stable")) if len(table) else []


def cross_model_tables(summaries: Sequence[Mapping[str, Any]], options: AnalysisOptions) -> dict[str, Any]:
    """Every table of the leaderboard that needs more than one summary's cells."""
    per_item = per_item_frame(summaries)
    draws = paired_draws(per_item, seed=options.seed, resamples=options.resamples)
    cells = _cells_frame(summaries)
    pairwise = pairwise_table(draws)
    accuracy = rows_frame(summaries, "accuracy")
    study = sample_size_table(per_item, seed=options.seed)
    tests = {aggregate: tests_frame(summaries, aggregate) for aggregate in (PAPER, EXTENDED)}
    return {
        "cells": cell_rows(summaries, tests, rank_table(draws, pairwise)),
        "pairwise": _sorted(pairwise, "dataset", "measure", "model_a", "model_b"),
        "friedman": _sorted(friedman_table(draws), "dataset", "measure"),
        "kendall_tau": _sorted(kendall_tau_table(cells), "measure", "dataset_a", "dataset_b"),
        "kendall_w": _sorted(kendall_w_table(cells), "measure"),
        "reversals": _sorted(
            reversal_table(pairwise, draws), "measure", "model_a", "model_b", "dataset_a", "dataset_b"
        ),
        "independence": _sorted(independence_table(per_item), "scope", "model", "measure_a", "measure_b"),
        "proportional_measures": _sorted(
            proportional_measures(per_item), "model", "dataset", "measure_a", "measure_b"
        ),
        "pareto": _sorted(pareto_table(cells), "dataset", "model"),
        "accuracy_vs_sgs": _sorted(accuracy_vs_sgs(accuracy, cells), "measure") if len(accuracy) else [],
        "sample_size": _sorted(study, *CELL_KEYS, "n"),
        "sample_size_smallest_n": _sorted(smallest_n_table(study), *CELL_KEYS),
        "sample_size_ranking": _sorted(
            ranking_agreement_table(draws, seed=options.seed), "dataset", "measure", "n"
        ),
    }


def per_model_tables(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Tables copied from the summaries, tagged with their model and sorted."""
    keys = {
        "per_family": (*CELL_KEYS, "family"),
        "noise_floor": (*CELL_KEYS, "control"),
        "accuracy": ("model", "dataset"),
    }
    return {name: _sorted(rows_frame(summaries, name), *key) for name, key in keys.items()}


def _aggregates(summaries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``aggregates`` block: each aggregate with the union of the families it pooled in any summary."""
    pooled = {(a["name"], f) for s in summaries for a in s["aggregates"] for f in a["families"]}
    return [aggregate_row(name, sorted(f for n, f in pooled if n == name)) for name in (PAPER, EXTENDED)]


def check_one_dtype(entries: Sequence[Entry]) -> None:
    """Refuse a board whose ranked results ran in different dtypes (run.json's ``model.dtype``).

    The dtype is part of a measurement: on SmolLM2, bfloat16 and float32 gave identical responses on 47 %
    of the prompts (issue 51), so a bfloat16 result ranked beside float32 ones would differ in what was
    measured, not only in the model. A result whose dtype is not known (an API run) is not compared.
    """
    first: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: e.slug):
        dtype = entry.run["dtype"] if entry.summary is not None and entry.run is not None else None
        if dtype:
            first.setdefault(dtype, entry.slug)
    if len(first) > 1:
        (dtype_a, slug_a), (dtype_b, slug_b) = list(first.items())[:2]
        raise SagoError(
            f"{slug_a} ran in {dtype_a} but {slug_b} in {dtype_b}: one board ranks results of one dtype; "
            f"re-run one of them in the other's dtype (sago evaluate on a CPU runs float32) "
            "or build their boards separately"
        )


def build_leaderboard(
    entries: Sequence[Entry],
    *,
    set_name: str,
    version: str,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    gold: Mapping[tuple[str, str], str] | None = None,
) -> LeaderboardDocument:
    """The leaderboard document over ``entries`` (pending ones appear in ``models`` only).

    ``gold``: (dataset, item_id) -> normalised reference answer (:func:`validity.gold_answers`), for the
    accuracy's trivial baseline; without it ``accuracy[].baseline`` is null.

    The document holds the canonical JSON form (rounded floats, null for NaN): what readers of the
    written file see.
    """
    check_one_dtype(entries)
    entries = sorted(entries, key=lambda e: e.slug)
    summaries = [e.summary.to_json() for e in entries if e.summary is not None]
    for entry in entries:
        if entry.summary is not None and entry.summary.schema_version != SUMMARY_SCHEMA_VERSION:
            raise SagoError(
                f"{entry.summary_path or entry.slug}: summary schema_version "
                f"{entry.summary.schema_version} is older than the leaderboard needs "
                f"({SUMMARY_SCHEMA_VERSION}); re-run `sago analyze`"
            )
    document = header(options, set_name=set_name, version=version, schema_version=LEADERBOARD_SCHEMA_VERSION)
    document["correction"] |= {
        "reversals": REVERSAL_FAMILY,
        "pairwise": PAIRWISE_FAMILY,
        "accuracy_under_rewrite": rewrite_accuracy.FAMILY,
    }
    document |= {
        "aggregates": _aggregates(summaries),
        "headline_measures": list(headline_measures()),
        "measures": [{k: getattr(m, k) for k in MEASURE_FIELDS} for m in all_measures()],
        "datasets": sorted({d for s in summaries for d in s["datasets"]}),
        "families": sorted({f for s in summaries for f in s["families"]}),
        "models": [model_row(e) for e in entries],
    }
    # every table the document declares starts empty (pending-only boards have no statistics)
    empty: dict[str, Any] = {k: [] for k in LEADERBOARD_TABLES if k not in document}
    if summaries:
        empty |= cross_model_tables(summaries, options) | per_model_tables(summaries)
    document |= empty
    # every cell and pair carries its validity labels: the sentences never state one bare
    axes = {m.name: m.axis for m in all_measures()}
    document["cells"] = validity.annotate_cells(document["cells"], document["models"], axes)
    document["pairwise"] = validity.annotate_pairs(document["pairwise"], document["cells"])
    items = {s["model"]: {(r["dataset"], str(r["item_id"])) for r in s["per_item"]} for s in summaries}
    document["accuracy_under_rewrite"] = rewrite_accuracy.corrected_rows(
        row for e in entries if e.summary is not None for row in e.rewrite_accuracy
    )
    document["accuracy"] = validity.annotate_accuracy(
        document["accuracy"], items, gold or {}, document["models"]
    )
    # the sentences are generated from the canonical JSON form, exactly what readers of the file will see
    canonical: dict[str, Any] = jsonio.clean(document)
    canonical["claims"] = claims(LeaderboardDocument.from_json(canonical))
    return LeaderboardDocument.from_json(canonical)


def load_leaderboard(path: Path) -> LeaderboardDocument:
    """Read a leaderboard, refusing one of another schema version (one-line ``SagoError``)."""
    return LeaderboardDocument.read(path)
