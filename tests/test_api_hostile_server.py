"""The OpenAI-compatible client against hostile or broken servers: one scripted local HTTP server per case.

Each case scripts what a server on 127.0.0.1 does with each request (a reply cut short, a reset, bytes
trickled past the deadline, 10 MiB, a redirect, a key echoed back...) and asserts the exact outcome: a
retry then the reply, or a one-line :class:`~benchmark.errors.SagoError` naming the cause within a few
seconds. The deadline and the silence limit are set to fractions of a second so the corpus runs in
seconds; waits between tries are recorded, not slept.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from benchmark.chat_api import MAX_TEXT_BYTES, ChatClient, ChatReply, ChatRequest, ChatSettings, mask
from benchmark.errors import SagoError
from benchmark.models.api import ApiBackend
from benchmark.models.protocol import VariantRequest
from benchmark.parquet_check import TABLE_LIMITS

KEY_ENV = "SAGO_HOSTILE_KEY"
KEY = "hostile-literal-key-0123456789abcdef"
"""a key of no known shape: only the literal value can mask it."""
DEADLINE_S = 1.0
SILENCE_S = 0.5

Script = Callable[["Handler", dict[str, Any]], None]
"""what the server does with one request (the handler, and the request's JSON body)."""


@dataclass
class Server:
    url: str
    script: list[Script]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Handler(BaseHTTPRequestHandler):
    server_state: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        state = self.server_state
        with state.lock:
            state.bodies.append(body)
            state.headers.append(dict(self.headers))
            script = state.script.pop(0) if len(state.script) > 1 else state.script[0]
        with contextlib.suppress(OSError):  # the client hung up (a cap, a deadline): the case's point
            script(self, body)
        self.close_connection = True

    do_GET = do_POST  # noqa: N815 (a followed redirect would arrive as a GET)

    def raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        merged = {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}
        for k, v in merged.items():
            self.send_header(k, v)
        self.end_headers()
        self.raw(data)


@contextmanager
def serve(*script: Script) -> Iterator[Server]:
    state = Server("", list(script))
    handler = type("ScriptedHandler", (Handler,), {"server_state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()


# ---- what a server can do with a request ----


def completion(body: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """A well-formed reply: the prompt's words reversed, with log-probabilities when asked for."""
    words = list(reversed(body["messages"][-1]["content"].split()))
    choice: dict[str, Any] = {
        "message": {"role": "assistant", "content": " ".join(words)},
        "finish_reason": "stop",
    }
    if body.get("logprobs"):
        choice["logprobs"] = {"content": [{"token": w, "logprob": -0.25} for w in words]}
    payload = {"choices": [choice], "usage": {"prompt_tokens": len(words), "completion_tokens": len(words)}}
    return payload | overrides


def ok(h: Handler, body: dict[str, Any]) -> None:
    h.send(200, json.dumps(completion(body)).encode())


def status(code: int, message: str = "", headers: dict[str, str] | None = None) -> Script:
    def script(h: Handler, body: dict[str, Any]) -> None:
        h.send(code, json.dumps({"error": {"message": message}}).encode(), headers)

    return script


def body_of(data: bytes, code: int = 200, headers: dict[str, str] | None = None) -> Script:
    def script(h: Handler, body: dict[str, Any]) -> None:
        h.send(code, data, headers)

    return script


def payload(make: Callable[[dict[str, Any]], object]) -> Script:
    def script(h: Handler, body: dict[str, Any]) -> None:
        h.send(200, json.dumps(make(body)).encode())

    return script


def cut(h: Handler, body: dict[str, Any]) -> None:
    """Promises 500 bytes, sends 20, hangs up."""
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n")
    h.raw(b'{"choices": [{"messa')


def hang_up(h: Handler, body: dict[str, Any]) -> None:
    """Closes without a word."""


def reset(h: Handler, body: dict[str, Any]) -> None:
    """Closes with a TCP reset."""
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.connection.close()


def trickle(h: Handler, body: dict[str, Any]) -> None:
    """A byte every 0.2 s (under the silence limit) for ever: only the deadline ends it."""
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
    while not h.server_state.stop.wait(0.2):
        h.raw(b" ")


def trickle_headers(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b"HTTP/1.1 200 OK\r\n")
    while not h.server_state.stop.wait(0.2):
        h.raw(b"X-A: b\r\n")


def never(h: Handler, body: dict[str, Any]) -> None:
    h.server_state.stop.wait(30)


def silent_after_headers(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n")
    h.server_state.stop.wait(30)


def bad_chunks(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"cho\r\nzz\r\nnot a chunk\r\n')


def chunked_flood(h: Handler, body: dict[str, Any]) -> None:
    """10 MiB in chunks, no length announced: only a cap checked while reading stops it."""
    h.raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b" " * (1 << 16)
    for _ in range(160):
        h.raw(b"%x\r\n%s\r\n" % (len(piece), piece))
    h.raw(b"0\r\n\r\n")


def short_length(h: Handler, body: dict[str, Any]) -> None:
    data = json.dumps(completion(body)).encode()
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data) // 2, data))


def long_length_open(h: Handler, body: dict[str, Any]) -> None:
    """Announces more than it sends and keeps the connection open."""
    data = json.dumps(completion(body)).encode()
    h.raw(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data) + 50, data))
    h.server_state.stop.wait(30)


def huge_header(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n")


def many_headers(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n")


def not_http(h: Handler, body: dict[str, Any]) -> None:
    h.raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")


def redirect(code: int, target: str) -> Script:
    return status(code, "moved", {"Location": target + "/v1/chat/completions"})


ZEROS = gzip.compress(b"0" * (20 << 20))
"""20 MiB of zeros in about 20 KiB: what a client that decompressed would swallow."""
HTML = b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"


# ---- the client under test ----


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmark.endpoints import LOCAL_ENDPOINT_ENV

    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(LOCAL_ENDPOINT_ENV, "")  # recorded, so a test's own setting is undone after it


@dataclass
class Outcome:
    reply: ChatReply | None
    error: str | None
    tries: int
    seconds: float
    waits: list[float]
    notes: list[str]


def ask(server: Server, *, retries: int = 2, max_reply_bytes: int | None = None) -> Outcome:
    settings = ChatSettings(
        server.url,
        "m",
        KEY_ENV,
        timeout_s=DEADLINE_S,
        read_timeout_s=SILENCE_S,
        retries=retries,
        backoff_s=0.01,
    )
    if max_reply_bytes is not None:
        settings = replace(settings, max_reply_bytes=max_reply_bytes)
    waits: list[float] = []
    notes: list[str] = []
    client = ChatClient(settings, sleep=waits.append, notify=notes.append)
    start = time.monotonic()
    try:
        reply, tries = client.send(ChatRequest("one two three", 8, logprobs=True))
    except SagoError as err:  # every failure is a SagoError: the entry path prints it as one line
        return Outcome(None, str(err), client.counts()["requests"], time.monotonic() - start, waits, notes)
    return Outcome(reply, None, tries, time.monotonic() - start, waits, notes)


def one_line(outcome: Outcome, *needles: str, tries: int = 1, within_s: float = 4.0) -> str:
    """The outcome is a one-line error naming ``needles``, after ``tries`` tries, in time, key masked."""
    assert outcome.reply is None and outcome.error is not None, outcome
    message = outcome.error
    assert "\n" not in message and "Traceback" not in message
    assert KEY not in message and KEY[:8] not in message
    for needle in needles:
        assert needle in message, (needle, message)
    assert outcome.tries == tries, outcome
    assert (f"after {tries} tries" in message) == (tries > 1), message
    assert outcome.seconds < within_s, outcome
    return message


def retried_then_ok(outcome: Outcome, cause: str, *, tries: int = 2, within_s: float = 4.0) -> ChatReply:
    assert outcome.error is None and outcome.reply is not None, outcome
    assert outcome.tries == tries and outcome.seconds < within_s, outcome
    assert len(outcome.notes) == tries - 1 and all(cause in n for n in outcome.notes), outcome.notes
    assert outcome.notes[0].endswith(f"try 2 of 3 in {outcome.waits[0]:.1f}s"), outcome.notes
    assert outcome.reply.text == "three two one"
    return outcome.reply


# ---- transient: retried, then the reply ----


@pytest.mark.parametrize(
    ("first", "cause"),
    [
        (cut, "cut short after 20 bytes"),  # IncompleteRead: was a 76-line traceback
        (hang_up, "connection broke"),
        (reset, "connection broke"),
        (body_of(b""), "empty body"),
        (bad_chunks, "cut short"),  # a chunk size that is not hex
        (status(500, "internal"), "HTTP 500: internal"),
        (status(503), "HTTP 503"),
        (body_of(HTML, 502, {"Content-Type": "text/html"}), "HTTP 502"),
        (never, "silent for 0.5s"),
        (silent_after_headers, "silent for 0.5s"),
        (long_length_open, "silent for 0.5s"),
        (trickle, "no complete answer within 1s"),  # was never timed out
        (trickle_headers, "no complete answer within 1s"),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_a_transient_failure_is_retried_then_answered(first: Script, cause: str) -> None:
    with serve(first, ok) as server:
        outcome = ask(server)
    retried_then_ok(outcome, cause)


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        ("0", 0.0),
        ("2.5", 2.5),
        ("1000000000", 60.0),  # huge: cut to the cap
        ("-5", None),  # negative: the backoff decides (time.sleep(-5) raised)
        ("soon", None),  # not a number: the backoff decides
        ("nan", None),
        ("inf", None),
    ],
)
def test_429_honours_a_sane_retry_after_only(retry_after: str, wait: float | None) -> None:
    with serve(status(429, "slow down", {"Retry-After": retry_after}), ok) as server:
        outcome = ask(server)
    retried_then_ok(outcome, "HTTP 429: slow down")
    if wait is None:
        assert 0 <= outcome.waits[0] <= 0.015  # backoff_s 0.01 with at most 1.5x jitter
    else:
        assert outcome.waits == [wait]


def test_header_names_are_read_whatever_their_case() -> None:
    with serve(status(429, "slow down", {"retry-after": "2.5"}), ok) as server:
        assert ask(server).waits == [2.5]
    with serve(body_of(ZEROS, 200, {"content-encoding": "GZIP"})) as server:
        one_line(ask(server), "Content-Encoding 'gzip'")


def test_retries_run_out_as_one_line_with_the_real_count() -> None:
    with serve(reset) as server:
        outcome = ask(server, retries=2)
    one_line(outcome, "connection broke", tries=3)
    assert [n.split("; ")[-1][:12] for n in outcome.notes] == ["try 2 of 3 i", "try 3 of 3 i"]


def test_each_retry_is_announced_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with serve(status(503, "busy"), ok) as server:
        settings = ChatSettings(server.url, "m", KEY_ENV, timeout_s=DEADLINE_S, backoff_s=0.01)
        ChatClient(settings, sleep=lambda s: None).send(ChatRequest("a", 4))
    assert capsys.readouterr().err.startswith(
        f"retry: {server.url}/v1/chat/completions answered HTTP 503: busy;"
    )


# ---- refused at once, in one line ----


@pytest.mark.parametrize(
    ("script", "needles"),
    [
        (body_of(b"x" * (10 << 20)), ("more than 4 MiB",)),  # was accepted, then refused by validate
        (chunked_flood, ("more than 4 MiB",)),
        (body_of(b"{not json"), ("not JSON",)),
        (body_of(HTML, 200, {"Content-Type": "text/html"}), ("not JSON",)),
        (body_of('{"choices": "é"}'.encode("latin-1")), ("not JSON",)),  # not UTF-8
        (short_length, ("not JSON",)),  # a Content-Length shorter than the body
        (body_of(b"[1, 2, 3]"), ("without choices[0].message.content",)),
        (payload(lambda b: {"id": "x", "usage": {}}), ("without choices[0].message.content",)),
        (payload(lambda b: {"choices": []}), ("without choices[0].message.content",)),
        (payload(lambda b: {"choices": [{"message": {"content": [1]}}]}), ("non-text message content",)),
        (
            payload(lambda b: completion(b) | {"choices": [{"message": {"content": "y" * 70_000}}]}),
            ("64 KiB",),
        ),
        (body_of(ZEROS, 200, {"Content-Encoding": "gzip"}), ("Content-Encoding 'gzip'",)),
        (huge_header, ("malformed HTTP response (LineTooLong)",)),  # was a traceback
        (many_headers, ("malformed HTTP response (HTTPException)",)),
        (not_http, ("malformed HTTP response",)),
        (status(401, f"Incorrect API key provided: {KEY}"), ("refused the key (HTTP 401", "<key>")),
        (status(403, "forbidden"), ("refused the key (HTTP 403",)),
        (status(404, "The model `m` does not exist"), ("no such model or route (HTTP 404",)),
        (status(400, "x" * 150 + KEY), ("HTTP 400", "<key>")),  # was cut first: most of the key printed
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_a_broken_answer_is_one_line_at_once(script: Script, needles: tuple[str, ...]) -> None:
    with serve(script, ok) as server:
        outcome = ask(server)
    one_line(outcome, *needles)
    assert not outcome.notes and not outcome.waits  # not retried


def test_the_cap_stops_reading_instead_of_reading_everything() -> None:
    with serve(body_of(b"x" * (10 << 20))) as server:
        outcome = ask(server, max_reply_bytes=1 << 20)
    one_line(outcome, "more than 1 MiB", within_s=2.0)


def test_the_reply_cap_is_far_above_a_legitimate_reply_and_the_text_cap_is_the_records_limit() -> None:
    words = " ".join(["token"] * 2000)
    with serve(ok) as server:
        settings = ChatSettings(server.url, "m", KEY_ENV, timeout_s=5)
        reply = ChatClient(settings).complete(ChatRequest(words, 2000, logprobs=True))
    assert reply.token_logprobs is not None and len(reply.token_logprobs) == 2000
    assert TABLE_LIMITS.value_bytes == MAX_TEXT_BYTES


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command for a test certificate"
)
def test_a_certificate_that_does_not_verify_is_one_line_and_not_retried(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serve(ok) as server:
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]

        def handshake_once() -> None:
            conn, _ = listener.accept()
            with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True):
                pass  # the client refuses the certificate during the handshake

        threading.Thread(target=handshake_once, daemon=True).start()
        server.url = f"https://127.0.0.1:{port}"
        outcome = ask(server)
        listener.close()
    one_line(outcome, "certificate that does not verify (self-signed certificate)")
    assert not outcome.notes  # was retried 6 times with backoff (about a minute) by default


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_never_followed(code: int) -> None:
    with serve(ok) as elsewhere, serve(redirect(code, elsewhere.url)) as server:
        outcome = ask(server)
    one_line(outcome, f"redirected (HTTP {code}) to {elsewhere.url}", "not followed")
    assert not elsewhere.bodies and not elsewhere.headers  # the key never travelled there


# ---- accepted, with what is wrong in it dropped ----


@pytest.mark.parametrize(
    ("change", "text"),
    [
        (lambda c: c | {"message": {"content": ""}}, ""),
        (lambda c: c | {"message": {"content": None}}, ""),
    ],
)
def test_empty_content_is_an_empty_reply(
    change: Callable[[dict[str, Any]], dict[str, Any]], text: str
) -> None:
    with serve(
        payload(lambda b: completion(b) | {"choices": [change(completion(b)["choices"][0])]})
    ) as server:
        outcome = ask(server)
    assert outcome.reply is not None and outcome.reply.text == text and outcome.tries == 1


@pytest.mark.parametrize(
    "logprobs",
    [
        None,  # missing
        {"content": [{"token": "x", "logprob": "NaN"}]},
        {"content": [{"token": "x", "logprob": 2.0}]},  # a probability above 1
        {"content": [{"token": "x"}, {"token": "y", "logprob": -1}]},
    ],
)
def test_unusable_logprobs_are_none_not_numbers(logprobs: object) -> None:
    def make(b: dict[str, Any]) -> object:
        reply = completion(b)
        reply["choices"][0]["logprobs"] = logprobs
        return reply

    with serve(payload(make)) as server:
        outcome = ask(server)
    assert outcome.reply is not None and outcome.reply.token_logprobs is None


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinite_logprobs_never_reach_a_record(literal: bytes) -> None:
    good = json.dumps(completion({"messages": [{"content": "a b"}], "logprobs": True})).encode()
    data = good.replace(b"-0.25", literal, 1)
    with serve(body_of(data)) as server:
        outcome = ask(server)
    assert outcome.reply is not None and outcome.reply.token_logprobs is None  # was (nan, -0.25) / (inf, ...)


@pytest.mark.parametrize("count", [-3, 1e30, "7", True, float("nan")])
def test_impossible_token_counts_are_read_as_zero(count: object) -> None:
    usage = {"prompt_tokens": count, "completion_tokens": count}
    data = json.dumps(completion({"messages": [{"content": "a b"}]}) | {"usage": usage}).encode()
    with serve(body_of(data)) as server:
        outcome = ask(server)
    assert outcome.reply is not None
    assert (outcome.reply.prompt_tokens, outcome.reply.completion_tokens) == (0, 0)  # 1e30 overflowed int64


# ---- keys in messages ----


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnop1234",
        "sk-proj-AbCdEf0123456789_xyz",
        "hf_AbCdEfGhIjKlMnOpQrStUv",
        "ghp_0123456789abcdefABCDEF0123456789abcd",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxb-123456789012-abcdefghij",
        "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    ],
)
def test_every_known_key_shape_is_masked_before_the_message_is_cut(secret: str) -> None:
    with serve(status(401, f"{'x' * 200} rejected {secret} here")) as server:
        outcome = ask(server)
    message = one_line(outcome, "refused the key")
    token = secret.split()[-1]
    assert token[:6] not in message and token[-6:] not in message
    long_message = mask(f"{'y' * 230} {secret}", None)
    assert token[:6] not in long_message and len(long_message) <= 240


# ---- the backend: cancelling, and logprobs refused ----


def _rows(n: int) -> list[VariantRequest]:
    return [VariantRequest(f"k{i}", f"prompt number {i}", None) for i in range(n)]


def _backend(
    server: Server, *, timeout_s: float = DEADLINE_S, concurrency: int = 2
) -> tuple[ApiBackend, list[str]]:
    notes: list[str] = []
    settings = ChatSettings(
        server.url, "m", KEY_ENV, timeout_s=timeout_s, read_timeout_s=30, retries=2, backoff_s=0.01
    )
    client = ChatClient(settings, sleep=lambda s: None, notify=notes.append)
    return ApiBackend(settings, snapshot="s", concurrency=concurrency, client=client), notes


def test_the_first_failure_cancels_work_in_flight_within_seconds() -> None:
    """Row 0's server never answers (deadline 60 s); row 1 is refused: the run stops at once."""

    def by_prompt(h: Handler, body: dict[str, Any]) -> None:
        (never if body["messages"][0]["content"].endswith(" 0") else status(401, "no"))(h, body)

    with serve(by_prompt) as server:
        backend, _ = _backend(server, timeout_s=60)
        start = time.monotonic()
        with pytest.raises(SagoError, match=r"refused the key \(HTTP 401: no\)"):
            backend.run(_rows(30), max_new_tokens=8)
        assert time.monotonic() - start < 3  # was: 60 s for row 0, then each queued row
        assert len(server.bodies) <= 3  # queued rows were cancelled, not sent


def test_refused_logprobs_are_dropped_for_the_rest_of_the_run_with_a_note(tmp_path: Path) -> None:
    def picky(h: Handler, body: dict[str, Any]) -> None:
        if body.get("logprobs"):
            status(400, "logprobs is not supported with this model")(h, body)
        else:
            ok(h, body)

    with serve(picky) as server:
        backend, notes = _backend(server, concurrency=1)
        backend.attach_cache(tmp_path / "cache.jsonl")
        outputs = backend.run(_rows(5), max_new_tokens=8)
    assert [o.response for o in outputs] == [
        " ".join(reversed(f"prompt number {i}".split())) for i in range(5)
    ]
    assert all(o.token_logprobs is None for o in outputs)
    # asked once with logprobs, then never again
    assert [bool(b.get("logprobs")) for b in server.bodies] == [True] + [False] * 5
    described = backend.describe()
    assert str(described["own_confidence"]).startswith("not measured: the endpoint refused logprobs (")
    assert sum("asking without them" in n for n in notes) == 1


def test_replies_without_logprobs_drop_them_too() -> None:
    def plain(h: Handler, body: dict[str, Any]) -> None:
        reply = completion(body)
        reply["choices"][0].pop("logprobs", None)
        h.send(200, json.dumps(reply).encode())

    with serve(plain) as server:
        backend, _ = _backend(server, concurrency=1)
        backend.run(_rows(3), max_new_tokens=8)
    assert [bool(b.get("logprobs")) for b in server.bodies] == [True, False, False]
    assert backend.describe()["own_confidence"] == "not measured: the endpoint answered without logprobs"


def test_a_400_about_something_else_is_not_a_logprobs_refusal() -> None:
    with serve(status(400, "max_tokens is too large")) as server:
        backend, _ = _backend(server, concurrency=1)
        with pytest.raises(SagoError, match="HTTP 400: max_tokens is too large"):
            backend.run(_rows(2), max_new_tokens=8)
    assert backend.describe()["own_confidence"] == "measured"
    assert len(server.bodies) <= 2  # the refused row, and at most the one the worker had already taken


# ---- through the harness: what reaches run.json, and what is never written ----


def _evaluate(server: Server, out: Path) -> Path | None:
    """Through the harness as the maintainers' own local server (no key; the opt-in variable names it:
    benchmark.endpoints), the one form a submission may reach loopback by."""
    from helpers.toy import toy_variant_set

    from benchmark.endpoints import LOCAL_ENDPOINT_ENV
    from benchmark.harness.evaluate import EvaluateOptions, evaluate_model
    from benchmark.submissions import Submission

    model = {"kind": "api", "base_url": server.url, "model": "m", "snapshot": "s-1"}
    os.environ[LOCAL_ENDPOINT_ENV] = server.url  # undone after the test (the autouse fixture `_key`)
    submission = Submission.model_validate(
        {"name": "Hostile", "model": model, "license": "MIT", "parameters": 1, "contact": "t"}
    )
    options = EvaluateOptions(set_name="toy", version="v1", profile="smoke", progress=False)
    return evaluate_model(
        submission, options, out, label="h", variant_set=toy_variant_set(("alpha",), n_items=2)
    )


def test_a_run_whose_endpoint_refuses_logprobs_says_so_and_shows_no_own_confidence(tmp_path: Path) -> None:
    from benchmark.pipeline.analyze import own_confidence_frames
    from benchmark.results import ResultsFolder

    def picky(h: Handler, body: dict[str, Any]) -> None:
        (status(400, "'logprobs' is not supported") if body.get("logprobs") else ok)(h, body)

    with serve(picky) as server:
        _evaluate(server, tmp_path / "refused")
    with serve(status(503, "busy"), ok) as server:
        _evaluate(server, tmp_path / "measured")
    refused, measured = ResultsFolder(tmp_path / "refused"), ResultsFolder(tmp_path / "measured")
    note = refused.read_run().model.own_confidence
    assert note is not None and note.startswith("not measured: the endpoint refused logprobs (")
    assert own_confidence_frames(refused) == []  # the API table shows no shift for it
    assert measured.read_run().model.own_confidence == "measured" and own_confidence_frames(measured)
    requests = json.loads(measured.run.read_text())["model"]["requests"]
    assert requests["retries"] == 1 == requests["retries_this_process"]  # the 503, then the reply
    assert refused.read_run().problems() == ()  # the optional field leaves run.json as valid as before


def test_a_10_mib_reply_stops_the_run_in_one_line_with_nothing_written(tmp_path: Path) -> None:
    with serve(body_of(b"x" * (10 << 20))) as server, pytest.raises(SagoError) as err:
        _evaluate(server, tmp_path / "out")
    assert "more than 4 MiB" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out" / "run.json").exists() and not (tmp_path / "out" / "records").exists()


# ---- the API judge: an unparsable verdict ----


def test_an_unparsable_verdict_is_counted_stored_as_such_shown_and_asked_again(tmp_path: Path) -> None:
    from benchmark.axes import api_judge
    from benchmark.axes.api_judge import ApiPolitenessJudge, RowContext

    def verdict(text: str) -> Script:
        return payload(lambda b: completion(b) | {"choices": [{"message": {"content": text}}]})

    cache = tmp_path / "verdicts.jsonl"
    row = ("Of course! Thank you. Paris.", "Paris.", +1, RowContext())
    with serve(verdict("I cannot decide."), verdict("I cannot decide."), verdict("YES")) as server:
        settings = ChatSettings(server.url, "judge", timeout_s=5)
        judge = ApiPolitenessJudge(ChatClient(settings), cache)
        assert judge.verdict(*row) is False  # counted as NO for this run...
        assert judge.stats["unparsed"] == 1
        stored = [json.loads(line) for line in cache.read_text().splitlines()]
        assert stored[0]["yes"] is None and stored[0]["raw"] == "I cannot decide."  # ...stored as unparsable
        assert judge.verdict(*row) is False and len(server.bodies) == 2  # not cached as NO: asked again
        again = ApiPolitenessJudge(ChatClient(settings), cache)  # the next run asks again too
        assert again.verdict(*row) is True and len(server.bodies) == 3
        assert again.verdict(*row) is True and len(server.bodies) == 3  # a parsed verdict is cached
    line = api_judge.stats_line()
    found = re.search(r"(\d+) unparsable \((\d+) counted as NO this run, asked again next run\)", line or "")
    assert found is not None and int(found.group(1)) >= 2  # every API judge of this process, summed
