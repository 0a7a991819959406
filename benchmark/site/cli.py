"""`sago leaderboard build`."""

from __future__ import annotations

from pathlib import Path

import click
import jinja2

from benchmark import paths
from benchmark.documents import MANIFEST
from benchmark.errors import SagoError, visible
from benchmark.gitrepo import refuse_tracked, tracked_under
from benchmark.model_facts import FACTS_FILE, read_model_facts
from benchmark.paths import check_name, check_output
from benchmark.profiles import PROFILES, board_profile
from benchmark.results import LEADERBOARD_FILE, profile_board_path, refuse_leftovers, results_dir
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.site.board import Board, pending_board, read_board
from benchmark.site.build import MARKER, SiteInputs, build_site
from benchmark.site.cite import DEFAULT_REPO_URL, check_repo_url
from benchmark.site.versions import frozen_versions
from benchmark.stats.api_models import API_TABLE_FILE, ApiTable
from benchmark.submissions import check_submissions_root, list_slugs
from benchmark.variants.frozen import VariantSet, load_variant_set, set_dir


@click.group("leaderboard")
def leaderboard() -> None:
    """Render the static leaderboard site from committed results."""


@leaderboard.command("build")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=BOARD_SET_VERSION, show_default=True, help="Variant set version.")
@click.option(
    "--input",
    "input_path",
    type=click.Path(path_type=Path),
    # callables: resolved when the command runs, so a test (or embedding code) that points
    # benchmark.paths elsewhere never writes into this checkout's committed site
    default=lambda: paths.LEADERBOARD_DIR / LEADERBOARD_FILE,
    show_default=f"leaderboard/{LEADERBOARD_FILE}",
    help="Leaderboard written by `sago analyze`.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=lambda: paths.LEADERBOARD_DIR / "site",
    show_default="leaderboard/site",
    help="Folder to write (replaced if an earlier build made it).",
)
@click.option(
    "--submissions",
    "submissions_root",
    type=click.Path(path_type=Path),
    default=lambda: paths.SUBMISSIONS_DIR,
    show_default="submissions",
    help="Submissions folder (records for the item browser).",
)
@click.option(
    "--variants",
    "variants_root",
    type=click.Path(path_type=Path),
    default=lambda: paths.VARIANTS_DIR,
    show_default="variants",
    help="Folder of frozen variant sets.",
)
@click.option(
    "--repo-url",
    default=DEFAULT_REPO_URL,
    show_default=True,
    envvar="SAGO_REPO_URL",
    help="Repository the site links to (source, Submit page, BibTeX); env SAGO_REPO_URL.",
)
@click.pass_context
def build(
    ctx: click.Context,
    set_name: str,
    version: str,
    input_path: Path,
    out: Path,
    submissions_root: Path,
    variants_root: Path,
    repo_url: str,
) -> None:
    """Build the static site; works with no evaluated model (everyone pending)."""
    check_name(set_name, "variant set")
    check_name(version, "version")
    repo_url = check_repo_url(repo_url)
    # Every input is checked before anything is written: a typo in a folder name must fail, never
    # replace a built site with one that lost its results, downloads or prompts.
    explicit = ctx.get_parameter_source("input_path") is not click.core.ParameterSource.DEFAULT
    if explicit and not input_path.is_file():
        raise SagoError(f"--input {input_path} does not exist; fix the path or run `sago analyze` first")
    check_submissions_root(submissions_root, "--submissions")
    refuse_leftovers(submissions_root, "`sago leaderboard build`")
    from benchmark.pipeline.analyze import refuse_pending_analysis  # the statistics load only when building

    refuse_pending_analysis()
    if not variants_root.is_dir():
        raise SagoError(f"--variants {variants_root} is not a folder; pass the folder of frozen variant sets")
    _check_set(set_name, version, variants_root)
    _check_out(out)
    board = _board(input_path, set_name, version, submissions_root)
    # The leaderboard names the set its numbers come from; prompts must come from the same one.
    variants = _variants(board.data["set"], board.data["version"], variants_root)
    others = other_boards(board, input_path, submissions_root, variants_root, repo_url)
    files = read_model_facts(input_path.with_name(FACTS_FILE))
    profiles = profile_boards(board, input_path, submissions_root, variants, repo_url)
    try:
        api = ApiTable.read(input_path.with_name(API_TABLE_FILE), str(board.data["set"]), board.version)
        inputs = SiteInputs(board, submissions_root, variants, repo_url, api_rows=api.rows, model_files=files)
        report = build_site(inputs, out, others=others, profiles=profiles)
    except (jinja2.TemplateError, KeyError, TypeError, ValueError) as err:
        # read_board checks the shape the site needs; this names a row it did not foresee.
        raise SagoError(
            f"{input_path}: the leaderboard lacks a value the site needs "
            f"({type(err).__name__}: {str(err)[:120]}); run `sago analyze` to rewrite it"
        ) from None
    click.echo(f"wrote {out}: {report.line()}")


def _check_set(set_name: str, version: str, variants_root: Path) -> None:
    """--set and --version must name a frozen set: a typo must fail, not render some other board."""
    if version not in frozen_versions(set_name, variants_root):
        present = sorted(
            f"{m.parent.parent.name}/{m.parent.name}" for m in variants_root.glob(f"*/*/{MANIFEST}")
        )
        raise SagoError(
            f"--set {set_name} --version {version}: no such frozen variant set under {variants_root} "
            f"(there: {', '.join(present) or 'none'}); pass one of those or fetch it with "
            "`sago variants download`"
        )


def _check_out(out: Path) -> None:
    check_output(out, "--out", folder=True)
    # A committed site carries its committed marker; tracked files anywhere else are not the site's.
    committed_site = bool(tracked_under(out / MARKER))
    refuse_tracked(out, "--out", own=lambda _: committed_site, writes=f"a site folder, marked by {MARKER}")


def _board(path: Path, set_name: str, version: str, submissions_root: Path) -> Board:
    if not path.exists():
        click.echo(
            f"note: {path} does not exist; every submission is shown as pending "
            "(run `sago analyze` after evaluating)",
            err=True,
        )
        return pending_board(set_name, version, submissions_root)
    board = read_board(path)
    if (board.data["set"], board.data["version"]) != (set_name, version):
        held = f"{board.data['set']}/{board.data['version']}"
        note = f"note: {path} is for {held}, not {set_name}/{version}; rendering what it holds"
        click.echo(visible(note), err=True)
    return board


def other_boards(
    board: Board,
    published: Path,
    submissions_root: Path,
    variants_root: Path,
    repo_url: str = DEFAULT_REPO_URL,
) -> list[SiteInputs]:
    """The boards of the set's other frozen versions (``board`` is the published one, read from
    ``published``), each with its verified variant set; shared by the CLI and ``benchmark.build_site``."""
    set_name = str(board.data["set"])
    files = read_model_facts(published.with_name(FACTS_FILE))  # shown where a run loaded the same file
    return [
        SiteInputs(
            _version_board(published, set_name, other, submissions_root),
            submissions_root,
            _variants(set_name, other, variants_root),
            repo_url,
            model_files=files,
        )
        for other in frozen_versions(set_name, variants_root)
        if other != board.data["version"]
    ]


def profile_boards(
    board: Board,
    published: Path,
    submissions_root: Path,
    variants: VariantSet,
    repo_url: str = DEFAULT_REPO_URL,
) -> list[SiteInputs]:
    """The boards of the published version's other run profiles that `sago analyze --profile` kept beside
    ``published`` (``profiles/<set>/<version>-<profile>/leaderboard.json``), sorted by profile; one that
    is not the board its folder names is refused in one line."""
    if board.profile is not None:
        return []  # a profile board rendered as the site's root has no profile boards of its own
    set_name, version = str(board.data["set"]), board.version
    files = read_model_facts(published.with_name(FACTS_FILE))  # the same models' files as the board's
    found = []
    for profile in sorted(set(PROFILES.names()) - {board_profile(version)}):
        path = profile_board_path(published.parent, set_name, version, profile)
        if not path.is_file():
            continue
        other = read_board(path)
        if (other.data["set"], other.data["version"], other.profile) != (set_name, version, profile):
            raise SagoError(
                f"{path} is not the {profile}-profile board of {set_name}/{version}; re-run "
                f"`sago analyze --version {version} --profile {profile}`"
            )
        found.append(SiteInputs(other, submissions_root, variants, repo_url, model_files=files))
    return found


def _version_board(published: Path, set_name: str, version: str, submissions_root: Path) -> Board:
    """The board of another version: its kept leaderboard (``versions/<set>/<version>/`` beside the
    published one) or, when it has none yet, every submission listed as pending."""
    kept = published.parent / "versions" / set_name / version / LEADERBOARD_FILE
    if kept.is_file():
        board = read_board(kept)
        if (board.data["set"], board.data["version"]) == (set_name, version):
            return board
        raise SagoError(
            f"{kept} is for {board.data['set']}/{board.data['version']}, not {set_name}/{version}; "
            "move it to the folder of its own version"
        )
    slugs = list_slugs(submissions_root)
    evaluated = sum(results_dir(s, set_name, version, submissions_root).is_dir() for s in slugs)
    if evaluated:
        click.echo(
            f"note: {set_name}/{version} has results of {evaluated} model(s) but no leaderboard at "
            f"{kept}; its board lists every model as pending (run `sago analyze --version {version}` and "
            "move its leaderboard.json there)",
            err=True,
        )
    return pending_board(set_name, version, submissions_root)


def _variants(set_name: str, version: str, root: Path) -> VariantSet:
    """The verified set; a missing or corrupt one is an error (the site would lose prompts and downloads)."""
    if not set_dir(set_name, version, root).is_dir():
        raise SagoError(
            f"variant set {set_name}/{version} not found under {root}; fetch it with "
            "`sago variants download` or pass --variants"
        )
    return load_variant_set(set_name, version, root)
