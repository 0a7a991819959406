"""What was run, for the header of every results page: benchmark version, variant set and hash, the
evaluation profile (items per dataset, strengths, token limit) and the run dates.

The profile and dates come from each complete submission's ``run.json``; a profile that runs less than
the paper's setting (``harness.profiles`` "paper") is called partial, never complete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.harness.profiles import get_profile
from benchmark.results import ResultsFolder
from benchmark.site.board import Board

REFERENCE_PROFILE = "paper"


@dataclass(frozen=True)
class ProfileRun:
    """One evaluation profile and the models run with it."""

    name: str
    """profile name from run.json (``"unknown"`` when run.json lacks it)."""
    items_per_dataset: int | None
    """items run per dataset."""
    all_strengths: bool | None
    """every strength level, or only the weakest and strongest."""
    max_new_tokens: int | None
    """generation limit."""
    partial: bool
    """runs less than the paper's setting (fewer items or levels, or a lower token limit)."""
    models: tuple[str, ...]
    """slugs run with this profile."""

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


def read_runs(board: Board, submissions_root: Path) -> dict[str, dict[str, Any]]:
    """``run.json`` of every complete model that has one (unreadable files are left out)."""
    runs: dict[str, dict[str, Any]] = {}
    for model in board.complete:
        path = ResultsFolder.of(model["slug"], board.data["set"], board.data["version"], submissions_root).run
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the validator reports it; the header says the profile is not recorded
        if isinstance(data, dict):
            runs[model["slug"]] = data
    return runs


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _partial(profile: Mapping[str, Any]) -> bool:
    reference = get_profile(REFERENCE_PROFILE)
    items, tokens = _int(profile.get("items_per_dataset")), _int(profile.get("max_new_tokens"))
    return (
        items is None
        or items < reference.items_per_dataset
        or tokens is None
        or tokens < reference.max_new_tokens
        or profile.get("all_strengths") is not True
    )


def run_header(board: Board, runs: Mapping[str, Mapping[str, Any]]) -> RunHeader:
    """The header's facts from the leaderboard and the models' run.json contents (pure).

    >>> b = Board.of({"set": "s", "version": "v1", "generator": {"version": "0.1.0"},
    ...            "models": [{"slug": "a", "status": "complete"}]})
    >>> h = run_header(b, {"a": {"profile": {"name": "smoke", "items_per_dataset": 4, "all_strengths": False,
    ...                    "max_new_tokens": 32}, "timings": {"finished_at": "2026-11-30T01:26:25+00:00"}}})
    >>> h.partial, h.profiles[0].strengths, h.run_dates
    (True, 'weakest and strongest level of each rewrite', ('2026-11-30',))
    """
    groups: dict[tuple[Any, ...], list[str]] = {}
    for model in board.complete:
        profile = runs.get(model["slug"], {}).get("profile") or {}
        key = (
            str(profile.get("name", "unknown")),
            _int(profile.get("items_per_dataset")),
            profile.get("all_strengths") if isinstance(profile.get("all_strengths"), bool) else None,
            _int(profile.get("max_new_tokens")),
        )
        groups.setdefault(key, []).append(model["slug"])
    profiles = tuple(
        ProfileRun(
            name,
            items,
            strengths,
            tokens,
            _partial({"items_per_dataset": items, "all_strengths": strengths, "max_new_tokens": tokens}),
            tuple(slugs),
        )
        for (name, items, strengths, tokens), slugs in sorted(
            groups.items(), key=lambda kv: (-len(kv[1]), kv[0][0])
        )
    )
    dates = sorted({str(r.get("timings", {}).get("finished_at", ""))[:10] for r in runs.values()} - {""})
    shas = [r.get("variant_set_sha256") or (r.get("variant_set") or {}).get("sha256") for r in runs.values()]
    sha = next((str(s) for s in shas if s), None)
    return RunHeader(
        str(board.data.get("generator", {}).get("version", "")),
        f"{board.data.get('set', '')}/{board.data.get('version', '')}",
        sha,
        profiles,
        tuple(dates),
    )
