"""The local rewriter: greedy at temperature 0, seeded sampling above it, a tag naming the bytes loaded."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmark.provenance import sha256_file
from benchmark.variants import llm
from benchmark.variants.rewriter import Chat, LocalModelRewriter, loaded_tag

TINY = "smollm2-135m-instruct-q4_1"


def test_a_tag_names_the_bytes_loaded_not_only_the_artefact(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"pinned weights")
    pinned = loaded_tag("tiny", weights)
    assert pinned == f"llm:tiny@{sha256_file(weights)[:12]}"
    weights.write_bytes(b"other weights under the same name")
    assert loaded_tag("tiny", weights) != pinned
    assert loaded_tag("tiny", weights, "+llama.cpp").endswith("+llama.cpp")


@pytest.mark.slow  # ~20 s: loads the packaged SmolLM2-135M GGUF with transformers
def test_local_rewriter_is_greedy_at_zero_and_seeded_above_and_tags_the_file_it_loaded() -> None:
    import torch

    from benchmark.packaged import ARTEFACTS, materialise

    rewriter = LocalModelRewriter(TINY, batch_size=4, progress=False)
    path = materialise(TINY)
    assert rewriter.tag == f"llm:{TINY}@{sha256_file(path)[:12]}"
    assert rewriter.tag.endswith((ARTEFACTS.get(TINY).sha256 or "")[:12])  # the cached file is the pinned one

    greedy = llm.request(llm.Job("d", "1", 0, "Who wrote the play Hamlet?", (), "length", 2.0), 0)
    short = replace(greedy, max_new_tokens=12)
    assert short.temperature == 0
    sampled = [replace(short, temperature=1.0, seed=seed) for seed in (1, 1, 2, 3, 4)]

    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    first = rewriter.complete([short, *sampled])
    assert torch.equal(torch.rand(3), expected_next)  # the caller's random state is untouched

    # The same seed gives the same text, in another call and beside other requests.
    again = rewriter.complete([sampled[2], short, sampled[0], Chat(short.system, "Hi.", 4)])
    assert first[1] == first[2] == again[2] and first[3] == again[0]
    assert first[0] == again[1]  # greedy: the same text whatever else is in the call
    assert len(set(first[1:])) > 1  # other seeds, other draws
    assert any(text != first[0] for text in first[1:])  # sampling is not greedy decoding
