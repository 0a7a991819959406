"""``make float64-bound``: how far a committed float32 result's stored floats are from float64.

Why: the tolerances of ``make all``'s re-runs (:mod:`benchmark.harness.reproduce`) must hold between any
two correct float32 CPUs, not only the pair of machines someone compared. Both are near the float64 value
x64 of the same computation, so ``|a32 - b32| <= |a32 - x64| + |b32 - x64|``: twice the largest float32
error bounds what two machines can differ by, when both err as much as the one measured here.

For each submission it re-runs the batches ``make all`` samples (``--sample``, ``--seed``) with the model
cast to float64 and compares the committed float32 rows with them: each record float column (and
``logprob_sum`` per scored token), and per layer the stored float16 hidden states (in float16 units in the
last place of the row's largest value, as the re-run check measures them) and the compact cosines. Rows
whose response or tokens differ in float64 (a greedy near-tie) have no float error to measure; they are
counted and left out. Two limits, said here so nobody reads more into the numbers: transformers' RMSNorm
and the harness' log-softmax stay float32 in the float64 run, so the reference still carries their
rounding (the record tolerance's per-token term covers the log-softmax: see ``TOKEN_ATOL``); and the
numbers are one CPU's float32 error, which is why the tolerances multiply them by a margin.

Usage::

    python -m benchmark.tools.float64_bound SLUG [SLUG ...] --out docs/bench/float64-bound.json
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import click
import numpy as np

from benchmark import cpu, options
from benchmark.errors import SagoError
from benchmark.harness.reproduce import rerun_sample
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.tools import tool_main

_KEYS = ["dataset", "item_id", "variant_id"]
_FLOATS = ("logprob_sum", "logprob_mean", "entropy_mean")


def record_errors(a: Any, b: Any) -> dict[str, Any]:
    """Largest |float32 - float64| per float column over the rows whose every other column is equal
    (``a`` and ``b`` in the same row order)."""
    exact = [c for c in a.columns if c not in _FLOATS]
    same = np.ones(len(a), bool)
    for column in exact:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        same &= np.array([u == v or (u != u and v != v) for u, v in zip(x, y, strict=True)], bool)
    out: dict[str, Any] = {"rows": len(a), "rows_compared": int(same.sum())}
    gaps = {c: np.abs(a[c].to_numpy(np.float64) - b[c].to_numpy(np.float64))[same] for c in _FLOATS}
    out |= {column: float(np.nanmax(gap, initial=0.0)) for column, gap in gaps.items()}
    tokens = np.maximum(a["baseline_tokens"].to_numpy(np.float64)[same], 1.0)
    out["logprob_sum_per_token"] = float(np.nanmax(gaps["logprob_sum"] / tokens, initial=0.0))
    return out


def activation_errors(old: dict[str, Any], fresh: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """Per layer: the largest float16 error in ulps of the row's largest value (stored vectors), and the
    largest |Δ| of a stored cosine; over the rows in ``keys`` (equal responses)."""
    ulps: list[float] = []
    cosines: list[float] = []
    for key in sorted(keys):
        a, b = old[key].astype(np.float64), fresh[key].astype(np.float64)
        if old[key].dtype == np.float16:
            scale = np.maximum(np.abs(a), np.abs(b)).max(axis=-1, keepdims=True)
            ulp = np.spacing(scale.astype(np.float16)).astype(np.float64)
            layer = (np.abs(a - b) / ulp).max(axis=-1)
            ulps = _elementwise_max(ulps, layer)
        else:
            cosines = _elementwise_max(cosines, np.nan_to_num(np.abs(a - b)))
    return {
        "float16_ulps_per_layer": ulps,
        "float16_ulps": max(ulps, default=0.0),
        "cosine_per_layer": cosines,
        "cosine": max(cosines, default=0.0),
    }


def _elementwise_max(so_far: list[float], layer: Any) -> list[float]:
    values = [float(v) for v in layer]
    return values if not so_far else [max(u, v) for u, v in zip(so_far, values, strict=True)]


def measure(slug: str, profile: str, set_name: str, version: str, sample: int, seed: int) -> dict[str, Any]:
    """One submission's float32-vs-float64 errors over ``make all``'s sampled batches."""
    rerun = rerun_sample(slug, profile, set_name, version, sample, seed, dtype="float64")
    a = rerun.old.sort_values(_KEYS).reset_index(drop=True)
    b = rerun.fresh.sort_values(_KEYS).reset_index(drop=True)
    equal = (a["response"] == b["response"]) & (a["baseline_tokens"] == b["baseline_tokens"])
    rows = zip(a["dataset"], a["item_id"], a["variant_id"], equal, strict=True)
    keys = {f"{d}|{i}|{v}" for d, i, v, e in rows if e}
    return {"batches": rerun.what, "records": record_errors(a, b)} | activation_errors(
        rerun.old_tensors, rerun.fresh_tensors, keys & set(rerun.old_tensors)
    )


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("slugs", nargs=-1)
@click.option("--profile", default="evidence", show_default=True, help="The committed results' profile.")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=BOARD_SET_VERSION, show_default=True)
@click.option(
    "--sample",
    type=click.IntRange(min=1, max=10_000),
    default=2,
    show_default=True,
    help="Seeded baseline and variant batches per submission (as `make all`'s --sample).",
)
@click.option("--seed", type=options.SEED, default=0, show_default=True, help="Seed of --sample.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSON to write; submissions already in it are kept unless measured again.",
)
def main_command(
    slugs: tuple[str, ...], profile: str, set_name: str, version: str, sample: int, seed: int, out: Path
) -> None:
    """Measure committed float32 results' error against a float64 re-run of their sampled batches."""
    if not slugs:
        raise SagoError("name at least one submission slug")
    document: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    import torch

    models = dict(document.get("models", {}))
    for slug in slugs:
        models[slug] = measure(slug, profile, set_name, version, sample, seed)
        click.echo(
            f"{slug}: cosines {models[slug]['cosine']:.3g}, float16 ulps {models[slug]['float16_ulps']:.3g}, "
            f"logprob_sum/token {models[slug]['records']['logprob_sum_per_token']:.3g}"
        )
    document = {
        "what": "largest |committed float32 - float64 re-run| of make all's sampled batches "
        "(python -m benchmark.tools.float64_bound)",
        "cpu": cpu.cpu_model()[0] or platform.processor() or "unknown",
        "torch": torch.__version__,
        "profile": profile,
        "set": f"{set_name}/{version}",
        "sample": sample,
        "seed": seed,
        "models": dict(sorted(models.items())),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    click.echo(f"wrote {out}")


main = tool_main(main_command, "benchmark.tools.float64_bound")

if __name__ == "__main__":
    raise SystemExit(main())
