"""Run profiles: how much of a variant set a run covers and how long the answers may be."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType

import pandas as pd

from benchmark.registry import Registry
from benchmark.schema import BASELINE_FAMILY

# Families whose rows are controls (noise floor), never thinned out by a profile.
CONTROL_FAMILIES = frozenset({BASELINE_FAMILY, "identity"})
# Strength at which a family equals the baseline; levels are "weak" near it and "strong" far from it.
# Length is a word-count multiplier (1.0 = unchanged); every other family counts up from 0.
_NEUTRAL_STRENGTH = {"length": 1.0}


@dataclass(frozen=True)
class Profile:
    """How much to run."""

    name: str
    items_per_dataset: int
    """items with ``item_rank`` below this are run."""
    all_strengths: bool
    """False: per (family, place, side of neutral) only the weakest and strongest level."""
    max_new_tokens: int
    description: str
    every_level_of: tuple[str, ...] = ()
    """families run at every level even when ``all_strengths`` is False."""

    def parameters(self) -> dict[str, object]:
        """JSON-ready (``every_level_of`` only when set, so older run.json files keep their bytes)."""
        out = asdict(self)
        if not self.every_level_of:
            del out["every_level_of"]
        else:
            out["every_level_of"] = list(self.every_level_of)
        return out

    def levels(self) -> str:
        """
        >>> PROFILES.get("evidence").levels()
        'weakest and strongest; every level of length and form'
        """
        if self.all_strengths:
            return "every level"
        extra = f"; every level of {' and '.join(self.every_level_of)}" if self.every_level_of else ""
        return f"weakest and strongest{extra}"

    def summary(self) -> str:
        """``smoke: 4 items/dataset, weakest and strongest, 32 tokens`` (the ``--profile`` help)."""
        items = f"{self.items_per_dataset} item{'s' if self.items_per_dataset != 1 else ''}/dataset"
        return f"{self.name}: {items}, {self.levels()}, {self.max_new_tokens} tokens"


PROFILES: Registry[Profile] = Registry("profile")
for _profile in (
    Profile("smoke", 4, False, 32, "CPU check: 4 items per dataset, weakest and strongest levels, 32 tokens"),
    Profile(
        "bench",
        1,
        False,
        32,
        "throughput probe for `make bench`: 1 item per dataset, extreme levels, 32 tokens",
    ),
    Profile("cpu", 8, True, 48, "CPU run: 8 items per dataset, every variant, 48 tokens"),
    Profile(
        "evidence",
        16,
        False,
        48,
        "evidence run on CPU: the paper's 16 items per dataset, weakest and strongest "
        "level of every rule family, every length and form cell, 48 tokens",
        every_level_of=("length", "form"),  # the paper's whole length/form grid
    ),
    Profile("paper", 16, True, 100, "the paper's setting: 16 items per dataset, every variant, 100 tokens"),
):
    PROFILES.add(_profile)


def get_profile(name: str) -> Profile:
    """The profile called ``name``; an unknown name is a one-line SagoError with a suggestion."""
    return PROFILES.get(name)


def select_rows(frame: pd.DataFrame, profile: Profile) -> pd.DataFrame:
    """The rows of one dataset's variant frame that ``profile`` runs, in the frame's order.

    >>> f = pd.DataFrame({"item_rank": [0, 0, 0, 0, 9], "family": ["baseline", "spacing", "spacing",
    ...                   "spacing", "baseline"], "place": ["none", "prefix", "prefix", "prefix", "none"],
    ...                   "strength": [0.0, 1.0, 5.0, 20.0, 0.0]})
    >>> select_rows(f, PROFILES.get("smoke"))["strength"].tolist()
    [0.0, 1.0, 20.0]
    """
    rows = frame[frame["item_rank"] < profile.items_per_dataset]
    if profile.all_strengths:
        return rows
    return rows[_extreme_levels(rows) | rows["family"].isin(profile.every_level_of)]


def _extreme_levels(rows: pd.DataFrame) -> pd.Series:
    """Mask of rows at the weakest or strongest level of their (family, place, side)."""
    neutral = rows["family"].map(_NEUTRAL_STRENGTH).fillna(0.0)
    distance = (rows["strength"] - neutral).abs()
    side = (rows["strength"] - neutral).apply(lambda d: (d > 0) - (d < 0))
    groups = [rows["family"], rows["place"], side]
    weakest = distance == distance.groupby(groups).transform("min")
    strongest = distance == distance.groupby(groups).transform("max")
    return rows["family"].isin(CONTROL_FAMILIES) | weakest | strongest


def rows_run(frames: Sequence[pd.DataFrame], profile: Profile) -> int:
    """Model runs on these frames: the selected rows plus one rerun of each baseline."""
    selected = [select_rows(frame, profile) for frame in frames]
    return sum(len(rows) + int((rows["family"] == BASELINE_FAMILY).sum()) for rows in selected)


def profile_table(frames: Sequence[pd.DataFrame], set_label: str) -> str:
    """The README's profile table (Markdown); a test keeps the README's copy equal to it."""
    lines = [
        f"| profile | items per dataset | levels per family | new tokens | model runs on {set_label} |",
        "|---|---|---|---|---|",
    ]
    by_size = sorted((PROFILES.get(n) for n in PROFILES.names()), key=lambda p: rows_run(frames, p))
    for profile in by_size:
        cells = (profile.items_per_dataset, profile.levels(), profile.max_new_tokens)
        lines.append(f"| `{profile.name}` | {' | '.join(map(str, cells))} | {rows_run(frames, profile):,} |")
    return "\n".join(lines)


DEFAULT_BOARD_PROFILE = "smoke"
"""The board profile of an unlisted version: ``sago evaluate``'s default, so it lands in ``<version>/``."""
BOARD_PROFILES: Mapping[str, str] = MappingProxyType({"v1": "smoke", "v2": "evidence"})
"""Each frozen version's board profile, whose runs ``results/<set>/<version>/`` holds; any other
profile's runs live in ``<version>-<profile>/`` and get a board of their own, never pooled."""


def board_profile(version: str) -> str:
    """The profile whose runs ``results/<set>/<version>/`` holds.

    >>> board_profile("v2"), board_profile("v1"), board_profile("t9")
    ('evidence', 'smoke', 'smoke')
    """
    return BOARD_PROFILES.get(version, DEFAULT_BOARD_PROFILE)


def results_folder_name(version: str, profile: str | None = None) -> str:
    """The folder under ``results/<set>/`` of ``profile``'s runs (None: the board profile).

    >>> results_folder_name("v2"), results_folder_name("v2", "evidence"), results_folder_name("v2", "paper")
    ('v2', 'v2', 'v2-paper')
    """
    if profile is None or profile == board_profile(version):
        return version
    return f"{version}-{get_profile(profile).name}"


def parse_results_folder_name(name: str) -> tuple[str, str]:
    """(version, profile) of a folder name; a suffix that names no profile is part of the version.

    >>> parse_results_folder_name("v2-paper"), parse_results_folder_name("v2")
    (('v2', 'paper'), ('v2', 'evidence'))
    """
    version, dash, suffix = name.rpartition("-")
    if dash and version and suffix in PROFILES.names():
        return version, suffix
    return name, board_profile(name)
