"""Pluggable LLM rewriters for the length and form families: three backends behind one protocol.

* :class:`LocalModelRewriter`: a packaged GGUF model run with transformers here; always greedy (a chat's
  temperature is ignored).
* :class:`HttpRewriter`: an OpenAI-compatible endpoint; greedy at temperature 0, above it sampled with the
  chat's seed.
* :class:`LlamaCppRewriter`: the same GGUF served by a local llama.cpp server (through
  :class:`HttpRewriter`, so it samples the same way).

The seed derives from the cell and the attempt, so a request gives the same text again where the backend
honours seeds; the build also logs every answer and replays the log (see :mod:`benchmark.variants.llm`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tqdm import tqdm

from benchmark.errors import SagoError

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"


@dataclass(frozen=True)
class Chat:
    """One rewrite request: a system and a user turn."""

    system: str
    """the standing instruction (what a rewriter does)."""
    user: str
    """the text to rewrite and how."""
    max_new_tokens: int
    """generation budget, sized to the target length."""
    temperature: float = 0.0
    """0 = greedy; above 0, sampled with ``seed`` (a further candidate that differs from the greedy one)."""
    seed: int = 0
    """sampling seed (derived from the cell and the attempt, so a request is reproducible)."""
    stop: tuple[str, ...] = ()
    """strings that end the answer early (the rewrite is one line: what follows is never used)."""


class Rewriter(Protocol):
    """Something that answers chat requests; ``tag`` is recorded as each variant's ``rewriter``."""

    @property
    def tag(self) -> str:
        """provenance of the outputs, e.g. ``llm:<artefact>@<sha256[:12]>``."""
        ...

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        """One completion per chat, in order (greedy at temperature 0)."""
        ...


class LocalModelRewriter:
    """A packaged GGUF instruct model run with transformers on this machine's CPU (or GPU)."""

    def __init__(self, artefact: str = DEFAULT_MODEL, *, batch_size: int = 16, progress: bool = True) -> None:
        import torch

        from benchmark.gguf import load_gguf
        from benchmark.packaged import ARTEFACTS

        loaded = load_gguf(artefact, dtype=torch.float32)
        self.tag = f"llm:{artefact}@{(ARTEFACTS.get(artefact).sha256 or 'folder')[:12]}"
        self._torch = torch
        self._tokenizer = loaded.tokenizer
        self._tokenizer.padding_side = (
            "left"  # decoder-only: pad on the left so generation continues the text
        )
        self._model = loaded.model
        self._batch_size = batch_size
        self._progress = progress

    def _render(self, chat: Chat) -> str:
        messages = [{"role": "system", "content": chat.system}, {"role": "user", "content": chat.user}]
        return str(self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        # Batches of similar budgets: a long budget in a batch makes every row in it pay for it.
        order = sorted(range(len(chats)), key=lambda i: (chats[i].max_new_tokens, len(chats[i].user)))
        answers: dict[int, str] = {}
        starts = range(0, len(order), self._batch_size)
        for start in tqdm(starts, desc="rewrite", unit="batch", disable=not self._progress):
            picked = order[start : start + self._batch_size]
            for index, text in zip(picked, self._generate([chats[i] for i in picked]), strict=False):
                answers[index] = text
        return [answers[i] for i in range(len(chats))]

    def _generate(self, chats: list[Chat]) -> list[str]:
        batch = self._tokenizer([self._render(c) for c in chats], return_tensors="pt", padding=True)
        with self._torch.no_grad():
            out = self._model.generate(
                **batch,
                do_sample=False,
                max_new_tokens=max(c.max_new_tokens for c in chats),
                pad_token_id=self._tokenizer.pad_token_id,
            )
        new_tokens = out[:, batch["input_ids"].shape[1] :]  # [batch, generated]
        return [str(self._tokenizer.decode(row, skip_special_tokens=True)) for row in new_tokens]


class HttpRewriter:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, llama.cpp server, a hosted API)."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 60.0
    ) -> None:
        self.tag = f"llm:{model}@{base_url.rstrip('/')}"
        self._url = base_url.rstrip("/") + "/v1/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout = timeout

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        return [self._one(chat) for chat in chats]

    def _one(self, chat: Chat) -> str:
        body = {
            "model": self._model,
            "temperature": chat.temperature,
            "seed": chat.seed,
            "max_tokens": chat.max_new_tokens,
            **({"stop": list(chat.stop)} if chat.stop else {}),
            "messages": [{"role": "system", "content": chat.system}, {"role": "user", "content": chat.user}],
        }
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload: dict[str, Any] = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            reason = getattr(err, "reason", err)
            raise SagoError(
                f"rewriter endpoint {self._url} is unreachable ({reason}); "
                "start the server or pass another --rewriter-url"
            ) from None
        except json.JSONDecodeError:
            raise SagoError(
                f"rewriter endpoint {self._url} did not return JSON; is it OpenAI-compatible?"
            ) from None
        try:
            return str(payload["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError):
            raise SagoError(f"rewriter endpoint {self._url} returned no choices[0].message.content") from None


class LlamaCppRewriter:
    """A packaged GGUF model served by a local llama.cpp ``llama-server`` (same bytes, ~10x faster on a CPU).

    On a CPU, transformers dequantises the GGUF to fp32 and pays full-precision matmuls; llama.cpp runs the
    Q4_K_M weights as they are. The server is started on a free loopback port with a few slots that decode
    together and is stopped at exit; every answer is logged, so a rebuild never needs the server again.
    Build the binary with ``sago variants llama-server`` (pinned llama.cpp sources from PyPI, into the cache).
    """

    def __init__(
        self,
        artefact: str = DEFAULT_MODEL,
        *,
        binary: str | None = None,
        threads: int = 2,
        slots: int = 4,
        context: int = 1024,
        timeout: float = 600.0,
    ) -> None:
        import atexit
        import shutil
        import socket
        import subprocess
        import time

        from benchmark.packaged import ARTEFACTS, materialise
        from benchmark.variants.llamacpp import server_path

        found = shutil.which(binary or str(server_path()))
        if found is None:
            raise SagoError(
                f"llama.cpp server {binary!r} not found; build it with `sago variants llama-server` "
                "or pass --llama-server PATH"
            )
        path = materialise(artefact)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._server = subprocess.Popen(
            [
                found,
                "-m",
                str(path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "-t",
                str(threads),
                "-c",
                str(context * slots),
                "-np",
                str(slots),
                "--temp",
                "0",
                "--seed",
                "0",
                "--no-webui",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        atexit.register(self.close)
        self._http = HttpRewriter(f"http://127.0.0.1:{port}", artefact, timeout=timeout)
        self._slots = slots
        self.tag = f"llm:{artefact}@{(ARTEFACTS.get(artefact).sha256 or 'folder')[:12]}+llama.cpp"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self._server.poll() is not None:
                raise SagoError(
                    f"llama-server exited with code {self._server.returncode} while loading {path.name}"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(1)
        self.close()
        raise SagoError("llama-server did not become ready within 300 s")

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        # Requests that share their instruction and example go one after another, so the server's
        # prompt cache reuses that prefix (the prefill is most of a CPU rewrite's cost).
        # Several slots decode together (decoding is memory-bound, so a batch of 4 costs little more than 1).
        from concurrent.futures import ThreadPoolExecutor

        order = sorted(
            range(len(chats)),
            key=lambda i: (chats[i].system, chats[i].user.rsplit("\nText (", 1)[0].split("Length:")[0]),
        )
        with ThreadPoolExecutor(self._slots) as pool:
            done = pool.map(lambda i: self._http.complete([chats[i]])[0], order)
            answers = dict(
                zip(
                    order,
                    tqdm(done, total=len(order), desc="rewrite", unit="request", disable=len(chats) < 4),
                    strict=False,
                )
            )
        return [answers[i] for i in range(len(chats))]

    def close(self) -> None:
        """Stop the server (idempotent)."""
        if self._server.poll() is None:
            self._server.terminate()
            self._server.wait(timeout=30)
