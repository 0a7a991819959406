"""lm-evaluation-harness in and out: the export selects the profile's rows, and an import of the same
responses gives the same response-only numbers as a sago run ("same numbers"), without any model.

The sago run is a real ``benchmark.evaluate`` of the deterministic fake model on two datasets of
sago-v1/v2 (smoke profile); the lm-eval files are written in lm-eval 0.4.13's layout from that run's
responses, with the documents loaded by the exported task's ``custom_dataset`` hook as lm-eval loads them.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers.lmeval import GREEDY, load_task, option, run_readme, task_docs, write_lm_eval_output
from helpers.toy import JaccardScorer

import benchmark
from benchmark import jsonio
from benchmark.axes import AxisScorers, LexiconPolitenessJudge, read_scorer_backbones, write_deltas
from benchmark.axes.measures import all_measures, model_measures
from benchmark.errors import SagoError
from benchmark.lmeval.export import data_source, export_lm_eval
from benchmark.lmeval.ingest import (
    NOT_MEASURED,
    differing_responses,
    import_lm_eval,
    not_measured_map,
    response_only,
)
from benchmark.models.fake import FakeBackend
from benchmark.pipeline.analyze import check_results
from benchmark.profiles import get_profile, select_rows
from benchmark.provenance import sha256_file
from benchmark.results import ResultsFolder
from benchmark.stats.summary import summarize
from benchmark.submissions.validate_results import check_result_folder, known_variant_sets
from benchmark.variants.frozen import VariantSet

REPO = Path(__file__).resolve().parent.parent
DATASETS = ("natural_questions", "trivia_qa")
RESPONSE_MEASURES = tuple(m.name for m in all_measures() if m.name not in model_measures())
LABEL = "fake-model"


def jaccard_scorers() -> AxisScorers:
    """Fast deterministic stand-ins for MiniLM (the same object scores both runs)."""
    return AxisScorers(JaccardScorer(), JaccardScorer(), LexiconPolitenessJudge(), {"bertscore": "jaccard"})


@pytest.fixture(scope="module")
def variant_set() -> VariantSet:
    return benchmark.load_variant_set("sago-v1", "v2")


@pytest.fixture(scope="module")
def sago_run(variant_set: VariantSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sago run of the fake model (records, activations, run.json) and its deltas."""
    out = tmp_path_factory.mktemp("sago") / "results"
    benchmark.evaluate(
        FakeBackend(), variant_set, out, profile="smoke", datasets=list(DATASETS), progress=False
    )
    frames = {d: variant_set.frame(d) for d in DATASETS}
    write_deltas(out, frames, model=LABEL, scorers=jaccard_scorers())
    return out


def records(folder: Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(p) for p in ResultsFolder(folder).record_files()], ignore_index=True)


def responder(sago_folder: Path) -> Callable[[Mapping[str, Any]], str]:
    """The sago run's response to a document (the model lm-eval would have run)."""
    table = records(sago_folder).set_index(["dataset", "item_id", "variant_id"])["response"]
    return lambda doc: str(table[(doc["dataset"], doc["item_id"], doc["variant_id"])])


@pytest.fixture(scope="module")
def tasks_dir(variant_set: VariantSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "tasks"
    export_lm_eval(variant_set, get_profile("smoke"), out, datasets=list(DATASETS))
    return out


@pytest.fixture(scope="module")
def lm_eval_samples(tasks_dir: Path, sago_run: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_lm_eval_output(tasks_dir, tmp_path_factory.mktemp("lm-eval"), responder(sago_run))


@pytest.fixture(scope="module")
def imported(
    lm_eval_samples: list[Path], variant_set: VariantSet, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("imported") / "results"
    import_lm_eval(lm_eval_samples, variant_set, out, name=LABEL, scorers=jaccard_scorers())
    return out


# ---- export ---------------------------------------------------------------------------------------------
def test_export_pins_the_set_and_keeps_the_profiles_rows(tasks_dir: Path, variant_set: VariantSet) -> None:
    group = load_task(tasks_dir / "sago_v1_v2_smoke.yaml")
    assert group["task"] == [f"sago_v1_v2_smoke_{d}" for d in DATASETS]
    for dataset in DATASETS:
        task = load_task(tasks_dir / f"sago_v1_v2_smoke_{dataset}.yaml")
        tag = task["metadata"]["sago"]
        assert (
            tag["variant_set_sha256"]
            == variant_set.sha256
            == (REPO / "README.md")
            .read_text()
            .split("`sago-v1/v2` (the default for building and evaluating): `")[1][:64]
        )
        assert tag["rows"] == len(select_rows(variant_set.frame(dataset), get_profile("smoke")))
        assert task["generation_kwargs"] == GREEDY
        assert task["doc_to_text"] == "prompt" and task["doc_to_target"] == "answers"
        data = tasks_dir / task["dataset_kwargs"]["data_file"]
        assert task["custom_dataset"] == "utils.load_rows" and data.parent == tasks_dir
        assert tag["data_sha256"] == sha256_file(data) == sha256_file(data_source(variant_set, dataset))
        assert task["metric_list"] == [
            {"metric": "accuracy", "aggregation": "mean", "higher_is_better": True}
        ]
        assert task["process_results"] == "utils.process_results"
    text = (tasks_dir / f"sago_v1_v2_smoke_{DATASETS[0]}.yaml").read_text(encoding="utf-8")
    assert "process_results: !function 'utils.process_results'" in text  # lm-eval's tag, as lm-eval reads it


def test_the_exported_metric_is_sagos_accuracy_on_smollm2s_committed_responses(tasks_dir: Path) -> None:
    """lm-eval's exact_match scored 0 of SmolLM2's responses where sago's grader credits some; the exported
    utils.py (standard library only: lm-eval runs it without sago) gives, response by response, the
    `correct` the committed deltas hold."""
    import runpy

    source = (tasks_dir / "utils.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(?:import|from)\s+benchmark", source, re.M)
    process_results = runpy.run_path(str(tasks_dir / "utils.py"))["process_results"]
    result = REPO / "submissions" / "huggingfacetb__smollm2-135m-instruct-q4_1" / "results" / "sago-v1" / "v2"
    keys = ["dataset", "item_id", "variant_id"]
    correct = pd.read_parquet(result / "deltas.parquet").set_index(keys)["correct"]
    variants = benchmark.load_variant_set("sago-v1", "v2")
    scored, credited = 0, 0.0
    for dataset in DATASETS:
        docs = variants.frame(dataset).set_index(["item_id", "variant_id"])
        for row in pd.read_parquet(result / "records" / f"{dataset}.parquet").itertuples(index=False):
            if (row.item_id, row.variant_id) not in docs.index:
                continue  # a rerun control row: not a document of the exported task
            doc = docs.loc[(row.item_id, row.variant_id)]
            got = process_results({"answers": doc["answers"], "prompt": doc["prompt"]}, [row.response])
            assert got == {"accuracy": correct[(dataset, row.item_id, row.variant_id)]}
            scored, credited = scored + 1, credited + got["accuracy"]
    assert scored > 1000 and 0 < credited < scored  # real responses, some right and some wrong


def test_the_exported_folder_moves_with_its_data(
    tasks_dir: Path, variant_set: VariantSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task files name no path outside their folder: copied elsewhere and loaded from another working
    directory (lm-eval on another machine), each task gives exactly the profile's rows."""
    moved = tmp_path / "elsewhere" / "tasks"
    shutil.copytree(tasks_dir, moved)
    monkeypatch.chdir(tmp_path)
    for path in moved.iterdir():
        if path.suffix in (".yaml", ".md"):
            assert str(tasks_dir.parent) not in path.read_text(encoding="utf-8"), path.name
    for dataset in DATASETS:
        docs = task_docs(load_task(moved / f"sago_v1_v2_smoke_{dataset}.yaml"), moved)
        chosen = select_rows(variant_set.frame(dataset), get_profile("smoke"))
        assert [(d["item_id"], d["variant_id"]) for d in docs] == list(
            zip(chosen["item_id"], chosen["variant_id"], strict=True)
        )


def test_the_exported_task_refuses_a_changed_data_file(tasks_dir: Path, tmp_path: Path) -> None:
    moved = tmp_path / "tasks"
    shutil.copytree(tasks_dir, moved)
    config = load_task(moved / f"sago_v1_v2_smoke_{DATASETS[0]}.yaml")
    data = moved / config["dataset_kwargs"]["data_file"]
    data.write_bytes(data.read_bytes() + b"\0")
    with pytest.raises(ValueError, match="sha256 .* but the task was exported with"):
        task_docs(config, moved)


def test_export_refuses_a_folder_of_other_files_and_changes_nothing(
    variant_set: VariantSet, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(SagoError, match="notes.txt") as err:
        export_lm_eval(variant_set, get_profile("smoke"), tmp_path, datasets=["gsm8k"])
    assert "\n" not in str(err.value) and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


# ---- same numbers ---------------------------------------------------------------------------------------
def test_imported_result_equals_the_response_only_view_of_the_sago_run(
    imported: Path, sago_run: Path
) -> None:
    """Every number of the imported summary equals the one computed from the sago run's deltas with the
    model-needing measures marked not measured: SGS, CIs, every test and Holm/BH correction, per item,
    per family, accuracy, noise floor."""
    assert differing_responses(records(imported), records(sago_run)).empty
    sago_deltas = pd.read_parquet(ResultsFolder(sago_run).deltas)
    expected = summarize(
        response_only(sago_deltas),
        model=LABEL,
        set_name="sago-v1",
        version="v2",
        axes=read_scorer_backbones(ResultsFolder(sago_run).deltas),
        not_measured=not_measured_map(),
    )
    got = json.loads(ResultsFolder(imported).summary.read_text(encoding="utf-8"))
    assert jsonio.dumps(got) == jsonio.dumps(expected)
    assert got["not_measured"] == {m: NOT_MEASURED for m in model_measures()}


def test_response_only_sgs_and_raw_tests_equal_the_full_sago_summary(imported: Path, sago_run: Path) -> None:
    """Against the sago run's own summary (all nine measures): the response-only cells have the same SGS,
    CI and raw tests; only the Holm/BH p differ, because that run corrects over more cells."""
    sago_deltas = pd.read_parquet(ResultsFolder(sago_run).deltas)
    full = summarize(sago_deltas, model=LABEL, set_name="sago-v1", version="v2")
    got = json.loads(ResultsFolder(imported).summary.read_text(encoding="utf-8"))
    ours = {(c["dataset"], c["measure"]): c for c in got["cells"]}
    theirs = {(c["dataset"], c["measure"]): c for c in full["cells"] if c["measure"] in RESPONSE_MEASURES}
    assert set(ours) == set(theirs) and len(ours) == 3 * len(RESPONSE_MEASURES)  # two datasets + "all"
    for key, cell in theirs.items():
        mine = ours[key]
        assert [mine[f] for f in ("n_items", "sgs", "ci_low", "ci_high")] == [
            cell[f] for f in ("n_items", "sgs", "ci_low", "ci_high")
        ]
        for a, b in zip(mine["tests"], cell["tests"], strict=True):
            assert [a[f] for f in ("epsilon", "t", "p_t", "p_exact")] == [
                b[f] for f in ("epsilon", "t", "p_t", "p_exact")
            ]
            assert a["p_holm"] is None or a["p_holm"] <= b["p_holm"]  # fewer cells, milder correction
    assert not {m for _, m in ours} & set(model_measures())


def test_unmeasured_is_nan_in_records_and_deltas_never_zero(imported: Path) -> None:
    folder = ResultsFolder(imported)
    recs = records(imported)
    assert recs[["logprob_sum", "logprob_mean", "entropy_mean"]].isna().all().all()
    assert recs[["response_tokens", "baseline_tokens", "prompt_tokens", "finished"]].isna().all().all()
    deltas = pd.read_parquet(folder.deltas)
    assert deltas[[f"delta_{m}" for m in model_measures()]].isna().all().all()  # the baseline rows too
    assert deltas[[f"delta_{m}" for m in RESPONSE_MEASURES if m != "mirroring"]].notna().all().all()
    assert not folder.activations_dir.exists()
    run = folder.read_run()
    assert (
        run.not_measured == not_measured_map()
        and run.variant_set_sha256 == benchmark.load_variant_set("sago-v1", "v2").sha256
    )
    assert set(run.files or {}) == {f"records/{d}.parquet" for d in DATASETS}


def test_one_differing_response_is_counted_and_moves_only_its_item(
    tasks_dir: Path, sago_run: Path, variant_set: VariantSet, tmp_path: Path, imported: Path
) -> None:
    base = responder(sago_run)
    target = ("trivia_qa", "politeness/global/10")
    first_item = str(select_rows(variant_set.frame("trivia_qa"), get_profile("smoke"))["item_id"].iloc[0])

    def respond(doc: Mapping[str, Any]) -> str:
        hit = (doc["dataset"], doc["variant_id"]) == target and doc["item_id"] == first_item
        return "Something else entirely." if hit else base(doc)

    samples = write_lm_eval_output(tasks_dir, tmp_path / "lm", respond)
    out = tmp_path / "results"
    import_lm_eval(samples, variant_set, out, name=LABEL, scorers=jaccard_scorers())
    differing = differing_responses(records(out), records(sago_run))
    assert list(zip(differing["item_id"], differing["variant_id"], strict=True)) == [(first_item, target[1])]
    changed = pd.DataFrame(json.loads(ResultsFolder(out).summary.read_text())["per_item"])
    same = pd.DataFrame(json.loads(ResultsFolder(imported).summary.read_text())["per_item"])
    moved = changed.merge(same, on=["dataset", "item_id", "measure"])
    moved = moved[~np.isclose(moved["s_x"], moved["s_y"], rtol=0, atol=0)]
    assert set(moved["item_id"]) == {first_item} and set(moved["dataset"]) == {"trivia_qa"}


# ---- what is refused ------------------------------------------------------------------------------------
def _edited(tasks_dir: Path, sago_run: Path, tmp_path: Path, **options: Any) -> list[Path]:
    return write_lm_eval_output(tasks_dir, tmp_path / "lm", responder(sago_run), **options)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("hash", "exported from a set with sha256"),
        ("data_hash", "read a natural_questions file with sha256"),
        ("limit", "--limit"),
        ("gen_kwargs", "max_gen_toks=64"),
        ("missing_row", "of the 175 rows"),
        ("prompt", "prompt or answers differ"),
        ("fewshot", "5-shot"),
    ],
)
def test_samples_that_are_not_a_sago_run_are_refused_in_one_line(
    edit: str, message: str, tasks_dir: Path, sago_run: Path, variant_set: VariantSet, tmp_path: Path
) -> None:
    options: dict[str, Any] = {}
    if edit == "gen_kwargs":
        options["gen_kwargs"] = {**GREEDY, "max_gen_toks": 64}
    if edit == "limit":
        options["results_extra"] = {"config": {"model": "hf", "limit": 3}}
    if edit == "fewshot":
        options["results_extra"] = {"n-shot": {f"sago_v1_v2_smoke_{d}": 5 for d in DATASETS}}
    samples = _edited(tasks_dir, sago_run, tmp_path, **options)
    results = samples[0].with_name(f"results_{samples[0].name.rsplit('_', 1)[1].removesuffix('.jsonl')}.json")
    if edit == "hash":
        text = results.read_text(encoding="utf-8").replace(variant_set.sha256, "0" * 64)
        results.write_text(text, encoding="utf-8")
    if edit == "data_hash":  # the task read another file than the set's, with a hash to match
        data = sha256_file(data_source(variant_set, DATASETS[0]))
        results.write_text(results.read_text(encoding="utf-8").replace(data, "1" * 64), encoding="utf-8")
    if edit in ("missing_row", "prompt"):
        lines = samples[0].read_text(encoding="utf-8").splitlines()
        if edit == "missing_row":
            lines = lines[:-1]
        else:
            lines[3] = lines[3].replace('"prompt": "', '"prompt": "Edited: ', 1)
        samples[0].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "results"
    with pytest.raises(SagoError, match=re.escape(message)) as err:
        import_lm_eval(samples, variant_set, out, name=LABEL, scorers=jaccard_scorers())
    assert "\n" not in str(err.value)
    assert not out.exists() and not list(tmp_path.glob(".results*"))


def test_the_board_refuses_a_response_only_result(
    imported: Path, variant_set: VariantSet, tmp_path: Path
) -> None:
    with pytest.raises(SagoError, match="stays off the board"):
        check_results(imported)
    folder = tmp_path / "sago-v1" / "v2"
    folder.parent.mkdir()
    shutil.copytree(imported, folder)
    failures = check_result_folder(folder, Path("results/sago-v1/v2"), known_variant_sets(REPO / "variants"))
    assert any("stays off the board" in f.problem for f in failures)
    with pytest.raises(SagoError, match="inside submissions/"):
        import_lm_eval([], variant_set, REPO / "submissions" / "x__y" / "results", name=LABEL)


# ---- the README section, executed -------------------------------------------------------------------------
def test_readme_section_runs_as_written(
    sago_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's commands, lm_eval replaced by the files it writes (the slow test runs it for real)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "benchmark.axes.deltas.AxisScorers.default", classmethod(lambda cls, *a, **k: jaccard_scorers())
    )

    def fake_lm_eval(argv: list[str]) -> None:
        assert {"--apply_chat_template", "--log_samples"} <= set(argv)
        assert "add_bos_token=False" in option(argv, "--model_args")
        tasks = Path(option(argv, "--include_path"))
        assert option(argv, "--tasks") in {p.stem for p in tasks.glob("*.yaml")}
        write_lm_eval_output(tasks, Path(option(argv, "--output_path")), responder(sago_run))

    printed = run_readme(tmp_path, fake_lm_eval, capsys)
    assert NOT_MEASURED in printed[-1] and "bertscore" in printed[-1]
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text(encoding="utf-8"))
    assert summary["not_measured"] == not_measured_map()
    assert {c["dataset"] for c in summary["cells"]} == {*DATASETS, "all"}
