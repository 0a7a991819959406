"""The jinja2 environment and the number formats shared by every page.

Autoescaping is on for every template, whatever its extension: model names, responses and item ids come
from pull requests and must never become markup. The only ``Markup`` that reaches a page unescaped is the
SVG drawn by :mod:`benchmark.site.plots`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

import jinja2
from markupsafe import Markup

from benchmark.axes.measures import measure_label
from benchmark.errors import human_size, visible
from benchmark.schema import axis_label
from benchmark.site import findings
from benchmark.site.facts import percent
from benchmark.site.labels import AXIS_QUESTIONS, stand_in_reason
from benchmark.site.overview import NO_COMPOSITE

NAV: tuple[tuple[str, str], ...] = (
    ("index.html", "Overview"),
    ("reversals.html", "Reversals"),
    ("compare/index.html", "Compare"),
    ("models.html", "Models"),
    ("datasets.html", "Datasets"),
    ("items/index.html", "Items"),
    ("axes.html", "Axes"),
    ("methodology.html", "Methodology"),
    ("downloads.html", "Downloads"),
    ("submit.html", "Submit a model"),
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
    shared = (num, pval, p_is, signed, sortkey, measure_label, axis_label, percent, stand_in_reason)
    env.filters.update({f.__name__: f for f in shared}, size=human_size)  # a filter has its function's name
    env.globals.update(nav=NAV, axis_questions=AXIS_QUESTIONS, findings=findings, no_composite=NO_COMPOSITE)
    return env


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


MINUS = "\u2212"
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def decimals(value: float, digits: int = 3) -> int:
    """Decimal places that show ``value`` with ``digits`` significant digits (0 for large numbers).

    >>> decimals(0.0199804), decimals(0.5), decimals(123.4), decimals(0.0)
    (4, 3, 0, 2)
    """
    if value == 0:
        return digits - 1
    return max(0, digits - 1 - math.floor(math.log10(abs(value))))


def num(value: Any, digits: int = 3, *, like: Any = None) -> str:
    """A number with ``digits`` significant digits (trailing zeros kept), a real minus sign, or an en
    dash when there is none. With ``like``, use the decimal places of that number instead, so a
    confidence interval lines up with its estimate. Very small or large numbers use powers of ten.

    >>> num(0.0199804), num(0.0175, like=0.0199804), num(-0.5), num(None), num(8.01642e-11), num(0.0)
    ('0.0200', '0.0175', '−0.500', '–', '8.02 × 10⁻¹¹', '0')
    """
    if not _finite(value):
        return "\u2013"
    if value == 0 and like is None:
        return "0"
    ref = like if _finite(like) else value
    if ref != 0 and not 1e-4 <= abs(ref) < 1e6:
        if value == 0:
            return "0"
        mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
        return f"{mantissa} \u00d7 10{str(int(exponent)).translate(_SUPERSCRIPT)}".replace("-", MINUS)
    return f"{value:.{decimals(ref, digits)}f}".replace("-", MINUS)


def signed(value: Any, digits: int = 3, *, like: Any = None) -> str:
    """Like :func:`num`, with an explicit sign (for deltas and differences).

    >>> signed(0.5), signed(-2.0), signed(None), signed(0.012, like=-0.059)
    ('+0.500', '−2.00', '–', '+0.0120')
    """
    if _finite(value) and value == 0:
        return "0"
    return ("+" if _finite(value) and value > 0 else "") + num(value, digits, like=like)


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


def root_of(path: str) -> str:
    """The relative prefix from a page back to the site root.

    >>> root_of("index.html"), root_of("items/trivia_qa/3.html")
    ('', '../../')
    """
    return "../" * path.count("/")


# Control and format characters (Unicode Cc, Cf) never reach a page as themselves: a bidi control
# (U+202E, U+200F, U+061C) can make a name read in another order than it is stored (a slug that displays
# as someone else's), an invisible one (U+200B, U+2060) makes two names look alike. Each is shown as a
# visible escape (``\u200f``). Newline and tab stay: a page lays them out as white space (line breaks
# in the prompt and response blocks, the BibTeX), they cannot hide or reorder anything, and escaping them
# would mangle every multi-line response.
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t]")
"""a character that may be a control or format character (everything outside printable ASCII): the
scan runs at C speed and only these are looked up."""


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    return visible(char) if unicodedata.category(char) in ("Cc", "Cf", "Cs") else char


def neutral_text(value: Any) -> Any:
    r"""Every ``{{ }}`` output goes through here (escaping happens after): control and format characters
    become visible escapes, in plain text and in ``Markup`` alike (the escapes are plain ASCII).

    >>> neutral_text("evil\u202egnp.exe\u200b"), neutral_text("a\nb\x1b"), neutral_text(3)
    ('evil\\u202egnp.exe\\u200b', 'a\nb\\x1b', 3)
    """
    if isinstance(value, Markup):
        return Markup(_SUSPECT.sub(_shown, str(value)))
    return _SUSPECT.sub(_shown, value) if isinstance(value, str) else value
