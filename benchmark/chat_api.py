"""A client for any OpenAI-compatible ``/v1/chat/completions`` endpoint: a hosted API, vLLM, llama.cpp.

:class:`ChatClient` is thread-safe. The key is read from the environment variable the submission names
when a request is sent, never stored. Transient failures (429, 5xx, resets, timeouts, a reply cut short)
are retried with exponential backoff honouring ``Retry-After``; the rest are one-line errors naming the
fix. A hostile server cannot hang or flood a run: each request has a total deadline and a limit on
silence, the body is read up to :data:`MAX_REPLY_BYTES`, redirects are never followed, and anything
shaped like a key is masked in messages. Standard library only: no client package to pin.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import random
import re
import socket
import ssl
import sys
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.appendlog import AppendLog
from benchmark.errors import SagoError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_KEYLIKE = re.compile(
    r"\b(?:(?:sk|pk|rk|key)[-_][A-Za-z0-9_\-*.]{3,}"  # OpenAI and most others: sk-..., sk-proj-...
    r"|hf_[A-Za-z0-9]{6,}"  # Hugging Face
    r"|(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{6,}"  # GitHub
    r"|(?:AKIA|ASIA)[A-Z0-9]{12,}"  # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9\-]{6,})"  # Slack
)
"""what a quoted API key looks like in a server's error message (``sk-proj-...``, ``sk-abc***xyz``)."""
_BEARER = re.compile(r"(\b[Bb]earer\s+)[^\s\"',;]+")
MAX_TEXT_BYTES = 64 * 1024
"""the longest reply text accepted: the records' limit on one value (``benchmark.parquet_check``)."""
MAX_TOKEN_COUNT = 10**7
"""the largest token count a reply's ``usage`` may report (more is a broken server, read as 0)."""
MAX_MESSAGE_CHARS = 240
MAX_REPLY_BYTES = 4 << 20
"""the most of a reply body read: far above any legitimate reply (tens of KiB), far below filling memory."""
MAX_BACKOFF_S = 60.0
COUNTED = ("requests", "retries", "prompt_tokens", "completion_tokens")
"""what :meth:`ChatClient.counts` adds up over every request of the client."""


@dataclass(frozen=True)
class ChatSettings:
    """Where and how to send requests; everything but the key (which stays in ``key_env``)."""

    base_url: str
    """the server, e.g. ``https://api.openai.com`` or ``http://127.0.0.1:8080`` (``/v1`` is added)."""
    model: str
    key_env: str | None = None
    """environment variable holding the API key (None: send none)."""
    timeout_s: float = 120.0
    """seconds one request may take in all (a server that trickles bytes is cut off here)."""
    read_timeout_s: float = 30.0
    """the longest silence between two bytes of the answer."""
    max_reply_bytes: int = MAX_REPLY_BYTES
    retries: int = 6
    """tries after the first on a retryable failure."""
    backoff_s: float = 1.0
    """first wait between tries; doubled each time, with jitter."""

    @property
    def url(self) -> str:
        """
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
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    logprobs: bool = False
    """ask for the log-probability of each sampled token (``top_logprobs: 1``)."""

    def to_json(self, model: str) -> dict[str, object]:
        """
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
    """log p of each generated token (None: the server gave none)."""
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
    if len(text.encode("utf-8", "replace")) > MAX_TEXT_BYTES:
        raise SagoError(
            f"{url} answered with a message over {MAX_TEXT_BYTES // 1024} KiB, more than a result may hold; "
            "lower max_tokens or check the endpoint"
        )
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
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value <= MAX_TOKEN_COUNT else 0


def _token_logprobs(block: object) -> tuple[float, ...] | None:
    """``logprobs.content[*].logprob`` (the OpenAI shape, also vLLM's and llama.cpp's)."""
    if not isinstance(block, Mapping) or not isinstance(block.get("content"), list):
        return None
    values = [entry.get("logprob") for entry in block["content"] if isinstance(entry, Mapping)]
    # a log-probability is finite and at most 0: anything else (NaN, inf, +3) makes the whole list unusable
    numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v) and v <= 1e-6]
    return tuple(numbers) if len(numbers) == len(block["content"]) else None


class ChatError(SagoError):
    """A request that failed; ``retry_after``: the server's ``Retry-After`` (seconds)."""

    def __init__(
        self, message: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class ChatCancelled(ChatError):
    """A request cut because another request of the same run failed (that one carries the cause)."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


Connector = Callable[[str, str, "int | None", float], http.client.HTTPConnection]
"""(scheme, host, port, timeout) -> an unopened connection."""


def plain_connection(scheme: str, host: str, port: int | None, timeout: float) -> http.client.HTTPConnection:
    """The connection a maintainer's own client uses (the judge, the rewriter): no address rules."""
    kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    return kind(host, port, timeout=timeout)


@dataclass
class ChatClient:
    """Sends chat requests to one endpoint, retrying what is transient; safe to share between threads."""

    settings: ChatSettings
    sleep: Callable[[float], None] | None = None
    """how to wait between tries (tests pass a recorder); None: wait, unless :meth:`cancel` is called."""
    notify: Callable[[str], None] = _stderr
    """where a retry is announced, one line each."""
    connect: Connector = plain_connection
    """a submitted model's goes only to public addresses (``benchmark.endpoints.guarded_connector``)."""
    _counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0), init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _open: set[_Watchdog] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self._key()  # a missing key fails before the first request, not inside a worker thread

    def complete(self, request: ChatRequest) -> ChatReply:
        """Send ``request`` and return the reply, after retries where they help."""
        return self.send(request)[0]

    def send(self, request: ChatRequest) -> tuple[ChatReply, int]:
        """:meth:`complete`, and how many tries the reply took."""
        payload = json.dumps(request.to_json(self.settings.model)).encode("utf-8")
        tries = self.settings.retries + 1
        for attempt in range(tries):
            if self._stop.is_set():
                raise self._cancelled()
            self._add("requests", 1)
            try:
                reply = self._send(payload)
            except ChatError as err:
                if self._stop.is_set():  # cut by cancel(): not the server's fault, not worth a retry
                    raise self._cancelled() from None
                message = mask(str(err), self._key())
                if not err.retryable or attempt + 1 == tries:
                    # the real count: a refusal on the first try was never retried
                    suffix = f" (after {attempt + 1} tries)" if attempt else ""
                    raise ChatError(message + suffix, retryable=False, status=err.status) from None
                self._add("retries", 1)
                wait = self._wait(attempt, err.retry_after)
                self.notify(f"retry: {message}; try {attempt + 2} of {tries} in {wait:.1f}s")
                self._pause(wait)
                continue
            self._add("prompt_tokens", reply.prompt_tokens)
            self._add("completion_tokens", reply.completion_tokens)
            return reply, attempt + 1
        raise AssertionError("unreachable: the last try returns or raises")

    def cancel(self) -> None:
        """Stop every try, wait and request in flight (another request of the same run has failed)."""
        self._stop.set()
        with self._lock:
            watchdogs = list(self._open)
        for watchdog in watchdogs:
            watchdog.fire()

    def _cancelled(self) -> ChatError:
        return ChatCancelled(f"{self.settings.url}: request cancelled (another one failed)", retryable=False)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def _add(self, name: str, value: int) -> None:
        with self._lock:
            self._counts[name] += value

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

    def _pause(self, seconds: float) -> None:
        if self.sleep is not None:
            self.sleep(seconds)
        else:
            self._stop.wait(seconds)  # cancel() ends the wait at once

    def _send(self, payload: bytes) -> ChatReply:
        url = self.settings.url
        watchdog = _Watchdog(self.settings.timeout_s)
        with self._lock:
            self._open.add(watchdog)
        try:
            status, reply_headers, raw = _post(payload, self._key(), self.settings, watchdog, self.connect)
        finally:
            watchdog.cancel()
            with self._lock:
                self._open.discard(watchdog)
        if status >= 300:
            raise _status_error(url, status, reply_headers, raw)
        encoding = reply_headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ChatError(
                f"{url} answered with Content-Encoding {encoding[:40]!r}, which was not asked for; "
                "is it OpenAI-compatible?",
                retryable=False,
            )
        if not raw.strip():
            raise ChatError(f"{url} answered with an empty body", retryable=True)
        try:
            # NaN and Infinity are not JSON: read as null, so no such number reaches a record
            decoded = json.loads(raw, parse_constant=lambda _: None)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ChatError(
                f"{url} answered with a body that is not JSON; is it OpenAI-compatible?", retryable=False
            ) from None
        return reply_from_json(decoded, url)


class _Watchdog:
    """One request's deadline: shutting the connection wakes a read blocked on a trickling server."""

    def __init__(self, seconds: float) -> None:
        self.fired = threading.Event()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
        if self.fired.is_set():
            self._shut()

    def fire(self) -> None:
        self.fired.set()
        self._shut()

    def cancel(self) -> None:
        self._timer.cancel()

    def _shut(self) -> None:
        with self._lock:
            sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)


def _post(
    payload: bytes, key: str | None, settings: ChatSettings, watchdog: _Watchdog, connect: Connector
) -> tuple[int, dict[str, str], bytes]:
    """The status, headers (names lower-cased: HTTP/2 gateways send them so) and body of one POST.
    ``http.client`` and not ``urllib``: a redirect is never followed (the key must not travel to another
    host), and the socket is at hand for the deadline."""
    url = settings.url
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    parts = urllib.parse.urlsplit(url)
    between = min(settings.read_timeout_s, settings.timeout_s)  # the longest silence between two bytes
    connection = connect(parts.scheme, parts.hostname or "", parts.port, between)
    try:
        connection.connect()
    except ssl.SSLCertVerificationError as err:  # no retry makes a certificate valid
        connection.close()
        raise ChatError(
            f"{url} has a certificate that does not verify ({err.verify_message}); fix base_url",
            retryable=False,
        ) from None
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else err.strerror or type(err).__name__
        connection.close()
        raise ChatError(
            f"{url} is unreachable ({reason}); start the server or fix base_url", retryable=True
        ) from None
    try:
        watchdog.watch(connection.sock)
        connection.request("POST", parts.path or "/", payload, headers)
        response = connection.getresponse()
        raw = _read_capped(response, settings.max_reply_bytes, url)
        status, reply_headers = response.status, {k.lower(): v for k, v in response.getheaders()}
    except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError) as err:
        raise _cut_error(url, err, watchdog, settings) from None
    except http.client.HTTPException as err:  # a status line or headers no HTTP server sends
        if watchdog.fired.is_set():
            raise _cut_error(url, err, watchdog, settings) from None
        raise ChatError(
            f"{url} answered with a malformed HTTP response ({type(err).__name__}); is it OpenAI-compatible?",
            retryable=False,
        ) from None
    finally:
        connection.close()
    if watchdog.fired.is_set():  # a body without a length, ended by the deadline: not the whole reply
        raise _cut_error(url, TimeoutError("deadline"), watchdog, settings)
    return status, reply_headers, raw


def _read_capped(response: http.client.HTTPResponse, cap: int, url: str) -> bytes:
    """The body, read in pieces and refused as soon as it passes ``cap`` bytes (nothing more is read)."""
    declared = response.getheader("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
        raise _too_big(url, cap)
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(64 * 1024):
        size += len(chunk)
        if size > cap:
            raise _too_big(url, cap)
        chunks.append(chunk)
    if response.length:  # read(amt) ends quietly at a hang-up; the announced length says it was cut
        raise http.client.IncompleteRead(b"".join(chunks), response.length)
    return b"".join(chunks)


def _too_big(url: str, cap: int) -> ChatError:
    return ChatError(
        f"{url} answered with more than {cap // (1 << 20)} MiB (no chat reply is that long); "
        "is it OpenAI-compatible?",
        retryable=False,
    )


def _cut_error(url: str, err: BaseException, watchdog: _Watchdog, settings: ChatSettings) -> ChatError:
    """A reply cut short, a reset, a silence or the deadline: worth another try (the cause named)."""
    if watchdog.fired.is_set():
        cause = f"no complete answer within {settings.timeout_s:g}s"
    elif isinstance(err, http.client.IncompleteRead):
        cause = f"the reply was cut short after {len(err.partial)} bytes"
    elif isinstance(err, TimeoutError):
        cause = f"silent for {min(settings.read_timeout_s, settings.timeout_s):g}s"
    else:
        cause = f"the connection broke ({type(err).__name__})"
    return ChatError(f"{url}: {cause}", retryable=True)


def _status_error(url: str, status: int, headers: Mapping[str, str], raw: bytes) -> ChatError:
    """One line for a status that is not a reply; the server's own message is quoted, masked, shortened."""
    detail = _error_detail(raw)
    if 300 <= status < 400:
        where = " ".join(headers.get("location", "?").split())[:120]
        message = f"{url} redirected (HTTP {status}) to {where}; redirects are not followed, fix base_url"
    elif status in (401, 403):
        message = f"{url} refused the key (HTTP {status}{detail}); check the key in the named variable"
    elif status == 404:
        message = f"{url} has no such model or route (HTTP 404{detail}); check base_url and the model name"
    else:
        message = f"{url} answered HTTP {status}{detail}"
    retryable = status in RETRY_STATUSES
    return ChatError(message, retryable=retryable, retry_after=_retry_after(headers), status=status)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds; None for an HTTP date or a negative or non-finite value."""
    try:
        wait = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return wait if math.isfinite(wait) and wait >= 0 else None


def _error_detail(raw: bytes) -> str:
    try:
        error = json.loads(raw or b"{}").get("error")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return ""
    message = error.get("message") if isinstance(error, dict) else error
    return f": {' '.join(str(message).split())}" if message else ""  # masked, then cut, by the caller


def mask(text: str, key: str | None = None, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` with anything shaped like a key replaced by ``<key>``, then cut to ``limit`` characters
    (masking first: a cut could leave a key's head unrecognisable).

    >>> mask("Incorrect API key provided: sk-proj-abcDEF123456; Bearer eyJhbGci.x", None)
    'Incorrect API key provided: <key>; Bearer <key>'
    >>> mask("bad token my-own-secret-value here", "my-own-secret-value")
    'bad token <key> here'
    """
    if key and len(key) >= 4:
        text = text.replace(key, "<key>")
    text = _KEYLIKE.sub("<key>", text)
    text = _BEARER.sub(r"\1<key>", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PaidStore:
    """Answers already paid for (API replies, API verdicts), by key, fsynced as each arrives so a killed
    run loses at most one answer. Thread-safe; ``path`` None keeps them in memory only."""

    def __init__(self, path: Path | None) -> None:
        self._log = (
            AppendLog(path, _paid, dict, what="a paid answer", hint=PAID_HINT) if path is not None else None
        )
        self._lock = threading.Lock()
        self._entries = {str(e["key"]): e for e in self._log.load()} if self._log else {}

    def get(self, key: str) -> dict[str, object] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, fields: Mapping[str, object]) -> dict[str, object]:
        """Store ``fields`` under ``key``, on disk first."""
        entry: dict[str, object] = {"key": key, **fields}
        with self._lock:
            if self._log is not None:
                self._log.append([entry])
            self._entries[key] = entry
        return entry

    def entries(self) -> list[dict[str, object]]:
        with self._lock:
            return list(self._entries.values())


PAID_HINT = " (each line is one answer with its request's key); delete the line or the file to ask again"


def _paid(value: object) -> dict[str, object]:
    if not (isinstance(value, dict) and isinstance(value.get("key"), str)):
        raise TypeError("no key")
    return value
