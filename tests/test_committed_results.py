"""The committed results of the packaged models are recomputable from their stored records alone.

No model is loaded: deltas come from records + activations + the frozen variant set, summaries from
deltas, the leaderboard from summaries — and each must match what is committed.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.axes import deltas_for_results
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR
from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.stats.leaderboard import load_leaderboard
from benchmark.variants import load_variant_set

ALL_RESULTS = sorted(
    p.parent for p in SUBMISSIONS_DIR.glob(f"*/results/{DEFAULT_SET}/{BOARD_SET_VERSION}/run.json")
)
API_RESULTS = [p for p in ALL_RESULTS if json.loads((p / "run.json").read_text())["model"]["source"] == "api"]
"""results of models behind an endpoint: their own table, never the open board."""
RESULTS = [p for p in ALL_RESULTS if p not in API_RESULTS]


def test_the_default_submissions_have_committed_evidence_results() -> None:
    """`make all` proves (the Makefile's ALL_MODELS) exactly the board's complete models, each a
    committed result on the board's version, made with the evidence profile's 16 items per dataset."""
    import json
    import re

    makefile = (SUBMISSIONS_DIR.parent / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^ALL_MODELS \?= (.+)$", makefile, flags=re.MULTILINE)
    assert found is not None
    defaults = set(found.group(1).split())
    assert len(defaults) >= 3 and defaults <= {p.parts[-4] for p in RESULTS}
    board = load_leaderboard(LEADERBOARD_DIR / "leaderboard.json")
    assert defaults == {m["slug"] for m in board.complete}, "the Makefile's ALL_MODELS is not the board"
    for folder in RESULTS:
        profile = json.loads((folder / "run.json").read_text(encoding="utf-8"))["profile"]
        assert (profile["name"], profile["items_per_dataset"]) == ("evidence", 16)


SAMPLED_ITEMS = 4
"""items per dataset whose deltas `make check` recomputes; `make recompute` (SAGO_RECOMPUTE_ALL=1) does
every item. A sample keeps the check's time flat as models join the board."""


def sampled_items(slug: str) -> Callable[[str, Sequence[str]], list[str]]:
    """A seeded choice of SAMPLED_ITEMS items per dataset, different for every model and dataset, or
    every item under SAGO_RECOMPUTE_ALL=1."""

    def pick(dataset: str, item_ids: Sequence[str]) -> list[str]:
        if os.environ.get("SAGO_RECOMPUTE_ALL") == "1" or len(item_ids) <= SAMPLED_ITEMS:
            return list(item_ids)
        rng = np.random.default_rng(zlib.crc32(f"{slug}/{dataset}".encode()))
        return sorted(rng.choice(sorted(item_ids), size=SAMPLED_ITEMS, replace=False).tolist())

    return pick


def test_the_sample_differs_between_models_and_covers_every_item_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = [str(i) for i in range(16)]
    a, b = sampled_items("m1")("gsm8k", ids), sampled_items("m2")("gsm8k", ids)
    assert len(a) == len(set(a)) == SAMPLED_ITEMS and set(a) <= set(ids) and a != b
    assert a == sampled_items("m1")("gsm8k", ids)  # seeded: the same items on every machine
    monkeypatch.setenv("SAGO_RECOMPUTE_ALL", "1")
    assert sampled_items("m1")("gsm8k", ids) == ids


@pytest.mark.slow
@pytest.mark.parametrize("folder", RESULTS, ids=lambda p: p.parts[-4])
def test_deltas_recompute_from_records(folder: Path) -> None:
    slug = folder.parts[-4]
    frames = load_variant_set(DEFAULT_SET, BOARD_SET_VERSION).frames()
    pick = sampled_items(slug)
    fresh = deltas_for_results(folder, frames, model=slug, items=pick)
    committed = pd.read_parquet(folder / "deltas.parquet")
    by_dataset = committed.groupby("dataset")["item_id"]
    chosen = {(d, i) for d, ids in by_dataset for i in pick(str(d), sorted(ids.unique()))}
    keep = [(d, i) in chosen for d, i in zip(committed["dataset"], committed["item_id"], strict=True)]
    committed = committed[keep]
    assert len(fresh) == len(committed) > 0
    # Same machine type and library pins: only last-bit float noise in MiniLM may differ.
    pd.testing.assert_frame_equal(
        fresh.reset_index(drop=True),
        committed.reset_index(drop=True),
        check_exact=False,
        rtol=1e-4,
        atol=1e-5,
    )


def test_summaries_and_leaderboard_rebuild_byte_identically(tmp_path: Path) -> None:
    root = tmp_path / "submissions"
    shutil.copytree(SUBMISSIONS_DIR, root)
    for deltas in root.glob("*/results/*/*/deltas.parquet"):
        os.utime(deltas)  # newer than the records: reuse the committed deltas, do not recompute
        (deltas.parent / "summary.json").unlink()
    out = tmp_path / "leaderboard.json"
    run_analysis(AnalyzeRequest(DEFAULT_SET, BOARD_SET_VERSION, root, out))
    for folder in ALL_RESULTS:
        rebuilt = root / folder.relative_to(SUBMISSIONS_DIR) / "summary.json"
        assert rebuilt.read_bytes() == (folder / "summary.json").read_bytes(), folder.parts[-4]
    # the API table is rebuilt too, and holds exactly the API results (none of them on the board)
    api_table = out.with_name("api_models.json")
    assert api_table.read_bytes() == (LEADERBOARD_DIR / "api_models.json").read_bytes()
    api_slugs = {folder.relative_to(SUBMISSIONS_DIR).parts[0] for folder in API_RESULTS}
    assert {r["model"] for r in json.loads(api_table.read_text())["rows"]} == api_slugs
    committed = json.loads((LEADERBOARD_DIR / "leaderboard.json").read_text())
    fresh = json.loads(out.read_text())
    for doc in (committed, fresh):  # summary paths name the folder they were read from
        for model in doc["models"]:
            model.pop("summary", None)
    assert fresh == committed
    # every submission with committed results is complete; the others (no results yet) are pending
    with_results = {folder.relative_to(SUBMISSIONS_DIR).parts[0] for folder in RESULTS}
    assert {m["slug"] for m in fresh["models"] if m["status"] == "complete"} == with_results
    assert {m["status"] for m in fresh["models"] if m["slug"] not in with_results} <= {"pending"}
    assert not api_slugs & {m["slug"] for m in fresh["models"]}


def test_the_readme_states_the_api_results_as_committed() -> None:
    """The README's bullet on the API path's reference result quotes its run.json."""
    readme = (SUBMISSIONS_DIR.parent / "README.md").read_text(encoding="utf-8")
    for folder in API_RESULTS:
        run = json.loads((folder / "run.json").read_text())
        replies = run["model"]["requests"]["replies"]
        items = run["profile"]["items_per_dataset"] * len(run["counts"])
        assert f"`{folder.parts[-4]}` (v2, `{run['profile']['name']}` profile" in " ".join(readme.split())
        assert f"{items} in all, {replies:,} replies" in " ".join(readme.split())
