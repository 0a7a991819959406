"""Shared test configuration: keep torch single-threaded and hub access off in tests, and give each test its
own record of what `sago analyze` wrote."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _own_analyze_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty record of what `sago analyze` wrote, kept out of the user's cache."""
    from benchmark.stats import origin

    path = tmp_path_factory.mktemp("analyze-registry") / origin.REGISTRY
    monkeypatch.setattr(origin, "registry", lambda: path)
