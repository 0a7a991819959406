"""Model facts read from the artefact: the system turn a template inserts, the GGUF tensor table's
precision, and the committed leaderboard/model_facts.json held against the committed runs."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from benchmark.model_facts import default_system_turn
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR

FACTS = LEADERBOARD_DIR / "model_facts.json"

# Chat templates of the shapes the packaged models and common Hub models use (rendered by jinja2 as
# transformers renders them: messages, add_generation_prompt, raise_exception).
QWEN_LIKE = (
    "{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are Qwen, a helpful assistant."
    "<|im_end|>\n{% endif %}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHATML_PLAIN = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
GEMMA_LIKE = (  # a system turn is folded into the first user turn; none is invented
    "<bos>{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}"
    "{% set rest = messages[1:] %}{% else %}{% set first = '' %}{% set rest = messages %}{% endif %}"
    "{% for m in rest %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if loop.first %}{{ first }}{% endif %}{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
REFUSES_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}"
    "{% endif %}[INST] {{ m['content'] }} [/INST]{% endfor %}"
)


def _renderer(template: str):  # type: ignore[no-untyped-def]
    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    compiled = jinja2.Environment().from_string(template)
    return lambda messages: compiled.render(
        messages=messages, add_generation_prompt=True, raise_exception=raise_exception
    )


@pytest.mark.parametrize(
    ("template", "text", "how"),
    [
        (QWEN_LIKE, "You are Qwen, a helpful assistant.", "default"),
        (CHATML_PLAIN, None, "none"),
        (GEMMA_LIKE, None, "none"),
        (REFUSES_SYSTEM, None, "unsupported"),
    ],
)
def test_default_system_turn_of_each_template_shape(template: str, text: str | None, how: str) -> None:
    turn = default_system_turn(_renderer(template))
    assert (turn.text, turn.how) == (text, how)


def _committed() -> dict[str, dict[str, object]]:
    return dict(json.loads(FACTS.read_text(encoding="utf-8"))["models"])


def _run(slug: str) -> dict[str, object]:
    run = SUBMISSIONS_DIR / slug / "results" / "sago-v1" / "v2" / "run.json"
    return dict(json.loads(run.read_text(encoding="utf-8"))["model"])


def test_committed_facts_match_what_each_committed_run_recorded() -> None:
    """The template whose system turn the facts report is the one each run applied (its sha256 in
    run.json), and a run that sent raw prompts has no template in the facts."""
    facts = _committed()
    assert facts, "leaderboard/model_facts.json lists no model"
    for slug, entry in facts.items():
        model = _run(slug)
        assert entry["file_sha256"] == model["file_sha256"], slug
        if model["chat_template"] == "applied":
            assert entry["chat_template_sha256"] == model["chat_template_sha256"], slug
        else:
            assert entry["chat_template_sha256"] is None, slug
            example = entry["example"]
            assert isinstance(example, dict) and example["rendered"] == example["prompt"], slug


def test_the_committed_facts_say_which_models_received_a_system_turn() -> None:
    """What METHOD.md §3 discloses: the SmolLM2 and Qwen2.5 templates insert one, Gemma ran raw."""
    turns = {slug: (e["default_system_turn"] or {}).get("how") for slug, e in _committed().items()}  # type: ignore[union-attr]
    inserted = sorted(s for s, how in turns.items() if how == "default")
    assert inserted == [
        "huggingfacetb__smollm2-135m-instruct-q4_1",
        "qwen__qwen2.5-coder-0.5b-instruct-q4_k_m",
        "qwen__qwen2.5-coder-1.5b-instruct-q4_k_m",
    ]
    method = " ".join((Path(__file__).parents[1] / "docs" / "METHOD.md").read_text(encoding="utf-8").split())
    for slug in inserted:
        text = _committed()[slug]["default_system_turn"]["text"]  # type: ignore[index]
        assert f"“{text}”" in method, f"METHOD.md does not quote {slug}'s system turn"


@pytest.mark.slow
def test_smollm2_facts_regenerate_from_its_file() -> None:
    """Read again from the packaged file (tensor table, template, tokenizer): the committed entry."""
    from benchmark.tools.model_facts import example_prompt, facts_of

    slug = "huggingfacetb__smollm2-135m-instruct-q4_1"
    fresh = facts_of(slug, example_prompt())
    assert fresh == _committed()[slug]
    gguf = fresh["gguf"]  # type: ignore[index]
    # Q4_1 by name, but the token embedding (tied output) is Q8_0: nearly six bits a weight, not 4.5+.
    assert gguf["file_type"] == "MOSTLY_Q4_1" and 5.7 < gguf["bits_per_weight"] < 5.8
