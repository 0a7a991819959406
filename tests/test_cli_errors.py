"""Bad input through the `sago` entry point: one line on stderr, exit status 2, nothing overwritten.

The matrix runs every command against each kind of bad input on a small, complete checkout in a tmp
folder (variant set, submissions with results, leaderboard, a previously built site) and asserts the
one rule: non-zero exit, exactly one line on stderr, no traceback, and every file that existed before
is byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from helpers.checkout import install_site_tree, snapshot
from helpers.site_tree import SET, VERSION, SiteTree
from helpers.toy import toy_variant_set

from benchmark.cli import main
from benchmark.errors import SagoError
from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission
from benchmark.models.fake import FakeBackend
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION as LB_VERSION

SLUG = "acme__tiny-a"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(argv)
    return status, capsys.readouterr().err.strip()


def test_unknown_set_version_does_not_write_a_leaderboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "leaderboard.json"
    status, err = run(["analyze", "--version", "v9", "--out", str(out)], capsys)
    assert status == 2 and err.startswith("error: no variant set") and "\n" not in err
    assert not out.exists()


def test_missing_explicit_leaderboard_does_not_replace_the_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the real site")
    status, err = run(
        ["leaderboard", "build", "--input", str(tmp_path / "nope.json"), "--out", str(site)], capsys
    )
    assert status == 2 and "does not exist" in err
    assert (site / "index.html").read_text() == "the real site"


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["evaluate", "../etc__passwd"], "invalid submission name"),
        (["evaluate", "nosuch__model"], "no submission.yaml"),
        (
            ["evaluate", "huggingfacetb__smollm2-135m-instruct-q4_1", "--profile", "smok"],
            "did you mean 'smoke'",
        ),
        (["variants", "verify", "--set", "nope"], "no variant set"),
    ],
)
def test_one_line_errors(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = run(argv, capsys)
    assert status == 2
    assert err.startswith("error: ") and needle in err and "\n" not in err


# ---------------------------------------------------------------------------------------------------
# The matrix: command x bad input on a fixture checkout.


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SiteTree:
    return install_site_tree(tmp_path, monkeypatch)


def manifest_path(tree: SiteTree) -> Path:
    return tree.variants / SET / VERSION / "manifest.json"


def edit_manifest(change: Callable[[dict[str, object]], object]) -> Callable[[SiteTree], None]:
    def apply(tree: SiteTree) -> None:
        data = json.loads(manifest_path(tree).read_text())
        result = change(data)  # a list replaces the manifest; anything else (None, a popped value) edits it
        manifest_path(tree).write_text(json.dumps(result if isinstance(result, list) else data))

    return apply


def write_manifest_bytes(data: bytes) -> Callable[[SiteTree], None]:
    return lambda tree: manifest_path(tree).write_bytes(data)


def write_board(text: str) -> Callable[[SiteTree], None]:
    return lambda tree: tree.leaderboard.write_text(text)


def flip_byte(relative: str) -> Callable[[SiteTree], None]:
    def apply(tree: SiteTree) -> None:
        path = tree.submissions / SLUG / "results" / SET / VERSION / relative
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))

    return apply


def nothing(tree: SiteTree) -> None:
    """The bad input is in the command line only."""


NO_GPU = "cuda" if not torch.cuda.is_available() else "cuda:99"
T = "{root}"  # replaced by the tmp folder
ON = ["--version", VERSION]
"""The fixture's set version (the commands default to the published board's): last in every command line,
so the cases below may cut the lists at fixed places."""
EVALUATE = ["evaluate", SLUG, "--force", "--no-progress", "--version", VERSION]
BUILD = [
    "leaderboard",
    "build",
    "--input",
    f"{T}/leaderboard/leaderboard.json",
    "--out",
    f"{T}/site",
    "--submissions",
    f"{T}/submissions",
    "--variants",
    f"{T}/variants",
    *ON,
]
ANALYZE = [
    "analyze",
    "--submissions-dir",
    f"{T}/submissions",
    "--out",
    f"{T}/leaderboard/leaderboard.json",
    "--resamples",
    "100",
    *ON,
]
VARIANTS = ["--root", f"{T}/variants", "--version", VERSION]
MALFORMED_MANIFESTS = {
    "schema_version is a string": edit_manifest(lambda m: m.update(schema_version="1")),
    "a list": edit_manifest(lambda m: [m]),
    "not UTF-8": write_manifest_bytes(b'{"schema_version": 1, "set": "\xff"}'),
    "no datasets": edit_manifest(lambda m: m.pop("datasets")),
    "files is a list": edit_manifest(lambda m: m.update(files=list(m["files"]))),  # type: ignore[call-overload]
    "empty": write_manifest_bytes(b""),
    "deeply nested": write_manifest_bytes(b"[" * 5000 + b"]" * 5000),
    "duplicate key": write_manifest_bytes(b'{"schema_version": 1, "schema_version": 1}'),
}

CASES: list[tuple[str, list[str], Callable[[SiteTree], None], str]] = [
    # evaluate --force: every option is checked before a committed file is touched
    ("evaluate bad --datasets", [*EVALUATE, "--datasets", "nosuch"], nothing, "unknown dataset"),
    ("evaluate bad --device", [*EVALUATE, "--device", "nosuch"], nothing, "--device"),
    ("evaluate --device without a GPU", [*EVALUATE, "--device", NO_GPU], nothing, "--device"),
    ("evaluate bad --device-map", [*EVALUATE, "--device-map", "bogus"], nothing, "--device-map"),
    ("evaluate bad --profile", [*EVALUATE, "--profile", "smok"], nothing, "did you mean"),
    ("evaluate bad --engine", [*EVALUATE, "--engine", "fast"], nothing, "engine"),
    ("evaluate unknown set", [*EVALUATE, "--set", "nope"], nothing, "no variant set"),
    *[
        (f"evaluate manifest {name}", EVALUATE, corrupt, "manifest.json")
        for name, corrupt in MALFORMED_MANIFESTS.items()
    ],
    (
        "evaluate edited parquet",
        EVALUATE,
        lambda t: (t.variants / SET / VERSION / "data" / "alpaca.parquet").write_bytes(b"PAR1 not really"),
        "sha256",
    ),
    # analyze: inputs and output checked first
    (
        "analyze missing --submissions-dir",
        ["analyze", "--submissions-dir", f"{T}/typo", "--out", f"{T}/lb.json", *ON],
        nothing,
        "not a folder",
    ),
    (
        "analyze empty --submissions-dir",
        ["analyze", "--submissions-dir", f"{T}/leaderboard", "--out", f"{T}/lb.json", *ON],
        nothing,
        "no submission folders",
    ),
    (
        "analyze --out in a missing folder",
        ["analyze", "--submissions-dir", f"{T}/submissions", "--out", f"{T}/missing/dir/x.json", *ON],
        nothing,
        "does not exist",
    ),
    (
        "analyze --out is a folder",
        ["analyze", "--submissions-dir", f"{T}/submissions", "--out", f"{T}/site", *ON],
        nothing,
        "directory",
    ),
    ("analyze unknown --slug", [*ANALYZE, "--slug", "acme__nobody"], nothing, "no submission folder"),
    ("analyze byte-flipped records", ANALYZE, flip_byte("records/alpaca.parquet"), "sha256 differs"),
    ("analyze truncated deltas", ANALYZE, lambda t: _truncate_deltas(t), "deltas.parquet"),
    (
        "analyze broken submission.yaml",
        ANALYZE,
        lambda t: (t.submissions / "acme__tiny-c" / "submission.yaml").write_text("a: &x 1\nb: *x\n"),
        "alias",
    ),
    # leaderboard build: nothing replaces the published site unless every input is there
    (
        "build --submissions typo",
        [*BUILD[:6], "--submissions", f"{T}/typo", *BUILD[8:]],
        nothing,
        "not a folder",
    ),
    ("build --variants typo", [*BUILD[:8], "--variants", f"{T}/typo", *ON], nothing, "not a folder"),
    (
        "build empty --submissions",
        [*BUILD[:6], "--submissions", f"{T}/site", *BUILD[8:]],
        nothing,
        "no submission folders",
    ),
    (
        "build --input typo",
        ["leaderboard", "build", "--input", f"{T}/typo.json", *BUILD[4:]],
        nothing,
        "does not exist",
    ),
    (
        "build --out is a file",
        [*BUILD[:4], "--out", f"{T}/site/index.html", *BUILD[6:]],
        nothing,
        "is a file",
    ),
    (
        "build --out in a missing folder",
        [*BUILD[:4], "--out", f"{T}/missing/site", *BUILD[6:]],
        nothing,
        "does not exist",
    ),
    # outputs that are not a regular file or folder, or in a folder nothing can be created in
    ("analyze --out a device", [*ANALYZE[:3], "--out", "/dev/full", *ANALYZE[5:]], nothing, "not a regular"),
    ("build --out a device", [*BUILD[:4], "--out", "/dev/full", *BUILD[6:]], nothing, "not a folder"),
    (
        "export lm-eval --out under /proc",
        ["export", "lm-eval", "--out", "/proc/sago-x", *ON],
        nothing,
        "cannot create files in /proc",
    ),
    # a killed evaluation's leftovers: the board is not built over a result folder that may be missing
    ("analyze with a .old leftover", ANALYZE, lambda t: _leftover(t, ".v1.old"), "sago submissions repair"),
    ("build with a .old leftover", BUILD, lambda t: _leftover(t, ".v1.old"), "sago submissions repair"),
    (
        "build with a .finalizing leftover",
        BUILD,
        lambda t: _leftover(t, ".v1.finalizing"),
        "sago submissions repair",
    ),
    # evaluate without --force: never replaces a finished result of another dataset selection (a run of
    # another profile has a folder of its own, <version>-<profile>/); an empty selection
    (
        "evaluate another dataset selection over a result",
        ["evaluate", SLUG, "--no-progress", "--datasets", "trivia_qa", *ON],
        nothing,
        "--force to replace it",
    ),
    ("evaluate --datasets ''", [*EVALUATE, "--datasets", ""], nothing, "names no dataset"),
    ("evaluate --datasets ',,,'", [*EVALUATE, "--datasets", ",,,"], nothing, "names no dataset"),
    (
        "build leaderboard missing keys",
        BUILD,
        write_board(f'{{"schema_version": {LB_VERSION}}}'),
        "missing",
    ),
    (
        "build leaderboard wrong types",
        BUILD,
        write_board(
            f'{{"schema_version": {LB_VERSION}, "set": "sago-v1", "version": "v1", "models": "x", '
            '"datasets": [], "measures": [], "epsilons": [], "primary_epsilon": 0.05, "markers": []}'
        ),
        "models: expected a list",
    ),
    (
        "build leaderboard row of the wrong type",
        BUILD,
        lambda t: _board_edit(t, cells=[1, 2]),
        "cells.0: expected an object",
    ),
    (
        "build leaderboard model name not text",
        BUILD,
        lambda t: _board_edit(t, measures=[{"name": 3}]),
        "measures: expected text or null in row 0's 'name'",
    ),
    ("build leaderboard not JSON", BUILD, write_board("{oops"), "not valid JSON"),
    ("build leaderboard empty", BUILD, write_board(""), "empty"),
    ("build leaderboard deeply nested", BUILD, write_board("[" * 100000 + "]" * 100000), "nested"),
    (
        "build variant set missing",
        BUILD,
        lambda t: shutil.rmtree(t.variants / SET),
        "no such frozen variant set",
    ),
    # variants verify / list / publish / download
    *[
        (f"verify manifest {name}", ["variants", "verify", *VARIANTS], corrupt, "manifest.json")
        for name, corrupt in MALFORMED_MANIFESTS.items()
    ],
    *[
        (f"list manifest {name}", ["variants", "list", "--root", f"{T}/variants"], corrupt, "manifest.json")
        for name, corrupt in MALFORMED_MANIFESTS.items()
    ],
    (
        "verify wrong --expected-sha256",
        ["variants", "verify", *VARIANTS, "--expected-sha256", "0" * 64],
        nothing,
        "not the published",
    ),
    (
        "verify malformed --expected-sha256",
        ["variants", "verify", *VARIANTS, "--expected-sha256", "abc"],
        nothing,
        "64-hex",
    ),
    (
        "verify unlisted file",
        ["variants", "verify", *VARIANTS],
        lambda t: (t.variants / SET / VERSION / "notes.txt").write_text("x"),
        "not listed",
    ),
    (
        "verify rows edited",
        ["variants", "verify", *VARIANTS],
        edit_manifest(lambda m: m["datasets"]["alpaca"].update(rows=7)),
        "rows",
    ),  # type: ignore[index]
    (
        "verify dataset removed",
        ["variants", "verify", *VARIANTS],  # real manifests carry dataset_order
        edit_manifest(lambda m: m.update(dataset_order=sorted(m["datasets"])) or m["datasets"].pop("alpaca")),
        "dataset_order",
    ),  # type: ignore[attr-defined]
    (
        "verify dataset removed with its order",
        ["variants", "verify", *VARIANTS],
        edit_manifest(
            lambda m: (
                m.update(counts={"alpaca": {"baseline": 2}, "trivia_qa": {"baseline": 2}})
                or m["datasets"].pop("alpaca")
            )
        ),
        "counts: expected only datasets that are in 'datasets'",
    ),  # type: ignore[attr-defined]
    (
        "verify file dropped from the list",
        ["variants", "verify", *VARIANTS],
        edit_manifest(lambda m: m["files"].pop("data/alpaca.parquet")),
        "datasets: expected alpaca's file to be listed in 'files'",
    ),  # type: ignore[attr-defined]
    (
        "verify parquet of another dataset",
        ["variants", "verify", *VARIANTS],
        lambda t: _swap_tables(t),
        "another",
    ),
    ("list missing --root", ["variants", "list", "--root", f"{T}/typo"], nothing, "not a folder"),
    (
        "publish unverified set",
        ["variants", "publish", *VARIANTS, "--repo-id", "a/b", "--tag", "v1"],
        lambda t: (t.variants / SET / VERSION / "notes.txt").write_text("x"),
        "not listed",
    ),
    (
        "download unreachable repository",
        ["variants", "download", *VARIANTS, "--repo-id", "nobody/nothing", "--revision", "v1"],
        nothing,
        "failed",
    ),
    # submissions
    ("validate missing --root", ["submissions", "validate", "--root", f"{T}/typo"], nothing, "not a folder"),
    (
        "rehash unknown submission",
        ["submissions", "rehash", "acme__nobody", "--root", f"{T}/submissions"],
        nothing,
        "nothing to rehash",
    ),
    (
        "rehash broken run.json",
        ["submissions", "rehash", SLUG, "--root", f"{T}/submissions"],
        lambda t: (t.submissions / SLUG / "results" / SET / VERSION / "run.json").write_text("[1, 2"),
        "not valid JSON",
    ),
    # lm-evaluation-harness: export and import
    (
        "export lm-eval unknown dataset",
        ["export", "lm-eval", "--version", VERSION, "--datasets", "nosuch", "--out", f"{T}/tasks"],
        nothing,
        "unknown dataset",
    ),
    (
        "export lm-eval over a folder of other files",
        ["export", "lm-eval", "--version", VERSION, "--out", f"{T}/leaderboard"],
        nothing,
        "which an export does not write",
    ),
    (
        "import lm-eval not a samples file",
        ["import", "lm-eval", f"{T}/leaderboard/leaderboard.json", "--version", VERSION, "--out", f"{T}/x"],
        nothing,
        "not an lm-eval samples file",
    ),
    (
        "import lm-eval missing samples file",
        [
            "import",
            "lm-eval",
            f"{T}/samples_t_2026-01-01T00-00-00.jsonl",
            "--version",
            VERSION,
            "--out",
            f"{T}/x",
        ],
        nothing,
        "samples_t_2026-01-01T00-00-00.jsonl: no such file",
    ),
    (
        "import lm-eval into the submissions folder",
        ["import", "lm-eval", f"{T}/s.jsonl", "--version", VERSION, "--out", f"{T}/submissions/{SLUG}/x"],
        nothing,
        "stays off the board",
    ),
]


def _truncate_deltas(tree: SiteTree) -> None:
    path = tree.submissions / SLUG / "results" / SET / VERSION / "deltas.parquet"
    path.write_bytes(path.read_bytes()[:100])  # newest file, so analyze reads it instead of recomputing


def _board_edit(tree: SiteTree, **changes: object) -> None:
    tree.leaderboard.write_text(json.dumps({**json.loads(tree.leaderboard.read_text()), **changes}))


def _swap_tables(tree: SiteTree) -> None:
    """trivia_qa's table under alpaca's name, with the manifest re-hashed to match (a forged set)."""
    folder = tree.variants / SET / VERSION
    shutil.copyfile(folder / "data" / "trivia_qa.parquet", folder / "data" / "alpaca.parquet")
    data = json.loads(manifest_path(tree).read_text())
    data["files"]["data/alpaca.parquet"] = data["files"]["data/trivia_qa.parquet"]
    manifest_path(tree).write_text(json.dumps(data))


@pytest.mark.parametrize("argv, corrupt, needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(
    world: SiteTree,
    argv: list[str],
    corrupt: Callable[[SiteTree], None],
    needle: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corrupt(world)
    before = snapshot(world.root)
    status = main([a.replace(T, str(world.root)) for a in argv])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert status != 0
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: ") and "Traceback" not in captured.err + captured.out, err
    assert needle in err, err
    assert snapshot(world.root) == before


def test_the_matrix_covers_every_command() -> None:
    covered = {
        (c[1][0], c[1][1])
        if c[1][0] in ("variants", "leaderboard", "submissions", "export", "import")
        else (c[1][0],)
        for c in CASES
    }
    assert covered >= {
        ("evaluate",),
        ("analyze",),
        ("leaderboard", "build"),
        ("variants", "verify"),
        ("variants", "list"),
        ("variants", "publish"),
        ("variants", "download"),
        ("submissions", "validate"),
        ("submissions", "rehash"),
        ("export", "lm-eval"),
        ("import", "lm-eval"),
    }


def test_a_forced_run_that_fails_keeps_the_committed_results(world: SiteTree) -> None:
    """--force replaces results only when the new run finished: a crash mid-run loses nothing."""
    out = world.submissions / SLUG / "results" / SET / VERSION
    before = snapshot(out)

    class Crashing(FakeBackend):
        def run(self, *args: object, **kwargs: object) -> list[object]:
            raise SagoError("the model crashed")

    variant_set = toy_variant_set(("alpha",), n_items=2)
    options = EvaluateOptions(version=VERSION, force=True, progress=False)
    with pytest.raises(SagoError, match="crashed"):
        evaluate_submission(
            SLUG, options, root=world.submissions, backend=Crashing(), variant_set=variant_set
        )
    assert {k: v for k, v in snapshot(out).items() if not k.startswith("checkpoint/")} == before
    # and a forced run that finishes replaces everything, with the new files hashed in run.json
    evaluate_submission(SLUG, options, root=world.submissions, backend=FakeBackend(), variant_set=variant_set)
    run = json.loads((out / "run.json").read_text())
    assert sorted(run["files"]) == ["activations/alpha.safetensors", "records/alpha.parquet"]
    assert not (out / "deltas.parquet").exists() and not (out / "checkpoint").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == [VERSION]  # no scratch folder left behind


def fake_fetch(source: Path, corrupt: Callable[[Path], None] | None = None) -> Callable[..., str]:
    """A stand-in for ``snapshot_download``: the set's files plus the Hub's download metadata."""

    def fetch(**kwargs: object) -> str:
        local = Path(str(kwargs["local_dir"]))
        shutil.copytree(source, local)
        (local / ".gitattributes").write_text("*.parquet filter=lfs\n")
        (local / ".cache").mkdir()
        if corrupt is not None:
            corrupt(local / "manifest.json")
        return str(local)

    return fetch


@pytest.mark.parametrize("name", sorted(MALFORMED_MANIFESTS))
def test_download_of_a_malformed_manifest_is_one_line(world: SiteTree, tmp_path: Path, name: str) -> None:
    from benchmark.variants.hub import download

    source = world.variants / SET / VERSION
    corrupted = SiteTree(tmp_path / "snap", tmp_path / "snap", tmp_path, tmp_path)

    def corrupt(manifest: Path) -> None:
        (corrupted.variants / SET / VERSION).mkdir(parents=True)
        shutil.copyfile(manifest, corrupted.variants / SET / VERSION / "manifest.json")
        MALFORMED_MANIFESTS[name](corrupted)
        shutil.copyfile(corrupted.variants / SET / VERSION / "manifest.json", manifest)

    with pytest.raises(SagoError) as caught:
        download("a/b", "v1", SET, VERSION, root=tmp_path / "fresh", fetch=fake_fetch(source, corrupt))
    assert "\n" not in str(caught.value) and "manifest.json" in str(caught.value)
    assert not (tmp_path / "fresh").exists()


def test_download_keeps_hub_metadata_out_and_checks_the_published_hash(
    world: SiteTree, tmp_path: Path
) -> None:
    from benchmark.variants.hub import download

    source = world.variants / SET / VERSION
    with pytest.raises(SagoError, match="not the published"):
        download(
            "a/b",
            "v1",
            SET,
            VERSION,
            root=tmp_path / "fresh",
            fetch=fake_fetch(source),
            expected_sha256="0" * 64,
        )
    assert not (tmp_path / "fresh").exists()
    got = download(
        "a/b",
        "v1",
        SET,
        VERSION,
        root=tmp_path / "fresh",
        fetch=fake_fetch(source),
        expected_sha256=hashlib.sha256((source / "manifest.json").read_bytes()).hexdigest(),
    )
    assert sorted(p.name for p in got.path.iterdir()) == ["data", "manifest.json"]


def _leftover(tree: SiteTree, name: str) -> None:
    """What a kill between finalize's writes or replace_folder's renames leaves beside a result folder."""
    shutil.copytree(
        tree.submissions / SLUG / "results" / SET / VERSION, tree.submissions / SLUG / "results" / SET / name
    )


SMOLLM2 = "huggingfacetb__smollm2-135m-instruct-q4_1"


@pytest.mark.parametrize(
    "argv",
    [[SMOLLM2, "--force"], ["--all"], [SMOLLM2, "--num-processes", "2"], [SMOLLM2, "acme__other"]],
    ids=["force", "all", "ranks", "two slugs"],
)
def test_a_second_worker_helps_one_started_one_process_run(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run(["evaluate", "--second-worker", *argv], capsys)
    assert status == 2 and err.startswith("error: --second-worker helps one") and "\n" not in err


def test_a_second_worker_is_refused_before_a_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No started run, or a model behind an endpoint: refused, no model loaded, no file written."""
    from benchmark.harness.evaluate import evaluate_model
    from benchmark.paths import SUBMISSIONS_DIR
    from benchmark.submissions import load_submission

    def no_loading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("benchmark.models.loading.load_backend", no_loading)
    options = EvaluateOptions(version="v2", profile="smoke", progress=False, second_worker=True)
    local = load_submission("huggingfacetb__smollm2-135m-instruct-q4_1", SUBMISSIONS_DIR)
    with pytest.raises(SagoError, match="holds no started one-process run"):
        evaluate_model(local, options, tmp_path / "out", label="local")
    assert not (tmp_path / "out").exists()
    plan = tmp_path / "api" / "checkpoint" / "rank-0" / "plan.json"
    plan.parent.mkdir(parents=True)
    plan.write_text("{}")
    api = load_submission("huggingfacetb__smollm2-135m-instruct-q4_1-llama-server", SUBMISSIONS_DIR)
    with pytest.raises(SagoError, match="is for local models"):
        evaluate_model(api, options, tmp_path / "api", label="api")
    assert sorted(p.name for p in plan.parent.iterdir()) == ["plan.json"]
