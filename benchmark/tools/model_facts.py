"""``make model-facts``: what each packaged model on the board is and what it received, from its file.

For every submission whose model is a packaged GGUF artefact it writes, into ``leaderboard/model_facts.json``:
the GGUF lineage (the model the file was converted from, its organisation and fine-tune name), the file
type the file declares and the precision it really spends (bits per weight over the tensor table, and the
share of weights in each ggml type), the context length, and the prompt exactly as the harness renders it
(``HFBackend.render``'s chat template call) for the first baseline item of the default set's first
dataset, with any system turn the template inserts by default set apart. The template's sha256 is the one
a run records in run.json (``model.chat_template_sha256``), so the facts can be held against the results.

Usage::

    python -m benchmark.tools.model_facts [SLUG ...] [--out leaderboard/model_facts.json]
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click

from benchmark.jsonio import plain_json
from benchmark.model_facts import FACTS_FILE, FACTS_SCHEMA_VERSION, default_system_turn, gguf_facts
from benchmark.packaged import materialise
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR, VARIANTS_DIR
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.submissions import load_submission
from benchmark.submissions.schema import list_slugs
from benchmark.tools import tool_main
from benchmark.variants.frozen import load_variant_set


def example_prompt(set_name: str = DEFAULT_SET, version: str = DEFAULT_SET_VERSION) -> dict[str, str]:
    """The first baseline prompt (lowest item rank) of the set's first dataset."""
    variant_set = load_variant_set(set_name, version, VARIANTS_DIR)
    dataset = variant_set.datasets[0]
    frame = variant_set.frame(dataset)
    base = frame[frame["variant_id"] == "baseline/none/0"].sort_values("item_rank").iloc[0]
    return {"dataset": dataset, "item_id": str(base["item_id"]), "prompt": str(base["prompt"])}


def facts_of(slug: str, example: dict[str, str]) -> dict[str, Any] | None:
    """One packaged submission's facts (None for any other kind of model)."""
    from transformers import AutoTokenizer

    submission = load_submission(slug)
    model = submission.model
    if model.kind != "packaged":
        return None
    path = materialise(model.artefact)
    found = gguf_facts(path)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)

    def render(messages: Any) -> str:
        return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    # As the harness decides (HFBackend.uses_chat_template): the file's template unless the submission
    # asks for raw prompts.
    template = getattr(tokenizer, "chat_template", None)
    applied = (
        template if isinstance(template, str) and template and submission.chat_template != "never" else None
    )
    turn = default_system_turn(render) if applied else None
    rendered = render([{"role": "user", "content": example["prompt"]}]) if applied else example["prompt"]
    return {
        "artefact": model.artefact,
        "file_sha256": model.sha256,
        "gguf": found.to_json(),
        "chat_template_sha256": hashlib.sha256(applied.encode()).hexdigest() if applied else None,
        "default_system_turn": None if turn is None else {"text": turn.text, "how": turn.how},
        "example": {**example, "rendered": rendered},
    }


def build(slugs: list[str]) -> dict[str, Any]:
    """The whole document for ``slugs`` (packaged ones only, in slug order)."""
    example = example_prompt()
    models = {s: f for s in sorted(slugs) if (f := facts_of(s, example)) is not None}
    return {"schema_version": FACTS_SCHEMA_VERSION, "models": models}


@click.command()
@click.argument("slugs", nargs=-1)
@click.option(
    "--out", type=click.Path(path_type=Path), default=LEADERBOARD_DIR / FACTS_FILE, show_default=True
)
def model_facts(slugs: tuple[str, ...], out: Path) -> None:
    """Write the packaged models' facts (lineage, bits per weight, context, the exact prompt)."""
    chosen = list(slugs) or list_slugs(SUBMISSIONS_DIR)
    document = build(chosen)
    out.write_text(plain_json(document), encoding="utf-8")  # sorted keys, two-space indent, UTF-8
    click.echo(f"{out}: {len(document['models'])} packaged model(s)")


main = tool_main(model_facts, "benchmark.tools.model_facts")

if __name__ == "__main__":
    raise SystemExit(main())
