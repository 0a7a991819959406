"""Could these records have come from running a model? Checks of what a results folder's files *say*.

Files of the right kind, columns and hashes can still hold numbers no run produces, which break the
pipeline later (a NaN stops analyze, a missing baseline makes every delta undefined) or fake a model's
standing. Each public function returns the first such problem of one file, in words, or None.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from benchmark.profiles import Profile, select_rows
from benchmark.safetensors_check import TensorInfo
from benchmark.schema import (
    BASELINE_FAMILY,
    BASELINE_VARIANT_ID,
    IDENTITY_FAMILY,
    RERUN_FAMILY,
    RERUN_VARIANT_ID,
)

KEY = ["item_id", "variant_id"]
COSINE_SLACK = 1e-9  # how far past ±1 a stored cosine may round
COPY_SHARE, COPY_MIN = 0.25, 2  # refused as copied from this share (and count) of rewritten prompts on


def _row(row: pd.Series) -> str:
    return repr(f"{row.item_id}|{row.variant_id}"[:100])


# ---- records ----------------------------------------------------------------------------------------


def records_problem(
    records: pd.DataFrame, variants: pd.DataFrame | None, profile: Profile | None, *, api: bool = False
) -> str | None:
    """The first thing in one dataset's records that no run of ``profile`` on ``variants`` produces
    (None ``variants`` or ``profile``: their checks are skipped; ``api``: nothing is teacher-forced)."""
    checks: list[Callable[[], str | None]] = [lambda: _duplicates(records), lambda: _baselines(records)]
    if variants is not None:
        checks += [lambda: _unknown_rows(records, variants), lambda: _labels(records, variants)]
        if profile is not None:
            checks.append(lambda: _profile_rows(records, variants, profile))
    checks += [
        lambda: _token_counts(records, profile.max_new_tokens if profile is not None else None),
        *(
            [lambda: _untaught(records)]
            if api
            else [lambda: _finite(records), lambda: _confidence(records), lambda: _baseline_tokens(records)]
        ),
    ]
    for check in checks:
        problem = check()
        if problem is not None:
            return problem
    return None


def _first(records: pd.DataFrame, mask: pd.Series) -> pd.Series:
    return records[mask.to_numpy()].iloc[0]


def _duplicates(records: pd.DataFrame) -> str | None:
    twice = records.duplicated(KEY)
    if not twice.any():
        return None
    row = _first(records, twice)
    return f"has more than one row for {_row(row)} (one per item and variant)"


def _baselines(records: pd.DataFrame) -> str | None:
    with_baseline = set(records.loc[records["variant_id"] == BASELINE_VARIANT_ID, "item_id"])
    missing = sorted(set(records["item_id"]) - with_baseline)
    if not missing:
        return None
    return (
        f"item {str(missing[0])[:60]!r} has no baseline row ({BASELINE_VARIANT_ID}); "
        f"{len(missing)} item(s) lack one"
    )


def _unknown_rows(records: pd.DataFrame, variants: pd.DataFrame) -> str | None:
    items = set(variants["item_id"])
    known = set(zip(variants["item_id"], variants["variant_id"], strict=True))
    for item, variant in zip(records["item_id"], records["variant_id"], strict=True):
        if item not in items:
            return f"item {str(item)[:60]!r} is not in the variant set"
        if variant != RERUN_VARIANT_ID and (item, variant) not in known:
            return f"variant {str(variant)[:60]!r} of item {str(item)[:60]!r} is not in the variant set"
    return None


def _labels(records: pd.DataFrame, variants: pd.DataFrame) -> str | None:
    """family, place and strength as the set has them (the rerun control as the harness labels it)."""
    expected = variants.drop_duplicates(KEY).set_index(KEY)[["family", "place", "strength"]]
    rerun = records["variant_id"] == RERUN_VARIANT_ID
    rows = records[~rerun.to_numpy()]
    want = expected.loc[list(zip(rows["item_id"], rows["variant_id"], strict=True))]
    differs = np.zeros(len(rows), dtype=bool)
    for column in ("family", "place", "strength"):
        differs |= rows[column].to_numpy() != want[column].to_numpy()
    controls = records[rerun.to_numpy()]
    bad_control = (
        (controls["family"] != RERUN_FAMILY) | (controls["place"] != "none") | (controls["strength"] != 0.0)
    )
    if differs.any():
        row = rows[differs].iloc[0]
    elif bad_control.any():
        row = _first(controls, bad_control)
    else:
        return None
    return f"row {_row(row)} has another family, place or strength than the variant set"


def _profile_rows(records: pd.DataFrame, variants: pd.DataFrame, profile: Profile) -> str | None:
    selected = select_rows(variants, profile)
    want = set(zip(selected["item_id"], selected["variant_id"], strict=True))
    ran = {
        (i, v)
        for i, v in zip(records["item_id"], records["variant_id"], strict=True)
        if v != RERUN_VARIANT_ID
    }
    if ran == want:
        return None
    levels = "every level" if profile.all_strengths else "the weakest and strongest level"
    if profile.every_level_of:
        levels += f" (every level of {', '.join(profile.every_level_of)})"
    return (
        f"rows differ from what run.json's profile {profile.name!r} selects ({profile.items_per_dataset} "
        f"items per dataset, {levels}): {len(want - ran)} missing, {len(ran - want)} extra"
    )


def _token_counts(records: pd.DataFrame, cap: int | None) -> str | None:
    for column in ("response_tokens", "baseline_tokens", "prompt_tokens"):
        negative = records[column] < 0
        if negative.any():
            row = _first(records, negative)
            return f"{column} {row[column]} of row {_row(row)} is negative"
    empty = records["prompt_tokens"] < 1
    if empty.any():
        row = _first(records, empty)
        return f"prompt_tokens of row {_row(row)} is 0 (a prompt has a token)"
    if cap is None:
        return None
    for column in ("response_tokens", "baseline_tokens"):
        over = records[column] > cap
        if over.any():
            row = _first(records, over)
            return f"{column} {row[column]} of row {_row(row)} is over the profile's max_new_tokens {cap}"
    cut_short = ~records["finished"].astype(bool) & (records["response_tokens"] < cap)
    if cut_short.any():
        row = _first(records, cut_short)
        return f"row {_row(row)} did not finish yet stopped after {row.response_tokens} of {cap} tokens"
    return None


def _finite(records: pd.DataFrame) -> str | None:
    """No infinity anywhere; NaN only in logprob_mean and entropy_mean of an empty baseline answer (the
    mean of no tokens), as the engines write it."""
    for column in ("strength", "logprob_sum", "logprob_mean", "entropy_mean"):
        values = records[column].astype(float)
        bad = np.isinf(values)
        if column in ("strength", "logprob_sum"):
            bad |= np.isnan(values)
        else:
            bad |= np.isnan(values) & (records["baseline_tokens"] > 0)
        if bad.any():
            row = _first(records, bad)
            allowed = (
                "" if column in ("strength", "logprob_sum") else " (NaN only for an empty baseline answer)"
            )
            return f"{column} of row {_row(row)} is {row[column]}{allowed}"
    return None


def _untaught(records: pd.DataFrame) -> str | None:
    """An API run: finite strengths, and no teacher-forced number anywhere (NaN log-probs and entropy,
    no baseline tokens scored) — an endpoint cannot score a given continuation."""
    strength = records["strength"].astype(float)
    if not np.isfinite(strength).all():
        row = _first(records, ~np.isfinite(strength))
        return f"strength of row {_row(row)} is {row['strength']}"
    taught = records["baseline_tokens"] != 0
    for column in ("logprob_sum", "logprob_mean", "entropy_mean"):
        taught |= records[column].astype(float).notna()
    if taught.any():
        row = _first(records, taught)
        return (
            f"row {_row(row)} of an API run holds a teacher-forced number "
            "(an endpoint scores no given continuation)"
        )
    return None


def _confidence(records: pd.DataFrame) -> str | None:
    """Log-probabilities are ≤ 0, entropies ≥ 0, and the mean is the sum over the baseline's tokens."""
    total, mean = records["logprob_sum"].astype(float), records["logprob_mean"].astype(float)
    entropy, tokens = records["entropy_mean"].astype(float), records["baseline_tokens"]
    scored = tokens > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = total / tokens.where(scored, 1)
    problems = {
        "logprob_sum is positive (a log-probability is ≤ 0)": total > 1e-6,
        "entropy_mean is negative": entropy < -1e-6,
        "logprob_mean is not logprob_sum / baseline_tokens": scored
        & ((mean - expected).abs() > 1e-9 * np.maximum(1.0, expected.abs())),
        "has log-probs although its baseline answer is empty": ~scored
        & ((total != 0) | mean.notna() | entropy.notna()),
    }
    for words, mask in problems.items():
        if mask.any():
            row = _first(records, mask)
            return f"row {_row(row)}: {words}"
    return None


def _baseline_tokens(records: pd.DataFrame) -> str | None:
    """Every row of an item teacher-forces the same baseline answer: its baseline_tokens is the baseline
    row's response_tokens."""
    base = records[records["variant_id"] == BASELINE_VARIANT_ID].set_index("item_id")["response_tokens"]
    expected = records["item_id"].map(base)
    differs = expected.notna() & (records["baseline_tokens"] != expected)
    if not differs.any():
        return None
    row = _first(records, differs)
    return f"baseline_tokens of row {_row(row)} is not its baseline answer's response_tokens"


# ---- activations ------------------------------------------------------------------------------------


def activation_problem(
    tensors: Mapping[str, TensorInfo], arrays: Mapping[str, np.ndarray], shape: tuple[int, int] | None
) -> str | None:
    """Shapes as the model's (when run.json records it; else one non-empty shape) and plausible values:
    hidden states hold no NaN (±inf is float16's overflow of a real, large state), stored cosines lie in
    [-1, 1] or are NaN (a zero vector)."""
    vectors = [t for t in tensors.values() if len(t.shape) == 2]
    found = vectors[0].shape if vectors else None
    if found is not None and (0 in found):
        return f"tensors of shape {list(found)} are empty"
    if shape is not None and found is not None and found != shape:
        return f"tensors are {list(found)}, but run.json's model has [layers + 1, hidden] = {list(shape)}"
    rows = shape[0] if shape is not None else (found[0] if found is not None else None)
    for name, info in tensors.items():
        if len(info.shape) == 1 and rows is not None and info.shape != (rows,):
            return f"cosine row {name[:80]!r} has {info.shape[0]} layers, not {rows}"
        values = arrays[name]
        if len(info.shape) == 2 and np.isnan(values).any():
            return f"hidden state {name[:80]!r} holds NaN"
        if len(info.shape) == 1 and (np.abs(values[~np.isnan(values)]) > 1 + COSINE_SLACK).any():
            return f"cosine row {name[:80]!r} holds values outside [-1, 1]"
    return None


# ---- the fabricated-perfect model ------------------------------------------------------------------


def copied_problem(
    records: pd.DataFrame, variants: pd.DataFrame | None, arrays: Mapping[str, np.ndarray] | None
) -> str | None:
    """Refuse records whose rewritten prompts were answered by copying the baseline's numbers: the only
    way to SGS 0 on every measure without running the model. A real model's log-probability of y_0 and
    hidden state change with any other prompt token (0 of 1,956 committed rewritten prompts are equal),
    but two prompts may render to the same tokens, so a dataset is refused only from a quarter of its
    rewritten prompts (at least two) being bit-for-bit copies of a non-empty baseline's."""
    if variants is None:
        return None
    prompts = variants.drop_duplicates(KEY).set_index(KEY)["prompt"]
    base = records[records["variant_id"] == BASELINE_VARIANT_ID].set_index("item_id")
    eligible = copies = 0
    for row in records.itertuples(index=False):
        if row.family in (BASELINE_FAMILY, IDENTITY_FAMILY, RERUN_FAMILY) or row.item_id not in base.index:
            continue
        baseline = base.loc[row.item_id]
        prompt = prompts.get((row.item_id, row.variant_id))
        if baseline.response_tokens == 0 or prompt == prompts.get((row.item_id, BASELINE_VARIANT_ID)):
            continue
        eligible += 1
        same = all(
            _same(getattr(row, c), baseline[c]) for c in ("logprob_sum", "logprob_mean", "entropy_mean")
        )
        if same and arrays is not None:
            same = _same_state(arrays, row.item_id, row.variant_id)
        copies += same
    if copies < max(COPY_MIN, math.ceil(COPY_SHARE * eligible)):
        return None
    return (
        f"{copies} of {eligible} rewritten prompts have log-probs and hidden states identical to their "
        "baseline's, which a model does not produce for a different prompt: the rows look copied, not run"
    )


def _same(a: float, b: float) -> bool:
    return bool(a == b or (math.isnan(a) and math.isnan(b)))


def _same_state(arrays: Mapping[str, np.ndarray], item: str, variant: str) -> bool:
    mine, theirs = arrays.get(f"{item}|{variant}"), arrays.get(f"{item}|{BASELINE_VARIANT_ID}")
    if mine is None or theirs is None:
        return False
    if mine.ndim == 1:  # compact: per-layer cosine to the baseline
        return bool(np.all(np.abs(mine - 1.0) <= 1e-12))
    return mine.shape == theirs.shape and mine.tobytes() == theirs.tobytes()
