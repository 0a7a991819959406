"""A tiny variant set built by the real builder from fixture sources in the real formats (no model)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmark.variants.build import BuildSpec
from benchmark.variants.llm import Chat
from benchmark.variants.release import build_release
from benchmark.variants.sources import (
    FileSource,
    Source,
    parse_gsm8k,
    parse_jeopardy,
    parse_misconceptions,
    parse_nq_open,
    parse_strategyqa,
    parse_trivia_qa,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "variants"
SPEC = BuildSpec("toy", "v1", ("trivia_qa", "gsm8k", "misconceptions"), n_items=4, llm_items=2)
"""The set :func:`build_toy_release` builds: three datasets, four items, two with LLM cells."""


class HashEmbedder:
    """Deterministic stand-in for MiniLM: a hashed bag of lower-cased words (case- and space-blind like
    MiniLM), so texts sharing most words are close and different questions are not; no model needed."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            vector = np.full(64, 0.05, dtype=np.float32)
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                vector[hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows)


class EchoRewriter:
    """Answers form requests with a command and length requests with a padded copy of the question."""

    tag = "llm:echo@000000000000"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        self.calls += len(chats)
        out = []
        for chat in chats:
            text = chat.user.rsplit(" words): ", 1)[-1].removesuffix("\nRewrite:")
            ask = chat.user.split("\n", 1)[0]
            if "instruction (a command" in ask:
                out.append("Tell me " + text.rstrip("?") + ".")
            elif "a question ending" in ask:
                out.append("Can you say: " + text.rstrip(".") + "?")
            else:
                out.append(text)  # unchanged: the validator must reject it
        return out


def fixture_sources() -> dict[str, Source]:
    """Every default dataset, read from a few rows in its real format under tests/fixtures/variants/."""
    return {
        "natural_questions": FileSource(
            "natural_questions", FIXTURES / "nq_open.arrow", parse_nq_open, "CC-BY-SA-3.0"
        ),
        "trivia_qa": FileSource("trivia_qa", FIXTURES / "trivia_qa.arrow", parse_trivia_qa, "Apache-2.0"),
        "jeopardy": FileSource("jeopardy", FIXTURES / "jeopardy.jsonl.gz", parse_jeopardy),
        "gsm8k": FileSource("gsm8k", FIXTURES / "gsm8k.jsonl.gz", parse_gsm8k, "MIT"),
        "strategyqa": FileSource(
            "strategyqa", FIXTURES / "strategyqa.task.json", parse_strategyqa, "Apache-2.0"
        ),
        "misconceptions": FileSource(
            "misconceptions", FIXTURES / "misconceptions.task.json", parse_misconceptions
        ),
    }


def build_toy_release(root: Path) -> Path:
    """Build :data:`SPEC` under ``root`` (``root/toy/v1``) and return ``root``.

    Set ``$SAGO_CACHE`` to a private folder first (the ``private_cache`` fixture): builds checkpoint
    their rewrite log into the cache."""
    build_release(SPEC, fixture_sources(), HashEmbedder(), root=root, rewriter=EchoRewriter, progress=False)
    return root
