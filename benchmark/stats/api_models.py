"""The API models' table: what a chat endpoint lets us measure, kept apart from the open models' ranking.

An API run has the response axes (generation, mirroring) computed exactly as for open models, and in place
of the teacher-forced confidence the authors' closed-model confidence: per reply, the mean probability of
its own tokens and −Σ p·log p over them (``benchmark.models.api.own_confidence``); per variant the change
from the item's baseline reply. Those two numbers answer another question than Δ log p(y_0 | x_v) (the
reply itself changed, not only the model's belief in a fixed one), so the board never ranks them together.
Pure functions: frames and documents in, rows out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmark import jsonio
from benchmark.axes.measures import all_measures
from benchmark.axes.mirroring import CONTROL_FAMILIES
from benchmark.documents import SummaryDocument
from benchmark.errors import SagoError
from benchmark.safeload import load_json_object
from benchmark.schema import BASELINE_VARIANT_ID

API_AXES = ("generation", "mirroring")
"""the axes an API run measures as an open model's run does."""


def own_confidence_shifts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per item of one dataset: the mean change of own-token probability and entropy over its rewrites.

    >>> f = pd.DataFrame({"dataset": "d", "item_id": ["1", "1", "1"],
    ...     "variant_id": ["baseline/none/0", "spacing/global/5", "rerun/none/0"],
    ...     "own_tokens": [3, 3, 3], "own_prob_mean": [0.9, 0.6, 0.9], "own_entropy": [0.2, 0.8, 0.2]})
    >>> own_confidence_shifts(f).round(3).to_dict("records")
    [{'dataset': 'd', 'item_id': '1', 'delta_prob': -0.3, 'delta_entropy': 0.6, 'rewrites': 1}]
    """
    base = frame[frame["variant_id"] == BASELINE_VARIANT_ID][
        ["dataset", "item_id", "own_prob_mean", "own_entropy"]
    ]
    family = frame["variant_id"].str.split("/").str[0]
    rewrites = frame[(frame["variant_id"] != BASELINE_VARIANT_ID) & ~family.isin(CONTROL_FAMILIES)]
    joined = rewrites.merge(base, on=["dataset", "item_id"], suffixes=("", "_0"), validate="many_to_one")
    joined = joined.assign(
        delta_prob=joined["own_prob_mean"] - joined["own_prob_mean_0"],
        delta_entropy=joined["own_entropy"] - joined["own_entropy_0"],
    )
    grouped = joined.groupby(["dataset", "item_id"], sort=True)
    return grouped.agg(
        delta_prob=("delta_prob", "mean"),
        delta_entropy=("delta_entropy", "mean"),
        rewrites=("delta_prob", "size"),
    ).reset_index()


def headline_cells(summary: SummaryDocument) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(dataset, axis) -> the summary cell of the axis's headline measure, for the API axes."""
    headline = {m.name: m.axis for m in all_measures() if m.headline and m.axis in API_AXES}
    return {
        (str(c["dataset"]), headline[str(c["measure"])]): c
        for c in summary.to_json().get("cells", [])
        if c.get("measure") in headline
    }


@dataclass(frozen=True)
class AxisCell:
    """One API axis on one dataset: the headline measure's SGS, its 95 % interval and verdict."""

    sgs: float | None
    ci: tuple[float | None, float | None]
    verdict: str | None
    n_items: int | None


@dataclass(frozen=True)
class OwnShift:
    """The mean change, over a dataset's items, of the reply's own-token probability and entropy."""

    n_items: int
    delta_prob: float | None
    delta_entropy: float | None


@dataclass(frozen=True)
class ApiRow:
    """One row of the API table: a model on one dataset (or ``all``)."""

    model: str
    name: str
    profile: str | None
    """the run's profile (rows of different profiles are not comparable)."""
    dataset: str
    generation: AxisCell | None
    mirroring: AxisCell | None
    own_confidence: OwnShift

    def to_json(self) -> dict[str, object]:
        return asdict(self) | {
            axis: None if cell is None else asdict(cell) | {"ci": list(cell.ci)}
            for axis, cell in (("generation", self.generation), ("mirroring", self.mirroring))
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApiRow:
        def cell(value: object) -> AxisCell | None:
            if not isinstance(value, Mapping):
                return None
            low, high = (list(value.get("ci") or [None, None]) + [None, None])[:2]
            return AxisCell(value.get("sgs"), (low, high), value.get("verdict"), value.get("n_items"))

        own = data.get("own_confidence") or {}
        return cls(
            str(data["model"]),
            str(data["name"]),
            data.get("profile"),
            str(data["dataset"]),
            cell(data.get("generation")),
            cell(data.get("mirroring")),
            OwnShift(int(own.get("n_items") or 0), own.get("delta_prob"), own.get("delta_entropy")),
        )


def api_rows(
    slug: str, name: str, summary: SummaryDocument, own: Sequence[pd.DataFrame], profile: str | None
) -> list[ApiRow]:
    """One row per dataset (and ``all``) of an API model: the headline SGS of each API axis with its
    interval and verdict, and the mean own-token confidence shifts over the dataset's items."""
    cells = headline_cells(summary)
    shifts = pd.concat([own_confidence_shifts(f) for f in own], ignore_index=True) if own else pd.DataFrame()
    rows = []
    for dataset in sorted({d for d, _ in cells}, key=lambda d: (d == "all", d)):
        chosen = shifts if dataset == "all" or shifts.empty else shifts[shifts["dataset"] == dataset]
        finite = chosen[np.isfinite(chosen["delta_prob"])] if not chosen.empty else chosen
        axes = {
            axis: None
            if (c := cells.get((dataset, axis))) is None
            else AxisCell(
                c.get("sgs"), (c.get("ci_low"), c.get("ci_high")), c.get("verdict"), c.get("n_items")
            )
            for axis in API_AXES
        }
        own_shift = OwnShift(
            int(len(finite)),
            _round(finite["delta_prob"].mean()) if len(finite) else None,
            _round(finite["delta_entropy"].mean()) if len(finite) else None,
        )
        rows.append(ApiRow(slug, name, profile, dataset, axes["generation"], axes["mirroring"], own_shift))
    return rows


def _round(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 6)


ABOUT = (
    "Models behind an OpenAI-compatible endpoint. Generation and mirroring are measured as for the open "
    "models; confidence is the change in the mean probability of the reply's own tokens (and in -sum p log p "
    "over them), not the teacher-forced log-probability of the baseline reply; activations are not measured. "
    "Never ranked with the open models."
)
"""what the API table is, said on its page and in its file."""
API_TABLE_FILE = "api_models.json"
"""the API table, beside ``leaderboard.json`` (its own document: leaderboard.json never holds API models)."""
API_TABLE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ApiTable:
    """``api_models.json``: the one declaration of the document (written by ``sago analyze``, read by the
    site; ``tests/test_committed_results.py`` rebuilds it)."""

    set_name: str
    version: str
    rows: tuple[ApiRow, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "schema_version": API_TABLE_SCHEMA_VERSION,
            "kind": "api_models",
            "set": self.set_name,
            "version": self.version,
            "about": ABOUT,
            "rows": [r.to_json() for r in self.rows],
        }

    def dumps(self) -> str:
        """The file's text: canonical like the leaderboard's (rebuilt, the same bytes)."""
        return jsonio.dumps(self.to_json())

    @classmethod
    def read(cls, path: Path, set_name: str, version: str) -> ApiTable:
        """The table at ``path`` for ``set_name``/``version``: empty when the file is absent or made for
        another board; a file of another schema, or whose rows are not objects, is a one-line error."""
        empty = cls(set_name, version, ())
        if not path.is_file():
            return empty
        document = load_json_object(path, limit=4 << 20, fix="re-run `sago analyze`")
        if document.get("schema_version") != API_TABLE_SCHEMA_VERSION or document.get("kind") != "api_models":
            raise SagoError(
                f"{path}: not an api_models.json of schema {API_TABLE_SCHEMA_VERSION}; re-run `sago analyze`"
            )
        if (document.get("set"), document.get("version")) != (set_name, version):
            return empty
        rows = document.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise SagoError(f"{path}: 'rows' is not a list of objects; re-run `sago analyze`")
        try:
            return cls(set_name, version, tuple(ApiRow.from_json(r) for r in rows))
        except (KeyError, TypeError, ValueError):
            raise SagoError(f"{path}: a row lacks model, name or dataset; re-run `sago analyze`") from None
