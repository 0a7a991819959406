"""`sago submissions validate` and `sago submissions rehash`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from benchmark.errors import SagoError, visible
from benchmark.paths import SUBMISSIONS_DIR, VARIANTS_DIR
from benchmark.results import RUN_FILE, repair_leftovers
from benchmark.submissions.schema import check_submissions_root, submission_dir
from benchmark.submissions.validate import validate_tree

ROOT = click.option(
    "--root",
    type=click.Path(path_type=Path),
    default=SUBMISSIONS_DIR,
    show_default="submissions",
    help="Folder holding one sub-folder per submission.",
)
"""The submissions folder, as every `sago submissions` command takes it."""


@click.group("submissions")
def submissions() -> None:
    """Validate submission folders and their results."""


@submissions.command("validate")
@ROOT
@click.option(
    "--variants",
    "variants_root",
    type=click.Path(path_type=Path),
    default=VARIANTS_DIR,
    show_default="variants",
    help="Folder of frozen variant sets results must refer to.",
)
@click.option(
    "--base",
    metavar="REF",
    default=None,
    help="Also check what the working tree changes against this commit (a pull request's base, e.g. "
    "origin/main), over the whole checkout: one new submission's submission.yaml and README.md and nothing "
    "else. CI runs this with the base commit's own code: `make validate BASE=REF` (.ci/gate).",
)
@click.pass_context
def validate(ctx: click.Context, root: Path, variants_root: Path, base: str | None) -> None:
    """Check every submission and result folder; one line per problem, exit status 1 if any."""
    changes = None
    if base is not None:  # first: a bad --base is one line before anything else is read
        from benchmark.submissions.changes import validate_changes

        changes = validate_changes(root, variants_root, base)
    report = validate_tree(root, variants_root)
    if changes is not None:  # one line per path: what the change may not do, else what the tree shows
        named = {f.path for f in changes[0]}
        rest = tuple(f for f in report.failures if f.path not in named)
        report = replace(report, failures=(*changes[0], *rest), changed=changes[1])
    for failure in report.failures:
        click.echo(failure.line())
    click.echo(report.summary(), err=not report.ok)
    if not report.ok:
        ctx.exit(1)


@submissions.command("repair")
@ROOT
def repair(root: Path) -> None:
    """Finish or undo what a killed evaluation left beside its result folder (.<v>.old, .<v>.finalizing).

    `sago analyze` and `sago leaderboard build` refuse to run while such a folder exists. A result folder
    moved aside is put back (with its checkpoint: `sago evaluate` then finalizes again); a partial copy
    is removed.
    """
    check_submissions_root(root, "--root")
    done = repair_leftovers(root)
    for line in done:
        click.echo(visible(line))
    click.echo(f"repaired {len(done)} leftover folder(s)" if done else "nothing to repair")


@submissions.command("rehash")
@click.argument("slugs", nargs=-1, required=True)
@ROOT
def rehash(slugs: tuple[str, ...], root: Path) -> None:
    """Record in run.json the sha256 of each results file (results made before run.json had them).

    A maintainer's one-off: it vouches for the files as they are now, so run it only on results that
    came from `sago evaluate` unchanged. New runs write the hashes themselves.
    """
    from benchmark.integrity import rehash as rehash_folder

    folders = {
        slug: sorted(p.parent for p in submission_dir(slug, root).glob(f"results/*/*/{RUN_FILE}"))
        for slug in slugs
    }
    for slug, found in folders.items():
        if not found:
            raise SagoError(f"{slug}: no results/<set>/<version>/run.json under {root}; nothing to rehash")
    for found in folders.values():
        for folder in found:
            click.echo(visible(f"{folder}: {len(rehash_folder(folder))} file(s) hashed into run.json"))
