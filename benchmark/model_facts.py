"""What a packaged model really is and what it really received, read from its GGUF file.

A name does not carry these facts: a chat template may add a system turn to every prompt, a file called
Q4_1 keeps its embeddings in Q8_0. They are read from the GGUF metadata and tensor table, and from the
template rendered exactly as the harness renders a prompt. No statistic is computed here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmark.errors import FileProblem
from benchmark.safeload import load_json_object

Messages = Sequence[Mapping[str, str]]
Render = Callable[[Messages], str]
"""a chat template: messages -> the text the model reads (``add_generation_prompt`` on)."""

# texts no template writes itself (invisible separators around a tag), so they can be found again
_PROBE_SYSTEM = "\u2063SYSTEM-PROBE\u2063"
_PROBE_USER = "\u2063USER-PROBE\u2063"


@dataclass(frozen=True)
class SystemTurn:
    """The system turn a chat template writes before a lone user turn."""

    text: str | None
    how: str
    """``default`` (inserted when none is given), ``none`` or ``unsupported`` (refused)."""


def default_system_turn(render: Render) -> SystemTurn:
    """The system text ``render`` puts before a lone user turn: where an explicit one sits, a default
    one sits too.

    >>> chatml = lambda ms: "".join(f"<{m['role']}>{m['content']}</>" for m in ms) + "<assistant>"
    >>> default_system_turn(chatml)
    SystemTurn(text=None, how='none')
    >>> qwen = lambda ms: chatml(ms if ms[0]["role"] == "system" else [{"role": "system",
    ...     "content": "You are Qwen."}, *ms])
    >>> default_system_turn(qwen)
    SystemTurn(text='You are Qwen.', how='default')
    """
    user = [{"role": "user", "content": _PROBE_USER}]
    alone = render(user)
    try:
        with_system = render([{"role": "system", "content": _PROBE_SYSTEM}, *user])
    except Exception:  # noqa: BLE001 - a template may raise anything (raise_exception) on a system turn
        return SystemTurn(None, "unsupported")
    if _PROBE_SYSTEM not in with_system:
        return SystemTurn(None, "unsupported")
    before, after = with_system.split(_PROBE_SYSTEM, 1)
    if alone.startswith(before) and alone.endswith(after) and len(alone) > len(before) + len(after):
        return SystemTurn(alone[len(before) : len(alone) - len(after)], "default")
    # No default in the system turn's place; it may still write text before the user turn that the
    # explicit form replaces (a template that merges system text into the user turn writes none then).
    return SystemTurn(None, "none")


@dataclass(frozen=True)
class GGUFFacts:
    """A GGUF file's lineage, size and quantisation, from its metadata and tensor table."""

    architecture: str
    source_name: str | None
    """``general.name``: the model the file was converted from, as its converter named it."""
    organization: str | None
    finetune: str | None
    size_label: str | None
    file_type: str | None
    """``general.file_type`` by gguf's own names (``MOSTLY_Q4_1``): what the file says it is."""
    quantization_version: int | None
    parameters: int
    """elements of every tensor in the file (a tied output matrix is stored once)."""
    bits_per_weight: float
    """bytes of every tensor × 8 / elements: the file's effective precision, scales included."""
    weight_types: dict[str, float]
    """share of the elements stored in each ggml type (``Q4_1``: 0.789 …), largest first."""
    context_length: int | None
    chat_template: str | None

    def to_json(self) -> dict[str, Any]:
        """The template left out (it is hashed where stored)."""
        out = asdict(self)
        del out["chat_template"]
        return out


def _field(reader: Any, key: str, convert: Callable[[Any], Any] = lambda value: value) -> Any:
    """The metadata value ``key`` through ``convert`` (None: the file has no such key)."""
    field = reader.fields.get(key)
    return None if field is None else convert(field.contents())


def gguf_facts(path: Path) -> GGUFFacts:
    """Read ``path``'s metadata and tensor table (no weights are dequantised)."""
    import gguf  # the reader maps the file; imported on use like the other model libraries

    reader = gguf.GGUFReader(str(path))
    arch = str(_field(reader, "general.architecture"))
    elements: Counter[str] = Counter()
    stored = 0
    for tensor in reader.tensors:
        elements[tensor.tensor_type.name] += int(tensor.n_elements)
        stored += int(tensor.n_bytes)
    total = sum(elements.values())
    return GGUFFacts(
        architecture=arch,
        source_name=_field(reader, "general.name"),
        organization=_field(reader, "general.organization"),
        finetune=_field(reader, "general.finetune"),
        size_label=_field(reader, "general.size_label"),
        file_type=_field(reader, "general.file_type", lambda value: gguf.LlamaFileType(int(value)).name),
        quantization_version=_field(reader, "general.quantization_version", int),
        parameters=total,
        bits_per_weight=round(stored * 8 / total, 4),
        weight_types={k: round(v / total, 4) for k, v in elements.most_common()},
        context_length=_field(reader, f"{arch}.context_length", int),
        chat_template=_field(reader, "tokenizer.chat_template"),
    )


FACTS_FILE = "model_facts.json"
"""``leaderboard/model_facts.json``: written by ``make model-facts``, read by the site's model pages."""
FACTS_SCHEMA_VERSION = 1
FACTS_LIMIT = 4 << 20
_REMAKE = "run `make model-facts` to write it again"


@dataclass(frozen=True)
class PackagedFacts:
    """One packaged model's entry of ``model_facts.json``: the file that ran and what it received."""

    slug: str
    file_sha256: str
    """sha256 of the GGUF file the facts were read from (a run records the one it loaded)."""
    chat_template_sha256: str | None
    """sha256 of the template applied (None: prompts went to the model raw)."""
    system_turn: SystemTurn | None
    """the system turn the applied template writes before a lone user turn (None: no template applied)."""
    example_prompt: str
    example_rendered: str
    """the same prompt exactly as the model received it (template applied, if any)."""
    example_where: str
    gguf: GGUFFacts


_KINDS: dict[type, str] = {str: "a text", int: "a whole number", float: "a number", dict: "an object"}


def _typed(value: object, where: str, kind: type, *, optional: bool = False) -> Any:
    """``value`` when it is a ``kind`` (a boolean is none of them, an integer is also a number; None is
    one when ``optional``), else one line naming ``where``."""
    if optional and value is None:
        return None
    if isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool):
        return float(value) if kind is float else value  # type: ignore[arg-type]
    raise FileProblem(FACTS_FILE, f"{where} is not {_KINDS[kind]}", _REMAKE)


def _gguf(data: Mapping[str, Any], where: str) -> GGUFFacts:
    def get(key: str, kind: type, optional: bool = True) -> Any:
        return _typed(data.get(key), f"{where}.{key}", kind, optional=optional)

    types = get("weight_types", dict, optional=False)
    return GGUFFacts(
        architecture=get("architecture", str, optional=False),
        source_name=get("source_name", str),
        organization=get("organization", str),
        finetune=get("finetune", str),
        size_label=get("size_label", str),
        file_type=get("file_type", str),
        quantization_version=get("quantization_version", int),
        parameters=get("parameters", int) or 0,
        bits_per_weight=get("bits_per_weight", float, optional=False),
        weight_types={str(k): _typed(v, f"{where}.weight_types.{k}", float) for k, v in types.items()},
        context_length=get("context_length", int),
        chat_template=None,
    )


def packaged_facts(slug: str, entry: Mapping[str, Any]) -> PackagedFacts:
    """One ``models.<slug>`` entry, typed; a value of another shape is one line naming it."""
    where = f"models.{slug}"

    def get(data: Mapping[str, Any], key: str, kind: type, optional: bool = False) -> Any:
        """``data[key]``, ``key`` a dotted path below the entry (its last part is looked up)."""
        return _typed(data.get(key.rsplit(".", 1)[-1]), f"{where}.{key}", kind, optional=optional)

    example = get(entry, "example", dict)
    file_sha256 = get(entry, "file_sha256", str)
    template_sha256 = get(entry, "chat_template_sha256", str, optional=True)
    turn = get(entry, "default_system_turn", dict, optional=True)
    if turn is not None:
        turn = SystemTurn(
            get(turn, "default_system_turn.text", str, True), get(turn, "default_system_turn.how", str)
        )
    return PackagedFacts(
        slug=slug,
        file_sha256=file_sha256,
        chat_template_sha256=template_sha256,
        system_turn=turn,
        example_prompt=get(example, "example.prompt", str),
        example_rendered=get(example, "example.rendered", str),
        example_where=f"{get(example, 'example.dataset', str)} item {get(example, 'example.item_id', str)}",
        gguf=_gguf(get(entry, "gguf", dict), f"{where}.gguf"),
    )


def read_model_facts(path: Path) -> dict[str, PackagedFacts]:
    """``model_facts.json`` by slug ({} when the file is absent: the pages then show no file facts)."""
    if not path.is_file():
        return {}
    data = load_json_object(path, limit=FACTS_LIMIT, fix=_REMAKE)
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FACTS_SCHEMA_VERSION:
        raise FileProblem(path, f"schema_version {version!r} is not one this sago-bench reads", _REMAKE)
    models = _typed(data.get("models"), "models", dict)
    return {
        str(slug): packaged_facts(str(slug), _typed(e, f"models.{slug}", dict)) for slug, e in models.items()
    }
