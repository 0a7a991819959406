"""A second profile of the board: runs of another profile live in ``<version>-<profile>/``, are analysed
into a board of their own, rendered beside the published one, and compared with it on one page.

The end-to-end test builds two profiles × two stand-in models (``FakeBackend``: every harness, analyze
and site code path, without minutes of generation on a shared CPU) in a tmp folder and recomputes every
number of the comparison with its own code: the per-item changes from the two summaries, the exact
sign-flip p by enumerating every sign vector, Holm by hand, the cut shares from the records.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.toy import fake_run, freeze_toy_set, submit_hub_model

from benchmark.documents import LeaderboardDocument
from benchmark.errors import SagoError
from benchmark.harness.cli import scratch_next_steps
from benchmark.harness.evaluate import EvaluateOptions, run_folder
from benchmark.pipeline import origin
from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
from benchmark.profiles import board_profile, parse_results_folder_name, results_folder_name
from benchmark.results import ResultsFolder, profile_board_path, results_dir
from benchmark.rows import PerItemRow
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION
from benchmark.site.board import Board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.cli import profile_boards
from benchmark.site.profiles import comparison_view, ranking_sentence
from benchmark.stats.profile_compare import profile_comparison
from benchmark.submissions.validate import validate_tree
from benchmark.variants.frozen import VariantSet, load_variant_set

SET, VERSION, OTHER = "sago-v1", "v1", "paper"
SLUGS = ("acme__tiny-one", "acme__tiny-two")
ALPHA = 0.05


def test_the_board_profile_of_each_version_names_its_folder() -> None:
    assert (board_profile("v2"), board_profile("v1"), board_profile("v9")) == ("evidence", "smoke", "smoke")
    assert results_folder_name("v2", "paper") == "v2-paper"
    assert results_folder_name("v2", "evidence") == results_folder_name("v2") == "v2"
    assert results_folder_name("v2", "smoke") == "v2-smoke"  # `sago evaluate`'s default no longer hits v2/
    assert parse_results_folder_name("v2-paper") == ("v2", "paper")
    assert parse_results_folder_name("v2-nonsense") == ("v2-nonsense", "smoke")
    root = Path("/s")
    assert results_dir("ab__cd", "s", "v2", root, profile="paper").name == "v2-paper"
    assert ResultsFolder.of("ab__cd", "s", "v2", root).path.name == "v2"
    with pytest.raises(SagoError, match="unknown profile"):
        results_folder_name("v2", "papr")
    assert profile_board_path(Path("lb"), SET, "v2", "paper").as_posix() == (
        "lb/profiles/sago-v1/v2-paper/leaderboard.json"
    )
    with pytest.raises(SagoError, match="board profile"):
        profile_board_path(Path("lb"), SET, "v2", "evidence")


def run_both_profiles(submissions: Path, variants: VariantSet) -> None:
    """Each model: a smoke run (the board profile of v1) in v1/, a paper run in v1-paper/."""
    for index, slug in enumerate(SLUGS, start=1):
        submit_hub_model(submissions, slug, index)
        for profile in ("smoke", OTHER):
            out = results_dir(slug, SET, VERSION, submissions, profile=profile)
            fake_run(submissions, slug, variants, out, hidden=8 * index, profile=profile)


def holm(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def exact_two_sided(d: np.ndarray) -> float:
    sums = [
        abs(sum(s * x for s, x in zip(signs, d, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(d))
    ]
    observed = abs(float(d.sum()))
    return sum(s >= observed - 1e-9 * max(1.0, observed) for s in sums) / len(sums)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("profiles")
    with (
        pytest.MonkeyPatch.context() as patch
    ):  # the autouse registry fixture is per test; this is per module
        registry = root / "cache" / origin.REGISTRY
        patch.setattr(origin, "registry", lambda: registry)
        return _build(root)


def _build(root: Path) -> Path:
    variants = freeze_toy_set(root / "variants")
    submissions = root / "submissions"
    run_both_profiles(submissions, variants)
    board = root / "leaderboard" / "leaderboard.json"
    board.parent.mkdir()
    run_analysis(AnalyzeRequest(SET, VERSION, submissions, board), variant_frames=variants.frames)
    other = profile_board_path(root / "leaderboard", SET, VERSION, OTHER)
    other.parent.mkdir(parents=True)
    request = AnalyzeRequest(SET, VERSION, submissions, other, profile=OTHER, compare_with=board)
    run_analysis(request, variant_frames=variants.frames)
    return root


@pytest.mark.slow
def test_each_profile_has_its_folder_its_board_and_a_comparison_recomputed_independently(tree: Path) -> None:
    submissions = tree / "submissions"
    for slug in SLUGS:
        for folder, profile, cap in (("v1", "smoke", 32), ("v1-paper", OTHER, 100)):
            run = json.loads((submissions / slug / "results" / SET / folder / "run.json").read_text())
            assert (run["profile"]["name"], run["profile"]["max_new_tokens"]) == (profile, cap)
            assert (submissions / slug / "results" / SET / folder / "summary.json").is_file()
    main = json.loads((tree / "leaderboard" / "leaderboard.json").read_text())
    other = json.loads(profile_board_path(tree / "leaderboard", SET, VERSION, OTHER).read_text())
    assert "profile" not in main and "profile_comparison" not in main  # the board profile's file as before
    assert other["profile"] == OTHER
    assert {m["run"]["profile"] for m in other["models"]} == {OTHER}  # never pooled with the smoke runs
    comparison = other["profile_comparison"]
    assert comparison["profiles"] == ["smoke", OTHER] and comparison["max_new_tokens"] == [32, 100]
    assert comparison["models"] == list(SLUGS)

    # cut shares: from the records themselves
    for row in comparison["cut"]:
        for side, folder in (("a", "v1"), ("b", "v1-paper")):
            path = submissions / row["model"] / "results" / SET / folder / "records"
            records = pd.concat(pd.read_parquet(p) for p in sorted(path.glob("*.parquet")))
            if row["dataset"] != "all":
                records = records[records["dataset"] == row["dataset"]]
            cut = int((~records["finished"].astype(bool)).sum())
            assert (row[f"cut_{side}"], row[f"total_{side}"]) == (cut, len(records))
            assert row[f"share_{side}"] == pytest.approx(cut / len(records), abs=1e-6)

    # per-item change, exact p, Holm: from the two summaries, by enumeration
    per_item = {}
    for slug in SLUGS:
        for side, folder in (("a", "v1"), ("b", "v1-paper")):
            summary = json.loads((submissions / slug / "results" / SET / folder / "summary.json").read_text())
            for r in summary["per_item"]:
                if r["s"] is not None:
                    per_item[(side, slug, r["dataset"], r["measure"], r["item_id"])] = r["s"]
    rows = comparison["rows"]
    assert len(rows) == len(SLUGS) * len(other["datasets"]) * len(other["headline_measures"])
    expected_p, floors = [], []
    for row in rows:
        key = (row["model"], row["dataset"], row["measure"])
        items_a = {k[-1] for k in per_item if k[0] == "a" and k[1:4] == key}
        items_b = {k[-1] for k in per_item if k[0] == "b" and k[1:4] == key}
        shared = sorted(items_a & items_b)
        d = np.array([per_item[("b", *key, i)] - per_item[("a", *key, i)] for i in shared])
        assert row["n_shared"] == len(shared) and row["n_tied"] == int((d == 0).sum())
        assert row["mean_diff"] == pytest.approx(d.mean(), abs=1e-5)
        nonzero = int((d != 0).sum())
        assert row["p_exact"] == (pytest.approx(exact_two_sided(d), abs=1e-6) if nonzero else None)
        expected_p.append(exact_two_sided(d) if nonzero else None)
        floors.append(min(1.0, 2 * 0.5**nonzero) if nonzero else 1.0)
        for side in ("a", "b"):
            board = main if side == "a" else other
            cell = next(c for c in board["cells"] if (c["model"], c["dataset"], c["measure"]) == key)
            assert row[f"sgs_{side}"] == cell["sgs"] and row[f"rank_low_{side}"] == cell["rank_low"]
    # the testable family: Holm of the floors below α, then Holm of their p
    with_p = [i for i, p in enumerate(expected_p) if p is not None]
    floor_holm = dict(zip(with_p, holm([floors[i] for i in with_p]), strict=True))
    testable = [i for i in with_p if floor_holm[i] < ALPHA]
    p_holm = dict(zip(testable, holm([expected_p[i] for i in testable]), strict=True))  # type: ignore[misc]
    for i, row in enumerate(rows):
        assert row["testable"] == (i in testable) and row["family_size"] == len(testable)
        if i in testable:
            assert row["p_holm"] == pytest.approx(p_holm[i], abs=1e-6)
            assert row["verdict"] == ("significant" if p_holm[i] < ALPHA else "not significant")
        else:
            assert row["verdict"] == "not testable"
        tied = row["n_shared"] > 0 and row["n_tied"] >= 0.5 * row["n_shared"]
        assert ("tied" in row["validity"]) == tied
    for ranking in comparison["rankings"]:
        flips = [
            r
            for r in other["reversals"]
            if r["measure"] == ranking["measure"]
            and r["verdict"] == "significant"
            and ranking["dataset"] in ("all", r["dataset_a"], r["dataset_b"])
        ]
        assert ranking["flips_b"] == len(flips)
        assert ranking["comparable"] == (ranking["models_a"] >= 2 and ranking["models_b"] >= 2)


@pytest.mark.slow
def test_the_validator_accepts_a_profile_folder_and_refuses_a_run_in_the_wrong_one(tree: Path) -> None:
    report = validate_tree(tree / "submissions", tree / "variants")
    assert [f.line() for f in report.failures] == []
    assert report.result_folders == 4
    moved = tree / "moved"
    shutil.copytree(tree / "submissions", moved)
    results = moved / SLUGS[0] / "results" / SET
    (results / "v1-paper").rename(results / "v1-cpu")  # a paper run in the cpu profile's folder
    failures = [f.line() for f in validate_tree(moved, tree / "variants").failures]
    assert (
        len(failures) == 1 and "a paper-profile run in v1-cpu/, which holds cpu-profile runs" in failures[0]
    )
    assert "\n" not in failures[0]
    (results / "v1-cpu").rename(results / "v1-smoke")  # the board profile's name spelled out
    failures = [f.line() for f in validate_tree(moved, tree / "variants").failures]
    assert any("belongs in v1/, not v1-smoke/" in f for f in failures)


@pytest.mark.slow
def test_the_site_renders_the_profile_board_and_its_comparison_page(tree: Path) -> None:
    variants = load_variant_set(SET, VERSION, tree / "variants")
    published = tree / "leaderboard" / "leaderboard.json"
    board = read_board(published)
    profiles = profile_boards(board, published, tree / "submissions", variants)
    assert [p.board.profile for p in profiles] == [OTHER]
    site = tree / "site"
    build_site(SiteInputs(board, tree / "submissions", variants), site, progress=False, profiles=profiles)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="profiles/paper/comparison.html">32 vs 100 tokens</a>' in index
    folder = site / "profiles" / OTHER
    for page in (
        "index.html",
        "reversals.html",
        "comparison.html",
        f"models/{SLUGS[0]}.html",
        "items/alpha/0.html",
    ):
        assert (folder / page).is_file(), page
    assert (folder / "downloads" / SLUGS[0] / "records" / "alpha.parquet").is_file()
    page = (folder / "comparison.html").read_text(encoding="utf-8")
    comparison = json.loads(profile_board_path(tree / "leaderboard", SET, VERSION, OTHER).read_text())[
        "profile_comparison"
    ]
    for row in comparison["rows"]:  # each row's plain sentence, with its SGS values and labels
        sgs = "—" if row["sgs_b"] is None else f"{row['sgs_b']:.3g}"
        assert f"{sgs} at 100 tokens" in page
    significant = sum(r["verdict"] == "significant" for r in comparison["rows"])
    assert f"<strong>{significant} of {len(comparison['rows'])}</strong>" in page
    assert comparison["correction"] in page
    # one profile board with one model: rankings cannot be compared, and the page says so
    assert "rankings cannot be compared" in page or all(r["comparable"] for r in comparison["rankings"])


def _document(profile_cap: int, sgs: float, cut: int, reversals: int) -> LeaderboardDocument:
    """A two-model board with one dataset and one headline measure (only what the comparison reads)."""
    models = [
        {
            "slug": slug,
            "name": slug,
            "status": "complete",
            "run": {"token_cap": profile_cap, "truncated": [{"dataset": "d", "cut": cut, "total": 16}]},
        }
        for slug in SLUGS
    ]
    cells = [
        {
            "model": slug,
            "dataset": "d",
            "measure": "bertscore",
            "sgs": sgs + i,
            "ci_low": sgs + i - 0.01,
            "ci_high": sgs + i + 0.01,
            "n_items": 16,
            "rank": 1 + i,
            "rank_low": 1 + i,
            "rank_high": 1 + i,
            "validity": ["cut"] if cut >= 8 else [],
        }
        for i, slug in enumerate(SLUGS)
    ]
    flips = [
        {"measure": "bertscore", "dataset_a": "d", "dataset_b": "e", "verdict": "significant"}
    ] * reversals
    return LeaderboardDocument.from_json(
        {
            "schema_version": LEADERBOARD_SCHEMA_VERSION,
            "set": SET,
            "version": "v2",
            "datasets": ["d"],
            "headline_measures": ["bertscore"],
            "models": models,
            "cells": cells,
            "reversals": flips,
        }
    )


def test_the_comparison_tests_each_change_exactly_and_corrects_over_its_rows() -> None:
    """16 shared items: one model's instability rises on every item (significant after Holm over the two
    rows), the other's is unchanged on 10 of 16 and moves both ways on the rest (tied, not significant)."""
    a, b = _document(48, 0.2, 15, 1), _document(100, 0.1, 2, 0)
    rng = np.random.default_rng(0)
    base = {slug: rng.uniform(0.1, 0.3, 16) for slug in SLUGS}
    after = {
        SLUGS[0]: base[SLUGS[0]] + rng.uniform(0.05, 0.1, 16),
        SLUGS[1]: np.concatenate([base[SLUGS[1]][:10], base[SLUGS[1]][10:] + np.array([0.01, -0.01] * 3)]),
    }

    def rows(values: dict[str, np.ndarray]) -> dict[str, list[PerItemRow]]:
        return {
            slug: [
                {"dataset": "d", "item_id": str(i), "measure": "bertscore", "s": float(v), "s_extended": None}
                for i, v in enumerate(vs)
            ]
            for slug, vs in values.items()
        }

    comparison = profile_comparison(
        a, b, rows(base), rows(after), profiles=("evidence", "paper"), max_new_tokens=(48, 100)
    )
    first, second = comparison["rows"]
    assert (first["n_shared"], first["n_tied"], second["n_tied"]) == (16, 0, 10)
    d = after[SLUGS[0]] - base[SLUGS[0]]
    assert first["mean_diff"] == pytest.approx(d.mean())
    assert first["p_exact"] == pytest.approx(2 / 2**16)  # all 16 positive: 2 of 2^16 sign vectors
    floors = [2 * 0.5**16, 2 * 0.5**6]  # Holm of the floors: 2 × 2^-15 < α, 2^-5 × 1 = 0.03125 < α
    assert (first["p_floor"], second["p_floor"]) == pytest.approx(floors)
    assert first["testable"] and second["testable"] and first["family_size"] == 2
    assert first["p_holm"] == pytest.approx(2 * first["p_exact"])
    assert first["verdict"] == "significant" and second["verdict"] == "not significant"
    assert second["p_exact"] == pytest.approx(1.0) and second["mean_diff"] == pytest.approx(0.0, abs=1e-12)
    assert first["validity"] == ["cut"] and second["validity"] == ["cut", "tied"]
    assert (first["sgs_a"], first["sgs_b"], first["rank_low_b"]) == (0.2, 0.1, 1)
    cut = comparison["cut"][0]
    assert (cut["cut_a"], cut["share_a"], cut["cut_b"], cut["share_b"]) == (15, 15 / 16, 2, 2 / 16)
    ranking = next(r for r in comparison["rankings"] if r["dataset"] == "d")
    assert (ranking["models_a"], ranking["models_b"], ranking["comparable"]) == (2, 2, True)
    assert (ranking["flips_a"], ranking["flips_b"]) == (1, 0)
    # the page's sentences carry the labels of what they state
    view = Board(
        LeaderboardDocument.from_json({**b.data, "profile": "paper", "profile_comparison": comparison})
    )
    page = comparison_view(view)
    assert page is not None and page.title == "48 vs 100 tokens"
    section = page.sections[0]
    assert section.cut[0][0].startswith(f"{SLUGS[0]}: 15 of 16 responses cut at 48 tokens (94 %) [cut]")
    assert "significantly higher at 100 tokens [cut]" in section.changes[0][0]
    assert "no change is claimed (not significant) [cut, tied]" in section.changes[1][0]


def test_rankings_cannot_be_compared_when_a_profile_ranks_one_model() -> None:
    a = _document(48, 0.2, 0, 0)
    one = LeaderboardDocument.from_json(
        {**_document(100, 0.1, 0, 0).data, "cells": [c | {"rank": None} for c in a.data["cells"]][:1]}
    )
    comparison = profile_comparison(a, one, {}, {}, profiles=("evidence", "paper"), max_new_tokens=(48, 100))
    ranking = comparison["rankings"][0]
    assert not ranking["comparable"] and ranking["models_b"] == 0
    assert "rankings cannot be compared; the paper board ranks 0 models" in ranking_sentence(
        ranking, comparison
    )
    assert all(r["verdict"] == "not testable" and r["n_shared"] == 0 for r in comparison["rows"])


def test_evaluate_writes_a_run_of_another_profile_beside_the_board_run_never_over_it(tmp_path: Path) -> None:
    """`sago evaluate SLUG` (smoke) on v2 used to land on the committed evidence run's folder."""
    smoke = EvaluateOptions(set_name=SET, version="v2", profile="smoke")
    evidence = EvaluateOptions(set_name=SET, version="v2", profile="evidence")
    assert run_folder(SLUGS[0], smoke, tmp_path).name == "v2-smoke"
    assert run_folder(SLUGS[0], evidence, tmp_path).name == "v2"
    assert run_folder(SLUGS[0], smoke, tmp_path, api=True).name == "v2"  # the API table's runs stay put
    steps = scratch_next_steps(tmp_path, SET, "v2", "paper")
    assert "sago analyze --set sago-v1 --version v2 --profile paper" in steps
    # the site build takes no --profile (the board names its own): the printed command must run as printed
    build = next(line for line in steps.splitlines() if line.startswith("then: "))
    assert "--profile" not in build
    assert not [
        p for p in build.split() if p.startswith("--") and p not in _options_of(["leaderboard", "build"])
    ]
    assert "--profile" not in scratch_next_steps(tmp_path, SET, "v2", "evidence")


def _options_of(command: list[str]) -> set[str]:
    """The long options a `sago` subcommand accepts, read from the click command itself."""
    import click

    from benchmark.cli import cli as sago

    context = click.Context(sago)
    found: click.Command = sago
    for name in command:
        assert isinstance(found, click.Group)
        found = found.get_command(context, name)  # type: ignore[assignment]
    return {opt for param in found.params for opt in param.opts if opt.startswith("--")}
