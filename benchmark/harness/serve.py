"""Serve a packaged GGUF model over the OpenAI-compatible protocol with llama.cpp's ``llama-server``.

This is how the API path is exercised without a hosted API: the same bytes the open-model board runs
(pinned by sha256), answered by a real OpenAI-compatible server on 127.0.0.1, evaluated by ``sago evaluate``
as an ``api`` submission (``make api-smoke``). The server applies the model's own chat template (``--jinja``),
decodes greedily when asked for temperature 0, and returns the sampled tokens' log-probabilities.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmark.errors import SagoError
from benchmark.variants.llamacpp import check_runs, free_port, server_path, wait_ready


def server_command(
    binary: Path, model: Path, *, port: int, threads: int, slots: int, context: int
) -> list[str]:
    """The ``llama-server`` command line (greedy by request; ``--jinja``: the GGUF's own chat template)."""
    return [
        str(binary),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-t",
        str(threads),
        "-np",
        str(slots),
        "-c",
        str(context * slots),
        "--jinja",
        "--no-webui",
        "--seed",
        "0",
    ]


@contextmanager
def served(
    artefact: str,
    *,
    port: int | None = None,
    threads: int = 1,
    slots: int = 2,
    context: int = 2048,
    log: Path | None = None,
) -> Iterator[str]:
    """Start ``llama-server`` on the packaged ``artefact`` (its sha256 checked), yield its base URL, stop it.

    Raises:
        SagoError: the server binary is missing (build it with ``sago variants llama-server``) or dies on
            this CPU (``--version`` killed by a signal), or the server exits or does not answer its health
            check within five minutes.
    """
    from benchmark.packaged import materialise

    binary = server_path()
    if not binary.exists():
        raise SagoError(
            f"{binary} is not built; run `sago variants llama-server` (or `make llama-server`) first"
        )
    check_runs(binary)  # a SIGILL here is one line, not a server that "exited with code -4" while loading
    model = materialise(artefact)
    port = port or free_port()
    # the ggml libraries (and the CPU variant ggml picks at start-up) sit beside the binary; its rpath
    # finds them, and this does when the build folder was moved
    libraries = os.pathsep.join(p for p in (str(binary.parent), os.environ.get("LD_LIBRARY_PATH")) if p)
    out = log.open("ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        server_command(binary, model, port=port, threads=threads, slots=slots, context=context),
        stdout=out,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        env={**os.environ, "LD_LIBRARY_PATH": libraries},
    )
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
        if log and out is not subprocess.DEVNULL:
            out.close()  # type: ignore[union-attr]
