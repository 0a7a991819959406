"""``make gpu-check``: everything to check on the day a GPU is lent, in one script (<= 8 minutes).

1. Throughput of the single-prefill engine on random-init Llama shapes of 1B and 8B parameters in
   bfloat16, with prefill and decode timed apart: prompts/s, generated tokens/s, peak memory and the
   model-FLOPs utilisation (MFU) of each phase. From the 8B numbers it prints an *estimate* (not a
   measurement) of the paper profile's wall time on this GPU.
2. SmolLM2-135M on the ``smoke`` profile on the GPU in float32 and in bfloat16, each compared with the
   committed CPU records: greedy agreement rate (identical responses) and the largest |Δ| of every
   recorded measure and of the hidden states.

3. Per shape and batch size (the given one and the one ``loading.gpu_batch_size`` plans from the free
   memory), the harness engine (``single_prefill``), the captured-graph engine (``static_graph``) and plain
   ``generate`` side by side: prompts/s, peak memory and ``ratio_to_generate`` (the engine's prompts/s over
   ``generate``'s; the harness also scores y_0 and keeps hidden states, which ``generate`` does not), and
   vLLM on the same prompts when it is importable (skipped otherwise).
4. SmolLM2 on the v2 ``evidence`` profile in float32 against the committed CPU result (``--no-evidence``
   skips it).

Everything printed is also written to ``docs/bench/gpu-check-<device>.json`` (``--out``; a dry run's to the
temporary folder).

``--dry-run`` runs the same code on the CPU in seconds: a tiny random shape for part 1, and for part 2
the tiny random model on one dataset of the bench profile in float32 and bfloat16, compared with its
own float32 run; the planned batch size from a pretend 4 MiB free; no evidence run.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd
import torch
import yaml

from benchmark import options, paths
from benchmark.entry import run_command
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.harness.collect import select_tasks
from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission
from benchmark.harness.sets import open_variant_set
from benchmark.jsonio import plain_json
from benchmark.models import prefill
from benchmark.models.engine import RawOutput, greedy_generate
from benchmark.models.loading import RowTokens, plan_gpu_batch
from benchmark.profiles import get_profile
from benchmark.results import ResultsFolder, results_dir, write_text
from benchmark.schema import BASELINE_FAMILY, DEFAULT_SET
from benchmark.tools.bench_engines import (
    DEFAULT_PEAK_FLOPS,
    SHAPES,
    Decoding,
    Measurement,
    Shape,
    Workload,
    build_model,
    matmul_params,
    measure,
    random_prompts,
    run_engine,
)
from benchmark.tools.pooled import TOOL_ENGINES

SMOLLM2 = "huggingfacetb__smollm2-135m-instruct-q4_1"
REFERENCE_VERSION = "v1"
EVIDENCE_VERSION = "v2"
"""the set version of the committed CPU evidence results (compact activations) part 4 compares with."""
COMPARED_ENGINES = ("generate", "single_prefill", "static_graph")
"""part 3's engines, the reference (plain ``generate``) first."""
DRY_RUN_FREE_BYTES = 4 * 2**20
DRY_RUN_DEVICE = "cpu-dry-run"
"""the report's device name in a dry run."""
"""the free memory the dry run pretends to have when it plans a batch size (no CUDA to ask)."""
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


@dataclass(frozen=True)
class EngineRow:
    """One engine on one shape and batch size (part 3)."""

    model: str
    engine: str
    batch_size: int
    planned: bool
    """the batch size is the one planned from free memory."""
    prompts_per_s: float
    generated_tokens_per_s: float
    peak_memory_gib: float
    ratio_to_generate: float
    """prompts/s over plain ``generate``'s at the same shape and batch size."""
    note: str = ""


@dataclass(frozen=True)
class Report:
    """Everything gpu-check measured, as printed and as written to JSON."""

    device: str
    dtype: str
    phases: list[PhaseRow]
    engines: list[EngineRow]
    planned_batch: dict[str, dict[str, int]]
    """shape -> ``loading.GpuBatch.record()``."""
    agreement: list[AgreementRow]
    estimate: str
    evidence: list[AgreementRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (NaN as null)."""
        document: dict[str, Any] = _no_nan(asdict(self))
        return document


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


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


def run_generate(
    model: object,
    prompts: Sequence[Sequence[int]],
    baselines: Sequence[Sequence[int]] | None,
    *,
    max_new_tokens: int,
    eos_ids: frozenset[int],
    pad_id: int,
) -> list[RawOutput]:
    """Plain batched ``generate`` as an engine: greedy ids only (no y_0 scoring, no hidden states)."""
    with torch.inference_mode():
        responses = greedy_generate(
            model, prompts, max_new_tokens=max_new_tokens, eos_ids=eos_ids, pad_id=pad_id
        )
    empty = np.zeros((0, 0), np.float32)
    return [RawOutput(ids, done, math.nan, math.nan, math.nan, 0, empty) for ids, done in responses]


def planned_batch(shape: Shape, workload: Workload, dtype: torch.dtype, free_bytes: int) -> dict[str, int]:
    """``loading.plan_gpu_batch`` for this shape and workload's token counts."""
    tokens = RowTokens(workload.max_prompt, workload.baseline_tokens, workload.new_tokens)
    return plan_gpu_batch(shape.config(), free_bytes, tokens, dtype).record()


def compare_engines(
    shape: Shape, workload: Workload, *, device: torch.device, dtype: torch.dtype
) -> tuple[list[EngineRow], dict[str, int]]:
    """Each of :data:`COMPARED_ENGINES` on one random model, at the workload's batch size and at the one
    planned from the memory left once the weights are loaded (``loading.plan_gpu_batch``; the dry run
    pretends :data:`DRY_RUN_FREE_BYTES` are free), each warmed up on one batch first (the captured-graph
    engine compiles and captures its decode step there) and timed over two batches. Returns the rows and
    the plan."""
    model = build_model(shape, device=device, dtype=dtype, seed=workload.seed)
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else DRY_RUN_FREE_BYTES
    plan = planned_batch(shape, workload, dtype, free)
    rows: list[EngineRow] = []
    for size in sorted({workload.batch_size, plan["batch_size"]}):
        prompts, baselines = random_prompts(replace(workload, prompts=2 * size, batch_size=size), shape.vocab)
        decoding = Decoding(size, workload.new_tokens, frozenset({shape.vocab - 1}), 0)
        timed = {name: _time_engine(name, model, prompts, baselines, decoding) for name in COMPARED_ENGINES}
        reference = timed["generate"].prompts_per_s
        rows += [
            EngineRow(
                shape.name,
                name,
                size,
                size == plan["batch_size"],
                m.prompts_per_s,
                m.generated_tokens_per_s,
                m.peak_memory_gib,
                m.prompts_per_s / reference,
            )
            for name, m in timed.items()
        ]
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows, plan


def _time_engine(
    name: str,
    model: Any,
    prompts: list[list[int]],
    baselines: list[list[int]] | None,
    decoding: Decoding,
) -> Measurement:
    """One engine over every prompt after a one-batch warm-up."""
    engine = run_generate if name == "generate" else None
    size = decoding.batch_size
    first = None if baselines is None else baselines[:size]
    run_engine(engine or TOOL_ENGINES.get(name).run, model, prompts[:size], first, decoding)
    timed = measure(name, name, model, prompts, baselines, decoding, peak_flops=1.0, engine=engine)
    return timed.measurement


def time_vllm(shape: Shape, workload: Workload, *, dtype: torch.dtype, planned: int) -> list[EngineRow]:
    """vLLM's greedy generation of the same prompts on the same random weights (saved to a scratch folder),
    when vLLM is importable; otherwise one row saying it was skipped. Its ``ratio_to_generate`` is NaN:
    vLLM schedules its own batches, so it is compared by prompts/s alone."""
    if importlib.util.find_spec("vllm") is None:
        return [
            EngineRow(
                shape.name,
                "vllm",
                planned,
                True,
                math.nan,
                math.nan,
                math.nan,
                math.nan,
                "vllm not importable: skipped",
            )
        ]
    import vllm  # optional: only on a machine that has it

    prompts, _ = random_prompts(workload, shape.vocab)
    scratch = Path(tempfile.mkdtemp(prefix="sago-vllm-"))
    try:
        build_model(shape, device=torch.device("cpu"), dtype=dtype, seed=workload.seed).save_pretrained(
            scratch
        )
        llm = vllm.LLM(model=str(scratch), skip_tokenizer_init=True, dtype=str(dtype).removeprefix("torch."))
        params = vllm.SamplingParams(temperature=0.0, max_tokens=workload.new_tokens, ignore_eos=True)
        llm.generate([{"prompt_token_ids": p} for p in prompts[:planned]], params)  # warm-up
        began = time.perf_counter()
        outputs = llm.generate([{"prompt_token_ids": p} for p in prompts], params)
        seconds = time.perf_counter() - began
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    generated = sum(len(o.outputs[0].token_ids) for o in outputs)
    peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else math.nan
    return [
        EngineRow(
            shape.name, "vllm", planned, True, len(prompts) / seconds, generated / seconds, peak, math.nan
        )
    ]


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
    version: str = REFERENCE_VERSION,
    activations: str = "full",
    batch_size: int | None = 8,
) -> Path:
    """Evaluate ``slug`` in ``dtype`` on ``device`` into ``scratch``; returns its results folder."""
    source_root = source_root or paths.SUBMISSIONS_DIR
    spec = yaml.safe_load((source_root / slug / "submission.yaml").read_text(encoding="utf-8"))
    spec["dtype"] = dtype
    root = scratch / dtype
    (root / slug).mkdir(parents=True)
    (root / slug / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    # compared with the committed CPU records of ``version`` (v1 smoke: full activations; v2: compact)
    options = EvaluateOptions(
        version=version,
        profile=profile,
        device=device,
        datasets=datasets,
        batch_size=batch_size,
        force=True,
        progress=False,
        activations=activations,
    )
    evaluate_submission(slug, options, root=root)
    return results_dir(slug, DEFAULT_SET, version, root, profile=profile)


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


def format_table(report: Report) -> str:
    """The tables gpu-check prints."""
    phases, estimate = report.phases, report.estimate
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
    for r in [*report.agreement, *report.evidence]:
        lines.append(
            f"{r.dtype:<15} {r.rows:>5} {r.greedy_agreement:>11.1%} {r.seconds:>8.1f} "
            + " ".join(f"{r.max_delta[n]:>20.3g}" for n in names)
        )
    lines.append(estimate)
    lines += ["", *engine_lines(report)]
    return "\n".join(lines)


def engine_lines(report: Report) -> list[str]:
    """Part 3's table: the engines side by side per shape and batch size, then the planned batches."""
    lines = [
        f"{'engines':<10} {'batch':>5} {'planned':>7} {'engine':<15} {'prompts/s':>9} {'gen tok/s':>10} "
        f"{'peak GiB':>8} {'ratio_to_generate':>17}"
    ]
    for e in report.engines:
        lines.append(
            f"{e.model:<10} {e.batch_size:>5} {'yes' if e.planned else 'no':>7} {e.engine:<15} "
            f"{_na(e.prompts_per_s, '9.2f')} {_na(e.generated_tokens_per_s, '10.1f')} "
            f"{_na(e.peak_memory_gib, '8.2f')} {_na(e.ratio_to_generate, '17.2f')} {e.note}".rstrip()
        )
    for shape, plan in report.planned_batch.items():
        lines.append(
            f"planned batch {shape}: {plan['batch_size']} ({plan['free_bytes'] / 2**30:.1f} GiB free, "
            f"{plan['row_bytes'] / 2**20:.1f} MiB per row)"
        )
    return lines


def _na(value: float, spec: str) -> str:
    width = int(spec.split(".")[0])
    return "n/a".rjust(width) if math.isnan(value) else format(value, spec)


def gpu_check(dry_run: bool, peak_flops: float, batch_size: int, *, evidence: bool = True) -> Report:
    """Run every part; returns what they measured."""
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
    engines: list[EngineRow] = []
    plans: dict[str, dict[str, int]] = {}
    for shape in shapes:
        rows, plans[shape.name] = compare_engines(shape, workload, device=device, dtype=dtype)
        engines += rows + time_vllm(shape, workload, dtype=dtype, planned=plans[shape.name]["batch_size"])
    tasks = select_tasks(open_variant_set(DEFAULT_SET, REFERENCE_VERSION), get_profile("paper"), None)
    paper = len(tasks) + sum(t.family == BASELINE_FAMILY for t in tasks)  # + the rerun controls
    estimate = (
        f"ESTIMATE (extrapolated from the {phases[-1].model} row, not measured): the paper profile's "
        f"{paper} requests would take {paper_estimate(phases[-1], paper) / 60:.1f} min at that rate"
    )
    scratch = Path(tempfile.mkdtemp(prefix="sago-gpu-check-"))
    try:
        rows_agree = _dry_agreement(scratch) if dry_run else _smollm2_agreement(scratch)
        rows_evidence = _evidence_agreement(scratch) if evidence and not dry_run else []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    name = DRY_RUN_DEVICE if dry_run else device_slug(torch.cuda.get_device_name(device))
    return Report(
        name, str(dtype).removeprefix("torch."), phases, engines, plans, rows_agree, estimate, rows_evidence
    )


def device_slug(name: str) -> str:
    """A device's name as a file name part.

    >>> device_slug("NVIDIA H200")
    'nvidia-h200'
    """
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def default_out(report: Report) -> Path:
    """``docs/bench/gpu-check-<device>.json``; a dry run's report goes to the temporary folder (its numbers
    are the tiny CPU shape's, nothing to keep beside a GPU's)."""
    name = f"gpu-check-{report.device}.json"
    return (
        Path(tempfile.gettempdir()) / name
        if report.device == DRY_RUN_DEVICE
        else paths.REPO_ROOT / "docs" / "bench" / name
    )


def _evidence_agreement(scratch: Path) -> list[AgreementRow]:
    """SmolLM2 in float32 on the v2 evidence profile against the committed CPU result (compact states)."""
    committed = results_dir(SMOLLM2, DEFAULT_SET, EVIDENCE_VERSION)
    began = time.perf_counter()
    fresh = run_smollm2(
        "float32",
        device="cuda",
        profile="evidence",
        datasets=None,
        scratch=scratch / "evidence",
        version=EVIDENCE_VERSION,
        activations="compact",
        batch_size=None,
    )
    return [agreement(committed, fresh, "float32 evidence", time.perf_counter() - began)]


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
        folders[dtype] = results_dir(SMOLLM2, DEFAULT_SET, REFERENCE_VERSION, root, profile="bench")
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
    help="prompts per batch on the GPU shapes (the planned batch size is measured too)",
)
@click.option(
    "--evidence/--no-evidence",
    default=True,
    show_default=True,
    help="SmolLM2 on the v2 evidence profile vs the committed CPU result (GPU only)",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON report [default: docs/bench/gpu-check-<device>.json]",
)
def main_command(dry_run: bool, peak_flops: float, batch_size: int, evidence: bool, out: Path | None) -> None:
    """Random-init 1B/8B throughput with prefill/decode MFU, the engines side by side, then SmolLM2 on the
    GPU vs the CPU records; prints the tables and writes them as JSON."""
    if out is not None:
        refuse_tracked(out, "--out", own=_own_report, writes="docs/bench/gpu-check-<device>.json")
    report = gpu_check(dry_run, peak_flops, batch_size, evidence=evidence)
    click.echo(format_table(report))
    path = write_text(out or default_out(report), plain_json(report.to_json()))  # a report, not a document
    click.echo(f"wrote {path}")


def _own_report(tracked: str) -> bool:
    return re.fullmatch(r"docs/bench/gpu-check-[a-z0-9-]+\.json", tracked) is not None


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return run_command(main_command, argv, "python -m benchmark.tools.gpu_check")


if __name__ == "__main__":
    raise SystemExit(main())
