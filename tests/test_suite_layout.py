"""The test suite's own layout: one import style for shared code, and every test module holds tests."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports(path: Path) -> list[str]:
    """Every module a file imports, as written (``from x import y`` gives ``x``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_shared_code_comes_from_helpers_never_from_another_test_module() -> None:
    wrong = [
        f"{path.name}: {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] in ("tests",) or name.split(".")[-1].startswith("test_")
    ]
    assert wrong == [], "import shared test code as `from helpers.<module> import ...`: " + ", ".join(wrong)


def test_every_test_module_holds_tests() -> None:
    empty = [
        path.name
        for path in sorted(TESTS.glob("test_*.py"))
        if not any(
            isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert empty == [], f"modules without a test belong in tests/helpers/: {empty}"
