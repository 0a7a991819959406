"""``sago export lm-eval`` and ``sago import lm-eval``: lm-evaluation-harness in and out of SAGO."""

from __future__ import annotations

from pathlib import Path

import click

from benchmark import options
from benchmark.axes.measures import all_measures
from benchmark.errors import visible
from benchmark.paths import check_name
from benchmark.profiles import PROFILES, get_profile
from benchmark.schema import DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.stats.sgs import ALL


@click.group("export")
def export() -> None:
    """Write a variant set in another harness's task format."""


@export.command("lm-eval")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version.")
@click.option(
    "--profile",
    default="smoke",
    show_default=True,
    help=f"Rows and token cap: {', '.join(PROFILES.names())}.",
)
@click.option("--datasets", default=None, help="Comma-separated subset of the set's datasets.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="Folder for the task YAML files (new or empty).",
)
def export_lm_eval(set_name: str, version: str, profile: str, datasets: str | None, out: Path) -> None:
    """One lm-evaluation-harness task per dataset, plus a group over them.

    Each task reads the frozen parquet file copied beside it (the folder can be moved to the machine
    lm-eval runs on), keeps exactly the rows `sago evaluate --profile` runs, and generates greedily with
    the profile's token cap; its metadata pins the set and the file by sha256. The folder's
    README.md gives the lm_eval command (run it with --apply_chat_template and --log_samples) and the
    `sago import lm-eval` that scores the samples.
    """
    from benchmark.lmeval.export import export_lm_eval as write_tasks
    from benchmark.variants.frozen import load_variant_set

    chosen = get_profile(profile)
    variant_set = load_variant_set(check_name(set_name, "variant set"), check_name(version, "version"))
    subset = options.dataset_list(datasets)
    paths = write_tasks(variant_set, chosen, out, datasets=subset)
    click.echo(
        f"wrote {len(paths) - 1} tasks and the group {paths[-1].stem} into {out} (see {out}/README.md)"
    )


@click.group("import")
def import_() -> None:
    """Bring another harness's outputs into a SAGO results folder."""


@import_.command("lm-eval")
@click.argument("samples", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True, help="Variant set name.")
@click.option("--version", default=DEFAULT_SET_VERSION, show_default=True, help="Variant set version.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Results folder to write.")
@click.option(
    "--name", default=None, help="The model's label in the tables (default: lm-eval's model folder name)."
)
def import_lm_eval(
    samples: tuple[Path, ...], set_name: str, version: str, out: Path, name: str | None
) -> None:
    """Score lm-eval --log_samples files of tasks from `sago export lm-eval` on the response-only axes.

    Writes OUT/run.json, records/, deltas.parquet and summary.json: BLEU, BERTScore, embedding cosine,
    mirroring and accuracy computed exactly as for a sago run; the measures that need the model
    (activations, Δ log-prob, Δ entropy) are NaN and listed as "not measured (lm-eval run)". Such a
    result stays off the board (see the README).
    """
    from benchmark.lmeval.ingest import import_lm_eval as run_import
    from benchmark.variants.frozen import load_variant_set

    variant_set = load_variant_set(check_name(set_name, "variant set"), check_name(version, "version"))
    result = run_import(list(samples), variant_set, out, name=name)
    click.echo(summary_text(result.summary.to_json()))
    rows = ", ".join(f"{d} {n}" for d, n in sorted(result.rows.items()))
    click.echo(f"wrote {out} ({rows} documents)")


def summary_text(summary: object) -> str:
    """The pooled SGS of every measure, one line each; unmeasured measures say why."""
    data = summary if isinstance(summary, dict) else {}
    missing = data.get("not_measured", {})
    cells = {c["measure"]: c for c in data.get("cells", []) if c.get("dataset") == ALL}
    lines = [f"SGS on all items (paper families), model {visible(str(data.get('model')))}:"]
    for measure in all_measures():
        cell = cells.get(measure.name)
        if measure.name in missing:
            value = str(missing[measure.name])
        elif cell is None or cell.get("sgs") is None:
            value = "—"
        else:
            value = f"{cell['sgs']:.4f} [{cell['ci_low']:.4f}, {cell['ci_high']:.4f}] {cell['verdict']}"
        lines.append(f"  {measure.name:<14} {value}")
    return "\n".join(lines)
