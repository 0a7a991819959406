"""A second profile of the board: runs of another profile live in ``<version>-<profile>/``, are analysed
into a board of their own, rendered beside the published one, and compared with it on one page.

The end-to-end test builds two profiles × two stand-in models (``FakeBackend``: every harness, analyze
and site code path, without minutes of generation on a shared CPU) in a tmp folder and recomputes every
number of the comparison with its own code: the per-item changes from the two summaries, the exact
sign-flip p by enumerating every sign vector, Holm by hand, the cut shares from the records.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers.sentences import PLAIN_WORDS, plain_words
from helpers.toy import fake_run, freeze_toy_set, submit_hub_model

from benchmark.axes.measures import all_measures
from benchmark.documents import LeaderboardDocument
from benchmark.errors import SagoError
from benchmark.harness.cli import scratch_next_steps
from benchmark.harness.evaluate import EvaluateOptions, run_folder
from benchmark.pipeline import origin
from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
from benchmark.profiles import board_profile, parse_results_folder_name, results_folder_name
from benchmark.results import ResultsFolder, profile_board_path, results_dir
from benchmark.rows import PerItemRow
from benchmark.schema import LEADERBOARD_SCHEMA_VERSION, PAPER_FAMILIES
from benchmark.site.board import Board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.cli import profile_boards
from benchmark.site.profiles import comparison_view, ranking_sentence
from benchmark.stats import profile_compare
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
    expected_p: list[float | None] = []
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
        for side in ("a", "b"):
            board = main if side == "a" else other
            cell = next(c for c in board["cells"] if (c["model"], c["dataset"], c["measure"]) == key)
            assert row[f"sgs_{side}"] == cell["sgs"] and row[f"rank_low_{side}"] == cell["rank_low"]
    _expected_family(rows, expected_p)
    for row in rows:
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
        assert f"{sgs} at 100" in page
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
        LeaderboardDocument.from_json({**b.to_json(), "profile": "paper", "profile_comparison": comparison})
    )
    page = comparison_view(view)
    assert page is not None and page.title == "48 vs 100 tokens"
    section = page.sections[0]
    assert section.cut[0][0].startswith(
        f"{SLUGS[0]}, as run: 15 of 16 responses cut at 48 tokens (94 %) [cut]"
    )
    # rows as run say so: they mix the cap with the variant mix, and no cap effect is claimed from them
    assert "as run, cap and variant mix: " in section.changes[0][0]
    assert "significantly higher at 100 [cut]" in section.changes[0][0]
    assert "no significant change [cut, tied]" in section.changes[1][0]


def test_rankings_cannot_be_compared_when_a_profile_ranks_one_model() -> None:
    a = _document(48, 0.2, 0, 0)
    cells = [c | {"rank": None} for c in a.to_json()["cells"]][:1]
    one = LeaderboardDocument.from_json({**_document(100, 0.1, 0, 0).to_json(), "cells": cells})
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


# --- what the cap alone changes: the variants both profiles ran -------------------------------------------


def _variant_keys(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    return list(zip(*(frame[c].astype(str) for c in ("dataset", "item_id", "variant_id")), strict=True))


def _shared_by_hand(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    both = set(_variant_keys(a)) & set(_variant_keys(b))
    return a[[k in both for k in _variant_keys(a)]], b[[k in both for k in _variant_keys(b)]]


def _s_by_hand(deltas: pd.DataFrame, measure: str) -> dict[tuple[str, str], float]:
    """s(i) as METHOD §5 defines it: sqrt of the mean of (Δ/R)² over an item's paper-family variants."""
    scale = next(m.scale for m in all_measures() if m.name == measure)
    rewrites = deltas[deltas["family"].isin(PAPER_FAMILIES)]
    out = {}
    for (dataset, item), group in rewrites.groupby(["dataset", "item_id"]):
        d = group[f"delta_{measure}"].to_numpy(dtype=float) / scale
        d = d[np.isfinite(d)]
        if d.size:
            out[(str(dataset), str(item))] = float(np.sqrt(np.mean(d**2)))
    return out


def _expected_family(rows: list[dict], p_of: list[float | None]) -> None:
    """Each row's testable flag, family size and Holm p against the family recomputed from ``p_of``: Holm of
    the floors (the smallest p each row's changed items allow) below α, then Holm of their p."""
    nonzero = [row["n_shared"] - row["n_tied"] for row in rows]
    with_p = [i for i, p in enumerate(p_of) if p is not None]
    floor_holm = dict(zip(with_p, holm([min(1.0, 2 * 0.5 ** nonzero[i]) for i in with_p]), strict=True))
    testable = [i for i in with_p if floor_holm[i] < ALPHA]
    p_holm = dict(zip(testable, holm([p_of[i] for i in testable]), strict=True))  # type: ignore[misc]
    for i, row in enumerate(rows):
        assert row["testable"] == (i in testable) and row["family_size"] == len(testable)
        if i in testable:
            assert row["p_holm"] == pytest.approx(p_holm[i], abs=1e-6)
            assert row["verdict"] == ("significant" if p_holm[i] < ALPHA else "not significant")
        else:
            assert row["verdict"] == "not testable"


@pytest.mark.slow
def test_the_cap_only_rows_are_recomputed_from_the_variants_both_profiles_ran(tree: Path) -> None:
    """smoke (4 items, weakest and strongest) and paper (16, every level) share only some variants: the
    cap-only rows re-reduce s(i) from exactly those, recomputed here from the two deltas tables by hand."""
    other = json.loads(profile_board_path(tree / "leaderboard", SET, VERSION, OTHER).read_text())
    cap = other["profile_comparison"]["cap_only"]
    results = tree / "submissions"
    shared = {}
    for slug in SLUGS:
        a, b = (
            pd.read_parquet(results / slug / "results" / SET / f / "deltas.parquet")
            for f in ("v1", "v1-paper")
        )
        shared[slug] = _shared_by_hand(a, b)
        assert len(shared[slug][0]) < len(b)  # the variant mixes differ: the restriction has work to do
        for row in (r for r in cap["variants"] if r["model"] == slug):
            in_dataset = [f[f["dataset"].astype(str) == row["dataset"]] for f in (a, b, shared[slug][0])]
            assert (row["rows_a"], row["rows_b"], row["shared"]) == tuple(len(f) for f in in_dataset)
            assert row["shared_paper"] == int(in_dataset[2]["family"].isin(PAPER_FAMILIES).sum())

    def diffs(row: dict) -> np.ndarray:
        sa, sb = (_s_by_hand(frame, row["measure"]) for frame in shared[row["model"]])
        items = sorted(k for k in set(sa) & set(sb) if k[0] == row["dataset"])
        return np.array([sb[k] - sa[k] for k in items])

    for rows, measures in (
        (cap["rows"], other["headline_measures"]),
        (cap["control"], ["act_cos_last", "act_cos_mean"]),
    ):
        assert len(rows) == len(SLUGS) * len(other["datasets"]) * len(measures)
        expected = []
        for row in rows:
            d = diffs(row)
            assert row["n_shared"] == len(d) and row["n_tied"] == int((d == 0).sum())
            assert row["mean_diff"] == pytest.approx(d.mean(), abs=1e-5)
            expected.append(exact_two_sided(d) if (d != 0).any() else None)
            assert row["p_exact"] == (None if expected[-1] is None else pytest.approx(expected[-1], abs=1e-6))
        _expected_family(rows, expected)  # a family of its own: never the as-run rows'
    for row in cap["control"]:
        d = diffs(row)
        assert row["max_abs_diff"] == pytest.approx(float(np.abs(d).max()), abs=1e-9)
        assert row["verdict"] != "significant"  # the prompt does not depend on the cap
    for row in cap["rows"]:
        sa, sb = (_s_by_hand(frame, row["measure"]) for frame in shared[row["model"]])
        in_a = [v for k, v in sa.items() if k[0] == row["dataset"]]
        assert row["sgs_a"] == pytest.approx(np.mean(in_a), abs=1e-5) and row["n_items_a"] == len(in_a)
        assert row["ci_low_a"] is None and row["rank_low_b"] is None  # the boards' are of every variant


def _deltas(slug: str, strengths: tuple[int, ...], *, shift: float = 0.0, noise: float = 0.0) -> pd.DataFrame:
    """A deltas table of 16 items of dataset ``d``: a baseline and one politeness variant per strength.
    A variant's values come from a generator seeded by (model, item, strength), so both profiles see the
    same numbers for it; ``shift`` adds the cap's effect to bertscore, ``noise`` (random sign) float noise
    to the prompt-only measures. A variant only this profile runs (strength 2 or 3) has act values far
    from the others: pooled by mistake, it moves the control."""
    rows = []
    for item in range(16):
        for strength in (0, *strengths):
            rng = np.random.default_rng([SLUGS.index(slug), item, strength])
            values = {f"delta_{m.name}": float(rng.uniform(0.1, 0.3)) for m in all_measures()}
            values["delta_bertscore"] += shift
            for name in ("delta_act_cos_last", "delta_act_cos_mean"):
                values[name] = 0.5 if strength in (2, 3) else values[name] + noise * rng.choice([-1.0, 1.0])
            family = "politeness" if strength else "baseline"
            ids = {
                "model": slug,
                "dataset": "d",
                "item_id": str(item),
                "variant_id": f"{family}/global/{strength}",
                "family": family,
                "place": "global",
                "strength": float(strength),
            }
            rows.append(ids | values | {"correct": 1.0})
    return pd.DataFrame(rows)


def _summary_rows(deltas: pd.DataFrame) -> list[PerItemRow]:
    """The per_item rows a summary of these deltas holds (for the comparison as run)."""
    return [
        {"dataset": k[0], "item_id": k[1], "measure": m.name, "s": v, "s_extended": None}
        for m in all_measures()
        for k, v in _s_by_hand(deltas, m.name).items()
    ]


def test_the_cap_only_rows_compare_the_shared_variants_and_the_prompt_control_proves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The evidence-like profile runs strengths 1 and 4, the paper-like one 1 to 4. On the shared
    variants the first model's bertscore rises on every item (the cap), the second's does not change;
    the prompt-only measures differ by float noise only. Without the restriction the control fails."""
    boards = _document(48, 0.2, 15, 1), _document(100, 0.1, 2, 0)
    a = {slug: _deltas(slug, (1, 4)) for slug in SLUGS}
    b = {slug: _deltas(slug, (1, 2, 3, 4), shift=0.05 * (slug == SLUGS[0]), noise=1e-9) for slug in SLUGS}

    def compare() -> dict:
        return profile_comparison(  # type: ignore[return-value]
            *boards,
            {s: _summary_rows(f) for s, f in a.items()},
            {s: _summary_rows(f) for s, f in b.items()},
            profiles=("evidence", "paper"),
            max_new_tokens=(48, 100),
            deltas=(a, b),
        )

    comparison = compare()
    cap = comparison["cap_only"]
    assert [(r["rows_a"], r["rows_b"], r["shared"], r["shared_paper"]) for r in cap["variants"]] == [
        (48, 80, 48, 32)
    ] * 2
    first, second = cap["rows"]
    sa, sb = (_s_by_hand(_shared_by_hand(a[SLUGS[0]], b[SLUGS[0]])[i], "bertscore") for i in (0, 1))
    d = np.array([sb[k] - sa[k] for k in sorted(sa)])
    assert (d > 0).all() and first["mean_diff"] == pytest.approx(d.mean())
    assert first["sgs_a"] == pytest.approx(np.mean(list(sa.values())))
    assert first["p_exact"] == pytest.approx(2 / 2**16) and second["p_exact"] is None  # no item changed
    # the cap-only family holds its own testable rows: one here, while the rows as run hold two
    assert (first["family_size"], first["p_holm"], first["verdict"]) == (1, first["p_exact"], "significant")
    assert second["verdict"] == "not testable" and second["n_tied"] == 16
    assert [r["family_size"] for r in comparison["rows"]] == [2, 2]
    # the control: 2 models × 2 prompt-only measures, float noise only, Holm over those four
    assert [(r["model"], r["measure"]) for r in cap["control"]] == [
        (s, m) for s in SLUGS for m in ("act_cos_last", "act_cos_mean")
    ]
    assert all(r["verdict"] != "significant" and r["family_size"] == 4 for r in cap["control"])
    assert 0 < cap["control_max_abs_diff"] < 1e-8
    view = comparison_view(
        Board(
            LeaderboardDocument.from_json(
                {**boards[1].to_json(), "profile": "paper", "profile_comparison": comparison}
            )
        )
    )
    assert view is not None and view.cap_significant == 1 and view.unshared == []
    assert view.control.startswith(
        "Control: on the shared variants, Last-layer state and All-layer state differ by"
    )
    cap_sentences = [sentence for sentence, _, _ in view.sections[0].cap_only]
    assert (
        "shared variants, cap alone" in cap_sentences[0]
        and "significantly higher at 100 [cut]" in cap_sentences[0]
    )
    assert all("cap and variant mix" in sentence for sentence, _, _ in view.sections[0].changes)

    # the same comparison with the restriction taken out: the unshared variants' act values reach s(i)
    monkeypatch.setattr(profile_compare, "shared_variants", lambda x, y: (x, y))
    broken = compare()["cap_only"]
    assert broken["control_max_abs_diff"] > 0.1
    assert all(r["verdict"] == "significant" for r in broken["control"])
    failed = comparison_view(
        Board(
            LeaderboardDocument.from_json(
                {**boards[1].to_json(), "profile": "paper", "profile_comparison": compare()}
            )
        )
    )
    assert failed is not None and failed.control.startswith("Control failed:")


def test_profiles_without_a_shared_rewrite_variant_are_not_comparable_and_say_so() -> None:
    """One model ran disjoint levels in the two profiles (only the baseline in common), the other has no
    deltas in the board profile: no test, no crash, and the page says the cap alone cannot be compared."""
    boards = _document(48, 0.2, 0, 0), _document(100, 0.1, 0, 0)
    a = {SLUGS[0]: _deltas(SLUGS[0], (1, 4))}
    b = {slug: _deltas(slug, (2, 3)) for slug in SLUGS}
    comparison = profile_comparison(
        *boards, {}, {}, profiles=("evidence", "paper"), max_new_tokens=(48, 100), deltas=(a, b)
    )
    cap = comparison["cap_only"]
    assert [(r["model"], r["shared"], r["shared_paper"]) for r in cap["variants"]] == [(SLUGS[0], 16, 0)]
    assert all(r["n_shared"] == 0 and r["verdict"] == "not testable" for r in cap["rows"] + cap["control"])  # type: ignore[operator]
    assert cap["control_max_abs_diff"] is None and cap["rows"][0]["family_size"] == 0
    view = comparison_view(
        Board(
            LeaderboardDocument.from_json(
                {**boards[1].to_json(), "profile": "paper", "profile_comparison": comparison}
            )
        )
    )
    assert view is not None and view.cap_significant == 0
    assert view.unshared == [
        f"{slug}: the two profiles ran no rewrite variant in common, so the cap alone cannot be compared."
        for slug in SLUGS
    ]
    assert (
        view.control
        == "Control: no item is shared, so Last-layer state and All-layer state cannot check the cut."
    )


PUBLISHED_PAPER_BOARD = (
    Path(__file__).parents[1] / "leaderboard" / "profiles" / "sago-v1" / "v2-paper" / "leaderboard.json"
)


def _said(row: dict) -> str:
    """What a change sentence must say of its row's verdict."""
    if row["verdict"] == "significant":
        return "significantly " + ("higher" if row["mean_diff"] > 0 else "lower")
    return "no significant change" if row["verdict"] == "not significant" else str(row["verdict"])


def test_the_published_comparison_claims_a_cap_effect_only_from_the_cap_only_rows() -> None:
    """The committed paper board: every sentence of its comparison page is short, only a cap-only row
    says "cap alone", and each states its row's verdict and direction as leaderboard.json holds them."""
    board = read_board(PUBLISHED_PAPER_BOARD)
    view = comparison_view(board)
    assert view is not None and view.cap is not None
    cap, names = view.cap, [m["name"] for m in board.models]
    for section in view.sections:
        for scope, changes in (
            ("shared variants, cap alone", section.cap_only),
            ("as run, cap and variant mix", section.changes),
        ):
            for sentence, detail, row in changes:
                assert f", {scope}: " in sentence and plain_words(sentence, names) <= PLAIN_WORDS, sentence
                assert _said(row) in sentence, sentence
                assert f"{row['n_shared']} shared items ({row['n_tied']} tied)" in detail
        assert "cap alone" not in " ".join(s for s, _, _ in section.changes)
        for sentence in section.variants:
            assert plain_words(sentence, names) <= PLAIN_WORDS, sentence
    assert plain_words(view.control, names) <= PLAIN_WORDS
    assert view.cap_significant == sum(r["verdict"] == "significant" for r in cap["rows"])
    assert max(r["max_abs_diff"] or 0 for r in cap["control"]) == cap["control_max_abs_diff"]
    assert all(r["verdict"] != "significant" for r in cap["control"])
    page = (PUBLISHED_PAPER_BOARD.parents[3] / "site" / "profiles" / "paper" / "comparison.html").read_text(
        encoding="utf-8"
    )
    assert html.escape(view.control, quote=False) in page


PUBLISHED_SITE = Path(__file__).parents[1] / "leaderboard" / "site"


def _cells(page: str, row_title: str) -> list[str]:
    """The text of each cell of the table row whose title is ``row_title`` (a row's sentence)."""
    start = page.index(f'<tr title="{html.escape(row_title)}">')
    row = page[start : page.index("</tr>", start)]
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_the_published_comparison_leads_state_how_many_of_their_rows_are_labelled() -> None:
    """Issue 48: "18 of 24 rows change significantly" must not be read without the [cut] it rests on."""
    view = comparison_view(read_board(PUBLISHED_PAPER_BOARD))
    assert view is not None and view.cap is not None
    page = (PUBLISHED_SITE / "profiles" / "paper" / "comparison.html").read_text(encoding="utf-8")
    for rows, lead in ((view.comparison["rows"], view.labelled), (view.cap["rows"], view.cap_labelled)):
        significant = [r for r in rows if r["verdict"] == "significant"]
        labelled = [r for r in significant if r["validity"]]
        assert labelled, "the committed board has labelled significant rows: the lead must count them"
        assert lead.startswith(f"; {len(labelled)} of them ")
        for label in {x for r in labelled for x in r["validity"]}:
            assert f"[{label}]" in lead
        said = f"<strong>{len(significant)} of {len(rows)}</strong> rows change significantly"
        assert re.search(re.escape(said) + r"[^<]*" + re.escape(html.escape(lead, quote=False)), page), lead


def test_the_published_comparison_shows_a_rank_range_only_among_two_models_and_names_measures() -> None:
    """A rank range on a board that ranks fewer than two models is always 1–1 and says nothing: "—" and a
    note; among two or more, the row's range. The sentences name measures as the tables do (display
    names, not ids)."""
    from benchmark.axes.measures import measure_label

    view = comparison_view(read_board(PUBLISHED_PAPER_BOARD))
    assert view is not None
    page = (PUBLISHED_SITE / "profiles" / "paper" / "comparison.html").read_text(encoding="utf-8")
    rankings = view.comparison["rankings"]
    ranked = {(r["dataset"], r["measure"]): (r["models_a"], r["models_b"]) for r in rankings}
    assert rankings and all(a >= 2 for a, _ in ranked.values())
    if all(b < 2 for _, b in ranked.values()):
        assert (
            html.escape(view.few_ranked, quote=False) in page and "paper board ranks fewer" in view.few_ranked
        )
    else:
        assert view.few_ranked == "" and "few-ranked" not in page

    def shown(row: Mapping[str, Any], side: str, models: int) -> str:
        low, high = row[f"rank_low_{side}"], row[f"rank_high_{side}"]
        return "—" if models < 2 or low is None or high is None else f"{low}–{high}"

    for section in view.sections:
        for sentence, _, row in section.changes:
            cells = _cells(page, sentence)  # model, measure, SGS a, rank a, SGS b, rank b, ...
            models_a, models_b = ranked[(row["dataset"], row["measure"])]
            assert (cells[3], cells[5]) == (shown(row, "a", models_a), shown(row, "b", models_b)), sentence
        for sentence, _, row in [*section.changes, *section.cap_only]:
            assert (
                f", {measure_label(row['measure'])}, " in sentence and f", {row['measure']}, " not in sentence
            )
        for sentence, row in section.rankings:
            assert sentence.startswith(f"{measure_label(row['measure'])}: ")
    assert view.cap is not None
    for measure in view.cap["control_measures"]:
        assert measure not in view.control and measure_label(measure) in view.control


def _cut_by_hand(folder: ResultsFolder) -> pd.DataFrame:
    frames = [
        pd.read_parquet(p, columns=["finished", "item_id", "variant_id"]).assign(dataset=p.stem)
        for p in sorted(folder.records_dir.glob("*.parquet"))
    ]
    out = pd.concat(frames, ignore_index=True)
    return out.assign(item_id=out["item_id"].astype(str), cut=out["finished"].eq(False))


def test_the_published_cut_shares_on_shared_prompts_match_the_records_of_both_runs() -> None:
    """The as-run cut shares count different prompts (784 at 48 tokens, 1,600 at 100 on gsm8k); the
    cap-only ones count the prompts both runs answered, recounted here from the two runs' records."""
    board = json.loads(PUBLISHED_PAPER_BOARD.read_text(encoding="utf-8"))
    comparison = board["profile_comparison"]
    rows = {(r["model"], r["dataset"]): r for r in comparison["cap_only"]["cut"]}
    root = PUBLISHED_PAPER_BOARD.parents[4] / "submissions"
    assert {m for m, _ in rows} == set(comparison["models"]) and comparison["models"]
    view = comparison_view(read_board(PUBLISHED_PAPER_BOARD))
    assert view is not None
    page = (PUBLISHED_SITE / "profiles" / "paper" / "comparison.html").read_text(encoding="utf-8")
    for model in comparison["models"]:
        a, b = (
            _cut_by_hand(ResultsFolder.of(model, "sago-v1", "v2", root, profile=p))
            for p in ("evidence", "paper")
        )
        both = a.merge(b, on=["dataset", "item_id", "variant_id"], suffixes=("_a", "_b"))
        assert len(both) < len(b)  # the paper run answered more prompts than it shares
        for dataset, group in [*both.groupby("dataset"), ("all", both)]:
            row = rows[(model, str(dataset))]
            assert (row["total_a"], row["total_b"]) == (len(group), len(group))
            assert (row["cut_a"], row["cut_b"]) == (int(group["cut_a"].sum()), int(group["cut_b"].sum()))
    for section in view.sections:
        assert section.cap_cut and all(", on the prompts both ran: " in s for s, _ in section.cap_cut)
        assert all(", as run: " in s for s, _ in section.cut)
        for sentence, _ in [*section.cap_cut, *section.cut]:
            assert html.escape(sentence, quote=False) in page


def _text_of(page: str) -> str:
    """A page's visible text, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_overview_counts_the_differences_between_models_it_calls_not_significant() -> None:
    """The overview's "n of N differences between models are not significant" is counted from each
    board's pairwise verdicts (on the paper board most differences are significant, so no "most")."""
    for board_file, page in (
        (PUBLISHED_PAPER_BOARD, PUBLISHED_SITE / "profiles" / "paper" / "index.html"),
        (PUBLISHED_SITE.parent / "leaderboard.json", PUBLISHED_SITE / "index.html"),
    ):
        data = json.loads(board_file.read_text(encoding="utf-8"))
        verdicts = [r["verdict"] for r in data["pairwise"]]
        tested = verdicts.count("significant") + verdicts.count("not significant")
        text = _text_of(page.read_text(encoding="utf-8"))
        assert sum(m["status"] == "complete" for m in data["models"]) >= 2 and tested
        said = f"{verdicts.count('not significant'):,} of {tested:,} differences between models"
        assert f"{said} (pair × dataset × measure) are not significant" in text, page
        assert "most differences" not in text


def test_the_changelog_links_a_profile_run_to_its_own_board_and_does_not_count_it_on_the_version() -> None:
    from benchmark.site.versions import changelog

    root = PUBLISHED_SITE.parents[1] / "submissions"
    changes = changelog("sago-v1", {"v2": "x"}, root)
    board_runs = [c for c in changes if c.version == "v2" and not c.api and c.profile == board_profile("v2")]
    paper = [c for c in changes if c.profile == "paper"]
    assert paper and board_runs
    for page, back in (("changelog.html", ""), ("profiles/paper/changelog.html", "../../")):
        text = (PUBLISHED_SITE / page).read_text(encoding="utf-8")
        for run in paper:
            href = f"{back}profiles/paper/models/{run.slug}.html"
            assert f'<a href="{href}">{html.escape(run.name)}</a>' in text
            assert ((PUBLISHED_SITE / page).parent / href).resolve().is_file()
        counted = f"{len(board_runs)} result{'s' if len(board_runs) != 1 else ''} committed"
        assert f"{counted}, and {len(paper)} paper-profile" in text
