"""The manifest and the Hugging Face dataset card of a built set, and :func:`freeze`, which writes both."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from benchmark.provenance import sha256_file
from benchmark.results import write_json
from benchmark.schema import VARIANT_SCHEMA_VERSION
from benchmark.variants import llm
from benchmark.variants.build import RETRIES, BuildResult, BuildSpec, dropped, log_path
from benchmark.variants.families import BUILDER_VERSION, FAMILIES, IDENTITY_VARIANT_ID, keys_of
from benchmark.variants.freeze import MANIFEST, write_variant_table
from benchmark.variants.similarity import SIMILARITY_DECIMALS
from benchmark.variants.sources import NEAR_DUPLICATE, Source

# Libraries whose versions can change the bytes of a rebuild (parquet writer, embedding numerics).
_BYTE_LIBRARIES = ("pyarrow", "numpy", "torch", "transformers")


def freeze(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], out_dir: Path) -> Path:
    """Write tables, rewrite log, card and manifest into ``out_dir``; return the manifest path."""
    files: dict[str, str] = {}
    for name, frame in result.frames.items():
        write_variant_table(frame, out_dir / "data" / f"{name}.parquet")
        files[f"data/{name}.parquet"] = sha256_file(out_dir / "data" / f"{name}.parquet")
    llm.write_log(log_path(out_dir), result.attempts)
    files[log_path(out_dir).name] = sha256_file(log_path(out_dir))
    manifest = manifest_for(spec, result, sources, files)
    (out_dir / "README.md").write_text(card_for(spec, result, sources, manifest))
    manifest["files"]["README.md"] = sha256_file(out_dir / "README.md")
    write_json(out_dir / MANIFEST, manifest)
    return out_dir / MANIFEST


def _versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in _BYTE_LIBRARIES}


def manifest_for(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source],
                 files: dict[str, str]) -> dict[str, Any]:
    """Everything needed to audit or rebuild the set, with no timestamps (a rebuild must match it)."""
    counts = {name: {str(k): int(v) for k, v in frame.groupby("family").size().items()}
              for name, frame in result.frames.items()}
    return {
        "schema_version": VARIANT_SCHEMA_VERSION, "set": spec.set_name, "version": spec.version,
        "builder_version": BUILDER_VERSION, "seed": spec.seed, "n_items": spec.n_items,
        "llm_items": spec.llm_items, "libraries": _versions(),
        "dataset_order": list(spec.datasets),
        "datasets": {name: {"file": f"data/{name}.parquet", "source": dict(sources[name].provenance),
                            "license": sources[name].license, "items": int(result.frames[name].item_id.nunique()),
                            "rows": len(result.frames[name])} for name in spec.datasets},
        "families": {name: {"places": list(FAMILIES.get(name).places),
                            "strengths": list(FAMILIES.get(name).strengths),
                            "kind": "rule" if FAMILIES.get(name).rule else "llm",
                            "paper": FAMILIES.get(name).paper} for name in FAMILIES},
        "controls": {"baseline": "baseline/none/0", "identity": IDENTITY_VARIANT_ID},
        "counts": counts,
        "similarity": {"model": "all-minilm-l6-v2 (mean-pooled, normalised)", "decimals": SIMILARITY_DECIMALS},
        "llm": {"rewriter": result.rewriter, "min_similarity": llm.MIN_SIMILARITY,
                "length_tolerance": llm.LENGTH_TOLERANCE, "attempts": spec.llm_attempts,
                "families": list(spec.llm_families),
                "accepted": sum(a.accepted for a in result.attempts), "dropped": dropped(result.attempts),
                "cells": len({(a.dataset, a.item_id, a.variant_id) for a in result.attempts}),
                "not_attempted": sum(a.reason == llm.BUDGET_REASON for a in result.attempts),
                "items_with_llm_rows": {name: int(frame.loc[frame.family.isin(spec.llm_families), "item_id"].nunique())
                                        for name, frame in result.frames.items()}},
        "not_produced": dict(sorted(result.not_produced.items())),
        "not_made": {name: {family: dict(sorted(why.items())) for family, why in sorted(made.items())}
                     for name, made in sorted(result.not_made.items())},
        "files": dict(sorted(files.items())),
    }


def _size_category(rows: int) -> str:
    return "n<1K" if rows < 1_000 else "1K<n<10K" if rows < 10_000 else "10K<n<100K" if rows < 100_000 else "100K<n<1M"


def expected_cells(spec: BuildSpec, family: str) -> int:
    """Cells of ``family`` the grid asks for in one dataset."""
    cells = len(keys_of(FAMILIES.get(family)))
    if FAMILIES.get(family).rule is None:
        return cells * (spec.llm_items if family in spec.llm_families else 0)
    return cells * spec.n_items


def card_for(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], manifest: dict[str, Any]) -> str:
    """A Hugging Face dataset card (YAML configs, one per dataset plus the rewrite log, then prose)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("benchmark.variants", "templates"),
                             autoescape=False, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["fmt"] = lambda value: f"{value:g}"
    return env.get_template("card.md.j2").render(
        spec=spec, sources=sources, manifest=manifest, builder_version=BUILDER_VERSION,
        identity=IDENTITY_VARIANT_ID, near_duplicate=NEAR_DUPLICATE, retries=RETRIES,
        size_category=_size_category(sum(d["rows"] for d in manifest["datasets"].values())),
        produced=manifest["counts"], produced_families=[f for f in FAMILIES],
        expected={name: {f: expected_cells(spec, f) for f in FAMILIES} for name in spec.datasets},
        not_produced=manifest["not_produced"], rewriter=result.rewriter, attempts=spec.llm_attempts,
        min_similarity=llm.MIN_SIMILARITY, tolerance=llm.LENGTH_TOLERANCE, changes=CHANGES.get(spec.version, ()))


CHANGES: dict[str, tuple[str, ...]] = {
    "v2": (
        "LLM families (length at ×0.25, 0.5, 1.5, 2, 3 and form) for the first 16 items of every dataset, "
        "made by Qwen2.5-Coder-1.5B-Instruct with few-shot requests, several candidates per cell and stricter "
        "validation (numbers, names and quotations kept; no meta text; calibrated similarity floor).",
        "Rule edits land only in the item's own text, never in the builder's wrapper, and never inside "
        "quotations, names, gold answers or the word a spelling question tests; fillers stay away from "
        "numbers; typos never make dictionary words and their strength is the number actually made; the "
        "irrelevant sentences carry no numbers.",
        "No two variants of an item share a prompt text (the identity control aside); cells that would "
        "collapse onto another are retried, then left out and counted in `manifest.json` (`not_made`).",
        "Items: no statement and its negation (misconceptions), no MiniLM near-duplicates; TriviaQA answers "
        "are the canonical answer then normalised aliases; CSV quoting and lost apostrophes repaired.",
    ),
}
