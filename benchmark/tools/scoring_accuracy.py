"""``make scoring-accuracy``: how far the pooled engine's screened y_0 scoring pass is from float64.

Why: over a large vocabulary the pooled engine's confidence numbers (y_0's log-probabilities and
entropies under each variant) come from :func:`benchmark.models.chunked.screened_statistics`: exact
float32 logits for the tokens near the peak, a float16 screen's values for the tail. Its error is not
bounded by a proof small enough to quote, so it is measured here on real scoring rows and set beside the
error of a plain float32 log-softmax of the same hidden states (what the single-prefill engine computes).

It runs ``sago bench``'s harness (pooled engine, one thread) until the scoring pass has met ``--positions``
prediction rows, keeping their final hidden states and targets, then computes per row the target's
log-probability, the entropy and the argmax four ways: float64 from the float32 hidden states and
weights (the reference), the screened pass, the exact sliced pass, and float32 ``log_softmax``. It prints
the largest absolute difference from float64 for each, and the candidates per row.

Usage::

    python -m benchmark.tools.scoring_accuracy --model google__gemma-3-270m-q4_k_m --positions 3000
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import click
import torch

from benchmark import options
from benchmark.errors import SagoError
from benchmark.models import chunked
from benchmark.models.screen import ScreenedHead
from benchmark.tools import tool_main
from benchmark.tools.bench import pooled_header, pooled_run, pooled_run_options, time_harness, warm_up
from benchmark.tools.timing import Column, table

_ROWS_AT_ONCE = 128
"""rows whose full float64 logits are held at once (268 MB for Gemma 3's vocabulary)."""


class _Enough(Exception):
    """Raised inside the harness once enough scoring rows are kept."""


@dataclass(frozen=True)
class Errors:
    """Largest absolute differences from float64 over the rows measured."""

    method: str
    log_prob: float
    """nats, over rows with a target."""
    entropy: float
    """nats."""
    argmax_equal: int
    """rows whose argmax is float64's."""


def reference(queries: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(log-probability of each target, entropy, argmax) in float64 from float32 ``queries`` and
    ``weight``, and the same from a float32 ``log_softmax`` (as the single-prefill engine)."""
    parts: list[list[torch.Tensor]] = [[] for _ in range(6)]
    for start in range(0, queries.shape[0], _ROWS_AT_ONCE):
        rows = queries[start : start + _ROWS_AT_ONCE]
        picked = targets[start : start + _ROWS_AT_ONCE].clamp(min=0)
        for offset, logits in (
            (0, rows.double() @ weight.double().T),
            (3, torch.nn.functional.linear(rows, weight)),
        ):
            log_probs = torch.log_softmax(logits, dim=1)
            parts[offset].append(log_probs.gather(1, picked[:, None])[:, 0].double())
            parts[offset + 1].append(-(log_probs.exp() * log_probs).sum(dim=1).double())
            parts[offset + 2].append(logits.argmax(dim=1))
            del logits, log_probs
    return tuple(torch.cat(p) for p in parts)


def measure(rows: list[tuple[torch.Tensor, torch.Tensor]], screen: ScreenedHead) -> list[Errors]:
    """The table's rows: each method against float64 over the kept (queries, targets) calls."""
    queries = torch.cat([q for q, _ in rows])
    targets = torch.cat([t for _, t in rows])
    log_prob, entropy, best, f32_log_prob, f32_entropy, f32_best = reference(queries, targets, screen.weight)
    scored = targets >= 0

    def joined(stats: list[chunked._Stats]) -> tuple[torch.Tensor, ...]:
        return tuple(torch.cat([getattr(s, n) for s in stats]) for n in chunked._Stats._fields)

    found: dict[str, tuple[torch.Tensor, ...]] = {
        "screened (pooled engine)": joined([chunked.screened_statistics(q, t, screen) for q, t in rows]),
        "exact slices (float32)": joined([chunked.exact_statistics(q, t, screen.weight) for q, t in rows]),
        "float32 log_softmax": (f32_log_prob, f32_entropy, f32_best),
    }
    return [
        Errors(
            name,
            float((lp[scored] - log_prob[scored]).abs().max()),
            float((ent - entropy).abs().max()),
            int((arg == best).sum()),
        )
        for name, (lp, ent, arg) in found.items()
    ]


def candidates_per_row(rows: list[tuple[torch.Tensor, torch.Tensor]], screen: ScreenedHead) -> float:
    """Mean tokens per row within the margin of the screen's peak (those recomputed in float32)."""
    counts = []
    for queries, _ in rows:
        for start in range(0, queries.shape[0], _ROWS_AT_ONCE):
            block = queries[start : start + _ROWS_AT_ONCE].contiguous()
            values = torch.cat(
                [torch.ops.quantized.linear_dynamic_fp16(block, p) for p in screen.slices], dim=1
            )
            counts.append((values >= values.amax(dim=1, keepdim=True) - chunked.SCREEN_MARGIN).sum(dim=1))
    return float(torch.cat(counts).double().mean())


def format_table(errors: list[Errors], positions: int, rows_with_target: int) -> str:
    columns: list[Column] = [
        ("method", "<26", lambda e: e.method),
        ("positions", ">9", lambda e: positions),
        ("max |d log-prob|", ">16.2e", lambda e: e.log_prob),
        ("max |d entropy|", ">15.2e", lambda e: e.entropy),
        ("argmax = float64", ">16", lambda e: e.argmax_equal),
    ]
    last = f"log-prob over the {rows_with_target} positions with a target (the last of each y_0 has none)"
    return "\n".join([*table(columns, errors, rule=True), last])


def _keeping(limit: int, kept: list[tuple[torch.Tensor, torch.Tensor]]) -> Callable[..., chunked._Stats]:
    original = chunked.screened_statistics

    def keep(queries: torch.Tensor, targets: torch.Tensor, screen: ScreenedHead) -> chunked._Stats:
        kept.append((queries.clone(), targets.clone()))
        if sum(q.shape[0] for q, _ in kept) >= limit:
            raise _Enough
        return original(queries, targets, screen)

    return keep


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@pooled_run_options
@click.option(
    "--positions",
    type=options.PROMPTS,
    default=3000,
    show_default=True,
    help="Scoring rows to keep (the harness stops once the pass has met this many).",
)
def scoring_accuracy(
    slug: str, profile: str, set_name: str, version: str, batch_size: int, positions: int
) -> None:
    """Measure the screened y_0 scoring pass against float64 on the model's real scoring rows."""
    backend, variant_set, chosen, plan = pooled_run(
        slug, set_name, version, profile, batch_size, "scoring-accuracy"
    )
    screen = chunked.sliced_screen(backend.model)
    if screen is None:
        raise SagoError(
            f"{slug}: the scoring pass is exact for this model (no float16 screen: a vocabulary under "
            f"{chunked.SCREENED_MIN_VOCAB:,} tokens or not a plain linear head); nothing to measure"
        )
    warm_up(backend)
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []
    original = chunked.screened_statistics
    chunked.screened_statistics = _keeping(positions, kept)
    try:
        time_harness(backend, variant_set, chosen, plan)
    except _Enough:
        pass
    finally:
        chunked.screened_statistics = original
    if not kept:
        raise SagoError(f"{slug}: the scoring pass never ran on profile {profile}")
    count = sum(q.shape[0] for q, _ in kept)
    with torch.inference_mode():
        errors = measure(kept, screen)
        mean = candidates_per_row(kept, screen)
    click.echo(
        pooled_header(slug, profile, batch_size) + f"{len(kept)} scoring calls; margin "
        f"{chunked.SCREEN_MARGIN:g} nats, {mean:.0f} candidates per position on average; errors against "
        "float64 from the same float32 hidden states and weights"
    )
    with_target = int(sum(int((t >= 0).sum()) for _, t in kept))
    click.echo(format_table(errors, count, with_target))


main = tool_main(scoring_accuracy, "benchmark.tools.scoring_accuracy")

if __name__ == "__main__":
    raise SystemExit(main())
