"""Shared test configuration: keep hub access off in tests, give each test its own record of what
`sago analyze` wrote, and the fixtures several modules use.

Builders and other helpers live in ``tests/helpers/`` (imported as ``from helpers.<module> import …``);
a test module never imports another test module.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own (builds checkpoint their rewrite log into the cache)."""
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def toy_release(tmp_path: Path, private_cache: Path) -> Path:
    """The root of a freshly built tiny variant set ``toy/v1`` (``helpers.variant_build``)."""
    from helpers.variant_build import build_toy_release  # the builder's imports only where a set is built

    return build_toy_release(tmp_path)


@pytest.fixture(autouse=True)
def _own_analyze_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty record of what `sago analyze` wrote, kept out of the user's cache."""
    from benchmark.pipeline import origin

    path = tmp_path_factory.mktemp("analyze-registry") / origin.REGISTRY
    monkeypatch.setattr(origin, "registry", lambda: path)
