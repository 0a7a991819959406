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

import importlib.util
import math
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import click
import numpy as np
import pandas as pd
import torch
import yaml
from transformers import PreTrainedModel

from benchmark import options, paths
from benchmark.gitrepo import refuse_tracked
from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission
from benchmark.harness.sets import open_variant_set
from benchmark.models import prefill
from benchmark.models.engine import Engine, run_batch_two_pass
from benchmark.models.hf import ENGINES
from benchmark.models.loading import RowTokens, plan_gpu_batch
from benchmark.profiles import get_profile
from benchmark.results import ResultsFolder, results_dir
from benchmark.schema import DEFAULT_SET
from benchmark.tools import tool_main
from benchmark.tools.bench_engines import (
    DRY_RUN,
    Shape,
    Workload,
    build_model,
    matmul_params,
    on_random_models,
    peak_flops_option,
    random_prompts,
    setting,
    time_engines,
)
from benchmark.tools.timing import (
    Column,
    Laps,
    Timed,
    profile_tasks,
    report_option,
    table,
    timed,
    write_report,
)

SMOLLM2 = "huggingfacetb__smollm2-135m-instruct-q4_1"
REFERENCE_VERSION = "v1"
"""The set version of the committed CPU smoke results (full activations) the GPU run is compared with."""
EVIDENCE_VERSION = "v2"
"""the set version of the committed CPU evidence results (compact activations) part 4 compares with."""
COMPARED_ENGINES = ("generate", "single_prefill", "static_graph")
"""part 3's engines, the reference (plain ``generate``) first."""
DRY_RUN_FREE_BYTES = 4 * 2**20
"""the free memory the dry run pretends to have when it plans a batch size (no CUDA to ask)."""
DRY_RUN_DEVICE = "cpu-dry-run"
CONFIDENCE_COLUMNS = ("logprob_sum", "logprob_mean", "entropy_mean")
"""the record columns compared between the GPU run and the committed CPU records (with the states)."""


@dataclass(frozen=True)
class PhaseRow:
    """Throughput of one shape, prefill and decode timed apart."""

    model: str
    batch_size: int
    prompts: int
    prompts_per_s: float
    """prompts over the prefill and decode seconds together."""
    generated_tokens_per_s: float
    """over the decode seconds alone."""
    peak_memory_gib: float
    prefill_mfu: float
    """model-FLOPs utilisation of the prompt reads and y_0 scoring (NaN off CUDA)."""
    decode_mfu: float
    """of the greedy decode steps (NaN off CUDA)."""
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


def time_phases(model: PreTrainedModel, shape: Shape, workload: Workload, peak_flops: float) -> PhaseRow:
    """Prefill (with y_0 scoring) and greedy decoding timed apart on a random model of ``shape``."""
    prompts, baselines = random_prompts(workload, shape.vocab)
    assert baselines is not None
    eos, size, laps = frozenset({shape.vocab - 1}), workload.batch_size, Laps(model.device)

    def run() -> int:
        generated = 0
        with torch.inference_mode():
            for start in range(0, len(prompts), size):
                with laps.lap("prefill"):
                    state = prefill.prefill_batch(model, prompts[start : start + size], 0)
                    tails = baselines[start : start + size]
                    prefill.score_baselines(model, state, tails, 0)
                with laps.lap("decode"):
                    decoded = prefill.greedy_decode(
                        model, state, max_new_tokens=workload.new_tokens, eos_ids=eos
                    )
                generated += sum(len(response.ids) for response in decoded)
        return generated

    clock = timed(
        run,
        warm_up=lambda: prefill.run_batch_single_prefill(
            model, prompts[:size], baselines[:size], max_new_tokens=2, eos_ids=eos, pad_id=0
        ),
        device=model.device,
    )
    generated, read, decode = clock.value, laps.seconds["prefill"], laps.seconds["decode"]
    read_tokens = sum(map(len, prompts)) + sum(map(len, baselines))
    flops = 2 * matmul_params(model) / peak_flops if model.device.type == "cuda" else math.nan
    return PhaseRow(
        shape.name,
        size,
        len(prompts),
        len(prompts) / (read + decode),
        generated / decode,
        clock.timing.peak_memory_gib,
        flops * read_tokens / read,
        flops * generated / decode,
        read + decode,
    )


GENERATE_ONLY: Engine = partial(run_batch_two_pass, read=False)
"""Plain batched ``generate`` as an engine: greedy ids only (no y_0 scoring, no hidden states)."""


def compare_engines(
    model: PreTrainedModel, shape: Shape, workload: Workload
) -> tuple[list[EngineRow], dict[str, int]]:
    """Each of :data:`COMPARED_ENGINES` on a random model of ``shape``, at the workload's batch size and
    at the one planned from the memory left once the weights are loaded (``loading.plan_gpu_batch``; the
    dry run pretends :data:`DRY_RUN_FREE_BYTES` are free), each warmed up on one batch first (the
    captured-graph engine compiles and captures its decode step there) and timed over two batches.
    Returns the rows and the plan."""
    cuda = model.device.type == "cuda"
    free = torch.cuda.mem_get_info(model.device)[0] if cuda else DRY_RUN_FREE_BYTES
    tokens = RowTokens(workload.max_prompt, workload.baseline_tokens, workload.new_tokens)
    plan = plan_gpu_batch(shape.config(), free, tokens, model.dtype).record()
    rows: list[EngineRow] = []
    runs = {"generate": GENERATE_ONLY, **{name: ENGINES.get(name).run for name in COMPARED_ENGINES[1:]}}
    for size in sorted({workload.batch_size, plan["batch_size"]}):
        sized = replace(workload, prompts=2 * size, batch_size=size)
        measured = {m.engine: m for m in time_engines(model, shape, sized, runs, peak_flops=1.0)}
        reference = measured["generate"].prompts_per_s
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
            for name, m in measured.items()
        ]
    return rows, plan


def time_vllm(shape: Shape, workload: Workload, *, dtype: torch.dtype, planned: int) -> list[EngineRow]:
    """vLLM's greedy generation of the same prompts on the same random weights (saved to a scratch folder),
    when vLLM is importable; otherwise one row saying it was skipped. Its ``ratio_to_generate`` is NaN:
    vLLM schedules its own batches, so it is compared by prompts/s alone."""
    if importlib.util.find_spec("vllm") is None:
        nan = math.nan
        return [
            EngineRow(shape.name, "vllm", planned, True, nan, nan, nan, nan, "vllm not importable: skipped")
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
        clock = timed(
            lambda: llm.generate([{"prompt_token_ids": p} for p in prompts], params),
            warm_up=lambda: llm.generate([{"prompt_token_ids": p} for p in prompts[:planned]], params),
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    generated, seconds = sum(len(o.outputs[0].token_ids) for o in clock.value), clock.timing.seconds
    # no peak: vLLM reserves its own pool (gpu_memory_utilization), often in an engine process, so this
    # process's torch counter would show the previous model's peak, not vLLM's
    rates = (len(prompts) / seconds, generated / seconds, math.nan, math.nan)
    return [EngineRow(shape.name, "vllm", planned, True, *rates, "peak memory: vLLM's own, not measured")]


def run_smollm2(
    dtype: str,
    *,
    profile: str,
    scratch: Path,
    version: str = REFERENCE_VERSION,
    activations: str = "full",
    batch_size: int | None = 8,
) -> Path:
    """Evaluate SmolLM2 in ``dtype`` on the GPU into ``scratch``; returns its results folder (compared with
    the committed CPU records of ``version``: v1 smoke with full activations, v2 with compact ones)."""
    spec = yaml.safe_load((paths.SUBMISSIONS_DIR / SMOLLM2 / "submission.yaml").read_text(encoding="utf-8"))
    root = scratch / dtype
    (root / SMOLLM2).mkdir(parents=True)
    (root / SMOLLM2 / "submission.yaml").write_text(
        yaml.safe_dump(spec | {"dtype": dtype}, sort_keys=False), encoding="utf-8"
    )
    options = EvaluateOptions(
        version=version,
        profile=profile,
        device="cuda",
        batch_size=batch_size,
        force=True,
        progress=False,
        activations=activations,
    )
    evaluate_submission(SMOLLM2, options, root=root)
    return results_dir(SMOLLM2, DEFAULT_SET, version, root, profile=profile)


def agreement(reference: Path, run: Timed[Path], dtype: str) -> AgreementRow:
    """Compare a timed run's result folder with another of the same profile, row by row."""
    other = run.value
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
        theirs = load_file(str(ResultsFolder(reference).activations_dir / path.name))
        for key, value in load_file(str(path)).items():
            hidden = max(
                hidden, float(np.abs(value.astype(np.float32) - theirs[key].astype(np.float32)).max())
            )
    deltas["hidden"] = hidden
    same = float((ref["response"] == got["response"]).mean())
    return AgreementRow(dtype, len(got), same, deltas, run.timing.seconds)


def format_table(report: Report) -> str:
    """The tables gpu-check prints: part 1, parts 2 and 4, part 3 with the planned batches."""
    phases: list[Column] = [
        ("model", "<10", lambda p: p.model),
        ("batch", ">5", lambda p: p.batch_size),
        ("prompts", ">7", lambda p: p.prompts),
        ("prompts/s", ">9.2f", lambda p: p.prompts_per_s),
        ("gen tok/s", ">10.1f", lambda p: p.generated_tokens_per_s),
        ("peak GiB", ">8.2f", lambda p: p.peak_memory_gib),
        ("prefill MFU", ">11.1%", lambda p: p.prefill_mfu),
        ("decode MFU", ">10.1%", lambda p: p.decode_mfu),
    ]
    agreement: list[Column] = [
        ("SmolLM2 vs CPU", "<15", lambda r: r.dtype),
        ("rows", ">5", lambda r: r.rows),
        ("greedy same", ">11.1%", lambda r: r.greedy_agreement),
        ("seconds", ">8.1f", lambda r: r.seconds),
        *((f"max|d| {n}", ">20.3g", lambda r, n=n: r.max_delta[n]) for n in [*CONFIDENCE_COLUMNS, "hidden"]),
    ]
    engines: list[Column] = [
        ("engines", "<10", lambda e: e.model),
        ("batch", ">5", lambda e: e.batch_size),
        ("planned", ">7", lambda e: "yes" if e.planned else "no"),
        ("engine", "<15", lambda e: e.engine),
        ("prompts/s", ">9.2f", lambda e: e.prompts_per_s),
        ("gen tok/s", ">10.1f", lambda e: e.generated_tokens_per_s),
        ("peak GiB", ">8.2f", lambda e: e.peak_memory_gib),
        ("ratio_to_generate", ">17.2f", lambda e: e.ratio_to_generate),
        ("", "", lambda e: e.note),
    ]
    return "\n".join(
        [
            *table(phases, report.phases, nan="n/a"),
            "",
            *table(agreement, [*report.agreement, *report.evidence]),
            report.estimate,
            "",
            *table(engines, report.engines, nan="n/a"),
            *(
                f"planned batch {shape}: {plan['batch_size']} ({plan['free_bytes'] / 2**30:.1f} GiB free, "
                f"{plan['row_bytes'] / 2**20:.1f} MiB per row)"
                for shape, plan in report.planned_batch.items()
            ),
        ]
    )


def gpu_check(dry_run: bool, peak_flops: float, batch_size: int, *, evidence: bool = True) -> Report:
    """Run every part; returns what they measured."""
    refusal = "gpu-check needs a CUDA device; on a CPU run it with ARGS=--dry-run"
    chosen = setting(dry_run, ["llama-1b", "llama-8b"], refusal)
    workload = DRY_RUN if dry_run else Workload(4 * batch_size, batch_size, 40, 120, 100, 100, seed=0)
    phases = on_random_models(
        chosen, workload.seed, lambda m, shape: time_phases(m, shape, workload, peak_flops)
    )
    compared = on_random_models(chosen, workload.seed, lambda m, shape: compare_engines(m, shape, workload))
    plans = {shape.name: plan for shape, (_, plan) in zip(chosen.shapes, compared, strict=True)}
    engines = [
        row
        for shape, (rows, plan) in zip(chosen.shapes, compared, strict=True)
        for row in rows + time_vllm(shape, workload, dtype=chosen.dtype, planned=plan["batch_size"])
    ]
    # every request of the paper profile, the rerun controls included
    paper = len(profile_tasks(open_variant_set(DEFAULT_SET, REFERENCE_VERSION), get_profile("paper"), None))
    estimate = (
        f"ESTIMATE (extrapolated from the {phases[-1].model} row, not measured): the paper profile's "
        f"{paper} requests would take {paper / phases[-1].prompts_per_s / 60:.1f} min at that rate"
    )
    rows_agree, rows_evidence = _agreements(dry_run, evidence)
    name = DRY_RUN_DEVICE if dry_run else device_slug(torch.cuda.get_device_name(chosen.device))
    dtype = str(chosen.dtype).removeprefix("torch.")
    return Report(name, dtype, phases, engines, plans, rows_agree, estimate, rows_evidence)


def device_slug(name: str) -> str:
    """A device's name as a file name part.

    >>> device_slug("NVIDIA H200")
    'nvidia-h200'
    """
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def _agreements(dry_run: bool, evidence: bool) -> tuple[list[AgreementRow], list[AgreementRow]]:
    """Parts 2 and 4 (the module docstring says what each compares), in a scratch folder."""
    scratch = Path(tempfile.mkdtemp(prefix="sago-gpu-check-"))
    try:
        if dry_run:
            dtypes = (("float32", torch.float32), ("bfloat16", torch.bfloat16))
            runs = {name: timed(partial(_tiny_run, scratch / name, dtype)) for name, dtype in dtypes}
            return [agreement(runs["float32"].value, run, name) for name, run in runs.items()], []
        smoke = results_dir(SMOLLM2, DEFAULT_SET, REFERENCE_VERSION)
        rows = [
            agreement(smoke, timed(partial(run_smollm2, dtype, profile="smoke", scratch=scratch)), dtype)
            for dtype in ("float32", "bfloat16")
        ]
        if not evidence:
            return rows, []
        run = partial(run_smollm2, "float32", profile="evidence", scratch=scratch / "evidence")
        fresh = timed(partial(run, version=EVIDENCE_VERSION, activations="compact", batch_size=None))
        return rows, [
            agreement(results_dir(SMOLLM2, DEFAULT_SET, EVIDENCE_VERSION), fresh, "float32 evidence")
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _tiny_run(root: Path, dtype: torch.dtype) -> Path:
    """The tiny random model in ``dtype`` on one dataset of the bench profile, into ``root``."""
    from benchmark.testing import tiny_backend

    backend = tiny_backend(batch_size=4)
    backend.model.to(dtype)
    (root / SMOLLM2).mkdir(parents=True)
    shutil.copy2(paths.SUBMISSIONS_DIR / SMOLLM2 / "submission.yaml", root / SMOLLM2 / "submission.yaml")
    datasets = open_variant_set(DEFAULT_SET, REFERENCE_VERSION).datasets[:1]
    options = EvaluateOptions(
        version=REFERENCE_VERSION, profile="bench", datasets=datasets, force=True, progress=False
    )
    evaluate_submission(SMOLLM2, options, root=root, backend=backend)
    return results_dir(SMOLLM2, DEFAULT_SET, REFERENCE_VERSION, root, profile="bench")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dry-run", is_flag=True, help="CPU, tiny model, seconds: checks every code path.")
@peak_flops_option
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
@report_option("--out", "JSON report [default: docs/bench/gpu-check-<device>.json]")
def main_command(
    dry_run: bool, peak_flops: float, batch_size: int, evidence: bool, report: Path | None
) -> None:
    """Random-init 1B/8B throughput with prefill/decode MFU, the engines side by side, then SmolLM2 on the
    GPU vs the CPU records; prints the tables and writes them as JSON."""
    if report is not None:
        refuse_tracked(report, "--out", own=_own_report, writes="docs/bench/gpu-check-<device>.json")
    measured = gpu_check(dry_run, peak_flops, batch_size, evidence=evidence)
    click.echo(format_table(measured))
    # a dry run's numbers are the tiny CPU shape's, nothing to keep beside a GPU's: the temp folder
    folder = Path(tempfile.gettempdir()) if dry_run else paths.REPO_ROOT / "docs" / "bench"
    click.echo(
        f"wrote {write_report(report or folder / f'gpu-check-{measured.device}.json', asdict(measured))}"
    )


def _own_report(tracked: str) -> bool:
    return re.fullmatch(r"docs/bench/gpu-check-[a-z0-9-]+\.json", tracked) is not None


main = tool_main(main_command, "benchmark.tools.gpu_check")

if __name__ == "__main__":
    raise SystemExit(main())
