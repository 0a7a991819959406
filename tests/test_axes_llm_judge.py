"""The language-model politeness judge: YES/NO from next-token logits (numbers: docs/METHOD.md §7.1).

No real model is loaded here: the judge's decision is tested with stub scorers, the scorer itself on the
tiny random Llama of ``benchmark.models.tiny`` against a plain forward pass.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from benchmark.axes import AxisScorers
from benchmark.axes.llm_judge import (
    JUDGE_MODEL,
    MEASURED_THRESHOLDS,
    LogitPolitenessJudge,
    LogitScorer,
    PackagedScorer,
    Score,
    ScoreCache,
    answer_ids,
    instructions,
    packaged_judge,
    prompt_digest,
    row_text,
)
from benchmark.axes.politeness import CourtesyMarkerJudge
from benchmark.axes.scorers import POLITENESS_ENV
from benchmark.errors import SagoError
from benchmark.models.tiny import tiny_llama, tiny_tokenizer
from benchmark.packaged import ARTEFACTS
from benchmark.tools.judge_calibration import (
    choose_threshold,
    cohen_kappa,
    held_out_rows,
    kappa_difference_interval,
    load_reference,
    load_tables,
    margin,
    tuning_groups,
    verdicts,
)
from benchmark.tools.judge_calibration import measure_margins as measure

FIXTURES = Path(__file__).parent / "fixtures"
POLITE = "Of course, happy to help! It is Paris. I hope this helps."


def test_the_verdict_is_yes_exactly_when_the_margin_leans_yes() -> None:
    asked: list[tuple[str, str, int]] = []

    def margin_of(response: str, baseline: str, direction: int) -> float:
        asked.append((response, baseline, direction))
        return 2.0 if "happy" in response else -2.0  # log P(YES) − log P(NO)

    judge = LogitPolitenessJudge(margin_of)
    assert judge.shifted(POLITE, "Paris.", +1)
    assert not judge.shifted("Please note: Paris.", "Paris.", +1)
    assert asked[0] == (POLITE, "Paris.", +1)
    # the threshold moves the boundary: a margin of 2 is not enough for 2.5, and -2 reaches -3
    assert not LogitPolitenessJudge(margin_of, threshold=2.5).shifted(POLITE, "Paris.", +1)
    assert LogitPolitenessJudge(margin_of, threshold=-3.0).shifted("Please: Paris.", "Paris.", -1)


def test_the_authors_guard_answers_no_without_asking_the_model() -> None:
    def must_not_be_called(response: str, baseline: str, direction: int) -> float:
        raise AssertionError("the guard should have answered")

    judge = LogitPolitenessJudge(must_not_be_called, threshold=-math.inf)
    assert not judge.shifted("Paris! Great question!", "Paris.", +1)  # no courtesy cue on either side
    unguarded = LogitPolitenessJudge(lambda r, b, d: 0.0, guard=False)
    assert unguarded.shifted("Paris! Great question!", "Paris.", +1)
    # a cue in y_0 alone is enough to ask (a ruder y_v drops it)
    assert LogitPolitenessJudge(lambda r, b, d: 1.0).shifted("Paris.", "Thank you! Paris.", -1)


def test_threshold_maximises_kappa_and_ignores_rows_the_guard_answered() -> None:
    # margins sorted by the reference except one NO at 2.0: the best cut keeps it out (κ 1 on the rest)
    margins = [-3.0, -1.0, math.nan, 0.5, 1.0, 4.0, 2.0]
    reference = [0, 0, 0, 1, 1, 1, 0]
    threshold = choose_threshold(margins, reference)
    assert threshold == pytest.approx(-0.25)  # between -1.0 and 0.5: 3 TP, 1 FP, κ 0.72
    # read as "margin ≥ threshold is YES": the same cut on negated margins would call the NO rows YES
    assert [int(not math.isnan(m) and m >= threshold) for m in margins] == [0, 0, 0, 1, 1, 1, 1]
    assert choose_threshold([4.0, 1.0, 1.0], [1, 0, 0]) == pytest.approx(2.5)  # one cut separates them


@pytest.fixture(scope="module")
def scorer() -> LogitScorer:
    return LogitScorer(tiny_llama(seed=3), tiny_tokenizer())


def test_answer_tokens_leave_out_a_first_token_both_answers_share(scorer: LogitScorer) -> None:
    tok = scorer.tokenizer
    space = tok(" ", add_special_tokens=False)["input_ids"][0]
    assert space not in scorer.yes_ids and space not in scorer.no_ids  # " YES" and " NO" both start " "
    assert tok("Yes", add_special_tokens=False)["input_ids"][0] in scorer.yes_ids
    assert tok("No", add_special_tokens=False)["input_ids"][0] in scorer.no_ids

    class OneToken:
        def __call__(self, text: str, add_special_tokens: bool) -> dict[str, list[int]]:
            return {"input_ids": [7]}

    with pytest.raises(SagoError, match="same tokens"):
        answer_ids(OneToken())


def test_scorer_margin_is_log_yes_minus_log_no_of_a_plain_forward(scorer: LogitScorer) -> None:
    tok = scorer.tokenizer
    for direction in (+1, -1, +1):  # the second +1 reuses the cached instructions
        content = instructions(direction) + row_text(POLITE, "Paris.", direction)
        text = tok.apply_chat_template(
            [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
        )
        start, rest = scorer.parts(POLITE, "Paris.", direction)
        assert tok.decode(start + rest) == text  # the two halves are the whole rendered message
        with torch.inference_mode():
            logits = scorer.model(input_ids=torch.tensor([start + rest])).logits[0, -1]
        log_probs = torch.log_softmax(logits, dim=-1)
        yes = torch.logsumexp(log_probs[list(scorer.yes_ids)], dim=0)
        no = torch.logsumexp(log_probs[list(scorer.no_ids)], dim=0)
        found = scorer(POLITE, "Paris.", direction)
        assert found == pytest.approx(float(yes - no), abs=1e-4)
        assert abs(found) > 1e-3  # a random model still leans one way: the sign is tested, not a zero


def test_score_cache_computes_each_row_once_and_refuses_another_model(tmp_path: Path) -> None:
    calls: list[str] = []

    def score(response: str, baseline: str, direction: int) -> float:
        calls.append(response)
        return float(len(response) * direction)

    path = tmp_path / "margins.json"
    cache = ScoreCache.open(path, "model-a")
    cached = cache.wrap(score)
    assert cached("abc", "x", 1) == 3.0 and cached("abc", "x", 1) == 3.0 and cached("abc", "x", -1) == -3.0
    assert calls == ["abc", "abc"]
    cache.save()
    again = ScoreCache.open(path, "model-a").wrap(score)
    assert again("abc", "x", -1) == -3.0 and len(calls) == 2  # read back, not recomputed
    with pytest.raises(SagoError, match="another judge model"):
        ScoreCache.open(path, "model-b")
    assert json.loads(path.read_text())["tag"] == "model-a"


def courtesy_margin(response: str, baseline: str, direction: int) -> float:
    """A stand-in scorer: how many more "thank"/"happy"/"hello" words y_v has than y_0, in the direction."""

    def count(text: str) -> int:
        lower = text.lower()
        return sum(lower.count(word) for word in ("thank", "happy", "hello"))

    return float(direction * (count(response) - count(baseline)))


def test_measure_scores_the_judge_class_as_the_mirroring_delta_does() -> None:
    report = measure(courtesy_margin, FIXTURES)
    groups = tuning_groups(FIXTURES)
    tuning = [r for g in groups.values() for r in g]
    threshold = choose_threshold(
        [margin(courtesy_margin, r) for r in tuning], [int(r["authors_verdict"]) for r in tuning]
    )
    assert report["threshold"] == pytest.approx(threshold, abs=1e-4)
    # the shortcut through margins gives the verdicts of the judge class behind politeness()
    judge = LogitPolitenessJudge(courtesy_margin, threshold=threshold)
    assert report["tuning"]["yes"] == sum(verdicts(judge, tuning))
    assert report["tuning"]["n"] == 208 and report["held_out"]["n"] == 377
    assert sum(sum(row) for row in report["held_out"]["confusion"]) == 377
    assert report["sgs_mr"]["authors"] == pytest.approx(0.1255, abs=5e-5)


MEASURED = {
    # model: (threshold, tuning κ and confusion, leave-one-dataset-out κ, held-out κ, confusion, interval,
    #         SGS_MR with the ratio rule / with the authors' length verdicts / politeness rows alone)
    "qwen2.5-coder-0.5b-instruct-q4_k_m": (
        -0.6793,
        (0.5958, ((163, 20), (3, 22))),
        0.5269,
        (0.2614, ((338, 21), (11, 7)), (0.003, 0.523)),
        (0.2293, 0.1752, 0.154),
    ),
    "qwen2.5-coder-1.5b-instruct-q4_k_m": (
        0.1291,
        (0.6404, ((177, 6), (9, 16))),
        0.5187,
        (0.4966, ((338, 21), (4, 14)), (0.207, 0.705)),
        (0.1874, 0.1345, 0.1049),
    ),
}
"""docs/METHOD.md §7.1, recomputed from the committed per-row margins."""


def committed_margins(model: str) -> Score:
    """The model's margins as committed; a row that is not there fails (the prompt or the rows changed)."""
    path = FIXTURES / f"llm_judge_margins_{model}.json"
    tag = f"{model}:{ARTEFACTS.get(model).sha256}"
    assert json.loads(path.read_text(encoding="utf-8"))["tag"] == tag  # the pinned weights, no other

    def not_committed(response: str, baseline: str, direction: int) -> float:
        raise AssertionError(f"no committed margin for {response[:40]!r}: re-measure {model}")

    return ScoreCache.open(path, tag).wrap(not_committed)


@pytest.mark.parametrize("model", sorted(MEASURED))
def test_measured_numbers_recompute_from_the_committed_margins(model: str) -> None:
    report = measure(committed_margins(model), FIXTURES)
    threshold, (kappa, confusion), cv, (held, held_confusion, interval), sgs = MEASURED[model]
    assert report["threshold"] == threshold == MEASURED_THRESHOLDS[model]
    assert (report["tuning"]["kappa"], report["tuning"]["confusion"]) == (kappa, confusion)
    assert report["tuning"]["cv"]["kappa"] == cv
    assert (report["held_out"]["kappa"], report["held_out"]["confusion"]) == (held, held_confusion)
    assert report["held_out"]["interval"] == interval
    found = report["sgs_mr"]
    assert (found["ratio_rule"], found["authors_length"], found["politeness_only"]) == sgs
    assert found["authors"] == pytest.approx(0.1255, abs=5e-5)
    assert report["rows_asked"] == 130  # of 585: the guard answers the others without the model


def test_the_larger_model_has_the_highest_held_out_kappa_level_with_the_default() -> None:
    held = held_out_rows(FIXTURES)
    reference = [int(r["authors_verdict"]) for r in held]
    clusters = [(r["table"], r["prompt_id"]) for r in held]
    judge = LogitPolitenessJudge(committed_margins(JUDGE_MODEL), MEASURED_THRESHOLDS[JUDGE_MODEL])
    llm = verdicts(judge, held)
    default = verdicts(CourtesyMarkerJudge(), held)
    assert cohen_kappa(reference, llm).kappa > cohen_kappa(reference, default).kappa  # 0.497 > 0.414
    low, high = kappa_difference_interval(reference, llm, default, clusters)
    assert (round(low, 2), round(high, 2)) == (-0.19, 0.38)  # not a significant gain
    assert cohen_kappa(reference, llm).kappa < 0.6  # the target is not reached either
    # on the authors' 96 Claude/TriviaQA politeness rows it says YES 11 times (theirs 9, the default 20)
    tables = load_tables(FIXTURES / "authors_judged_claude.json")
    rows = (
        load_reference(FIXTURES / "authors_politeness_claude_trivia_qa.json") + tables["politeness/trivia_qa"]
    )
    said = verdicts(judge, rows)
    assert (sum(said), sum(s and r["authors_verdict"] for s, r in zip(said, rows, strict=True))) == (11, 8)


def test_the_llm_judge_is_opt_in_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POLITENESS_ENV, raising=False)
    assert AxisScorers.default().politeness == CourtesyMarkerJudge()
    assert AxisScorers.default().backbones["politeness"] == "CourtesyMarkerJudge"  # results keep their bytes
    monkeypatch.setenv(POLITENESS_ENV, "llm")
    scorers = AxisScorers.default()
    judge = scorers.politeness
    assert isinstance(judge, LogitPolitenessJudge) and judge.threshold == MEASURED_THRESHOLDS[JUDGE_MODEL]
    assert isinstance(judge.score, PackagedScorer) and not judge.score.loaded  # nothing loaded yet
    label = scorers.backbones["politeness"]
    assert JUDGE_MODEL in label and prompt_digest() in label  # another model or prompt: other deltas
    monkeypatch.setenv(POLITENESS_ENV, "gpt")
    with pytest.raises(SagoError, match=POLITENESS_ENV):
        AxisScorers.default()
    with pytest.raises(SagoError, match="no politeness threshold"):
        packaged_judge("smollm2-135m-instruct-q4_1")


def test_per_table_kappas_the_untuned_cut_and_the_small_models_margins() -> None:
    report = measure(committed_margins(JUDGE_MODEL), FIXTURES)
    per_table = {
        name: (round(found["kappa"], 2), found["confusion"][0][1], found["confusion"][1][1])
        for name, found in report["held_out_per_table"].items()
    }
    assert per_table == {  # κ, false alarms, YES found
        "gemini-2.5-flash/politeness/trivia_qa": (0.0, 3, 0),
        "gemini-2.5-flash/politeness/hotpot_qa": (1.0, 0, 1),
        "gemini-2.5-flash/politeness/natural_questions": (0.0, 1, 0),
        "Q2.5-7B/politeness/natural_questions": (0.71, 3, 7),
        "L3.1-8B/politeness/hotpot_qa": (0.23, 14, 6),
    }
    assert (report["held_out_at_zero"]["kappa"], report["held_out_at_zero"]["yes"]) == (0.4038, 45)
    small = "qwen2.5-coder-0.5b-instruct-q4_k_m"
    assert measure(committed_margins(small), FIXTURES)["held_out_per_table"]["L3.1-8B/politeness/hotpot_qa"][
        "kappa"
    ] == pytest.approx(-0.1333)
    margins = sorted(
        json.loads((FIXTURES / f"llm_judge_margins_{small}.json").read_text())["scores"].values()
    )
    assert sum(m >= 0 for m in margins) == 1  # the 0.5B model leans NO on all rows but one
