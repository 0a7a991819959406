"""Batch planner 2: token-sorted batches with the rerun control rows packed among the variants, recorded
as the run's ``planner``; a checkpoint cut by another planner is never resumed by mistake."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.toy import toy_variant_set

from benchmark.errors import SagoError
from benchmark.harness.collect import (
    PLANNER,
    Batch,
    Task,
    collect,
    global_batches,
    prompt_length,
    rerun_task,
    select_tasks,
)
from benchmark.harness.evaluate import (
    EvaluateOptions,
    checkpoint_plan,
    evaluate_model,
    kept_batches,
    resumed_planner,
)
from benchmark.harness.finalize import finalize
from benchmark.models.fake import FakeBackend
from benchmark.profiles import get_profile
from benchmark.schema import BASELINE_FAMILY, RERUN_FAMILY
from benchmark.testing import tiny_backend

SMOKE = get_profile("smoke")


def _repeats_its_baseline_batch(batch: Batch, baselines: tuple[Batch, ...]) -> bool:
    """A batch of control rows only, holding exactly the prompts of their baseline batch: run again as
    they were, the control would measure nothing."""
    items = {t.item for t in batch.tasks}
    return all(t.family == RERUN_FAMILY for t in batch.tasks) and any(
        items == {t.item for t in b.tasks} for b in baselines
    )


def _naive_cut(rows: list[Task], size: int, length: Callable[[str], int]) -> list[list[str]]:
    ordered = sorted(rows, key=lambda t: (length(t.prompt), t.key))
    return [[t.key for t in ordered[i : i + size]] for i in range(0, len(ordered), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 32])
def test_planner_2_runs_every_task_once_in_token_order_and_keeps_the_control(size: int) -> None:
    backend, tasks = tiny_backend(), select_tasks(toy_variant_set(), SMOKE, None)
    tokens = prompt_length(backend)
    plan = global_batches(tasks, size, planner=2, length=tokens)
    baselines = [t for t in tasks if t.family == BASELINE_FAMILY]
    rest = [t for t in tasks if t.family != BASELINE_FAMILY] + [rerun_task(t) for t in baselines]
    planned = [t.key for b in plan.baselines + plan.rest for t in b.tasks]
    assert sorted(planned) == sorted(t.key for t in baselines + rest) and len(planned) == len(set(planned))
    # baselines first, in token order; then one phase of variants and controls, no tiny phase-end batch
    assert [[t.key for t in b.tasks] for b in plan.baselines] == _naive_cut(baselines, size, tokens)
    assert {b.phase for b in plan.rest} == {"var"} and len(plan.rest) == math.ceil(len(rest) / size)
    assert all(len(b.tasks) <= size for b in plan.rest)
    naive = _naive_cut(rest, size, tokens)
    assert naive != _naive_cut(rest, size, len)  # token order is not character order here
    if size > 1:
        assert not any(_repeats_its_baseline_batch(b, plan.baselines) for b in plan.rest)
        repaired = sum(
            _repeats_its_baseline_batch(Batch("var", tuple(t for t in rest if t.key in keys)), plan.baselines)
            for keys in naive
        )
        moved = sum(set(k) != {t.key for t in b.tasks} for k, b in zip(naive, plan.rest, strict=True))
        assert moved <= 2 * repaired  # a repair swaps one row between two batches; nothing else moves
    else:
        assert [[t.key for t in b.tasks] for b in plan.rest] == naive


def _task(item: int, variant: str, prompt: str) -> Task:
    family = variant.split("/")[0]
    return Task("d", f"{item:02d}", variant, family, "none", 0.0, prompt)


def test_a_control_batch_that_would_repeat_its_baseline_batch_swaps_a_row() -> None:
    """Baselines far longer than every variant: cut naively, the control rows land in batches of exactly
    their baseline batches (the control would run the same prompts again); the planner swaps one row of
    each such batch with a neighbour, keeps every batch within the batch size and every row once."""
    baselines = [_task(i, "baseline/none/0", "q" * (40 + i)) for i in range(4)]
    variants = [_task(i, "case/all/1", "v" * (1 + i)) for i in range(4)]
    rest = variants + [rerun_task(t) for t in baselines]
    plan = global_batches(baselines + variants, 2, planner=2)
    naive = [Batch("var", tuple(t for t in rest if t.key in keys)) for keys in _naive_cut(rest, 2, len)]
    assert sum(_repeats_its_baseline_batch(b, plan.baselines) for b in naive) == 2  # the trap is real
    assert not any(_repeats_its_baseline_batch(b, plan.baselines) for b in plan.rest)
    keys = [t.key for b in plan.rest for t in b.tasks]
    assert sorted(keys) == sorted(t.key for t in rest) and len(keys) == len(set(keys))
    assert [len(b.tasks) for b in plan.rest] == [2, 2, 2, 2]


def test_planner_1_is_the_plan_every_committed_result_was_cut_by() -> None:
    """Character-sorted variants at the batch size, then the control rows in a phase of their own at half
    of it: re-planned, a committed result gets its own batches (so its bytes) back."""
    tasks = select_tasks(toy_variant_set(), SMOKE, None)
    plan = global_batches(tasks, 4, planner=1, length=prompt_length(tiny_backend()))
    var = [b for b in plan.rest if b.phase == "var"]
    control = [b for b in plan.rest if b.phase == "rerun"]
    assert plan.rest == (*var, *control) and var and control
    assert all(len(b.tasks) == 2 for b in control[:-1]) and all(len(b.tasks) <= 4 for b in var)
    lengths = [len(t.prompt) for b in var for t in b.tasks]
    assert lengths == sorted(lengths)
    with pytest.raises(SagoError, match="batch planner 3 is unknown"):
        global_batches(tasks, 4, planner=3)


def _collect(out: Path, planner: int, *, force: bool = False) -> None:
    collect(
        FakeBackend(),
        toy_variant_set(),
        out,
        profile=SMOKE,
        batch_size=4,
        progress=False,
        planner=planner,
        force=force,
    )


def test_new_runs_record_planner_2_and_planner_1_records_nothing(tmp_path: Path) -> None:
    """run.json names the planner a re-run needs; a planner 1 run writes the bytes it always wrote."""
    assert PLANNER == 2
    for planner in (1, 2):
        out = tmp_path / str(planner)
        _collect(out, planner)
        plan = json.loads((out / "checkpoint" / "rank-0" / "plan.json").read_text())
        assert plan.get("planner") == (None if planner == 1 else 2)
        finalize(out, world_size=1)
        assert json.loads((out / "run.json").read_text()).get("planner") == (None if planner == 1 else 2)


@pytest.mark.parametrize(("first", "then"), [(1, 2), (2, 1)])
def test_a_checkpoint_of_another_planner_is_refused_and_force_discards_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: int, then: int
) -> None:
    _collect(tmp_path, first)
    message = (
        f"planner differ: its batches were cut by batch planner {first}, this run cuts them with planner"
    )
    with pytest.raises(SagoError, match=f"{message} {then}, and a batch's composition decides its floats"):
        _collect(tmp_path, then)
    _collect(tmp_path, then, force=True)
    assert "--force discarded the checkpoint of another run (planner differ;" in capsys.readouterr().err


def test_a_plain_restart_resumes_a_checkpoint_with_the_planner_that_cut_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped under planner 1 (started before planner 2 existed) finishes as a planner 1 run when
    restarted with the defaults: its finished batches are kept and it writes a planner 1 run's bytes. An
    explicit planner (a re-run of a committed result) or --force keeps its own."""
    from benchmark.harness import checkpoint

    old = EvaluateOptions(set_name="toy", version="v1", profile="smoke", progress=False, planner=1)
    default = replace(old, planner=PLANNER)

    def run(options: EvaluateOptions, out: Path) -> Path | None:
        return evaluate_model(
            None, options, out, label="fake", backend=FakeBackend(), variant_set=toy_variant_set()
        )

    write = checkpoint.PartStore.write
    written: list[str] = []

    def stop_after_three(store: checkpoint.PartStore, part: checkpoint.Part) -> None:
        if len(written) == 3:
            raise KeyboardInterrupt
        write(store, part)
        written.append(part.name)

    monkeypatch.setattr(checkpoint.PartStore, "write", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        run(old, tmp_path / "out")
    monkeypatch.setattr(checkpoint.PartStore, "write", write)
    assert resumed_planner(checkpoint_plan(tmp_path / "out"), default) == 1
    assert resumed_planner(checkpoint_plan(tmp_path / "out"), replace(default, force=True)) == PLANNER
    assert resumed_planner(checkpoint_plan(tmp_path / "new"), default) == PLANNER
    # the refusal's count reads the same stored plan: planner 1's batches, 3 of them finished
    stored = json.loads((tmp_path / "out" / "checkpoint" / "rank-0" / "plan.json").read_text())
    total = global_batches(select_tasks(toy_variant_set(), SMOKE, None), stored["batch_size"], planner=1)
    assert kept_batches(tmp_path / "out", default, toy_variant_set()) == (
        f"3 of {len(total.baselines) + len(total.rest)} batches"
    )
    assert kept_batches(tmp_path / "new", default, toy_variant_set()) == "no finished batch"
    kept = sorted(p.name for p in (tmp_path / "out" / "checkpoint" / "rank-0").glob("*.parquet"))
    assert len(kept) == 3
    assert run(default, tmp_path / "out") is not None
    assert run(old, tmp_path / "once") is not None
    assert "planner" not in json.loads((tmp_path / "out" / "run.json").read_text())
    made = sorted(p.relative_to(tmp_path / "once") for p in (tmp_path / "once").glob("*/*.*"))
    assert made and any(str(p).startswith("records/") for p in made)
    for name in made:
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "once" / name).read_bytes(), name
