"""A small synthetic variant set with the real columns, for tests of the harness.

Prompts are built from the tiny tokenizer's corpus vocabulary so the tiny Llama sees familiar tokens;
the families and strengths mirror the real set's shape (baseline, identity, graded rule families,
signed politeness), at a fraction of its size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark.provenance import sha256_bytes, sha256_file
from benchmark.results import write_json
from benchmark.schema import BASELINE_VARIANT_ID, VARIANT_COLUMNS, VARIANT_SCHEMA_VERSION
from benchmark.variants.freeze import write_variant_table
from benchmark.variants.frozen import VariantSet, load_variant_set

_QUESTIONS = (
    "What is the capital of France?",
    "How many legs does a spider have?",
    "Who wrote Hamlet?",
    "Is it true that bats are blind?",
    "Natalia sold clips to 48 of her friends in April. How many clips did she sell?",
    "What is the capital of France and how many legs does a spider have?",
    "Who wrote Hamlet, and is it true that bats are blind?",
    "Please tell me who wrote Hamlet.",
)
_RULES = {"spacing": (1.0, 5.0, 20.0), "punctuation": (1.0, 5.0, 20.0)}
_POLITE = {
    2.0: "Please answer. ",
    6.0: "Please answer, thank you very much! ",
    10.0: "Please answer the question briefly. Thank you very much! ",
    -2.0: "Answer now. ",
    -6.0: "Just tell me. ",
    -10.0: "Answer now. I do not have all day; just tell me. ",
}


@dataclass(frozen=True)
class FramesVariantSet:
    """A variant set held in memory (tests, benchmarks); ``sha256`` is whatever the caller says."""

    sha256: str
    """stands in for the manifest hash."""
    frames: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """dataset name -> frame with ``schema.VARIANT_COLUMNS``."""

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(self.frames)

    def frame(self, dataset: str) -> pd.DataFrame:
        return self.frames[dataset]


def _variant_rows(question: str) -> list[tuple[str, str, float, str]]:
    """(family, place, strength, prompt) of every variant of one question, baseline first."""
    rows = [("baseline", "none", 0.0, question), ("identity", "global", 1.0, question)]
    for family, levels in _RULES.items():
        mark = " " if family == "spacing" else "!"
        for place in ("prefix", "suffix"):
            for level in levels:
                pad = mark * int(level)
                rows.append((family, place, level, pad + question if place == "prefix" else question + pad))
    rows += [("politeness", "prefix", level, text + question) for level, text in _POLITE.items()]
    return rows


def toy_frame(dataset: str, n_items: int = 4) -> pd.DataFrame:
    """``n_items`` items (max 8) with about 20 variants each, in the set's sort order."""
    records = []
    for rank, question in enumerate(_QUESTIONS[:n_items]):
        for family, place, strength, prompt in _variant_rows(f"{question}"):
            variant_id = BASELINE_VARIANT_ID if family == "baseline" else f"{family}/{place}/{strength:g}"
            records.append(
                {
                    "dataset": dataset,
                    "item_id": f"{dataset}-{rank:03d}",
                    "variant_id": variant_id,
                    "family": family,
                    "place": place,
                    "strength": strength,
                    "prompt": prompt,
                    "similarity": 1.0,
                    "rewriter": "rule:toy@0",
                    "answers": [],
                    "item_rank": rank,
                }
            )
    frame = pd.DataFrame(records, columns=list(VARIANT_COLUMNS))
    return frame.sort_values(["item_rank", "variant_id"], kind="stable").reset_index(drop=True)


def toy_variant_set(datasets: tuple[str, ...] = ("alpha", "beta"), n_items: int = 4) -> FramesVariantSet:
    """A :class:`FramesVariantSet` of :func:`toy_frame` datasets, hashed from its content."""
    frames = {name: toy_frame(name, n_items) for name in datasets}
    digest = sha256_bytes("".join(f.to_json() for f in frames.values()).encode())
    return FramesVariantSet(digest, frames)


class JaccardScorer:
    """Word-set overlap: a fast, deterministic stand-in for MiniLM (BERTScore and embedding cosine)."""

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        def words(t: str) -> set[str]:
            return set(t.lower().split())

        return np.array(
            [
                len(words(c) & words(r)) / len(words(c) | words(r))
                for c, r in zip(candidates, references, strict=False)
            ]
        )


def freeze_toy_set(root: Path) -> VariantSet:
    """Write the harness's toy set to disk as ``sago-v1/v1`` under ``root``, the way a released set is laid
    out, and load it back (verified against its manifest)."""
    toy = toy_variant_set(("alpha", "beta"), n_items=4)
    folder = root / "sago-v1" / "v1"
    files = {}
    for dataset in toy.datasets:
        write_variant_table(toy.frame(dataset), folder / "data" / f"{dataset}.parquet")
        files[f"data/{dataset}.parquet"] = sha256_file(folder / "data" / f"{dataset}.parquet")
    frames = {d: toy.frame(d) for d in toy.datasets}
    write_json(
        folder / "manifest.json",
        {
            "schema_version": VARIANT_SCHEMA_VERSION,
            "set": "sago-v1",
            "version": "v1",
            "files": files,
            "dataset_order": list(toy.datasets),
            "datasets": {d: {"file": f"data/{d}.parquet", "rows": len(f)} for d, f in frames.items()},
            "counts": {
                d: {str(k): int(v) for k, v in f.groupby("family").size().items()} for d, f in frames.items()
            },
        },
    )
    return load_variant_set("sago-v1", "v1", root)


def submit_hub_model(submissions: Path, slug: str, index: int) -> None:
    """``submissions/<slug>/submission.yaml`` naming a Hub model pinned to a revision of ``index``'s digit."""
    import yaml

    (submissions / slug).mkdir(parents=True)
    spec = {
        "name": slug,
        "model": {"kind": "hub", "id": slug.replace("__", "/"), "revision": f"{index}" * 40},
        "license": "Apache-2.0",
        "parameters": 10,
        "contact": "tests",
    }
    (submissions / slug / "submission.yaml").write_text(yaml.safe_dump(spec))


def fake_run(
    submissions: Path, slug: str, variants: VariantSet, out: Path, *, hidden: int, profile: str
) -> None:
    """A finished ``profile`` run of the stand-in model (``FakeBackend``) in ``out``, its run.json naming
    the submission's model as `sago evaluate` writes it."""
    from benchmark.harness.collect import collect
    from benchmark.harness.finalize import finalize
    from benchmark.models.fake import FakeBackend
    from benchmark.profiles import get_profile
    from benchmark.submissions import load_submission

    collect(FakeBackend(hidden_size=hidden), variants, out, profile=get_profile(profile), progress=False)
    model = load_submission(slug, submissions).model
    extra = {
        "submission": slug,
        "submission_model": model.model_dump(),
        "model": {"source": "hub", "revision": getattr(model, "revision", None)},
    }
    finalize(out, extra=extra)
