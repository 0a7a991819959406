"""`sago variants build`, `rewrite` and `coverage` take the same sampling and rewriter options."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from benchmark.cli import main
from benchmark.variants.cli import REWRITERS, build, coverage, rewrite

SAMPLE = ["set_name", "version", "datasets", "n_items", "llm_items", "attempts"]
REWRITER = ["rewriter", "rewriter_model", "rewriter_url", "llama_server", "threads"]


def _options(command: click.Command) -> dict[str, click.Option]:
    return {p.name or "": p for p in command.params if isinstance(p, click.Option)}


def _same(option: click.Option) -> tuple[object, ...]:
    choices = option.type.choices if isinstance(option.type, click.Choice) else None
    return (option.opts, option.help, option.type.name, choices, option.multiple)


@pytest.mark.parametrize("name", SAMPLE)
def test_sampling_options_are_one_declaration(name: str) -> None:
    assert _same(_options(build)[name]) == _same(_options(rewrite)[name]) == _same(_options(coverage)[name])


@pytest.mark.parametrize("name", REWRITER)
def test_rewriter_options_are_one_declaration(name: str) -> None:
    assert _same(_options(build)[name]) == _same(_options(rewrite)[name])


def test_both_commands_accept_every_rewriter() -> None:
    for command in (build, rewrite):
        rewriter = _options(command)["rewriter"].type
        assert isinstance(rewriter, click.Choice) and tuple(rewriter.choices) == REWRITERS


def test_rewrite_without_a_rewriter_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    assert main(["variants", "rewrite", "--rewriter", "none", "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rewriter none" in err and not log.exists()
