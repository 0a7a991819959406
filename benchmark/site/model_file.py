"""What ran, for each model's page: the facts of its weights file and the exact prompt it received
(``leaderboard/model_facts.json``, read from the packaged files by ``make model-facts``), and how many
of its responses are degenerate (``models[].run.truncated[]`` of leaderboard.json).

A file's facts are shown only beside a run that loaded that very file (run.json's ``file_sha256``) and
treated the prompts as the facts say (a chat template applied, or the prompts sent raw): facts of
another file would describe a model that did not run. Sentences are made here, so the template only
prints them and a test can hold them against the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchmark.documents import RunDocument
from benchmark.model_facts import GGUFFacts, PackagedFacts
from benchmark.site.facts import Truncation, percent
from benchmark.stats.validity import ALL_DATASETS, LOOP_PERIOD, LOOP_TAIL

DEGENERATE_RULE = (
    f"it is cut at the token cap and its last {LOOP_TAIL} characters are one unit of at most {LOOP_PERIOD} "
    "characters repeated (a token loop)"
)
"""when a response counts as degenerate (:func:`benchmark.stats.validity.degenerate`), in words."""


@dataclass(frozen=True)
class FileFacts:
    """The lines a model page shows about its weights file and its prompt."""

    system_turn: str
    """what was put before every prompt, in words."""
    example_where: str
    """the item whose prompt is shown (``dataset item id``)."""
    example_rendered: str
    """that prompt exactly as the model received it."""
    lineage: str
    """what the file was converted from."""
    precision: str
    """the file type it declares and the bits per weight its tensor table spends."""
    context_length: str


def system_turn_text(facts: PackagedFacts) -> str:
    """The system turn before every prompt, in words (quoted where a template inserts one).

    >>> from benchmark.model_facts import SystemTurn
    >>> f = PackagedFacts("s", "0" * 64, "1" * 64, SystemTurn("You are Qwen.", "default"), "", "", "",
    ...     GGUFFacts("qwen2", None, None, None, None, None, None, 1, 5.0, {}, None, None))
    >>> system_turn_text(f)
    '“You are Qwen.”, which its chat template inserts before every prompt (the harness sends one user turn)'
    """
    turn = facts.system_turn
    if facts.chat_template_sha256 is None:
        return "none: the prompts were sent as written, without a chat template"
    if turn is not None and turn.how == "default" and turn.text:
        return (
            f"“{turn.text}”, which its chat template inserts before every prompt (the harness sends one "
            "user turn)"
        )
    if turn is not None and turn.how == "unsupported":
        return "none (its chat template takes no system turn)"
    return "none (its chat template inserts none by default)"


def lineage_text(gguf: GGUFFacts) -> str:
    """What the file says it was converted from: name, organisation, fine-tune, architecture, size.

    >>> lineage_text(GGUFFacts("llama", "Smollm2 135M", "HuggingFaceTB", "ep2", "135M", None, None,
    ...     134515008, 5.7, {}, None, None))
    'Smollm2 135M · HuggingFaceTB · fine-tune ep2 · llama architecture, 134,515,008 weights'
    """
    parts = [
        gguf.source_name or "name not recorded",
        *([gguf.organization] if gguf.organization else []),
        *([f"fine-tune {gguf.finetune}"] if gguf.finetune else []),
        f"{gguf.architecture} architecture, {gguf.parameters:,} weights",
    ]
    return " · ".join(parts)


def precision_text(gguf: GGUFFacts) -> str:
    """The declared file type beside the precision the tensor table really spends.

    >>> precision_text(GGUFFacts("llama", None, None, None, None, "MOSTLY_Q4_1", 2, 1, 5.7437,
    ...     {"F32": 0.0003, "Q4_1": 0.7893, "Q8_0": 0.2105}, None, None))
    'Q4_1 by its file type; 5.74 bits per weight in its tensor table (Q4_1 78.9 %, Q8_0 21.1 %, F32 0.03 %)'
    """
    declared = gguf.file_type.removeprefix("MOSTLY_") if gguf.file_type else "no type declared"
    # the file sorts by name; the page lists the largest share first
    largest_first = sorted(gguf.weight_types.items(), key=lambda kv: (-kv[1], kv[0]))
    mix = ", ".join(f"{name} {percent(share)}" for name, share in largest_first)
    spent = f"{gguf.bits_per_weight:.2f} bits per weight in its tensor table"
    return f"{declared} by its file type; {spent}" + (f" ({mix})" if mix else "")


def file_facts(facts: PackagedFacts) -> FileFacts:
    """The page's lines of one ``model_facts.json`` entry."""
    gguf = facts.gguf
    return FileFacts(
        system_turn=system_turn_text(facts),
        example_where=facts.example_where,
        example_rendered=facts.example_rendered,
        lineage=lineage_text(gguf),
        precision=precision_text(gguf),
        context_length=f"{gguf.context_length:,} tokens" if gguf.context_length else "not recorded",
    )


def ran_this_file(facts: PackagedFacts, run: RunDocument) -> bool:
    """The run loaded the file the facts were read from and treated its template as they say."""
    applied = run.model.chat_template == "applied"
    return run.model.file_sha256 == facts.file_sha256 and applied == (facts.chat_template_sha256 is not None)


def files_that_ran(
    runs: Mapping[str, RunDocument], facts: Mapping[str, PackagedFacts]
) -> dict[str, FileFacts]:
    """Slug -> the page lines of each model whose run loaded the file its facts describe."""
    return {s: file_facts(facts[s]) for s, run in runs.items() if s in facts and ran_this_file(facts[s], run)}


def degenerate_text(truncation: Mapping[str, Truncation]) -> str | None:
    """The share of degenerate responses over every dataset, and the datasets that have any (None: the
    board does not record them).

    >>> degenerate_text({"all": Truncation(50, 100, 3), "a": Truncation(20, 50, 0),
    ...     "b": Truncation(30, 50, 3)})
    '3 % (3 of 100 responses; b 3)'
    >>> degenerate_text({"all": Truncation(5, 100, 0)}), degenerate_text({"all": Truncation(5, 100)})
    ('0 % (0 of 100 responses)', None)
    """
    pooled = truncation.get(ALL_DATASETS)
    if pooled is None or pooled.degenerate is None or not pooled.total:
        return None
    where = [
        f"{d} {t.degenerate:,}" for d, t in sorted(truncation.items()) if d != ALL_DATASETS and t.degenerate
    ]
    listed = f"; {', '.join(where)}" if where else ""
    counts = f"{pooled.degenerate:,} of {pooled.total:,} responses{listed}"
    return f"{percent(pooled.degenerate / pooled.total)} ({counts})"
