"""Static SVG plots drawn at build time with matplotlib, for inlining into the pages.

Every plot is byte-identical across builds (fixed ``svg.hashsalt``, no date), has a transparent
background, and draws text, axes and ticks in a sentinel colour that is replaced by ``currentColor``
so the page's CSS decides it: the same SVG reads in light and in dark mode. Each SVG carries a
``<title>`` and ``<desc>``; the pages put a table of the same numbers beside it.
Labels are model display names, dataset and measure names; matplotlib escapes every text it writes.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import matplotlib
import numpy
from markupsafe import Markup, escape
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm
from matplotlib.figure import Figure

from benchmark.errors import visible

_METADATA = ("Date", "Creator", "Format", "Type")  # left out (None), so a rebuild writes the same bytes
_INK = "#0a0b0c"  # sentinel: replaced by currentColor in the written SVG
_INKED = ("text.color", "axes.labelcolor", "axes.edgecolor", "xtick.color", "ytick.color")
_STYLE: Any = {  # Any: matplotlib types rcParams keys as a Literal union
    **dict.fromkeys(_INKED, _INK),
    **{"svg.fonttype": "none", "font.size": 9.5, "axes.titlesize": 10.5, "legend.fontsize": 9},
    **{"xtick.labelsize": 9, "ytick.labelsize": 9},
}
_SMALLEST_FONT = 8.5  # pt: 11.3 px when a plot is shown at its natural size
NARROW_WIDTH = 3.6
"""Inches (259 pt, 346 px) of a plot's phone variant: it fits a 390 px screen at its natural size, so
its smallest text (8.5 pt) stays at 11.3 px instead of shrinking with the plot."""
_FONT_RE = re.compile(r"font-family: [^;\"]+")
_NEWLINES_RE = re.compile(r"\s*\n\s*")
_DECIMALS_RE = re.compile(r"(\d\.\d\d)\d+")
_TEXT_RE = re.compile(r"(<text[^>]*>.*?</text>)", re.DOTALL)
# Point colours of medium lightness: readable on white and on near-black.
PALETTE = ("#3b82f6", "#f97316", "#10b981", "#e11d48", "#a855f7", "#ca8a04", "#0891b2", "#db2777")
SHAPES = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Marker shapes paired with PALETTE, so no series is told apart by colour alone."""


@dataclass(frozen=True)
class Point:
    """One labelled point of a scatter plot."""

    label: str
    """the model's display name, shown in the legend."""
    x: float
    y: float
    marked: bool = False
    """drawn with a ring (e.g. Pareto-optimal)."""


def _figure(width: float, height: float) -> Figure:
    # Figure() without pyplot: no global state, no GUI backend.
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig: Figure, key: str, title: str, desc: str) -> Markup:
    """Render ``fig`` as an inline ``<svg>`` with ``title`` (its accessible name) and ``desc`` (the text
    alternative: what it shows, where the numbers are in a table). ``key`` is fixed and unique on the page:
    it seeds the SVG ids, so two plots on one page never share one."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"sago-{key}", **_STYLE}):
        fig.savefig(buf, format="svg", transparent=True, metadata=dict.fromkeys(_METADATA))
    text = buf.getvalue()
    text = text[text.index("<svg") :].replace(_INK, "currentColor")
    text = _FONT_RE.sub("font-family: inherit", text)
    text = _compact(text)
    head_end = text.index(">") + 1
    label = f"plot-{key}"
    opening = text[:head_end].replace("<svg ", f'<svg role="img" aria-labelledby="{label}" class="plot" ', 1)
    caption = f'<title id="{label}">{escape(title)}</title><desc>{escape(desc)}</desc>'
    return Markup(opening + caption + text[head_end:])  # matplotlib escapes every text it writes


def _compact(svg: str) -> str:
    """One line per element and coordinates to 1/100 pt (invisible on screen), text left untouched.

    >>> _compact('<path d="M 1.23456 2"/>\\n <text x="1.23456">0.12345</text>')
    '<path d="M 1.23 2"/> <text x="1.23456">0.12345</text>'
    """
    parts = _TEXT_RE.split(_NEWLINES_RE.sub(" ", svg))
    # split() with a group alternates: even indices are markup between <text> elements, odd are texts
    return "".join(part if index % 2 else _DECIMALS_RE.sub(r"\1", part) for index, part in enumerate(parts))


def _plain(text: str) -> str:
    r"""Text matplotlib shows as written: a ``$`` would otherwise start mathtext, and a control or format
    character (a bidi override in a model name) is drawn as its visible escape, as on the rest of the page.

    >>> _plain("US$ 5\u200f")
    'US\\$ 5\\u200f'
    """
    return visible(text).replace("$", "\\$")


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


Matrix = Sequence[Sequence[float | None]]


def pair_heatmap(
    matrix: Matrix, labels: Sequence[str], *, key: str, title: str, desc: str, narrow: bool = False
) -> Markup:
    """A symmetric matrix of pair statistics in [-1, 1] drawn as its lower triangle only (each pair once);
    missing values are left blank with a dash.

    The first row and the last column hold no pair below the diagonal, so they are dropped. The ``narrow``
    variant (for phones) is :data:`NARROW_WIDTH` wide, with upright column labels turned a quarter and one
    decimal per cell once the cells get small.
    """
    rows, cols = labels[1:], labels[:-1]
    with matplotlib.rc_context(_STYLE):
        size = max(len(rows), len(cols), 1)
        width, height = (NARROW_WIDTH, 2.0 + 0.36 * size) if narrow else (2.2 + 0.62 * size, 1.6 + 0.5 * size)
        fig = _figure(width, height)
        ax = fig.add_subplot()
        shown = [[j <= i for j in range(len(cols))] for i in range(len(rows))]
        values = [
            [v if _finite(v) and shown[i][j] else math.nan for j, v in enumerate(row[:-1])]
            for i, row in enumerate(matrix[1:])
        ]
        # Vector cells (pcolormesh, not imshow, which embeds a PNG) in ten colour steps over [-1, 1]: few
        # enough that the colour bar stays vector too, and a reader can match a cell to the scale.
        norm = BoundaryNorm([-1.0 + 2.0 * k / 10 for k in range(11)], ncolors=256)
        mesh = ax.pcolormesh(numpy.ma.masked_invalid(values), cmap="RdBu", norm=norm)
        ax.set_aspect("equal")
        ax.invert_yaxis()
        _annotate(ax, values, shown, digits=1 if narrow and size > 4 else 2)
        ax.set_xticks(
            [j + 0.5 for j in range(len(cols))],
            [visible(c) for c in cols],
            rotation=90 if narrow else 40,
            ha="center" if narrow else "right",
        )
        ax.set_yticks([i + 0.5 for i in range(len(rows))], [visible(r) for r in rows])
        ax.tick_params(length=0)
        ax.spines[["top", "right"]].set_visible(False)
        _title(fig, ax, title, narrow)
        fig.colorbar(mesh, ax=ax, shrink=0.8, location="bottom" if narrow else "right")
        return to_svg(fig, key, title, desc)


def _wrapped(text: str, narrow: bool, width: int = 34) -> str:
    """A label broken onto lines that fit a narrow plot (unchanged for a wide one).

    >>> _wrapped("How much do two measures agree about which items are unstable?", True)
    'How much do two measures agree\\nabout which items are unstable?'
    """
    return textwrap.fill(text, width, break_long_words=True) if narrow else text


def _title(fig: Figure, ax: Axes, text: str, narrow: bool) -> None:
    """The plot's title: above the axes, or centred on the whole figure when narrow (where long tick
    labels push the axes to one side and an axes title would run off the edge)."""
    if narrow:
        fig.suptitle(_wrapped(text, narrow), fontsize=_STYLE["axes.titlesize"])
    else:
        ax.set_title(text)


def _cell_text(value: float, digits: int) -> str:
    """A cell's number; with one digit the leading zero goes, so it fits a phone-sized cell.

    >>> _cell_text(-0.512, 2), _cell_text(-0.512, 1), _cell_text(0.43, 1), _cell_text(1.0, 1)
    ('−0.51', '−.5', '.4', '1.0')
    """
    text = f"{value:.{digits}f}"
    return (re.sub(r"^(-?)0\.", r"\1.", text) if digits == 1 else text).replace("-", "\u2212")


def _annotate(ax: Axes, values: list[list[float]], shown: list[list[bool]], *, digits: int) -> None:
    """Write each shown number in its cell, light on dark colours and dark on light ones."""
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            if not shown[i][j]:
                continue
            if math.isnan(value):
                ax.text(j + 0.5, i + 0.5, "–", ha="center", va="center", color=_INK)
                continue
            colour = "#ffffff" if abs(value) > 0.6 else "#111111"
            text = _cell_text(value, digits)
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=_SMALLEST_FONT, color=colour)


def scatter(
    points: Sequence[Point],
    *,
    key: str,
    title: str,
    desc: str,
    xlabel: str,
    ylabel: str,
    narrow: bool = False,
) -> Markup:
    """Labelled points; ``marked`` points get a ring (used for the Pareto front)."""
    with matplotlib.rc_context(_STYLE):
        width = NARROW_WIDTH if narrow else 5.6
        fig = _figure(width, (3.6 if narrow else 3.4) + 0.25 * len(points))
        ax = fig.add_subplot()
        for index, point in enumerate(points):
            colour, shape = PALETTE[index % len(PALETTE)], SHAPES[index % len(SHAPES)]
            label = _plain(point.label) + (" (Pareto-optimal)" if point.marked else "")
            ax.scatter([point.x], [point.y], s=48, color=colour, marker=shape, zorder=3, label=label)
            if point.marked:
                ax.scatter([point.x], [point.y], s=190, facecolors="none", edgecolors=_INK, zorder=2)
        ax.set_xlabel(_wrapped(xlabel, narrow))
        ax.set_ylabel(_wrapped(ylabel, narrow))
        _title(fig, ax, title, narrow)
        ax.margins(0.25)
        ax.grid(alpha=0.25, color=_INK)
        # a legend below the frame, not labels beside the points, so long names never leave the plot
        fig.legend(frameon=False, loc="outside lower center", ncols=1, labelcolor=_INK)
        return to_svg(fig, key, title, desc)


@dataclass(frozen=True)
class Interval:
    """One row of an interval plot: a value with its confidence interval."""

    label: str
    """row label (a dataset name)."""
    value: float | None
    """the estimate; None draws nothing."""
    low: float | None
    high: float | None


def intervals(
    series: Mapping[str, Sequence[Interval]],
    *,
    key: str,
    title: str,
    desc: str,
    xlabel: str,
    narrow: bool = False,
) -> Markup:
    """Dot-and-whisker rows, one colour and shape per series (e.g. per dataset), sharing the row labels."""
    with matplotlib.rc_context(_STYLE):
        labels = [row.label for row in next(iter(series.values()), [])]
        columns = 2 if narrow else 3
        legend_rows = (len(series) + columns - 1) // columns
        width, extra = (NARROW_WIDTH, 0.3) if narrow else (6.4, 0.2)
        fig = _figure(width, 1.9 + 0.42 * max(1, len(labels)) + extra * legend_rows)
        ax = fig.add_subplot()
        offset = 0.75 / max(1, len(series))
        for index, (name, rows) in enumerate(series.items()):
            colour, shape = PALETTE[index % len(PALETTE)], SHAPES[index % len(SHAPES)]
            ys = [i + (index - (len(series) - 1) / 2) * offset for i in range(len(rows))]
            for y, row in zip(ys, rows, strict=True):
                if not _finite(row.value):
                    continue
                if _finite(row.low) and _finite(row.high):
                    ax.plot([row.low, row.high], [y, y], color=colour, linewidth=1.2)
                ax.scatter([row.value], [y], color=colour, marker=shape, s=22, zorder=3)
            ax.scatter([], [], color=colour, marker=shape, s=22, label=_plain(name))
        ax.set_yticks(range(len(labels)), [_plain(label) for label in labels])
        ax.invert_yaxis()
        ax.set_xlabel(_wrapped(xlabel, narrow, 28))
        _title(fig, ax, _plain(title), narrow)
        ax.grid(axis="x", alpha=0.25, color=_INK)
        if series:
            fig.legend(
                frameon=False, loc="outside lower center", ncols=min(columns, len(series)), labelcolor=_INK
            )
        return to_svg(fig, key, title, desc)
