"""Slow checks on real artefacts: the packaged MiniLM, the pinned archives, and the committed set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.sources import require_source

from benchmark.packaged import BIGBENCH
from benchmark.provenance import sha256_file
from benchmark.schema import VARIANT_COLUMNS
from benchmark.variants.similarity import SIMILARITY_TOLERANCE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    from benchmark.variants.similarity import MiniLM

    return MiniLM()


def test_minilm_scores_meaning_not_surface(minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from benchmark.variants.similarity import MiniLM, similarities

    base = "Who wrote the novel Pride and Prejudice?"
    scores = similarities(
        minilm,
        [
            (base, "who   WROTE the novel pride and prejudice?"),
            (base, "Which author wrote Pride and Prejudice?"),
            (base, "How many moons does Jupiter have?"),
        ],
    )
    assert scores[0] == 1.0  # uncased, whitespace-blind: the same token ids
    assert 0.8 < scores[1] < 1.0 and scores[2] < 0.3
    cached = MiniLM(tmp_path / "vectors.sqlite")
    first = cached.embed([base, "How many moons?"])
    again = MiniLM(tmp_path / "vectors.sqlite").embed(["How many moons?", base])
    assert np.array_equal(first[::-1], again) and np.array_equal(
        first, minilm.embed([base, "How many moons?"])
    )


def test_real_subset_rebuilds_byte_identically(minilm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    require_source(BIGBENCH)
    from benchmark.variants.build import BuildSpec
    from benchmark.variants.release import build_release
    from benchmark.variants.sources import SAGO_V1

    spec = BuildSpec(
        "sago-v1", "subset", ("natural_questions", "misconceptions"), n_items=2, llm_items=0, llm_families=()
    )
    hashes = []
    for root in (tmp_path / "a", tmp_path / "b"):
        outcome = build_release(spec, SAGO_V1.sources, minilm, root=root, progress=False)
        hashes.append({p.name: sha256_file(p) for p in sorted(outcome.path.rglob("*")) if p.is_file()})
    assert hashes[0] == hashes[1] and len(hashes[0]) == 5


def test_committed_set_is_intact_and_follows_the_contract() -> None:
    from benchmark.variants import load_variant_set

    variant_set = load_variant_set()
    assert variant_set.datasets == (
        "natural_questions",
        "trivia_qa",
        "jeopardy",
        "strategyqa",
        "misconceptions",
        "gsm8k",
    )
    for frame in variant_set.frames().values():
        assert tuple(frame.columns) == VARIANT_COLUMNS and frame.item_id.nunique() == 64
        assert (
            frame.groupby("item_id").variant_id.apply(
                lambda v: {"baseline/none/0", "identity/global/1"} <= set(v)
            )
        ).all()
        llm_rows = frame[frame.family.isin(["length", "form"])]
        assert (llm_rows.item_rank < 16).all() and llm_rows.rewriter.str.startswith("llm:").all()
        assert frame.similarity.between(-1, 1).all() and not frame.similarity.isna().any()
        assert (frame.loc[frame.family.isin(["baseline", "identity"]), "similarity"] == 1.0).all()


def test_committed_v2_length_and_form_rows_rebuild_from_the_written_cells(minilm) -> None:  # type: ignore[no-untyped-def]
    """Two datasets of the frozen v2, rebuilt from the pinned sources and the committed cells file, give
    the committed tables row for row, every column exactly but `similarity`, which may move by one rounding
    step on another CPU (on the freezing machine the full rebuild is byte-identical); every accepted cell
    passes the exact checks again and carries a blind reading."""
    require_source(BIGBENCH)
    import pandas as pd

    from benchmark.paths import VARIANTS_DIR
    from benchmark.variants import cells as written
    from benchmark.variants.build import BuildSpec, build_set
    from benchmark.variants.frozen import load_variant_set
    from benchmark.variants.sources import SAGO_V1

    cells_file = VARIANTS_DIR / "rewrites" / "sago-v1-v2.cells.jsonl"
    chosen = ("natural_questions", "strategyqa")
    spec = BuildSpec("sago-v1", "v2", chosen, n_items=64, llm_items=16, cells=cells_file)
    result = build_set(spec, {n: SAGO_V1.sources[n] for n in chosen}, minilm, progress=False)
    frozen = load_variant_set("sago-v1", "v2")
    for name in chosen:
        rebuilt, committed = result.frames[name], frozen.frame(name)
        exact = [c for c in committed.columns if c != "similarity"]
        pd.testing.assert_frame_equal(rebuilt[exact], committed[exact], check_dtype=False)
        # MiniLM's last float bits move with the CPU's vector width, threads and load, so a cosine that
        # sits on a rounding boundary can land one step (1e-4) either side (docs/VARIANTS.md, "Rebuilds").
        steps = (rebuilt.similarity - committed.similarity).abs()
        assert (steps <= SIMILARITY_TOLERANCE).all(), steps.max()
    made = [c for c in result.written if c.status() == "made"]
    assert made and all(any(r.role == "blind" and r.accept for r in c.readings) for c in made)
    counts = {v: sum(c.variant_id == v for c in made) for v in written.CELL_IDS}
    assert all(n >= 12 for n in counts.values()), counts
