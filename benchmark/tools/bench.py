"""``sago bench``: the full harness against a floor of bare model work, in one process.

The floor is generation alone: a plain batched greedy ``generate`` over the same requests in the same
batches, prompts tokenized beforehand — what a generation-only evaluator (e.g. lm-eval's
``generate_until``) cannot go below. Everything else the harness does — scoring y_0, the baselines'
extra pass, hidden-state gathering, log-softmax and entropy, decoding, checkpoint files, the final
merge — counts as overhead, so a ratio of 1.0 means the three extra axes cost nothing.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import click
import torch

from benchmark import options, paths
from benchmark.errors import SagoError
from benchmark.harness.cli import engine_option, run_options
from benchmark.harness.collect import Batch, collect, prompt_length
from benchmark.harness.evaluate import EvaluateOptions, check_options
from benchmark.harness.finalize import finalize
from benchmark.harness.sets import VariantSetLike, open_variant_set
from benchmark.models.engine import EngineSpec, greedy_config, left_pad, plain_greedy
from benchmark.models.hf import ENGINES, HFBackend
from benchmark.profiles import Profile, get_profile
from benchmark.results import ResultsFolder
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.submissions import load_submission
from benchmark.tools.timing import Timed, Timing, peak_rss_mib, profile_batches, profile_tasks, timed


@dataclass(frozen=True)
class BenchResult:
    """What ``sago bench`` prints."""

    prompts: int
    """(item, variant) requests run, control rows included."""
    generated_tokens: int
    harness_seconds: float
    """wall time of collect + finalize."""
    bare_seconds: float
    """wall time of the floor: plain greedy ``generate`` over the same batches."""
    peak_rss_mib: float
    harness_cpu_seconds: float = float("nan")
    """CPU time of this process during collect + finalize (on a busy machine it, not the wall clock,
    measures the work)."""
    bare_cpu_seconds: float = float("nan")

    @property
    def ratio(self) -> float:
        """harness / bare; 1.0 means no overhead."""
        return self.harness_seconds / self.bare_seconds

    def lines(self) -> list[str]:
        return [
            f"prompts:           {self.prompts}",
            f"prompts/s:         {self.prompts / self.harness_seconds:.3f}",
            f"tokens/s:          {self.generated_tokens / self.harness_seconds:.2f}",
            f"peak RSS:          {self.peak_rss_mib:.0f} MiB",
            f"harness wall:      {self.harness_seconds:.2f} s",
            f"generate floor:    {self.bare_seconds:.2f} s",
            f"overhead ratio:    {self.ratio:.3f}",
            f"CPU-time ratio:    {self.harness_cpu_seconds / self.bare_cpu_seconds:.3f}",
        ]


def bench(
    backend: HFBackend,
    variant_set: VariantSetLike,
    *,
    profile: Profile,
    batch_size: int,
    datasets: tuple[str, ...] | None = None,
    floor_batch_size: int | None = None,
    floor: bool = True,
) -> BenchResult:
    """Time the harness, then the bare work over the same prompts and batches (or, with
    ``floor_batch_size``, over batches of that many prompts: the pooled engine's forwards hold a quarter
    of its call, so its floor is plain generation at that forward size); ``floor=False``: the harness
    alone (the floor's times are NaN)."""
    harness = time_harness(backend, variant_set, profile, batch_size, datasets, warm=True)
    bare = Timing(math.nan, math.nan, math.nan)
    if floor:
        # After an out-of-memory back-off the backend ran smaller chunks; the bare work uses the same size.
        size = floor_batch_size or min(batch_size, backend.forward_rows)
        batches = profile_batches(variant_set, profile, datasets, size, prompt_length(backend))
        bare = timed(lambda: _bare_work(backend, batches, profile.max_new_tokens)).timing
    return BenchResult(
        len(profile_tasks(variant_set, profile, datasets)),
        harness.value,
        harness.timing.seconds,
        bare.seconds,
        peak_rss_mib(),
        harness.timing.cpu_seconds,
        bare.cpu_seconds,
    )


def time_harness(
    backend: HFBackend,
    variant_set: VariantSetLike,
    profile: Profile,
    batch_size: int,
    datasets: tuple[str, ...] | None = None,
    *,
    warm: bool = False,
) -> Timed[int]:
    """The generated tokens and clocks of one harness run (collect and finalize) into a temporary folder;
    ``warm``: after :func:`warm_up` (else the caller warms up)."""
    with tempfile.TemporaryDirectory() as tmp:

        def run() -> None:
            collect(
                backend,
                variant_set,
                Path(tmp),
                profile=profile,
                batch_size=batch_size,
                datasets=datasets,
                progress=False,
            )
            finalize(Path(tmp))

        clocks = timed(run, warm_up=(lambda: warm_up(backend)) if warm else None).timing
        return Timed(_generated_tokens(Path(tmp)), clocks)


def warm_up(backend: HFBackend) -> None:
    """One short generate so neither timing pays first-call costs, and the engine's per-model setup
    (:meth:`HFBackend.prepare`), which the peer has no counterpart of and a run pays once, like loading."""
    backend.prepare()
    ids = torch.tensor([backend.render("Warm up.")], device=backend.model.device)
    with torch.inference_mode():
        backend.model.generate(ids, max_new_tokens=2, do_sample=False, pad_token_id=backend.pad_id)


def _generated_tokens(results: Path) -> int:
    import pandas as pd

    frames = [pd.read_parquet(p, columns=["response_tokens"]) for p in ResultsFolder(results).record_files()]
    return int(pd.concat(frames, ignore_index=True)["response_tokens"].sum())


def _bare_work(backend: HFBackend, batches: list[Batch], max_new_tokens: int) -> None:
    """Plain greedy ``generate`` per batch, each left-padded as the harness pads it."""
    encoded = [[backend.render(t.prompt) for t in b.tasks] for b in batches]
    padded = [left_pad(prompts, backend.pad_id, backend.model.device) for prompts in encoded]
    plain_generate(backend, [(b.input_ids, b.attention_mask) for b in padded], max_new_tokens)


def plain_generate(
    backend: HFBackend, batches: Sequence[tuple[torch.Tensor, torch.Tensor | None]], max_new_tokens: int
) -> list[torch.Tensor]:
    """Plain greedy ``generate`` over ready (input ids, attention mask) batches: generation alone, the
    floor every engine and every generation-only peer is measured against. Returns each batch's new ids."""
    model = backend.model
    config = greedy_config(max_new_tokens, backend.eos_ids, backend.pad_id)
    with torch.inference_mode(), plain_greedy(model, config):
        return [
            model.generate(input_ids=ids, attention_mask=mask, generation_config=config)[:, ids.shape[1] :]
            for ids, mask in batches
        ]


def load_hf(
    slug: str,
    tool: str,
    *,
    device: str | None,
    threads: int | None,
    batch_size: int | None,
    engine: EngineSpec | None,
) -> HFBackend:
    """The submission's model as the timing tools need it: a Hugging Face backend, whose weights they
    reach directly (a fake has none)."""
    from benchmark.models.loading import load_backend

    submission = load_submission(slug, paths.SUBMISSIONS_DIR)
    backend = load_backend(submission, device=device, threads=threads, batch_size=batch_size, engine=engine)
    if not isinstance(backend, HFBackend):
        raise SagoError(f"{tool} needs a Hugging Face model (hub, local or packaged)")
    return backend


class PooledRun(NamedTuple):
    """What a pooled-engine tool (bench-floor, scoring-accuracy) runs."""

    backend: HFBackend
    variant_set: VariantSetLike
    profile: Profile
    plan: int
    """the plan's batch size: ``POOL`` forwards of ``--batch-size`` rows per engine call."""


def pooled_run(slug: str, set_name: str, version: str, profile: str, batch_size: int, tool: str) -> PooledRun:
    """The submission's model on the pooled engine, one thread, ``batch_size`` rows per forward, with the
    variant set and profile; a bad set or profile fails before the model loads."""
    from benchmark.models.pooled import POOLED

    variant_set, chosen = open_variant_set(set_name, version), get_profile(profile)
    backend = load_hf(slug, tool, device="cpu", threads=1, batch_size=batch_size, engine=POOLED)
    return PooledRun(backend, variant_set, chosen, backend.batch_size)


POOLED_RUN_OPTIONS = (
    click.option(
        "--model", "slug", default="google__gemma-3-270m-q4_k_m", show_default=True, help="Submission slug."
    ),
    click.option("--profile", default="bench", show_default=True),
    click.option("--set", "set_name", default=DEFAULT_SET, show_default=True),
    click.option("--version", default=DEFAULT_SET_VERSION, show_default=True),
    click.option(
        "--batch-size", type=options.BATCH_SIZE, default=32, show_default=True, help="rows per forward"
    ),
)
"""The options of a tool that runs the bench profile on the pooled engine (:func:`pooled_run`)."""


def pooled_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with :data:`POOLED_RUN_OPTIONS`."""
    for option in reversed(POOLED_RUN_OPTIONS):
        command = option(command)
    return command


def pooled_header(slug: str, profile: str, batch_size: int) -> str:
    """The start of a pooled tool's first line: what ran, and on how many threads."""
    return (
        f"model {slug}, engine pooled, profile {profile}, {batch_size} rows per forward, torch threads "
        f"{torch.get_num_threads()}; "
    )


@click.command(name="bench")
@click.option("--model", "slug", required=True, help="Submission slug to benchmark.")
@run_options
@engine_option(ENGINES)
def bench_command(
    slug: str,
    set_name: str,
    version: str,
    profile: str,
    device: str | None,
    batch_size: int | None,
    datasets: str | None,
    engine: str | None,
    threads: int | None,
) -> None:
    """Measure prompts/s, tokens/s, peak memory and the harness/bare-model wall-time ratio."""
    spec = None if engine is None else ENGINES.get(engine)  # None: the device's default, as sago evaluate
    chosen = get_profile(profile)
    subset = options.dataset_list(datasets)
    variant_set = open_variant_set(set_name, version)
    settings = EvaluateOptions(
        set_name=set_name, version=version, profile=profile, device=device, datasets=subset, engine=engine
    )
    check_options(settings, variant_set)
    backend = load_hf(slug, "sago bench", device=device, threads=threads, batch_size=batch_size, engine=spec)
    result = bench(backend, variant_set, profile=chosen, batch_size=backend.batch_size, datasets=subset)
    click.echo(f"bench {slug} ({profile}, {backend.describe()['device']}, engine {backend.engine_name})")
    click.echo("\n".join(result.lines()))
