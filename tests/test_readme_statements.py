"""The README's statements about the code and the committed runs, held against them: the Makefile's
defaults, which profiles exist, what the board's runs were (profile, items, tokens, prompts, threads,
batch sizes), the lm-eval block's batch size, the sizes of the default set, and what has run on a GPU.
The profiles table, the model times and the default set are in tests/test_quickstart.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from benchmark.harness.cli import run_options
from benchmark.lmeval.export import LM_EVAL_BATCH_SIZE
from benchmark.models.loading import CPU_BATCH_SIZES
from benchmark.profiles import PROFILES, board_profile, get_profile, rows_run
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.variants import load_variant_set

ROOT = Path(__file__).resolve().parents[1]
README = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
BOARD = json.loads((ROOT / "leaderboard" / "leaderboard.json").read_text(encoding="utf-8"))
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def make_default(name: str) -> str:
    """A ``NAME ?= value`` default of the Makefile."""
    found = re.search(rf"^{name} \?= ?(.*)$", MAKEFILE, re.M)
    assert found is not None, f"the Makefile sets no default for {name}"
    return found[1].strip()


def run_json(slug: str, version: str) -> dict[str, object]:
    path = ROOT / "submissions" / slug / "results" / DEFAULT_SET / version / "run.json"
    return dict(json.loads(path.read_text(encoding="utf-8")))


def board_models() -> list[str]:
    return [m["slug"] for m in BOARD["models"] if m["status"] == "complete"]


def test_the_makefile_defaults_are_the_codes() -> None:
    """`make evaluate` builds on the code's default set, `make all` proves the published board."""
    assert make_default("SET") == DEFAULT_SET
    assert make_default("VERSION") == DEFAULT_SET_VERSION
    assert make_default("BOARD_VERSION") == BOARD_SET_VERSION == BOARD["version"]
    profiles = {str(run_json(s, BOARD_SET_VERSION)["profile"]["name"]) for s in board_models()}  # type: ignore[index]
    assert profiles == {board_profile(BOARD_SET_VERSION)}, (
        "make all would re-run another profile than the board's"
    )


def test_the_readme_lists_every_profile_make_evaluate_takes_and_its_default() -> None:
    listed = re.search(
        r"`PROFILE=([\w|]+)` chooses the size \(default `(\w+)`, as `sago evaluate`'s;", README
    )
    assert listed is not None and sorted(listed[1].split("|")) == sorted(PROFILES.names())
    command = run_options(click.command()(lambda **_: None))
    default = next(p for p in command.params if p.name == "profile").default
    assert listed[2] == make_default("PROFILE") == default


def test_make_all_is_described_by_its_own_variables() -> None:
    sample, models = int(make_default("SAMPLE")), make_default("ALL_MODELS").split()
    assert sorted(models) == sorted(board_models())
    count = WORDS[len(models)]
    assert (
        f"re-run {sample} seeded baseline and {sample} variant batches of each of the {count} default "
        f"submissions' committed {BOARD_SET_VERSION} {board_profile(BOARD_SET_VERSION)} results"
    ) in README
    assert (
        f"`make all` re-runs {sample} seeded baseline batches and {sample} seeded variant batches of each "
        f"default submission's {BOARD_SET_VERSION} {board_profile(BOARD_SET_VERSION)} result"
    ) in README
    assert f"{count} models):" in README  # the measured duration says how many it re-ran


def test_the_board_runs_are_what_the_readme_says() -> None:
    """ "16 items per dataset, … 48 new tokens, 4,594 prompts per model, CPU, fp32, 1 thread"."""
    profile = get_profile(board_profile(BOARD_SET_VERSION))
    runs = {s: run_json(s, BOARD_SET_VERSION) for s in board_models()}
    prompts = {sum(r["counts"].values()) for r in runs.values()}  # type: ignore[attr-defined]
    threads = {r["hardware"]["torch_threads"] for r in runs.values()}  # type: ignore[index]
    assert len(prompts) == 1 and len(threads) == 1
    assert {(r["device"], r["dtype"]) for r in runs.values()} == {("cpu", "float32")}
    assert (
        f"Results of {WORDS[len(runs)]} packaged models on {BOARD_SET_VERSION}'s `{profile.name}` profile — "
        f"the board ({profile.items_per_dataset} items per dataset, the weakest and strongest level of every "
        f"rule family, every length and form cell, {profile.max_new_tokens} new tokens, "
        f"{prompts.pop():,} prompts per model, CPU, fp32, {threads.pop()} thread)"
    ) in README


def test_the_batch_sizes_the_readme_states_are_the_runs_and_the_codes() -> None:
    qwen = run_json("qwen__qwen2.5-coder-1.5b-instruct-q4_k_m", BOARD_SET_VERSION)
    threads = qwen["hardware"]["torch_threads"]  # type: ignore[index]
    assert f"Every batch ran with {threads} torch thread and batch size {qwen['batch_size']};" in README
    # every board run used one of the CPU sizes the harness picks, as `--help` says
    assert {run_json(s, BOARD_SET_VERSION)["batch_size"] for s in board_models()} <= set(CPU_BATCH_SIZES)
    import click

    command = run_options(click.command()(lambda **_: None))
    batch = next(p for p in command.params if p.name == "batch_size")
    sizes = ", ".join(map(str, CPU_BATCH_SIZES[:-1])) + f" or {CPU_BATCH_SIZES[-1]}"
    assert f"default on CPU: {sizes} by model size" in str(batch.help)


def test_the_lm_eval_blocks_batch_size_is_the_exports() -> None:
    """The README's lm_eval command and the README an export writes ask for the same batch size."""
    found = re.findall(r"lm_eval --model hf .*?--batch_size (\d+)", README)
    assert found and {int(n) for n in found} == {LM_EVAL_BATCH_SIZE}


@pytest.mark.parametrize("profile", ["bench"])
def test_the_peer_benchmark_sentence_states_the_bench_profiles_size(profile: str) -> None:
    variants = load_variant_set(DEFAULT_SET, DEFAULT_SET_VERSION)
    frames = [variants.frame(d) for d in variants.datasets]
    chosen = get_profile(profile)
    assert (
        f"the {profile} profile's {rows_run(frames, chosen):,} prompts, {chosen.max_new_tokens} new tokens"
    ) in README


def test_the_default_sets_size_is_its_manifests() -> None:
    variants = load_variant_set(DEFAULT_SET, DEFAULT_SET_VERSION)
    items = {len(set(variants.frame(d)["item_id"])) for d in variants.datasets}
    rows = sum(len(variants.frame(d)) for d in variants.datasets)
    assert len(items) == 1
    assert (
        f"`variants/{DEFAULT_SET}/{DEFAULT_SET_VERSION}` (frozen; the default for building and evaluating): "
        f"the same {WORDS[len(variants.datasets)]} datasets × {items.pop()} items ({rows:,} rows)"
    ) in README


def test_the_v1_board_and_the_api_result_name_their_profiles() -> None:
    smoke = get_profile("smoke")
    v1 = {str(run_json(s, "v1")["profile"]["name"]) for s in ("huggingfacetb__smollm2-135m-instruct-q4_1",)}  # type: ignore[index]
    assert v1 == {"smoke"}
    assert (
        f"on v1's `smoke` profile: {smoke.items_per_dataset} items per dataset, {smoke.max_new_tokens} new "
        "tokens"
    ) in README
    api = run_json("huggingfacetb__smollm2-135m-instruct-q4_1-llama-server", DEFAULT_SET_VERSION)
    counts = api["counts"]
    assert (
        f"({DEFAULT_SET_VERSION}, `{api['profile']['name']}` profile: "  # type: ignore[index]
        f"{api['profile']['items_per_dataset']} items per dataset, "  # type: ignore[index]
        f"{api['profile']['items_per_dataset'] * len(counts)} in all, "  # type: ignore[index, arg-type]
        f"{sum(counts.values()):,} replies)"  # type: ignore[attr-defined]
    ) in README


def test_the_gpu_limitation_holds_while_no_gpu_report_is_committed() -> None:
    reports = sorted((ROOT / "docs" / "bench").glob("gpu-check-*.json"))
    said = "No GPU run has been made yet" in README
    assert said == (not reports), "a GPU report is committed: say what ran on it in README's Limitations"


def test_the_default_engines_peer_ratios_are_the_committed_tables() -> None:
    """Every CPU ratio the README quotes for the planners is a row of the committed table, in its order."""
    table = (ROOT / "docs" / "bench" / "bench-peer-smollm2-planner2.txt").read_text(encoding="utf-8")
    ratios: dict[tuple[str, str], list[str]] = {}
    planner = ""
    for line in table.splitlines():
        if line.startswith("# run "):
            planner = line.split(", ")[1].split(" (")[0]  # "planner 2"
        elif line.strip().startswith("1 ") and planner:
            cells = line.split()
            ratios.setdefault((planner, cells[1]), []).append(cells[-1])
    assert sorted(ratios) == [(p, b) for p in ("planner 1", "planner 2") for b in ("32", "8")]
    for name in ("planner 2", "planner 1"):
        small, large = ratios[(name, "8")], ratios[(name, "32")]
        said = f"{'× and '.join(small)}× at batch 8, {'× and '.join(large)}× at batch 32"
        assert f"{name} " in README and said in README, said


def test_the_engine_comparison_ratios_are_the_committed_table() -> None:
    """Every CPU ratio pair the README quotes for the default (pooled) engine and the engines it replaced
    is the pair of runs the committed table holds for that engine and batch, smaller first."""
    table = (ROOT / "docs" / "bench" / "bench-peer-smollm2-engines.txt").read_text(encoding="utf-8")
    ratios: dict[tuple[str, str], list[float]] = {}
    engine = ""
    for line in table.splitlines():
        if line.startswith("# run: "):
            engine = " ".join(line.removeprefix("# run: ").removeprefix("engine ").split()[:-1])
        elif line.strip().startswith("1 ") and engine:
            cells = line.split()
            ratios.setdefault((engine, cells[1]), []).append(float(cells[-1]))
    engines = ("single_prefill", "draft", "pooled exact", "pooled screen")
    assert sorted(ratios) == sorted((e, b) for e in engines for b in ("8", "32"))
    text = " ".join(README.split())
    for (engine, batch), runs in ratios.items():
        assert len(runs) == 2, (engine, batch)
        low, high = sorted(runs)
        assert f"{low:.3f}× and {high:.3f}×" in text, (engine, batch, runs)
    default = ratios[("pooled screen", "8")] + ratios[("pooled screen", "32")]
    assert max(default) < 1.0, "issue 51: the default engine below lm-eval's time at batch 8 and 32"
