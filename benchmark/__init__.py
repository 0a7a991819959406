"""sago-bench: the Stability-Aware Generalization Objective (SAGO) as a reproducible benchmark.

The Python API (README "Use it from Python"); each function is what one ``sago`` command does:

- :func:`load_variant_set` — a frozen, verified variant set (``sago variants verify``).
- :func:`evaluate` — run a model on it into a results folder (``sago evaluate``, no submission folder needed).
- :func:`analyze` — summaries and the leaderboard document (``sago analyze``).
- :func:`build_site` — the static leaderboard site (``sago leaderboard build``).

``import benchmark`` stays cheap: the functions load their modules (and torch) on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchmark import cpu
from benchmark.version import __version__

cpu.pin()  # before anything imports torch: see benchmark/cpu.py

__all__ = ["__version__", "analyze", "build_site", "evaluate", "load_variant_set"]

if TYPE_CHECKING:
    from benchmark.api import analyze, build_site, evaluate, load_variant_set


def __getattr__(name: str) -> Any:
    """The API functions, imported from :mod:`benchmark.api` when first used."""
    if name in __all__:  # __version__ is bound above, so only the API functions reach here
        from benchmark import api

        return getattr(api, name)
    raise AttributeError(f"module 'benchmark' has no attribute {name!r}")
