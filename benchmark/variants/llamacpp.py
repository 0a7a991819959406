"""Build llama.cpp's ``llama-server`` from the pinned sources in the llama-cpp-python sdist.

Only the LLM rewrite stage uses it (``sago variants rewrite --rewriter llamacpp``); rebuilds of a variant
set replay the rewrite log and never need it. The build goes into the cache, once per source hash.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from benchmark import packaged
from benchmark.errors import SagoError
from benchmark.paths import cache_dir


def server_path() -> Path:
    """Where the built server binary lives (it may not exist yet)."""
    return cache_dir() / "llama.cpp" / packaged.LLAMA_CPP.sha256[:16] / "build" / "bin" / "llama-server"


def build_server(jobs: int = 2) -> Path:
    """Extract the vendored llama.cpp and build ``llama-server`` with cmake (minutes); return its path."""
    binary = server_path()
    if binary.exists():
        return binary
    if shutil.which("cmake") is None:
        raise SagoError("building llama-server needs cmake and a C++ compiler (apt-get install cmake g++)")
    source = binary.parent.parent.parent
    prefix = packaged.LLAMA_CPP.filename.removesuffix(".tar.gz") + "/vendor/llama.cpp/"
    archive = packaged.dist_path(packaged.LLAMA_CPP)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.name.rstrip("/") == prefix.rstrip("/") or not member.name.startswith(prefix):
                continue
            if member.isfile() or member.isdir():
                # a plain relative name (no '..', not absolute), and tarfile's "data" filter as well
                member.name = packaged.member_path(member.name, prefix).as_posix()
                try:
                    tar.extract(member, source, filter="data")
                except tarfile.FilterError as err:
                    raise SagoError(
                        f"{archive.name}: member {member.name!r} refused ({err}); not extracted"
                    ) from None
    flags = [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DGGML_NATIVE=ON",
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_SERVER=ON",
    ]
    for step in (
        ["cmake", "-S", str(source), "-B", str(source / "build"), *flags],
        ["cmake", "--build", str(source / "build"), "--target", "llama-server", f"-j{jobs}"],
    ):
        if subprocess.run(step, check=False).returncode != 0:
            raise SagoError(
                f"`{' '.join(step[:2])}` failed in {source} (its output is above); fix it and re-run"
            )
    return binary


def free_port() -> int:
    """A loopback port nothing listens on now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(process: subprocess.Popen[bytes], port: int, limit_s: float = 300.0) -> None:
    """Return once the server on ``port`` answers ``/health`` with 200; raise if ``process`` exits first or
    the server stays silent past ``limit_s`` (the caller stops it)."""
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SagoError(f"llama-server exited with code {process.returncode} while loading the model")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise SagoError(f"llama-server did not answer its health check within {limit_s:g} s")
