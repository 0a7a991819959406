"""The packaged SmolLM2-135M-Instruct, loaded for the engine tests that compare engines on a real model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from benchmark.gguf import load_gguf

ARTEFACT = "smollm2-135m-instruct-q4_1"


class Chat(NamedTuple):
    """The dequantised float32 model, and the questions rendered as one user turn each."""

    model: Any
    prompts: list[list[int]]
    """token ids, the chat template applied with its generation prompt."""
    options: dict[str, Any]
    """the engines' keyword arguments: ``max_new_tokens`` and the tokenizer's end and pad ids."""


def smollm2_chat(questions: Sequence[str], max_new_tokens: int) -> Chat:
    """SmolLM2 in float32 (the CPU harness's dtype) with ``questions`` rendered as its chat prompts."""
    loaded = load_gguf(ARTEFACT, dtype=torch.float32)
    tok = loaded.tokenizer
    prompts = [
        list(
            tok.apply_chat_template(
                [{"role": "user", "content": q}], add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
        )
        for q in questions
    ]
    options = {
        "max_new_tokens": max_new_tokens,
        "eos_ids": frozenset({tok.eos_token_id}),
        "pad_id": tok.pad_token_id,
    }
    return Chat(loaded.model, prompts, options)
