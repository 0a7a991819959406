"""Every way to start the benchmark shares one error path: a bad option is one line and exit status 2.

The entry points are found, not listed: every module of the package with a ``__main__`` block (plus
``benchmark/__main__.py``, which is ``sago``), so a tool added later is covered without editing this file.
The Makefile's targets must start the package only through those entry points.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmark import cli, entry

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "benchmark"
BAD_OPTION = "--no-such-option-xyz"


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _main_block(tree: ast.Module) -> ast.If | None:
    """The module's ``if __name__ == "__main__":`` block, if any."""
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "__name__ == '__main__'",
            "'__main__' == __name__",
        ):
            return node
    return None


def entry_modules() -> list[str]:
    """Modules run by ``python -m``: those with a ``__main__`` block, and the package's ``__main__``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name == "__main__.py" or _main_block(tree) is not None:
            found.append(_module(path))
    return found


ENTRY_MODULES = entry_modules()


def test_the_scan_finds_the_known_tools() -> None:
    assert {
        "benchmark.__main__",
        "benchmark.cli",
        "benchmark.harness.reproduce",
        "benchmark.tools.gpu_check",
        "benchmark.tools.bench_peer",
        "benchmark.tools.bench_floor",
        "benchmark.tools.scoring_accuracy",
        "benchmark.harness.parallel",
        "benchmark.tools.bench_engines",
        "benchmark.stats.claims",
    } <= set(ENTRY_MODULES)


@pytest.mark.parametrize("module", [m for m in ENTRY_MODULES if not m.endswith("__main__")])
def test_the_main_block_only_calls_main(module: str) -> None:
    """``raise SystemExit(main())`` and nothing else: all the work (and every error) goes through main."""
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    block = _main_block(ast.parse(path.read_text(encoding="utf-8")))
    assert block is not None
    assert [ast.unparse(s) for s in block.body] == ["raise SystemExit(main())"], (
        f"{path}: its __main__ block must be `raise SystemExit(main())`, with main calling "
        "benchmark.entry.run_command"
    )


def _main_of(module: str) -> Callable[[list[str]], int]:
    if module == "benchmark.__main__":  # running it exits; its one statement calls cli.main
        source = (PACKAGE / "__main__.py").read_text(encoding="utf-8")
        assert "from benchmark.cli import main" in source and "sys.exit(main())" in source
        return cli.main
    imported = __import__(module, fromlist=["main"])
    main: Callable[[list[str]], int] = imported.main
    return main


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_a_bad_option_is_one_line_and_exit_status_2(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = _main_of(module)([BAD_OPTION])
    captured = capsys.readouterr()
    assert status == entry.USER_ERROR, captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    assert BAD_OPTION in captured.err and "--help" in captured.err
    assert "Traceback" not in captured.out + captured.err


def test_the_wrapper_maps_each_kind_of_failure() -> None:
    import click

    from benchmark.errors import SagoError

    def raising(error: BaseException) -> click.Command:
        def fail() -> None:
            raise error

        return click.Command("tool", callback=fail)

    assert entry.run_command(raising(SagoError("x.json: broken\n  twice; fix it")), [], "tool") == 2
    assert entry.run_command(raising(click.FileError("a.txt")), [], "tool") == 2
    assert entry.run_command(raising(SystemExit(1)), [], "tool") == 1  # "outputs differ" stays 1
    assert entry.run_command(raising(click.exceptions.Abort()), [], "tool") == entry.ABORTED
    assert entry.run_command(click.Command("tool", callback=lambda: None), ["--help"], "tool") == 0


def test_a_tool_started_with_python_m_prints_one_line(tmp_path: Path) -> None:
    """The whole chain in a fresh interpreter: ``python -m`` → ``__main__`` block → main → exit status."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmark.stats.claims", str(tmp_path / "README.md"), BAD_OPTION],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and BAD_OPTION in done.stderr


# ---- the Makefile starts the package only through those entry points --------------------------------
MAKE_RUNS = re.compile(r"\$\((?:SAGO)\)|-m benchmark(?:\.[\w.]+)?|-c\b.*benchmark|import benchmark")


def test_every_makefile_target_starts_the_package_through_an_entry_point() -> None:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = [line.strip() for line in text.splitlines() if line.startswith("\t")]
    starts = [m.group(0) for line in recipes for m in MAKE_RUNS.finditer(line)]
    assert "$(SAGO)" in starts
    allowed = {"$(SAGO)", "-m benchmark", *(f"-m {m}" for m in ENTRY_MODULES)}
    assert [s for s in starts if s not in allowed] == []
    assert "SAGO ?= $(PY) -m benchmark" in text
