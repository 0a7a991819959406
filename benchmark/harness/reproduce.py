"""``make reproduce MODEL=<slug> PROFILE=<name>``: re-run a committed result and diff it.

The run is repeated with the committed run.json's own settings (profile, batch size, engine, torch
threads, datasets, device) into a temporary submissions folder, so nothing committed is touched. Then
every records parquet and activations file is compared byte for byte, and run.json on the fields that
determine outputs. Exit status 0 when everything is identical, 1 when something differs (one line per
differing file, with how much differs), 2 on bad input.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from benchmark import paths
from benchmark.documents import RunDocument
from benchmark.entry import run_tool
from benchmark.errors import SagoError
from benchmark.results import ResultsFolder, results_dir
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SET
from benchmark.submissions import load_submission

# run.json fields that a faithful re-run reproduces (timings, git commit and hardware may differ).
_DETERMINED = (
    "variant_set_sha256",
    "profile",
    "seed",
    "batch_size",
    "engine",
    "dtype",
    "counts",
    "tokens",
    "datasets",
    "chat_template",
    "world_size",
    "activations",
)
_OUTPUT_GLOBS = ("records/*.parquet", "activations/*.safetensors")


def committed_run(slug: str, set_name: str, version: str, root: Path) -> RunDocument:
    """The committed run.json of ``slug`` on the set version; a missing or unreadable one is one line."""
    folder = ResultsFolder.of(slug, set_name, version, root)
    if not folder.run.is_file():
        raise SagoError(f"{slug} has no committed result for {set_name}/{version} ({folder.run} is missing)")
    return folder.read_run()


def rerun_options(document: RunDocument, profile: str) -> dict[str, Any]:
    """``EvaluateOptions`` keywords that repeat the committed run; the profile must be the committed one.

    >>> run = RunDocument.from_json({"schema_version": 1, "set": "s", "version": "v1",
    ...     "profile": {"name": "smoke"}, "batch_size": 8, "engine": "single_prefill", "device": "cpu",
    ...     "datasets": "all", "hardware": {"torch_threads": 1}})
    >>> rerun_options(run, "smoke")["threads"], rerun_options(run, "smoke")["datasets"]
    (1, None)
    """
    committed, run = document.profile_name, document.data
    if profile != committed:
        raise SagoError(
            f"the committed result was made with profile {committed!r}, not {profile!r}; "
            f"use PROFILE={committed}"
        )
    datasets = run.get("datasets", "all")
    return {
        "set_name": run["set"],
        "version": run["version"],
        "profile": committed,
        "device": run.get("device"),
        "batch_size": int(run["batch_size"]),
        "engine": run["engine"],
        "threads": run.get("hardware", {}).get("torch_threads"),
        "datasets": None if datasets == "all" else tuple(datasets),
        "force": True,
        "progress": True,
        # results from before compact storage kept every vector (run.json then records no setting)
        "activations": run.get("activations", "full"),
    }


def diff_results(committed: Path, fresh: Path) -> list[str]:
    """One line per difference between two result folders (empty: identical outputs)."""
    problems = []
    for pattern in _OUTPUT_GLOBS:
        names = sorted(
            {p.relative_to(committed).as_posix() for p in committed.glob(pattern)}
            | {p.relative_to(fresh).as_posix() for p in fresh.glob(pattern)}
        )
        for name in names:
            old, new = committed / name, fresh / name
            if not old.is_file() or not new.is_file():
                problems.append(f"{name}: only in the {'fresh run' if new.is_file() else 'committed result'}")
            elif old.read_bytes() != new.read_bytes():
                problems.append(f"{name}: bytes differ ({_how_much(old, new)})")
    old_run, new_run = (ResultsFolder(d).read_run().data for d in (committed, fresh))
    changed = [k for k in _DETERMINED if old_run.get(k) != new_run.get(k)]
    if changed:
        problems.append(f"run.json: {', '.join(changed)} differ")
    return problems


def _how_much(old: Path, new: Path) -> str:
    """A short account of a byte difference: changed cells per column, or the largest |Δ| per tensor."""
    if old.suffix == ".parquet":
        import pandas as pd

        a, b = pd.read_parquet(old), pd.read_parquet(new)
        if a.shape != b.shape or list(a.columns) != list(b.columns):
            return f"shape {a.shape} vs {b.shape}"
        counts = {c: int((~((a[c] == b[c]) | (a[c].isna() & b[c].isna()))).sum()) for c in a.columns}
        changed = [f"{c} {n}/{len(a)}" for c, n in counts.items() if n]
        return "changed rows: " + (", ".join(changed) or "none (metadata only)")
    from safetensors.numpy import load_file

    x, y = load_file(str(old)), load_file(str(new))
    if set(x) != set(y):
        return "different tensors"
    worst = max(
        (
            float(abs(x[k].astype("float64") - y[k].astype("float64")).max())
            for k in x
            if x[k].shape == y[k].shape
        ),
        default=math.nan,
    )
    return f"max |delta| {worst:.3g}"


def reproduce(slug: str, profile: str, set_name: str, version: str, keep: bool) -> list[str]:
    """Re-run ``slug``'s committed result into a temporary folder and return the differences."""
    from benchmark.harness.evaluate import EvaluateOptions, evaluate_submission

    root = paths.SUBMISSIONS_DIR
    load_submission(slug, root)
    run = committed_run(slug, set_name, version, root)
    options = EvaluateOptions(**rerun_options(run, profile))
    scratch = Path(tempfile.mkdtemp(prefix=f"sago-reproduce-{slug}-"))
    try:
        (scratch / slug).mkdir()
        shutil.copy2(root / slug / "submission.yaml", scratch / slug / "submission.yaml")
        click.echo(
            f"re-running {slug} on {set_name}/{version} ({profile}, batch {options.batch_size}, "
            f"engine {options.engine}, {options.threads} thread(s)) in {scratch}"
        )
        evaluate_submission(slug, options, root=scratch)
        return diff_results(
            results_dir(slug, set_name, version, root), results_dir(slug, set_name, version, scratch)
        )
    finally:
        if keep:
            click.echo(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("slug", required=False)
@click.option("--profile", default=None, help="The committed result's profile (checked against run.json).")
@click.option("--set", "set_name", default=DEFAULT_SET, show_default=True)
@click.option("--version", default=BOARD_SET_VERSION, show_default=True)
@click.option("--keep", is_flag=True, help="Keep the temporary folder with the fresh run.")
def main_command(slug: str | None, profile: str | None, set_name: str, version: str, keep: bool) -> None:
    """Re-run one committed result into a temporary folder and diff it with the committed files."""
    if not slug:
        raise SagoError("name the submission: make reproduce MODEL=<slug> PROFILE=<name>")
    if not profile:
        raise SagoError("name the profile: make reproduce MODEL=<slug> PROFILE=<name>")
    problems = reproduce(slug, profile, set_name, version, keep)
    for line in problems:
        click.echo(line)
    if problems:
        raise SystemExit(1)
    click.echo(f"{slug}: records, activations and run.json equal the committed result")


def main(argv: list[str] | None = None) -> int:
    """Entry point: a user error is one line and exit status 2."""
    return run_tool(main_command, argv, "reproduce")


if __name__ == "__main__":
    raise SystemExit(main())
