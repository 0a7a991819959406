"""``make gpu-check``: everything to check on the day a GPU is lent, in one script (<= 8 minutes).

1. Throughput of the single-prefill engine on random-init Llama shapes of 1B and 8B parameters in
   bfloat16, with prefill and decode timed apart: prompts/s, generated tokens/s, peak memory and the
   model-FLOPs utilisation (MFU) of each phase. From the 8B numbers it prints an *estimate* (not a
   measurement) of the paper profile's wall time on this GPU.
2. SmolLM2-135M on the ``smoke`` profile on the GPU in float32 and in bfloat16, each compared with the
   committed CPU records: greedy agreement rate (identical responses) and the largest |Δ| of every
   recorded measure and of the hidden states.

``--dry-run`` runs the same code on the CPU in seconds: a tiny random shape for part 1, and for part 2
the tiny random model on one dataset of the bench profile in float32 and bfloat16, compared with its
own float32 run.
"""

from __future__ import annotations

import copy
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pandas as pd
import torch
import yaml

from benchmark import options, paths
from benchmark.entry import run_command
from benchmark.errors import SagoError
from benchmark.harness.collect import select_tasks
from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission
from benchmark.harness.sets import open_variant_set
from benchmark.models import prefill
from benchmark.profiles import get_profile
from benchmark.results import ResultsFolder, results_dir
from benchmark.schema import BASELINE_FAMILY, DEFAULT_SET
from benchmark.tools.bench_engines import (
    DEFAULT_PEAK_FLOPS,
    SHAPES,
    Shape,
    Workload,
    build_model,
    matmul_params,
    random_prompts,
)

SMOLLM2 = "huggingfacetb__smollm2-135m-instruct-q4_1"
REFERENCE_VERSION = "v1"
"""The set version of the committed CPU smoke results (full activations) the GPU run is compared with."""
CONFIDENCE_COLUMNS = ("logprob_sum", "logprob_mean", "entropy_mean")
"""the record columns compared between the GPU run and the committed CPU records (with the states)."""


@dataclass(frozen=True)
class PhaseRow:
    """Throughput of one shape, prefill and decode timed apart."""

    model: str
    batch_size: int
    prompts: int
    prompts_per_s: float
    generated_tokens_per_s: float
    peak_memory_gib: float
    prefill_mfu: float
    decode_mfu: float
    seconds: float


@dataclass(frozen=True)
class AgreementRow:
    """A GPU run of SmolLM2 against the committed CPU records."""

    dtype: str
    rows: int
    greedy_agreement: float
    """share of rows whose response is identical."""
    max_delta: dict[str, float]
    """largest |Δ| per measure (``hidden``: over every stored activation)."""
    seconds: float


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_phases(
    shape: Shape, workload: Workload, *, device: torch.device, dtype: torch.dtype, peak_flops: float
) -> PhaseRow:
    """Prefill (with y_0 scoring) and greedy decoding timed apart on a random model of ``shape``."""
    model = build_model(shape, device=device, dtype=dtype, seed=workload.seed)
    prompts, baselines = random_prompts(workload, shape.vocab)
    assert baselines is not None
    eos = frozenset({shape.vocab - 1})
    size = workload.batch_size
    prefill.run_batch_single_prefill(
        model, prompts[:size], baselines[:size], max_new_tokens=2, eos_ids=eos, pad_id=0
    )  # warm-up
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    flops_per_token = 2 * matmul_params(model)
    read_seconds = decode_seconds = 0.0
    read_tokens = generated = 0
    with torch.inference_mode():
        for start in range(0, len(prompts), size):
            chunk, tails = prompts[start : start + size], baselines[start : start + size]
            _sync(device)
            began = time.perf_counter()
            state = prefill.prefill_batch(model, chunk, 0)
            prefill.score_baselines(model, state, copy.deepcopy(state.cache), tails, 0)
            _sync(device)
            middle = time.perf_counter()
            decoded = prefill.greedy_decode(model, state, max_new_tokens=workload.new_tokens, eos_ids=eos)
            _sync(device)
            read_seconds += middle - began
            decode_seconds += time.perf_counter() - middle
            read_tokens += sum(map(len, chunk)) + sum(map(len, tails))
            generated += sum(map(len, decoded.response_ids))
    total = read_seconds + decode_seconds
    cuda = device.type == "cuda"
    row = PhaseRow(
        shape.name,
        size,
        len(prompts),
        len(prompts) / total,
        generated / decode_seconds,
        torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan,
        flops_per_token * read_tokens / read_seconds / peak_flops if cuda else math.nan,
        flops_per_token * generated / decode_seconds / peak_flops if cuda else math.nan,
        total,
    )
    del model
    if cuda:
        torch.cuda.empty_cache()
    return row


def paper_estimate(row: PhaseRow, prompts: int) -> float:
    """Seconds for ``prompts`` requests at the measured prompts/s (an extrapolation, not a run)."""
    return prompts / row.prompts_per_s


def run_smollm2(
    dtype: str,
    *,
    device: str,
    profile: str,
    datasets: tuple[str, ...] | None,
    scratch: Path,
    slug: str = SMOLLM2,
    source_root: Path | None = None,
) -> Path:
    """Evaluate ``slug`` in ``dtype`` on ``device`` into ``scratch``; returns its results folder."""
    source_root = source_root or paths.SUBMISSIONS_DIR
    spec = yaml.safe_load((source_root / slug / "submission.yaml").read_text(encoding="utf-8"))
    spec["dtype"] = dtype
    root = scratch / dtype
    (root / slug).mkdir(parents=True)
    (root / slug / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    # compares with the committed CPU smoke records of v1 (full activations)
    options = EvaluateOptions(
        version=REFERENCE_VERSION,
        profile=profile,
        device=device,
        datasets=datasets,
        batch_size=8,
        force=True,
        progress=False,
        activations="full",
    )
    evaluate_submission(slug, options, root=root)
    return results_dir(slug, DEFAULT_SET, REFERENCE_VERSION, root)


def agreement(reference: Path, other: Path, dtype: str, seconds: float) -> AgreementRow:
    """Compare two result folders of the same profile row by row."""
    from safetensors.numpy import load_file

    def records(folder: Path) -> pd.DataFrame:
        frames = [pd.read_parquet(p) for p in ResultsFolder(folder).record_files()]
        return (
            pd.concat(frames, ignore_index=True).set_index(["dataset", "item_id", "variant_id"]).sort_index()
        )

    ref, got = records(reference), records(other)
    ref = ref.loc[got.index]  # a CPU record set may cover more datasets than the GPU run
    deltas = {
        m: float(np.nanmax(np.abs(ref[m].to_numpy(float) - got[m].to_numpy(float)), initial=0.0))
        for m in CONFIDENCE_COLUMNS
    }
    hidden = 0.0
    for path in ResultsFolder(other).activation_files():
        mine, theirs = (
            load_file(str(path)),
            load_file(str(ResultsFolder(reference).activations_dir / path.name)),
        )
        for key, value in mine.items():
            hidden = max(
                hidden, float(np.abs(value.astype(np.float32) - theirs[key].astype(np.float32)).max())
            )
    deltas["hidden"] = hidden
    same = float((ref["response"] == got["response"]).mean())
    return AgreementRow(dtype, len(got), same, deltas, seconds)


def format_table(phases: Sequence[PhaseRow], rows: Sequence[AgreementRow], estimate: str) -> str:
    """The one table gpu-check prints."""
    header = (
        f"{'model':<10} {'batch':>5} {'prompts':>7} {'prompts/s':>9} {'gen tok/s':>10} {'peak GiB':>8} "
        f"{'prefill MFU':>11} {'decode MFU':>10}"
    )
    lines = [header]
    for p in phases:
        lines.append(
            f"{p.model:<10} {p.batch_size:>5} {p.prompts:>7} {p.prompts_per_s:>9.2f} "
            f"{p.generated_tokens_per_s:>10.1f} {_na(p.peak_memory_gib, '8.2f')} "
            f"{_na(p.prefill_mfu, '11.1%')} {_na(p.decode_mfu, '10.1%')}"
        )
    lines.append("")
    names = [*CONFIDENCE_COLUMNS, "hidden"]
    lines.append(
        f"{'SmolLM2 vs CPU':<15} {'rows':>5} {'greedy same':>11} {'seconds':>8} "
        + " ".join(f"{'max|d| ' + n:>20}" for n in names)
    )
    for r in rows:
        lines.append(
            f"{r.dtype:<15} {r.rows:>5} {r.greedy_agreement:>11.1%} {r.seconds:>8.1f} "
            + " ".join(f"{r.max_delta[n]:>20.3g}" for n in names)
        )
    lines.append(estimate)
    return "\n".join(lines)


def _na(value: float, spec: str) -> str:
    width = int(spec.split(".")[0])
    return "n/a".rjust(width) if math.isnan(value) else format(value, spec)


def gpu_check(dry_run: bool, peak_flops: float, batch_size: int) -> str:
    """Run both parts and return the table."""
    if not dry_run and not torch.cuda.is_available():
        raise SagoError("gpu-check needs a CUDA device; on a CPU run it with ARGS=--dry-run")
    device = torch.device("cpu" if dry_run else "cuda")
    if dry_run:
        torch.set_num_threads(1)
        shapes, dtype = [SHAPES["tiny"]], torch.float32
        workload = Workload(8, 4, 40, 120, 8, 8, seed=0)
    else:
        shapes, dtype = [SHAPES["llama-1b"], SHAPES["llama-8b"]], torch.bfloat16
        workload = Workload(4 * batch_size, batch_size, 40, 120, 100, 100, seed=0)
    phases = [bench_phases(s, workload, device=device, dtype=dtype, peak_flops=peak_flops) for s in shapes]
    tasks = select_tasks(open_variant_set(DEFAULT_SET, REFERENCE_VERSION), get_profile("paper"), None)
    paper = len(tasks) + sum(t.family == BASELINE_FAMILY for t in tasks)  # + the rerun controls
    estimate = (
        f"ESTIMATE (extrapolated from the {phases[-1].model} row, not measured): the paper profile's "
        f"{paper} requests would take {paper_estimate(phases[-1], paper) / 60:.1f} min at that rate"
    )
    scratch = Path(tempfile.mkdtemp(prefix="sago-gpu-check-"))
    try:
        rows = _dry_agreement(scratch) if dry_run else _smollm2_agreement(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return format_table(phases, rows, estimate)


def _smollm2_agreement(scratch: Path) -> list[AgreementRow]:
    committed = results_dir(SMOLLM2, DEFAULT_SET, REFERENCE_VERSION)
    rows = []
    for dtype in ("float32", "bfloat16"):
        began = time.perf_counter()
        fresh = run_smollm2(dtype, device="cuda", profile="smoke", datasets=None, scratch=scratch)
        rows.append(agreement(committed, fresh, dtype, time.perf_counter() - began))
    return rows


def _dry_agreement(scratch: Path) -> list[AgreementRow]:
    """The comparison code path on the CPU: the tiny model in float32 (reference) and bfloat16."""
    from benchmark.testing import tiny_backend

    dataset = open_variant_set(DEFAULT_SET, REFERENCE_VERSION).datasets[:1]
    folders, seconds = {}, {}
    for dtype, torch_dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        backend = tiny_backend(batch_size=4)
        backend.model.to(torch_dtype)
        root = scratch / dtype
        began = time.perf_counter()
        evaluate_submission(
            SMOLLM2,
            EvaluateOptions(
                version=REFERENCE_VERSION, profile="bench", datasets=dataset, force=True, progress=False
            ),
            root=_copy_submission(root),
            backend=backend,
        )
        seconds[dtype] = time.perf_counter() - began
        folders[dtype] = results_dir(SMOLLM2, DEFAULT_SET, REFERENCE_VERSION, root)
    return [agreement(folders["float32"], folders[d], d, seconds[d]) for d in folders]


def _copy_submission(root: Path) -> Path:
    (root / SMOLLM2).mkdir(parents=True)
    shutil.copy2(paths.SUBMISSIONS_DIR / SMOLLM2 / "submission.yaml", root / SMOLLM2 / "submission.yaml")
    return root


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dry-run", is_flag=True, help="CPU, tiny model, seconds: checks every code path.")
@click.option(
    "--peak-flops",
    type=options.FLOPS,
    default=DEFAULT_PEAK_FLOPS,
    show_default=True,
    help="chip's dense bf16 FLOP/s",
)
@click.option(
    "--batch-size",
    type=options.BATCH_SIZE,
    default=64,
    show_default=True,
    help="prompts per batch on the GPU shapes",
)
def main_command(dry_run: bool, peak_flops: float, batch_size: int) -> None:
    """Random-init 1B/8B throughput with prefill/decode MFU, then SmolLM2 on the GPU vs the CPU records."""
    click.echo(gpu_check(dry_run, peak_flops, batch_size))


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return run_command(main_command, argv, "python -m benchmark.tools.gpu_check")


if __name__ == "__main__":
    raise SystemExit(main())
