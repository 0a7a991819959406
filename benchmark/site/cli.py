"""`sago leaderboard build` and `sago submissions validate`."""

from __future__ import annotations

from pathlib import Path

import click

from benchmark.errors import SagoError
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR, VARIANTS_DIR, check_name
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.site.board import Board, pending_board, read_board
from benchmark.site.build import SiteInputs, build_site
from benchmark.site.cite import DEFAULT_REPO_URL, check_repo_url
from benchmark.site.validate import validate_tree
from benchmark.variants.freeze import VariantSet, load_variant_set, set_dir


@click.group("leaderboard")
def leaderboard() -> None:
    """Render the static leaderboard site from committed results."""


@leaderboard.command("build")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version.")
@click.option("--input", "input_path", type=click.Path(path_type=Path), default=LEADERBOARD_DIR / "leaderboard.json",
              show_default="leaderboard/leaderboard.json", help="Leaderboard written by `sago analyze`.")
@click.option("--out", type=click.Path(path_type=Path), default=LEADERBOARD_DIR / "site",
              show_default="leaderboard/site", help="Folder to write (replaced if an earlier build made it).")
@click.option("--submissions", "submissions_root", type=click.Path(path_type=Path), default=SUBMISSIONS_DIR,
              show_default="submissions", help="Submissions folder (records for the item browser).")
@click.option("--variants", "variants_root", type=click.Path(path_type=Path), default=VARIANTS_DIR,
              show_default="variants", help="Folder of frozen variant sets.")
@click.option("--repo-url", default=DEFAULT_REPO_URL, show_default=True, envvar="SAGO_REPO_URL",
              help="Repository the site links to (source, Submit page, BibTeX); env SAGO_REPO_URL.")
@click.pass_context
def build(ctx: click.Context, set_name: str, version: str, input_path: Path, out: Path,
          submissions_root: Path, variants_root: Path, repo_url: str) -> None:
    """Build the static site; works with no evaluated model (everyone pending)."""
    check_name(set_name, "variant set")
    check_name(version, "version")
    repo_url = check_repo_url(repo_url)
    # A typo in --input must not replace a built site with an all-pending one; a missing leaderboard
    # is fine for the default location (nothing analysed yet) or when there is no site to lose.
    explicit = ctx.get_parameter_source("input_path") is not click.core.ParameterSource.DEFAULT
    if explicit and not input_path.exists() and out.exists():
        raise SagoError(f"{input_path} does not exist and {out} holds a built site; fix --input "
                        "or run `sago analyze` first")
    board = _board(input_path, set_name, version, submissions_root)
    # The leaderboard names the set its numbers come from; prompts must come from the same one.
    variants = _variants(board.data["set"], board.data["version"], variants_root)
    report = build_site(SiteInputs(board, submissions_root, variants, repo_url), out)
    click.echo(f"wrote {out}: {report.line()}")


def _board(path: Path, set_name: str, version: str, submissions_root: Path) -> Board:
    if not path.exists():
        click.echo(f"note: {path} does not exist; every submission is shown as pending "
                   "(run `sago analyze` after evaluating)", err=True)
        return pending_board(set_name, version, submissions_root)
    board = read_board(path)
    if (board.data["set"], board.data["version"]) != (set_name, version):
        click.echo(f"note: {path} is for {board.data['set']}/{board.data['version']}, "
                   f"not {set_name}/{version}; rendering what it holds", err=True)
    return board


def _variants(set_name: str, version: str, root: Path) -> VariantSet | None:
    """The verified set, or None (with a note) when it is not checked out; a corrupt set is an error."""
    if not set_dir(set_name, version, root).is_dir():
        click.echo(f"note: variant set {set_name}/{version} not found under {root}; "
                   "the item browser and the set's downloads are left out", err=True)
        return None
    return load_variant_set(set_name, version, root)


@click.group("submissions")
def submissions() -> None:
    """Validate submission folders and their results."""


@submissions.command("validate")
@click.option("--root", type=click.Path(path_type=Path), default=SUBMISSIONS_DIR, show_default="submissions",
              help="Folder holding one sub-folder per submission.")
@click.option("--variants", "variants_root", type=click.Path(path_type=Path), default=VARIANTS_DIR,
              show_default="variants", help="Folder of frozen variant sets results must refer to.")
@click.pass_context
def validate(ctx: click.Context, root: Path, variants_root: Path) -> None:
    """Check every submission and result folder; one line per problem, exit status 1 if any."""
    report = validate_tree(root, variants_root)
    for failure in report.failures:
        click.echo(failure.line())
    click.echo(report.summary(), err=not report.ok)
    if not report.ok:
        ctx.exit(1)
