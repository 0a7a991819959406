"""Every count the board's sentences state, recomputed from the committed files without the code that
wrote them: the claims in leaderboard.json (the README block and the site quote them) must say what the
tables under them hold, and the accuracy and truncation figures must be the records' own."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOARD = ROOT / "leaderboard" / "leaderboard.json"
ALPHA = 0.05


@pytest.fixture(scope="module")
def board() -> dict:  # type: ignore[type-arg]
    return json.loads(BOARD.read_text())


def claim(board: dict, key: str) -> str:  # type: ignore[type-arg]
    return " ".join(next(c["text"] for c in board["claims"] if c["id"] == key).split())


def test_the_reversal_sentence_leads_with_the_count_and_claims_none_that_is_not_significant(
    board: dict,
) -> None:  # type: ignore[type-arg]
    rows = [r for r in board["reversals"] if r["diff_a"] is not None and r["diff_b"] is not None]
    significant = sum(bool(r["significant"]) for r in rows)
    best = min(r["p_holm"] for r in rows if r["p_holm"] is not None)
    text = claim(board, "reversals")
    assert text.startswith(f"{significant} of the {len(rows)} observed flips")
    # every candidate counted: headline measure × model pair × dataset pair, testable or not
    n_models = sum(m["status"] == "complete" for m in board["models"])
    candidates = len(board["headline_measures"]) * (n_models * (n_models - 1) // 2) * 15
    assert rows[0]["candidates"] == candidates
    assert f"Holm over the {rows[0]['family_size']} testable of {candidates} candidates" in text
    if candidates > rows[0]["family_size"]:
        assert f"{candidates - rows[0]['family_size']} cannot reach α because tied items" in text
    if significant == 0:
        assert f"smallest corrected p {best:.2g}" in text
        assert "no reversal of two models' order is claimed" in text and "largest" not in text
    else:  # every reversal stated as a fact names its corrected p; the rest are called possible noise
        claimed = sorted(r["p_holm"] for r in rows if r["significant"])[:3]
        assert all(f"(corrected p {p:.2g})" in text for p in claimed)
        assert f"The other {len(rows) - significant} observed flip" in text and "may be noise" in text


def _grid_statuses(board: dict) -> list[str]:  # type: ignore[type-arg]
    """The status of each dataset × axis cell on its headline measure, from the tables."""
    axis_of = {m["name"]: m["axis"] for m in board["measures"]}
    statuses = []
    for dataset in board["datasets"]:
        for measure in board["headline_measures"]:
            cells = [c for c in board["cells"] if c["dataset"] == dataset and c["measure"] == measure]
            best = min(cells, key=lambda c: (c["sgs"], c["model"]))["model"]
            pairs = [p for p in board["pairwise"] if p["dataset"] == dataset and p["measure"] == measure]
            mine = [p for p in pairs if best in (p["model_a"], p["model_b"])]

            def favours(p: dict, slug: str) -> bool:  # type: ignore[type-arg]
                steadier = p["model_a"] if p["diff"] < 0 else p["model_b"]
                return p["verdict"] == "significant" and steadier == slug

            if all(favours(p, best) for p in mine):
                statuses.append(f"steadier:{best}:{axis_of[measure]}")
            elif any(p["verdict"] == "significant" for p in pairs):
                statuses.append("no single")
            else:
                statuses.append("no difference")
    return statuses


def test_the_grid_sentence_counts_each_kind_of_cell(board: dict) -> None:  # type: ignore[type-arg]
    statuses = _grid_statuses(board)
    steadier = [s for s in statuses if s.startswith("steadier")]
    text = claim(board, "grid")
    assert f"in {len(steadier)} of the {len(statuses)} dataset × axis cells" in text
    assert f"{statuses.count('no difference')} show no significant difference between any pair" in text
    assert f"{statuses.count('no single')} have no single steadiest model" in text
    assert "17 show no significant difference" not in text


def test_the_independence_sentence_counts_within_dataset_correlations(board: dict) -> None:  # type: ignore[type-arg]
    paper = [m["name"] for m in board["measures"] if m.get("paper")]
    combined = {
        (r["measure_a"], r["measure_b"]): r
        for r in board["independence"]
        if r["scope"] == "combined" and r["method"] == "fisher-z within dataset"
    }
    pairs = [combined[(a, b)] for a, b in itertools.combinations(paper, 2) if (a, b) in combined]
    assert len(pairs) == 15
    below = sum(r["p"] < ALPHA for r in pairs)
    text = claim(board, "independence")
    assert "within each model and dataset" in text
    assert f"{below} of {len(pairs)} pairs have p < {ALPHA}" in text


def test_accuracy_and_truncation_are_the_records_own(board: dict) -> None:  # type: ignore[type-arg]
    """The trust box's figures: baseline accuracy from the committed deltas' ``correct`` (the fixed grader),
    responses cut at the cap from the records' ``finished``."""
    for model in (m for m in board["models"] if m["status"] == "complete"):
        folder = ROOT / "submissions" / model["slug"] / "results" / board["set"] / board["version"]
        deltas = pd.read_parquet(folder / "deltas.parquet")
        base = deltas[deltas["variant_id"] == "baseline/none/0"]
        row = next(r for r in board["accuracy"] if r["model"] == model["slug"] and r["dataset"] == "all")
        assert (row["n_items"], round(row["accuracy"], 6)) == (len(base), round(base["correct"].mean(), 6))
        records = pd.concat(pd.read_parquet(p) for p in sorted((folder / "records").glob("*.parquet")))
        cut = next(t for t in model["run"]["truncated"] if t["dataset"] == "all")
        assert (cut["cut"], cut["total"]) == (int((~records["finished"]).sum()), len(records))


def test_the_most_accurate_model_after_the_grader_fix(board: dict) -> None:  # type: ignore[type-arg]
    """Issue 36's recount: with "False. …" verdicts, echoed questions and offered options graded right,
    SmolLM2 answers the most baseline questions of the three small models (16 of 96), then Qwen2.5-Coder-0.5B
    (13), Gemma (9); the fourth, Qwen2.5-Coder-1.5B, answers 25."""
    pooled = {
        r["model"]: round(r["accuracy"] * r["n_items"]) for r in board["accuracy"] if r["dataset"] == "all"
    }
    assert pooled == {
        "google__gemma-3-270m-q4_k_m": 9,
        "huggingfacetb__smollm2-135m-instruct-q4_1": 16,
        "qwen__qwen2.5-coder-0.5b-instruct-q4_k_m": 13,
        "qwen__qwen2.5-coder-1.5b-instruct-q4_k_m": 25,
    }


def test_model_sizes_count_unique_parameters() -> None:
    """Tied embeddings count once: the Qwen2.5-Coder uploads store the output layer as a copy of the input
    embedding (vocabulary × hidden), which the loaded count includes and the unique count does not."""
    import yaml

    sizes = {
        p.parent.name: yaml.safe_load(p.read_text())["parameters"]
        for p in (ROOT / "submissions").glob("*/submission.yaml")
    }
    assert sizes["qwen__qwen2.5-coder-0.5b-instruct-q4_k_m"] == 630_167_424 - 151_936 * 896
    assert sizes["qwen__qwen2.5-coder-1.5b-instruct-q4_k_m"] == 1_777_088_000 - 151_936 * 1536
    notes = (
        ROOT / "submissions" / "qwen__qwen2.5-coder-0.5b-instruct-q4_k_m" / "submission.yaml"
    ).read_text()
    assert not re.search(r"no results yet", notes, re.IGNORECASE)


def test_the_kept_v1_board_says_it_is_superseded_and_the_changelog_says_what_v2_changed() -> None:
    site = ROOT / "leaderboard" / "site"
    old = (site / "versions" / "v1" / "index.html").read_text()
    assert "Superseded board." in old and 'href="../../index.html">sago-v1/v2</a>' in old
    assert "Superseded board." not in (site / "index.html").read_text()
    changelog = " ".join((site / "changelog.html").read_text().split())
    assert "What it changed: supersedes v1" in changelog
    page = (site / "index.html").read_text()
    assert '<link rel="canonical" href="https://sago-bench.github.io/sago-bench/index.html">' in page
    assert (
        '<meta property="og:image" content="https://sago-bench.github.io/sago-bench/static/og-card.png">'
        in page
    )
    assert (site / "static" / "og-card.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_response_cells_are_labelled_cut_exactly_where_the_records_are_mostly_cut(board: dict) -> None:  # type: ignore[type-arg]
    """docs/METHOD.md §6.1: a generation cell is "cut" when half or more of its responses stopped at the
    cap (counted here from the records); activation cells never are."""
    for model in (m for m in board["models"] if m["status"] == "complete"):
        folder = ROOT / "submissions" / model["slug"] / "results" / board["set"] / board["version"]
        for path in sorted((folder / "records").glob("*.parquet")):
            finished = pd.read_parquet(path, columns=["finished"])["finished"]
            mostly_cut = (~finished).sum() >= len(finished) / 2
            cells = {
                c["measure"]: c["validity"]
                for c in board["cells"]
                if c["model"] == model["slug"] and c["dataset"] == path.stem
            }
            assert ("cut" in cells["bertscore"]) == bool(mostly_cut), (model["slug"], path.stem)
            assert "cut" not in cells["act_cos_last"]


def test_the_gsm8k_generation_claim_is_labelled_cut(board: dict) -> None:  # type: ignore[type-arg]
    """The audit's example: 783 of 784 gsm8k responses of Qwen-1.5B are cut, so its "steadier in
    generation (gsm8k)" compares openings of worked solutions and must say so."""
    texts = [c["text"] for c in board["claims"] if c["id"].startswith("grid-")]
    assert not any(re.search(r"generation on [^.]*gsm8k(?! \[cut)", t) for t in texts)
    assert any("gsm8k [cut" in t for t in texts)
