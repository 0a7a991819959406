"""`sago submissions validate`: a clean tree passes, and each kind of bad submission is one named line."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from helpers.site_tree import PROFILE, SET, VERSION, SiteTree, make_site_tree, submission_yaml
from markupsafe import Markup
from safetensors.numpy import save_file

from benchmark import integrity, paths
from benchmark.cli import main
from benchmark.submissions import validate_results
from benchmark.submissions.cli import submissions
from benchmark.submissions.validate import validate_tree

SMOL_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


@pytest.fixture
def site_tree(tmp_path: Path) -> SiteTree:
    """A fresh, valid fixture checkout per test; each test breaks one thing."""
    return make_site_tree(tmp_path)


def lines(tree: SiteTree) -> list[str]:
    """Every failure line for the fixture tree."""
    return [f.line() for f in validate_tree(tree.submissions, tree.variants).failures]


def only(tree: SiteTree, path: str, words: str) -> str:
    """Assert exactly one failure, on ``path``, mentioning ``words``; return the line."""
    found = lines(tree)
    assert len(found) == 1, found
    assert found[0].startswith(f"submissions/{path}: "), found
    assert words in found[0], found
    assert " — " in found[0]
    return found[0]


def results(tree: SiteTree, slug: str = "acme__tiny-a") -> Path:
    return tree.submissions / slug / "results" / SET / VERSION


def rehash(tree: SiteTree, slug: str = "acme__tiny-a") -> None:
    """Record the current files in run.json, so a test of a content check sees only that check fire."""
    integrity.rehash(results(tree, slug))


def edit_yaml(tree: SiteTree, slug: str, **changes: object) -> None:
    path = tree.submissions / slug / "submission.yaml"
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data))


def test_clean_tree_passes(site_tree: SiteTree) -> None:
    report = validate_tree(site_tree.submissions, site_tree.variants)
    assert report.failures == ()
    assert (report.submissions, report.result_folders) == (4, 2)
    assert report.summary() == "ok: 4 submission(s), 2 result folder(s) checked"


def test_a_folder_holding_only_a_checkpoint_is_a_run_in_progress(site_tree: SiteTree) -> None:
    """A long run's committed checkpoint is not a result yet: nothing to judge; anything beside it is."""
    slug = next(p.name for p in site_tree.submissions.iterdir() if (p / "results").is_dir())
    folder = site_tree.submissions / slug / "results" / SET / VERSION
    shutil.rmtree(folder)
    (folder / "checkpoint" / "rank-0").mkdir(parents=True)
    (folder / "checkpoint" / "rank-0" / "plan.json").write_text("{}")
    report = validate_tree(site_tree.submissions, site_tree.variants)
    assert report.failures == ()
    assert (report.result_folders, report.in_progress) == (1, 1)  # counted apart, never as "checked"
    assert report.summary() == (
        "ok: 4 submission(s), 1 result folder(s) checked (+1 in progress: checkpoint only)"
    )
    (folder / "stray.txt").write_text("x")
    assert any(
        "stray entry" in f.line() for f in validate_tree(site_tree.submissions, site_tree.variants).failures
    )


def test_the_packaged_submissions_in_the_repository_pass() -> None:
    from benchmark.paths import SUBMISSIONS_DIR, VARIANTS_DIR

    report = validate_tree(SUBMISSIONS_DIR, VARIANTS_DIR)
    assert report.ok, [f.line() for f in report.failures]


def test_unsafe_folder_name(site_tree: SiteTree) -> None:
    (site_tree.submissions / "Evil__Name").mkdir()
    only(site_tree, "Evil__Name", "not a valid slug")


def test_stray_file_at_top(site_tree: SiteTree) -> None:
    (site_tree.submissions / "notes.txt").write_text("hi")
    only(site_tree, "notes.txt", "stray file")


def test_folder_without_submission_yaml(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__empty").mkdir()
    only(site_tree, "acme__empty/submission.yaml", "no submission.yaml")


def test_results_for_a_model_that_is_not_submitted(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__tiny-a" / "submission.yaml").unlink()
    only(site_tree, "acme__tiny-a/submission.yaml", "results for a model that is not submitted")


def test_broken_yaml(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__tiny-b" / "submission.yaml").write_text("name: [unclosed\n")
    only(site_tree, "acme__tiny-b/submission.yaml", "not valid YAML")


def test_unknown_key_is_a_schema_error(site_tree: SiteTree) -> None:
    edit_yaml(site_tree, "acme__tiny-b", licence="MIT")
    only(site_tree, "acme__tiny-b/submission.yaml", "licence")


def test_unpinned_hub_revision(site_tree: SiteTree) -> None:
    edit_yaml(site_tree, "acme__tiny-b", model={"kind": "hub", "id": "acme/tiny-b", "revision": "main"})
    line = only(site_tree, "acme__tiny-b/submission.yaml", "'revision' under 'model' is 'main'")
    assert "hub" not in line.split(" — ")[0]  # the kind is a value the file has, never part of a key


def test_local_model_is_refused(site_tree: SiteTree) -> None:
    edit_yaml(site_tree, "acme__tiny-c", model={"kind": "local", "path": "/home/me/model"})
    only(site_tree, "acme__tiny-c/submission.yaml", "'local' cannot be reproduced")


def test_packaged_sha256_must_match_the_artefact(site_tree: SiteTree) -> None:
    edit_yaml(
        site_tree,
        "acme__tiny-c",
        model={"kind": "packaged", "artefact": "smollm2-135m-instruct-q4_1", "sha256": "0" * 64},
    )
    line = only(site_tree, "acme__tiny-c/submission.yaml", "sha256 does not match")
    assert SMOL_SHA in line  # the fix names the right value


def test_unknown_packaged_artefact(site_tree: SiteTree) -> None:
    edit_yaml(site_tree, "acme__tiny-c", model={"kind": "packaged", "artefact": "nope", "sha256": "1" * 64})
    only(site_tree, "acme__tiny-c/submission.yaml", "unknown packaged artefact")


def test_duplicate_hub_model_differing_only_in_case(site_tree: SiteTree) -> None:
    a = yaml.safe_load((site_tree.submissions / "acme__tiny-a" / "submission.yaml").read_text())
    edit_yaml(site_tree, "acme__tiny-c", model={**a["model"], "id": a["model"]["id"].upper()})
    only(site_tree, "acme__tiny-c/submission.yaml", "same weights as submission 'acme__tiny-a'")


def test_duplicate_packaged_sha256(site_tree: SiteTree) -> None:
    model = {"kind": "packaged", "artefact": "smollm2-135m-instruct-q4_1", "sha256": SMOL_SHA}
    edit_yaml(site_tree, "acme__tiny-c", model=model)
    edit_yaml(site_tree, "acme__tiny-pending", model=model)
    only(site_tree, "acme__tiny-pending/submission.yaml", "same weights as submission 'acme__tiny-c'")


def test_stray_file_in_submission_folder(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__tiny-b" / "weights.bin").write_bytes(b"\0")
    only(site_tree, "acme__tiny-b/weights.bin", "stray entry")


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_symbolic_link_is_refused(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__tiny-b" / "README.md").symlink_to("/etc/passwd")
    found = lines(site_tree)
    assert any(line.startswith("submissions/acme__tiny-b/README.md: is a symbolic link") for line in found), (
        found
    )


def test_results_on_an_unknown_variant_set(site_tree: SiteTree) -> None:
    source = results(site_tree)
    shutil.copytree(source, source.parent.parent / "other-set" / "v9")
    line = only(site_tree, "acme__tiny-a/results/other-set/v9", "other-set/v9 is not among the frozen sets")
    assert "(sago-v1/v1)" in line and "--variants" in line


def test_a_missing_variants_folder_is_named_not_blamed_on_the_results(
    site_tree: SiteTree, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = site_tree.root / "nosuch"
    status = main(
        ["submissions", "validate", "--root", str(site_tree.submissions), "--variants", str(missing)]
    )
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "", captured.out
    assert captured.err.strip() == (
        f"error: --variants {missing} is not a folder; pass the folder of frozen variant sets (variants/)"
    )


def test_unsafe_result_folder_name(site_tree: SiteTree) -> None:
    (site_tree.submissions / "acme__tiny-a" / "results" / "Bad Set").mkdir()
    only(site_tree, "acme__tiny-a/results/Bad Set", "invalid variant set folder name")


def test_missing_run_json(site_tree: SiteTree) -> None:
    (results(site_tree) / "run.json").unlink()
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/run.json", "missing")


def test_newer_schema_version(site_tree: SiteTree) -> None:
    path = results(site_tree) / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 99}))
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/run.json", "newer than this code reads")


def test_variant_set_hash_mismatch(site_tree: SiteTree) -> None:
    path = results(site_tree) / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "variant_set": {"sha256": "f" * 64}}))
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/run.json", "matches no known set")


@pytest.mark.parametrize(
    "engine", ["pooled", "single_prefill", "two_pass (pooled declined: a sliding window)"]
)
def test_a_run_of_any_engine_the_harness_has_passes(site_tree: SiteTree, engine: str) -> None:
    """A result of the pooled engine (a new run's default on a CPU), with its engine_settings, passes as
    one of the single-prefill engine does."""
    path = results(site_tree) / "run.json"
    run = json.loads(path.read_text())
    settings = {
        "pool": 4,
        "refill_fraction": 4,
        "greedy_head": "float16_screen",
        "scoring_head": "vocab_chunks",
    }
    model = {**run["model"], "engine": engine, "engine_settings": settings}
    path.write_text(json.dumps({**run, "engine": engine, "model": model}))
    assert lines(site_tree) == []


@pytest.mark.parametrize("engine", ["turbo", "two_pass (turbo declined: why)", "pooled\n"])
def test_a_run_of_an_unknown_engine_is_refused(site_tree: SiteTree, engine: str) -> None:
    path = results(site_tree) / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "engine": engine}))
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/run.json", f"engine {engine!r} is none")


@pytest.mark.parametrize("engine", ["fake", "api"])
def test_a_local_models_run_by_another_backend_is_refused(
    site_tree: SiteTree, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint, and in the project's own submissions folder the tests' stand-in model, are engines the
    harness has but not ones that ran the weights submission.yaml pins: a hand-edited or test-made result
    cannot pass as the model's own (a fixture checkout elsewhere holds stand-in results on purpose)."""
    path = results(site_tree) / "run.json"
    run = json.loads(path.read_text())
    spec = yaml.safe_load((site_tree.submissions / "acme__tiny-a" / "submission.yaml").read_text())
    assert run.get("engine") != engine and spec["model"]["kind"] == "hub"
    path.write_text(json.dumps({**run, "engine": engine}))
    if engine == "fake":
        assert lines(site_tree) == []  # a fixture checkout
        monkeypatch.setattr(paths, "SUBMISSIONS_DIR", site_tree.submissions)
    only(site_tree, f"{RESULTS}/run.json", f"engine {engine!r} is not one that runs local weights")


def test_records_with_a_missing_column(site_tree: SiteTree) -> None:
    path = results(site_tree) / "records" / "alpaca.parquet"
    pd.read_parquet(path).drop(columns=["response"]).to_parquet(path)
    rehash(site_tree)
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/records/alpaca.parquet", "missing response")


def test_records_that_do_not_load(site_tree: SiteTree) -> None:
    (results(site_tree) / "records" / "alpaca.parquet").write_bytes(b"not parquet at all")
    rehash(site_tree)
    only(
        site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/records/alpaca.parquet", "does not load as parquet"
    )


def test_results_without_records(site_tree: SiteTree) -> None:
    shutil.rmtree(results(site_tree, "acme__tiny-b") / "records")
    path = results(site_tree, "acme__tiny-b") / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "files": {}}))
    only(site_tree, f"acme__tiny-b/results/{SET}/{VERSION}/records", "no records")


def test_deltas_with_an_extra_column(site_tree: SiteTree) -> None:
    path = results(site_tree) / "deltas.parquet"
    pd.read_parquet(path).assign(secret=1).to_parquet(path)
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/deltas.parquet", "unexpected secret")


def test_summary_that_is_not_json(site_tree: SiteTree) -> None:
    (results(site_tree) / "summary.json").write_text("{oops")
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/summary.json", "not valid JSON")


def test_oversized_file(site_tree: SiteTree, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(validate_results.SIZE_LIMITS, "records", 100)
    found = lines(site_tree)
    assert len(found) == 3, found  # tiny-a: two datasets, tiny-b: one
    assert all("is over the 100 B limit for records — " in line for line in found), found


def test_stray_files_inside_results(site_tree: SiteTree) -> None:
    (results(site_tree) / "notes.md").write_text("x")
    (results(site_tree) / "records" / "alpaca.csv").write_text("x")
    found = lines(site_tree)
    assert [line.split(":")[0] for line in found] == [
        f"submissions/acme__tiny-a/results/{SET}/{VERSION}/notes.md",
        f"submissions/acme__tiny-a/results/{SET}/{VERSION}/records/alpaca.csv",
    ], found


def test_bad_safetensors_header(site_tree: SiteTree) -> None:
    folder = results(site_tree) / "activations"
    folder.mkdir()
    (folder / "alpaca.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    rehash(site_tree)
    only(
        site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/activations/alpaca.safetensors", "not a safetensors"
    )


def test_checkpoint_folder_is_ignored(site_tree: SiteTree) -> None:
    (results(site_tree) / "checkpoint").mkdir()
    (results(site_tree) / "checkpoint" / "state.bin").write_bytes(b"\0")
    assert lines(site_tree) == []


def test_many_problems_are_all_reported(site_tree: SiteTree) -> None:
    (site_tree.submissions / "stray.txt").write_text("x")
    (results(site_tree) / "run.json").unlink()
    edit_yaml(site_tree, "acme__tiny-b", licence="MIT")
    assert len(lines(site_tree)) == 3


def test_cli_exit_status_and_output(site_tree: SiteTree) -> None:
    args = [
        "submissions",
        "validate",
        "--root",
        str(site_tree.submissions),
        "--variants",
        str(site_tree.variants),
    ]
    assert main(args) == 0
    (site_tree.submissions / "stray.txt").write_text("x")
    assert main(args) == 1
    result = CliRunner().invoke(submissions, args[1:])
    assert result.exit_code == 1
    assert "submissions/stray.txt: stray file at the top of submissions/ — " in result.output


def test_cli_refuses_a_missing_root(tmp_path: Path) -> None:
    assert main(["submissions", "validate", "--root", str(tmp_path / "nope")]) == 2


# ---------------------------------------------------------------------------------------------------
# Hostile submission files: the YAML loader refuses what an attacker would use, in bounded time.


def write_yaml_text(tree: SiteTree, slug: str, text: str) -> None:
    (tree.submissions / slug / "submission.yaml").write_text(text)


def valid_yaml_text(tree: SiteTree, slug: str) -> str:
    return (tree.submissions / slug / "submission.yaml").read_text()


def test_yaml_bomb_of_nested_merge_keys_is_refused_quickly(site_tree: SiteTree) -> None:
    levels = ["l0: &l0 {a: 1, b: 2, c: 3, d: 4}"]
    levels += [f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}, *l{i - 1}, *l{i - 1}]}}" for i in range(1, 30)]
    write_yaml_text(site_tree, "acme__tiny-c", "\n".join(levels) + "\n")
    assert len(valid_yaml_text(site_tree, "acme__tiny-c")) < 2048  # a 4**29-fold expansion if it were built
    started = time.perf_counter()
    only(site_tree, "acme__tiny-c/submission.yaml", "anchor or alias")
    assert time.perf_counter() - started < 5


def test_merge_key_without_anchors_is_refused(site_tree: SiteTree) -> None:
    write_yaml_text(
        site_tree, "acme__tiny-c", valid_yaml_text(site_tree, "acme__tiny-c") + "extra:\n  <<: {a: 1}\n"
    )
    only(site_tree, "acme__tiny-c/submission.yaml", "merge key")


def test_deep_nesting_is_one_line_and_the_walk_goes_on(site_tree: SiteTree) -> None:
    write_yaml_text(site_tree, "acme__tiny-c", "notes: " + "[" * 5000 + "]" * 5000 + "\n")
    (site_tree.submissions / "stray.txt").write_text("x")  # a later problem must still be reported
    found = lines(site_tree)
    assert len(found) == 2, found
    assert any("acme__tiny-c/submission.yaml: is nested deeper than 16 levels" in line for line in found)


def test_duplicate_key_is_refused(site_tree: SiteTree) -> None:
    write_yaml_text(
        site_tree, "acme__tiny-c", valid_yaml_text(site_tree, "acme__tiny-c") + "name: Second name\n"
    )
    line = only(site_tree, "acme__tiny-c/submission.yaml", "duplicate key 'name'")
    assert "second value would silently win" in line


def test_all_digit_revision_gets_a_hint_to_quote_it(site_tree: SiteTree) -> None:
    text = valid_yaml_text(site_tree, "acme__tiny-c")
    write_yaml_text(site_tree, "acme__tiny-c", re.sub(r"revision: .*", "revision: " + "1234567890" * 4, text))
    line = only(site_tree, "acme__tiny-c/submission.yaml", "'revision' under 'model'")
    assert "which YAML read as a number, not as text — put the value in quotes" in line


def test_empty_submission_yaml(site_tree: SiteTree) -> None:
    write_yaml_text(site_tree, "acme__tiny-c", "\n  \n")
    line = only(site_tree, "acme__tiny-c/submission.yaml", "the file is empty")
    assert "NoneType" not in line


def test_only_schema_errors_say_fix_the_key(site_tree: SiteTree) -> None:
    write_yaml_text(site_tree, "acme__tiny-c", "name: [unclosed\n")
    assert "fix the key" not in only(site_tree, "acme__tiny-c/submission.yaml", "not valid YAML")
    write_yaml_text(site_tree, "acme__tiny-c", "- a list\n")
    assert "fix the key" not in only(site_tree, "acme__tiny-c/submission.yaml", "not a mapping")


def test_duplicate_weights_blame_the_new_submission_even_when_it_sorts_first(site_tree: SiteTree) -> None:
    folder = site_tree.submissions / "acme__a-copy"
    folder.mkdir()
    shutil.copyfile(site_tree.submissions / "acme__tiny-a" / "submission.yaml", folder / "submission.yaml")
    edit_yaml(site_tree, "acme__a-copy", name="A copy under another name")
    only(site_tree, "acme__a-copy/submission.yaml", "same weights as submission 'acme__tiny-a'")


LOOKALIKES: dict[str, Callable[[str], str]] = {
    "the same name": lambda taken: taken,
    "case and punctuation": lambda taken: taken.upper().replace(" ", "-"),
    "a Cyrillic i (an invisible character is refused outright: test_hostile_prs.py)": lambda taken: (
        taken.replace("i", "\u0456", 1)
    ),
    "a fullwidth T (NFKC)": lambda taken: taken.replace("T", "\uff34", 1),
}


@pytest.mark.parametrize("how", sorted(LOOKALIKES))
def test_a_display_name_confusable_with_another_models_is_refused(site_tree: SiteTree, how: str) -> None:
    taken = yaml.safe_load((site_tree.submissions / "acme__tiny-a" / "submission.yaml").read_text())["name"]
    folder = site_tree.submissions / "acme__other"
    folder.mkdir()
    meta = submission_yaml("acme__other", LOOKALIKES[how](taken), 14)
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
    line = only(site_tree, "acme__other/submission.yaml", "its name reads like the name of submission")
    assert "'acme__tiny-a'" in line


@pytest.mark.parametrize("slug", ["acme__tiny.a", "acme__tlny-a", "acme__tiny_a"])
def test_a_slug_confusable_with_another_models_is_refused(site_tree: SiteTree, slug: str) -> None:
    folder = site_tree.submissions / slug
    folder.mkdir()
    (folder / "submission.yaml").write_text(yaml.safe_dump(submission_yaml(slug, "Someone else", 14)))
    line = only(site_tree, f"{slug}/submission.yaml", "its slug reads like the slug of submission")
    assert "'acme__tiny-a'" in line


@pytest.mark.parametrize("value", ["true", "1.0e+8", "100000000.0", "'100000000'"])
def test_parameters_must_be_written_as_an_integer(site_tree: SiteTree, value: str) -> None:
    text = valid_yaml_text(site_tree, "acme__tiny-b")
    write_yaml_text(site_tree, "acme__tiny-b", re.sub(r"(?m)^parameters: .*$", f"parameters: {value}", text))
    only(site_tree, "acme__tiny-b/submission.yaml", "'parameters'")


def test_a_revision_of_forty_zeros_is_refused(site_tree: SiteTree) -> None:
    data = yaml.safe_load(valid_yaml_text(site_tree, "acme__tiny-b"))
    data["model"]["revision"] = "0" * 40
    write_yaml_text(site_tree, "acme__tiny-b", yaml.safe_dump(data))
    only(site_tree, "acme__tiny-b/submission.yaml", "forty zeros is git's null id")


# ---------------------------------------------------------------------------------------------------
# Corrupted or forged results.

RESULTS = f"acme__tiny-a/results/{SET}/{VERSION}"


def test_deeply_nested_run_json_is_one_line(site_tree: SiteTree) -> None:
    (results(site_tree) / "run.json").write_text("[" * 100000 + "]" * 100000)
    only(site_tree, f"{RESULTS}/run.json", "nested deeper")


def test_a_flipped_byte_in_records_is_caught_by_the_checksum(site_tree: SiteTree) -> None:
    path = results(site_tree) / "records" / "alpaca.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    found = lines(site_tree)
    assert found[0].startswith(f"submissions/{RESULTS}/records/alpaca.parquet: sha256 differs"), found


def test_an_unlisted_results_file_is_refused(site_tree: SiteTree) -> None:
    shutil.copyfile(
        results(site_tree) / "records" / "trivia_qa.parquet",
        results(site_tree, "acme__tiny-b") / "records" / "alpaca.parquet",
    )
    found = lines(site_tree)
    assert any(
        f"acme__tiny-b/results/{SET}/{VERSION}/records/alpaca.parquet: not listed in run.json" in line
        for line in found
    ), found


def test_records_with_the_right_names_but_wrong_types(site_tree: SiteTree) -> None:
    path = results(site_tree) / "records" / "alpaca.parquet"
    pd.read_parquet(path).astype({"response_tokens": "float64"}).to_parquet(path)
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/records/alpaca.parquet", "column response_tokens is double, not integer")


def test_records_of_a_dataset_the_set_does_not_have(site_tree: SiteTree) -> None:
    folder = results(site_tree) / "records"
    shutil.copyfile(folder / "alpaca.parquet", folder / "gsm8k.parquet")
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/records/gsm8k.parquet", "dataset 'gsm8k' is not in this variant set")


def test_records_file_holding_another_datasets_rows(site_tree: SiteTree) -> None:
    folder = results(site_tree) / "records"
    shutil.copyfile(folder / "trivia_qa.parquet", folder / "alpaca.parquet")
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/records/alpaca.parquet", "rows of another dataset")


def test_run_json_of_another_model(site_tree: SiteTree) -> None:
    path = results(site_tree) / "run.json"
    run = json.loads(path.read_text())
    run["submission_model"] = {**run["submission_model"], "id": "someone/else"}
    path.write_text(json.dumps(run))
    only(site_tree, f"{RESULTS}/run.json", "submission_model differs")


def test_run_json_whose_model_ran_another_revision(site_tree: SiteTree) -> None:
    path = results(site_tree) / "run.json"
    path.write_text(
        json.dumps({**json.loads(path.read_text()), "model": {"source": "hub", "revision": "f" * 40}})
    )
    only(site_tree, f"{RESULTS}/run.json", "model.revision")


def activation_keys() -> list[str]:
    return [
        f"alpaca-{rank}|{variant}"
        for rank in range(2)
        for variant in ("baseline/none/0", "identity/global/1", "politeness/prefix/2", "spacing/suffix/5")
    ]


def write_activations(
    tree: SiteTree,
    header: dict[str, object] | None = None,
    *,
    data: bytes | None = None,
    dtype: str = "float16",
) -> Path:
    """A valid activations file for tiny-a/alpaca, or one with ``header`` (and ``data``) forged."""
    folder = results(tree) / "activations"
    folder.mkdir(exist_ok=True)
    path = folder / "alpaca.safetensors"
    save_file({k: np.zeros((3, 4), dtype=dtype) for k in activation_keys()}, str(path))
    if header is not None:
        raw = json.dumps(header).encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + (data or b""))
    rehash(tree)
    return path


def test_valid_activations_pass(site_tree: SiteTree) -> None:
    write_activations(site_tree)
    assert lines(site_tree) == []


ENTRY = {"dtype": "F16", "shape": [3, 4], "data_offsets": [0, 24]}


@pytest.mark.parametrize(
    "header, data, words",
    [
        ({"k": {**ENTRY, "data_offsets": [0, 10**12]}}, b"\0" * 24, "data_offsets span"),
        ({"k": {**ENTRY, "shape": [3, 4], "data_offsets": [24, 48]}}, b"\0" * 24, "overlap or leave a gap"),
        ({"a": ENTRY, "b": ENTRY}, b"\0" * 48, "overlap or leave a gap"),
        ({"k": ENTRY}, b"\0" * 30, "the file holds 30"),
        ({"k": {**ENTRY, "dtype": "F99"}}, b"\0" * 24, "unknown dtype"),
        ({"k": {**ENTRY, "shape": [-3, 4]}}, b"\0" * 24, "non-negative integers"),
        ({"k": {**ENTRY, "shape": [3, 4.0]}}, b"\0" * 24, "non-negative integers"),
        ({"k": {**ENTRY, "data_offsets": [0]}}, b"\0" * 24, "data_offsets"),
        ({"k": {**ENTRY, "extra": 1}}, b"\0" * 24, "is not {dtype, shape, data_offsets}"),
        ({"__metadata__": {"a": 1}, "k": ENTRY}, b"\0" * 24, "__metadata__"),
        ({"k": {"dtype": "F16", "shape": [[[[[[1]]]]]], "data_offsets": [0, 2]}}, b"\0" * 2, "nested deeper"),
    ],
    ids=[
        "offsets past the end",
        "gap",
        "overlap",
        "trailing bytes",
        "dtype",
        "negative shape",
        "float shape",
        "one offset",
        "extra field",
        "metadata",
        "deep header",
    ],
)
def test_safetensors_header_that_lies(
    site_tree: SiteTree, header: dict[str, object], data: bytes, words: str
) -> None:
    write_activations(site_tree, header, data=data)
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", words)


def test_activations_of_the_wrong_dtype_or_keys(site_tree: SiteTree) -> None:
    write_activations(site_tree, dtype="float32")
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", "neither float16")
    folder = results(site_tree) / "activations"
    save_file({"alpaca-0|nope": np.zeros((3, 4), dtype="float16")}, str(folder / "alpaca.safetensors"))
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", "keys differ from the records")


def test_rehash_records_the_files_and_nothing_else(site_tree: SiteTree) -> None:
    path = results(site_tree) / "run.json"
    before = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in before.items() if k != "files"}))
    assert "no 'files'" in only(site_tree, f"{RESULTS}/run.json", "sha256")
    assert main(["submissions", "rehash", "acme__tiny-a", "--root", str(site_tree.submissions)]) == 0
    assert json.loads(path.read_text()) == before
    assert lines(site_tree) == []


def test_bidi_controls_never_reach_a_page() -> None:
    from benchmark.site.render import environment

    name = "Tiny \u202egnp.exe \u2066isolate\u2069 \u202aembed\u202c"
    html = (
        environment()
        .from_string("<h1>{{ name }}</h1>{{ markup }}")
        .render(name=name, markup=Markup(f"<svg><text>{name}</text></svg>"))
    )
    assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in html)
    assert "gnp.exe" in html


def test_a_hidden_folder_under_submissions_is_refused(site_tree: SiteTree) -> None:
    stash = site_tree.submissions / ".stash"
    stash.mkdir()
    (stash / "blob.bin").write_bytes(b"\0" * 1024)
    only(site_tree, ".stash", "hidden folder under submissions/")


# ---------------------------------------------------------------------------------------------------
# Plausibility: numbers no run produces, and files that would cost the validator its memory.


def edit_records(
    tree: SiteTree, change: Callable[[pd.DataFrame], pd.DataFrame], dataset: str = "alpaca"
) -> None:
    """Rewrite tiny-a's records of ``dataset``, then record the new hashes and row count in run.json (a
    forger re-hashes: the content checks must catch it on their own)."""
    path = results(tree) / "records" / f"{dataset}.parquet"
    frame = change(pd.read_parquet(path))
    frame.to_parquet(path, index=False)
    edit_run(
        tree, counts={**json.loads((results(tree) / "run.json").read_text())["counts"], dataset: len(frame)}
    )
    rehash(tree)


def edit_run(tree: SiteTree, **changes: object) -> None:
    path = results(tree) / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def distinct_activations(tree: SiteTree, *, compact: bool = False) -> dict[str, np.ndarray]:
    """Activations of tiny-a/alpaca as a model gives them: a different state for every prompt."""
    rng = np.random.default_rng(7)
    arrays: dict[str, np.ndarray] = {}
    for key in activation_keys():
        if compact and not key.endswith("|baseline/none/0"):
            arrays[key] = rng.uniform(0.5, 1.0, 3)
        else:
            arrays[key] = rng.standard_normal((3, 4)).astype("float16")
    folder = results(tree) / "activations"
    folder.mkdir(exist_ok=True)
    save_file(arrays, str(folder / "alpaca.safetensors"))
    rehash(tree)
    return arrays


def copy_baselines(frame: pd.DataFrame) -> pd.DataFrame:
    """The fabricated-perfect model: every row answers and scores exactly as its item's baseline."""
    base = frame[frame["variant_id"] == "baseline/none/0"].set_index("item_id")
    copied = frame.copy()
    for column in ("response", "response_tokens", "finished", "logprob_sum", "logprob_mean", "entropy_mean"):
        copied[column] = copied["item_id"].map(base[column]).astype(frame[column].dtype)
    return copied


def test_honest_activations_pass(site_tree: SiteTree) -> None:
    distinct_activations(site_tree)
    assert lines(site_tree) == []
    distinct_activations(site_tree, compact=True)
    assert lines(site_tree) == []


def test_the_fabricated_perfect_model_is_refused(site_tree: SiteTree) -> None:
    arrays = distinct_activations(site_tree)
    edit_records(site_tree, copy_baselines)  # log-probs copied, hidden states still the model's: passes
    assert lines(site_tree) == []
    for key in activation_keys():
        item = key.split("|")[0]
        arrays[key] = arrays[f"{item}|baseline/none/0"]
    save_file(arrays, str(results(site_tree) / "activations" / "alpaca.safetensors"))
    rehash(site_tree)
    line = only(site_tree, f"{RESULTS}/records/alpaca.parquet", "4 of 4 rewritten prompts have log-probs")
    assert "look copied, not run" in line


def test_the_fabricated_perfect_model_without_activations_is_refused(site_tree: SiteTree) -> None:
    edit_records(site_tree, copy_baselines)
    only(site_tree, f"{RESULTS}/records/alpaca.parquet", "4 of 4 rewritten prompts")


SMOL = "huggingfacetb__smollm2-135m-instruct-q4_1"


@pytest.fixture
def committed_copy(tmp_path: Path) -> Path:
    """SmolLM2's committed smoke result and the v1 set, copied to a tree of their own; returns the result.

    Only the v1 result travels: the submission's results on other sets (v2's evidence run) would be
    validated too, and against a set this tree does not hold.
    """
    from benchmark.paths import SUBMISSIONS_DIR, VARIANTS_DIR

    result = Path("results") / "sago-v1" / "v1"
    shutil.copytree(VARIANTS_DIR / "sago-v1" / "v1", tmp_path / "variants" / "sago-v1" / "v1")
    shutil.copytree(
        SUBMISSIONS_DIR / SMOL, tmp_path / "submissions" / SMOL, ignore=shutil.ignore_patterns("results")
    )
    shutil.copytree(SUBMISSIONS_DIR / SMOL / result, tmp_path / "submissions" / SMOL / result)
    return tmp_path / "submissions" / SMOL / result


def committed_lines(folder: Path) -> list[str]:
    root = folder.parents[3]
    return [f.line() for f in validate_tree(root, root.parent / "variants").failures]


def test_a_committed_result_passes_and_its_fabricated_copy_does_not(committed_copy: Path) -> None:
    """The rule on a real model's records: SmolLM2's committed smoke result passes; the same result with
    every rewrite's numbers and hidden state copied from its baseline, re-hashed, is refused."""
    from safetensors.numpy import load_file

    assert committed_lines(committed_copy) == []
    for dataset in ("gsm8k", "trivia_qa"):
        records = committed_copy / "records" / f"{dataset}.parquet"
        copy_baselines(pd.read_parquet(records)).to_parquet(records, index=False)
        arrays = load_file(str(committed_copy / "activations" / f"{dataset}.safetensors"))
        for key in arrays:
            arrays[key] = arrays[f"{key.split('|')[0]}|baseline/none/0"]
        save_file(arrays, str(committed_copy / "activations" / f"{dataset}.safetensors"))
    integrity.rehash(committed_copy)
    found = committed_lines(committed_copy)
    assert [line.split(": ")[0] for line in found] == [
        f"submissions/{SMOL}/results/sago-v1/v1/records/{d}.parquet" for d in ("gsm8k", "trivia_qa")
    ], found
    assert all("163 of 163 rewritten prompts" in line for line in found), found


def test_a_paper_profile_over_smoke_records(committed_copy: Path) -> None:
    run = json.loads((committed_copy / "run.json").read_text())
    paper = {"name": "paper", "items_per_dataset": 16, "all_strengths": True, "max_new_tokens": 100}
    (committed_copy / "run.json").write_text(json.dumps({**run, "profile": {**paper, "description": "x"}}))
    found = committed_lines(committed_copy)
    assert len(found) == 7, found
    # the folder says whose run it holds (v1/: v1's board profile, smoke), and the rows say it too
    folder = [x for x in found if "profile run in" in x]
    assert (
        len(folder) == 1 and "/sago-v1/v1: a paper-profile run in v1/, which holds smoke-profile" in folder[0]
    )
    assert "move the results folder to v1-paper/" in folder[0]
    rows = [x for x in found if x not in folder]
    assert len(rows) == 6, found
    assert all(
        "rows differ from what run.json's profile 'paper' selects (16 items per dataset" in x for x in rows
    )


def test_nan_and_infinity_in_records(site_tree: SiteTree) -> None:
    def poison(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[2, "logprob_sum"] = float("nan")
        return frame

    edit_records(site_tree, poison)
    only(
        site_tree,
        f"{RESULTS}/records/alpaca.parquet",
        "logprob_sum of row 'alpaca-0|politeness/prefix/2' is nan",
    )

    def infinite(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[2, "logprob_sum"] = frame.loc[2, "logprob_mean"] * 5  # the NaN undone
        frame.loc[1, "entropy_mean"] = float("inf")
        return frame

    edit_records(site_tree, infinite)
    only(
        site_tree,
        f"{RESULTS}/records/alpaca.parquet",
        "entropy_mean of row 'alpaca-0|identity/global/1' is inf",
    )


def test_nan_where_the_contract_allows_it(site_tree: SiteTree) -> None:
    """An empty baseline answer: its log-prob sum is 0 and its mean and entropy are NaN, in every row."""

    def empty_baseline(frame: pd.DataFrame) -> pd.DataFrame:
        item = frame["item_id"] == "alpaca-0"
        frame.loc[item & (frame["variant_id"] == "baseline/none/0"), ["response", "response_tokens"]] = [
            "",
            0,
        ]
        frame.loc[item, ["baseline_tokens", "logprob_sum"]] = [0, 0.0]
        frame.loc[item, ["logprob_mean", "entropy_mean"]] = float("nan")
        return frame

    edit_records(site_tree, empty_baseline)
    assert lines(site_tree) == []


@pytest.mark.parametrize(
    "shape, model, words",
    [
        ((3, 4), {"n_layers": 5, "hidden_size": 4}, "tensors are [3, 4], but run.json's model has"),
        ((0, 4), None, "tensors of shape [0, 4] are empty"),
        ((3, 4), {"n_layers": 2, "hidden_size": 4}, None),
    ],
    ids=["layers differ from the model", "zero-size", "as the model"],
)
def test_activation_shapes_follow_the_model(
    site_tree: SiteTree, shape: tuple[int, int], model: dict[str, int] | None, words: str | None
) -> None:
    rng = np.random.default_rng(1)
    folder = results(site_tree) / "activations"
    folder.mkdir()
    save_file(
        {k: rng.standard_normal(shape).astype("float16") for k in activation_keys()},
        str(folder / "alpaca.safetensors"),
    )
    rehash(site_tree)
    if model is not None:
        run = json.loads((results(site_tree) / "run.json").read_text())
        edit_run(site_tree, model={**run["model"], **model})
    if words is None:
        assert lines(site_tree) == []
    else:
        only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", words)


def test_activations_that_no_model_produces(site_tree: SiteTree) -> None:
    arrays = distinct_activations(site_tree)
    arrays = {k: np.full_like(v, np.nan) for k, v in arrays.items()}
    save_file(arrays, str(results(site_tree) / "activations" / "alpaca.safetensors"))
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", "holds NaN")
    arrays = distinct_activations(site_tree, compact=True)
    arrays["alpaca-1|spacing/suffix/5"] = np.array([1.0, 1.5, 0.2])
    save_file(arrays, str(results(site_tree) / "activations" / "alpaca.safetensors"))
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", "outside [-1, 1]")
    arrays["alpaca-1|spacing/suffix/5"] = np.array([1.0, 0.5])
    save_file(arrays, str(results(site_tree) / "activations" / "alpaca.safetensors"))
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/activations/alpaca.safetensors", "neither float16")


@pytest.mark.parametrize(
    "change, words",
    [
        (
            lambda f: f.replace({"item_id": {"alpaca-1": "alpaca-99"}}),
            "item 'alpaca-99' is not in the variant set",
        ),
        (
            lambda f: f.replace({"variant_id": {"spacing/suffix/5": "spacing/suffix/50"}}),
            "variant 'spacing/suffix/50' of item 'alpaca-0' is not in the variant set",
        ),
        (
            lambda f: pd.concat([f, f.iloc[[3]]], ignore_index=True),
            "has more than one row for 'alpaca-0|spacing",
        ),
        (lambda f: f[f["variant_id"] != "baseline/none/0"], "item 'alpaca-0' has no baseline row"),
        (lambda f: f[f["item_id"] == "alpaca-0"], "rows differ from what run.json's profile 'smoke' selects"),
        (lambda f: f.assign(place="global"), "has another family, place or strength than the variant set"),
        (lambda f: f.assign(response_tokens=-3, baseline_tokens=-3), "response_tokens -3 of row"),
        (
            lambda f: f.assign(response_tokens=500, baseline_tokens=500),
            "over the profile's max_new_tokens 32",
        ),
        (lambda f: f.assign(finished=False), "did not finish yet stopped after 5 of 32 tokens"),
        (lambda f: f.assign(logprob_mean=-0.1), "logprob_mean is not logprob_sum / baseline_tokens"),
        (
            lambda f: f.assign(baseline_tokens=4, logprob_mean=f["logprob_sum"] / 4),
            "is not its baseline answer",
        ),
    ],
    ids=[
        "unknown item",
        "unknown variant",
        "duplicate row",
        "no baseline rows",
        "fewer items than the profile",
        "labels",
        "negative tokens",
        "tokens over the cap",
        "unfinished short answer",
        "inconsistent mean",
        "baseline tokens",
    ],
)
def test_records_no_run_produces(
    site_tree: SiteTree, change: Callable[[pd.DataFrame], pd.DataFrame], words: str
) -> None:
    edit_records(site_tree, change)
    only(site_tree, f"{RESULTS}/records/alpaca.parquet", words)


def test_a_profile_that_does_not_match_the_rows(site_tree: SiteTree) -> None:
    edit_run(site_tree, profile={**PROFILE, "items_per_dataset": 1})
    found = lines(site_tree)
    assert len(found) == 2, found  # tiny-a's two datasets
    assert all("rows differ from what run.json's profile 'smoke' selects (1 items" in x for x in found), found
    assert all(": 0 missing, 4 extra — " in x for x in found), found


def test_dates_in_the_future_or_out_of_order(site_tree: SiteTree) -> None:
    edit_run(site_tree, timings={"finished_at": "9999-12-31T00:00:00+00:00"})
    only(site_tree, f"{RESULTS}/run.json", "timings.finished_at 9999-12-31T00:00:00+00:00 is in the future")
    edit_run(
        site_tree, timings={"started_at": "2026-11-30T02:00:00+00:00", "finished_at": "2026-11-30T01:00:00"}
    )
    only(site_tree, f"{RESULTS}/run.json", "started_at is after finished_at")
    edit_run(site_tree, timings={"finished_at": "yesterday"})
    only(site_tree, f"{RESULTS}/run.json", "is not an ISO-8601 date")


def test_records_that_cover_other_datasets_than_run_json_says(site_tree: SiteTree) -> None:
    edit_run(site_tree, datasets=["alpaca"])
    only(site_tree, f"{RESULTS}/records", "records are not the datasets run.json's 'datasets' names")
    edit_run(site_tree, datasets="all")
    assert lines(site_tree) == []


# The files below would cost the validator gigabytes if it decoded them: each is refused from what it
# says about itself (footer, page headers, dictionary lengths) in a child process whose peak memory is read.


def _records_table(tree: SiteTree) -> pa.Table:
    return pq.read_table(results(tree) / "records" / "alpaca.parquet")


def _many_rows(tree: SiteTree, path: Path, rows: int, **options: object) -> None:
    table = _records_table(tree)
    pq.write_table(pa.concat_tables([table] * (rows // table.num_rows)), path, **options)  # type: ignore[arg-type]


def _decoded_bomb(tree: SiteTree, path: Path) -> None:
    """~2 GB once decoded: 40 row groups of one 50 MiB response each, zstd-compressed to a few KB each."""
    table = _records_table(tree).slice(0, 1)
    with pq.ParquetWriter(path, table.schema, compression="zstd", use_dictionary=False) as writer:
        for _ in range(40):
            writer.write_table(
                table.set_column(6, "response", pa.array(["a" * (50 << 20)], table.column(6).type))
            )


def _dictionary_bomb(tree: SiteTree, path: Path) -> None:
    """One 60 KiB answer repeated in 40,000 rows: 2.4 GB as plain strings, a few KB on disk."""
    table = pa.concat_tables([_records_table(tree).slice(0, 1)] * 40_000)
    answer = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(40_000, dtype="int32")), pa.array(["b" * 61_440])
    )
    # no stored arrow schema: a reader sees a plain string column (dictionary-encoded pages) and would
    # materialise every row's copy
    pq.write_table(table.set_column(6, "response", answer), path, compression="zstd", store_schema=False)


def _long_response(tree: SiteTree, path: Path) -> None:
    table = _records_table(tree)
    responses = table.column("response").to_pylist()
    responses[0] = "c" * (20 << 20)
    pq.write_table(
        table.set_column(6, "response", pa.array(responses, table.column(6).type)), path, compression="zstd"
    )


def _extra_columns(tree: SiteTree, path: Path) -> None:
    table = _records_table(tree)
    zeros = pa.array(np.zeros(table.num_rows))
    pq.write_table(
        pa.table(
            {**{n: table.column(n) for n in table.column_names}, **{f"x{i}": zeros for i in range(20_000)}}
        ),
        path,
    )


@pytest.mark.parametrize(
    "write, words",
    [
        (_decoded_bomb, "decodes to 2000.0 MiB by its own metadata, over the 256.0 MiB limit"),
        (_dictionary_bomb, "has string values that decode to more than 256.0 MiB"),
        (_long_response, "holds a 20.0 MiB string value, over the 64.0 KiB limit"),
        (_extra_columns, "footer, over the 1.0 MiB limit"),
        (
            lambda t, p: _many_rows(t, p, 8752, row_group_size=1),
            "has a 12.9 MiB footer, over the 1.0 MiB limit",
        ),
        (lambda t, p: _many_rows(t, p, 800, row_group_size=8), "has 100 row groups, over the limit of 64"),
        (lambda t, p: _many_rows(t, p, 1_000_000), "has 1000000 rows, over the limit of 50000"),
    ],
    ids=[
        "decoded-size bomb",
        "dictionary bomb",
        "20 MB response",
        "20,000 extra columns",
        "8,752 row groups",
        "100 row groups",
        "10**6 rows",
    ],
)
def test_hostile_parquet_is_refused_in_bounded_time_and_memory(
    site_tree: SiteTree, write: Callable[[SiteTree, Path], None], words: str
) -> None:
    path = results(site_tree) / "records" / "alpaca.parquet"
    write(site_tree, path)
    assert path.stat().st_size <= validate_results.SIZE_LIMITS["records"]  # the size limit lets it through
    rehash(site_tree)
    script = (  # VmHWM: this process's peak resident memory (ru_maxrss would carry pytest's across exec)
        "import re, sys, time; from pathlib import Path\n"
        "from benchmark.submissions.validate import validate_tree\n"
        "started = time.perf_counter()\n"
        "lines = [f.line() for f in validate_tree(Path(sys.argv[1]), Path(sys.argv[2])).failures]\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+)', Path('/proc/self/status').read_text()).group(1)\n"
        "print(time.perf_counter() - started, peak)\n"
        "print('\\n'.join(lines))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(site_tree.submissions), str(site_tree.variants)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    stats, *found = done.stdout.splitlines()
    seconds, peak_kib = stats.split()
    assert found == [
        line for line in found if line.startswith(f"submissions/{RESULTS}/records/alpaca.parquet: ")
    ]
    assert len(found) == 1 and words in found[0] and len(found[0]) < 300, found
    assert float(seconds) < 10 and int(peak_kib) < 600 * 1024, (seconds, peak_kib)
    print(f"{words}: {float(seconds):.2f} s, peak {int(peak_kib) // 1024} MiB")  # shown with -s


def test_lying_page_sizes_are_caught_by_the_page_walk(
    site_tree: SiteTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the footer's (honest) sizes, the page headers read from the file still refuse the bomb."""
    from benchmark import parquet_check

    monkeypatch.setattr(parquet_check, "_check_stated_sizes", lambda metadata, limits: None)
    path = results(site_tree) / "records" / "alpaca.parquet"
    _decoded_bomb(site_tree, path)
    rehash(site_tree)
    only(site_tree, f"{RESULTS}/records/alpaca.parquet", "has pages that decompress to more than 256.0 MiB")


def test_run_json_naming_two_variant_sets_is_refused(site_tree: SiteTree) -> None:
    """The flat ``variant_set_sha256`` (what `sago evaluate` skips by) and the nested
    ``variant_set.sha256`` (what older files carry) must name the same set: a forged pair could pass one
    reader and fool the other."""
    run = json.loads((results(site_tree) / "run.json").read_text())
    nested = run.get("variant_set") or {"name": SET, "version": VERSION}
    flat = run.get("variant_set_sha256") or nested["sha256"]
    edit_run(site_tree, variant_set={**nested, "sha256": "f" * 64}, variant_set_sha256=flat)
    only(site_tree, f"{RESULTS}/run.json", "variant_set_sha256 and variant_set.sha256 differ")


def test_repair_puts_back_a_result_folder_moved_aside_and_removes_a_partial_copy(site_tree: SiteTree) -> None:
    """`sago submissions repair`: a kill between replace_folder's renames leaves only ``.v1.old``; a kill in
    finalize leaves ``.v1.finalizing``. After repair the tree validates as before."""
    from benchmark.cli import main

    folder = results(site_tree)
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    shutil.copytree(folder, folder.with_name(".v1.finalizing"))
    folder.rename(folder.with_name(".v1.old"))
    assert main(["submissions", "repair", "--root", str(site_tree.submissions)]) == 0
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before
    assert sorted(p.name for p in folder.parent.iterdir()) == [VERSION]
    assert lines(site_tree) == []
    assert main(["submissions", "repair", "--root", str(site_tree.submissions)]) == 0  # nothing left


API_SLUG = "huggingfacetb__smollm2-135m-instruct-q4_1-llama-server"


@pytest.mark.parametrize(
    ("tamper", "words"),
    [
        (lambda t: t.assign(own_prob_mean=t["own_prob_mean"].where(t.index != 0, 1.5)), "not in (0, 1]"),
        (lambda t: t.assign(own_prob_mean=t["own_prob_mean"].where(t.index != 0, np.nan)), "not in (0, 1]"),
        (lambda t: t.assign(own_tokens=t["own_tokens"].astype(str)), "own_tokens"),
        (lambda t: t.iloc[1:], "rows for"),
        (None, "missing: an API run's own-token confidence"),
    ],
    ids=["prob-above-1", "prob-nan", "tokens-as-text", "a-row-short", "missing"],
)
def test_an_api_runs_own_confidence_is_checked_against_its_declaration(
    tmp_path: Path, tamper: Callable[[pd.DataFrame], pd.DataFrame] | None, words: str
) -> None:
    """The committed API result, with one own-confidence table broken (and run.json rehashed, so only this
    check can fire): one failure line on that file."""
    root = tmp_path / "submissions"
    shutil.copytree(Path(__file__).resolve().parents[1] / "submissions" / API_SLUG, root / API_SLUG)
    folder = root / API_SLUG / "results" / "sago-v1" / "v2"
    path = folder / "own_confidence" / "trivia_qa.parquet"
    if tamper is None:
        path.unlink()
    else:
        pq.write_table(pa.Table.from_pandas(tamper(pd.read_parquet(path)), preserve_index=False), path)
    integrity.rehash(folder)
    found = [f.line() for f in validate_tree(root).failures]
    assert len(found) == 1 and "own_confidence/trivia_qa.parquet" in found[0] and words in found[0], found
