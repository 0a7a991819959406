"""The politeness judges are one registry: adding a judge is one entry, and names, help and errors read it."""

from __future__ import annotations

import pytest

from benchmark.axes.politeness import CourtesyMarkerJudge, PolitenessJudge
from benchmark.axes.scorers import (
    DEFAULT_JUDGE,
    JUDGES,
    POLITENESS_ENV,
    JudgeSpec,
    configured_politeness,
    judges_help,
)
from benchmark.errors import SagoError


class _Always:
    def shifted(self, response: str, baseline: str, direction: int) -> bool:
        return True


def _judged(monkeypatch: pytest.MonkeyPatch, value: str) -> tuple[PolitenessJudge, str]:
    monkeypatch.setenv(POLITENESS_ENV, value)
    return configured_politeness()


def test_a_judge_is_one_entry_reached_by_name_help_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(argument: str) -> tuple[PolitenessJudge, str]:
        return _Always(), f"Always({argument})"

    spec = JudgeSpec("always", make, "says yes to everything", argument="<reason>")
    with JUDGES.added(spec.name, spec):
        judge, label = _judged(monkeypatch, "always:testing")
        assert label == "Always(testing)" and judge.shifted("a", "b", -1)
        assert "always:<reason> (says yes to everything)" in judges_help()
        with pytest.raises(SagoError, match=r"='always': judge 'always' is written always:<reason>$"):
            _judged(monkeypatch, "always")
    with pytest.raises(SagoError) as err:
        _judged(monkeypatch, "always:testing")
    assert str(err.value) == (
        f"${POLITENESS_ENV}='always:testing': unknown politeness judge 'always' (known: "
        f"{', '.join(JUDGES.names())})"
    )


def test_the_runtime_judges_and_their_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [spec.form for spec in JUDGES.entries()] == ["courtesy-markers", "llm", "openai:<model>"]
    monkeypatch.delenv(POLITENESS_ENV, raising=False)
    assert configured_politeness() == (CourtesyMarkerJudge(), "CourtesyMarkerJudge")
    assert _judged(monkeypatch, DEFAULT_JUDGE) == (CourtesyMarkerJudge(), "CourtesyMarkerJudge")
    with pytest.raises(SagoError, match=r"judge 'courtesy-markers' is written courtesy-markers$"):
        _judged(monkeypatch, "courtesy-markers:2")
    with pytest.raises(SagoError, match=r"did you mean 'courtesy-markers'\?"):
        _judged(monkeypatch, "courtesy-marker")
    with pytest.raises(ValueError, match="politeness judge 'llm' is registered twice"):
        JUDGES.add(JudgeSpec("llm", lambda _: (CourtesyMarkerJudge(), ""), "a second llm"))
