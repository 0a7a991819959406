"""A small, complete site input in a tmp dir: variant set, submissions with results, leaderboard.

Shared by the site, validator, CLI and browser tests (``from helpers.site_tree import ...``). The leaderboard
is the stats engineer's example file with hostile strings planted in a model name; a response and a
prompt carry them too, so the tests can prove they render as text.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from benchmark.axes.measures import all_measures, delta_columns
from benchmark.integrity import file_hashes
from benchmark.provenance import sha256_file
from benchmark.results import write_json
from benchmark.schema import RECORD_COLUMNS, VARIANT_SCHEMA_VERSION
from benchmark.variants.freeze import write_variant_table

EXAMPLE = Path(__file__).parent.parent / "fixtures" / "leaderboard_example.json"
HOSTILE_SCRIPT = "<script>alert(1)</script>"
HOSTILE_IMG = '"><img src=x onerror=alert(1)>'
HOSTILE_NAME = f"Tiny A {HOSTILE_SCRIPT} {HOSTILE_IMG}"
SET, VERSION = "sago-v1", "v1"
DATASETS = ("alpaca", "trivia_qa")
VARIANTS = ("baseline/none/0", "identity/global/1", "politeness/prefix/2", "spacing/suffix/5")
PROFILE = {
    "name": "smoke",
    "items_per_dataset": 2,
    "all_strengths": False,
    "max_new_tokens": 32,
    "description": "a small test profile",
}
"""The evaluation profile recorded in the fixture's run.json files (partial: the header must say so)."""
# which (model, dataset) pairs have records: tiny-b skipped alpaca, tiny-c has no results folder at all
RECORDS = {"acme__tiny-a": DATASETS, "acme__tiny-b": ("trivia_qa",)}


@dataclass(frozen=True)
class SiteTree:
    """Paths of a fixture checkout."""

    root: Path
    """tmp dir holding everything."""
    variants: Path
    """``variants/`` root."""
    submissions: Path
    """``submissions/`` root."""
    leaderboard: Path
    """``leaderboard.json``."""


def _variant_rows(dataset: str) -> pd.DataFrame:
    rows = []
    for rank in range(2):
        question = f"Question {rank} of {dataset}?"
        for variant_id in VARIANTS:
            family, place, strength = variant_id.split("/")
            prompt = {
                "baseline": question,
                "identity": question,
                "politeness": f"Please, {question}",
                "spacing": question + "     ",
            }[family]
            if rank == 1 and family == "politeness":
                prompt = f"{HOSTILE_IMG} {question}"
            rows.append(
                {
                    "dataset": dataset,
                    "item_id": f"{dataset}-{rank}",
                    "variant_id": variant_id,
                    "family": family,
                    "place": place,
                    "strength": float(strength),
                    "prompt": prompt,
                    "similarity": 1.0 if family in ("baseline", "identity") else 0.9,
                    "rewriter": f"rule:{family}@0.1.0",
                    "answers": ["Paris"],
                    "item_rank": rank,
                }
            )
    return pd.DataFrame(rows).sort_values(["item_rank", "variant_id"]).reset_index(drop=True)


STANDS_IN_FOR = {"alpaca": "itself (the paper's Alpaca)", "trivia_qa": "itself (authors' TriviaQA)"}
"""What the fixture's manifest says each dataset stands in for."""


def write_variant_set(root: Path, version: str = VERSION) -> Path:
    """A two-dataset set the real reader (``load_variant_set``) accepts; returns its manifest."""
    folder = root / SET / version
    files = {}
    for dataset in DATASETS:
        write_variant_table(_variant_rows(dataset), folder / "data" / f"{dataset}.parquet")
        files[f"data/{dataset}.parquet"] = sha256_file(folder / "data" / f"{dataset}.parquet")
    manifest = {
        "schema_version": VARIANT_SCHEMA_VERSION,
        "set": SET,
        "version": version,
        "files": files,
        "datasets": {
            d: {
                "file": f"data/{d}.parquet",
                "rows": len(_variant_rows(d)),
                "source": {"stands_in_for": STANDS_IN_FOR[d]},
            }
            for d in DATASETS
        },
    }
    write_json(folder / "manifest.json", manifest)
    return folder / "manifest.json"


def records_frame(dataset: str, slug: str) -> pd.DataFrame:
    """Records with RECORD_COLUMNS; item 1's politeness response of tiny-a carries the hostile script.

    The confidence numbers move with the prompt as a model's do (the validator refuses rewrites whose
    log-probs are copied from the baseline), and the mean is the sum over the baseline's 5 tokens.
    """
    rows = []
    for rank in range(2):
        for k, variant_id in enumerate(VARIANTS):
            family, place, strength = variant_id.split("/")
            response = f"{slug} answers {variant_id}"
            if slug == "acme__tiny-a" and rank == 1 and family == "politeness":
                response = f"Sure! {HOSTILE_SCRIPT} {HOSTILE_IMG}"
            rows.append(
                {
                    "dataset": dataset,
                    "item_id": f"{dataset}-{rank}",
                    "variant_id": variant_id,
                    "family": family,
                    "place": place,
                    "strength": float(strength),
                    "response": response,
                    "response_tokens": 5,
                    "finished": True,
                    "logprob_sum": -3.0 - 0.5 * k,
                    "logprob_mean": (-3.0 - 0.5 * k) / 5,
                    "entropy_mean": 1.2 + 0.1 * k,
                    "baseline_tokens": 5,
                    "prompt_tokens": 12,
                }
            )
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))


def deltas_frame(slug: str, datasets: tuple[str, ...]) -> pd.DataFrame:
    """A deltas table: zeros at the baseline, small known values elsewhere, NaN mirroring for spacing."""
    rows = []
    for dataset in datasets:
        for rank in range(2):
            for index, variant_id in enumerate(VARIANTS):
                family, place, strength = variant_id.split("/")
                row = {
                    "model": slug,
                    "dataset": dataset,
                    "item_id": f"{dataset}-{rank}",
                    "variant_id": variant_id,
                    "family": family,
                    "place": place,
                    "strength": float(strength),
                }
                for measure in all_measures():
                    row[f"delta_{measure.name}"] = -0.25 * index * measure.scale / 10
                if family == "spacing":
                    row["delta_mirroring"] = math.nan
                row["correct"] = 1.0
                rows.append(row)
    return pd.DataFrame(rows, columns=list(delta_columns()))


def submission_yaml(slug: str, name: str, index: int) -> dict[str, object]:
    """A valid hub submission with a distinct pinned revision."""
    return {
        "schema_version": 1,
        "name": name,
        "model": {"kind": "hub", "id": slug.replace("__", "/"), "revision": f"{index:x}" * 40},
        "license": "Apache-2.0",
        "parameters": 1000 + index,
        "contact": "tests",
    }


def write_submissions(root: Path, manifest: Path, board: dict[str, object]) -> None:
    """One folder per model of the board; results for those in RECORDS."""
    for index, model in enumerate(board["models"], start=1):  # type: ignore[arg-type]
        slug = model["slug"]
        folder = root / slug
        folder.mkdir(parents=True)
        meta = submission_yaml(slug, model["name"], index)
        (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
        if slug not in RECORDS:
            continue
        results = folder / "results" / SET / VERSION
        (results / "records").mkdir(parents=True)
        for dataset in RECORDS[slug]:
            records_frame(dataset, slug).to_parquet(results / "records" / f"{dataset}.parquet", index=False)
        pq.write_table(
            pa.Table.from_pandas(deltas_frame(slug, RECORDS[slug]), preserve_index=False),
            results / "deltas.parquet",
        )
        write_json(
            results / "run.json",
            {
                "schema_version": 1,
                "variant_set": {"name": SET, "version": VERSION, "sha256": sha256_file(manifest)},
                "submission": slug,
                "submission_model": meta["model"],
                "model": {"source": "hub", "revision": meta["model"]["revision"]},  # type: ignore[index]
                "counts": {d: len(records_frame(d, slug)) for d in RECORDS[slug]},
                "files": file_hashes(results),
                "profile": PROFILE,
                "timings": {"finished_at": "2026-11-30T01:26:25+00:00"},
            },
        )
        weight = 1.0 if slug.endswith("-a") else 0.5  # the models differ most on item 1
        per_item = [
            {"dataset": d, "item_id": f"{d}-{rank}", "measure": m.name, "s": 0.1 * (rank + 1) * weight}
            for d in RECORDS[slug]
            for rank in range(2)
            for m in all_measures()
        ]
        write_json(results / "summary.json", {"schema_version": 1, "model": slug, "per_item": per_item})


def _recount_runs(board: dict[str, Any], submissions: Path) -> None:
    """Each complete model's ``run`` block as ``sago analyze`` would count it from the files just written
    (the example's own blocks are made up), so the site's facts can be checked against the files."""
    from benchmark.results import ResultsFolder
    from benchmark.stats.facts import run_row
    from benchmark.submissions import load_submission

    for model in board["models"]:
        if model["status"] == "complete":
            slug = model["slug"]
            folder = ResultsFolder.of(slug, board["set"], board["version"], submissions)
            model["run"] = run_row(load_submission(slug, submissions), folder, (model["name"], slug))


def make_site_tree(root: Path) -> SiteTree:
    """Write the whole fixture under ``root``."""
    board = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    for model in board["models"]:
        if model["slug"] == "acme__tiny-a":
            model["name"] = HOSTILE_NAME
    manifest = write_variant_set(root / "variants")
    write_submissions(root / "submissions", manifest, board)
    _recount_runs(board, root / "submissions")
    leaderboard = root / "leaderboard" / "leaderboard.json"
    leaderboard.parent.mkdir(parents=True)
    leaderboard.write_text(json.dumps(board, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    return SiteTree(root, root / "variants", root / "submissions", leaderboard)


OTHER_PROFILE = {
    "name": "paper",
    "items_per_dataset": 2,
    "all_strengths": True,
    "max_new_tokens": 100,
    "description": "the fixture's second profile: a longer cap",
}
"""The profile of the fixture's second board (``sago analyze --profile paper``)."""


def _only(board: dict[str, Any], slugs: tuple[str, ...]) -> dict[str, Any]:
    """``board`` with the rows of other models left out (models, per-model and pairwise rows, claims)."""
    names = {m["name"] for m in board["models"] if m["slug"] not in slugs}

    def kept(row: object) -> bool:
        if not isinstance(row, dict):
            return True
        models = [row[k] for k in ("model", "model_a", "model_b") if k in row]
        return all(m in slugs or m == "all" for m in models)

    out = {k: [r for r in v if kept(r)] if isinstance(v, list) else v for k, v in board.items()}
    out["models"] = [m for m in board["models"] if m["slug"] in slugs]
    out["claims"] = [c for c in board["claims"] if not any(n in c["text"] for n in names)]
    return out


def write_profile_board(tree: SiteTree, slugs: tuple[str, ...] = tuple(RECORDS)) -> Path:
    """A second profile's run of each of ``slugs`` (``<version>-paper/``) and its board with the
    ``profile_comparison`` block the real builder computes; returns the board's leaderboard.json.

    The runs answer as the board profile's did; their per-item instability is 0.8 times the board
    profile's, so every comparison row has changes to test (two items: none can reach α).
    """
    from benchmark.documents import LeaderboardDocument
    from benchmark.results import ResultsFolder, profile_board_path, results_dir
    from benchmark.stats.profile_compare import profile_comparison

    main = json.loads(tree.leaderboard.read_text(encoding="utf-8"))
    per_item_a, per_item_b = {}, {}
    for slug in slugs:
        source = results_dir(slug, SET, VERSION, tree.submissions)
        folder = results_dir(slug, SET, VERSION, tree.submissions, profile=str(OTHER_PROFILE["name"]))
        (folder / "records").mkdir(parents=True)
        for path in (source / "records").glob("*.parquet"):
            (folder / "records" / path.name).write_bytes(path.read_bytes())
        (folder / "deltas.parquet").write_bytes((source / "deltas.parquet").read_bytes())
        run = json.loads((source / "run.json").read_text(encoding="utf-8"))
        run |= {"profile": OTHER_PROFILE, "files": file_hashes(folder)}
        write_json(folder / "run.json", run)
        summary = json.loads((source / "summary.json").read_text(encoding="utf-8"))
        per_item_a[slug] = summary["per_item"]
        per_item_b[slug] = [r | {"s": 0.8 * r["s"]} for r in summary["per_item"]]
        write_json(folder / "summary.json", summary | {"per_item": per_item_b[slug]})
    board = _only(main, slugs) | {"profile": OTHER_PROFILE["name"]}
    for model in board["models"]:  # counted from the new run's files, as `sago analyze` would
        from benchmark.stats.facts import run_row
        from benchmark.submissions import load_submission

        folder = ResultsFolder.of(model["slug"], SET, VERSION, tree.submissions, profile="paper")
        model["run"] = run_row(load_submission(model["slug"], tree.submissions), folder, (model["name"],))
    board["profile_comparison"] = profile_comparison(
        LeaderboardDocument.from_json(main),
        LeaderboardDocument.from_json(board),
        per_item_a,  # type: ignore[arg-type]
        per_item_b,  # type: ignore[arg-type]
        profiles=(str(PROFILE["name"]), str(OTHER_PROFILE["name"])),
        max_new_tokens=(int(PROFILE["max_new_tokens"]), int(OTHER_PROFILE["max_new_tokens"])),  # type: ignore[call-overload]
    )
    path = profile_board_path(tree.leaderboard.parent, SET, VERSION, str(OTHER_PROFILE["name"]))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(board, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    return path
