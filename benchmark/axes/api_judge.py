"""The authors' politeness-mirroring judge through any OpenAI-compatible endpoint (``openai:<model>``).

The paper's closed-model tables were judged by gpt-4o-mini: one user message holding the two prompts and
the two responses, the politeness signals to count and the boilerplate not to count, the direction of the
rewrite from the sign of its strength, and "YES or NO" as the answer, at temperature 0 with at most 16
output tokens; then a YES stands only when y_0 or y_v holds one of their 15 courtesy cues (their guard).
This module sends that message, in the authors' words (a constant of the method, like the cue list; source:
their ``utils/metrics.py``, ``build_mirroring_prompt_politeness``), through
:class:`benchmark.chat_api.ChatClient`.

* the guard is checked first: a row it would turn to NO is never sent (same verdict, no cost);
* every verdict is cached on disk, keyed by the endpoint, the model and the whole message, so a re-run of
  ``sago analyze`` pays nothing and a changed prompt or model asks again;
* a reply that is neither YES nor NO counts as NO for this run, and is counted (``unparsed``) and shown in
  ``sago analyze``'s output (:func:`stats_line`); it is stored as unparsable, never as a NO, so the next
  run asks again.

The local judges stay the default (docs/METHOD.md section 7); this one is chosen with
``$SAGO_POLITENESS_JUDGE=openai:<model>`` (``sago analyze --judge openai:<model>``). Its agreement with the
authors' verdicts is measured by the research tool ``python -m benchmark.tools.judge_calibration``
(``--judge openai:<model>``), which no runtime unit imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmark.appendlog import request_key
from benchmark.axes.politeness import CourtesyCueJudge
from benchmark.chat_api import ChatClient, ChatRequest, ChatSettings, PaidStore
from benchmark.paths import cache_dir

MAX_TOKENS = 16
"""the authors' ``judge_max_output_tokens``."""
BASE_URL_ENV = "SAGO_JUDGE_BASE_URL"
"""the judge's endpoint (default the OpenAI API)."""
KEY_ENV_ENV = "SAGO_JUDGE_KEY_ENV"
"""the variable holding the judge's key (default ``OPENAI_API_KEY``; ``none``: send no key)."""
DEFAULT_BASE_URL = "https://api.openai.com"
NOT_SHOWN = "(not available to this judge)"
"""what stands in a prompt section when the caller has no prompt (the calibration rows publish none)."""

_HEAD = """You are evaluating POLITENESS STYLE MIRRORING.

Task:
Decide whether the STYLED OUTPUT reflects the intended politeness-direction shift
consistent with the STYLED PROMPT, compared to the ORIGINAL OUTPUT.

Base your decision mainly on comparing:
ORIGINAL OUTPUT  vs  STYLED OUTPUT
The prompts are context only.

Count ONLY politeness signals:
- Respectfulness vs bluntness
- Softening/hedging (e.g., "could", "would", "might") vs directness
- Courtesy markers (e.g., "please", "thank you", apologies)
- Warmth/courteous phrasing vs curt tone
- Overall politeness tone (direction-dependent)

Do NOT count as mirroring:
- Generic assistant boilerplate: "I'm here to help", "As an AI", "I apologize", "sorry", "I can't",
  "I strive to be helpful", "I'm not acting stupid", self-defense, meta explanations.
- Content correctness/factuality
- Length changes alone

Style metadata:
- style_name: politeness
- strength: {strength}
- place: {place}

{direction}

Decision rule:
{rule}

Return EXACTLY one token: YES or NO.

=== ORIGINAL PROMPT ===
{prompt_0}

=== ORIGINAL OUTPUT ===
{baseline}

=== STYLED PROMPT ===
{prompt_v}

=== STYLED OUTPUT ===
{response}

Answer (YES/NO only):"""

_DIRECTIONS: dict[int, tuple[str, str]] = {
    +1: (
        "Intended direction (strength > 0): MORE POLITE.\n"
        "Look for: more respectful wording, more hedging/softening (could/would/might), "
        "more gratitude/apologies, warmer tone, more considerate phrasing.",
        "Answer YES if STYLED OUTPUT is clearly MORE POLITE than ORIGINAL OUTPUT. If unclear, answer NO.",
    ),
    -1: (
        "Intended direction (strength < 0): LESS POLITE / MORE BLUNT.\n"
        "Look for: fewer courtesy markers (less 'please/thanks/sorry'), reduced hedging, "
        "more direct/curt phrasing, more imperative framing, less warmth.\n"
        "You are judging bluntness/courtesy, not toxicity. Do not require insults.\n\n"
        "CRITICAL anti-false-positive rule:\n"
        "- If STYLED OUTPUT becomes apologetic/servile/defensive (e.g., 'I apologize', 'I'm here to help', "
        "'I'm a language model', 'I'm not acting stupid'), that is NOT mirroring for negative strength "
        "and should be NO.\n"
        "- A rude STYLED PROMPT does NOT guarantee mirroring; "
        "the output must actually become more blunt/curt.",
        "Answer YES only if STYLED OUTPUT is clearly LESS POLITE / MORE BLUNT than ORIGINAL OUTPUT.\n"
        "Answer NO if the styled output is apologetic/servile/defensive, or if the difference is ambiguous.",
    ),
    0: (
        "Intended direction (strength = 0): NO POLITENESS SHIFT expected.\nA YES should be rare.",
        "Answer YES only if there is an obvious strong politeness difference despite strength=0; else NO.",
    ),
}
_CUES = CourtesyCueJudge()
_ANSWER = re.compile(r"\b(YES|NO)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RowContext:
    """What the authors' message shows besides the two responses."""

    prompt_0: str = NOT_SHOWN
    prompt_v: str = NOT_SHOWN
    strength: float | None = None
    """the rewrite's strength; None: ±1 from the direction the caller gives."""
    place: str = "global"


def judge_message(response: str, baseline: str, direction: int, context: RowContext = RowContext()) -> str:
    """The one user message the judge gets for a row.

    >>> text = judge_message("Thanks!", "Paris.", +1, RowContext("Capital?", "Please, capital?", 6.0))
    >>> "- strength: 6" in text and "MORE POLITE." in text and text.endswith("Answer (YES/NO only):")
    True
    """
    strength = context.strength if context.strength is not None else float(direction)
    sign = (strength > 0) - (strength < 0)
    text, rule = _DIRECTIONS[sign]
    shown = asdict(context) | {"strength": f"{strength:g}"}  # prompt_0, prompt_v, place and the strength
    return _HEAD.format(**shown, direction=text, rule=rule, baseline=baseline, response=response)


def parse_verdict(text: str) -> bool | None:
    """YES -> True, NO -> False, the first of them that appears; None when neither does.

    >>> parse_verdict("YES"), parse_verdict(" no."), parse_verdict("Answer: Yes"), parse_verdict("maybe")
    (True, False, True, None)
    """
    found = _ANSWER.search(text)
    return None if found is None else found.group(1).upper() == "YES"


@dataclass
class ApiPolitenessJudge:
    """The authors' judge over ``client``; :meth:`in_context` binds a row's prompts and strength."""

    client: ChatClient
    cache_path: Path | None = None
    stats: dict[str, int] = field(
        default_factory=lambda: {"asked": 0, "cached": 0, "guarded": 0, "unparsed": 0}
    )
    _verdicts: PaidStore = field(init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self._verdicts = PaidStore(self.cache_path)

    @property
    def label(self) -> str:
        """What the deltas' settings record: endpoint, model, the message's digest, guard and token cap."""
        s = self.client.settings
        return (
            f"ApiPolitenessJudge(openai:{s.model}@{s.base_url}, prompt {prompt_digest()}, cue guard, "
            f"{MAX_TOKENS} tokens)"
        )

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return self.verdict(response, baseline, direction, RowContext())

    def in_context(self, context: RowContext) -> _Bound:
        return _Bound(self, context)

    def verdict(self, response: str, baseline: str, direction: int, context: RowContext) -> bool:
        if not (_CUES.count(response, +1) or _CUES.count(baseline, +1)):
            self._count("guarded")
            return False  # the authors' guard would turn any YES into NO: not worth a request
        message = judge_message(response, baseline, direction, context)
        s = self.client.settings
        key = request_key(s.base_url, s.model, message)
        known = (self._verdicts.get(key) or {}).get("yes")
        if isinstance(known, bool):  # an unparsable reply is stored with "yes": null, so it is asked again
            self._count("cached")
            return known
        reply = self.client.complete(ChatRequest(message, MAX_TOKENS))
        self._count("asked")
        parsed = parse_verdict(reply.text)
        if parsed is None:
            self._count("unparsed")
        self._verdicts.put(key, {"yes": parsed, "raw": reply.text[:64]})
        return bool(parsed)

    def _count(self, name: str) -> None:
        with self._lock:
            self.stats[name] += 1
        with _TOTALS_LOCK:
            _TOTALS[name] = _TOTALS.get(name, 0) + 1


_TOTALS: dict[str, int] = {}
"""every API judge's counts in this process (``sago analyze`` builds one judge per submission)."""
_TOTALS_LOCK = threading.Lock()


def stats_line() -> str | None:
    """One line of what the API judges of this process did (e.g. ``API judge: 12 asked, 30 cached,
    41 guarded, 1 unparsable (1 counted as NO this run, asked again next run)``), None when none was used."""
    with _TOTALS_LOCK:
        totals = dict(_TOTALS)
    if not totals:
        return None
    parts = ", ".join(f"{totals.get(k, 0)} {k}" for k in ("asked", "cached", "guarded"))
    unparsed = totals.get("unparsed", 0)
    tail = f" ({unparsed} counted as NO this run, asked again next run)" if unparsed else ""
    return f"API judge: {parts}, {unparsed} unparsable{tail}"


@dataclass(frozen=True)
class _Bound:
    judge: ApiPolitenessJudge
    context: RowContext

    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return self.judge.verdict(response, baseline, direction, self.context)


def prompt_digest() -> str:
    """12 hex digits of sha256 over the message template, for provenance."""
    text = json.dumps([_HEAD, _DIRECTIONS, MAX_TOKENS], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def api_judge(model: str, *, environ: Mapping[str, str] | None = None) -> ApiPolitenessJudge:
    """The judge ``openai:<model>`` names, at ``$SAGO_JUDGE_BASE_URL``, key in ``$SAGO_JUDGE_KEY_ENV``.

    Raises:
        SagoError: the key variable is unset.
    """
    env = os.environ if environ is None else environ
    key_env = env.get(KEY_ENV_ENV, "OPENAI_API_KEY")
    settings = ChatSettings(
        env.get(BASE_URL_ENV, DEFAULT_BASE_URL), model, None if key_env == "none" else key_env
    )
    digest = hashlib.sha256(f"{settings.base_url}|{model}".encode()).hexdigest()[:16]
    return ApiPolitenessJudge(ChatClient(settings), cache_dir() / "api-judge" / f"{digest}.jsonl")
