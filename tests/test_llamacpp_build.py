"""The llama-server build is portable (no guesses from the building CPU) and a binary that cannot run on
this CPU is refused in one line before anything is served."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.errors import SagoError
from benchmark.variants import llamacpp


def test_the_build_flags_ask_for_a_portable_server_with_runtime_cpu_variants() -> None:
    """-march=native built a server that died with SIGILL on an Intel Xeon (AMX, AVX-512 FP16): the flags
    turn ggml's native build off and build every CPU variant as a library chosen when the server starts."""
    flags = set(llamacpp.BUILD_FLAGS)
    assert "-DGGML_NATIVE=OFF" in flags
    assert {"-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON", "-DBUILD_SHARED_LIBS=ON"} <= flags
    assert not [f for f in flags if "NATIVE=ON" in f or "march=native" in f]


def test_the_build_folder_is_keyed_by_the_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server built with other flags (the old native one in a cache) is never taken for this build."""
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path))
    portable = llamacpp.server_path()
    monkeypatch.setattr(llamacpp, "BUILD_FLAGS", ("-DGGML_NATIVE=ON",))
    assert llamacpp.server_path() != portable
    assert portable.is_relative_to(tmp_path) and portable.name == "llama-server"


def _fake(tmp_path: Path, body: str) -> Path:
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!/bin/sh\n{body}\n")
    binary.chmod(0o755)
    return binary


def test_a_server_that_dies_with_sigill_is_one_line_naming_the_signal_and_the_fix(tmp_path: Path) -> None:
    binary = _fake(tmp_path, "kill -ILL $$")
    with pytest.raises(SagoError) as caught:
        llamacpp.check_runs(binary)
    message = str(caught.value)
    assert "SIGILL" in message and "sago variants llama-server" in message
    assert "\n" not in message


def test_a_server_that_runs_passes_the_check(tmp_path: Path) -> None:
    llamacpp.check_runs(_fake(tmp_path, 'echo "version: 1"'))


def test_serving_checks_the_binary_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``served`` refuses a SIGILL binary in one line instead of waiting on a server that died."""
    monkeypatch.setattr(llamacpp, "server_path", lambda: _fake(tmp_path, "kill -ILL $$"))
    with pytest.raises(SagoError, match="SIGILL"), llamacpp.served("smollm2-135m-instruct-q4_1"):
        pass
