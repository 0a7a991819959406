"""`sago evaluate` and `sago bench` end to end on a local tiny model, and their one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from helpers.toy import FramesVariantSet, toy_frame, toy_variant_set

from benchmark import paths
from benchmark.cli import main
from benchmark.harness import cli as harness_cli
from benchmark.models.tiny import tiny_llama, tiny_tokenizer
from benchmark.tools import bench as tools_bench

SLUG = "local__tiny"
RUN = [
    "--version",
    "v1",
    "--profile",
    "smoke",
    "--device",
    "cpu",
    "--batch-size",
    "4",
    "--threads",
    "1",
    "--no-progress",
]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_llama().save_pretrained(folder, safe_serialization=True)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture()
def root(tmp_path: Path, tiny_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A submissions folder with one valid local submission; the toy set stands in for sago-v1."""
    torch.set_num_threads(1)
    folder = tmp_path / "submissions"
    _write(
        folder / SLUG,
        {
            "name": "Tiny",
            "model": {"kind": "local", "path": str(tiny_dir)},
            "license": "MIT",
            "parameters": 100000,
            "contact": "tests",
        },
    )
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", folder)

    def toy(name: str, version: str) -> object:
        return toy_variant_set(("alpha",), n_items=2)

    monkeypatch.setattr(harness_cli, "open_variant_set", toy)
    monkeypatch.setattr(tools_bench, "open_variant_set", toy)  # `sago bench` is a tool
    return folder


def _write(folder: Path, content: dict[str, object]) -> None:
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(yaml.safe_dump(content))


def _error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_evaluate_writes_results_then_pending_skips_and_force_redoes(root: Path, capsys) -> None:
    assert main(["evaluate", SLUG, *RUN]) == 0
    out = root / SLUG / "results" / "sago-v1" / "v1"
    records = pd.read_parquet(out / "records" / "alpha.parquet")
    assert len(records) == 2 * 15 and set(records["item_id"]) == {"alpha-000", "alpha-001"}
    run = json.loads((out / "run.json").read_text())
    assert run["submission"] == SLUG and run["model"]["source"] == "local"
    assert run["chat_template"] == "applied" and run["dtype"] == "float32" and run["device"] == "cpu"
    assert run["tokens"]["generated_tokens"] == int(records["response_tokens"].sum())
    assert main(["evaluate", SLUG, *RUN]) == 0  # finished: skipped, and the harmless way to try is said
    assert (
        "skipped (use --force to redo, or --out DIR for a trial run in a scratch folder"
        in capsys.readouterr().err
    )
    assert main(["evaluate", "--pending", *RUN]) == 0
    assert "nothing to evaluate" in capsys.readouterr().out
    stamp = (out / "run.json").stat().st_mtime_ns
    assert main(["evaluate", "--all", "--force", *RUN]) == 0
    assert (out / "run.json").stat().st_mtime_ns != stamp
    pd.testing.assert_frame_equal(pd.read_parquet(out / "records" / "alpha.parquet"), records)


def test_out_writes_a_scratch_result_and_leaves_the_submissions_alone(
    root: Path, tmp_path: Path, capsys
) -> None:
    scratch = tmp_path / "scratch" / "run"  # parents are created
    assert main(["evaluate", SLUG, *RUN, "--out", str(scratch)]) == 0
    assert not (root / SLUG / "results").exists()
    result = scratch / "submissions" / SLUG / "results" / "sago-v1" / "v1"
    assert len(pd.read_parquet(result / "records" / "alpha.parquet")) == 2 * 15
    copied = scratch / "submissions" / SLUG / "submission.yaml"
    assert copied.read_bytes() == (root / SLUG / "submission.yaml").read_bytes()
    said = capsys.readouterr().out
    assert "(smoke: 30 model runs)" in said  # the 28 selected rows + a rerun of each of the 2 baselines
    assert f"sago analyze --set sago-v1 --version v1 --submissions-dir {scratch / 'submissions'}" in said
    # a second run finds the scratch result finished instead of redoing it
    stamp = (result / "run.json").stat().st_mtime_ns
    assert main(["evaluate", SLUG, *RUN, "--out", str(scratch)]) == 0
    assert (result / "run.json").stat().st_mtime_ns == stamp
    assert "exist; skipped" in capsys.readouterr().err


def test_out_refuses_the_submissions_folder(root: Path, capsys) -> None:
    err = _error_line(capsys, ["evaluate", SLUG, *RUN, "--out", str(root.parent)])  # the checkout
    assert "committed results live" in err
    # benchmark/submissions/ is the package's code: a scratch run is never written among tracked files
    err = _error_line(capsys, ["evaluate", SLUG, *RUN, "--out", str(paths.REPO_ROOT / "benchmark")])
    assert "benchmark/submissions/__init__.py" in err and "which git tracks" in err
    assert not (paths.REPO_ROOT / "benchmark" / "submissions" / SLUG).exists()
    pending = ["evaluate", "--pending", *RUN, "--out", str(root.parent / "x")]
    assert "--pending" in _error_line(capsys, pending)
    assert not (root / SLUG / "results").exists() and not (root / "submissions").exists()


def test_ctrl_c_says_what_was_kept_and_the_command_that_resumes(
    root: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sago evaluate --help` says "start again with the same options"; a Ctrl-C now prints them, and the
    printed command (with --force) resumes instead of discarding the finished batches."""
    from benchmark.harness import checkpoint

    write = checkpoint.PartStore.write
    written: list[str] = []

    def stop_after_three(store: checkpoint.PartStore, part: checkpoint.Part) -> None:
        if len(written) == 3:
            raise KeyboardInterrupt
        write(store, part)
        written.append(part.name)

    monkeypatch.setattr(checkpoint.PartStore, "write", stop_after_three)
    # the CPU default engine, pooled, at 1 row per forward plans batches of 4 (POOL forwards of 1 row)
    assert main(["evaluate", SLUG, *RUN, "--batch-size", "1", "--force"]) != 0
    said = capsys.readouterr().err
    out = root / SLUG / "results" / "sago-v1" / "v1"
    # 2 items in batches of 4: 1 baseline batch, then 26 variants and 2 rerun controls in 7 (planner 2)
    assert f"interrupted: kept 3 of 8 batches in {out}; resume with: sago evaluate {SLUG} " in said
    command = said.split("resume with: ")[1].splitlines()[0].split()
    assert command[:3] == ["sago", "evaluate", SLUG] and "--force" in command
    monkeypatch.setattr(checkpoint.PartStore, "write", write)
    assert main(command[1:] + ["--no-progress"]) == 0
    assert "--force kept the checkpoint of this same run (3 of 8 batches finished)" in capsys.readouterr().err
    assert len(pd.read_parquet(out / "records" / "alpha.parquet")) == 30


def test_a_bad_submission_is_one_line(root: Path, capsys) -> None:
    _write(
        root / "broken__model",
        {
            "name": "B",
            "model": {"kind": "local", "path": "x"},
            "license": "MIT",
            "parameters": 1,
            "contact": "c",
            "trust_remote_code": True,
        },
    )
    assert "trust_remote_code" in _error_line(capsys, ["evaluate", "broken__model", *RUN])
    # --pending validates every submission before running any
    assert "broken__model" in _error_line(capsys, ["evaluate", "--pending", *RUN])
    assert "invalid submission name" in _error_line(capsys, ["evaluate", "../etc__passwd", *RUN])
    assert "no submission.yaml" in _error_line(capsys, ["evaluate", "nobody__here", *RUN])


def test_usage_mistakes_are_one_line(root: Path, capsys) -> None:
    assert "--pending" in _error_line(capsys, ["evaluate", *RUN])
    assert "--pending" in _error_line(capsys, ["evaluate", SLUG, "--all", *RUN])
    assert "did you mean 'smoke'" in _error_line(capsys, ["evaluate", SLUG, "--profile", "smok"])
    assert "unknown engine" in _error_line(capsys, ["evaluate", SLUG, "--engine", "fast"])
    assert "unknown dataset 'gamma'" in _error_line(capsys, ["evaluate", SLUG, *RUN, "--datasets", "gamma"])


def test_a_corrupted_variant_set_is_one_line(root: Path, capsys, monkeypatch) -> None:
    frame = toy_frame("alpha", n_items=2)
    broken = FramesVariantSet("x", {"alpha": frame[frame["variant_id"] != "baseline/none/0"]})
    monkeypatch.setattr(harness_cli, "open_variant_set", lambda s, v: broken)
    assert "no baseline row" in _error_line(capsys, ["evaluate", SLUG, *RUN])
    assert not (root / SLUG / "results" / "sago-v1" / "v1" / "run.json").exists()


def test_a_missing_variant_set_is_one_line(root: Path, capsys, monkeypatch) -> None:
    from benchmark.harness import sets

    monkeypatch.setattr(harness_cli, "open_variant_set", sets.open_variant_set)
    err = _error_line(capsys, ["evaluate", SLUG, *RUN, "--set", "no-such-set"])
    assert "no-such-set" in err


def test_bench_reports_throughput_memory_and_overhead(root: Path, capsys) -> None:
    assert main(["bench", "--model", SLUG, *RUN[:-1]]) == 0
    out = capsys.readouterr().out
    values = {line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in out.splitlines()[1:]}
    assert int(values["prompts"]) == 2 * 15
    assert float(values["prompts/s"]) > 0 and float(values["tokens/s"]) > 0
    assert float(values["peak RSS"].split()[0]) > 50
    # No speed bound here (timings belong in `sago bench` runs, and the pooled default can beat the
    # plain-generate floor): the printed ratio must be the printed wall times' quotient.
    harness, floor = (float(values[key].split()[0]) for key in ("harness wall", "generate floor"))
    assert harness > 0 and floor > 0
    rounding = 0.005 / harness + 0.005 / floor  # the walls print with two decimals
    assert float(values["overhead ratio"]) == pytest.approx(harness / floor, rel=rounding, abs=1e-3)
