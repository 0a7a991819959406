"""The package's import graph: no cycle (counting imports inside functions too) and no hidden import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "benchmark"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(node: ast.Import | ast.ImportFrom, module: str, path: Path, known: set[str]) -> set[str]:
    """The package modules one import statement loads (``from p import m`` loads module ``p.m`` if any)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for _ in range(node.level - 1):
            package = package.rsplit(".", 1)[0]
        base = f"{package}.{base}" if base else package
    found = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
    if base in known and len(found) < len(node.names):
        found.add(base)  # a name defined in the module (or package) itself
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> package modules it imports anywhere in its body (module level, functions, TYPE_CHECKING)."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _imported(node, name, path, known)
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (depth-first search with colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_finder_sees_a_cycle_and_a_clean_graph() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_function_level_and_package_imports() -> None:
    graph = import_graph()
    assert "benchmark.harness.cli" in graph["benchmark.cli"]  # imported inside a function
    assert "benchmark.api" in graph["benchmark"]  # the package's lazy attribute access
    assert "benchmark.variants.frozen" in graph["benchmark.harness.sets"]


def test_benchmark_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_imports_by_name_at_run_time() -> None:
    hidden = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                if called.endswith("import_module") or called == "__import__":
                    hidden.append(f"{name}:{node.lineno} {called}")
    assert hidden == []


# ---- layers: what each unit may import (docs/ARCHITECTURE.md shows the same table) -------------------
CORE = "core"
UNITS_OF_MODULES = {
    "benchmark.integrity": "integrity",
    "benchmark.testing": "testing",
    "benchmark.api": "api",
    "benchmark": "api",  # the package's lazy attributes are the API
    "benchmark.cli": "cli",
    "benchmark.__main__": "cli",
}
"""top-level modules that are not core: each is its own unit."""
LAYERS: dict[str, set[str]] = {
    CORE: {CORE},
    "integrity": {CORE, "axes"},
    "variants": {CORE},
    "models": {CORE, "submissions"},
    "harness": {CORE, "integrity", "variants", "models", "axes", "submissions", "testing"},
    "axes": {CORE},
    "stats": {CORE, "integrity", "axes", "variants", "submissions"},
    "pipeline": {CORE, "integrity", "axes", "stats", "variants", "submissions"},
    "submissions": {CORE, "integrity"},
    "site": {CORE, "axes", "stats", "pipeline", "variants", "submissions"},
    "testing": {CORE, "models"},
    "lmeval": {CORE, "integrity", "axes", "stats", "variants"},
    "cli": {CORE, "variants", "harness", "stats", "pipeline", "site", "submissions", "lmeval", "tools"},
    "api": {
        CORE,
        "variants",
        "models",
        "harness",
        "axes",
        "stats",
        "pipeline",
        "site",
        "submissions",
        "integrity",
        "testing",
    },
    "tools": {
        CORE,
        "integrity",
        "variants",
        "models",
        "harness",
        "axes",
        "stats",
        "pipeline",
        "submissions",
        "site",
        "testing",
        "lmeval",
    },
}
"""unit -> the units it may import (itself always)."""
TOOLS = "tools"
"""performance and evidence tools: they may import any unit below the entry points, and no runtime unit
imports them (the ``sago`` group alone names ``sago bench``, inside the function that imports it on use)."""


def unit(module: str) -> str:
    """The unit a module belongs to: its subpackage, a top-level module named in UNITS_OF_MODULES, or core."""
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return UNITS_OF_MODULES.get(module, CORE)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every import the table does not allow."""
    return sorted(
        f"{importer} -> {target}"
        for importer, targets in graph.items()
        for target in targets
        if unit(target) != unit(importer) and unit(target) not in LAYERS[unit(importer)]
    )


def test_the_layer_check_flags_an_import_against_the_table() -> None:
    assert unit("benchmark.stats.sgs") == "stats" and unit("benchmark.schema") == CORE
    assert unit("benchmark.integrity") == "integrity"
    graph = {"benchmark.axes.text": {"benchmark.stats.sgs", "benchmark.schema"}, "benchmark.stats.sgs": set()}
    assert layer_violations(graph) == ["benchmark.axes.text -> benchmark.stats.sgs"]


def test_every_import_follows_the_layers() -> None:
    assert set(LAYERS) == {unit(m) for m in _modules()}
    assert layer_violations(import_graph()) == []


def test_no_runtime_unit_imports_the_tools() -> None:
    """Only ``benchmark.cli`` imports a tool, and only inside a function (run when the command runs)."""
    graph = import_graph()
    importers = sorted(
        m for m, targets in graph.items() if unit(m) != TOOLS and any(unit(t) == TOOLS for t in targets)
    )
    assert importers == ["benchmark.cli"]
    assert all(TOOLS not in LAYERS[u] for u in LAYERS if u != "cli")
    tree = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    top = {
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(name.startswith("benchmark.tools") for name in top)


JUDGE_CALIBRATION = ("benchmark.tools.judge_calibration",)
"""the research that chose the politeness judges' parameters: tools, whose numbers the runtime copies."""


def test_the_judge_calibration_is_a_tool_no_runtime_unit_imports() -> None:
    graph = import_graph()
    assert set(JUDGE_CALIBRATION) <= set(graph)
    assert all(unit(m) == TOOLS for m in JUDGE_CALIBRATION)
    importers = [m for m, targets in graph.items() if unit(m) != TOOLS and targets & set(JUDGE_CALIBRATION)]
    assert importers == []


def test_the_architecture_page_shows_the_same_layers() -> None:
    page = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    shown: dict[str, set[str]] = {}
    for row in re.findall(r"^\| `(\w+)` \|[^\n]*\| ((?:`\w+`(?:, )?)+) \|$", page, flags=re.MULTILINE):
        shown[row[0]] = set(re.findall(r"`(\w+)`", row[1]))
    assert shown == LAYERS, "docs/ARCHITECTURE.md's 'may import' table differs from LAYERS here"


# ---- no dict[str, Any] document crosses a package boundary ------------------------------------------
UNTYPED = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str, Any\]")
"""an untyped JSON object in an annotation."""
JSON_EDGE: dict[str, str] = {
    "benchmark.safeload": "parses raw JSON/YAML, before any document exists",
    "benchmark.results.write_json": "serialises an object a document's to_json gave",
    "benchmark.jsonio.plain_json": "serialises a provenance document's object (Document.dumps)",
    "benchmark.harness.collect.collect": "run_info: fields the harness copies into run.json as given",
    "benchmark.harness.finalize.finalize": "extra: fields merged into run.json as given",
    "benchmark.stats.api_models.ApiRow.from_json": "the API table's serialisation boundary itself",
    "benchmark.model_facts.GGUFFacts.to_json": "model_facts.json's serialisation boundary (its writer's)",
    **{
        f"benchmark.documents.{cls}.{member}": "the documents' serialisation boundary itself"
        for cls in (
            "RunDocument",
            "PlanDocument",
            "DoneDocument",
            "SummaryDocument",
            "LeaderboardDocument",
            "ManifestDocument",
        )
        for member in ("from_json", "check", "to_json", "data", "version_of", "parse")
    },
}
"""crossings allowed to carry a raw JSON object (qualified name -> why); a module name allows all of it."""


def _package(module: str) -> str:
    """The package a module belongs to: a subpackage of ``benchmark``, or a top-level module itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if (PACKAGE / Path(*parts[1:2])).is_dir() and len(parts) > 1 else module


def _aliases(tree: ast.Module) -> set[str]:
    """Module-level names bound to an untyped JSON object type (``Row = dict[str, Any]``)."""
    return {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign) and UNTYPED.search(ast.unparse(node.value))
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _untyped(annotation: ast.expr | None, aliases: set[str]) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return bool(UNTYPED.search(text)) or any(re.search(rf"\b{a}\b", text) for a in aliases)


def _signature_untyped(fn: ast.FunctionDef | ast.AsyncFunctionDef, aliases: set[str]) -> bool:
    args = fn.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return _untyped(fn.returns, aliases) or any(
        a is not None and _untyped(a.annotation, aliases) for a in every
    )


def _members(cls: ast.ClassDef, defined: dict[str, ast.stmt]) -> dict[str, ast.stmt]:
    """Public methods, properties and annotated fields of a class, with those of bases from its module."""
    found: dict[str, ast.stmt] = {}
    for base in cls.bases:
        parent = defined.get(ast.unparse(base))
        if isinstance(parent, ast.ClassDef):
            found |= _members(parent, defined)
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        else:
            continue
        if not name.startswith("_"):
            found[name] = node
    return found


def untyped_exports(tree: ast.Module, module: str) -> dict[str, list[str]]:
    """name -> the qualified members of that function or class whose annotations hold an untyped object."""
    aliases = _aliases(tree)
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    found: dict[str, list[str]] = {}
    for name, node in defined.items():
        if isinstance(node, ast.FunctionDef):
            bad = [f"{module}.{name}"] if _signature_untyped(node, aliases) else []
        else:
            bad = [
                f"{module}.{name}.{member}"
                for member, stmt in _members(node, defined).items()
                if (isinstance(stmt, ast.AnnAssign) and _untyped(stmt.annotation, aliases))
                or (isinstance(stmt, ast.FunctionDef) and _signature_untyped(stmt, aliases))
            ]
        found[name] = bad
    return found


def _allowed(qualified: str) -> bool:
    return any(qualified == edge or qualified.startswith(f"{edge}.") for edge in JSON_EDGE)


def untyped_crossings(sources: dict[str, str]) -> list[str]:
    """``importer -> member`` for every name imported from another package whose API carries a raw object.

    ``sources`` maps module name to source text; a name re-exported by a package ``__init__`` is followed
    to the module that defines it.
    """
    trees = {name: ast.parse(text) for name, text in sources.items()}
    exports = {name: untyped_exports(tree, name) for name, tree in trees.items()}

    def resolve(module: str, name: str, depth: int = 0) -> list[str]:
        if name in exports.get(module, {}):
            return exports[module][name]
        for node in trees[module].body if module in trees and depth < 4 else []:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        return resolve(node.module, alias.name, depth + 1)
        return []

    crossings = set()
    for importer, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("benchmark"):
                continue
            target = node.module or ""
            if node.level or _package(target) == _package(importer):
                continue
            for alias in node.names:
                crossings |= {f"{importer} -> {q}" for q in resolve(target, alias.name) if not _allowed(q)}
    return sorted(crossings)


def test_the_crossing_checker_flags_an_untyped_document() -> None:
    sources = {
        "benchmark.stats.maker": (
            "from typing import Any\n"
            "Row = dict[str, Any]\n"
            "def make(x: int) -> dict[str, Any]: ...\n"
            "def rows() -> list[Row]: ...\n"
            "def typed(x: int) -> str: ...\n"
            "class Doc:\n    body: Mapping[str, Any]\n    def _own(self) -> dict[str, Any]: ...\n"
        ),
        "benchmark.stats": "from benchmark.stats.maker import make\n",
        "benchmark.site.page": (
            "from benchmark.stats import make\n"
            "from benchmark.stats.maker import Doc, rows, typed\n"
            "def f():\n    from benchmark.safeload import load_json_object\n"
        ),
        "benchmark.safeload": "from typing import Any\ndef load_json_object() -> dict[str, Any]: ...\n",
        "benchmark.stats.other": "from benchmark.stats.maker import make\n",  # same package
    }
    assert untyped_crossings(sources) == [
        "benchmark.site.page -> benchmark.stats.maker.Doc.body",
        "benchmark.site.page -> benchmark.stats.maker.make",
        "benchmark.site.page -> benchmark.stats.maker.rows",
    ]


def test_no_untyped_document_crosses_a_package_boundary() -> None:
    sources = {name: path.read_text(encoding="utf-8") for name, path in _modules().items()}
    crossings = untyped_crossings(sources)
    assert crossings == [], "raw dict[str, Any] across packages (type it, or document the JSON edge):\n" + (
        "\n".join(crossings)
    )
