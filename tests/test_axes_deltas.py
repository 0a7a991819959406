"""End to end: records + activations + variants on disk -> deltas.parquet, values and bytes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.toy import JaccardScorer
from safetensors.numpy import save_file

from benchmark.axes import (
    AxisScorers,
    LexiconPolitenessJudge,
    compute_deltas,
    deltas_for_results,
    read_scorer_backbones,
    write_deltas,
)
from benchmark.axes.measures import all_measures, delta_columns
from benchmark.errors import SagoError
from benchmark.schema import DELTA_ID_COLUMNS, RECORD_COLUMNS, VARIANT_COLUMNS

BASE_Y = "The capital of France is Paris."
# variant_id -> (response, logprob_sum, logprob_mean, entropy_mean)
ITEM_RUNS = {
    "baseline/none/0": (BASE_Y, -10.0, -1.0, 2.0),
    "identity/global/1": (BASE_Y, -10.0, -1.0, 2.0),
    "rerun/none/0": (BASE_Y, -10.5, -1.05, 2.0),
    "letter_case/global/100": ("THE CAPITAL OF FRANCE IS PARIS.", -14.0, -1.4, 2.5),
    "spacing/prefix/5": (BASE_Y, -11.0, -1.1, 2.25),
    "form/global/1": ("Paris.", -12.0, -1.2, 3.0),
    "politeness/prefix/6": (
        "Thank you for asking! The capital of France is Paris. I hope this helps.",
        -9.0,
        -0.9,
        1.5,
    ),
}


def fake_scorers() -> AxisScorers:
    return AxisScorers(JaccardScorer(), JaccardScorer(), LexiconPolitenessJudge(), {"bertscore": "jaccard"})


def _family(variant_id: str) -> tuple[str, str, float]:
    family, place, strength = variant_id.split("/")
    return family, place, float(strength)


def make_records(items: Sequence[str] = ("i1", "i2"), dataset: str = "trivia_qa") -> pd.DataFrame:
    rows = []
    for item in items:
        for variant_id, (response, lp, lpm, ent) in ITEM_RUNS.items():
            family, place, strength = _family(variant_id)
            rows.append(
                {
                    "dataset": dataset,
                    "item_id": item,
                    "variant_id": variant_id,
                    "family": family,
                    "place": place,
                    "strength": strength,
                    "response": response,
                    "response_tokens": len(response.split()),
                    "finished": True,
                    "logprob_sum": lp,
                    "logprob_mean": lpm,
                    "entropy_mean": ent,
                    "baseline_tokens": 7,
                    "prompt_tokens": 20,
                }
            )
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS)).sort_values(["item_id", "variant_id"])


def make_variants(items: Sequence[str] = ("i1", "i2"), dataset: str = "trivia_qa") -> pd.DataFrame:
    gold = {"i1": ["Paris"], "i2": ["London"]}
    rows = [
        {
            "dataset": dataset,
            "item_id": item,
            "variant_id": vid,
            "family": _family(vid)[0],
            "place": _family(vid)[1],
            "strength": _family(vid)[2],
            "prompt": f"What is the capital? ({vid})",
            "similarity": 1.0,
            "rewriter": "rule:test",
            "answers": gold.get(item, []),
            "item_rank": rank,
        }
        for rank, item in enumerate(items)
        for vid in ITEM_RUNS
        if not vid.startswith("rerun")
    ]
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def make_activations(items: Sequence[str] = ("i1", "i2")) -> dict[str, np.ndarray]:
    base = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float16)  # [n_layers + 1, hidden]
    acts = {}
    for item in items:
        for vid in ITEM_RUNS:
            acts[f"{item}|{vid}"] = base.copy()
        acts[f"{item}|spacing/prefix/5"] = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float16)
    return acts


def write_results(root: Path, dataset: str = "trivia_qa") -> Path:
    (root / "records").mkdir(parents=True)
    (root / "activations").mkdir()
    make_records(dataset=dataset).to_parquet(root / "records" / f"{dataset}.parquet", index=False)
    save_file(make_activations(), str(root / "activations" / f"{dataset}.safetensors"))
    return root


def test_compute_deltas_known_values() -> None:
    deltas = compute_deltas(
        make_records(), make_activations(), make_variants(), model="org__m", scorers=fake_scorers()
    )
    assert list(deltas.columns) == list(delta_columns())
    assert len(deltas) == 2 * len(ITEM_RUNS)
    row = deltas[deltas["item_id"] == "i1"].set_index("variant_id")
    delta_cols = [f"delta_{m.name}" for m in all_measures()]
    for control in ("baseline/none/0", "identity/global/1"):
        assert (row.loc[control, delta_cols] == 0.0).all()
    # Activations: spacing's layers have cosines 1, 0, 1/sqrt(2) to the baseline.
    assert row.loc["spacing/prefix/5", "delta_act_cos_last"] == pytest.approx(2**-0.5 - 1, abs=1e-3)
    assert row.loc["spacing/prefix/5", "delta_act_cos_mean"] == pytest.approx((0 + 2**-0.5) / 2 - 1, abs=1e-3)
    # Confidence: plain differences from the baseline row.
    assert row.loc["letter_case/global/100", "delta_logprob"] == pytest.approx(-4.0)
    assert row.loc["letter_case/global/100", "delta_logprob_mean"] == pytest.approx(-0.4)
    assert row.loc["letter_case/global/100", "delta_entropy"] == pytest.approx(0.5)
    assert row.loc["rerun/none/0", "delta_logprob"] == pytest.approx(-0.5)
    # Generation: "Paris." shares 1 of the baseline's 6 lower-cased words (the fake scorer's Jaccard).
    assert row.loc["form/global/1", "delta_bertscore"] == pytest.approx(1 / 6 - 1)
    assert row.loc["form/global/1", "delta_embed_cos"] == pytest.approx(1 / 6 - 1)
    assert row.loc["spacing/prefix/5", "delta_bertscore"] == 0.0  # identical text, no model call
    assert row.loc["spacing/prefix/5", "delta_bleu"] == 0.0
    assert row.loc["form/global/1", "delta_bleu"] < -50
    # Mirroring: shouting and the polite reply mirror; spacing did not; form is unscored.
    assert row.loc["letter_case/global/100", "delta_mirroring"] == 1.0
    assert row.loc["politeness/prefix/6", "delta_mirroring"] == 1.0
    assert row.loc["spacing/prefix/5", "delta_mirroring"] == 0.0
    assert row.loc["form/global/1", "delta_mirroring"] == 0.0
    # Accuracy: item 1's gold is Paris (every response names it); item 2's is London.
    assert (deltas.loc[deltas["item_id"] == "i1", "correct"] == 1.0).all()
    assert (deltas.loc[deltas["item_id"] == "i2", "correct"] == 0.0).all()
    assert (deltas["model"] == "org__m").all() and deltas["strength"].dtype == np.float64


def test_write_deltas_round_trips_and_rewrites_byte_identically(tmp_path: Path) -> None:
    root = write_results(tmp_path / "results")
    frames = {"trivia_qa": make_variants()}
    path = write_deltas(root, frames, model="org__m", scorers=fake_scorers())
    assert path == root / "deltas.parquet"
    first = path.read_bytes()
    table = pd.read_parquet(path)
    assert list(table.columns) == list(delta_columns())
    assert list(table.columns[: len(DELTA_ID_COLUMNS)]) == list(DELTA_ID_COLUMNS)
    expected = compute_deltas(
        make_records(), make_activations(), make_variants(), model="org__m", scorers=fake_scorers()
    )
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert write_deltas(root, frames, model="org__m", scorers=fake_scorers()).read_bytes() == first
    assert read_scorer_backbones(path) == {"bertscore": "jaccard"}


def test_missing_activations_give_nan_activation_deltas_only(tmp_path: Path) -> None:
    root = write_results(tmp_path / "results")
    (root / "activations" / "trivia_qa.safetensors").unlink()
    deltas = deltas_for_results(root, {"trivia_qa": make_variants()}, model="m", scorers=fake_scorers())
    variants = deltas[deltas["variant_id"] != "baseline/none/0"]
    assert variants["delta_act_cos_last"].isna().all() and variants["delta_act_cos_mean"].isna().all()
    assert variants["delta_logprob"].notna().all()


def test_records_without_a_baseline_row_are_refused() -> None:
    records = make_records()
    records = records[~((records["item_id"] == "i2") & (records["variant_id"] == "baseline/none/0"))]
    with pytest.raises(SagoError, match="no baseline row.*i2"):
        compute_deltas(records, {}, make_variants(), model="m", scorers=fake_scorers())


def test_duplicated_record_rows_are_refused() -> None:
    records = make_records()
    records = pd.concat([records, records.iloc[[3]]])
    with pytest.raises(SagoError, match="more than once"):
        compute_deltas(records, {}, make_variants(), model="m", scorers=fake_scorers())


def test_unknown_dataset_and_empty_results_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SagoError, match="no records"):
        deltas_for_results(tmp_path, {}, model="m", scorers=fake_scorers())
    root = write_results(tmp_path / "results")
    with pytest.raises(SagoError, match="trivia_qa"):
        deltas_for_results(root, {"nq_open": make_variants()}, model="m", scorers=fake_scorers())


def test_default_scorers_record_their_backbones() -> None:
    scorers = AxisScorers.default()
    assert scorers.backbones["bertscore"] == "all-MiniLM-L6-v2/L6"
    assert scorers.backbones["embed_cos"] == "all-MiniLM-L6-v2/L6"
    assert scorers.backbones["politeness"] == "CourtesyMarkerJudge"


def test_compute_deltas_with_real_minilm() -> None:
    deltas = compute_deltas(make_records(), make_activations(), make_variants(), model="m")
    row = deltas[deltas["item_id"] == "i1"].set_index("variant_id")
    assert row.loc["identity/global/1", "delta_bertscore"] == 0.0
    assert (
        -1.0
        < row.loc["form/global/1", "delta_bertscore"]
        < row.loc["politeness/prefix/6", "delta_bertscore"]
        < 0
    )
    assert -1.0 < row.loc["form/global/1", "delta_embed_cos"] < 0


def test_backbone_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAGO_BERTSCORE_BACKBONE", "roberta-large")
    scorers = AxisScorers.default()  # nothing is loaded until the first score
    assert scorers.backbones["bertscore"] == "roberta-large/L17"
    assert scorers.backbones["embed_cos"] == "all-MiniLM-L6-v2/L6"
    monkeypatch.setenv("SAGO_BERTSCORE_BACKBONE", "roberta-larg")
    with pytest.raises(SagoError, match="did you mean 'roberta-large'"):
        AxisScorers.default()
