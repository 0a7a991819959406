"""Submitting a model: the example validates, every listed key is a key of the schema (and every key is
listed), the docs say it once, and schema errors are plain sentences naming each key as it was written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmark.paths import REPO_ROOT, VARIANTS_DIR
from benchmark.site.submit import EXAMPLE_FOLDER, EXAMPLE_YAML
from benchmark.submissions.cli import submissions
from benchmark.submissions.fields import describe_fields
from benchmark.submissions.schema import MODEL_KINDS, Submission
from benchmark.submissions.validate import validate_tree

SUBMITTING = REPO_ROOT / "docs" / "SUBMITTING.md"


def validate(root: Path) -> tuple[int, str]:
    """``sago submissions validate --root ROOT``: exit status and every line it printed."""
    result = CliRunner().invoke(
        submissions, ["validate", "--root", str(root), "--variants", str(VARIANTS_DIR)]
    )
    return result.exit_code, result.output


def submit(tmp_path: Path, text: str, slug: str = EXAMPLE_FOLDER) -> Path:
    folder = tmp_path / "submissions" / slug
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(text, encoding="utf-8")
    return tmp_path / "submissions"


def test_the_example_on_the_submit_page_validates(tmp_path: Path) -> None:
    code, output = validate(submit(tmp_path, EXAMPLE_YAML))
    assert code == 0 and "ok: 1 submission(s), 0 result folder(s) checked" in output, output


def test_every_listed_key_is_in_the_schema_and_every_key_is_listed() -> None:
    listed = {f.path for f in describe_fields()}
    top = {k for k in Submission.model_fields}
    nested = {f"model.{k}" for block in MODEL_KINDS.values() for k in block.model_fields}
    assert listed == top | nested
    example_keys = set(re.findall(r"^(\w+):", EXAMPLE_YAML, re.MULTILINE))
    assert example_keys == top  # the example shows every top-level key


def test_submitting_md_holds_the_steps_and_the_readme_points_to_it() -> None:
    doc = SUBMITTING.read_text(encoding="utf-8")
    assert f"```yaml\n{EXAMPLE_YAML}```" in doc  # the same example as the Submit page
    for field in describe_fields():
        shown = f"`{field.parent}: {field.key}`" if field.parent else f"`{field.key}`"
        assert shown in doc, shown
    for step in (
        "Install",
        "Write",
        "Check it",
        "Open the pull request",
        "What the maintainers run",
        "Where the result",
    ):
        assert step in doc, step
    assert "## What the validator checks" in doc and "| `run.json` |" in doc
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Submit a model") :]
    assert "[docs/SUBMITTING.md](docs/SUBMITTING.md)" in section
    assert "```yaml" not in section and "What the validator checks" not in readme  # said once, in the doc


def lines(root: Path) -> list[str]:
    return [f.line() for f in validate_tree(root, VARIANTS_DIR).failures]


def test_schema_errors_name_each_key_as_written_one_line_each(tmp_path: Path) -> None:
    text = (
        EXAMPLE_YAML.replace("license:", "License:")
        .replace("  revision:", "  revison:")
        .replace("dtype: auto", "dtype: fp16")
        .replace("contact: you@example.org", "")
    )
    found = lines(submit(tmp_path, text))
    problems = [line.split(": ", 1)[1] for line in found]
    assert sorted(p.split(" — ")[0] for p in problems) == sorted(
        [
            "'revision' under 'model' is missing",
            "'revison' under 'model' is not a key a model of kind hub has",
            "'dtype' is 'fp16', which is not one of auto, float32, bfloat16, float16",
            "'license' is missing",
            "'License' is not a key submission.yaml has",
            "'contact' is missing",
        ]
    )
    assert any("did you mean 'license'?" in p for p in problems)
    assert any("did you mean 'revision'?" in p for p in problems)
    for line in found:
        assert line.startswith(f"submissions/{EXAMPLE_FOLDER}/submission.yaml: ")
        assert "model.hub" not in line and "see see" not in line and "described in see" not in line
        assert "should" not in line.split(" — ")[0]  # our sentence, not pydantic's


@pytest.mark.parametrize(
    ("old", "new", "sentence"),
    [
        ("kind: hub", "kind: hb", "'kind' under 'model' is 'hb', which is not one of hub, packaged, local"),
        ("parameters: 1235814400", "parameters: lots", "'parameters' is 'lots', not a whole number"),
        ("parameters: 1235814400", "parameters: 0", "'parameters' is 0, which is out of range"),
        ("url: https://", "url: http://", "'url' is 'http://huggingface.co/"),
        ("  id: example-org/", "  id: not a repo ", "'id' under 'model' is 'not a repo Example-Model"),
        ("name: Example-Model-1B-Instruct", "name: ''", "'name' is empty"),
        ("tuning: instruct", "tuning: chat", "'tuning' is 'chat', which is not one of base, instruct"),
    ],
)
def test_each_kind_of_schema_error_reads_as_a_sentence(
    tmp_path: Path, old: str, new: str, sentence: str
) -> None:
    assert old in EXAMPLE_YAML
    (line,) = lines(submit(tmp_path, EXAMPLE_YAML.replace(old, new, 1)))
    assert sentence in line and " — " in line, line


def test_a_model_block_written_as_text_says_how_to_indent(tmp_path: Path) -> None:
    text = re.sub(r"model:\n(  .*\n)+", "model: example-org/Example-Model-1B-Instruct\n", EXAMPLE_YAML)
    (line,) = lines(submit(tmp_path, text))
    assert "'model' is 'example-org/Example-Model-1B-Instruct', not a block of keys — indent its keys" in line
