"""Agreement of our mirroring rules with the authors' published verdicts (numbers: docs/METHOD.md §7).

Tuning rows (used to choose the politeness judge): the 61 TriviaQA rows of the older fixture and the 64
HotpotQA rows. Test rows (never used to choose anything): the other 35 TriviaQA rows and 48 Natural
Questions rows. Every number quoted in METHOD.md is recomputed here from the committed rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from benchmark.axes.calibration import (
    CANDIDATES,
    choose,
    cohen_kappa,
    cross_validated,
    detector_agreement,
    judge_agreement,
    load_reference,
    load_tables,
    sgs_mr,
    yes_per_prompt,
)
from benchmark.axes.mirroring import length, politeness
from benchmark.axes.politeness import (
    CourtesyCueJudge,
    CourtesyMarkerJudge,
    GratitudeJudge,
    LexiconPolitenessJudge,
    PolitenessJudge,
)

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "authors_politeness_claude_trivia_qa.json"
JUDGED = FIXTURES / "authors_judged_claude.json"


@pytest.fixture(scope="module")
def tables() -> dict[str, list[dict[str, object]]]:
    return load_tables(JUDGED)


def splits(tables: dict[str, list[dict[str, object]]]) -> dict[str, list[dict[str, object]]]:
    trivia_61 = load_reference(FIXTURE)
    return {
        "tuning": trivia_61 + tables["politeness/hotpot_qa"],
        "test": tables["politeness/trivia_qa"] + tables["politeness/natural_questions"],
        "trivia_96": trivia_61 + tables["politeness/trivia_qa"],
    }


def test_cohen_kappa_known_answers() -> None:
    # 2×2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = (25·30 + 25·20)/50² = 0.5, κ = 0.4
    reference = [0] * 25 + [1] * 25
    judge = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    result = cohen_kappa(reference, judge)
    assert result.kappa == pytest.approx(0.4) and result.confusion == ((20, 5), (10, 15))
    assert cohen_kappa([1, 0, 1], [1, 0, 1]).kappa == pytest.approx(1.0)
    assert np.isnan(cohen_kappa([1, 1], [1, 1]).kappa)  # both constant: κ undefined


def test_fixtures_carry_their_provenance() -> None:
    old = json.loads(FIXTURE.read_text(encoding="utf-8"))["source"]
    new = json.loads(JUDGED.read_text(encoding="utf-8"))
    for source in (old, new["source"]):
        assert source["repository"].endswith("Mahmoudbj48/Styled-Prompts-Shifted-Behavior-v2")
        assert len(source["commit"]) == 40
    assert all(t["path"].endswith("full_results_all_models.csv") for t in new["tables"].values())


def test_the_rows_are_the_published_counts(tables: dict[str, list[dict[str, object]]]) -> None:
    sizes = {
        name: (len(rows), sum(int(str(r["authors_verdict"])) for r in rows)) for name, rows in tables.items()
    }
    assert sizes == {
        "politeness/trivia_qa": (35, 1),
        "politeness/hotpot_qa": (64, 12),
        "politeness/natural_questions": (48, 4),
        "length/trivia_qa": (80, 3),
    }


def test_gratitude_judge_on_tuning_and_held_out_rows(tables: dict[str, list[dict[str, object]]]) -> None:
    rows = splits(tables)
    tuning = judge_agreement(GratitudeJudge(), rows["tuning"])
    test = judge_agreement(GratitudeJudge(), rows["test"])
    trivia = judge_agreement(GratitudeJudge(), rows["trivia_96"])
    assert tuning.n == 125 and tuning.confusion == ((101, 4), (7, 13))
    assert tuning.kappa == pytest.approx(0.651, abs=5e-4)
    # held out: the authors' judge says YES on 5 of 83 rows, none of them thanking the asker; κ 0 (chance)
    assert test.n == 83 and test.confusion == ((78, 0), (5, 0)) and test.kappa == pytest.approx(0.0)
    assert trivia.confusion == ((86, 1), (3, 6)) and trivia.kappa == pytest.approx(0.728, abs=5e-4)


def test_lexicon_judge_on_the_same_rows(tables: dict[str, list[dict[str, object]]]) -> None:
    rows = splits(tables)
    tuning = judge_agreement(LexiconPolitenessJudge(), rows["tuning"])
    test = judge_agreement(LexiconPolitenessJudge(), rows["test"])
    old = judge_agreement(LexiconPolitenessJudge(), load_reference(FIXTURE))
    assert old.confusion == ((37, 16), (0, 8)) and old.kappa == pytest.approx(0.3776, abs=1e-4)
    assert tuning.confusion == ((74, 31), (1, 19)) and tuning.kappa == pytest.approx(0.407, abs=5e-4)
    assert test.confusion == ((67, 11), (0, 5)) and test.kappa == pytest.approx(0.423, abs=5e-4)


def test_no_lexicon_margin_chosen_on_tuning_rows_reaches_the_target_held_out(
    tables: dict[str, list[dict[str, object]]],
) -> None:
    rows = splits(tables)
    margins = (1.0, 2.0, 3.0, 4.0, 5.0)
    tuned = {m: judge_agreement(LexiconPolitenessJudge(margin=m), rows["tuning"]).kappa for m in margins}
    held = {m: judge_agreement(LexiconPolitenessJudge(margin=m), rows["test"]).kappa for m in margins}
    best = max(tuned, key=lambda m: tuned[m])
    assert best == 4.0 and held[best] < 0.6
    assert max(held.values()) < 0.6


def test_length_rule_against_the_authors_length_verdicts(tables: dict[str, list[dict[str, object]]]) -> None:
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


def test_mirroring_sgs_on_the_authors_rows(tables: dict[str, list[dict[str, object]]]) -> None:
    politeness_rows = load_reference(FIXTURE) + tables["politeness/trivia_qa"]
    length_rows = tables["length/trivia_qa"]

    def sgs(judged: PolitenessJudge, lengths: Callable[[dict[str, object]], bool]) -> float:
        polite = politeness(judged)
        counts = yes_per_prompt(
            politeness_rows,
            lambda r: (
                polite(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0
            ),
        )
        for prompt, n in yes_per_prompt(length_rows, lengths).items():
            counts[prompt] = counts.get(prompt, 0) + n
        return sgs_mr(counts)

    def ours_length(r: dict[str, object]) -> bool:
        return length(str(r["response_pert"]), str(r["response_orig"]), float(str(r["strength"]))) == 1.0

    authors = sgs_mr(
        {
            p: yes_per_prompt(politeness_rows, lambda r: bool(r["authors_verdict"])).get(p, 0)
            + yes_per_prompt(length_rows, lambda r: bool(r["authors_verdict"])).get(p, 0)
            for p in range(16)
        }
    )
    assert authors == pytest.approx(0.1255, abs=5e-5)
    # the authors' full table adds one surface-family YES that our surface rules share: +0.005 on both sides
    assert sgs(GratitudeJudge(), ours_length) == pytest.approx(0.1546, abs=5e-5)  # default, 1.23×
    assert sgs(LexiconPolitenessJudge(), ours_length) == pytest.approx(0.2909, abs=5e-5)  # before, 2.32×
    assert sgs(GratitudeJudge(), lambda r: bool(r["authors_verdict"])) == pytest.approx(0.0939, abs=5e-5)
    assert not math.isnan(authors)


def tuning_groups(tables: dict[str, list[dict[str, object]]]) -> dict[str, list[dict[str, object]]]:
    """The tuning rows (every Claude politeness row), by dataset: the only rows a parameter is chosen on."""
    return {
        "trivia_qa": load_reference(FIXTURE) + tables["politeness/trivia_qa"],
        "hotpot_qa": tables["politeness/hotpot_qa"],
        "natural_questions": tables["politeness/natural_questions"],
    }


def test_each_candidates_parameter_is_chosen_on_the_tuning_rows_alone(
    tables: dict[str, list[dict[str, object]]],
) -> None:
    groups = tuning_groups(tables)
    rows = [r for group in groups.values() for r in group]
    assert len(rows) == 208
    chosen = {name: choose(grid, rows) for name, grid in CANDIDATES.items()}
    assert chosen == {
        "GratitudeJudge": "",
        "LexiconPolitenessJudge": "margin 4",
        "CourtesyCueJudge": "min_change 1",
        "CourtesyMarkerJudge": "min_change 2",
    }
    # the judge classes' defaults are the chosen parameters
    assert CANDIDATES["CourtesyCueJudge"][chosen["CourtesyCueJudge"]] == CourtesyCueJudge()
    assert CANDIDATES["CourtesyMarkerJudge"][chosen["CourtesyMarkerJudge"]] == CourtesyMarkerJudge()
    kappas = {name: cohen_kappa_of(grid[chosen[name]], rows) for name, grid in CANDIDATES.items()}
    assert kappas == pytest.approx(
        {
            "GratitudeJudge": 0.578,
            "LexiconPolitenessJudge": 0.468,
            "CourtesyCueJudge": 0.551,
            "CourtesyMarkerJudge": 0.469,
        },
        abs=5e-4,
    )
    folds = {name: cross_validated(grid, groups).kappa for name, grid in CANDIDATES.items()}
    assert folds == pytest.approx(
        {
            "GratitudeJudge": 0.578,
            "LexiconPolitenessJudge": 0.341,
            "CourtesyCueJudge": 0.551,
            "CourtesyMarkerJudge": 0.329,
        },
        abs=5e-4,
    )


def cohen_kappa_of(judge: PolitenessJudge, rows: list[dict[str, object]]) -> float:
    return judge_agreement(judge, rows).kappa
