"""The manifest and the Hugging Face dataset card of a built set, and :func:`freeze`, which writes both."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmark.provenance import sha256_file
from benchmark.schema import VARIANT_COLUMNS, VARIANT_SCHEMA_VERSION
from benchmark.variants import llm
from benchmark.variants.build import BuildResult, BuildSpec, dropped, log_path
from benchmark.variants.families import BUILDER_VERSION, FAMILIES, IDENTITY_VARIANT_ID
from benchmark.variants.freeze import MANIFEST, write_json, write_parquet
from benchmark.variants.similarity import SIMILARITY_DECIMALS
from benchmark.variants.sources import Source

# Libraries whose versions can change the bytes of a rebuild (parquet writer, embedding numerics).
_BYTE_LIBRARIES = ("pyarrow", "numpy", "torch", "transformers")


def freeze(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], out_dir: Path) -> Path:
    """Write tables, rewrite log, card and manifest into ``out_dir``; return the manifest path."""
    files: dict[str, str] = {}
    for name, frame in result.frames.items():
        write_parquet(frame, out_dir / "data" / f"{name}.parquet")
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
                "length_tolerance": llm.LENGTH_TOLERANCE, "attempts": llm.ATTEMPTS,
                "families": list(spec.llm_families),
                "accepted": sum(a.accepted for a in result.attempts), "dropped": dropped(result.attempts),
                "not_attempted": sum(a.reason == llm.BUDGET_REASON for a in result.attempts),
                "items_with_llm_rows": {name: int(frame.loc[frame.family.isin(spec.llm_families), "item_id"].nunique())
                                        for name, frame in result.frames.items()}},
        "not_produced": dict(sorted(result.not_produced.items())),
        "files": dict(sorted(files.items())),
    }


def card_for(spec: BuildSpec, result: BuildResult, sources: Mapping[str, Source], manifest: dict[str, Any]) -> str:
    """A Hugging Face dataset card: YAML ``configs`` (one per dataset) then prose provenance."""
    configs = "".join(f"- config_name: {name}\n  data_files:\n  - split: test\n    path: data/{name}.parquet\n"
                      for name in spec.datasets)
    licences = "".join(f"| {name} | {sources[name].provenance.get('archive', sources[name].provenance.get('repo', ''))} "
                       f"| `{sources[name].provenance.get('member', sources[name].provenance.get('revision', ''))}` "
                       f"| {sources[name].license} | {sources[name].provenance.get('stands_in_for', '')} |\n"
                       for name in spec.datasets)
    rows = "".join(f"| {name} | {m['items']} | {m['rows']} |\n" for name, m in manifest["datasets"].items())
    missing = "".join(f"- `{family}`: {why}\n" for family, why in manifest["not_produced"].items()) or "- none\n"
    families = "".join(f"| {name} | {f['kind']} | {', '.join(f['places'])} | {', '.join(f'{s:g}' for s in f['strengths'])} "
                       f"| {'paper' if f['paper'] else 'ours'} |\n" for name, f in manifest["families"].items())
    return f"""---
license: other
pretty_name: SAGO variant set {spec.set_name} {spec.version}
task_categories:
- text-generation
language:
- en
configs:
{configs}---

# {spec.set_name} {spec.version}: meaning-preserving prompt variants for SAGO

Frozen variant set of sago-bench (builder {BUILDER_VERSION}, seed {spec.seed}). Each dataset has
{spec.n_items} items sampled with the seed; every item has a baseline row (`baseline/none/0`), an identity
control (`{IDENTITY_VARIANT_ID}`, the unmodified prompt, used only for the noise floor) and one row per
(family, place, strength). The first {spec.llm_items} items (`item_rank < {spec.llm_items}`) also carry the
LLM-made families `length` and `form`. Columns: {', '.join(f'`{c}`' for c in VARIANT_COLUMNS)}.

```python
import datasets
ds = datasets.load_dataset("<this repo or folder>", "{spec.datasets[0]}", split="test")
```

## Families

| family | made by | places | strengths | origin |
|---|---|---|---|---|
{families}
A rule-made variant that leaves the prompt unchanged (e.g. no contraction to toggle) is omitted. The
`similarity` column is the MiniLM cosine to the baseline; MiniLM is uncased and ignores whitespace, so
spacing and case variants score 1.0 by construction.

## Sources, licences and provenance

| dataset | archive / repo | member / revision | licence | stands in for |
|---|---|---|---|---|
{licences}
Each archive is pinned by sha256 in `manifest.json`; the variants inherit the licence of their source.

## Counts

| dataset | items | rows |
|---|---|---|
{rows}
## LLM families

Rewriter: `{result.rewriter or 'none'}`. Every rewrite was validated (MiniLM cosine to the original
≥ {llm.MIN_SIMILARITY}; word ratio within ×{llm.LENGTH_TOLERANCE} of the target; length keeps a question a
question, form flips question ↔ instruction; no gold answer added). A failed rewrite was retried once
with a differently worded request, then dropped; drops and reasons are listed in `manifest.json`
(`llm.dropped`), and every attempt is in `llm_rewrites.jsonl`, which a rebuild replays.
Accepted: {manifest['llm']['accepted']}; dropped: {len(manifest['llm']['dropped'])}, of which
{manifest['llm']['not_attempted']} attempts were never made because new generation was capped in wall
time (`--llm-budget-s`; items are processed in rank order, so the lowest ranks are covered first).
Items with LLM rows per dataset: {manifest['llm']['items_with_llm_rows']}.

Families not produced:
{missing}
## Integrity

`manifest.json` lists the sha256 of every file; its own sha256 is the variant-set hash recorded in
results. Released versions are never edited: a new version supersedes. Check with `sago variants verify`.
"""
