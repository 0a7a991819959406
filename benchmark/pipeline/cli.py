"""``sago analyze``: instability statistics from stored records (no model needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import click

from benchmark import options
from benchmark.axes.measures import paper_measures
from benchmark.axes.scorers import judges_help
from benchmark.documents import LeaderboardDocument
from benchmark.errors import SagoError
from benchmark.gitrepo import refuse_tracked
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR, check_name, check_output, check_slug
from benchmark.pipeline.analyze import AnalyzeRequest, paid_judge, run_analysis
from benchmark.profiles import BOARD_PROFILES, board_profile, get_profile
from benchmark.results import LEADERBOARD_FILE, PROFILE_BOARDS_DIR, profile_board_path, refuse_leftovers
from benchmark.rows import CellRow, ModelRow
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SEED, DEFAULT_SET
from benchmark.stats.sgs import ALL, DEFAULT_RESAMPLES
from benchmark.stats.summary import AnalysisOptions
from benchmark.submissions import check_submissions_root
from benchmark.variants import load_variant_set


def _sgs_text(cell: CellRow | None) -> str:
    """``0.1234†``, or ``—`` for a missing cell or a null SGS."""
    if cell is None or cell["sgs"] is None:
        return "—"
    return f"{cell['sgs']:.4f}{cell['marker']}"


def _run_of(model: ModelRow) -> tuple[str, str]:
    """(profile, items) of a board row, as the console table shows them."""
    run = model["run"]
    profile = str(run["profile"]) if run and run.get("profile") else "?"
    return profile, "?" if model["n_items"] is None else str(model["n_items"])


def sgs_text_table(
    leaderboard: LeaderboardDocument, *, dataset: str = ALL, measures: Sequence[str] | None = None
) -> str:
    """Plain-text table of the paper SGS with corrected markers (rows: complete models, each with its
    run's profile and item count; columns: measures, by default those the authors report). Models run on
    different profiles or item counts get a note under the table: their numbers are not comparable."""
    measures = paper_measures() if measures is None else measures
    complete = leaderboard.complete
    width = max([len(m["slug"]) for m in complete] + [len("model")])
    lines = ["model".ljust(width) + f"{'profile':>10}{'n':>5}" + "".join(f"{m:>15}" for m in measures)]
    for model in complete:
        profile, items = _run_of(model)
        values = [
            _sgs_text(leaderboard.cells.first(model=model["slug"], dataset=dataset, measure=measure))
            for measure in measures
        ]
        lines.append(
            model["slug"].ljust(width) + f"{profile:>10}{items:>5}" + "".join(f"{v:>15}" for v in values)
        )
    footer = (
        f"SGS (paper families) on dataset {dataset!r}, exact one-sided sign-flip test vs ε = "
        f"{leaderboard.primary_epsilon}, Holm-corrected: * p<.05 ** p<.01 † p<.001 "
        "(no marker: not significant or not testable); n: items the model ran"
    )
    pending = [m["slug"] for m in leaderboard.models if m["status"] == "pending"]
    return "\n".join(
        [*lines, footer, *mixed_runs_note(complete)] + ([f"pending: {', '.join(pending)}"] if pending else [])
    )


def mixed_runs_note(models: Sequence[ModelRow]) -> list[str]:
    """One warning line when the models were not all run on one profile and item count (none otherwise)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for model in models:
        groups.setdefault(_run_of(model), []).append(model["slug"])
    if len(groups) < 2:
        return []
    parts = "; ".join(f"{p}, n={n}: {', '.join(slugs)}" for (p, n), slugs in groups.items())
    return [
        f"warning: these models ran different profiles or item counts ({parts}); their SGS, ranks and "
        "reversals are not comparable across the groups: evaluate them on one profile"
    ]


def _board_file(tracked: str) -> bool:
    """A tracked file analyze may replace: the published board, or a kept board of another version —
    never a copy inside the built site (its downloads) or any other leaderboard.json.

    >>> _board_file("leaderboard/leaderboard.json")
    True
    >>> _board_file("leaderboard/versions/sago-v1/v1/leaderboard.json")
    True
    >>> _board_file("leaderboard/profiles/sago-v1/v2-paper/leaderboard.json")
    True
    >>> _board_file("leaderboard/site/downloads/leaderboard.json"), _board_file("README.md")
    (False, False)
    """
    parts = PurePosixPath(tracked).parts
    kept = ("versions", PROFILE_BOARDS_DIR)  # another version's board, another profile's board
    return parts == ("leaderboard", LEADERBOARD_FILE) or (
        len(parts) == 5 and parts[0] == "leaderboard" and parts[1] in kept and parts[-1] == LEADERBOARD_FILE
    )


@click.command("analyze")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=BOARD_SET_VERSION, show_default=True, help="Variant set version.")
@click.option(
    "--slug",
    "slugs",
    multiple=True,
    metavar="SLUG",
    help="Re-analyse only this submission (repeatable); the leaderboard still combines all, reading the "
    "others' summaries only where this machine's analyze wrote them or the checkout commits them.",
)
@click.option(
    "--profile",
    default=None,
    help="Whose runs to analyse (default: the version's board profile, "
    f"{', '.join(f'{v}: {p}' for v, p in sorted(BOARD_PROFILES.items()))}, in results/<set>/<version>/). "
    "Another profile's runs, in results/<set>/<version>-<profile>/, make a board of their own beside it "
    "(never pooled or ranked with it), with a profile_comparison block against --compare-with.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    show_default=f"leaderboard/{LEADERBOARD_FILE}; for another profile "
    f"leaderboard/{PROFILE_BOARDS_DIR}/<set>/<version>-<profile>/{LEADERBOARD_FILE}",
    help="Where the combined leaderboard JSON goes.",
)
@click.option(
    "--compare-with",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    show_default=f"leaderboard/{LEADERBOARD_FILE} when --out is left to its default, else none",
    help="With another --profile: the board profile's leaderboard its board is compared with (the site's "
    "side-by-side page); its board-profile summaries are read from the same --submissions-dir.",
)
@click.option(
    "--submissions-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=SUBMISSIONS_DIR,
    show_default="submissions",
    help="Folder holding the submission folders.",
)
@click.option("--seed", type=options.SEED, default=DEFAULT_SEED, show_default=True, help="Bootstrap seed.")
@click.option(
    "--resamples",
    type=options.RESAMPLES,
    default=DEFAULT_RESAMPLES,
    show_default=True,
    help="Bootstrap resamples per interval (published numbers use ≥ 2000; memory is resamples × items × "
    "8 bytes per cell).",
)
@click.option(
    "--judge",
    default=None,
    metavar="JUDGE",
    help=f"Politeness-mirroring judge: {judges_help()} Same as $SAGO_POLITENESS_JUDGE.",
)
def analyze(
    set_name: str,
    version: str,
    slugs: tuple[str, ...],
    profile: str | None,
    out: Path | None,
    compare_with: Path | None,
    submissions_dir: Path,
    seed: int,
    resamples: int,
    judge: str | None,
) -> None:
    """Compute SGS, significance, rankings and reversals; write summary.json files and the leaderboard.

    For every submission with complete results (run.json present) the deltas are recomputed when
    missing, computed from other inputs (sha256 of run.json, records, activations) or settings
    (axes version, mirroring rules, BLEU form, scorer backbones), or of unknown origin (neither written
    by this machine's analyze nor committed in the checkout), then summary.json is written;
    pending submissions are listed in the leaderboard with status "pending".
    """
    # Refuse a set that is not here (or fails its hashes) before anything is written: a typo in
    # --version must not overwrite the leaderboard with an all-pending one.
    load_variant_set(check_name(set_name, "variant set"), check_name(version, "version"))
    other = None if profile is None or profile == board_profile(version) else get_profile(profile).name
    if other is None and compare_with is not None:
        raise SagoError(
            "--compare-with goes with --profile naming a profile other than the version's board one"
        )
    if out is None:
        out = LEADERBOARD_DIR / LEADERBOARD_FILE
        if other is not None:
            out = profile_board_path(LEADERBOARD_DIR, set_name, version, other)
            out.parent.mkdir(parents=True, exist_ok=True)  # the project's own place for it: made on first use
            # the published profile board is compared with the published board; a scratch one (--out)
            # only with the board --compare-with names
            compare_with = compare_with or LEADERBOARD_DIR / LEADERBOARD_FILE
    check_submissions_root(submissions_dir, "--submissions-dir")  # a typo must not give an empty leaderboard
    refuse_leftovers(submissions_dir, "`sago analyze`")
    check_output(out, "--out", folder=False)
    if judge is not None:
        choose_judge(judge)
    refuse_tracked(out, "--out", own=_board_file, writes=f"{LEADERBOARD_FILE} of a board")
    request = AnalyzeRequest(
        set_name=check_name(set_name, "variant set"),
        version=check_name(version, "version"),
        root=submissions_dir,
        out=out,
        slugs=tuple(check_slug(s) for s in slugs),
        options=AnalysisOptions(seed=seed, resamples=resamples),
        profile=other,
        compare_with=compare_with,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    document = run_analysis(request)
    click.echo(sgs_text_table(document))
    if paid_judge():
        from benchmark.axes.api_judge import stats_line

        click.echo(stats_line() or "API judge: no row needed a request")
    click.echo(f"wrote {out}")


def choose_judge(name: str) -> None:
    """Make ``name`` this process's politeness judge, after checking it can be built (an unknown name or
    an unset key fails here, before anything is read or written)."""
    import os

    from benchmark.axes.scorers import POLITENESS_ENV, configured_politeness

    previous = os.environ.get(POLITENESS_ENV)
    os.environ[POLITENESS_ENV] = name
    try:
        configured_politeness()
    except SagoError as err:
        if previous is None:
            os.environ.pop(POLITENESS_ENV, None)
        else:
            os.environ[POLITENESS_ENV] = previous
        raise SagoError(f"--judge {name!r}: {err}") from None
