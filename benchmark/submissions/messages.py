"""Schema errors of ``submission.yaml`` as plain sentences that name each key as the file spells it.

pydantic's location ``("model", "hub", "revision")`` holds the value of ``kind``, not a key anyone
wrote; each error becomes a ``(problem, fix)`` pair that reads like a reviewer's comment.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError


@dataclass(frozen=True)
class Shape:
    """The schema a file is read against: its top level, and the block whose keys depend on ``kind``."""

    top: type[BaseModel]
    """the file's model (``Submission``)."""
    block: str
    """the key of the tagged block (``model``)."""
    kinds: Mapping[str, type[BaseModel]]


_PATTERN_WORDS = {
    "revision": (
        "a full commit id",
        "write the 40-character commit id (lower-case hex) of the weights, never a branch or tag name",
    ),
    "sha256": ("a sha256", "write the 64-character sha256 (lower-case hex) of the model file"),
    "id": ("a Hub repository id", "write it as on the Hub, org/name (letters, digits, '_', '.', '-')"),
    "artefact": (
        "an artefact name",
        "write a name from benchmark/packaged.py (lower-case letters, digits, '_', '.', '-')",
    ),
    "url": ("an https:// address", "write the model's https:// page, or leave url out"),
}
"""For each key with a pattern: what the value should be, and how to write one."""


def key_path(
    loc: Sequence[int | str], block: str = "model", kinds: Sequence[str] = ("hub",)
) -> tuple[str, ...]:
    """The keys of a pydantic location as the file has them (the ``kind`` tag dropped).

    >>> key_path(("model", "hub", "revision")), key_path(("licence",)), key_path(("model",))
    (('model', 'revision'), ('licence',), ('model',))
    """
    keys = [str(part) for part in loc]
    if len(keys) > 1 and keys[0] == block and keys[1] in kinds:
        del keys[1]
    return tuple(keys)


def name_of(keys: Sequence[str]) -> str:
    """A key in words: ``'revision' under 'model'``.

    >>> name_of(("model", "revision")), name_of(("dtype",))
    ("'revision' under 'model'", "'dtype'")
    """
    inner = f"{keys[-1]!r}" if keys else "the file"
    return inner + "".join(f" under {parent!r}" for parent in reversed(keys[:-1]))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _unknown(keys: Sequence[str], schema: type[BaseModel], shape: Shape) -> tuple[str, str]:
    known = list(schema.model_fields)
    close = difflib.get_close_matches(keys[-1], known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    kind = next((name for name, block in shape.kinds.items() if block is schema), None)
    where = f"a {shape.block} of kind {kind}" if kind else "submission.yaml"
    return (
        f"{name_of(keys)} is not a key {where} has",
        f"remove it or correct its spelling{hint}; the keys are {', '.join(known)}",
    )


def _missing(keys: Sequence[str], schema: type[BaseModel]) -> tuple[str, str]:
    field = schema.model_fields.get(keys[-1]) if keys else None
    what = f": {field.description}" if field is not None and field.description else ""
    under = f", indented under '{keys[-2]}:'" if len(keys) > 1 else ""
    return f"{name_of(keys)} is missing", f"add the line '{keys[-1]}: …'{under}{what}"


def _choice(keys: Sequence[str], value: Any, expected: str) -> tuple[str, str]:
    return f"{name_of(keys)} is {_shown(value)}, which is not one of {expected}", "write one of these values"


def _text_type(keys: Sequence[str], value: Any) -> tuple[str, str]:
    if isinstance(value, bool | int | float):
        kind = "true/false" if isinstance(value, bool) else "a number"
        return (
            f"{name_of(keys)} is {_shown(value)}, which YAML read as {kind}, not as text",
            "put the value in quotes",
        )
    return f"{name_of(keys)} is {_shown(value)}, not text", "write it as one line of text"


def _one(error: Mapping[str, Any], shape: Shape) -> tuple[str, str]:
    keys = key_path(error["loc"], shape.block, tuple(shape.kinds))
    # a key of a block has the block's kind in its location (``model.hub.revision``): that kind's schema
    schema = shape.kinds[str(error["loc"][1])] if len(keys) < len(error["loc"]) else shape.top
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return _missing(keys, schema)
    if kind == "extra_forbidden":
        return _unknown(keys, schema, shape)
    if kind == "literal_error":
        return _choice(keys, value, str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", "))
    if kind == "union_tag_invalid":
        return _choice((*keys, "kind"), ctx.get("tag"), ", ".join(shape.kinds))
    if kind == "union_tag_not_found":
        return (
            f"{name_of(keys)} has no 'kind'",
            f"add 'kind: …' under '{keys[-1]}' ({', '.join(shape.kinds)})",
        )
    if kind in ("model_attributes_type", "model_type", "dict_type"):
        return (
            f"{name_of(keys)} is {_shown(value)}, not a block of keys",
            f"indent its keys under '{keys[-1]}:' (kind, then the keys of that kind)",
        )
    if kind == "string_pattern_mismatch":
        what, fix = _PATTERN_WORDS.get(keys[-1], ("in the expected form", "see docs/SUBMITTING.md"))
        return f"{name_of(keys)} is {_shown(value)}, which is not {what}", fix
    if kind == "string_type":
        return _text_type(keys, value)
    if kind == "string_too_short":
        return f"{name_of(keys)} is empty", "write a value"
    if kind == "string_too_long":
        limit = ctx.get("max_length")
        return f"{name_of(keys)} is longer than {limit} characters", f"shorten it to {limit} characters"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return (
            f"{name_of(keys)} is {_shown(value)}, not a whole number",
            "write the number as digits, e.g. 134515008",
        )
    if kind in ("greater_than", "less_than"):
        bound = f"above {ctx.get('gt')}" if kind == "greater_than" else f"below {ctx.get('lt')}"
        return f"{name_of(keys)} is {_shown(value)}, which is out of range", f"write a number {bound}"
    return f"{name_of(keys)}: {error['msg']}", "see docs/SUBMITTING.md for the allowed values"


def schema_problems(err: ValidationError, shape: Shape) -> list[tuple[str, str]]:
    """Every error of ``shape.top.model_validate`` as ``(problem, fix)``, in pydantic's order."""
    return [_one(error, shape) for error in err.errors()]
