"""Collection and finalisation: contents of the result files, profiles, shards, determinism, resume."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.results import assert_same_results, read_activations, read_records
from helpers.toy import FramesVariantSet, toy_frame, toy_variant_set

from benchmark.errors import SagoError
from benchmark.harness.checkpoint import PartStore
from benchmark.harness.collect import (
    PLANNERS,
    collect,
    finish_rank,
    plan_batches,
    run_baseline_phase,
    run_variant_phase,
    second_worker,
    select_tasks,
    start_rank,
)
from benchmark.harness.finalize import finalize
from benchmark.models.fake import FakeBackend
from benchmark.profiles import get_profile, select_rows
from benchmark.schema import RECORD_COLUMNS
from benchmark.testing import tiny_backend

SMOKE = get_profile("smoke")


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> None:
    """The tiny model is fastest single-threaded, and one thread count keeps runs bit-identical."""
    torch.set_num_threads(1)


def _collect_ranks(backend, variant_set, out: Path, *, world_size: int, batch_size: int = 4) -> None:
    """Every rank of a ``world_size``-rank run in this process: all baseline phases (the barrier), then
    all variant phases."""
    shares = [
        start_rank(
            backend,
            variant_set,
            out,
            profile=SMOKE,
            batch_size=batch_size,
            datasets=None,
            rank=r,
            world_size=world_size,
        )
        for r in range(world_size)
    ]
    for share in shares:
        run_baseline_phase(share, backend, SMOKE, progress=False)
    for share in shares:
        run_variant_phase(share, backend, SMOKE, progress=False)
        finish_rank(share, backend)


def _run(backend, out: Path, *, variant_set=None, world_size: int = 1, batch_size: int = 4) -> None:
    variant_set = variant_set or toy_variant_set()
    if world_size == 1:
        collect(backend, variant_set, out, profile=SMOKE, batch_size=batch_size, progress=False)
    else:
        _collect_ranks(backend, variant_set, out, world_size=world_size, batch_size=batch_size)
    finalize(out, world_size=world_size)


def test_smoke_profile_keeps_extremes_controls_and_low_ranks() -> None:
    rows = select_rows(toy_frame("alpha", n_items=8), SMOKE)
    assert sorted(rows["item_rank"].unique()) == [0, 1, 2, 3]
    item = rows[rows["item_rank"] == 0]
    assert sorted(item.loc[item["family"] == "politeness", "strength"]) == [-10.0, -2.0, 2.0, 10.0]
    spacing = item[(item["family"] == "spacing") & (item["place"] == "prefix")]
    assert sorted(spacing["strength"]) == [1.0, 20.0]  # 5 is neither weakest nor strongest
    assert {"baseline", "identity"} <= set(item["family"])
    every = select_rows(toy_frame("alpha", n_items=8), get_profile("cpu"))
    assert len(every) == len(toy_frame("alpha", n_items=8))


def test_batches_are_sorted_by_prompt_length_and_cover_every_task() -> None:
    tasks = select_tasks(toy_variant_set(), SMOKE, None)
    batches = plan_batches("var", tasks, 5)
    lengths = [len(t.prompt) for b in batches for t in b.tasks]
    assert lengths == sorted(lengths)
    assert sorted(t.key for b in batches for t in b.tasks) == sorted(t.key for t in tasks)
    assert [len(b.tasks) for b in batches][:-1] == [5] * (len(batches) - 1)


def test_result_files_follow_the_contract(tmp_path: Path) -> None:
    _run(FakeBackend(), tmp_path)
    records = read_records(tmp_path)
    assert sorted(records) == ["alpha", "beta"]
    alpha = records["alpha"]
    assert tuple(alpha.columns) == RECORD_COLUMNS
    assert list(zip(alpha["item_id"], alpha["variant_id"], strict=True)) == sorted(
        zip(alpha["item_id"], alpha["variant_id"], strict=True)
    )
    # per item: baseline + identity + rerun + 4 politeness + 8 spacing/punctuation extremes
    assert alpha.groupby("item_id").size().tolist() == [15, 15, 15, 15]
    rerun = alpha[alpha["family"] == "rerun"]
    assert set(rerun["variant_id"]) == {"rerun/none/0"} and set(rerun["place"]) == {"none"}
    base = alpha[alpha["family"] == "baseline"].set_index("item_id")
    # the rerun is the baseline prompt again: same greedy response, same y_0 scored
    assert (rerun.set_index("item_id")["response"] == base["response"]).all()
    assert (base["baseline_tokens"] == base["response"].str.split().str.len()).all()
    assert not alpha[["logprob_sum", "entropy_mean"]].isna().any().any()
    acts = read_activations(tmp_path)["alpha"]
    assert set(acts) == {f"{i}|{v}" for i, v in zip(alpha["item_id"], alpha["variant_id"], strict=True)}
    assert all(a.dtype == np.float16 and a.shape == (3, 8) for a in acts.values())
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["schema_version"] == 1 and run["profile"]["name"] == "smoke" and run["seed"] == 42
    assert run["counts"] == {"alpha": 60, "beta": 60} and run["tokens"]["requests"] == 120
    assert run["variant_set_sha256"] == toy_variant_set().sha256
    assert not (tmp_path / "checkpoint").exists()


def test_baseline_scores_its_own_response(tmp_path: Path) -> None:
    """y_0 under x_0 is scored with y_0 given, so baseline confidence numbers are real numbers."""
    _run(tiny_backend(batch_size=4), tmp_path)
    alpha = read_records(tmp_path)["alpha"]
    base = alpha[alpha["family"] == "baseline"]
    assert (base["baseline_tokens"] > 0).all() and (base["logprob_sum"] < 0).all()
    assert (base["response_tokens"] == 32).all() and not base["finished"].any()
    for _, row in base.iterrows():
        assert row["logprob_mean"] == pytest.approx(row["logprob_sum"] / row["baseline_tokens"])
    rerun = alpha[alpha["family"] == "rerun"]
    np.testing.assert_allclose(rerun["logprob_sum"], base["logprob_sum"], atol=1e-3)


def test_two_runs_give_identical_records_on_cpu(tmp_path: Path) -> None:
    _run(tiny_backend(batch_size=4), tmp_path / "a")
    _run(tiny_backend(batch_size=4), tmp_path / "b")
    assert_same_results(tmp_path / "a", tmp_path / "b")


def test_shards_merge_to_the_single_process_result(tmp_path: Path) -> None:
    _run(FakeBackend(), tmp_path / "one")
    _run(FakeBackend(), tmp_path / "three", world_size=3)
    assert_same_results(tmp_path / "one", tmp_path / "three")


def test_finalize_refuses_missing_or_unfinished_ranks(tmp_path: Path) -> None:
    _collect_ranks(FakeBackend(), toy_variant_set(), tmp_path, world_size=2)
    rank_1 = tmp_path / "checkpoint" / "rank-1"
    rank_1.rename(tmp_path / "rank-1")  # rank 1 never started
    with pytest.raises(SagoError, match="ranks"):
        finalize(tmp_path)
    (tmp_path / "rank-1").rename(rank_1)
    (tmp_path / "checkpoint" / "rank-1" / "done.json").unlink()
    with pytest.raises(SagoError, match="rank 1 has not finished"):
        finalize(tmp_path)


def test_resume_skips_finished_batches_and_ignores_half_written_files(tmp_path: Path) -> None:
    _run(FakeBackend(), tmp_path / "straight")
    out = tmp_path / "resumed"
    first = collect(FakeBackend(), toy_variant_set(), out, profile=SMOKE, batch_size=4, progress=False)
    store = PartStore(first.folder)
    # Simulate a crash: drop the last five parts, leave one orphan activation file and a temp file.
    for name in sorted(store.finished())[-5:]:
        (store.folder / f"{name}.parquet").unlink()
    (store.folder / "done.json").unlink()
    orphan = min(store.folder.glob("*.safetensors"))
    (store.folder / f".{orphan.stem}.parquet.123.tmp").write_bytes(b"half a file")
    fake = FakeBackend()
    again = collect(fake, toy_variant_set(), out, profile=SMOKE, batch_size=4, progress=False)
    assert again.batches_run == 5 and again.batches_skipped == first.batches_run - 5
    assert len(fake.calls) == 5
    finalize(out)
    assert_same_results(tmp_path / "straight", out)


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path: Path) -> None:
    collect(FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    with pytest.raises(SagoError, match="batch_size.*--force"):
        collect(FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=3, progress=False)


def test_force_keeps_a_checkpoint_of_the_same_run_and_says_so(tmp_path: Path, capsys) -> None:
    """Ctrl-C, then "start again with the same options" --force included, used to throw the finished
    batches away without a word; a checkpoint whose plan.json is this run's is now resumed."""
    first = collect(FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    store = PartStore(first.folder)
    for name in sorted(store.finished())[-3:]:  # the batches a Ctrl-C left unfinished
        (store.folder / f"{name}.parquet").unlink()
    total = first.batches_run
    fake = FakeBackend()
    again = collect(
        fake, toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False, force=True
    )
    assert again.batches_run == 3 and len(fake.calls) == 3
    said = capsys.readouterr().err
    assert f"--force kept the checkpoint of this same run ({total - 3} of {total} batches finished)" in said


def test_force_discards_a_checkpoint_of_another_run_and_says_why(tmp_path: Path, capsys) -> None:
    first = collect(FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    done = first.batches_run
    fake = FakeBackend()
    again = collect(
        fake, toy_variant_set(), tmp_path, profile=SMOKE, batch_size=3, progress=False, force=True
    )
    assert again.batches_skipped == 0 and again.batches_run > 0
    said = capsys.readouterr().err
    assert (
        f"--force discarded the checkpoint of another run (batch_size differ; {done} finished batches)"
        in said
    )


def test_corrupted_sets_are_refused_with_one_line(tmp_path: Path) -> None:
    frame = toy_frame("alpha")
    no_baseline = FramesVariantSet("x", {"alpha": frame[frame["family"] != "baseline"]})
    missing_column = FramesVariantSet("x", {"alpha": frame.drop(columns=["prompt"])})
    duplicated = FramesVariantSet("x", {"alpha": pd.concat([frame, frame.head(1)])})
    for broken, message in (
        (no_baseline, "no baseline row"),
        (missing_column, "lacks columns"),
        (duplicated, "repeats"),
    ):
        with pytest.raises(SagoError, match=message) as err:
            collect(FakeBackend(), broken, tmp_path, profile=SMOKE, progress=False)
        assert "\n" not in str(err.value)
    with pytest.raises(SagoError, match="unknown dataset 'gamma'"):
        collect(FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, datasets=["gamma"], progress=False)


def test_fake_backend_is_a_pure_function_of_the_request() -> None:
    from benchmark.models.protocol import VariantRequest

    fake = FakeBackend()
    one = fake.run([VariantRequest("k", "Who wrote Hamlet?", "William Shakespeare")], max_new_tokens=8)[0]
    many = fake.run(
        [
            VariantRequest("j", "Other prompt", None),
            VariantRequest("k", "Who wrote Hamlet?", "William Shakespeare"),
        ],
        max_new_tokens=8,
    )[1]
    assert (one.response, one.logprob_sum, one.entropy_mean) == (
        many.response,
        many.logprob_sum,
        many.entropy_mean,
    )
    np.testing.assert_array_equal(one.hidden, many.hidden)
    assert one.baseline_tokens == 2 and one.logprob_mean == pytest.approx(one.logprob_sum / 2)
    assert math.isnan(fake.run([VariantRequest("k", "x", None)], max_new_tokens=8)[0].logprob_sum)


def test_more_ranks_than_items_still_merges(tmp_path: Path) -> None:
    small = toy_variant_set(("alpha",), n_items=2)
    _run(FakeBackend(), tmp_path / "one", variant_set=small)
    _run(FakeBackend(), tmp_path / "many", variant_set=small, world_size=3)  # rank 2 has no item
    assert_same_results(tmp_path / "one", tmp_path / "many")


def test_compact_activations_give_the_same_activation_deltas(tmp_path: Path) -> None:
    """A compact run keeps the baselines' vectors and each other row's per-layer cosine to them; the
    activation measures computed from it equal those of a full run bit for bit, at a fraction of the bytes."""
    from benchmark.axes.deltas import align
    from benchmark.axes.measures import MEASURES
    from benchmark.safetensors_check import read_safetensors
    from benchmark.submissions.validate_results import activation_layout_ok

    backend, variant_set = tiny_backend(), toy_variant_set()
    full, compact = tmp_path / "full", tmp_path / "compact"
    collect(backend, variant_set, full, profile=SMOKE, batch_size=4, progress=False)
    finalize(full)
    collect(backend, variant_set, compact, profile=SMOKE, batch_size=4, progress=False, activations="compact")
    finalize(compact)
    assert json.loads((compact / "run.json").read_text())["activations"] == "compact"
    assert "activations" not in json.loads((full / "run.json").read_text())
    assert read_records(full).keys() == read_records(compact).keys()
    for name, frame in read_records(full).items():
        pd.testing.assert_frame_equal(frame, read_records(compact)[name])
        a, c = read_activations(full)[name], read_activations(compact)[name]
        assert all(c[k].ndim == (2 if k.endswith("baseline/none/0") else 1) for k in c)
        assert activation_layout_ok(read_safetensors(compact / "activations" / f"{name}.safetensors"))
        variants = variant_set.frame(name)
        for fn in (MEASURES.get("act_cos_last").delta, MEASURES.get("act_cos_mean").delta):
            np.testing.assert_array_equal(
                fn(align(frame, variants, a), None),
                fn(align(frame, variants, c), None),  # type: ignore[arg-type]
            )
    size = lambda d: sum(p.stat().st_size for p in (d / "activations").glob("*"))  # noqa: E731
    assert size(compact) < size(full)


def test_unknown_activation_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SagoError, match="activations must be"):
        collect(
            tiny_backend(), toy_variant_set(), tmp_path, profile=SMOKE, progress=False, activations="half"
        )


def test_a_checkpoint_this_machine_did_not_start_is_not_resumed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A planted checkpoint (a plan whose started_by token this machine never issued, not tracked by git)
    is refused in one line; the checkpoint this machine started resumes."""
    monkeypatch.setenv("SAGO_CACHE", str(tmp_path / "cache"))
    backend, variant_set = FakeBackend(), toy_variant_set()
    out = tmp_path / "run"
    start_rank(backend, variant_set, out, profile=SMOKE, batch_size=4, datasets=None, rank=0, world_size=1)
    start_rank(backend, variant_set, out, profile=SMOKE, batch_size=4, datasets=None, rank=0, world_size=1)
    plan = out / "checkpoint" / "rank-0" / "plan.json"
    data = json.loads(plan.read_text())
    data["started_by"] = "0123456789abcdef"
    plan.write_text(json.dumps(data))
    with pytest.raises(SagoError, match="did not start and the checkout does not track"):
        start_rank(
            backend, variant_set, out, profile=SMOKE, batch_size=4, datasets=None, rank=0, world_size=1
        )


@pytest.mark.parametrize("planner", PLANNERS)
def test_only_the_batches_holding_rerun_controls_are_run_as_the_control(tmp_path: Path, planner: int) -> None:
    """The collector tells the backend which batches hold rerun control rows (the pooled engine cuts them
    at another micro-batch size); every other batch, baselines and variants, is run as itself. Planner 1
    cuts the controls in batches of their own, planner 2 packs them among the variants."""
    seen: list[tuple[bool, set[bool]]] = []

    class Recording(FakeBackend):
        def run(self, requests, *, max_new_tokens, rerun_control=False):  # type: ignore[no-untyped-def]
            seen.append((rerun_control, {r.key.endswith("|rerun/none/0") for r in requests}))
            return super().run(requests, max_new_tokens=max_new_tokens, rerun_control=rerun_control)

    collect(
        Recording(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False, planner=planner
    )
    assert all(flag == (True in controls) for flag, controls in seen)
    assert any(flag for flag, _ in seen) and not all(flag for flag, _ in seen)
    mixed = any(controls == {True, False} for _, controls in seen)
    assert mixed == (planner == 2)  # planner 1: a batch is all control rows or none


def _started_in_variant_phase(backend, out: Path, *, finished_variants: int):  # type: ignore[no-untyped-def]
    """A one-process run stopped after its baselines and its first ``finished_variants`` variant batches."""
    share = start_rank(
        backend, toy_variant_set(), out, profile=SMOKE, batch_size=4, datasets=None, rank=0, world_size=1
    )
    run_baseline_phase(share, backend, SMOKE, progress=False)
    first = replace(share, rest=share.rest[:finished_variants])
    run_variant_phase(first, backend, SMOKE, progress=False)
    return share


def test_a_second_worker_from_the_end_gives_the_one_process_bytes(tmp_path: Path) -> None:
    """The run's own process takes the first batches, the second worker the rest from the last one
    backwards; the restarted run then only finalizes, and the result is an uninterrupted run's, bit for
    bit, on the real tiny model."""
    _run(tiny_backend(batch_size=4), tmp_path / "straight")
    out = tmp_path / "two"
    share = _started_in_variant_phase(tiny_backend(batch_size=4), out, finished_variants=3)
    assert len(share.rest) > 6
    helper = second_worker(
        tiny_backend(batch_size=4), toy_variant_set(), out, profile=SMOKE, batch_size=4, progress=False
    )
    assert (helper.batches_run, helper.batches_skipped) == (len(share.rest) - 3, 3)
    assert PartStore(helper.folder).finished() >= {b.name for b in share.rest}
    # the run's own process, restarted: nothing left to compute
    again = collect(
        tiny_backend(batch_size=4), toy_variant_set(), out, profile=SMOKE, batch_size=4, progress=False
    )
    assert (again.batches_run, again.batches_skipped) == (0, len(share.baselines) + len(share.rest))
    finalize(out)
    assert_same_results(tmp_path / "straight", out)


def test_a_restarted_second_worker_passes_its_own_stretch_and_stops_where_it_meets_the_run(
    tmp_path: Path,
) -> None:
    """The run's own process finished the first 3 variant batches, an earlier second worker the last 2;
    a restarted second worker goes on from the last unfinished batch down to batch 4 and no further."""
    share = _started_in_variant_phase(FakeBackend(), tmp_path, finished_variants=3)
    run_variant_phase(replace(share, rest=share.rest[-2:]), FakeBackend(), SMOKE, progress=False)
    fake = FakeBackend()
    ran = second_worker(fake, toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    middle = share.rest[3:-2]
    assert (ran.batches_run, ran.batches_skipped) == (len(middle), 5)
    assert fake.calls == [len(b.tasks) for b in reversed(middle)]  # one call per batch, last first
    assert PartStore(ran.folder).finished() >= {b.name for b in share.rest}
    again = FakeBackend()  # everything finished: a third start computes nothing
    assert (
        second_worker(
            again, toy_variant_set(), tmp_path, profile=SMOKE, progress=False, batch_size=4
        ).batches_run
        == 0
    )
    assert again.calls == []


def test_the_run_still_running_skips_what_a_second_worker_finished_meanwhile(tmp_path: Path) -> None:
    """While the run's own process computes its 4th variant batch, a second worker does every batch from
    the last down to that one; the run then computes nothing more, and finalizes to the one-process
    result."""
    _run(FakeBackend(), tmp_path / "straight")
    out = tmp_path / "two"
    share = _started_in_variant_phase(FakeBackend(), out, finished_variants=3)

    class HelpedOnce(FakeBackend):
        helped = False

        def run(self, requests, **options):  # type: ignore[no-untyped-def]
            if not self.helped:
                self.helped = True
                helper = FakeBackend()
                second_worker(helper, toy_variant_set(), out, profile=SMOKE, batch_size=4, progress=False)
            return super().run(requests, **options)

    own = HelpedOnce()
    assert run_variant_phase(share, own, SMOKE, progress=False) == (1, len(share.rest) - 1)
    assert len(own.calls) == 1  # the batch both computed where they crossed; nothing after it
    finish_rank(share, own)
    finalize(out)
    assert_same_results(tmp_path / "straight", out)


def test_a_second_worker_keeps_the_part_the_run_wrote_while_it_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the second worker computes its first batch, the run's own process finishes every batch (and
    may go on to finalize): the second worker does not write its copy over the run's part."""
    share = _started_in_variant_phase(FakeBackend(), tmp_path, finished_variants=3)
    written: list[str] = []
    write = PartStore.write
    monkeypatch.setattr(PartStore, "write", lambda s, part: (written.append(part.name), write(s, part)))

    class Overtaken(FakeBackend):
        def run(self, requests, **options):  # type: ignore[no-untyped-def]
            if not self.calls:
                run_variant_phase(share, FakeBackend(), SMOKE, progress=False)
            return super().run(requests, **options)

    helper = Overtaken()
    ran = second_worker(helper, toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    assert (ran.batches_run, len(helper.calls)) == (0, 1)
    assert written == [b.name for b in share.rest[3:]]  # the run's parts only, each once


def _result_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_second_worker_stops_when_the_run_finalizes_while_it_computes(tmp_path: Path) -> None:
    """The committed 1.5B run's case: the run's own process finished its batches and finalized (the
    checkpoint went with the swap) while the second worker computed one; the second worker must neither
    write that batch nor go on backwards into a new, orphan checkpoint beside the results."""
    share = _started_in_variant_phase(FakeBackend(), tmp_path, finished_variants=3)
    final: dict[str, bytes] = {}

    class Finalized(FakeBackend):
        def run(self, requests, **options):  # type: ignore[no-untyped-def]
            if not self.calls:
                run_variant_phase(share, FakeBackend(), SMOKE, progress=False)
                finish_rank(share, FakeBackend())
                finalize(tmp_path)
                final.update(_result_bytes(tmp_path))
            return super().run(requests, **options)

    helper = Finalized()
    ran = second_worker(helper, toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False)
    assert (ran.batches_run, len(helper.calls)) == (0, 1)
    assert "run.json" in final and _result_bytes(tmp_path) == final  # no checkpoint came back


def test_a_second_worker_withdraws_a_part_written_as_the_run_finalized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The narrowest case: the run finalizes between the second worker's last check and its write. The
    write recreates the checkpoint folder; the second worker sees the plan gone and removes what it made."""
    share = _started_in_variant_phase(FakeBackend(), tmp_path, finished_variants=3)
    write = PartStore.write
    final: dict[str, bytes] = {}

    def late_write(store: PartStore, part) -> None:  # type: ignore[no-untyped-def]
        if not final:
            monkeypatch.setattr(PartStore, "write", write)  # the run's own writes are plain ones
            run_variant_phase(share, FakeBackend(), SMOKE, progress=False)
            finish_rank(share, FakeBackend())
            finalize(tmp_path)
            final.update(_result_bytes(tmp_path))
        write(store, part)

    monkeypatch.setattr(PartStore, "write", late_write)
    ran = second_worker(
        FakeBackend(), toy_variant_set(), tmp_path, profile=SMOKE, batch_size=4, progress=False
    )
    assert ran.batches_run == 0
    assert "run.json" in final and _result_bytes(tmp_path) == final
    assert not (tmp_path / "checkpoint").exists()


def test_a_second_worker_refuses_what_is_not_a_started_one_process_run(tmp_path: Path) -> None:
    def helper(out: Path, batch_size: int = 4) -> None:
        second_worker(
            FakeBackend(), toy_variant_set(), out, profile=SMOKE, batch_size=batch_size, progress=False
        )

    with pytest.raises(SagoError, match="no started one-process run"):
        helper(tmp_path / "nothing")
    _collect_ranks(FakeBackend(), toy_variant_set(), tmp_path / "ranks", world_size=2)
    with pytest.raises(SagoError, match="no started one-process run"):
        helper(tmp_path / "ranks")
    start_rank(
        FakeBackend(), toy_variant_set(), tmp_path / "new", profile=SMOKE, batch_size=4, datasets=None,
        rank=0, world_size=1,
    )  # fmt: skip
    with pytest.raises(SagoError, match="baseline batches are not finished"):
        helper(tmp_path / "new")
    _started_in_variant_phase(FakeBackend(), tmp_path / "other", finished_variants=1)
    with pytest.raises(SagoError, match="batch_size.*differ"):
        helper(tmp_path / "other", batch_size=3)
