"""Agreement of our politeness judges with the authors' published judge (numbers: docs/METHOD.md §7)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmark.axes.calibration import cohen_kappa, judge_agreement, load_reference
from benchmark.axes.mirroring import LexiconPolitenessJudge

FIXTURE = Path(__file__).parent / "fixtures" / "authors_politeness_claude_trivia_qa.json"


def test_cohen_kappa_known_answers() -> None:
    # 2×2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = (25·30 + 25·20)/50² = 0.5, κ = 0.4
    reference = [0] * 25 + [1] * 25
    judge = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    result = cohen_kappa(reference, judge)
    assert result.kappa == pytest.approx(0.4) and result.confusion == ((20, 5), (10, 15))
    assert cohen_kappa([1, 0, 1], [1, 0, 1]).kappa == pytest.approx(1.0)
    assert np.isnan(cohen_kappa([1, 1], [1, 1]).kappa)  # both constant: κ undefined


def test_fixture_carries_its_provenance() -> None:
    source = json.loads(FIXTURE.read_text(encoding="utf-8"))["source"]
    assert source["repository"].endswith("Mahmoudbj48/Styled-Prompts-Shifted-Behavior-v2")
    assert len(source["commit"]) == 40 and source["path"].endswith("full_results_all_models.csv")


def test_lexicon_judge_agreement_with_the_authors_judge() -> None:
    rows = load_reference(FIXTURE)
    result = judge_agreement(LexiconPolitenessJudge(), rows)
    # docs/METHOD.md §7: 61 rows, authors 8 YES; lexicon 24 YES; κ = 0.378
    assert result.n == 61 and result.confusion == ((37, 16), (0, 8))
    assert result.kappa == pytest.approx(0.3776, abs=1e-4)
    assert result.judge_rate == pytest.approx(24 / 61) and result.reference_rate == pytest.approx(8 / 61)


def test_margin_sensitivity_quoted_in_method() -> None:
    rows = load_reference(FIXTURE)
    kappas = {
        m: round(judge_agreement(LexiconPolitenessJudge(margin=m), rows).kappa, 3) for m in (2.0, 3.0, 4.0)
    }
    assert kappas == {2.0: 0.464, 3.0: 0.610, 4.0: 0.678}
