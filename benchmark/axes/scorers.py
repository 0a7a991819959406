"""The models behind the text and mirroring measures, chosen once per run and recorded with the deltas.

Nothing is loaded here: :meth:`AxisScorers.default` builds the scorers, and the encoders (torch) load on
the first score.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchmark.axes.judges import DEFAULT_JUDGE, build_judge
from benchmark.axes.mirroring import DEFAULT_RULES, RULES
from benchmark.axes.politeness import CourtesyMarkerJudge, PolitenessJudge
from benchmark.axes.text import (
    Backbone,
    PairScorer,
    configured_backbone,
    configured_bleu_form,
    minilm_backbone,
)
from benchmark.errors import SagoError

MIRRORING_ENV = "SAGO_MIRRORING_RULES"
POLITENESS_ENV = "SAGO_POLITENESS_JUDGE"
"""``$SAGO_POLITENESS_JUDGE``: one of ``benchmark.axes.judges.JUDGES`` (docs/METHOD.md section 7)."""
LENGTH_TARGET_ENV = "SAGO_LENGTH_TARGET"


@dataclass(frozen=True)
class AxisScorers:
    """The pluggable models behind the text and mirroring measures."""

    bertscore: PairScorer
    """BERTScore F1 of candidate vs reference."""
    embedding: PairScorer
    """sentence-embedding cosine of candidate vs reference."""
    politeness: PolitenessJudge = field(default_factory=CourtesyMarkerJudge)
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
        """MiniLM for embeddings, the configured backbone for BERTScore, the courtesy-marker politeness judge.

        The BERTScore backbone is ``bertscore_backbone``, else ``$SAGO_BERTSCORE_BACKBONE``
        (``roberta-large`` for the authors' setting), else MiniLM. Nothing is loaded until the
        first score; MiniLM is loaded once and shared when it serves both scorers. Mirroring rules:
        ``mirroring_rules``, else ``$SAGO_MIRRORING_RULES``, else the authors'; BLEU form: ``bleu_form``,
        else ``$SAGO_BLEU_FORM``, else sentence BLEU with effective order. Politeness judge: ``politeness``,
        else the one ``$SAGO_POLITENESS_JUDGE`` names (:func:`configured_politeness`), else courtesy markers.
        """
        from benchmark.axes.encoders import BertScore, EmbeddingCosine, Encoder

        minilm = minilm_backbone()
        backbone = bertscore_backbone or configured_backbone()
        judge, judge_label = (
            (politeness, type(politeness).__name__) if politeness is not None else configured_politeness()
        )
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
            "politeness": judge_label,
            "mirroring": rules,
            "bleu": form,
        }
        if (
            target != "achieved"
        ):  # the default is left out, so results made before the switch keep their bytes
            settings["length_target"] = target
        return cls(BertScore(bert_encoder), EmbeddingCosine(embedder), judge, settings, rules, form, target)


def configured_politeness() -> tuple[PolitenessJudge, str]:
    """The judge ``$SAGO_POLITENESS_JUDGE`` names (courtesy markers when unset) and its provenance label."""
    name = os.environ.get(POLITENESS_ENV) or DEFAULT_JUDGE
    try:
        return build_judge(name)
    except SagoError as err:
        raise SagoError(f"${POLITENESS_ENV}={name!r}: {err}") from None
