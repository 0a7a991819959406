"""Build llama.cpp's ``llama-server`` from the pinned sources in the llama-cpp-python sdist, and serve a
packaged GGUF model with it over the OpenAI-compatible protocol (:func:`served`).

The LLM rewrite stage uses it (``sago variants rewrite --rewriter llamacpp``), and so does the API path
when it is exercised without a hosted API (``sago serve``, ``make api-smoke``, the API tests); rebuilds of a
variant set replay the rewrite log and never need it. The build goes into the cache, once per
source hash and build flags.

The build is portable: ``-march=native`` (``GGML_NATIVE=ON``) compiled for the building CPU's guesses, and a
server built that way died with SIGILL on an Intel Xeon advertising AMX and AVX-512 FP16. Instead ggml
builds its CPU backend once per x86-64 feature level (``GGML_CPU_ALL_VARIANTS``) as shared libraries
(``GGML_BACKEND_DL``) beside the binary, and picks the best one the running CPU supports when it starts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmark import packaged
from benchmark.errors import SagoError
from benchmark.paths import cache_dir

BUILD_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",  # no -march=native: the binary must run on any x86-64 CPU, not only this one
    "-DBUILD_SHARED_LIBS=ON",  # GGML_BACKEND_DL needs it
    "-DGGML_BACKEND_DL=ON",  # backends are libraries loaded at start-up from the binary's folder
    "-DGGML_CPU_ALL_VARIANTS=ON",  # one CPU backend per feature level; ggml loads the best that runs here
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
)
"""The cmake configure flags (ggml's options, as in the pinned llama.cpp's ``ggml/CMakeLists.txt``)."""


def build_dir() -> Path:
    """The source and build folder, keyed by the source hash and the flags (a build with other flags, such
    as an older native one, is never reused)."""
    flags = hashlib.sha256("\n".join(BUILD_FLAGS).encode()).hexdigest()[:8]
    return cache_dir() / "llama.cpp" / f"{packaged.LLAMA_CPP.sha256[:16]}-{flags}"


def server_path() -> Path:
    """Where the built server binary lives (it may not exist yet)."""
    return build_dir() / "build" / "bin" / "llama-server"


def signal_name(returncode: int) -> str:
    """The name of the signal a negative subprocess return code stands for ("SIGILL" for -4)."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def check_runs(binary: Path) -> None:
    """Run ``binary --version`` once; raise a one-line error if it dies by a signal (SIGILL: it was built for
    instructions this CPU lacks) or does not start."""
    try:
        done = subprocess.run(
            [str(binary), "--version"], check=False, capture_output=True, timeout=60, cwd=binary.parent
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SagoError(f"{binary} does not start ({type(err).__name__}: {err})") from None
    if done.returncode < 0:
        raise SagoError(
            f"{binary} died with {signal_name(done.returncode)} on `--version` (built for another CPU?); "
            f"delete {binary.parent.parent.parent} and rebuild it with `sago variants llama-server`"
        )


def build_server(jobs: int = 2) -> Path:
    """Extract the vendored llama.cpp and build ``llama-server`` with cmake (minutes); return its path."""
    binary = server_path()
    if binary.exists():
        check_runs(binary)
        return binary
    if shutil.which("cmake") is None:
        raise SagoError("building llama-server needs cmake and a C++ compiler (apt-get install cmake g++)")
    source = build_dir()
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
    for step in (
        ["cmake", "-S", str(source), "-B", str(source / "build"), *BUILD_FLAGS],
        ["cmake", "--build", str(source / "build"), "--target", "llama-server", f"-j{jobs}"],
    ):
        if subprocess.run(step, check=False).returncode != 0:
            raise SagoError(
                f"`{' '.join(step[:2])}` failed in {source} (its output is above); fix it and re-run"
            )
    check_runs(binary)
    return binary


def wait_ready(process: subprocess.Popen[bytes], port: int, limit_s: float = 300.0) -> None:
    """Return once the server on ``port`` answers ``/health`` with 200; raise if ``process`` exits first or
    the server stays silent past ``limit_s`` (the caller stops it)."""
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            code = process.returncode
            how = f"was killed by {signal_name(code)}" if code < 0 else f"exited with code {code}"
            raise SagoError(f"llama-server {how} while loading the model")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise SagoError(f"llama-server did not answer its health check within {limit_s:g} s")


def server_binary(binary: str | None = None) -> Path:
    """The llama-server executable, ``binary`` (a path or a name on PATH) or the one `sago variants
    llama-server` built, once it is known to run on this CPU (:func:`check_runs`)."""
    found = shutil.which(binary or str(server_path()))
    if found is None:
        raise SagoError(
            f"llama.cpp server {binary or server_path()} not found; build it with `sago variants "
            "llama-server` (or `make llama-server`), or pass --llama-server PATH"
        )
    check_runs(Path(found))  # a SIGILL here is one line, not "exited with code -4" while loading
    return Path(found)


def server_command(
    binary: Path, model: Path, *, port: int, threads: int, slots: int, context: int, jinja: bool = True
) -> list[str]:
    """The ``llama-server`` command line: greedy by request (each request sends its temperature and seed;
    ``--seed 0`` is only the default); ``jinja``: the GGUF's own chat template through ``--jinja``."""
    jinja_flag = "--jinja " if jinja else ""
    options = f"--host 127.0.0.1 --port {port} -t {threads} -np {slots} -c {context * slots} {jinja_flag}"
    return [str(binary), "-m", str(model), *options.split(), "--no-webui", "--seed", "0"]


@contextmanager
def served(
    artefact: str,
    *,
    binary: str | None = None,
    port: int | None = None,
    threads: int = 1,
    slots: int = 2,
    context: int = 2048,
    jinja: bool = True,
) -> Iterator[str]:
    """Start ``llama-server`` on the packaged ``artefact`` (its sha256 checked), yield its base URL, stop it.

    The same bytes the open-model board runs, answered by a real OpenAI-compatible server on 127.0.0.1:
    ``sago evaluate`` runs it as an ``api`` submission, and the LLM rewriter asks it for rewrites.

    Raises:
        SagoError: the server binary is missing (build it with ``sago variants llama-server``) or dies on
            this CPU (``--version`` killed by a signal), or the server exits or does not answer its health
            check within five minutes.
    """
    found = server_binary(binary)
    model = packaged.materialise(artefact)
    if not port:
        with socket.socket() as probe:  # a loopback port nothing listens on now
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    # the ggml libraries (and the CPU variant ggml picks at start-up) sit beside the binary; its rpath
    # finds them, and this does when the build folder was moved
    libraries = os.pathsep.join(p for p in (str(found.parent), os.environ.get("LD_LIBRARY_PATH")) if p)
    command = server_command(
        found, model, port=port, threads=threads, slots=slots, context=context, jinja=jinja
    )
    env = {**os.environ, "LD_LIBRARY_PATH": libraries}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    try:
        wait_ready(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
