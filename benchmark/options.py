"""Bounds of the numeric command-line options, shared by every command.

Every numeric option takes one of these (``tests/test_cli_options.py``), so a value out of range is one
line before anything is allocated (not a 175 TiB bootstrap array from ``--resamples 1000000000000``).
"""

from __future__ import annotations

import math
from typing import Any

import click

from benchmark.errors import SagoError

SEED = click.IntRange(0, 2**32 - 1)
"""a random seed (numpy's seed sequence takes non-negative integers; 32 bits is plenty)."""
THREADS = click.IntRange(1, 1024)
BATCH_SIZE = click.IntRange(1, 4096)
PROCESSES = click.IntRange(1, 64)
RESAMPLES = click.IntRange(100, 100_000)
"""bootstrap resamples per interval; memory is resamples × items × 8 bytes per cell."""
ITEMS = click.IntRange(1, 100_000)
SOME_ITEMS = click.IntRange(0, 100_000)
"""items that get an optional treatment (0: none)."""
TOKENS = click.IntRange(1, 32_768)
SOME_TOKENS = click.IntRange(0, 32_768)
PROMPTS = click.IntRange(1, 1_000_000)


class FiniteRange(click.FloatRange):
    """A :class:`click.FloatRange` that also refuses NaN (every comparison with NaN is false).

    >>> FiniteRange(0, 1).convert("nan", None, None)
    Traceback (most recent call last):
    click.exceptions.BadParameter: 'nan' is not a number.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


SECONDS = FiniteRange(0, 7 * 24 * 3600)
MEASURED_SECONDS = FiniteRange(0, 7 * 24 * 3600, min_open=True)
"""a measured wall time, something is divided by."""
SHARE = FiniteRange(0, 1)
FLOPS = FiniteRange(1e9, 1e18)
"""a chip's peak FLOP/s (a GFLOP/s to an EFLOP/s)."""


def dataset_list(value: str | None) -> tuple[str, ...] | None:
    """``--datasets a,b``: the names given, or None (every dataset) when the option is not given; one
    naming nothing is an error (a shell variable that expanded to nothing must not run all six).

    >>> dataset_list(" gsm8k, jeopardy ,"), dataset_list(None)
    (('gsm8k', 'jeopardy'), None)
    >>> dataset_list(",,")
    Traceback (most recent call last):
    benchmark.errors.SagoError: --datasets ',,': names no dataset; pass names, or leave the option out for all
    """
    if value is None:
        return None
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise SagoError(
            f"--datasets {value!r}: names no dataset; pass names, or leave the option out for all"
        )
    return names
