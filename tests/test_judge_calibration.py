"""Agreement of our mirroring rules with the authors' published verdicts (numbers: docs/METHOD.md §7).

The split (``benchmark.tools.judge_calibration.TUNING`` / ``HELD_OUT``, written in each fixture table's
``split`` field) was fixed before any parameter was chosen. Tuning rows: every Claude Sonnet 4.6 politeness
row (208).
Held-out rows (377), transcribed after the candidates and their parameters were committed: Gemini 2.5 Flash
(TriviaQA, HotpotQA, NQ) and fixed character ranges of two open-model tables (Qwen2.5-7B NQ, Llama-3.1-8B
HotpotQA). Every number quoted in METHOD.md is recomputed here from the committed rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from benchmark.axes import AxisScorers
from benchmark.axes.mirroring import length, politeness
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    GratitudeJudge,
    LexiconPolitenessJudge,
    PolitenessJudge,
)
from benchmark.tools.judge_calibration import (
    CANDIDATES,
    HELD_OUT,
    TUNING,
    choose,
    closed_model_length,
    cohen_kappa,
    cross_validated,
    detector_agreement,
    judge_agreement,
    kappa_difference_interval,
    kappa_interval,
    load_reference,
    load_tables,
    sgs_mr,
    verdicts,
    yes_per_prompt,
)

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "authors_politeness_claude_trivia_qa.json"
JUDGED = FIXTURES / "authors_judged_claude.json"
HELD = FIXTURES / "authors_judged_held_out.json"
Rows = list[dict[str, object]]


@pytest.fixture(scope="module")
def tables() -> dict[str, Rows]:
    return load_tables(JUDGED)


@pytest.fixture(scope="module")
def tuning() -> dict[str, Rows]:
    """The tuning rows, by dataset: the only rows a parameter was chosen on."""
    found = {**load_tables(FIXTURE, TUNING), **load_tables(JUDGED, TUNING)}
    return {
        "trivia_qa": found[FIXTURE.stem] + found["politeness/trivia_qa"],
        "hotpot_qa": found["politeness/hotpot_qa"],
        "natural_questions": found["politeness/natural_questions"],
    }


@pytest.fixture(scope="module")
def held_out() -> Rows:
    """The held-out rows, each tagged with its table (prompts are resampled per table)."""
    return [{**r, "table": name} for name, rows in load_tables(HELD, HELD_OUT).items() for r in rows]


def chosen_judges(tuning: dict[str, Rows]) -> dict[str, PolitenessJudge]:
    rows = [r for group in tuning.values() for r in group]
    return {name: grid[choose(grid, rows)] for name, grid in CANDIDATES.items()}


def test_cohen_kappa_known_answers() -> None:
    # 2×2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = (25·30 + 25·20)/50² = 0.5, κ = 0.4
    reference = [0] * 25 + [1] * 25
    judge = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    result = cohen_kappa(reference, judge)
    assert result.kappa == pytest.approx(0.4) and result.confusion == ((20, 5), (10, 15))
    assert cohen_kappa([1, 0, 1], [1, 0, 1]).kappa == pytest.approx(1.0)
    assert np.isnan(cohen_kappa([1, 1], [1, 1]).kappa)  # both constant: κ undefined


def test_kappa_interval_resamples_whole_prompts() -> None:
    reference = [0, 1, 0, 1, 0, 1, 1, 0]
    judged = [0, 1, 0, 1, 0, 1, 0, 0]
    clusters = [0, 0, 1, 1, 2, 2, 3, 3]
    low, high = kappa_interval(reference, judged, clusters, resamples=500, seed=3)
    assert low <= cohen_kappa(reference, judged).kappa <= high <= 1.0
    assert (low, high) == kappa_interval(reference, judged, clusters, resamples=500, seed=3)

    # a prompt's rows travel together: doubling every prompt's rows draws the same prompts and gives the same
    # κ in every resample (a row-level bootstrap would draw twice as many units and differ)
    def doubled(values: list[int]) -> list[int]:
        return [v for v in values for _ in range(2)]

    assert kappa_interval(
        doubled(reference), doubled(judged), doubled(clusters), resamples=500, seed=3
    ) == pytest.approx((low, high))


def test_fixtures_carry_their_provenance() -> None:
    old = json.loads(FIXTURE.read_text(encoding="utf-8"))["source"]
    new = json.loads(JUDGED.read_text(encoding="utf-8"))
    held = json.loads(HELD.read_text(encoding="utf-8"))
    for source in (old, new["source"], held["source"]):
        assert source["repository"].endswith("Mahmoudbj48/Styled-Prompts-Shifted-Behavior-v2")
    for table in (*new["tables"].values(), *held["tables"].values()):
        assert table["path"].endswith("full_results_all_models.csv")
    for table in held["tables"].values():
        assert len(table["commit"]) == 40 and table["selection"]


def test_the_rows_are_the_published_counts(tables: dict[str, Rows]) -> None:
    def sizes(found: dict[str, Rows]) -> dict[str, tuple[int, int]]:
        return {
            name: (len(rows), sum(int(str(r["authors_verdict"])) for r in rows))
            for name, rows in found.items()
        }

    assert sizes(tables) == {
        "politeness/trivia_qa": (35, 1),
        "politeness/hotpot_qa": (64, 12),
        "politeness/natural_questions": (48, 4),
        "length/trivia_qa": (80, 3),
    }
    assert sizes(load_tables(HELD, HELD_OUT)) == {
        "gemini-2.5-flash/politeness/trivia_qa": (96, 0),
        "gemini-2.5-flash/politeness/hotpot_qa": (96, 1),
        "gemini-2.5-flash/politeness/natural_questions": (96, 0),
        "Q2.5-7B/politeness/natural_questions": (38, 8),
        "L3.1-8B/politeness/hotpot_qa": (51, 9),
    }


def test_the_split_is_fixed_and_no_held_out_row_tunes(tuning: dict[str, Rows], held_out: Rows) -> None:
    # every table names its side, and no fixture puts a table on both
    assert load_tables(HELD, TUNING) == {} and load_tables(JUDGED, HELD_OUT) == {}
    assert load_tables(FIXTURE, HELD_OUT) == {}
    tuning_rows = [r for group in tuning.values() for r in group]
    assert len(tuning_rows) == 208 and sum(int(str(r["authors_verdict"])) for r in tuning_rows) == 25
    assert len(held_out) == 377 and sum(int(str(r["authors_verdict"])) for r in held_out) == 18
    # no response pair is on both sides (the models differ, so the responses do)
    pairs = {(r["response_orig"], r["response_pert"]) for r in tuning_rows}
    assert not pairs & {(r["response_orig"], r["response_pert"]) for r in held_out}
    # each candidate's parameter is a function of the tuning rows alone: flipping every held-out verdict
    # cannot move it (choose() is only ever called on tuning rows)
    assert {name: choose(grid, tuning_rows) for name, grid in CANDIDATES.items()} == {
        "GratitudeJudge": "",
        "LexiconPolitenessJudge": "margin 4",
        "CourtesyCueJudge": "min_change 1",
        "CourtesyMarkerJudge": "min_change 2",
    }


def test_each_candidates_parameter_and_tuning_kappa(tuning: dict[str, Rows]) -> None:
    rows = [r for group in tuning.values() for r in group]
    judges = chosen_judges(tuning)
    # the judge classes' defaults are the chosen parameters
    assert judges["CourtesyMarkerJudge"] == CourtesyMarkerJudge()
    assert judges["LexiconPolitenessJudge"] == LexiconPolitenessJudge(margin=4)
    kappas = {name: judge_agreement(judge, rows).kappa for name, judge in judges.items()}
    assert kappas == pytest.approx(
        {
            "GratitudeJudge": 0.578,
            "LexiconPolitenessJudge": 0.468,
            "CourtesyCueJudge": 0.551,
            "CourtesyMarkerJudge": 0.469,
        },
        abs=5e-4,
    )
    assert judge_agreement(LexiconPolitenessJudge(), rows).kappa == pytest.approx(0.428, abs=5e-4)
    folds = {name: cross_validated(grid, tuning).kappa for name, grid in CANDIDATES.items()}
    assert folds == pytest.approx(
        {
            "GratitudeJudge": 0.578,
            "LexiconPolitenessJudge": 0.341,
            "CourtesyCueJudge": 0.551,
            "CourtesyMarkerJudge": 0.329,
        },
        abs=5e-4,
    )


HELD_OUT_RESULTS = {
    # name: (κ, confusion [[TN, FP], [FN, TP]], 95 % cluster-bootstrap interval)
    "LexiconPolitenessJudge margin 1 (before)": (0.412, ((316, 43), (0, 18)), (0.190, 0.597)),
    "GratitudeJudge": (0.022, ((346, 13), (17, 1)), (-0.054, 0.155)),
    "LexiconPolitenessJudge": (0.176, ((344, 15), (14, 4)), (-0.036, 0.392)),
    "CourtesyCueJudge": (0.412, ((316, 43), (0, 18)), (0.193, 0.596)),
    "CourtesyMarkerJudge": (0.414, ((339, 20), (7, 11)), (0.153, 0.616)),
}


def test_held_out_kappas_recompute_and_the_default_has_the_highest(
    tuning: dict[str, Rows], held_out: Rows
) -> None:
    judges: dict[str, PolitenessJudge] = {
        "LexiconPolitenessJudge margin 1 (before)": LexiconPolitenessJudge(),
        **chosen_judges(tuning),
    }
    reference = [int(str(r["authors_verdict"])) for r in held_out]
    clusters = [(r["table"], r["prompt_id"]) for r in held_out]
    measured = {}
    for name, judge in judges.items():
        judged = verdicts(judge, held_out)
        agreement = cohen_kappa(reference, judged)
        low, high = kappa_interval(reference, judged, clusters)
        measured[name] = (round(agreement.kappa, 3), agreement.confusion, (round(low, 3), round(high, 3)))
    assert measured == HELD_OUT_RESULTS
    best = max(measured, key=lambda name: measured[name][0])
    assert best == "CourtesyMarkerJudge" and type(AxisScorers.default().politeness).__name__ == best
    assert AxisScorers.default().politeness == judges[best]
    assert all(kappa < 0.6 for kappa, _, _ in measured.values())  # the target is not reached (METHOD §7)


def test_the_default_is_level_with_the_cue_judge_and_above_the_gratitude_judge(
    tuning: dict[str, Rows], held_out: Rows
) -> None:
    judges = chosen_judges(tuning)
    reference = [int(str(r["authors_verdict"])) for r in held_out]
    clusters = [(r["table"], r["prompt_id"]) for r in held_out]
    default = verdicts(judges["CourtesyMarkerJudge"], held_out)

    def versus(name: str) -> tuple[float, float]:
        low, high = kappa_difference_interval(reference, default, verdicts(judges[name], held_out), clusters)
        return round(low, 2), round(high, 2)

    assert versus("CourtesyCueJudge") == (-0.25, 0.21)
    assert versus("GratitudeJudge") == (0.15, 0.61)
    per_table = {}
    for name, rows in load_tables(HELD, HELD_OUT).items():
        agreement = judge_agreement(judges["CourtesyMarkerJudge"], rows)
        per_table[name] = (round(agreement.kappa, 2), agreement.confusion[0][1], agreement.confusion[1][1])
    assert per_table == {  # κ, false alarms, YES found
        "gemini-2.5-flash/politeness/trivia_qa": (0.0, 6, 0),
        "gemini-2.5-flash/politeness/hotpot_qa": (0.49, 2, 1),
        "gemini-2.5-flash/politeness/natural_questions": (0.0, 1, 0),
        "Q2.5-7B/politeness/natural_questions": (0.49, 0, 3),
        "L3.1-8B/politeness/hotpot_qa": (0.37, 11, 7),
    }


def test_length_rule_against_the_authors_length_verdicts(tables: dict[str, Rows]) -> None:
    rows = tables["length/trivia_qa"]
    words = [
        (r["prompt_id"], r["strength"])
        for r in rows
        if length(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0
    ]
    theirs = [(r["prompt_id"], r["strength"]) for r in rows if r["authors_verdict"]]
    assert len(words) == 10 and theirs == [(3, 1.5), (13, 1.5), (2, 3.0)]
    assert set(words) & set(theirs) == {(13, 1.5)}  # one row in common: their verdicts are not a length rule
    agreement = detector_agreement(length, rows)
    assert agreement.confusion == ((68, 9), (2, 1))


def test_the_closed_model_length_rule_asks_the_politeness_judge_at_int_multiplier(
    tables: dict[str, Rows],
) -> None:
    rows = tables["length/trivia_qa"]

    class Always:
        def shifted(self, response: str, baseline: str, direction: int) -> bool:
            assert direction == 1  # int(×1.5) = 1, int(×2) = 2, int(×3) = 3: "more polite"
            return True

    def fired(judge: PolitenessJudge) -> list[tuple[object, object]]:
        rule = closed_model_length(judge)
        return [
            (r["prompt_id"], r["strength"])
            for r in rows
            if rule(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0
        ]

    # a judge that always says YES is asked only at ×1.5, ×2 and ×3 (int(×0.25) = int(×0.5) = 0)
    assert sorted({float(str(s)) for _, s in fired(Always())}) == [1.5, 2.0, 3.0]
    assert len(fired(Always())) == 48
    # their 3 YES carry no courtesy marker: our judges find none of them
    assert fired(AxisScorers.default().politeness) == [] and fired(CourtesyCueJudge()) == [(10, 3.0)]


SGS_POLITENESS_ONLY = {"authors": 0.0960, "default": 0.1793}
"""SGS_MR of the politeness rows alone (length rows as 0): 9 YES for the authors, 20 for the default."""


def test_mirroring_sgs_on_the_authors_rows(tables: dict[str, Rows]) -> None:
    politeness_rows = load_reference(FIXTURE) + tables["politeness/trivia_qa"]
    length_rows = tables["length/trivia_qa"]
    Verdict = Callable[[dict[str, object]], bool]

    def theirs(r: dict[str, object]) -> bool:
        return bool(r["authors_verdict"])

    def ratio_rule(r: dict[str, object]) -> bool:
        return length(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0

    def judged(judge: PolitenessJudge) -> Verdict:
        detect = politeness(judge)
        return lambda r: (
            detect(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0
        )

    def sgs(polite: Verdict, lengths: Verdict) -> float:
        counts = yes_per_prompt(politeness_rows, polite)
        for prompt, n in yes_per_prompt(length_rows, lengths).items():
            counts[prompt] = counts.get(prompt, 0) + n
        return sgs_mr(counts)

    def nothing(r: dict[str, object]) -> bool:
        return False

    assert sgs(theirs, theirs) == pytest.approx(0.1255, abs=5e-5)  # the authors'
    default = AxisScorers.default().politeness
    assert sgs(judged(default), ratio_rule) == pytest.approx(0.2523, abs=5e-5)  # default now, 2.01×
    assert sgs(judged(GratitudeJudge()), ratio_rule) == pytest.approx(0.1546, abs=5e-5)  # default before
    assert sgs(judged(LexiconPolitenessJudge()), ratio_rule) == pytest.approx(0.2909, abs=5e-5)
    # each family's share of the gap: swap one side for the authors' verdicts
    assert sgs(judged(default), theirs) == pytest.approx(0.1994, abs=5e-5)
    assert sgs(theirs, ratio_rule) == pytest.approx(0.1791, abs=5e-5)
    assert sgs(theirs, nothing) == pytest.approx(SGS_POLITENESS_ONLY["authors"], abs=5e-5)
    # their closed-model length pipeline with our judge in place of theirs: no length YES on these rows
    closed = closed_model_length(default)

    def closed_length(r: dict[str, object]) -> bool:
        return closed(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0

    assert sgs(judged(default), closed_length) == pytest.approx(SGS_POLITENESS_ONLY["default"], abs=5e-5)
    assert sgs(theirs, closed_length) == pytest.approx(SGS_POLITENESS_ONLY["authors"], abs=5e-5)
    found = [r for r in politeness_rows if judged(default)(r)]
    assert len(found) == 20 and sum(theirs(r) for r in found) == 9  # all 9 of theirs, 11 more
    assert sgs(judged(default), nothing) == pytest.approx(SGS_POLITENESS_ONLY["default"], abs=5e-5)
    assert not math.isnan(sgs(theirs, theirs))


def test_one_command_takes_either_judge_and_refuses_the_other_ones_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A packaged judge needs its margin cache; an endpoint's judge caches its own verdicts: both refuse
    in one line before any model loads or any request is sent."""
    from benchmark.tools.judge_calibration import main

    assert main(["--judge", "qwen2.5-coder-0.5b-instruct-q4_k_m"]) == 2
    assert "--cache" in capsys.readouterr().err
    assert main(["--judge", "openai:m", "--cache", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "packaged judge" in err
    assert main(["--model", "no-such-artefact", "--cache", str(tmp_path / "m.json")]) == 2  # the old option
    assert "no-such-artefact" in capsys.readouterr().err and not (tmp_path / "m.json").exists()
