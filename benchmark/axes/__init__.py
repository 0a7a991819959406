"""Axes: per-variant deltas on every measure, computed from stored raw outputs without the model.

Public API (docs/CONTRACTS.md section 3)::

    compute_deltas(records, activations, variants, *, model, scorers=None) -> DataFrame
    deltas_for_results(results_dir, variant_frames, *, model) -> DataFrame
    write_deltas(results_dir, variant_frames, *, model) -> Path   # results_dir/deltas.parquet

The measures are declared in :mod:`benchmark.axes.measures`. Importing this package loads no torch; the
encoders (:mod:`benchmark.axes.encoders`) load when a model-based score is first asked for.
"""

from benchmark.axes.accuracy import is_correct, normalise
from benchmark.axes.activations import layer_cosine_table, layer_cosines
from benchmark.axes.deltas import align, compute_deltas
from benchmark.axes.measures import MEASURES, Measure, Pairs, all_measures, delta_columns, measure
from benchmark.axes.mirroring import DETECTORS, mirroring_delta
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    GratitudeJudge,
    LexiconPolitenessJudge,
    LLMPolitenessJudge,
    PolitenessJudge,
)
from benchmark.axes.results import deltas_for_results, read_scorer_backbones, write_deltas
from benchmark.axes.scorers import AxisScorers
from benchmark.axes.text import (
    BACKBONES,
    Backbone,
    PairScorer,
    bleu,
    configured_backbone,
    minilm_backbone,
    roberta_large_backbone,
)
from benchmark.results import DELTAS_FILE

__all__ = [
    "BACKBONES", "DELTAS_FILE", "DETECTORS", "MEASURES", "AxisScorers", "Backbone", "CourtesyCueJudge",
    "CourtesyMarkerJudge", "LLMPolitenessJudge", "GratitudeJudge", "LexiconPolitenessJudge", "Measure",
    "PairScorer", "Pairs", "PolitenessJudge", "align", "all_measures", "bleu", "compute_deltas",
    "configured_backbone", "delta_columns", "deltas_for_results", "is_correct", "layer_cosine_table",
    "layer_cosines", "measure", "minilm_backbone", "mirroring_delta", "normalise", "read_scorer_backbones",
    "roberta_large_backbone", "write_deltas",
]  # fmt: skip
