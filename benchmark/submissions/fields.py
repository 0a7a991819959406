"""Every key of ``submission.yaml`` with what it may hold, read from the schema itself.

The Submit page lists these, so the list cannot drift from what the validator accepts.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic.fields import FieldInfo

from benchmark.endpoints import KEY_ENV_PREFIX
from benchmark.packaged import ARTEFACTS
from benchmark.submissions.schema import HEX40, HEX64, MODEL_KINDS, Submission


@dataclass(frozen=True)
class FieldDoc:
    """One key of submission.yaml."""

    key: str
    parent: str | None
    """the block it sits in (``model``), None at the top level."""
    kinds: tuple[str, ...]
    """for a key of the ``model`` block: the kinds that have it."""
    required: bool
    allowed: str
    """what it may hold, in words."""
    default: str | None
    """the value used when it is left out (None: required, or no value)."""
    description: str

    @property
    def path(self) -> str:
        """``model.revision``-style path, for tests and anchors."""
        return f"{self.parent}.{self.key}" if self.parent else self.key


def gguf_artefacts() -> list[str]:
    """Names of the packaged model files (GGUF) a ``kind: packaged`` model may name."""
    return [name for name in ARTEFACTS if ARTEFACTS.get(name).filename.endswith(".gguf")]


def _constraint(info: FieldInfo, name: str) -> Any:
    for item in info.metadata:
        value = getattr(item, name, None)
        if value is not None:
            return value
    return None


def _literals(annotation: Any) -> list[str] | None:
    """The allowed values of a ``Literal`` (or an optional one)."""
    if typing.get_origin(annotation) is Literal:
        return [str(v) for v in typing.get_args(annotation)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arm in typing.get_args(annotation):
            if (found := _literals(arm)) is not None:
                return found
    return None


def _pattern_words(key: str, pattern: str) -> str:
    if pattern == HEX40:
        return "40 hex characters (0-9, a-f): a full commit id"
    if pattern == HEX64:
        return "64 hex characters (0-9, a-f)"
    if key == "id":
        return "org/name, as in the model's Hub address"
    if key == "artefact":
        return "one of " + ", ".join(gguf_artefacts())
    if pattern.startswith("^https://"):
        return "an https:// address"
    if pattern.startswith("^https?://"):
        return "https:// and a public host name (no IP, user or port but 443), then a path"
    if key == "key_env":
        return f"{KEY_ENV_PREFIX} then A-Z, 0-9 and _"
    if key in ("model", "snapshot"):
        return "a name of letters, digits and . _ : - (model also /), up to 128 characters"
    return f"text matching {pattern}"


def allowed(key: str, info: FieldInfo) -> str:
    """What a field may hold, in words.

    >>> allowed("dtype", Submission.model_fields["dtype"])
    'auto | float32 | bfloat16 | float16'
    >>> allowed("parameters", Submission.model_fields["parameters"])
    'a whole number above 0'
    """
    choices = _literals(info.annotation)
    if choices is not None:
        return " | ".join(choices)
    pattern, longest = _constraint(info, "pattern"), _constraint(info, "max_length")
    if pattern is not None:
        words = _pattern_words(key, str(pattern))
        return f"{words}, up to {longest} characters" if longest and key in ("id", "url") else words
    if _constraint(info, "gt") is not None:
        return f"a whole number above {_constraint(info, 'gt')}"
    if _constraint(info, "ge") is not None and _constraint(info, "le") is not None:
        return f"a whole number from {_constraint(info, 'ge')} to {_constraint(info, 'le')}"
    if key == "model":
        return "a block of keys: kind, then the keys of that kind (below)"
    return f"text, up to {longest} characters" if longest else "text"


def _doc(key: str, info: FieldInfo, parent: str | None, kinds: tuple[str, ...]) -> FieldDoc:
    default = None if info.is_required() or info.default is None else str(info.default)
    return FieldDoc(
        key, parent, kinds, info.is_required(), allowed(key, info), default, info.description or ""
    )


def describe_fields() -> list[FieldDoc]:
    """Every top-level key in schema order, then each key of the ``model`` block (``kind`` once).

    >>> [f.path for f in describe_fields()][:3], [f.path for f in describe_fields()][-3:]
    (['schema_version', 'name', 'model'], ['model.snapshot', 'model.key_env', 'model.concurrency'])
    """
    docs = [_doc(key, info, None, ()) for key, info in Submission.model_fields.items()]
    seen: dict[str, list[str]] = {}
    infos: dict[str, FieldInfo] = {}
    for kind, block in MODEL_KINDS.items():
        for key, info in block.model_fields.items():
            seen.setdefault(key, []).append(kind)
            infos.setdefault(key, info)
    for key, kinds in seen.items():
        if key == "kind":  # one row for every kind, each described
            described = "; ".join(f"{k}: {MODEL_KINDS[k].model_fields['kind'].description}" for k in kinds)
            docs.append(FieldDoc("kind", "model", tuple(kinds), True, " | ".join(kinds), None, described))
        else:
            docs.append(_doc(key, infos[key], "model", tuple(kinds)))
    return docs
