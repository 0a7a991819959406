"""Reading files that strangers can edit: YAML and JSON with bounded size and depth, and no surprises.

Bad content raises :class:`~benchmark.errors.FileProblem` and nothing else, so a validator can go on with
the next file. YAML refuses what a submission never needs and an attacker would use (anchors and
aliases, merge keys, tags, several documents, duplicate keys, deep nesting, checked on the parser's
events before construction); JSON refuses duplicate keys and deep nesting.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from benchmark.errors import FileProblem

MAX_YAML_DEPTH = 16
MAX_JSON_DEPTH = 64


def read_text(path: Path, *, limit: int, fix: str) -> str:
    """The UTF-8 text of ``path``, refusing a missing, oversized, empty or undecodable file."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise FileProblem(path, f"{size} bytes is over the {limit}-byte limit for this file", fix)
        data = path.read_bytes()
    except OSError as err:
        raise FileProblem(path, f"cannot be read ({err.strerror or type(err).__name__})", fix) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise FileProblem(path, f"is not UTF-8 text (bad byte at offset {err.start})", fix) from None
    if not text.strip():
        raise FileProblem(path, "the file is empty", fix)
    return text


class _StrictLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type stubs here
    """``SafeLoader`` that refuses a key given twice in one mapping."""

    path: Path = Path("<yaml>")

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    raise FileProblem(
                        self.path,
                        f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                        "(the second value would silently win)",
                        "give each key once",
                    )
                seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _where(err: yaml.YAMLError) -> str:
    """``problem at line L, column C`` from a PyYAML error, on one line."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else str(problem)


def _check_yaml_events(text: str, path: Path, fix: str) -> None:
    """Refuse anchors, aliases, merge keys, tags, several documents and deep nesting, before construction."""
    depth = documents = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FileProblem(path, "uses a YAML anchor or alias (& or *)", "write every value out in full")
        if isinstance(event, yaml.ScalarEvent) and event.value == "<<" and event.style is None:
            raise FileProblem(path, "uses a YAML merge key (<<)", "write every key out in full")
        if getattr(event, "tag", None) is not None:
            raise FileProblem(path, f"uses an explicit YAML tag ({event.tag})", "remove the tag (e.g. !!str)")
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise FileProblem(
                    path, "holds more than one YAML document", "keep a single document (no ---)"
                )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise FileProblem(path, f"is nested deeper than {MAX_YAML_DEPTH} levels", fix)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(path: Path, *, limit: int, fix: str) -> Any:
    """Parse a small YAML file written by a person (see the module docstring for what is refused)."""
    text = read_text(path, limit=limit, fix=fix)
    try:
        _check_yaml_events(text, path, fix)
        loader = _StrictLoader(text)
        loader.path = path
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise FileProblem(path, f"not valid YAML ({_where(err)})", fix) from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise ValueError(f"duplicate key {key!r}")
        mapping[key] = value
    return mapping


def depth_of(value: Any) -> int:
    """Nesting depth of parsed JSON, computed without recursion.

    >>> depth_of(1), depth_of([]), depth_of({"a": [1, {"b": 2}]})
    (0, 1, 3)
    """
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


def parse_json(text: str | bytes, where: object, *, fix: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON text, refusing syntax errors, duplicate keys and nesting deeper than ``max_depth``."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        raise FileProblem(
            where, f"not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})", fix
        ) from None
    except RecursionError:
        raise FileProblem(where, f"JSON nested deeper than {max_depth} levels", fix) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise FileProblem(where, f"not valid JSON ({err})", fix) from None
    if depth_of(value) > max_depth:
        raise FileProblem(where, f"JSON nested deeper than {max_depth} levels", fix)
    return value


def load_json(path: Path, *, limit: int, fix: str) -> Any:
    """Read and parse a JSON file within ``limit`` bytes (see :func:`parse_json`)."""
    return parse_json(read_text(path, limit=limit, fix=fix), path, fix=fix)


def load_json_object(path: Path, *, limit: int, fix: str) -> dict[str, Any]:
    """Like :func:`load_json`, for files whose top level must be an object."""
    value = load_json(path, limit=limit, fix=fix)
    if not isinstance(value, dict):
        raise FileProblem(path, f"holds a JSON {type(value).__name__}, not an object", fix)
    return value
