"""A model behind an OpenAI-compatible chat endpoint as a :class:`~benchmark.models.protocol.ModelBackend`.

What differs from an open model, and why:

* **no teacher forcing, no hidden states.** A chat endpoint does not score a given continuation
  (log p(y_0 | x_v)) and shows no activations, so the backend declares ``logprobs`` and ``hidden_states``
  False; the confidence columns of its records are NaN and run.json lists those measures as not measured.
  The endpoint's log-probabilities of the model's *own* tokens (``logprobs: true``) are kept per row
  (``token_logprobs``): the authors' closed-model confidence (METHOD.md section 4.1) is computed from them,
  in the API table only.
* **every response is a checkpoint.** Requests of a batch run concurrently on a bounded pool; each reply
  is appended to a JSON-lines cache as it arrives (fsynced), keyed by the row and everything sent, so a
  run killed mid-batch resumes without paying for a reply twice. A torn last line is ignored.
* **the noise floor is measured, not assumed.** The identity and rerun control rows are keyed by their
  own row, so they are sent again: at temperature 0 a hosted endpoint still varies, and those rows show
  how much.
* **log-probabilities are asked for, not required.** Many providers and reasoning models refuse
  ``logprobs``; the first refusal (HTTP 400 naming it) or reply without them drops the field for the rest
  of the run, run.json's ``model.own_confidence`` says why, and the API table shows no own-token confidence
  for that run (rather than one measured on some replies only).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from benchmark.appendlog import request_key
from benchmark.chat_api import (
    ChatCancelled,
    ChatClient,
    ChatError,
    ChatReply,
    ChatRequest,
    ChatSettings,
    PaidStore,
)
from benchmark.models.protocol import Capabilities, VariantOutput, VariantRequest
from benchmark.schema import DEFAULT_SEED

CACHE_FILE = "api-responses.jsonl"
"""the reply cache, in the run's checkpoint folder."""
NAN = float("nan")


class ReplyCache(PaidStore):
    """Replies already paid for: ``{"key", "reply", "tries"}`` entries."""

    def totals(self) -> dict[str, int]:
        """Over every cached reply: how many, and the token usage the server reported."""
        replies: list[dict[str, Any]] = [r for e in self.entries() if isinstance(r := e.get("reply"), dict)]
        return {
            "replies": len(replies),
            "retries": sum(t - 1 for e in self.entries() if isinstance(t := e.get("tries"), int) and t > 1),
            "prompt_tokens": sum(int(r["prompt_tokens"]) for r in replies),
            "completion_tokens": sum(int(r["completion_tokens"]) for r in replies),
        }


class ApiBackend:
    """Greedy chat completions from one endpoint; see the module docstring for what it measures."""

    capabilities = Capabilities(generate=True, logprobs=False, hidden_states=False)

    def __init__(
        self,
        settings: ChatSettings,
        *,
        snapshot: str,
        concurrency: int = 4,
        cache_path: Path | None = None,
        seed: int = DEFAULT_SEED,
        client: ChatClient | None = None,
    ) -> None:
        self.settings = settings
        self.snapshot = snapshot
        self.name = settings.model
        self.batch_size = concurrency * 4  # a checkpoint part every few rounds of the pool
        self.concurrency = concurrency
        self.seed = seed
        self.client = client or ChatClient(settings)
        self._cache: ReplyCache | None = ReplyCache(cache_path) if cache_path else None
        self._no_logprobs: str | None = None
        """why log-probabilities are no longer asked for (None: they are)."""
        self._lock = threading.Lock()

    def attach_cache(self, path: Path) -> None:
        """Keep replies in ``path`` (the run's checkpoint folder is known only once the run is planned)."""
        self._cache = ReplyCache(path)

    def request(self, prompt: str, max_new_tokens: int) -> ChatRequest:
        """What is sent for one prompt: greedy, seeded, capped, with the sampled tokens' log-probabilities."""
        logprobs = self._no_logprobs is None
        return ChatRequest(prompt, max_new_tokens, temperature=0.0, seed=self.seed, logprobs=logprobs)

    def run(
        self, requests: Sequence[VariantRequest], *, max_new_tokens: int, rerun_control: bool = False
    ) -> list[VariantOutput]:
        if max_new_tokens == 0:  # the teacher-forced scoring pass: nothing an endpoint can answer
            return [_output(r.key, {"text": ""}) for r in requests]
        phase = "rerun" if rerun_control else "run"
        pool = ThreadPoolExecutor(self.concurrency)
        futures = [pool.submit(self._one, r, max_new_tokens, phase) for r in requests]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                # a refused key or a dead server: stop asking now, not when every queued row has failed
                # too (requests in flight are cut; replies already received are cached)
                self.client.cancel()
                pool.shutdown(wait=True, cancel_futures=True)
                # every started request has ended now; the cause, not a row the cancel cut, is reported
                errors = [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
                raise min(errors, key=lambda e: isinstance(e, ChatCancelled))
            return [f.result() for f in futures]
        except BaseException:
            self.client.cancel()  # Ctrl-C included
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)

    def _one(self, request: VariantRequest, max_new_tokens: int, phase: str) -> VariantOutput:
        while True:  # at most twice: with log-probabilities, then without once the endpoint refuses them
            chat = self.request(request.prompt, max_new_tokens)
            body = chat.to_json(self.settings.model)
            key = request_key(request.key, phase, self.snapshot, body)
            entry = self._cache.get(key) if self._cache else None
            if entry is not None:
                return _output(request.key, entry["reply"])
            try:
                reply, tries = self.client.send(chat)
            except ChatError as err:
                if not (chat.logprobs and err.status == 400 and "logprob" in str(err).lower()):
                    # stop the pool here, in the failing worker: a queued row picked up before run()
                    # wakes would otherwise still be sent (and paid for) after a refused key
                    self.client.cancel()
                    raise
                self._drop_logprobs(f"not measured: the endpoint refused logprobs ({err})")
                continue
            if chat.logprobs and reply.token_logprobs is None:
                self._drop_logprobs("not measured: the endpoint answered without logprobs")
            fields = {"tries": tries, "reply": reply_json(reply)}
            entry = self._cache.put(key, fields) if self._cache else fields
            return _output(request.key, entry["reply"])

    def _drop_logprobs(self, why: str) -> None:
        """Ask for no log-probabilities for the rest of the run, and say why (once)."""
        with self._lock:
            if self._no_logprobs is None:
                self._no_logprobs = why
                self.client.notify(f"note: {why}; asking without them for the rest of the run")

    @property
    def own_confidence_note(self) -> str:
        """run.json's ``model.own_confidence``: ``measured``, or why not."""
        return self._no_logprobs or "measured"

    def describe(self) -> dict[str, object]:
        totals = self._cache.totals() if self._cache else {}
        counts = self.client.counts()
        return {
            "source": "api",
            "location": self.settings.base_url,
            "revision": self.snapshot,
            "file_sha256": None,
            "dtype": None,
            "engine": "api",
            "device": "remote",
            "chat_template": "server",
            "model_name": self.settings.model,
            "key_env": self.settings.key_env,
            "concurrency": self.concurrency,
            "timeout_s": self.settings.timeout_s,
            "batch_sizes": [self.batch_size],
            "own_confidence": self.own_confidence_note,
            "requests": {
                "replies": totals.get("replies", 0),
                "retries": totals.get("retries", counts["retries"]),
                "sent_this_process": counts["requests"],
                "retries_this_process": counts["retries"],
                "prompt_tokens": totals.get("prompt_tokens", counts["prompt_tokens"]),
                "completion_tokens": totals.get("completion_tokens", counts["completion_tokens"]),
            },
        }


def reply_json(reply: ChatReply) -> dict[str, Any]:
    """What the cache keeps of a reply (everything the records and the own-token confidence need)."""
    return {
        "text": reply.text,
        "finish_reason": reply.finish_reason,
        "token_logprobs": list(reply.token_logprobs) if reply.token_logprobs is not None else None,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
    }


def _output(key: str, reply: Any) -> VariantOutput:  # a cached reply: a dict as reply_json writes it
    logprobs = reply.get("token_logprobs")
    tokens = int(reply.get("completion_tokens") or (len(logprobs) if logprobs else 0))
    return VariantOutput(
        key=key,
        response=str(reply["text"]).strip(),
        response_tokens=tokens,
        finished=reply.get("finish_reason") == "stop",
        logprob_sum=NAN,
        logprob_mean=NAN,
        entropy_mean=NAN,
        baseline_tokens=0,
        prompt_tokens=int(reply.get("prompt_tokens") or 0),
        hidden=None,
        token_logprobs=tuple(float(v) for v in logprobs) if logprobs else None,
    )


def own_confidence(token_logprobs: Sequence[float] | None) -> tuple[float, float]:
    """The authors' closed-model confidence of one reply: (mean probability of its own tokens, the sum
    −Σ p·log p over those tokens' probabilities), probabilities clipped to [1e-10, 1]; NaN without
    log-probabilities. (METHOD.md section 4.1: not the teacher-forced Δ log p(y_0 | x_v).)

    >>> own_confidence([0.0, math.log(0.5)])
    (0.75, 0.34657359027997264)
    >>> own_confidence(None)
    (nan, nan)
    """
    if not token_logprobs:
        return NAN, NAN
    probs = [min(1.0, max(1e-10, math.exp(v))) for v in token_logprobs]
    return sum(probs) / len(probs), -sum(p * math.log(p) for p in probs)
