"""LLM-made families (length, form): requests, validation, retry-then-drop, and the rewrite log.

Every rewrite is validated before it is frozen (METHOD.md section 2, stricter than the authors):
  * MiniLM similarity to the original >= :data:`MIN_SIMILARITY`;
  * length: word ratio within a factor :data:`LENGTH_TOLERANCE` of the target;
  * length keeps a question a question; form flips question <-> instruction;
  * no gold answer (or a yes/no/true/false verdict at the start) that the original did not contain;
  * every number, named entity and quotation of the item's own text survives, and none is added;
  * words fit the family (:func:`.validation.word_changes`): lengthening keeps every content word,
    shortening adds none, form adds only framing words; negations unchanged; a clue keeps its pointer;
  * no meta text ("Here is the rewritten ...").
Each cell gets up to :data:`ATTEMPTS` candidates from differently worded few-shot requests; the first
valid one wins, and when none is valid the cell is dropped with every reason recorded. Every attempt
(accepted or not) is written to the rewrite log, which a rebuild replays instead of re-running the model.

The package: :mod:`.job` (a cell to make), :mod:`.prompting` (what the rewriter is asked),
:mod:`.validation` (whether a candidate is accepted), :mod:`.log` (the rewrite log) and :mod:`.run`
(the stage itself). The names below are the ones the builder, the CLI and the tests use.
"""

from benchmark.variants.llm.job import Job, variant_prompt
from benchmark.variants.llm.log import Attempt, append_log, read_log, write_log
from benchmark.variants.llm.prompting import SCOPED_FROM, TEMPLATE_TAG, WRAPPER_FORMS, clean, request, scope
from benchmark.variants.llm.run import ATTEMPTS, BUDGET_REASON, run_jobs
from benchmark.variants.llm.validation import (
    LENGTH_TOLERANCE,
    MIN_SIMILARITY,
    is_instruction,
    missing_facts,
    rejection,
)
from benchmark.variants.rewriter import Chat

__all__ = [
    "ATTEMPTS",
    "BUDGET_REASON",
    "LENGTH_TOLERANCE",
    "MIN_SIMILARITY",
    "SCOPED_FROM",
    "TEMPLATE_TAG",
    "WRAPPER_FORMS",
    "Attempt",
    "Chat",
    "Job",
    "append_log",
    "clean",
    "is_instruction",
    "missing_facts",
    "read_log",
    "rejection",
    "request",
    "run_jobs",
    "scope",
    "variant_prompt",
    "write_log",
]
