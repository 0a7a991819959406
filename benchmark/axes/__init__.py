"""Axes: per-variant deltas on every measure, computed from stored raw outputs without the model.

Public API (docs/CONTRACTS.md section 3)::

    compute_deltas(records, activations, variants, *, model, scorers=None) -> DataFrame
    deltas_for_results(results_dir, variant_frames, *, model) -> DataFrame
    write_deltas(results_dir, variant_frames, *, model) -> Path   # results_dir/deltas.parquet
"""

from benchmark.axes.accuracy import is_correct, normalise
from benchmark.axes.activations import layer_cosine_table, layer_cosines
from benchmark.axes.deltas import MEASURE_FNS, AxisScorers, Pairs, align, compute_deltas
from benchmark.axes.mirroring import (
    DETECTORS,
    GratitudeJudge,
    LexiconPolitenessJudge,
    LLMPolitenessJudge,
    PolitenessJudge,
    mirroring_delta,
)
from benchmark.axes.results import deltas_for_results, read_scorer_backbones, write_deltas
from benchmark.axes.text import (
    BACKBONES,
    Backbone,
    BertScore,
    EmbeddingCosine,
    Encoder,
    PairScorer,
    bleu,
    configured_backbone,
    minilm_backbone,
    roberta_large_backbone,
)
from benchmark.results import DELTAS_FILE
from benchmark.schema import DELTA_COLUMNS

__all__ = [
    "BACKBONES",
    "DELTAS_FILE",
    "DELTA_COLUMNS",
    "DETECTORS",
    "MEASURE_FNS",
    "AxisScorers",
    "Backbone",
    "BertScore",
    "EmbeddingCosine",
    "Encoder",
    "LLMPolitenessJudge",
    "GratitudeJudge",
    "LexiconPolitenessJudge",
    "PairScorer",
    "Pairs",
    "PolitenessJudge",
    "align",
    "bleu",
    "compute_deltas",
    "configured_backbone",
    "deltas_for_results",
    "is_correct",
    "layer_cosine_table",
    "layer_cosines",
    "minilm_backbone",
    "mirroring_delta",
    "normalise",
    "read_scorer_backbones",
    "roberta_large_backbone",
    "write_deltas",
]
