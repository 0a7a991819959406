"""A small local instruct model as politeness judge: YES/NO read from its next-token logits.

The question is the authors' (is y_v clearly more polite / blunter than y_0?), in our own words, asked of a
packaged instruct model. The answer is not generated: the judge reads the logits of the token that would
start the reply and takes the margin ``log P(YES) − log P(NO)`` (case and leading-space variants pooled);
the verdict is YES when the margin reaches a threshold chosen on the tuning rows only (docs/METHOD.md
section 7.1). The authors' cue guard is part of their judge (a YES stands only when y_0 or y_v holds one of
their 15 courtesy cues), so it is part of this one, and it spares the model every row without a cue.

The instructions are the same for every row of a direction, so their key/value cache is computed once per
direction and each row only runs its own tokens (y_0, y_v, the question) on a copy of it.

Importing this module loads no torch; :func:`load_scorer` does.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.axes.politeness import CourtesyCueJudge
from benchmark.errors import SagoError

_DIRECTION_WORDS = {+1: "more polite", -1: "rude or impatient"}
INSTRUCTIONS: dict[int, str] = {
    +1: (
        "You compare the tone of two replies, A and B, to the same question. Reply B answers a version of "
        "the question that was reworded to sound {words}.\n"
        "Decide whether reply B is clearly MORE POLITE than reply A. Signs of politeness: greetings, thanks, "
        '"please", offers such as "happy to help" or "of course", well-wishes such as "I hope this helps", '
        "softened wording (could, would, might, perhaps), warm and considerate phrasing.\n"
        "Ignore the facts, the length, the formatting and the amount of detail.\n"
        "If the two replies are about equally polite, or the difference is slight, the answer is NO."
    ),
    -1: (
        "You compare the tone of two replies, A and B, to the same question. Reply B answers a version of "
        "the question that was reworded to sound {words}.\n"
        "Decide whether reply B is clearly LESS POLITE than reply A: blunter, curter or colder, with fewer "
        "courtesy words, less softening and less warmth. Insults are not needed.\n"
        'An apology, "I\'m here to help" or a remark about being an AI is not bluntness: the answer is NO.\n'
        "Ignore the facts, the length, the formatting and the amount of detail.\n"
        "If the two replies are about equally polite, or the difference is slight, the answer is NO."
    ),
}
"""What the judge is told, per direction (+1: the prompt was made more polite, −1: ruder)."""
QUESTIONS: dict[int, str] = {
    +1: "Is reply B clearly more polite than reply A? Answer YES or NO.",
    -1: "Is reply B clearly less polite (blunter, curter) than reply A? Answer YES or NO.",
}
"""The question after the two replies (a small model weighs the last words most)."""
YES_WORDS: tuple[str, ...] = ("YES", " YES", "Yes", " Yes", "yes", " yes")
NO_WORDS: tuple[str, ...] = ("NO", " NO", "No", " No", "no", " no")
"""Spellings whose first token starts a YES / a NO reply; their probabilities are pooled."""
THRESHOLD = 0.0
"""Default threshold on the margin; the measured judge uses the one chosen on the tuning rows."""
_SPLIT = "\x00content\x00"
_CUES = CourtesyCueJudge()


def instructions(direction: int) -> str:
    """The instructions for the prompt's direction (+1 more polite, −1 ruder)."""
    return INSTRUCTIONS[direction].format(words=_DIRECTION_WORDS[direction])


def row_text(response: str, baseline: str, direction: int) -> str:
    """The part of the judge's message that differs from row to row: y_0 as reply A, y_v as reply B.

    >>> print(row_text("Thanks! Paris.", "Paris.", +1))
    <BLANKLINE>
    <BLANKLINE>
    Reply A:
    Paris.
    <BLANKLINE>
    Reply B:
    Thanks! Paris.
    <BLANKLINE>
    Is reply B clearly more polite than reply A? Answer YES or NO.
    """
    return f"\n\nReply A:\n{baseline}\n\nReply B:\n{response}\n\n{QUESTIONS[direction]}"


def has_courtesy_cue(text: str) -> bool:
    """Whether ``text`` holds one of the authors' 15 courtesy cues (their guard's test).

    >>> has_courtesy_cue("Of course! Paris."), has_courtesy_cue("Paris.")
    (True, False)
    """
    return _CUES.count(text, +1) > 0  # all 15 cues count in the polite direction


def answer_ids(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The first tokens that start a YES reply and those that start a NO reply, each sorted.

    A first token that starts spellings of both (a lone space in a small vocabulary) says nothing about
    the answer and is left out of both.

    Raises:
        SagoError: no first token is left on one side.
    """

    def firsts(words: Sequence[str]) -> set[int]:
        return {int(tokenizer(w, add_special_tokens=False)["input_ids"][0]) for w in words}

    yes, no = firsts(YES_WORDS), firsts(NO_WORDS)
    shared = yes & no
    if not yes - shared or not no - shared:
        raise SagoError(
            "the judge model's tokenizer starts YES and NO with the same tokens; use another model"
        )
    return tuple(sorted(yes - shared)), tuple(sorted(no - shared))


Score = Callable[[str, str, int], float]
"""(response, baseline, direction) -> margin log P(YES) − log P(NO); positive leans YES."""


class LogitScorer:
    """The YES/NO margin of a causal LM on the judge prompt, with the instructions' cache shared.

    Args:
        model: a transformers causal LM in eval mode (float32 on the CPU for determinism).
        tokenizer: its tokenizer; its chat template is used when it has one.

    Raises:
        SagoError: the tokenizer has no first token that starts only YES, or only NO (:func:`answer_ids`).
    """

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.yes_ids, self.no_ids = answer_ids(tokenizer)
        self._prefixes: dict[int, tuple[list[int], Any]] = {}

    def parts(self, response: str, baseline: str, direction: int) -> tuple[list[int], list[int]]:
        """Token ids of the shared start (template head + instructions) and of the row's own part.

        The message is rendered once with a placeholder to find where the template's head ends and its
        tail (the assistant turn's opening) begins; the two halves are tokenized separately, so the
        shared start is the same ids for every row.
        """
        head, tail = self._template()
        start = self.tokenizer(head + instructions(direction), add_special_tokens=False)["input_ids"]
        rest = self.tokenizer(row_text(response, baseline, direction) + tail, add_special_tokens=False)
        return list(start), list(rest["input_ids"])

    def _template(self) -> tuple[str, str]:
        if not getattr(self.tokenizer, "chat_template", None):
            return "", "\nAnswer:"
        rendered = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": _SPLIT}], tokenize=False, add_generation_prompt=True
        )
        head, tail = str(rendered).split(_SPLIT)
        return head, tail

    def __call__(self, response: str, baseline: str, direction: int) -> float:
        import torch

        start, rest = self.parts(response, baseline, direction)
        if direction not in self._prefixes:
            with torch.inference_mode():
                out = self.model(input_ids=torch.tensor([start]), use_cache=True)
            self._prefixes[direction] = (start, out.past_key_values)
        cached_start, cache = self._prefixes[direction]
        if cached_start != start:  # the instructions are fixed, so this would be a bug
            raise AssertionError("the shared start of the judge prompt changed")
        with torch.inference_mode():
            out = self.model(
                input_ids=torch.tensor([rest]),
                past_key_values=copy.deepcopy(cache),  # each row continues the same instructions
                use_cache=True,
                logits_to_keep=1,
            )
        # log P(any YES start) − log P(any NO start) of the next token
        log_probs = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        yes = torch.logsumexp(log_probs[list(self.yes_ids)], dim=0)
        no = torch.logsumexp(log_probs[list(self.no_ids)], dim=0)
        return float(yes - no)


@dataclass
class ScoreCache:
    """Margins already computed, in a JSON file keyed by the model's tag and the row's full question.

    Reruns of a measurement then cost nothing; a changed prompt or model gives new keys.
    """

    path: Path
    """the JSON file (created on the first :meth:`save`)."""
    tag: str
    """names the model, e.g. the sha256 of its weights file."""
    scores: dict[str, float] = field(default_factory=dict)
    """key -> margin."""
    seconds: float = 0.0
    """wall time spent computing the margins that were not cached yet (this process)."""

    @classmethod
    def open(cls, path: Path, tag: str) -> ScoreCache:
        """The cache at ``path``, empty when the file is absent; refuses a file made for another model."""
        if not path.exists():
            return cls(path, tag)
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("tag") != tag:
            raise SagoError(f"{path} caches another judge model ({document.get('tag')!r}); give another path")
        return cls(path, tag, {k: float(v) for k, v in document["scores"].items()})

    def key(self, response: str, baseline: str, direction: int) -> str:
        """sha256 of everything the margin depends on besides the model."""
        text = json.dumps([self.tag, instructions(direction), row_text(response, baseline, direction)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def wrap(self, score: Score) -> Score:
        """``score`` that looks each row up first and remembers what it computes."""

        def cached(response: str, baseline: str, direction: int) -> float:
            key = self.key(response, baseline, direction)
            if key not in self.scores:
                started = time.perf_counter()
                self.scores[key] = score(response, baseline, direction)
                self.seconds += time.perf_counter() - started
            return self.scores[key]

        return cached

    def save(self) -> None:
        """Write the cache (atomically: a partial file never replaces a good one)."""
        partial = self.path.with_name(self.path.name + ".partial")
        document = {"tag": self.tag, "scores": dict(sorted(self.scores.items()))}
        partial.write_text(json.dumps(document, indent=0), encoding="utf-8")
        partial.replace(self.path)


@dataclass(frozen=True)
class LogitPolitenessJudge:
    """A language model's YES/NO margin on the tone question, behind the authors' cue guard.

    >>> judge = LogitPolitenessJudge(lambda response, baseline, direction: 1.5, threshold=1.0)
    >>> judge.shifted("Thanks! Paris.", "Paris.", +1), judge.shifted("Paris!", "Paris.", +1)  # no cue
    (True, False)
    """

    score: Score
    """(response, baseline, direction) -> margin log P(YES) − log P(NO), e.g. a :class:`LogitScorer`."""
    threshold: float = THRESHOLD
    """the verdict is YES when the margin reaches it (chosen on the tuning rows by
    ``benchmark.tools.judge_calibration.choose_threshold``)."""
    guard: bool = True
    """the authors' guard: NO unless y_0 or y_v holds a courtesy cue (then the model is not asked)."""

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        if self.guard and not (has_courtesy_cue(response) or has_courtesy_cue(baseline)):
            return False
        return self.score(response, baseline, direction) >= self.threshold


def load_scorer(artefact: str, *, threads: int | None = 1) -> LogitScorer:
    """The packaged GGUF model ``artefact`` (its pinned sha256 checked) as a :class:`LogitScorer`, in float32;
    ``threads`` sets torch's CPU threads (1: the measurement's deterministic setting; None: left as is)."""
    import torch

    from benchmark.gguf import load_gguf
    from benchmark.packaged import ARTEFACTS

    if threads is not None:
        torch.set_num_threads(threads)
    loaded = load_gguf(artefact, dtype=torch.float32, sha256=ARTEFACTS.get(artefact).sha256)
    return LogitScorer(loaded.model, loaded.tokenizer)


MEASURED_THRESHOLDS: dict[str, float] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": 0.1291,
    "qwen2.5-coder-0.5b-instruct-q4_k_m": -0.6793,
}
"""The threshold chosen on the 208 tuning rows for each measured packaged model (docs/METHOD.md §7.1). The
runtime reads these constants only; they were measured by the research tool
``python -m benchmark.tools.judge_calibration``, which no runtime unit imports
(``tests/test_axes_llm_judge.py`` recomputes them from the committed margins). No margin lies within 0.004
of either, so the rounding moves no verdict."""
JUDGE_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
"""The model behind ``$SAGO_POLITENESS_JUDGE=llm``: the higher held-out κ of the two measured."""


def prompt_digest() -> str:
    """12 hex digits of sha256 over everything the judge says and reads, for provenance.

    A changed instruction, question or answer spelling gives another digest, so results scored with
    another prompt are told apart.
    """
    text = json.dumps([INSTRUCTIONS, QUESTIONS, YES_WORDS, NO_WORDS], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class PackagedScorer:
    """A :class:`LogitScorer` over a packaged model, loaded on the first row it scores.

    Building the scorers of a run (``AxisScorers.default``) then loads nothing, and a run whose
    politeness rows all lack a courtesy cue never loads the model.
    """

    def __init__(self, artefact: str) -> None:
        self.artefact = artefact
        self._scorer: LogitScorer | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded yet."""
        return self._scorer is not None

    def __call__(self, response: str, baseline: str, direction: int) -> float:
        if self._scorer is None:
            self._scorer = load_scorer(self.artefact, threads=None)  # the run's thread setting stands
        return self._scorer(response, baseline, direction)


def packaged_judge(artefact: str = JUDGE_MODEL) -> tuple[LogitPolitenessJudge, str]:
    """The measured judge over ``artefact`` at its tuned threshold, and the label results record for it.

    Raises:
        SagoError: ``artefact`` has no threshold measured on the tuning rows.
    """
    if artefact not in MEASURED_THRESHOLDS:
        raise SagoError(
            f"no politeness threshold is measured for {artefact!r} (measured: "
            f"{', '.join(MEASURED_THRESHOLDS)}); measure it with "
            "python -m benchmark.tools.judge_calibration --judge <model> --cache <file>"
        )
    threshold = MEASURED_THRESHOLDS[artefact]
    label = f"LogitPolitenessJudge({artefact}, threshold {threshold:g}, prompt {prompt_digest()})"
    return LogitPolitenessJudge(PackagedScorer(artefact), threshold), label
