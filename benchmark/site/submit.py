"""The Submit page's facts: an example submission.yaml, its keys, and what a new model is run with.

The example is validated by a test; the keys come from the schema (:mod:`benchmark.submissions.fields`);
the evaluation plan counts the prompts the maintainers' profile selects from the variant set new models
are run on, and reads the pace of the committed runs from their ``run.json`` (seconds per prompt on the
recorded hardware). Nothing here is a statistic of results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchmark.documents import RunDocument
from benchmark.profiles import Profile, get_profile, select_rows
from benchmark.rows import ModelRow
from benchmark.variants.frozen import VariantSet

SUBMISSION_PROFILE = "evidence"
"""The profile the maintainers run a new submission with (the paper's 16 items per dataset on a CPU)."""

EXAMPLE_FOLDER = "example-org__example-model-1b-instruct"
"""The folder name the example uses."""

EXAMPLE_YAML = """\
schema_version: 1
name: Example-Model-1B-Instruct          # shown on the site, up to 120 characters
model:
  kind: hub                              # a model on the Hugging Face Hub (safetensors weights)
  id: example-org/Example-Model-1B-Instruct
  revision: 0123456789abcdef0123456789abcdef01234567   # the full 40-hex commit id, never a branch
dtype: auto                              # auto | float32 | bfloat16 | float16
chat_template: auto                      # auto | always | never
tuning: instruct                         # base | instruct (optional)
license: Apache-2.0
parameters: 1235814400                   # as digits
contact: you@example.org                 # or a GitHub handle
url: https://huggingface.co/example-org/Example-Model-1B-Instruct   # optional, https only
notes: Anything a reader should know.   # optional, shown on the model's page
"""
"""A complete, valid submission.yaml (``tests`` runs ``sago submissions validate`` on it)."""


@dataclass(frozen=True)
class Pace:
    """How long one committed run took: the measured pace of the maintainers' hardware."""

    name: str
    prompts: int
    """prompts answered (run.json ``tokens.requests``)."""
    seconds: float
    """model time (run.json ``timings.model_seconds``)."""
    max_new_tokens: int | None
    hardware: str
    """e.g. ``CPU, 1 thread of 2 cores``."""

    @property
    def minutes(self) -> float:
        """Model time in minutes."""
        return self.seconds / 60


@dataclass(frozen=True)
class EvaluationPlan:
    """What the maintainers run a new submission with."""

    set_name: str
    """variant set, e.g. ``sago-v1``."""
    version: str
    sha256: str
    profile: Profile
    prompts: int
    """prompts per model: the rows the profile selects plus one re-run of each item's baseline."""
    paces: tuple[Pace, ...]
    """the committed runs' pace, for an estimate of the time."""

    @property
    def hours(self) -> tuple[float, float]:
        """Model time of ``prompts`` at the slowest and fastest committed pace (0, 0 without runs)."""
        each = [p.seconds / p.prompts * self.prompts / 3600 for p in self.paces]
        return (min(each), max(each)) if each else (0.0, 0.0)


def _hardware(run: RunDocument) -> str:
    hardware = run.hardware
    if hardware.accelerator:
        return f"GPU ({hardware.accelerator})"
    threads, cores = hardware.torch_threads, hardware.cpu_count
    if threads and cores:
        return f"CPU, {threads} thread{'s' if threads != 1 else ''} of a {cores}-core machine"
    return "CPU"


def pace(name: str, run: RunDocument) -> Pace | None:
    """The pace of one committed run (None when run.json lacks its timing or request count)."""
    seconds, prompts = run.timings.model_seconds, run.tokens.get("requests")
    if seconds is None or not prompts:
        return None
    cap = run.profile.max_new_tokens if run.profile else None
    return Pace(name, int(prompts), seconds, cap, _hardware(run))


def evaluation_plan(
    variants: VariantSet, runs: Mapping[str, RunDocument], models: list[ModelRow]
) -> EvaluationPlan:
    """The plan for a new submission on ``variants``, with the pace of the committed ``runs`` (slug ->
    run.json, any version: the pace is the hardware's); ``models`` give the display names."""
    profile = get_profile(SUBMISSION_PROFILE)
    selected = sum(len(select_rows(variants.frame(d), profile)) for d in variants.datasets)
    reruns = profile.items_per_dataset * len(variants.datasets)
    names = {m["slug"]: str(m.get("name") or m["slug"]) for m in models}
    paces = tuple(p for slug, run in sorted(runs.items()) if (p := pace(names.get(slug, slug), run)))
    return EvaluationPlan(variants.name, variants.version, variants.sha256, profile, selected + reruns, paces)
