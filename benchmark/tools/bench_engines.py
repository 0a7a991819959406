"""Engine throughput on real model shapes: prompts/s, tokens/s, peak memory and model-FLOPs utilisation.

``make bench-gpu`` builds randomly initialised Llama-style models with the shapes of a 1B and an 8B
model (no download: random weights cost exactly the same FLOPs), feeds them the paper profile's shapes
(batched prompts of 40-120 tokens, 100 new tokens, and a 100-token baseline response y_0 teacher-forced
under every prompt) and times both engines. ``--dry-run`` runs the same code on the CPU with a tiny
shape in seconds; ``--cpu-compare`` times the two engines on the real packaged SmolLM2 on the CPU.

Usage::

    python -m benchmark.tools.bench_engines                  # GPU: llama-1b and llama-8b, bf16
    python -m benchmark.tools.bench_engines --dry-run        # CPU, tiny shape, seconds
    python -m benchmark.tools.bench_engines --cpu-compare    # CPU, SmolLM2, two-pass vs single-prefill
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

import click
import torch
from tqdm import tqdm
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel

from benchmark import options
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.harness.sets import open_variant_set
from benchmark.models.engine import Engine, RawOutput
from benchmark.models.hf import ENGINES
from benchmark.profiles import get_profile
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.tools import tool_main
from benchmark.tools.timing import Column, profile_tasks, report_option, table, timed, write_report

T = TypeVar("T")
_CPU_ORDER = ("two_pass", "single_prefill")
"""reference engine first in the CPU comparison's table."""

# Dense bf16 tensor-core peak of an H100/H200 SXM (989 TFLOP/s); pass --peak-flops for other chips.
DEFAULT_PEAK_FLOPS = 989e12
peak_flops_option = click.option(
    "--peak-flops",
    type=options.FLOPS,
    default=DEFAULT_PEAK_FLOPS,
    show_default=True,
    help="chip's dense bf16 FLOP/s",
)


@dataclass(frozen=True)
class Shape:
    """A Llama-style architecture's dimensions."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    """key/value heads (grouped-query attention)."""
    intermediate: int
    """MLP width."""
    vocab: int
    tied: bool
    """input embedding and output head share weights."""

    def config(self) -> LlamaConfig:
        return LlamaConfig(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            intermediate_size=self.intermediate,
            max_position_embeddings=4096,
            tie_word_embeddings=self.tied,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=0,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        )


SHAPES: dict[str, Shape] = {
    "llama-1b": Shape("llama-1b", 2048, 16, 32, 8, 8192, 128256, tied=True),
    "llama-8b": Shape("llama-8b", 4096, 32, 32, 8, 14336, 128256, tied=False),
    "tiny": Shape("tiny", 64, 2, 4, 2, 128, 512, tied=True),
}


@dataclass(frozen=True)
class Workload:
    """What one measurement runs."""

    prompts: int
    batch_size: int
    """prompts per engine call."""
    min_prompt: int
    """prompt lengths in tokens, drawn between these two."""
    max_prompt: int
    new_tokens: int
    baseline_tokens: int
    """length of the teacher-forced y_0 (0: no scoring, the baseline phase)."""
    seed: int


@dataclass(frozen=True)
class Measurement:
    """Throughput of one engine on one model and workload."""

    model: str
    engine: str
    batch_size: int
    prompts: int
    seconds: float
    cpu_seconds: float
    """CPU time of this process: on a shared CPU machine it, not the wall clock, measures the work."""
    prompts_per_s: float
    generated_tokens_per_s: float
    """greedy tokens actually produced per second (end-of-sequence excluded)."""
    model_tokens_per_s: float
    """prompt + generated + y_0 tokens per second: the tokens the method needs the model to read."""
    peak_memory_gib: float
    """torch.cuda.max_memory_allocated (NaN on the CPU)."""
    mfu: float
    """2 * matmul params * model tokens / seconds / peak FLOP/s (NaN on the CPU)."""


def build_model(shape: Shape, *, device: torch.device, dtype: torch.dtype, seed: int = 0) -> PreTrainedModel:
    """A randomly initialised Llama of ``shape``, created directly on ``device`` in ``dtype``."""
    torch.manual_seed(seed)
    with torch.device(device):
        model = cast(PreTrainedModel, LlamaForCausalLM._from_config(shape.config(), dtype=dtype))  # type: ignore[no-untyped-call]
    model.eval()  # type: ignore[no-untyped-call]
    return model


def matmul_params(model: PreTrainedModel) -> int:
    """Parameters that take part in a matrix product per token: all but the input embedding table,
    plus the output head (counted once even when it shares the embedding's weights)."""
    embedding = cast(torch.Tensor, model.get_input_embeddings().weight)
    output = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    head = cast(torch.Tensor, cast(torch.nn.Module, output).weight)
    total = sum(p.numel() for p in model.parameters())
    return total - embedding.numel() + (head.numel() if head is embedding else 0)


def random_prompts(workload: Workload, vocab: int) -> tuple[list[list[int]], list[list[int]] | None]:
    """Seeded prompts of realistic lengths and a fixed-length y_0 per prompt (token ids 1..vocab-2)."""
    rng = random.Random(workload.seed)
    lengths = [rng.randint(workload.min_prompt, workload.max_prompt) for _ in range(workload.prompts)]
    prompts = [[rng.randrange(1, vocab - 1) for _ in range(length)] for length in lengths]
    if workload.baseline_tokens == 0:
        return prompts, None
    baselines = [[rng.randrange(1, vocab - 1) for _ in range(workload.baseline_tokens)] for _ in prompts]
    return prompts, baselines


@dataclass(frozen=True)
class Decoding:
    """How the engines are called."""

    batch_size: int
    new_tokens: int
    eos_ids: frozenset[int]
    pad_id: int


def run_engine(
    engine: Engine,
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    baselines: Sequence[Sequence[int]] | None,
    decoding: Decoding,
) -> list[RawOutput]:
    outputs: list[RawOutput] = []
    size = decoding.batch_size
    for start in range(0, len(prompts), size):
        tails = None if baselines is None else baselines[start : start + size]
        outputs += engine(
            model,
            prompts[start : start + size],
            tails,
            max_new_tokens=decoding.new_tokens,
            eos_ids=decoding.eos_ids,
            pad_id=decoding.pad_id,
        )
    return outputs


class EngineRun(NamedTuple):
    """A measurement and the outputs it timed."""

    measurement: Measurement
    outputs: list[RawOutput]


def measure(
    name: str,
    engine_name: str,
    engine: Engine,
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    baselines: Sequence[Sequence[int]] | None,
    decoding: Decoding,
    *,
    peak_flops: float,
    warm: bool = False,
) -> EngineRun:
    """Time ``engine`` (labelled ``engine_name``) over all prompts and derive the rates; ``warm``: after a
    warm-up on the first batch (else the caller warms up)."""
    size = decoding.batch_size
    first = None if baselines is None else baselines[:size]
    clock = timed(
        lambda: run_engine(engine, model, prompts, baselines, decoding),
        warm_up=(lambda: run_engine(engine, model, prompts[:size], first, decoding)) if warm else None,
        device=model.device,
    )
    outputs, seconds = clock.value, clock.timing.seconds
    generated = sum(len(o.response_ids) for o in outputs)
    tokens = generated + sum(map(len, prompts)) + (sum(map(len, baselines)) if baselines else 0)
    cuda = model.device.type == "cuda"
    return EngineRun(
        Measurement(
            model=name,
            engine=engine_name,
            batch_size=size,
            prompts=len(prompts),
            seconds=seconds,
            cpu_seconds=clock.timing.cpu_seconds,
            prompts_per_s=len(prompts) / seconds,
            generated_tokens_per_s=generated / seconds,
            model_tokens_per_s=tokens / seconds,
            peak_memory_gib=clock.timing.peak_memory_gib,
            mfu=2 * matmul_params(model) * tokens / seconds / peak_flops if cuda else math.nan,
        ),
        outputs,
    )


def time_engines(
    model: PreTrainedModel,
    shape: Shape,
    workload: Workload,
    engines: Mapping[str, Engine],
    *,
    peak_flops: float,
) -> list[Measurement]:
    """Each of ``engines`` over the workload's random prompts on ``model`` (of ``shape``), each after a
    warm-up on one batch."""
    prompts, baselines = random_prompts(workload, shape.vocab)
    # The last id never occurs in the prompts; random weights rarely pick it, so rows run to the limit.
    decoding = Decoding(workload.batch_size, workload.new_tokens, frozenset({shape.vocab - 1}), pad_id=0)
    return [
        measure(
            shape.name, name, run, model, prompts, baselines, decoding, peak_flops=peak_flops, warm=True
        ).measurement
        for name, run in engines.items()
    ]


TABLE_COLUMNS: list[Column] = [
    ("model", "<16", lambda m: m.model),
    ("engine", "<15", lambda m: m.engine),
    ("batch", ">5", lambda m: m.batch_size),
    ("prompts", ">7", lambda m: m.prompts),
    ("seconds", ">8.2f", lambda m: m.seconds),
    ("cpu s", ">8.2f", lambda m: m.cpu_seconds),
    ("prompts/s", ">9.2f", lambda m: m.prompts_per_s),
    ("gen tok/s", ">10.1f", lambda m: m.generated_tokens_per_s),
    ("model tok/s", ">11.1f", lambda m: m.model_tokens_per_s),
    ("peak GiB", ">8.2f", lambda m: m.peak_memory_gib),
    ("MFU", ">6.1%", lambda m: m.mfu),
]


def format_table(rows: Sequence[Measurement]) -> str:
    return "\n".join(table(TABLE_COLUMNS, rows, nan="n/a", rule=True))


def engine_ratios(rows: Sequence[Measurement], *, cpu_time: bool = False) -> dict[str, float]:
    """Per model, single-prefill time / two-pass time (the target is <= 0.8), wall or CPU time."""
    seconds = {(r.model, r.engine): r.cpu_seconds if cpu_time else r.seconds for r in rows}
    return {
        model: seconds[(model, "single_prefill")] / seconds[(model, "two_pass")]
        for model, engine in seconds
        if engine == "two_pass" and (model, "single_prefill") in seconds
    }


# --- CPU comparison of the two engines on the real packaged SmolLM2 -------------------------------


def smollm2_prompts(tokenizer: object, count: int) -> list[list[int]]:
    """The first ``count`` requests of the default set's bench profile, chat-templated (baselines and
    rewrites, so prompt lengths vary as they do in a run)."""
    variant_set = open_variant_set(DEFAULT_SET, DEFAULT_SET_VERSION)
    return [
        list(
            tokenizer.apply_chat_template(  # type: ignore[attr-defined]
                [{"role": "user", "content": t.prompt}],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
        )
        for t in profile_tasks(variant_set, get_profile("bench"), None)[:count]
    ]


def cpu_compare(
    *, prompts: int = 32, new_tokens: int = 32, batch_size: int = 16, threads: int = 1
) -> list[Measurement]:
    """Time both engines on SmolLM2-135M (CPU, float32) in the baseline and the variant phase.

    The baseline phase has no y_0 (generation and hidden states only); in the variant phase every
    prompt teacher-forces its own greedy response (from the timed single-prefill baseline run) as
    y_0. Prints how closely the two engines agree.
    """
    from benchmark.gguf import load_gguf

    # On a shared machine, more than one intra-op thread per process makes torch's thread pool spin
    # against other processes: a 135M forward then takes 10x longer and the timings mean nothing.
    torch.set_num_threads(threads)
    loaded = load_gguf("smollm2-135m-instruct-q4_1", dtype=torch.float32)
    tok, model = loaded.tokenizer, loaded.model
    ids = smollm2_prompts(tok, prompts)
    decoding = Decoding(batch_size, new_tokens, frozenset({tok.eos_token_id}), tok.pad_token_id)
    # warm-up: one-off allocations and lazy imports
    for engine in (ENGINES.get(name).run for name in _CPU_ORDER):
        run_engine(engine, model, ids[:2], None, replace(decoding, new_tokens=2))
    rows: list[Measurement] = []
    tails: list[list[int]] | None = None
    for phase in ("baseline", "variant"):
        runs = {
            name: measure(
                f"smollm2/{phase}", name, ENGINES.get(name).run, model, ids, tails, decoding, peak_flops=1.0
            )
            for name in ("single_prefill", "two_pass")
        }
        _print_agreement(phase, runs["two_pass"].outputs, runs["single_prefill"].outputs)
        rows += [runs[name].measurement for name in _CPU_ORDER]
        tails = [o.response_ids for o in runs["single_prefill"].outputs]
    return rows


def _print_agreement(phase: str, reference: Sequence[RawOutput], single: Sequence[RawOutput]) -> None:
    pairs = list(zip(reference, single, strict=True))
    same_ids = sum(r.response_ids == s.response_ids for r, s in pairs)
    logprob = max((abs(r.logprob_sum - s.logprob_sum) for r, s in pairs if r.scored_tokens), default=0.0)
    hidden = max(float(abs(r.hidden - s.hidden).max()) for r, s in pairs)
    click.echo(
        f"{phase}: identical greedy ids {same_ids}/{len(reference)}; "
        f"max |d logprob_sum| {logprob:.2e}; max |d hidden| {hidden:.2e}"
    )


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dry-run", is_flag=True, help="CPU, tiny shape, few tokens: checks the code path in seconds.")
@click.option(
    "--cpu-compare",
    "compare_on_cpu",
    is_flag=True,
    help="CPU, real SmolLM2: two-pass vs single-prefill ratio.",
)
@click.option("--shapes", default="llama-1b,llama-8b", show_default=True, help=f"of {sorted(SHAPES)}")
@click.option("--engines", default="two_pass,single_prefill", show_default=True)
@click.option("--batch-size", type=options.BATCH_SIZE, default=32, show_default=True)
@click.option(
    "--prompts",
    type=options.PROMPTS,
    default=128,
    show_default=True,
    help="prompts timed per model and engine",
)
@click.option("--new-tokens", type=options.TOKENS, default=100, show_default=True)
@click.option(
    "--baseline-tokens",
    type=options.SOME_TOKENS,
    default=100,
    show_default=True,
    help="length of y_0 (0: baseline phase)",
)
@peak_flops_option
@report_option("--json", "also write the measurements as JSON")
def bench_gpu(
    dry_run: bool,
    compare_on_cpu: bool,
    shapes: str,
    engines: str,
    batch_size: int,
    prompts: int,
    new_tokens: int,
    baseline_tokens: int,
    peak_flops: float,
    report: Path | None,
) -> None:
    """Throughput of the engines on random-weight 1B/8B Llama shapes (GPU), or the CPU checks."""
    if report is not None:  # before minutes of timing
        refuse_tracked(report, "--json", own=lambda _: False, writes="a measurements file of its own")
    if compare_on_cpu:
        rows = cpu_compare()
    else:
        rows = _bench(
            dry_run,
            _names(shapes, SHAPES),
            _names(engines, ENGINES.names()),
            peak_flops,
            Workload(prompts, batch_size, 40, 120, new_tokens, baseline_tokens, seed=0),
        )
    click.echo(format_table(rows))
    clock = "CPU" if compare_on_cpu or dry_run else "wall-clock"
    for model, ratio in engine_ratios(rows, cpu_time=clock == "CPU").items():
        click.echo(f"{model}: single_prefill / two_pass {clock} time = {ratio:.3f} (target <= 0.8)")
    if report is not None:
        write_report(report, {"rows": [asdict(r) for r in rows]})


class Setting(NamedTuple):
    """Where and in what the random shapes run."""

    shapes: list[Shape]
    device: torch.device
    dtype: torch.dtype


DRY_RUN = Workload(8, 4, 40, 120, 8, 8, seed=0)
"""a dry run's workload on the tiny shape: seconds on one CPU thread."""


def setting(dry_run: bool, shapes: Sequence[str], refusal: str) -> Setting:
    """The tiny shape on one CPU thread in float32 (a dry run), else ``shapes`` on CUDA in bfloat16; where
    there is no CUDA device, ``refusal`` is the error."""
    if dry_run:
        torch.set_num_threads(1)  # see cpu_compare: extra threads only spin on a shared CPU
        return Setting([SHAPES["tiny"]], torch.device("cpu"), torch.float32)
    if not torch.cuda.is_available():
        raise SagoError(refusal)
    return Setting([SHAPES[name] for name in shapes], torch.device("cuda"), torch.bfloat16)


def on_random_models(setting: Setting, seed: int, work: Callable[[PreTrainedModel, Shape], T]) -> list[T]:
    """``work`` on a random model of each of the setting's shapes in turn, each model's memory handed back
    before the next one is built (so each is measured alone)."""
    results = []
    for shape in tqdm(setting.shapes, desc="shapes", disable=None):
        results.append(work(build_model(shape, device=setting.device, dtype=setting.dtype, seed=seed), shape))
        if setting.device.type == "cuda":  # the deleted model's cached memory, handed back
            torch.cuda.empty_cache()
    return results


def _bench(
    dry_run: bool, shapes: list[str], engines: list[str], peak_flops: float, workload: Workload
) -> list[Measurement]:
    chosen = setting(
        dry_run, shapes, "bench-gpu needs a CUDA device; on a CPU run it with --dry-run or --cpu-compare"
    )
    if dry_run:  # the tiny shape's workload, with at most 8 new and 8 baseline tokens
        new, baseline = min(workload.new_tokens, 8), min(workload.baseline_tokens, 8)
        workload = replace(DRY_RUN, new_tokens=new, baseline_tokens=baseline)
    runs = {name: ENGINES.get(name).run for name in engines}
    measured = on_random_models(
        chosen, workload.seed, lambda m, shape: time_engines(m, shape, workload, runs, peak_flops=peak_flops)
    )
    return [row for rows in measured for row in rows]


def _names(text: str, known: Collection[str]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise SagoError(f"unknown name(s) {unknown or [text]}: choose from {sorted(known)}")
    return names


main = tool_main(bench_gpu, "benchmark.tools.bench_engines")

if __name__ == "__main__":
    raise SystemExit(main())
