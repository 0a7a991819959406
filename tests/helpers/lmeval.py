"""lm-eval 0.4.13's output files, written without lm-eval, from responses we choose.

The layout and fields are those a real ``lm_eval ... --log_samples --output_path OUT`` run writes (seen
in ``tests/test_lmeval_slow.py``'s real run): ``OUT/<model>/results_<time>.json`` and one
``samples_<task>_<time>.jsonl`` per task. The documents are loaded by each exported task's
``custom_dataset`` hook, as lm-eval loads them.
"""

from __future__ import annotations

import json
import re
import runpy
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import datasets
import pytest
import yaml

from benchmark.cli import main as sago_main

REPO = Path(__file__).resolve().parent.parent.parent

TIME = "2026-12-01T10-00-00.000000"
GREEDY = {"until": [], "max_gen_toks": 32, "do_sample": False, "temperature": 0.0}


class TaskLoader(yaml.SafeLoader):
    """lm-eval's task YAML: ``!function utils.process_results`` reads as ``utils.process_results``."""


TaskLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def load_task(path: Path) -> Any:
    """One exported YAML file, as its values read (``!function`` values as their dotted names)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=TaskLoader)  # noqa: S506 - a SafeLoader


def task_configs(tasks_dir: Path) -> dict[str, dict[str, Any]]:
    """Every exported task (not the group) by name."""
    configs = [load_task(p) for p in sorted(tasks_dir.glob("*.yaml"))]
    return {c["task"]: c for c in configs if "group" not in c}


def task_docs(config: Mapping[str, Any], tasks_dir: Path) -> list[dict[str, Any]]:
    """The documents of one task, loaded as lm-eval 0.4.13 loads them: the ``custom_dataset`` function
    imported from the task folder's module, called with the task's metadata and ``dataset_kwargs``."""
    module, function = str(config["custom_dataset"]).rsplit(".", 1)
    hook = runpy.run_path(str(tasks_dir / f"{module}.py"))[function]
    loaded = hook(**config["metadata"], **config["dataset_kwargs"])
    assert isinstance(loaded, datasets.DatasetDict)
    return [dict(row) for row in loaded[config["test_split"]]]


def write_lm_eval_output(
    tasks_dir: Path,
    out: Path,
    respond: Callable[[Mapping[str, Any]], str],
    *,
    context: Callable[[str], str] = lambda prompt: prompt,
    gen_kwargs: Mapping[str, Any] | None = None,
    results_extra: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write one samples file per exported task and the run's results file; returns the samples files.

    ``respond(doc)`` is the model's answer to a document; ``context`` renders its prompt as lm-eval would
    have sent it (identity: no chat template); ``gen_kwargs`` replaces the task's generation settings.
    """
    folder = out / "model"
    folder.mkdir(parents=True, exist_ok=True)
    configs = task_configs(tasks_dir)
    written = []
    for task, config in configs.items():
        settings = dict(gen_kwargs if gen_kwargs is not None else config["generation_kwargs"])
        lines = []
        for doc_id, doc in enumerate(task_docs(config, tasks_dir)):
            request = {"gen_args_0": {"arg_0": context(doc["prompt"]), "arg_1": settings}}
            answer = respond(doc)
            lines.append(
                {
                    "doc_id": doc_id,
                    "doc": doc,
                    "target": str(doc["answers"]),
                    "arguments": request,
                    "resps": [[answer]],
                    "filtered_resps": [answer],
                    "filter": "none",
                    "metrics": ["accuracy"],
                    "accuracy": 0.0,
                }
            )
        path = folder / f"samples_{task}_{TIME}.jsonl"
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
        written.append(path)
    results = {
        "results": {},
        "configs": configs,
        "n-shot": {task: 0 for task in configs},
        "config": {
            "model": "hf",
            "model_args": {"pretrained": "/models/fake-model", "dtype": "float32"},
            "model_dtype": "torch.float32",
            "batch_size": "8",
            "device": "cpu",
            "limit": None,
        },
        "lm_eval_version": "0.4.13",
        "model_name": "/models/fake-model",
        "system_instruction": None,
        "chat_template": None,
        "chat_template_sha": None,
        **dict(results_extra or {}),
    }
    (folder / f"results_{TIME}.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return written


def readme_commands() -> list[list[str]]:
    """The bash block of the README's "Already using lm-evaluation-harness?" section, one argv each."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Already using lm-evaluation-harness?", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None, "the README section has no bash block"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def run_readme(
    workdir: Path, run_lm_eval: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """Run the README's commands in ``workdir`` (globs expanded there): ``sago`` through the CLI,
    ``lm_eval`` through ``run_lm_eval``; returns what each sago command printed."""
    printed = []
    for argv in readme_commands():
        expanded = [a for arg in argv for a in (sorted(map(str, workdir.glob(arg))) if "*" in arg else [arg])]
        if argv[0] == "lm_eval":
            run_lm_eval(expanded)
            continue
        assert argv[0] == "sago", f"the README block runs only sago and lm_eval, not {argv[0]}"
        status = sago_main(expanded[1:])
        captured = capsys.readouterr()
        assert status == 0, captured.err
        printed.append(captured.out)
    return printed


def option(argv: list[str], name: str) -> str:
    """The value after ``name`` in ``argv``."""
    return argv[argv.index(name) + 1]
