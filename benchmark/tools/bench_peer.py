"""``make bench-peer``: the four-axis harness against lm-evaluation-harness generating the same prompts.

The peer is lm-evaluation-harness's Hugging Face model (``HFLM``) running ``generate_until`` — greedy
generation only, no hidden states and no scoring pass — on exactly the requests ``sago bench`` runs
for the same profile (every selected variant plus the rerun controls), rendered by the same chat
template, with the same model object, thread count, token limit and batch size. Then ``sago bench``
(all four axes: generation, hidden states, log-probabilities and entropies, checkpoints and the final
merge) runs the same requests. Both wall times and their ratio are printed per batch size; a ratio at
or below 1.0 means the scoring pass costs nothing over plain generation.

lm-eval is not a dependency of sago-bench: ``make bench-peer`` installs a pinned version into its own
virtual environment (``.bench-venv``) and runs this module there.

Usage::

    python -m benchmark.tools.bench_peer --threads 1 --batch-size 8 --batch-size 32
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import click
import torch

from benchmark import options
from benchmark.errors import SagoError
from benchmark.harness.collect import Task
from benchmark.harness.sets import open_variant_set
from benchmark.models.hf import ENGINES, HFBackend, default_engine
from benchmark.profiles import get_profile
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.tools import tool_main
from benchmark.tools.bench import BenchResult, bench, load_hf, plain_generate
from benchmark.tools.timing import Column, Timing, profile_tasks, table, timed

DEFAULT_MODEL = "huggingfacetb__smollm2-135m-instruct-q4_1"


@dataclass(frozen=True)
class PeerRow:
    """One batch size: the peer's and the harness's time over the same requests."""

    batch_size: int
    prompts: int
    peer_seconds: float
    """lm-eval ``generate_until`` wall time."""
    peer_cpu_seconds: float
    """its CPU time (the measure that survives a busy machine)."""
    harness: BenchResult
    """``sago bench`` at the same batch size."""
    on_peer_batches: Timing
    """plain greedy ``generate`` over the very (input ids, attention mask) batches the peer built: equal
    to the peer's time when the two generate calls cost the same, so any gap left between this and the
    floor column is the batch plan's (which prompts share a batch), not generation's."""

    @property
    def ratio(self) -> float:
        """harness wall time / peer wall time; <= 1.0 is the target."""
        return self.harness.harness_seconds / self.peer_seconds

    @property
    def cpu_ratio(self) -> float:
        return self.harness.harness_cpu_seconds / self.peer_cpu_seconds


def rendered_requests(backend: HFBackend, tasks: Sequence[Task]) -> list[str]:
    """The chat-templated text of each task's prompt, as the peer is given it."""
    if not backend.uses_chat_template:
        return [t.prompt for t in tasks]
    return [
        backend.tokenizer.apply_chat_template(
            [{"role": "user", "content": t.prompt}], tokenize=False, add_generation_prompt=True
        )
        for t in tasks
    ]


def require_lm_eval() -> None:
    """Fail in one line, before any model loads, where lm-eval is not installed."""
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        raise SagoError(
            "lm-evaluation-harness is not installed here; run `make bench-peer`, which "
            "installs it into .bench-venv"
        ) from None


def peer_model(backend: HFBackend, batch_size: int) -> Any:
    """lm-eval's HFLM around the already loaded model and tokenizer (no second copy of the weights)."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=backend.model,
        tokenizer=backend.tokenizer,
        batch_size=batch_size,
        device=str(backend.model.device),
        # A chat-templated text already carries its BOS; a raw prompt gets the tokenizer's special tokens
        # from the harness (Gemma's <bos>), so the peer must add them too.
        add_bos_token=not backend.uses_chat_template,
    )


def check_same_tokens(lm: Any, backend: HFBackend, texts: Sequence[str], prompts: Sequence[str]) -> None:
    """The peer must read exactly the token ids the harness reads."""
    for text, prompt in zip(texts, prompts, strict=True):
        # tok_encode's default is what generate_until uses: special tokens exactly when add_bos_token
        if list(lm.tok_encode(text)) != backend.render(prompt):
            raise SagoError(
                "lm-eval tokenizes a rendered prompt differently from the harness; "
                "the comparison would not be like for like"
            )


PeerBatches = list[tuple[torch.Tensor, torch.Tensor | None]]


def time_peer(lm: Any, texts: Sequence[str], max_new_tokens: int) -> tuple[Timing, PeerBatches]:
    """Clocks of ``generate_until`` over ``texts`` (greedy, stop on end-of-sequence only), after a
    two-request warm-up, and the padded batches it handed to ``generate`` (recorded, not copied)."""
    from lm_eval.api.instance import Instance

    def requests(texts: Sequence[str], tokens: int) -> list[Instance]:
        options = {"until": [], "max_gen_toks": tokens, "do_sample": False}
        return [
            Instance(request_type="generate_until", doc={}, arguments=(text, dict(options)), idx=index)
            for index, text in enumerate(texts)
        ]

    batches: PeerBatches = []
    generate = lm._model_generate

    def recording(context: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        batches.append((context, kwargs.get("attention_mask")))
        return generate(context, *args, **kwargs)

    def warm_up() -> None:
        lm.generate_until(warm, disable_tqdm=True)
        batches.clear()  # only the timed run's batches

    lm._model_generate = recording
    warm, timed_requests = requests(texts[:2], 2), requests(texts, max_new_tokens)
    try:
        timing = timed(lambda: lm.generate_until(timed_requests, disable_tqdm=True), warm_up=warm_up).timing
    finally:
        lm._model_generate = generate
    return timing, batches


def format_rows(rows: Sequence[PeerRow], threads: int) -> str:
    columns: list[Column] = [
        ("threads", ">7", lambda r: threads),
        ("batch", ">5", lambda r: r.batch_size),
        ("prompts", ">7", lambda r: r.prompts),
        ("lm-eval s", ">9.1f", lambda r: r.peer_seconds),
        ("lm-eval p/s", ">11.3f", lambda r: r.prompts / r.peer_seconds),
        ("sago s", ">8.1f", lambda r: r.harness.harness_seconds),
        ("sago p/s", ">8.3f", lambda r: r.harness.prompts / r.harness.harness_seconds),
        ("sago tok/s", ">10.1f", lambda r: r.harness.generated_tokens / r.harness.harness_seconds),
        ("floor s", ">8.1f", lambda r: r.harness.bare_seconds),
        ("peak MiB", ">8.0f", lambda r: r.harness.peak_rss_mib),
        ("ratio", ">6.3f", lambda r: r.ratio),
        ("lm-eval cpu", ">11.1f", lambda r: r.peer_cpu_seconds),
        ("sago cpu", ">8.1f", lambda r: r.harness.harness_cpu_seconds),
        ("floor cpu", ">9.1f", lambda r: r.harness.bare_cpu_seconds),
        ("floor@peer cpu", ">14.1f", lambda r: r.on_peer_batches.cpu_seconds),
        ("cpu ratio", ">9.3f", lambda r: r.cpu_ratio),
    ]
    return "\n".join(table(columns, rows, rule=True))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--model", "slug", default=DEFAULT_MODEL, show_default=True, help="Submission slug.")
@click.option("--profile", default="bench", show_default=True)
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True)
@click.option("--threads", type=options.THREADS, default=1, show_default=True)
@click.option(
    "--batch-size",
    "batch_sizes",
    type=options.BATCH_SIZE,
    multiple=True,
    default=(8, 32),
    show_default=True,
    help="repeat for several",
)
@click.option(
    "--datasets", default=None, help="Comma-separated subset of the set's datasets (a shorter sample)."
)
@click.option(
    "--engine",
    default=default_engine("cpu"),
    show_default=True,
    help="The harness's engine (pooled, the CPU default of sago evaluate; single_prefill, two_pass, "
    "draft); the peer only generates. Each forward holds --batch-size rows, as the peer's (pooled: each "
    "engine call holds 4 such forwards).",
)
@click.option(
    "--floor/--no-floor",
    default=True,
    show_default=True,
    help="Also time plain greedy generate over the same batches (the floor column; --no-floor leaves it "
    "NaN and saves about a third of each row's time, for repeated measurements).",
)
def bench_peer(
    slug: str,
    profile: str,
    set_name: str,
    version: str,
    threads: int,
    batch_sizes: tuple[int, ...],
    datasets: str | None,
    engine: str,
    floor: bool,
) -> None:
    """Time lm-eval generate_until and `sago bench` on the same prompts; print both and the ratio."""
    variant_set = open_variant_set(set_name, version)  # a bad --set fails before anything loads
    spec = ENGINES.get(engine)
    require_lm_eval()
    chosen = get_profile(profile)
    backend = load_hf(
        slug, "bench-peer", device="cpu", threads=threads, batch_size=batch_sizes[0], engine=spec
    )
    subset = options.dataset_list(datasets)
    tasks = profile_tasks(variant_set, chosen, subset)
    texts = rendered_requests(backend, tasks)
    rows = []
    for size in batch_sizes:
        lm = peer_model(backend, size)
        check_same_tokens(lm, backend, texts, [t.prompt for t in tasks])
        peer, peer_batches = time_peer(lm, texts, chosen.max_new_tokens)
        on_peer_batches = timed(
            lambda: plain_generate(backend, peer_batches, chosen.max_new_tokens)  # noqa: B023
        ).timing
        # `size` rows in each forward, as the peer's batch `size`: the pooled engine's calls hold
        # POOL such forwards (micro-batches).
        plan = size * backend.engine_spec.forwards_per_call
        backend.batch_size = plan
        harness = bench(
            backend,
            variant_set,
            profile=chosen,
            batch_size=plan,
            datasets=subset,
            floor_batch_size=size,
            floor=floor,
        )
        rows.append(PeerRow(size, len(texts), peer.seconds, peer.cpu_seconds, harness, on_peer_batches))
        click.echo(format_rows(rows[-1:], threads), err=True)  # progress on stderr
    click.echo(
        f"model {slug}, engine {engine}, profile {profile} ({chosen.max_new_tokens} new tokens), "
        f"torch threads {torch.get_num_threads()}; "
        "ratio = sago bench (all four axes) / lm-eval generate_until; "
        "floor = plain greedy generate over the same batches; floor@peer = the same generate over "
        "lm-eval's own batches; cpu = process CPU seconds"
    )
    click.echo(format_rows(rows, threads))


main = tool_main(bench_peer, "benchmark.tools.bench_peer")

if __name__ == "__main__":
    raise SystemExit(main())
