"""The ``sago`` command line: one group, sub-commands contributed by each stage's module."""

from __future__ import annotations

import sys

import click

from benchmark.entry import run_command
from benchmark.version import __version__


def _command(name: str) -> click.Command | None:
    """The sub-command ``name``, imported when it runs (torch costs seconds; `sago --help` needs none)."""
    if name == "variants":
        from benchmark.variants.cli import variants

        return variants
    if name in ("evaluate", "checkpoint-files", "serve"):
        from benchmark.harness import cli as harness_cli

        return {
            "evaluate": harness_cli.evaluate,
            "checkpoint-files": harness_cli.checkpoint_files,
            "serve": harness_cli.serve,
        }[name]
    if name == "bench":  # a performance tool: the one command of benchmark.tools the group lists
        from benchmark.tools.bench import bench_command

        return bench_command
    if name == "analyze":
        from benchmark.pipeline.cli import analyze

        return analyze
    if name == "leaderboard":
        from benchmark.site.cli import leaderboard

        return leaderboard
    if name in ("export", "import"):
        from benchmark.lmeval import cli as lmeval_cli

        return lmeval_cli.export if name == "export" else lmeval_cli.import_
    if name == "submissions":
        from benchmark.submissions.cli import submissions

        return submissions
    return None


_HELP = {
    "variants": "Build, verify, publish and download frozen variant sets.",
    "evaluate": "Run submitted models on a variant set and store raw outputs for all four axes.",
    "bench": "Measure harness throughput and overhead against bare model work.",
    "serve": "Serve a packaged model over the OpenAI-compatible protocol while a command runs.",
    "checkpoint-files": "List the finished checkpoint files of a long run (to commit them as they finish).",
    "analyze": "Compute instability (SGS), significance, rankings and reversals from stored records.",
    "leaderboard": "Render the static leaderboard site from committed results.",
    "submissions": "Validate submission folders and their results.",
    "export": "Write a variant set as lm-evaluation-harness tasks (`sago export lm-eval`).",
    "import": "Score lm-evaluation-harness sample logs on the response-only axes (`sago import lm-eval`).",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_HELP)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _command(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help text without importing every stage (torch import costs seconds).
        with formatter.section("Commands"):
            formatter.write_dl([(name, _HELP[name]) for name in sorted(_HELP)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sago")
def cli() -> None:
    """SAGO benchmark: does a model behave the same when one question is asked differently?

    Typical flow: `sago variants verify` → `sago evaluate SUBMISSION` → `sago analyze` →
    `sago leaderboard build`. Every command has --help.
    """


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors become one line on stderr and exit status 2 (:mod:`benchmark.entry`)."""
    return run_command(cli, argv, "sago")


def console() -> None:
    """Console-script wrapper (setuptools ignores a returned status)."""
    sys.exit(main())


if __name__ == "__main__":
    raise SystemExit(main())
