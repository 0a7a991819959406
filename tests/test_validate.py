"""`sago submissions validate`: a clean tree passes, and each kind of bad submission is one named line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from test_site_fixture import SET, VERSION, SiteTree, make_site_tree

from benchmark.cli import main
from benchmark.harness import finalize
from benchmark.site import validate_results
from benchmark.site.cli import submissions
from benchmark.site.validate import validate_tree

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
    edit_yaml(site_tree, "acme__tiny-c", model={"kind": "packaged", "artefact": "smollm2-135m-instruct-q4_1",
                                                "sha256": "0" * 64})
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
    assert any(line.startswith("submissions/acme__tiny-b/README.md: is a symbolic link") for line in found), found


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
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/records/alpaca.parquet", "does not load as parquet")


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
        f"submissions/acme__tiny-a/results/{SET}/{VERSION}/records/alpaca.csv"], found


def test_bad_safetensors_header(site_tree: SiteTree) -> None:
    folder = results(site_tree) / "activations"
    folder.mkdir()
    (folder / "alpaca.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    rehash(site_tree)
    only(site_tree, f"acme__tiny-a/results/{SET}/{VERSION}/activations/alpaca.safetensors", "not a safetensors")


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
    args = ["submissions", "validate", "--root", str(site_tree.submissions), "--variants", str(site_tree.variants)]
    assert main(args) == 0
    (site_tree.submissions / "stray.txt").write_text("x")
    assert main(args) == 1
    result = CliRunner().invoke(submissions, args[1:])
    assert result.exit_code == 1
    assert "submissions/stray.txt: stray file at the top of submissions/ — " in result.output


def test_cli_refuses_a_missing_root(tmp_path: Path) -> None:
    assert main(["submissions", "validate", "--root", str(tmp_path / "nope")]) == 2
