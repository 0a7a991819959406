"""What was run, for the header of every results page: benchmark version, variant set and hash, the
evaluation profile (items per dataset, strengths, token limit) and the run dates.

The profile and dates come from each complete submission's ``run.json``; a profile that runs less than
the paper's setting (``harness.profiles`` "paper") is called partial, never complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmark.documents import RunDocument, RunProfile
from benchmark.profiles import get_profile
from benchmark.site.board import Board
from benchmark.stats.facts import read_run

REFERENCE_PROFILE = "paper"


@dataclass(frozen=True)
class ProfileRun:
    """One evaluation profile and the models run with it."""

    name: str
    """profile name from run.json (``"unknown"`` when run.json lacks it)."""
    items_per_dataset: int | None
    all_strengths: bool | None
    """every strength level, or only the weakest and strongest."""
    max_new_tokens: int | None
    partial: bool
    """runs less than the paper's setting (fewer items or levels, or a lower token limit)."""
    models: tuple[str, ...]
    """slugs run with this profile."""

    @property
    def shortfall(self) -> str:
        """What this profile runs less of than the paper's setting, in words ('' when nothing).

        >>> for part in ProfileRun("smoke", 4, False, 32, True, ()).shortfall.split("; "):
        ...     print(part)
        4 items per dataset (the paper: 16), so many comparisons cannot reach significance
        only the weakest and strongest level of each rewrite
        up to 32 new tokens (the paper: 100)
        >>> ProfileRun("evidence", 16, False, 48, True, ()).shortfall.split("; ")[0]
        'only the weakest and strongest level of each rewrite'
        """
        paper = get_profile(REFERENCE_PROFILE)
        parts = []
        if self.items_per_dataset is None or self.items_per_dataset < paper.items_per_dataset:
            parts.append(
                f"{self.items_per_dataset if self.items_per_dataset is not None else '?'} items per dataset "
                f"(the paper: {paper.items_per_dataset}), so many comparisons cannot reach significance"
            )
        if self.all_strengths is not True:
            parts.append("only the " + self.strengths if self.all_strengths is False else self.strengths)
        if self.max_new_tokens is None or self.max_new_tokens < paper.max_new_tokens:
            parts.append(
                f"up to {self.max_new_tokens if self.max_new_tokens is not None else '?'} new tokens "
                f"(the paper: {paper.max_new_tokens})"
            )
        return "; ".join(parts)

    @property
    def strengths(self) -> str:
        """The strength levels in words."""
        if self.all_strengths is None:
            return "strengths not recorded"
        return "every strength level" if self.all_strengths else "weakest and strongest level of each rewrite"


@dataclass(frozen=True)
class RunHeader:
    """The facts the header of every results page states."""

    benchmark_version: str
    """sago-bench version that wrote leaderboard.json."""
    variant_set: str
    """``set/version``."""
    set_sha256: str | None
    """variant-set hash recorded in run.json (the first model's; None when none recorded)."""
    profiles: tuple[ProfileRun, ...]
    """one per distinct profile, most models first."""
    run_dates: tuple[str, ...]
    """distinct finishing dates (YYYY-MM-DD) of the runs, sorted."""

    @property
    def partial(self) -> bool:
        """Any profile runs less than the paper's setting."""
        return any(p.partial for p in self.profiles)

    def profile_of(self, slug: str) -> ProfileRun | None:
        """The profile a model ran with."""
        return next((p for p in self.profiles if slug in p.models), None)


def read_runs(board: Board, submissions_root: Path) -> dict[str, RunDocument]:
    """``run.json`` of every complete model that has a readable one (unreadable files are left out)."""
    # an unreadable one: the validator reports it; the header says the profile is not recorded
    found = {m["slug"]: read_run(board.results(m["slug"], submissions_root)) for m in board.complete}
    return {slug: run for slug, run in found.items() if run is not None}


def _partial(profile: RunProfile) -> bool:
    reference = get_profile(REFERENCE_PROFILE)
    items, tokens = profile.items_per_dataset or 0, profile.max_new_tokens or 0
    return (
        items < reference.items_per_dataset or tokens < reference.max_new_tokens or not profile.all_strengths
    )


def _profile(run: RunDocument | None) -> RunProfile:
    """The run's profile, named ``"unknown"`` when run.json (or its profile's name) is not recorded."""
    profile = (run.profile if run else None) or RunProfile()
    return profile if profile.name is not None else profile.model_copy(update={"name": "unknown"})


def run_header(board: Board, runs: Mapping[str, RunDocument]) -> RunHeader:
    """The header's facts from the leaderboard and the models' run.json documents (pure).

    >>> b = Board.of({"set": "s", "version": "v1", "generator": {"version": "0.1.0"},
    ...            "models": [{"slug": "a", "status": "complete"}]})
    >>> smoke = {"name": "smoke", "items_per_dataset": 4, "all_strengths": False, "max_new_tokens": 32}
    >>> run = RunDocument.from_json({"schema_version": 1, "profile": smoke,
    ...                              "timings": {"finished_at": "2026-11-30T01:26:25+00:00"}})
    >>> h = run_header(b, {"a": run})
    >>> h.partial, h.profiles[0].strengths, h.run_dates
    (True, 'weakest and strongest level of each rewrite', ('2026-11-30',))
    """
    groups: dict[RunProfile, list[str]] = {}
    for model in board.complete:
        groups.setdefault(_profile(runs.get(model["slug"])), []).append(model["slug"])
    most_models_first = sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0].name)))
    profiles = tuple(
        ProfileRun(
            str(p.name), p.items_per_dataset, p.all_strengths, p.max_new_tokens, _partial(p), tuple(slugs)
        )
        for p, slugs in most_models_first
    )
    dates = sorted({(r.finished_at or "")[:10] for r in runs.values()} - {""})
    sha = next((s for r in runs.values() if (s := r.variant_set_sha256 or r.nested_variant_set_sha256)), None)
    generator = str(board.data.get("generator", {}).get("version", ""))
    variant_set = f"{board.data.get('set', '')}/{board.data.get('version', '')}"
    return RunHeader(generator, variant_set, sha, profiles, tuple(dates))
