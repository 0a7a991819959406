"""Freeze a built variant set: deterministic parquet, the rewrite log, the dataset card and the manifest.

The reader of what this writes is :mod:`benchmark.variants.frozen`.
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pyarrow as pa

from benchmark.documents import MANIFEST, ManifestDocument
from benchmark.provenance import sha256_file
from benchmark.results import write_document, write_parquet
from benchmark.schema import VARIANT_COLUMNS
from benchmark.variants import llm
from benchmark.variants.build import BuildResult, BuildSpec, dropped, log_path
from benchmark.variants.card import card_for
from benchmark.variants.cells import Cell, Reading, summary
from benchmark.variants.families import BUILDER_VERSION, FAMILIES, IDENTITY_VARIANT_ID
from benchmark.variants.frozen import ARROW_SCHEMA
from benchmark.variants.similarity import SIMILARITY_DECIMALS
from benchmark.variants.sources import Source


def write_variant_table(frame: pd.DataFrame, path: Path) -> None:
    """Write a variant table so the same rows always give the same bytes.

    The table is built from Python lists against a fixed schema (no pandas metadata, which carries
    library versions), one row group, fixed compression, no statistics that depend on writer options.
    """
    if "length_ratio" not in frame.columns:  # a frame built before schema 2 (no achieved ratios)
        frame = frame.assign(length_ratio=float("nan"))
    columns = {name: frame[name].tolist() for name in VARIANT_COLUMNS}
    columns["answers"] = [list(a) for a in columns["answers"]]
    write_frozen_parquet(pa.Table.from_pydict(columns, schema=ARROW_SCHEMA), path)


def write_frozen_parquet(table: pa.Table, path: Path) -> None:
    """Parquet whose bytes depend only on the rows: one row group, fixed compression and page format,
    no statistics and no stored schema metadata (which would carry writer versions)."""
    write_parquet(
        path,
        table,
        compression="zstd",
        compression_level=9,
        row_group_size=max(1, table.num_rows),
        use_dictionary=True,
        write_statistics=False,
        version="2.6",
        data_page_version="1.0",
        store_schema=False,
    )


WRITTEN_FILE = "written_cells.parquet"
"""The release's copy of its written length/form cells with their readings (parquet, so the dataset card's
``written_cells`` config loads with the same builder as the data configs)."""

_TEXT = pa.string()
_READING = pa.struct(
    [("reader", _TEXT), ("role", _TEXT), ("accept", pa.bool_()), ("checks", _TEXT), ("note", _TEXT)]
)
_VERSION = pa.struct([("text", _TEXT), ("author", _TEXT), ("readings", pa.list_(_READING))])
WRITTEN_SCHEMA = pa.schema(
    [
        ("dataset", _TEXT),
        ("item_id", _TEXT),
        ("variant_id", _TEXT),
        ("text", _TEXT),
        ("spans", pa.list_(_TEXT)),
        ("floor", _TEXT),
        ("not_makeable", _TEXT),
        ("source_words", pa.int64()),
        ("words", pa.int64()),
        ("ratio", pa.float64()),
        ("kind", _TEXT),
        ("status", _TEXT),
        ("readings", pa.list_(_READING)),
        ("earlier", pa.list_(_VERSION)),
    ]
)
"""One row per written cell; a reading's ``checks`` is its JSON object (keys sorted)."""


def _readings(readings: Sequence[Reading]) -> list[dict[str, object]]:
    return [{**asdict(r), "checks": json.dumps(r.checks, sort_keys=True)} for r in readings]


def write_written_table(cells: Sequence[Cell], path: Path) -> None:
    """The written cells as deterministic parquet (fixed schema, one row group, no writer metadata)."""
    rows = [
        {
            **asdict(c),
            "status": c.status(),
            "readings": _readings(c.readings),
            "earlier": [{**asdict(v), "readings": _readings(v.readings)} for v in c.earlier],
        }
        for c in cells
    ]
    write_frozen_parquet(pa.Table.from_pylist(rows, schema=WRITTEN_SCHEMA), path)


# Libraries whose versions can change the bytes of a rebuild (parquet writer, embedding numerics).
_BYTE_LIBRARIES = ("pyarrow", "numpy", "torch", "transformers")


def freeze(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], out_dir: Path) -> Path:
    """Write tables, rewrite log, card and manifest into ``out_dir``; return the manifest path."""
    files: dict[str, str] = {}
    for name, frame in result.frames.items():
        write_variant_table(frame, out_dir / "data" / f"{name}.parquet")
        files[f"data/{name}.parquet"] = sha256_file(out_dir / "data" / f"{name}.parquet")
    if result.attempts or spec.cells is None:
        llm.write_log(log_path(out_dir), result.attempts)
        files[log_path(out_dir).name] = sha256_file(log_path(out_dir))
    if spec.cells is not None:
        write_written_table(result.written, out_dir / WRITTEN_FILE)
        files[WRITTEN_FILE] = sha256_file(out_dir / WRITTEN_FILE)
    manifest = manifest_for(spec, result, sources, files)
    (out_dir / "README.md").write_text(card_for(spec, result, sources, manifest))
    manifest = manifest.with_files({"README.md": sha256_file(out_dir / "README.md")})
    write_document(out_dir / MANIFEST, manifest)
    return out_dir / MANIFEST


def manifest_for(
    spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], files: Mapping[str, str]
) -> ManifestDocument:
    """Everything needed to audit or rebuild the set, with no timestamps (a rebuild must match it)."""
    return ManifestDocument.build(
        set_name=spec.set_name,
        version=spec.version,
        builder_version=BUILDER_VERSION,
        seed=spec.seed,
        n_items=spec.n_items,
        llm_items=spec.llm_items,
        libraries={name: importlib.metadata.version(name) for name in _BYTE_LIBRARIES},
        datasets={
            name: ManifestDocument.dataset(
                file=f"data/{name}.parquet",
                rows=len(result.frames[name]),
                items=int(result.frames[name].item_id.nunique()),
                license=sources[name].license,
                source=sources[name].provenance,
            )
            for name in spec.datasets
        },
        families={
            name: {
                "places": list(FAMILIES.get(name).places),
                "strengths": list(FAMILIES.get(name).strengths),
                "kind": "rule" if FAMILIES.get(name).rule else "llm",
                "paper": FAMILIES.get(name).paper,
            }
            for name in FAMILIES
        },
        controls={"baseline": "baseline/none/0", "identity": IDENTITY_VARIANT_ID},
        counts={
            name: {str(k): int(v) for k, v in frame.groupby("family").size().items()}
            for name, frame in result.frames.items()
        },
        similarity={"model": "all-minilm-l6-v2 (mean-pooled, normalised)", "decimals": SIMILARITY_DECIMALS},
        llm={
            "rewriter": result.rewriter,
            "min_similarity": llm.MIN_SIMILARITY,
            "length_tolerance": llm.LENGTH_TOLERANCE,
            "attempts": spec.llm_attempts,
            "families": list(spec.llm_families),
            "accepted": sum(a.accepted for a in result.attempts),
            "dropped": dropped(result.attempts),
            "cells": len({(a.dataset, a.item_id, a.variant_id) for a in result.attempts}),
            "not_attempted": sum(a.reason == llm.BUDGET_REASON for a in result.attempts),
            "items_with_llm_rows": {
                name: int(frame.loc[frame.family.isin(spec.llm_families), "item_id"].nunique())
                for name, frame in result.frames.items()
            },
        },
        written={"file": WRITTEN_FILE, **summary(result.written)} if spec.cells is not None else None,
        not_produced=result.not_produced,
        not_made=result.not_made,
        files=files,
    )
