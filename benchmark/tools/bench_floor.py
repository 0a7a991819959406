"""``make bench-floor``: the least time the harness's matrix products could take on this CPU.

Why: ``make bench-peer`` compares ``sago bench`` (all four axes) with lm-eval generating the same
prompts. The four axes need a second pass that generation does not (y_0 teacher-forced under every
variant for the confidence axis: the model's body and its full-vocabulary output layer at every position
of y_0), so on a compute-bound CPU a ratio target can be out of reach of any implementation of the same
work. This tool says where that line is, from measurements, not from arithmetic on nominal peaks.

It runs ``sago bench`` once with hooks that count the real (unpadded) positions of every forward the
engine makes, sorted by the shape of the matrix products they imply:

- *body, wide*: prompt reads and y_0 scoring passes (many positions per forward);
- *body, step*: decode steps (one position per row);
- *head, wide*: the output layer over y_0's positions;
- *head, step*: the output layer at each prompt's last position and at decode steps.

Each class is then priced at the fastest rate measured here for its shapes, among MKL float32, oneDNN
float32 and (output layer only) fbgemm's float16-weight product, and again at the fastest float32 kernel
alone (float16 weights are too coarse for the harness's log-probabilities unless the tokens that carry
the probability are recomputed). Attention, norms, activations, caches, Python and the scoring pass's
softmax statistics are left out, so an engine built on these kernels cannot take less time. A floor above
``target x lm-eval seconds`` says no faster arrangement of the same work meets the target; a floor far
below says the gap is the engine's own overhead, not the work.

Usage::

    python -m benchmark.tools.bench_floor --model google__gemma-3-270m-q4_k_m --batch-size 32 \\
        --peer-seconds 128.0
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click
import torch

from benchmark import options
from benchmark.errors import SagoError
from benchmark.models.screen import plain_head, screened_head
from benchmark.tools import tool_main
from benchmark.tools.bench import pooled_header, pooled_run, pooled_run_options, time_harness, warm_up
from benchmark.tools.timing import Column, table, timed

CLASSES = ("body, wide", "body, step", "head, wide", "head, step")
WIDE_ROWS = 1024
"""rows of the wide products timed (a 32-row forward's y_0 positions)."""


@dataclass
class Work:
    """Real positions per class of matrix product (see the module docstring)."""

    positions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))

    def add(self, kind: str, count: int) -> None:
        self.positions[kind] += count


def count_forward(work: Work, seq: int, real: int, rows: int, through_model: bool) -> None:
    """Book one decoder forward of ``rows`` x ``seq`` inputs with ``real`` unpadded positions.

    ``through_model``: the call came from the model's own forward, whose output layer is counted by
    the head's hook (prompt reads keep one position per row); otherwise the engine applies the output
    layer itself to every real position (y_0 scoring in vocabulary slices, screened decode steps).

    >>> w = Work(); count_forward(w, 40, 100, 4, True); count_forward(w, 1, 4, 4, False)
    >>> count_forward(w, 12, 30, 4, False); w.positions
    {'body, wide': 130, 'body, step': 4, 'head, wide': 30, 'head, step': 4}
    """
    step = seq == 1
    work.add("body, step" if step else "body, wide", real)
    if not through_model:
        work.add("head, step" if step else "head, wide", real)


@contextmanager
def counting(model: Any) -> Iterator[Work]:
    """Count the work of every forward of ``model`` inside the block (hooks removed after)."""
    work = Work()
    inside = [0]
    decoder, head = model.get_decoder(), model.get_output_embeddings()

    def enter(*_: object) -> None:
        inside[0] += 1

    def leave(*_: object) -> None:
        inside[0] -= 1

    def body(_: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            ids = kwargs["inputs_embeds"][..., 0]
        rows, seq = int(ids.shape[0]), int(ids.shape[1])
        mask = kwargs.get("attention_mask")
        real = rows * seq
        if isinstance(mask, torch.Tensor) and mask.dim() == 2:  # [rows, past + seq]: a padding mask
            real = int(mask[:, -seq:].sum())
        count_forward(work, seq, real, rows, inside[0] > 0)

    def logits(_: object, args: tuple[Any, ...], __: object) -> None:
        work.add("head, step", int(args[0].shape[:-1].numel()))

    hooks = [
        model.register_forward_pre_hook(enter),
        model.register_forward_hook(leave),
        decoder.register_forward_pre_hook(body, with_kwargs=True),
        head.register_forward_hook(logits),
    ]
    try:
        yield work
    finally:
        for hook in hooks:
            hook.remove()


Product = Callable[[torch.Tensor], object]
"""x float32 [rows, in] -> x @ w.T for a weight prepared beforehand (packing is not timed)."""


def _mkl(weight: torch.Tensor) -> Product:
    return lambda x: torch.nn.functional.linear(x, weight)


def _onednn(weight: torch.Tensor) -> Product:
    packed = weight.to_mkldnn()
    return lambda x: torch._C._nn.mkldnn_linear(x.to_mkldnn(), packed, None).to_dense()


def _fbgemm_fp16(weight: torch.Tensor) -> Product:
    packed = torch.ops.quantized.linear_prepack_fp16(weight)
    return lambda x: torch.ops.quantized.linear_dynamic_fp16(x, packed)


BODY_KERNELS: dict[str, Callable[[torch.Tensor], Product]] = {"mkl float32": _mkl, "onednn float32": _onednn}
HEAD_KERNELS = {**BODY_KERNELS, "fbgemm float16 weights": _fbgemm_fp16}


def _median_seconds(run: Callable[[], object], repeats: int = 3) -> float:
    times = sorted(timed(run, warm_up=None if i else run).timing.seconds for i in range(repeats))
    return times[repeats // 2]


def _all(products: list[Product], inputs: list[torch.Tensor]) -> Callable[[], object]:
    return lambda: [product(x) for product, x in zip(products, inputs, strict=True)]


def rates(
    weights: list[torch.Tensor], rows: int, kernels: dict[str, Callable[[torch.Tensor], Product]]
) -> dict[str, float]:
    """kernel -> GFLOP/s over the products of ``rows`` x in inputs with each weight [out, in] of
    ``weights`` (one layer's linears, or slices of the output layer)."""
    flops = sum(2 * rows * w.shape[0] * w.shape[1] for w in weights)
    inputs = [torch.randn(rows, w.shape[1]) for w in weights]
    measured = {}
    for name, prepare in kernels.items():
        products = [prepare(w.contiguous()) for w in weights]
        measured[name] = flops / _median_seconds(_all(products, inputs)) / 1e9
    return measured


def linear_weights(module: torch.nn.Module) -> list[torch.Tensor]:
    """The float32 weights of every linear layer in ``module`` (its per-token parameters)."""
    return [m.weight.float() for m in module.modules() if isinstance(m, torch.nn.Linear)]


@dataclass(frozen=True)
class FloorRow:
    """One class of matrix product: its count, its best measured rate and the time it needs at least."""

    kind: str
    positions: int
    gflop: float
    rate: float
    """GFLOP/s, the fastest kernel measured for the class's shapes."""
    kernel: str
    exact_rate: float
    """GFLOP/s, the fastest float32 kernel (float16 weights are too coarse for the harness's numbers)."""

    @property
    def seconds(self) -> float:
        return self.gflop / self.rate

    @property
    def exact_seconds(self) -> float:
        return self.gflop / self.exact_rate


def floor_rows(work: Work, model: Any, head: torch.Tensor, step_rows: int) -> list[FloorRow]:
    """Price each class of ``work`` at its best rate (the decoder of ``model``, output layer ``head``)."""
    decoder = model.get_decoder()
    body = linear_weights(decoder)
    layer = linear_weights(decoder.layers[0])  # its first layer's products give the body's rates
    per_position = {"body": sum(2 * w.numel() for w in body) / 1e9, "head": 2 * head.numel() / 1e9}
    # The wide output-layer products run in vocabulary slices (benchmark/models/chunked.py); 16 slices
    # give the rate. A decode step reads the whole layer at once, so its rate is timed on all of it.
    slices = [head[i : i + 2048] for i in range(0, min(head.shape[0], 16 * 2048), 2048)]
    measured = {
        "body, wide": rates(layer, WIDE_ROWS, BODY_KERNELS),
        "body, step": rates(layer, step_rows, BODY_KERNELS),
        "head, wide": rates(slices, WIDE_ROWS, HEAD_KERNELS),
        "head, step": rates([head], step_rows, HEAD_KERNELS),
    }
    rows = []
    for kind in CLASSES:
        kernel = max(measured[kind], key=measured[kind].__getitem__)
        exact = max(rate for name, rate in measured[kind].items() if name in BODY_KERNELS)
        gflop = work.positions[kind] * per_position[kind.split(",")[0]]
        rows.append(FloorRow(kind, work.positions[kind], gflop, measured[kind][kernel], kernel, exact))
    return rows


FLOOR_COLUMNS: list[Column] = [
    ("work", "<11", lambda r: r.kind),
    ("positions", ">9", lambda r: r.positions),
    ("GFLOP", ">7.0f", lambda r: r.gflop),
    ("GFLOP/s", ">7.1f", lambda r: r.rate),
    ("kernel", "<22", lambda r: r.kernel),
    ("floor s", ">7.1f", lambda r: r.seconds),
    ("f32 GFLOP/s", ">11.1f", lambda r: r.exact_rate),
    ("f32 floor s", ">11.1f", lambda r: r.exact_seconds),
]


def format_floor(rows: list[FloorRow], harness_seconds: float, peer_seconds: float | None) -> str:
    """The table: per class and in total, at the fastest kernel and at the fastest float32 kernel, then
    both floors against sago's and the peer's measured times."""
    floor, exact = sum(r.seconds for r in rows), sum(r.exact_seconds for r in rows)
    total = ("total", "", sum(r.gflop for r in rows), "", "", floor, "", exact)
    lines = table(FLOOR_COLUMNS, [*rows, total], rule=True)
    given = {"sago bench (this run)": harness_seconds, "lm-eval generate_until (given)": peer_seconds}
    for name, seconds in given.items():
        if seconds is not None:
            lines.append(
                f"{name}: {seconds:.1f} s; floor / that = {floor / seconds:.3f}, "
                f"float32 floor / that = {exact / seconds:.3f}"
            )
    return "\n".join(lines)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@pooled_run_options
@click.option(
    "--peer-seconds",
    type=options.MEASURED_SECONDS,
    default=None,
    help="lm-eval's wall time on the same prompts and batch size (a bench-peer table's 'lm-eval s').",
)
def bench_floor(
    slug: str, profile: str, set_name: str, version: str, batch_size: int, peer_seconds: float | None
) -> None:
    """Run `sago bench` (pooled engine, one thread) counting its forwards' work, then print the least time
    that work's matrix products take at the best rates measured on this CPU."""
    backend, variant_set, chosen, plan = pooled_run(
        slug, set_name, version, profile, batch_size, "bench-floor"
    )
    head = plain_head(backend.model)
    if head is None or screened_head(backend.model) is None:
        raise SagoError(
            f"{slug}: the output layer is not a plain linear head; the floor's pricing does not apply"
        )
    warm_up(backend)  # outside the count: its forwards are not the run's
    with counting(backend.model) as work:
        seconds = time_harness(backend, variant_set, chosen, plan).timing.seconds
    click.echo(
        pooled_header(slug, profile, batch_size) + "positions exclude padding; rates are the fastest of the "
        "kernels named, timed here; attention, norms, activations, caches and Python are not counted"
    )
    click.echo(format_floor(floor_rows(work, backend.model, head, batch_size), seconds, peer_seconds))


main = tool_main(bench_floor, "benchmark.tools.bench_floor")

if __name__ == "__main__":
    raise SystemExit(main())
