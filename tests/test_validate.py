"""`sago submissions validate`: a clean tree passes, and each kind of bad submission is one named line."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from markupsafe import Markup
from safetensors.numpy import save_file
from test_site_fixture import SET, VERSION, SiteTree, make_site_tree

from benchmark.cli import main
from benchmark.harness import finalize
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
    finalize.rehash(results(tree, slug))


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
    only(site_tree, "acme__tiny-b/submission.yaml", "model.hub.revision")


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
    only(site_tree, "acme__tiny-a/results/other-set/v9", "does not exist in variants/")


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
    line = only(site_tree, "acme__tiny-c/submission.yaml", "model.hub.revision")
    assert "read the value as a number: put it in quotes" in line


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
    only(site_tree, "acme__a-copy/submission.yaml", "same weights as submission 'acme__tiny-a'")


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
