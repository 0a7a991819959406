"""The one error path of every entry point: ``sago …`` and each ``python -m benchmark.<module>`` tool.

Every ``__main__`` calls :func:`run_command`, so a bad option or argument, a
:class:`~benchmark.errors.SagoError`, a full disk or an unwritable folder is one line on stderr and exit
status 2 wherever a user starts the benchmark (``tests/test_entry_points.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from benchmark.errors import SagoError, disk_problem, visible

USER_ERROR = 2
ABORTED = 130  # after Ctrl-C, as a shell reports it


def one_line(message: str) -> str:
    """Collapse a message onto one line (click's messages may wrap).

    >>> one_line("a\\n  b ")
    'a b'
    """
    return " ".join(message.split())


def shown(message: str) -> str:
    r"""A message as printed: one line, control characters escaped so the line shows what it says.

    >>> shown("no folder 'a\x1b[1A\u202eb'")
    "no folder 'a\\x1b[1A\\u202eb'"
    """
    return visible(one_line(message))


def run_command(command: click.Command, argv: Sequence[str] | None, prog_name: str) -> int:
    """Run a click command and return its exit status; a user error is one line on stderr and status 2.
    ``prog_name`` is how a user starts it (the usage line and the ``--help`` hint name it)."""
    args = list(argv) if argv is not None else None
    try:
        status = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except SagoError as err:
        return _fail(shown(str(err)))
    except OSError as err:  # a full disk or a read-only folder: the machine's state, not a bug
        problem = disk_problem(err)
        if problem is None:
            raise
        return _fail(problem)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return ABORTED
    except click.UsageError as err:  # one line, not click's four (usage, hint, blank, error)
        path = err.ctx.command_path if err.ctx is not None else prog_name
        return _fail(f"{shown(err.format_message())} (see `{path} --help`)")
    except click.ClickException as err:  # e.g. a click.File that cannot be opened: bad input as well
        return _fail(shown(err.format_message()))
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    # In non-standalone mode click hands back `ctx.exit(n)` (and `--help`'s 0) instead of raising; the
    # commands themselves return None.
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


def _fail(message: str) -> int:
    click.echo(f"error: {message}", err=True)
    return USER_ERROR
