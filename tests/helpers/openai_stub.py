"""A scripted OpenAI-compatible server on 127.0.0.1 for the failure paths a real server will not produce on
demand (401, a storm of 429s, a body that is not JSON, a reply that never comes).

It answers ``POST /v1/chat/completions`` with a reply derived from the prompt (its words reversed) and
per-token log-probabilities; ``faults`` is a list consumed one per request: an int is an HTTP status to
answer with, ``"junk"`` a body that is not JSON, ``"hang"`` no answer within the client's timeout. The
real-server tests use llama.cpp's server (tests/test_api_backend.py).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stub:
    url: str
    faults: list[Any] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def reply_text(prompt: str) -> str:
    """What the stub answers to ``prompt``."""
    return " ".join(reversed(prompt.split()))[:200] or "empty"


@contextmanager
def serve() -> Iterator[Stub]:
    stub = Stub("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            return

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            with stub.lock:
                stub.bodies.append(body)
                stub.headers.append(dict(self.headers))
                fault = stub.faults.pop(0) if stub.faults else None
            if fault == "hang":
                time.sleep(3)
                return
            if fault == "junk":
                self._send(200, b"<html>gateway</html>")
                return
            if isinstance(fault, int):
                message = {"error": {"message": "Incorrect API key provided: sk-secret-123"}}
                self._send(fault, json.dumps(message).encode(), {"Retry-After": "0"})
                return
            text = reply_text(body["messages"][-1]["content"])
            tokens = text.split()[: int(body.get("max_tokens", 16))]
            content = [{"token": t, "logprob": math.log(0.5 + 0.4 / (1 + i))} for i, t in enumerate(tokens)]
            payload = {
                "choices": [
                    {
                        "message": {"role": "assistant", "content": " ".join(tokens)},
                        "finish_reason": "stop"
                        if len(tokens) < int(body.get("max_tokens", 16))
                        else "length",
                        "logprobs": {"content": content},
                    }
                ],
                "usage": {
                    "prompt_tokens": len(body["messages"][-1]["content"].split()),
                    "completion_tokens": len(tokens),
                },
            }
            self._send(200, json.dumps(payload).encode())

        def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
