"""The engines' names, without importing torch: what run.json's ``engine`` may say (a contract of
run.json, so core: the validator reads it, and ``benchmark.models`` may not be imported there).

``benchmark.models.hf.ENGINES`` registers the local engines themselves (tests/test_default_engine.py
checks that it holds exactly :data:`LOCAL_ENGINES`); the validator reads run.json without loading torch.
"""

from __future__ import annotations

import re

LOCAL_ENGINES = ("single_prefill", "two_pass", "draft", "static_graph", "pooled")
"""the engines that run local weights (``sago evaluate --engine``)."""
STAND_IN = "fake"
"""the tests' stand-in model (``benchmark.models.fake``)."""
OTHER_ENGINES = ("api", STAND_IN)
"""an endpoint that decodes (``benchmark.models.api``), and the tests' stand-in model
(``benchmark.models.fake``), whose results the fixture checkouts validate."""
_DECLINED = re.compile(r"two_pass \((?P<engine>[a-z_]+) declined: .+\)", re.DOTALL)


def known_engine(name: str) -> bool:
    """Whether run.json's ``engine`` is one a harness writes: a local engine, another backend's, or the
    two-pass fallback of a local engine that declined the model (``hf.resolve_engine``).

    >>> known_engine("pooled"), known_engine("two_pass (pooled declined: sliding window)"), known_engine("x")
    (True, True, False)
    """
    return name in OTHER_ENGINES or local_engine(name)


def local_engine(name: str) -> bool:
    """Whether run.json's ``engine`` runs local weights (what a packaged or Hub submission's run must say:
    the tests' ``fake`` and an endpoint's ``api`` are refused there).

    >>> local_engine("draft"), local_engine("two_pass (draft declined: no cache)"), local_engine("fake")
    (True, True, False)
    """
    declined = _DECLINED.fullmatch(name)
    return name in LOCAL_ENGINES or (declined is not None and declined["engine"] in LOCAL_ENGINES)
