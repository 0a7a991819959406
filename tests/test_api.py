"""The public API: the README's "Use it from Python" example runs as written, and model strings resolve."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import benchmark
from benchmark.api import model_ref
from benchmark.errors import SagoError

REPO = Path(__file__).resolve().parent.parent


def readme_example() -> str:
    """The first ```python block of the README's "Use it from Python" section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None, "README section 'Use it from Python' has no python block"
    return block.group(1)


@pytest.mark.slow  # verifies the whole packaged sago-v1/v1 set and runs a model: ~30 s on a quiet core
def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example writes runs/ under the working directory
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme_example"})
    run = tmp_path / "runs" / "tiny" / "sago-v1" / "v1"
    assert (run / "run.json").is_file() and (run / "records" / "gsm8k.parquet").is_file()
    rows, families = printed.getvalue().split(" rows: ")
    assert int(rows) > 0 and "'baseline'" in families and "'rerun'" in families


def test_api_names_and_a_cheap_import() -> None:
    assert set(benchmark.__all__) == {"__version__", "analyze", "build_site", "evaluate", "load_variant_set"}
    assert all(callable(getattr(benchmark, name)) for name in benchmark.__all__ if name != "__version__")
    modules = subprocess.run(
        [sys.executable, "-c", "import benchmark, sys; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    assert "'torch'" not in modules and "'pandas'" not in modules


def test_model_strings_resolve_or_fail_in_one_line(tmp_path: Path) -> None:
    assert model_ref("huggingfacetb__smollm2-135m-instruct-q4_1").model.kind == "packaged"
    assert model_ref(str(tmp_path)).model.kind == "local"
    pinned = model_ref("org/name@" + "a" * 40).model
    assert pinned.kind == "hub" and pinned.revision == "a" * 40
    with pytest.raises(SagoError, match="pinned Hub id") as err:
        model_ref("org/name")  # a Hub id must name a commit
    assert "\n" not in str(err.value)
