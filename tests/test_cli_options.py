"""Every numeric option of every command is bounded above and below (and refuses NaN), so a huge or
absurd value is one line before anything is allocated or written, and ``--help`` states each range."""

from __future__ import annotations

import ast
import importlib
import math
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from benchmark import options
from benchmark.cli import cli, main

PACKAGE = Path(__file__).resolve().parent.parent / "benchmark"


def _tool_modules() -> list[str]:
    """Modules started with ``python -m``: those with an ``if __name__ == "__main__":`` block."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            found.append(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    return found


def _walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{path} {name}"
            yield from _walk(sub, f"{path} {name}")


def every_command() -> dict[str, click.Command]:
    """`sago` and its sub-commands, and the command of every ``python -m benchmark.<tool>``."""
    found = dict(_walk(cli, "sago"))
    for module in _tool_modules():
        for name, value in vars(importlib.import_module(module)).items():
            seen = {id(c) for c in found.values()}
            if isinstance(value, click.Command) and id(value) not in seen:
                found.update(_walk(value, f"{module}:{name}"))
    return found


COMMANDS = every_command()


def numeric_parameters() -> list[tuple[str, click.Parameter]]:
    return [
        (f"{path} {param.name}", param)
        for path, command in COMMANDS.items()
        for param in command.params
        if isinstance(param.type, click.types._NumberParamTypeBase)
    ]


def test_the_walk_finds_the_known_commands_and_numeric_options() -> None:
    assert {"sago analyze", "sago evaluate", "sago variants build", "sago leaderboard build"} <= set(COMMANDS)
    assert any(path.startswith("benchmark.harness.reproduce:") for path in COMMANDS)
    names = {name for name, _ in numeric_parameters()}
    assert {"sago analyze resamples", "sago analyze seed", "sago variants build n_items"} <= names


@pytest.mark.parametrize("name, param", numeric_parameters(), ids=[n for n, _ in numeric_parameters()])
def test_every_numeric_option_is_bounded(name: str, param: click.Parameter) -> None:
    kind = param.type
    assert isinstance(kind, click.IntRange | click.FloatRange), f"{name}: unbounded {kind.name}"
    assert kind.min is not None and kind.max is not None, f"{name}: {kind._describe_range()}"
    assert math.isfinite(kind.min) and math.isfinite(kind.max), name
    if isinstance(kind, click.FloatRange):
        assert isinstance(kind, options.FiniteRange), f"{name}: NaN passes a plain FloatRange"


def test_help_states_the_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--help"]) == 0
    assert "100<=x<=100000" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["analyze", "--resamples", str(10**12)], "--resamples"),
        (["analyze", "--seed", "-1"], "--seed"),
        (["evaluate", "--all", "--batch-size", "100000000"], "--batch-size"),
        (["variants", "build", "--min-llm-coverage", "nan"], "--min-llm-coverage"),
        (["variants", "rewrite", "--log", "x.jsonl", "--budget-s", "inf"], "--budget-s"),
        (["variants", "build", "--n-items", "10000000000"], "--n-items"),
    ],
)
def test_an_absurd_number_is_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(argv)
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.startswith("error: ") and needle in err and "\n" not in err, err


# ---- an unknown --set or --version is an error everywhere -------------------------------------------
MODEL = "huggingfacetb__smollm2-135m-instruct-q4_1"
T = "{tmp}"
UNKNOWN_SET: dict[str, list[str]] = {
    "sago analyze": ["analyze", "--out", f"{T}/lb.json"],
    "sago evaluate": ["evaluate", "--all"],
    "sago bench": ["bench", "--model", MODEL],
    "sago checkpoint-files": ["checkpoint-files", MODEL],
    "sago leaderboard build": ["leaderboard", "build", "--out", f"{T}/site"],
    "sago export lm-eval": ["export", "lm-eval", "--out", f"{T}/tasks"],
    "sago import lm-eval": ["import", "lm-eval", f"{T}/s.jsonl", "--out", f"{T}/x"],
    "sago variants build": ["variants", "build", "--rewriter", "none"],
    "sago variants rewrite": ["variants", "rewrite", "--log", f"{T}/log.jsonl"],
    "sago variants coverage": ["variants", "coverage", "--log", "README.md"],
    "sago variants verify": ["variants", "verify"],
    "sago variants publish": ["variants", "publish", "--repo-id", "a/b", "--tag", "v1"],
    "benchmark.harness.reproduce:main_command": ["harness.reproduce", MODEL, "--profile", "smoke"],
    "benchmark.tools.bench_peer:bench_peer": ["tools.bench_peer"],
    "benchmark.tools.bench_floor:bench_floor": ["tools.bench_floor"],
    "benchmark.tools.scoring_accuracy:scoring_accuracy": ["tools.scoring_accuracy"],
    "benchmark.tools.float64_bound:main_command": ["tools.float64_bound", MODEL, "--out", f"{T}/bound.json"],
    "benchmark.harness.parallel:worker": ["harness.parallel", MODEL],
}
"""Each command with a --set option, with the other arguments it needs (before the bad set is given)."""
FETCHES = {"sago variants download": "it fetches a set that is not here yet; the hub says whether it exists"}
MAKES_VERSION = {"sago variants build", "sago variants rewrite", "sago variants coverage"}
"""--version names the version these make (a new one is the point); their --set must be a known suite."""


def _commands_with_a_set() -> set[str]:
    return {path for path, c in COMMANDS.items() if any(p.name == "set_name" for p in c.params)}


def test_every_command_with_a_set_option_is_tried() -> None:
    assert _commands_with_a_set() == set(UNKNOWN_SET) | set(FETCHES)


CASES = [
    (command, option, value)
    for command in sorted(UNKNOWN_SET)
    for option, value in [("--set", "nosuch"), ("--version", "v999")]
    if not (option == "--version" and command in MAKES_VERSION)
]


@pytest.mark.parametrize("command, option, value", CASES)
def test_an_unknown_set_or_version_is_one_line(
    command: str, option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.replace(T, str(tmp_path)) for a in UNKNOWN_SET[command]] + [option, value]
    if command.startswith("sago "):
        status = main(argv)
    else:
        status = importlib.import_module(f"benchmark.{argv[0]}").main(argv[1:])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.startswith("error: ") and "\n" not in err, err
    assert value in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is written"
