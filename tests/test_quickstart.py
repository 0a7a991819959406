"""A researcher's first hour: the README's quick start, its profiles table and its run durations say what
the code and the committed results say."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmark.profiles import PROFILES, profile_table
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.variants import load_variant_set

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- profiles:begin -->", "<!-- profiles:end -->"


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_profiles_table_is_the_code_on_the_default_set() -> None:
    readme = _readme()
    block = readme[readme.index(BEGIN) + len(BEGIN) : readme.index(END)].strip()
    variants = load_variant_set(DEFAULT_SET, DEFAULT_SET_VERSION)
    label = f"{DEFAULT_SET}/{DEFAULT_SET_VERSION}"
    assert block == profile_table([variants.frame(d) for d in variants.datasets], label)
    assert all(f"| `{name}` |" in block for name in PROFILES.names())


def test_the_evidence_row_counts_what_a_committed_evidence_result_holds() -> None:
    """The table's model runs are what the harness runs: SmolLM2's v2 evidence run.json counts them."""
    run = ROOT / "submissions/huggingfacetb__smollm2-135m-instruct-q4_1/results/sago-v1/v2/run.json"
    counts = json.loads(run.read_text(encoding="utf-8"))["counts"]
    rows = sum(counts.values())  # records per dataset
    table = _readme()[_readme().index(BEGIN) :]
    evidence = re.search(r"\| `evidence` \|.*\| ([\d,]+) \|", table)
    assert evidence is not None and rows == int(evidence[1].replace(",", ""))


def _run(slug: str, version: str) -> dict[str, Any]:
    """A committed result's run.json (``version``: the results folder, e.g. ``v2-paper``)."""
    run = ROOT / "submissions" / slug / "results" / "sago-v1" / version / "run.json"
    return dict(json.loads(run.read_text(encoding="utf-8")))


def _model_time(slug: str, version: str) -> str:
    """A committed result's model time as the README writes it: ``15 min`` or ``1 h 0 min``."""
    minutes = round(_run(slug, version)["timings"]["model_seconds"] / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def test_the_readme_profile_durations_are_the_committed_model_times() -> None:
    readme = " ".join(_readme().split())
    smollm2, gemma = "huggingfacetb__smollm2-135m-instruct-q4_1", "google__gemma-3-270m-q4_k_m"
    qwen = "qwen__qwen2.5-coder-1.5b-instruct-q4_k_m"
    expected = (
        f"`smoke` (v1) {_model_time(smollm2, 'v1')} for SmolLM2-135M, {_model_time(gemma, 'v1')} for "
        f"Gemma-3-270M; `evidence` (v2) {_model_time(smollm2, 'v2')} for SmolLM2-135M to "
        f"{_model_time(qwen, 'v2')} for Qwen2.5-Coder-1.5B; `paper` (v2) {_model_time(smollm2, 'v2-paper')} "
        f"for SmolLM2-135M (batch {_run(smollm2, 'v2-paper')['batch_size']}, on a machine shared with other "
        f"work) and {_model_time(gemma, 'v2-paper')} for Gemma-3-270M (batch "
        f"{_run(gemma, 'v2-paper')['batch_size']}, summed over two one-thread processes)"
    )
    assert expected in readme


def test_the_quick_start_comes_before_the_first_commands_and_its_target_exists() -> None:
    readme = _readme()
    assert readme.index("make quickstart") < readme.index("```bash\nmake all")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^quickstart: .*?(?=^\S)", makefile, re.M | re.S)
    assert target is not None
    recipe = target[0]
    # the scratch folder is git-ignored and the run never writes the submissions folder
    assert "--out $(QUICKSTART)" in recipe and "--submissions-dir $(QUICKSTART)/submissions" in recipe
    assert "QUICKSTART ?= .scratch/quickstart" in makefile
    assert "/.scratch/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def test_the_readme_names_the_code_default_set_and_the_published_boards_version() -> None:
    """The README called v1 the default set and the one the published board reads; the code says v2."""
    from benchmark.schema import BOARD_SET_VERSION

    readme = " ".join(_readme().split())
    assert f"`{DEFAULT_SET}/{DEFAULT_SET_VERSION}` (the default for building and evaluating)" in readme
    assert f"the published board reads {BOARD_SET_VERSION})" in readme
    assert json.loads((ROOT / "leaderboard" / "leaderboard.json").read_text())["version"] == BOARD_SET_VERSION
    defaults = re.findall(r"`(?:variants/)?([\w-]+/v\d+)` \((?:frozen; )?the default", readme)
    assert defaults == [f"{DEFAULT_SET}/{DEFAULT_SET_VERSION}"] * len(defaults) and defaults
