"""Every suite a variant set can be built from, by name: packaged ``sago-v1`` and the Hub's ``sago-paper``."""

from __future__ import annotations

from benchmark.registry import Registry
from benchmark.variants.hub_sources import SAGO_PAPER
from benchmark.variants.sources import SAGO_V1, Suite

SUITES: Registry[Suite] = Registry("variant set")
for _suite in (SAGO_V1, SAGO_PAPER):
    SUITES.add(_suite)
