"""The models behind the text and mirroring measures, chosen once per run and recorded with the deltas.

Nothing is loaded here: :meth:`AxisScorers.default` builds the scorers, and the encoders (torch) load on
the first score.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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
from benchmark.registry import Registry

MIRRORING_ENV = "SAGO_MIRRORING_RULES"
POLITENESS_ENV = "SAGO_POLITENESS_JUDGE"
"""``$SAGO_POLITENESS_JUDGE``: a judge of :data:`JUDGES` (docs/METHOD.md section 7)."""
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
        if target != "achieved":  # the default is left out: results made before the switch keep their bytes
            settings["length_target"] = target
        return cls(BertScore(bert_encoder), EmbeddingCosine(embedder), judge, settings, rules, form, target)


def configured_politeness() -> tuple[PolitenessJudge, str]:
    """The judge ``$SAGO_POLITENESS_JUDGE`` names (courtesy markers when unset) and its provenance label."""
    value = os.environ.get(POLITENESS_ENV) or DEFAULT_JUDGE
    kind, _, argument = value.partition(":")
    try:
        return JUDGES.get(kind).build(argument)
    except SagoError as err:
        raise SagoError(f"${POLITENESS_ENV}={value!r}: {err}") from None


@dataclass(frozen=True)
class JudgeSpec:
    """A politeness judge, as ``$SAGO_POLITENESS_JUDGE`` and ``sago analyze --judge`` name it."""

    name: str
    """the part before any ``:``."""
    make: Callable[[str], tuple[PolitenessJudge, str]]
    """(what follows the ``:``) -> the judge and the label the deltas record; imports its module when called,
    so reading the names (a ``--help``) loads no model."""
    about: str
    """what it is, in ``--judge``'s help."""
    argument: str = ""
    """what follows the ``:`` (``<model>``); empty: nothing may."""

    @property
    def form(self) -> str:
        return f"{self.name}:{self.argument}" if self.argument else self.name

    def build(self, argument: str) -> tuple[PolitenessJudge, str]:
        if bool(argument) != bool(self.argument):
            raise SagoError(f"judge {self.name!r} is written {self.form}")
        return self.make(argument)


def _packaged(_: str) -> tuple[PolitenessJudge, str]:
    from benchmark.axes.llm_judge import packaged_judge

    return packaged_judge()


def _endpoint(model: str) -> tuple[PolitenessJudge, str]:
    from benchmark.axes.api_judge import api_judge

    judge = api_judge(model)
    return judge, judge.label


DEFAULT_JUDGE = "courtesy-markers"
JUDGES: Registry[JudgeSpec] = Registry("politeness judge")
JUDGES.add(JudgeSpec(DEFAULT_JUDGE, lambda _: (CourtesyMarkerJudge(), "CourtesyMarkerJudge"), "the default"))
JUDGES.add(
    JudgeSpec("llm", _packaged, "the packaged Qwen2.5-Coder-1.5B-Instruct, read through its YES/NO logits")
)
JUDGES.add(
    JudgeSpec(
        "openai",
        _endpoint,
        "the authors' gpt-4o-mini judge at any OpenAI-compatible endpoint: $SAGO_JUDGE_BASE_URL, default "
        "https://api.openai.com, key in the variable $SAGO_JUDGE_KEY_ENV names, default OPENAI_API_KEY",
        argument="<model>",
    )
)


def judges_help() -> str:
    """``--judge``'s help: every judge as it is written, with what it is."""
    return "; ".join(f"{spec.form} ({spec.about})" for spec in JUDGES.entries()) + "."
