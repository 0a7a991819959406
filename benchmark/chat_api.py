"""A client for any OpenAI-compatible ``/v1/chat/completions`` endpoint: a hosted API, vLLM, llama.cpp.

One request at a time per call; callers run calls concurrently on a bounded pool (:class:`ChatClient` is
thread-safe). What a benchmark needs from a remote model, and what this module guarantees:

* **the key never leaves the environment.** The submission names an environment variable; the key is
  read from it when a request is sent, never stored in a result, a checkpoint or a message.
* **transient failures are retried, the rest fail at once.** 429 and 5xx answers, refused or reset
  connections and timeouts are retried with exponential backoff (honouring ``Retry-After``), at most
  :attr:`ChatSettings.retries` times; 400/401/403/404, a body that is not JSON or has no
  ``choices[0].message`` are one-line :class:`~benchmark.errors.SagoError` s that name the fix.
* **counts for provenance.** Requests, retries and the server's token usage are counted
  (:meth:`ChatClient.counts`) for run.json.

Standard library only (``urllib``): no client package to pin, and nothing imported at module load.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.errors import SagoError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth a second try: rate limits, overload and gateway trouble."""
_KEYLIKE = re.compile(r"\b(?:sk|pk|rk|key)[-_][A-Za-z0-9_\-*.]{3,}")
"""what a quoted API key looks like in a server's error message (``sk-proj-...``, ``sk-abc***xyz``)."""
MAX_BACKOFF_S = 60.0
"""cap on one wait between tries (a ``Retry-After`` above it is cut to it)."""


@dataclass(frozen=True)
class ChatSettings:
    """Where and how to send requests; everything but the key (which stays in ``key_env``)."""

    base_url: str
    """the server, e.g. ``https://api.openai.com`` or ``http://127.0.0.1:8080`` (``/v1`` is added)."""
    model: str
    """the model name the server expects in each request."""
    key_env: str | None = None
    """environment variable holding the API key; None: send no key (a local server)."""
    timeout_s: float = 120.0
    """seconds one request may take before it counts as failed (and is retried)."""
    retries: int = 6
    """tries after the first on a retryable failure."""
    backoff_s: float = 1.0
    """first wait between tries; doubled each time, with jitter, capped at :data:`MAX_BACKOFF_S`."""

    @property
    def url(self) -> str:
        """The chat completions address.

        >>> ChatSettings("http://127.0.0.1:8080/", "m").url
        'http://127.0.0.1:8080/v1/chat/completions'
        >>> ChatSettings("https://api.openai.com/v1", "m").url
        'https://api.openai.com/v1/chat/completions'
        """
        base = self.base_url.rstrip("/")
        return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request: a single user message, greedy by default."""

    prompt: str
    """the user message (the server applies the model's chat template)."""
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    logprobs: bool = False
    """ask for the log-probability of each sampled token (``top_logprobs: 1``)."""

    def to_json(self, model: str) -> dict[str, object]:
        """The request body.

        >>> ChatRequest("Hi", 8, seed=42).to_json("m")["seed"]
        42
        """
        body: dict[str, object] = {
            "model": model,
            "messages": [{"role": "user", "content": self.prompt}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.logprobs:
            body |= {"logprobs": True, "top_logprobs": 1}
        return body


@dataclass(frozen=True)
class ChatReply:
    """One completion: the text, why it stopped, the sampled tokens' log-probabilities and the usage."""

    text: str
    finish_reason: str
    """"stop" (end of turn), "length" (the token cap) or what the server said."""
    token_logprobs: tuple[float, ...] | None
    """log p of each generated token as the server reports it (``logprobs``); None when it gave none."""
    prompt_tokens: int
    completion_tokens: int


def reply_from_json(payload: object, url: str) -> ChatReply:
    """Read a chat completion body; a body without ``choices[0].message.content`` is a one-line error.

    >>> reply_from_json({"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]}, "u").text
    'Hi'
    """
    body = payload if isinstance(payload, Mapping) else {}
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(choice, Mapping) or not isinstance(message, Mapping) or "content" not in message:
        raise SagoError(f"{url} answered without choices[0].message.content; is it OpenAI-compatible?")
    text = message["content"] if message["content"] is not None else ""  # None: cut before a token
    if not isinstance(text, str):
        raise SagoError(f"{url} answered with a non-text message content; is it OpenAI-compatible?")
    usage = body.get("usage")
    counts = usage if isinstance(usage, Mapping) else {}
    return ChatReply(
        text=text,
        finish_reason=str(choice.get("finish_reason") or ""),
        token_logprobs=_token_logprobs(choice.get("logprobs")),
        prompt_tokens=_count(counts.get("prompt_tokens")),
        completion_tokens=_count(counts.get("completion_tokens")),
    )


def _count(value: object) -> int:
    return int(value) if isinstance(value, int | float) and value >= 0 else 0


def _token_logprobs(block: object) -> tuple[float, ...] | None:
    """``logprobs.content[*].logprob`` (the OpenAI shape, also vLLM's and llama.cpp's)."""
    if not isinstance(block, Mapping) or not isinstance(block.get("content"), list):
        return None
    values = [entry.get("logprob") for entry in block["content"] if isinstance(entry, Mapping)]
    numbers = [float(v) for v in values if isinstance(v, int | float)]
    return tuple(numbers) if len(numbers) == len(values) else None


class ChatError(SagoError):
    """A request that failed; ``retryable`` says whether another try could help, ``retry_after`` how long
    the server asked to wait (seconds, from its ``Retry-After`` header)."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class ChatClient:
    """Sends chat requests to one endpoint, retrying what is transient; safe to share between threads."""

    settings: ChatSettings
    sleep: Callable[[float], None] = time.sleep
    """how to wait between tries (tests pass a recorder)."""
    opener: Callable[..., Any] = urllib.request.urlopen
    """how to open a request; a submitted model uses benchmark.endpoints.guarded_opener (checked hosts)."""
    _counts: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self._key()  # a missing key fails before the first request, not inside a worker thread

    def complete(self, request: ChatRequest) -> ChatReply:
        """Send ``request`` and return the reply, after retries where they help.

        Raises:
            SagoError: the endpoint refused the request, is unreachable after every retry, or answered
                with something that is not a chat completion.
        """
        return self.send(request)[0]

    def send(self, request: ChatRequest) -> tuple[ChatReply, int]:
        """:meth:`complete`, and how many tries the reply took."""
        payload = json.dumps(request.to_json(self.settings.model)).encode("utf-8")
        for attempt in range(self.settings.retries + 1):
            self._add("requests", 1)
            try:
                reply = self._send(payload)
            except ChatError as err:
                if not err.retryable or attempt == self.settings.retries:
                    raise SagoError(f"{err} (after {attempt + 1} tries)") from None
                self._add("retries", 1)
                self.sleep(self._wait(attempt, err.retry_after))
                continue
            self._add("prompt_tokens", reply.prompt_tokens)
            self._add("completion_tokens", reply.completion_tokens)
            return reply, attempt + 1
        raise AssertionError("unreachable: the last try returns or raises")

    def counts(self) -> dict[str, int]:
        """Requests sent (tries included), retries, and the token usage the server reported."""
        with self._lock:
            return {
                k: self._counts.get(k, 0)
                for k in ("requests", "retries", "prompt_tokens", "completion_tokens")
            }

    def _add(self, name: str, value: int) -> None:
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + value

    def _key(self) -> str | None:
        name = self.settings.key_env
        if name is None:
            return None
        key = os.environ.get(name, "")
        if not key:
            raise SagoError(f"the API key variable {name} is not set; export {name}=<your key> and run again")
        return key

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(MAX_BACKOFF_S, retry_after)
        jitter = 0.5 + random.random()  # spreads the retries of concurrent requests apart
        return float(min(MAX_BACKOFF_S, self.settings.backoff_s * 2.0**attempt * jitter))

    def _send(self, payload: bytes) -> ChatReply:
        url = self.settings.url
        headers = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(url, payload, headers, method="POST")
        try:
            with self.opener(request, timeout=self.settings.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            raise _http_error(url, err, key) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise ChatError(
                f"{url} is unreachable ({reason}); start the server or fix base_url", retryable=True
            ) from None
        try:
            decoded = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ChatError(
                f"{url} answered with a body that is not JSON; is it OpenAI-compatible?", retryable=False
            ) from None
        return reply_from_json(decoded, url)


def _http_error(url: str, err: urllib.error.HTTPError, key: str | None) -> ChatError:
    """One line for an HTTP error status; the server's own message is quoted, shortened, never the key."""
    detail = _error_detail(err)
    if key and len(key) >= 8:
        detail = detail.replace(key, "<key>")
    detail = _KEYLIKE.sub("<key>", detail)  # servers quote (part of) a rejected key back
    if err.code in (401, 403):
        message = f"{url} refused the key (HTTP {err.code}{detail}); check the key in the named variable"
    elif err.code == 404:
        message = f"{url} has no such model or route (HTTP 404{detail}); check base_url and the model name"
    else:
        message = f"{url} answered HTTP {err.code}{detail}"
    after = err.headers.get("Retry-After") if err.headers else None
    try:
        wait = float(after) if after is not None else None
    except ValueError:
        wait = None  # an HTTP date: the backoff decides
    return ChatError(message, retryable=err.code in RETRY_STATUSES, retry_after=wait)


def _error_detail(err: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(err.read() or b"{}")
        message = (
            body.get("error", {}).get("message") if isinstance(body.get("error"), dict) else body.get("error")
        )
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, OSError):
        return ""
    if not message:
        return ""
    text = " ".join(str(message).split())[:160]
    return f": {text}"


class PaidStore:
    """Answers already paid for, kept on disk as JSON lines ``{"key": ..., ...}`` (one per answer).

    Both the API backend's replies and the API judge's verdicts live in one: an answer is appended and
    flushed as soon as it arrives, so a killed run loses at most the answer being written. A line torn
    by a kill is skipped on load, and that answer is asked for again. Thread-safe; ``path`` None keeps
    the answers in memory only.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, object]] = {}
        self._torn = False
        """the file ends inside a line (a kill mid-write): the next answer starts on a new line."""
        if path is not None and path.is_file():
            text = path.read_text(encoding="utf-8")
            self._torn = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                try:
                    entry = json.loads(line)
                    self._entries[str(entry["key"])] = entry
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def get(self, key: str) -> dict[str, object] | None:
        """The entry stored under ``key`` (None: not paid for yet)."""
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, fields: Mapping[str, object]) -> dict[str, object]:
        """Store ``fields`` under ``key`` (on disk first, then in memory); returns the entry."""
        entry: dict[str, object] = {"key": key, **fields}
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write("\n" + line if self._torn else line)
                    out.flush()
                self._torn = False
            self._entries[key] = entry
        return entry

    def entries(self) -> list[dict[str, object]]:
        """Every stored entry (a snapshot)."""
        with self._lock:
            return list(self._entries.values())
