"""Pluggable LLM rewriters for the length and form families: three backends behind one protocol, a
packaged GGUF run with transformers here (:class:`LocalModelRewriter`), an OpenAI-compatible endpoint
(:class:`HttpRewriter`) and the same GGUF served by a local llama.cpp server (:class:`LlamaCppRewriter`).

All take batches of chat requests, decode greedily at temperature 0 and sample with the request's seed
above it, so the same request gives the same text where the backend honours seeds (the build also logs
every answer, see :mod:`benchmark.variants.llm`). A rewriter that loads a model file names it in its
``tag`` by the sha256 of the bytes it loaded.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from benchmark.errors import SagoError
from benchmark.provenance import sha256_file

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
        """One completion per chat, in order: greedy at temperature 0, else sampled with the chat's seed."""
        ...


def loaded_tag(artefact: str, path: Path, suffix: str = "") -> str:
    """The provenance of outputs made by the model file at ``path``: its artefact name and the sha256 of
    the bytes actually loaded (a cached file that is not the pinned one shows here, not only its name).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "m.gguf").write_bytes(b"weights")
    ...     loaded_tag("tiny", Path(tmp) / "m.gguf", "+llama.cpp")
    'llm:tiny@9a129038d9a0+llama.cpp'
    """
    return f"llm:{artefact}@{sha256_file(path)[:12]}{suffix}"


class LocalModelRewriter:
    """A packaged GGUF instruct model run with transformers on this machine's CPU.

    Greedy requests (temperature 0) are decoded in batches. A sampled request is decoded alone, with
    plain temperature sampling (no top-k or top-p cut) from torch's generator seeded with its ``seed``:
    in a batch its draws would depend on the requests beside it; alone it gives the same text on every
    call. The generator is forked for the call, so the caller's random state is left as it was.
    """

    def __init__(self, artefact: str = DEFAULT_MODEL, *, batch_size: int = 16, progress: bool = True) -> None:
        import torch

        from benchmark.gguf import load_gguf

        loaded = load_gguf(artefact, dtype=torch.float32)
        self.tag = loaded_tag(artefact, loaded.path)
        self._torch = torch
        self._tokenizer = loaded.tokenizer
        # decoder-only: pad on the left so generation continues the text
        self._tokenizer.padding_side = "left"
        self._model = loaded.model
        self._batch_size = batch_size
        self._progress = progress

    def _render(self, chat: Chat) -> str:
        messages = [{"role": "system", "content": chat.system}, {"role": "user", "content": chat.user}]
        return str(self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        # Greedy requests in batches of similar budgets (a long budget in a batch makes every row in it
        # pay for it); each sampled request alone (see the class).
        greedy = sorted(
            (i for i, c in enumerate(chats) if c.temperature <= 0),
            key=lambda i: (chats[i].max_new_tokens, len(chats[i].user)),
        )
        batches = [greedy[at : at + self._batch_size] for at in range(0, len(greedy), self._batch_size)]
        batches += [[i] for i, c in enumerate(chats) if c.temperature > 0]
        answers: dict[int, str] = {}
        for picked in tqdm(batches, desc="rewrite", unit="batch", disable=not self._progress):
            answers.update(zip(picked, self._generate([chats[i] for i in picked]), strict=True))
        return [answers[i] for i in range(len(chats))]

    def _generate(self, chats: list[Chat]) -> list[str]:
        """Decode ``chats`` together: greedily, or (one chat) sampled with its temperature and seed."""
        torch = self._torch
        batch = self._tokenizer([self._render(c) for c in chats], return_tensors="pt", padding=True)
        sampled = chats[0].temperature > 0
        options = {"do_sample": True, "temperature": chats[0].temperature, "top_k": 0, "top_p": 1.0}
        # The model is on the CPU, so forking the CPU generator is enough to leave the caller's RNG alone.
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            if sampled:
                torch.manual_seed(chats[0].seed)
            out = self._model.generate(
                **batch,
                **(options if sampled else {"do_sample": False}),
                max_new_tokens=max(c.max_new_tokens for c in chats),
                pad_token_id=self._tokenizer.pad_token_id,
            )
        new_tokens = out[:, batch["input_ids"].shape[1] :]  # [batch, generated]
        return [str(self._tokenizer.decode(row, skip_special_tokens=True)) for row in new_tokens]


class HttpRewriter:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint that needs no key (vLLM, llama.cpp server)."""

    def __init__(self, base_url: str, model: str, *, timeout: float = 60.0) -> None:
        self.tag = f"llm:{model}@{base_url.rstrip('/')}"
        self._url = base_url.rstrip("/") + "/v1/chat/completions"
        self._model = model
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
        request = urllib.request.Request(self._url, json.dumps(body).encode(), headers, method="POST")
        endpoint = f"rewriter endpoint {self._url}"
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload: dict[str, Any] = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            reason = getattr(err, "reason", err)
            fix = "start the server or pass another --rewriter-url"
            raise SagoError(f"{endpoint} is unreachable ({reason}); {fix}") from None
        except json.JSONDecodeError:
            raise SagoError(f"{endpoint} did not return JSON; is it OpenAI-compatible?") from None
        try:
            return str(payload["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError):
            raise SagoError(f"{endpoint} returned no choices[0].message.content") from None


class LlamaCppRewriter:
    """A packaged GGUF model served by a local llama.cpp ``llama-server`` (same bytes, ~10x faster on a CPU).

    On a CPU, transformers dequantises the GGUF to fp32 and pays full-precision matmuls; llama.cpp runs the
    Q4_K_M weights as they are. The server is started on a free loopback port with a few slots that decode
    together and is stopped at exit; every answer is logged, so a rebuild never needs the server again.
    Build the binary with ``sago variants llama-server`` (pinned llama.cpp sources from PyPI, into the cache).
    """

    SLOTS = 4
    """requests the server decodes together (decoding is memory-bound: 4 at once cost little more than 1)."""

    def __init__(self, artefact: str = DEFAULT_MODEL, *, binary: str | None = None, threads: int = 2) -> None:
        import atexit
        from contextlib import ExitStack

        from benchmark.packaged import materialise
        from benchmark.variants.llamacpp import served

        self._server = ExitStack()
        # Without --jinja, as the rewriter always ran: the GGUF's own template could change a rewrite's bytes.
        server = served(artefact, binary=binary, threads=threads, slots=self.SLOTS, context=1024, jinja=False)
        self._http = HttpRewriter(self._server.enter_context(server), artefact, timeout=600.0)
        atexit.register(self.close)
        self.tag = loaded_tag(artefact, materialise(artefact), "+llama.cpp")

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        # Requests that share their instruction and example go one after another, so the server's
        # prompt cache reuses that prefix (the prefill is most of a CPU rewrite's cost).
        from concurrent.futures import ThreadPoolExecutor

        order = sorted(
            range(len(chats)),
            key=lambda i: (chats[i].system, chats[i].user.rsplit("\nText (", 1)[0].split("Length:")[0]),
        )
        with ThreadPoolExecutor(self.SLOTS) as pool:
            done = pool.map(lambda i: self._http.complete([chats[i]])[0], order)
            bar = tqdm(done, total=len(order), desc="rewrite", unit="request", disable=len(chats) < 4)
            answers = dict(zip(order, bar, strict=False))
        return [answers[i] for i in range(len(chats))]

    def close(self) -> None:
        """Stop the server (idempotent)."""
        self._server.close()
