"""Performance and evidence tools, never imported by the runtime path.

What measures the harness rather than runs it: ``sago bench`` (:mod:`benchmark.tools.bench`), the
``make`` targets ``bench-peer``, ``bench-floor``, ``scoring-accuracy``, ``gpu-check`` and ``bench-gpu``
(``python -m benchmark.tools.<module>``, timed by :mod:`benchmark.tools.timing`), the politeness judges'
calibration against the authors' verdicts (``python -m benchmark.tools.judge_calibration``, the judge a
parameter). The engines they time are the runtime's own (``benchmark.models.hf.ENGINES``; the pooled
engine, a new run's default on a CPU, lives in :mod:`benchmark.models.pooled`). A tool may import any
unit; no runtime unit
imports a tool (the ``sago`` group alone names ``sago bench``, imported when it runs), so no run a user
starts, and no committed result, can depend on code here (``tests/test_import_graph.py``).
"""

from collections.abc import Callable

import click

from benchmark.entry import run_command


def tool_main(command: click.Command, module: str) -> Callable[..., int]:
    """The ``main(argv=None)`` of ``python -m <module>``: ``command`` through :func:`run_command`, so a user
    error is one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return lambda argv=None: run_command(command, argv, f"python -m {module}")
