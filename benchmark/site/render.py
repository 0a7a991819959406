"""The jinja2 environment and the number formats shared by every page.

Autoescaping is on for every template, whatever its extension: model names, responses and item ids come
from pull requests and must never become markup. The only ``Markup`` that reaches a page unescaped is the
SVG drawn by :mod:`benchmark.site.plots`.
"""

from __future__ import annotations

import math
from typing import Any

import jinja2

NAV: tuple[tuple[str, str], ...] = (
    ("index.html", "Overview"),
    ("reversals.html", "Reversals"),
    ("axes.html", "Axes"),
    ("models.html", "Models"),
    ("datasets.html", "Datasets"),
    ("items/index.html", "Items"),
    ("methodology.html", "Methodology"),
    ("downloads.html", "Downloads"),
)


def environment() -> jinja2.Environment:
    """The template environment: package templates, strict undefined names, autoescape everywhere."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("benchmark.site", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=neutral_text,
    )
    env.filters.update(num=num, pval=pval, p_is=p_is, signed=signed, sortkey=sortkey, size=size)
    env.globals["nav"] = NAV
    return env


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def num(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant digits, or an en dash when there is none.

    >>> num(0.181414), num(None), num(12345.6)
    ('0.181', '–', '1.23e+04')
    """
    if not _finite(value):
        return "–"
    return f"{value:.{digits}g}"


def signed(value: Any, digits: int = 3) -> str:
    """Like :func:`num`, with an explicit sign (for deltas and differences).

    >>> signed(0.5), signed(-2.0), signed(None)
    ('+0.5', '−2', '–')
    """
    if not _finite(value):
        return "–"
    text = f"{value:+.{digits}g}"
    return text.replace("-", "−")


def pval(value: Any) -> str:
    """A p-value as printed in papers.

    >>> pval(0.0004), pval(0.0312), pval(None)
    ('<0.001', '0.031', '–')
    """
    if not _finite(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def p_is(value: Any) -> str:
    """A p-value inside a sentence.

    >>> p_is(0.0004), p_is(0.0312)
    ('p < 0.001', 'p = 0.031')
    """
    text = pval(value)
    return f"p < {text[1:]}" if text.startswith("<") else f"p = {text}"


def sortkey(value: Any) -> str:
    """The ``data-sort`` value of a cell: the raw number, or empty (sorted last) when missing."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if _finite(value):
        return repr(float(value))
    return "" if value is None or isinstance(value, float) else str(value)


def size(value: int) -> str:
    """A byte count for people.

    >>> size(512), size(2048), size(3 * 2**20)
    ('512 B', '2.0 KiB', '3.0 MiB')
    """
    if value < 1024:
        return f"{value} B"
    if value < 2**20:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 2**20:.1f} MiB"


def root_of(path: str) -> str:
    """The relative prefix from a page back to the site root.

    >>> root_of("index.html"), root_of("items/trivia_qa/3.html")
    ('', '../../')
    """
    return "../" * path.count("/")


# Bidirectional embedding/override/isolate controls: in a model name they can make text read in another
# order than it is stored (e.g. a slug that displays as someone else's), so the site never emits them.
BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)], "\ufffd")


def neutral_text(value: Any) -> Any:
    """Every ``{{ }}`` output goes through here: bidi controls become U+FFFD (escaping happens after).

    >>> neutral_text("evil\u202egnp.exe"), neutral_text(3)
    ('evil\ufffdgnp.exe', 3)
    """
    return value.translate(BIDI_CONTROLS) if isinstance(value, str) else value
