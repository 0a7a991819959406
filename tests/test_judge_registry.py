"""The politeness judges are one registry: adding a judge is one entry, and names, help and errors read it."""

from __future__ import annotations

import pytest

from benchmark.axes.judges import DEFAULT_JUDGE, JUDGES, JudgeSpec, build_judge, judges_help
from benchmark.axes.politeness import CourtesyMarkerJudge, PolitenessJudge
from benchmark.axes.scorers import POLITENESS_ENV, configured_politeness
from benchmark.errors import SagoError


class _Always:
    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return True


def test_a_judge_is_one_entry_reached_by_name_help_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(argument: str) -> tuple[PolitenessJudge, str]:
        return _Always(), f"Always({argument})"

    spec = JudgeSpec("always", make, "says yes to everything", argument="<reason>")
    with JUDGES.added(spec.name, spec):
        monkeypatch.setenv(POLITENESS_ENV, "always:testing")
        judge, label = configured_politeness()
        assert label == "Always(testing)" and judge.shifted("a", "b", -1)
        assert "always:<reason> (says yes to everything)" in judges_help()
        with pytest.raises(SagoError, match=r"judge 'always' is written always:<reason>"):
            build_judge("always")
    with pytest.raises(SagoError) as err:
        configured_politeness()
    assert str(err.value) == (
        f"${POLITENESS_ENV}='always:testing': unknown politeness judge 'always' (known: "
        f"{', '.join(JUDGES.names())})"
    )


def test_the_runtime_judges_and_their_forms() -> None:
    assert [spec.form for spec in JUDGES.entries()] == ["courtesy-markers", "llm", "openai:<model>"]
    judge, label = build_judge(DEFAULT_JUDGE)
    assert judge == CourtesyMarkerJudge() and label == "CourtesyMarkerJudge"
    with pytest.raises(SagoError, match=r"judge 'courtesy-markers' is written courtesy-markers$"):
        build_judge("courtesy-markers:2")
    with pytest.raises(SagoError, match=r"did you mean 'courtesy-markers'\?"):
        build_judge("courtesy-marker")
    with pytest.raises(ValueError, match="politeness judge 'llm' is registered twice"):
        JUDGES.add(JudgeSpec("llm", lambda _: (CourtesyMarkerJudge(), ""), "a second llm"))
