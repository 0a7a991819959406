"""Entry points of the ``python -m benchmark.harness.<tool>`` scripts, with the CLI's convention."""

from __future__ import annotations

import click

from benchmark.errors import SagoError


def run_tool(command: click.Command, argv: list[str] | None, prog_name: str) -> int:
    """Run a click command; a user error is one line on stderr and exit status 2.

    A ``SystemExit`` raised by the command (e.g. 1: outputs differ) becomes the return value.
    """
    try:
        command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except SagoError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except SystemExit as stop:
        return int(stop.code or 0)
    return 0
