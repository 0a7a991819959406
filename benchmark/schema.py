"""The contracts between pipeline stages: column names, axes and schema versions.

Stage files (see docs/CONTRACTS.md):
  variant set parquet  --(harness)-->  records parquet + activations safetensors
  records              --(axes)----->  per-variant deltas table
  deltas               --(stats)---->  per-item instability, summary.json, leaderboard.json
  leaderboard.json     --(site)----->  static HTML
"""

from __future__ import annotations

from dataclasses import dataclass

VARIANT_SCHEMA_VERSION = 2
"""2: ``length_ratio`` (the achieved word ratio of a length row); 1: without it (sago-v1/v1)."""
RECORDS_SCHEMA_VERSION = 1
SUMMARY_SCHEMA_VERSION = 3
"""3: verdicts from the exact sign-flip test (the paper's t-test a labelled column); 2: paper-family SGS
beside an extended SGS, corrected t-test markers; 1: one SGS over all families."""
LEADERBOARD_SCHEMA_VERSION = 4
"""3: exact tests decide every verdict (cells, pairs, reversals), ranks from the corrected pairwise tests,
``proportional_measures``; 2: paper vs extended SGS, Holm-corrected t-test markers, exact reversals."""
SUBMISSION_SCHEMA_VERSION = 1

DEFAULT_SEED = 42
DEFAULT_SET = "sago-v1"
DEFAULT_SET_VERSION = "v2"
"""The variant-set version new builds and evaluations use."""
BOARD_SET_VERSION = "v2"
"""The version the published leaderboard (and `make all`'s sampled re-runs) reads: the v2 evidence results.
v1's board (its smoke results) is kept at leaderboard/versions/sago-v1/v1/ and stays on the site."""

# One row per (item, variant) in a frozen variant set; the baseline is the row with family "baseline".
VARIANT_COLUMNS: tuple[str, ...] = (
    "dataset",  # str: dataset name, e.g. "trivia_qa"
    "item_id",  # str: stable id of the source item, shared by all of its variants
    "variant_id",  # str: f"{family}/{place}/{strength:g}" — unique within an item; "baseline/none/0"
    "family",  # str: "baseline", "politeness", "spacing", ... (see benchmark.variants)
    "place",  # str: "none" (baseline), "prefix", "suffix" or "global"
    "strength",  # float: family-specific level; 0 for the baseline
    "prompt",  # str: the text sent to the model (before any chat template)
    "similarity",  # float: MiniLM cosine similarity of prompt to the baseline prompt
    "rewriter",  # str: what made the variant, e.g. "rule:spacing@0.1.0" or "llm:<artefact>@<sha256[:12]>"
    "answers",  # list[str]: gold answers / aliases of the item (empty when the dataset has none)
    "item_rank",  # int: position of the item in the seeded sample; profiles take items with rank < N
    "length_ratio",  # float: achieved word ratio of a length rewrite to its item's text (else NaN; v1: NaN)
)
BASELINE_FAMILY = "baseline"
PAPER_FAMILIES: tuple[str, ...] = ("politeness", "spacing", "punctuation", "letter_case", "length", "form")
"""The authors' six rewrite families: the headline SGS pools exactly these (METHOD.md section 5)."""
BASELINE_VARIANT_ID = "baseline/none/0"
IDENTITY_FAMILY = "identity"
"""control family of the variant set: the baseline prompt unchanged (numerical noise floor)."""
RERUN_FAMILY, RERUN_VARIANT_ID = "rerun", "rerun/none/0"  # added by the harness, not in the variant set


def rerun_batch_size(batch_size: int) -> int:
    """The rerun control's batch size: another than ``batch_size``, so it measures what batching changes.

    >>> rerun_batch_size(32), rerun_batch_size(1)
    (16, 2)
    """
    return batch_size // 2 if batch_size > 1 else 2


@dataclass(frozen=True)
class Column:
    """One column of a stage table; ``kind`` is the Arrow type family the validator checks."""

    name: str
    kind: str
    meaning: str


STRING, INTEGER, FLOAT, BOOLEAN = "string", "integer", "floating-point", "boolean"
_PANDAS = {INTEGER: "int64", FLOAT: "float64", BOOLEAN: "bool"}

# One row per (item, variant) a model ran on. Activations live beside it in safetensors.
# The one declaration of the records table: the writer's dtypes, the validator's types and the
# column order all come from here.
RECORD_FIELDS: tuple[Column, ...] = (
    Column("dataset", STRING, "dataset name"),
    Column("item_id", STRING, "item id (shared by every variant of the item)"),
    Column("variant_id", STRING, "variant id (baseline, a rewrite, or a control row)"),
    Column("family", STRING, "rewrite family"),
    Column("place", STRING, "where the rewrite applies"),
    Column("strength", FLOAT, "rewrite strength"),
    Column("response", STRING, "greedy response y_v (special tokens stripped)"),
    Column("response_tokens", INTEGER, "number of generated tokens"),
    Column("finished", BOOLEAN, "generation stopped on an end-of-sequence token (not on the token limit)"),
    Column("logprob_sum", FLOAT, "log p(y_0 | x_v), summed over the baseline response's tokens"),
    Column("logprob_mean", FLOAT, "the same, averaged per token"),
    Column("entropy_mean", FLOAT, "mean over y_0's positions of the full-vocabulary entropy (nats)"),
    Column("baseline_tokens", INTEGER, "number of tokens of y_0 that were scored"),
    Column("prompt_tokens", INTEGER, "tokens of the rendered prompt (after the chat template)"),
)
RECORD_COLUMNS: tuple[str, ...] = tuple(c.name for c in RECORD_FIELDS)
OWN_CONFIDENCE_FIELDS: tuple[Column, ...] = (
    *RECORD_FIELDS[:3],
    Column("own_tokens", INTEGER, "tokens whose log-probability the endpoint returned (0: none returned)"),
    Column(
        "own_prob_mean", FLOAT, "mean of exp(log p) over the response's own tokens, clipped to [1e-10, 1]"
    ),
    Column(
        "own_entropy",
        FLOAT,
        "−Σ p·log p over those tokens' probabilities (the authors' closed-model entropy)",
    ),
)
"""An API run's second table (``own_confidence/<dataset>.parquet``): what a chat endpoint shows of the
model's confidence. Not the teacher-forced columns above, and never ranked with them."""
OWN_CONFIDENCE_COLUMNS: tuple[str, ...] = tuple(c.name for c in OWN_CONFIDENCE_FIELDS)


def column_kinds(fields: tuple[Column, ...]) -> dict[str, str]:
    """``{column: kind}`` of a table, in column order.

    >>> column_kinds(RECORD_FIELDS[4:6])
    {'place': 'string', 'strength': 'floating-point'}
    """
    return {c.name: c.kind for c in fields}


def pandas_dtypes(fields: tuple[Column, ...]) -> dict[str, str]:
    """The pandas dtype of every non-text column (what a writer casts to).

    >>> pandas_dtypes(RECORD_FIELDS[5:9])
    {'strength': 'float64', 'response_tokens': 'int64', 'finished': 'bool'}
    """
    return {c.name: _PANDAS[c.kind] for c in fields if c.kind in _PANDAS}


# The files of a results folder (and which are hashed in run.json) are named in benchmark.results.
# Activation tensors: safetensors file per dataset, key f"{item_id}|{variant_id}",
# value float16 [n_layers + 1, hidden] = hidden state at the last prompt token, embeddings first.


AXES: tuple[str, ...] = ("activations", "generation", "confidence", "mirroring")
"""The four axes; every measure (declared in ``benchmark.axes.measures``) belongs to one."""
RESPONSE_AXES: tuple[str, ...] = ("generation", "mirroring")
"""The axes computed from the response texts alone: all that a run outside the harness (lm-eval) gives;
the other axes' measures need the model itself (``benchmark.axes.measures.model_measures``)."""
AXIS_LABELS: dict[str, str] = {axis: axis.capitalize() for axis in AXES}


def axis_label(axis: str) -> str:
    """The human name of an axis.

    >>> axis_label("generation")
    'Generation'
    """
    return AXIS_LABELS.get(axis, axis)


# Per-variant deltas table (output of benchmark.axes): ids + one column per measure + accuracy.
DELTA_ID_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "item_id", "variant_id", "family", "place", "strength",
)  # fmt: skip
# plus f"delta_{name}" per registered measure (NaN where a measure does not apply, e.g. mirroring for form)
# plus "correct": float 0/1 (NaN without gold) — accuracy of this variant's response against gold answers.
# The whole list, in order: benchmark.axes.measures.delta_columns().
