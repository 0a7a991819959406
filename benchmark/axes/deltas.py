"""Per-variant deltas on every measure, from stored raw outputs only (docs/CONTRACTS.md section 3).

One registered function per measure in ``schema.MEASURES`` turns the aligned (variant, baseline)
pairs into one unscaled delta per record row. The models those functions need (MiniLM for
BERTScore and embeddings, a politeness judge) live in :class:`AxisScorers`, built once per run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from benchmark.axes import activations as act
from benchmark.axes.accuracy import is_correct
from benchmark.axes.mirroring import (
    DEFAULT_RULES,
    RULES,
    LexiconPolitenessJudge,
    PolitenessJudge,
    mirroring_delta,
)
from benchmark.axes.text import (
    Backbone,
    BertScore,
    EmbeddingCosine,
    Encoder,
    PairScorer,
    bleu,
    configured_backbone,
    configured_bleu_form,
    minilm_backbone,
    score_distinct,
)
from benchmark.errors import SagoError
from benchmark.registry import Registry
from benchmark.schema import BASELINE_VARIANT_ID, DELTA_ID_COLUMNS, MEASURES, RECORD_COLUMNS

MIRRORING_ENV = "SAGO_MIRRORING_RULES"
AXES_VERSION = "2"
"""Bump when a delta's computation changes: part of the deltas' input fingerprint (staleness)."""


@dataclass(frozen=True)
class Pairs:
    """Each record row beside its item's baseline row; the input of every measure function."""

    frame: pd.DataFrame
    """record columns, the baseline's response/confidence columns suffixed ``_0``, and ``answers``."""
    activations: Mapping[str, np.ndarray]
    """``f"{item_id}|{variant_id}"`` -> ``[n_layers + 1, hidden]`` hidden states."""

    def texts(self) -> tuple[list[str], list[str]]:
        """(y_v, y_0) for every row."""
        return list(self.frame["response"]), list(self.frame["response_0"])


@dataclass(frozen=True)
class AxisScorers:
    """The pluggable models behind the text and mirroring measures."""

    bertscore: PairScorer
    """BERTScore F1 of candidate vs reference."""
    embedding: PairScorer
    """sentence-embedding cosine of candidate vs reference."""
    politeness: PolitenessJudge = field(default_factory=LexiconPolitenessJudge)
    """judge of the politeness family's mirroring."""
    backbones: Mapping[str, str] = field(default_factory=dict)
    """what each scorer runs on, for provenance: {"bertscore": ..., "embed_cos": ..., "politeness": ...,
    "mirroring": rules, "bleu": form}."""
    mirroring_rules: str = DEFAULT_RULES
    """``"authors"`` (default) or ``"ours"``: see ``benchmark.axes.mirroring``."""
    bleu_form: str = "sentence"
    """``"sentence"`` (effective order, default) or ``"corpus"`` (the authors' exact corpus_bleu)."""
    length_target: str = "achieved"
    """What length mirroring compares the response ratio with: ``"achieved"`` (ours, default: the
    prompt's achieved word ratio where the variant set records it, else the multiplier) or
    ``"nominal"`` (the authors': always the multiplier); ``$SAGO_LENGTH_TARGET`` sets it."""

    @classmethod
    def default(
        cls,
        bertscore_backbone: Backbone | None = None,
        politeness: PolitenessJudge | None = None,
        mirroring_rules: str | None = None,
        bleu_form: str | None = None,
    ) -> AxisScorers:
        """MiniLM for embeddings, the configured backbone for BERTScore, the lexicon judge.

        The BERTScore backbone is ``bertscore_backbone``, else ``$SAGO_BERTSCORE_BACKBONE``
        (``roberta-large`` for the authors' setting), else MiniLM. Nothing is loaded until the
        first score; MiniLM is loaded once and shared when it serves both scorers. Mirroring rules:
        ``mirroring_rules``, else ``$SAGO_MIRRORING_RULES``, else the authors'; BLEU form: ``bleu_form``,
        else ``$SAGO_BLEU_FORM``, else sentence BLEU with effective order.
        """
        minilm = minilm_backbone()
        backbone = bertscore_backbone or configured_backbone()
        judge = politeness or LexiconPolitenessJudge()
        embedder = Encoder(minilm)
        bert_encoder = embedder if backbone == minilm else Encoder(backbone)
        rules = mirroring_rules or os.environ.get(MIRRORING_ENV) or DEFAULT_RULES
        if rules not in RULES:
            raise SagoError(f"${MIRRORING_ENV}={rules!r} is not one of {', '.join(RULES)}")
        form = bleu_form or configured_bleu_form()
        target = os.environ.get(LENGTH_TARGET_ENV) or "achieved"
        if target not in ("achieved", "nominal"):
            raise SagoError(f"${LENGTH_TARGET_ENV}={target!r} is not one of achieved, nominal")
        settings = {
            "bertscore": backbone.name,
            "embed_cos": minilm.name,
            "politeness": type(judge).__name__,
            "mirroring": rules,
            "bleu": form,
        }
        if (
            target != "achieved"
        ):  # the default is left out, so results made before the switch keep their bytes
            settings["length_target"] = target
        return cls(BertScore(bert_encoder), EmbeddingCosine(embedder), judge, settings, rules, form, target)


class MeasureFn(Protocol):
    """Unscaled delta per row of ``pairs`` (float64 [n]; NaN where the measure does not apply)."""

    def __call__(self, pairs: Pairs, scorers: AxisScorers) -> np.ndarray: ...


MEASURE_FNS: Registry[MeasureFn] = Registry("measure")


def _activation_delta(pairs: Pairs, reduce: Callable[[np.ndarray], float]) -> np.ndarray:
    out = np.full(len(pairs.frame), np.nan)
    for i, (item, variant) in enumerate(zip(pairs.frame["item_id"], pairs.frame["variant_id"], strict=True)):
        here = pairs.activations.get(act.activation_key(item, variant))
        base = pairs.activations.get(act.activation_key(item, BASELINE_VARIANT_ID))
        if here is not None and base is not None:
            out[i] = reduce(act.layer_cosines(here, base)) - 1.0
    return out


@MEASURE_FNS.register("act_cos_last")
def act_cos_last(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return _activation_delta(pairs, act.cosine_last)


@MEASURE_FNS.register("act_cos_mean")
def act_cos_mean(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return _activation_delta(pairs, act.cosine_mean)


@MEASURE_FNS.register("bleu")
def bleu_delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    once = functools.cache(functools.partial(bleu, form=scorers.bleu_form))  # most (y_v, y_0) pairs repeat
    return np.array([once(c, r) for c, r in zip(*pairs.texts(), strict=True)], dtype=np.float64) - 100.0


@MEASURE_FNS.register("bertscore")
def bertscore_delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return score_distinct(scorers.bertscore, *pairs.texts()) - 1.0


@MEASURE_FNS.register("embed_cos")
def embed_cos_delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    return score_distinct(scorers.embedding, *pairs.texts()) - 1.0


def _confidence(column: str) -> MeasureFn:
    def delta(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
        change = pairs.frame[column].astype(float) - pairs.frame[f"{column}_0"].astype(float)
        return np.asarray(change, dtype=np.float64)

    return delta


MEASURE_FNS.add("logprob", _confidence("logprob_sum"))
MEASURE_FNS.add("logprob_mean", _confidence("logprob_mean"))
MEASURE_FNS.add("entropy", _confidence("entropy_mean"))


LENGTH_TARGET_ENV = "SAGO_LENGTH_TARGET"


def mirror_targets(frame: pd.DataFrame, length_target: str) -> np.ndarray:
    """The strength each row's mirroring rule reads: a length row's achieved prompt ratio where the
    variant set records one and ``length_target`` is "achieved"; the nominal strength otherwise.

    >>> f = pd.DataFrame({"family": ["length", "length", "spacing"], "strength": [2.0, 3.0, 5.0],
    ...                   "length_ratio": [1.9, float("nan"), float("nan")]})
    >>> mirror_targets(f, "achieved").tolist(), mirror_targets(f, "nominal").tolist()
    ([1.9, 3.0, 5.0], [2.0, 3.0, 5.0])
    """
    strength = np.asarray(frame["strength"], dtype=np.float64)
    if length_target != "achieved" or "length_ratio" not in frame.columns:
        return strength
    ratio = np.asarray(frame["length_ratio"], dtype=np.float64)
    use = np.asarray(frame["family"] == "length") & np.isfinite(ratio)
    return np.asarray(np.where(use, ratio, strength), dtype=np.float64)


@MEASURE_FNS.register("mirroring")
def mirroring(pairs: Pairs, scorers: AxisScorers) -> np.ndarray:
    f = pairs.frame
    rows = zip(
        f["family"], f["response"], f["response_0"], mirror_targets(f, scorers.length_target), strict=True
    )
    return np.array(
        [
            mirroring_delta(fam, y, y0, s, scorers.politeness, scorers.mirroring_rules)
            for fam, y, y0, s in rows
        ]
    )


def _check_records(records: pd.DataFrame) -> None:
    missing = sorted(set(RECORD_COLUMNS) - set(records.columns))
    if missing:
        raise SagoError(f"records lack columns {missing}; re-run the harness with this version of sago")
    repeated = records.duplicated(["dataset", "item_id", "variant_id"])
    if repeated.any():
        first = records.loc[repeated].iloc[0]
        raise SagoError(
            f"records hold {first['item_id']}|{first['variant_id']} more than once; "
            "delete the results folder and re-run the harness"
        )


def align(records: pd.DataFrame, variants: pd.DataFrame, activations: Mapping[str, np.ndarray]) -> Pairs:
    """Put each record row beside its item's baseline row and gold answers.

    Raises:
        SagoError: when columns are missing, a row repeats, or an item has no baseline record.
    """
    _check_records(records)
    keys = ["dataset", "item_id"]
    recs = records.assign(response=records["response"].fillna("").astype(str))
    base = recs[recs["variant_id"] == BASELINE_VARIANT_ID]
    base = base[[*keys, "response", "logprob_sum", "logprob_mean", "entropy_mean"]]
    frame = recs.merge(base, on=keys, how="left", suffixes=("", "_0"), validate="many_to_one")
    lacking = frame.loc[frame["response_0"].isna(), "item_id"].unique()
    if len(lacking):
        raise SagoError(
            f"records have no baseline row ({BASELINE_VARIANT_ID}) for items {list(lacking)[:5]}; "
            "re-run the harness for them"
        )
    gold = variants[variants["variant_id"] == BASELINE_VARIANT_ID][[*keys, "answers", "prompt"]]
    frame = frame.merge(
        gold.rename(columns={"prompt": "prompt_0"}), on=keys, how="left", validate="many_to_one"
    )
    asked = variants[[*keys, "variant_id", "prompt"]]
    frame = frame.merge(asked, on=[*keys, "variant_id"], how="left", validate="many_to_one")
    # controls outside the set (the rerun row) were asked the baseline prompt
    frame["prompt"] = frame["prompt"].where(frame["prompt"].notna(), frame["prompt_0"]).fillna("").astype(str)
    frame["answers"] = [list(a) if isinstance(a, (list, tuple, np.ndarray)) else [] for a in frame["answers"]]
    if "length_ratio" in variants.columns:  # variant schema 2: the achieved ratio of each length row
        ratios = variants[[*keys, "variant_id", "length_ratio"]]
        frame = frame.merge(ratios, on=[*keys, "variant_id"], how="left", validate="many_to_one")
    return Pairs(frame.reset_index(drop=True), activations)


def compute_deltas(
    records: pd.DataFrame,
    activations: Mapping[str, np.ndarray],
    variants: pd.DataFrame,
    *,
    model: str,
    scorers: AxisScorers | None = None,
    not_measured: Collection[str] = (),
) -> pd.DataFrame:
    """The deltas table (columns :data:`benchmark.schema.DELTA_COLUMNS`) for one model's records.

    Every record row gets a row, controls included; the baseline row has all deltas 0, except on the
    measures named in ``not_measured`` (a run that did not record what they need, e.g. one imported
    from lm-eval): those are NaN on every row, the baseline's too, never 0.
    """
    scorers = scorers or AxisScorers.default()
    pairs = align(records, variants, activations)
    out = pairs.frame[[c for c in DELTA_ID_COLUMNS if c != "model"]].copy()
    out.insert(0, "model", model)
    out["strength"] = out["strength"].astype(float)
    is_baseline = (pairs.frame["variant_id"] == BASELINE_VARIANT_ID).to_numpy()
    for measure in MEASURES:
        if measure.name in not_measured:
            out[f"delta_{measure.name}"] = np.nan
            continue
        values = np.asarray(MEASURE_FNS.get(measure.name)(pairs, scorers), dtype=np.float64)
        out[f"delta_{measure.name}"] = np.where(is_baseline, 0.0, values)
    out["correct"] = [
        is_correct(y, a, x)
        for y, a, x in zip(
            pairs.frame["response"], pairs.frame["answers"], pairs.frame["prompt"], strict=True
        )
    ]
    return out.sort_values(["dataset", "item_id", "variant_id"], kind="stable").reset_index(drop=True)
