"""Column names copied onto every table cell, so a table can become labelled rows on a phone.

On a narrow screen the stylesheet shows each table row as a block and each cell as a line that starts
with its column's name (``td[data-label]::before``). Rather than repeat every header in every template,
each rendered page passes through :func:`label_cells`, which gives each body cell without a
``data-label`` the text of its column's header. The first cell of a row names the row and gets none.

The HTML is this package's own template output: every string from a submission or a dataset is
escaped before it gets here, so a ``<td`` or ``<th`` in the text below is always a tag.
"""

from __future__ import annotations

import html
import re

_TABLE = re.compile(r"(<table\b[^>]*>)(.*?)(</table>)", re.DOTALL)
_HEAD = re.compile(r"<thead>(.*?)</thead>", re.DOTALL)
_BODY = re.compile(r"(<tbody>)(.*?)(</tbody>)", re.DOTALL)
_HEAD_CELL = re.compile(r"<th(?=[\s>])[^>]*>(.*?)</th>", re.DOTALL)
_ROW = re.compile(r"(<tr\b[^>]*>)(.*?)(</tr>)", re.DOTALL)
_CELL_TAG = re.compile(r"<(td|th)(?=[\s>])([^>]*)>")
_UNIT = re.compile(r'<span class="unit">.*?</span>', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def header_text(cell: str) -> str:
    """The visible words of a header cell, without its unit line.

    >>> header_text('<span title="x">Wording</span><span class="unit">lower = steadier</span>')
    'Wording'
    """
    text = html.unescape(_TAG.sub(" ", _UNIT.sub("", cell)))
    return " ".join(text.split())


def _label_row(row: str, labels: list[str]) -> str:
    index = -1

    def add(tag: re.Match[str]) -> str:
        nonlocal index
        index += 1
        attrs = tag.group(2)
        label = labels[index] if index < len(labels) else ""
        if index == 0 or not label or "data-label=" in attrs or "row-head" in attrs:
            return tag.group(0)
        return f'<{tag.group(1)} data-label="{html.escape(label)}"{attrs}>'

    return _CELL_TAG.sub(add, row)


def _label_table(table: re.Match[str]) -> str:
    opening, inner, closing = table.groups()
    head = _HEAD.search(inner)
    if head is None:
        return table.group(0)
    rows = _ROW.findall(head.group(1))
    labels = [header_text(c) for c in _HEAD_CELL.findall(rows[-1][1])] if rows else []

    def body(part: re.Match[str]) -> str:
        start, rows_html, end = part.groups()
        labelled = _ROW.sub(lambda r: r.group(1) + _label_row(r.group(2), labels) + r.group(3), rows_html)
        return start + labelled + end

    return opening + _BODY.sub(body, inner) + closing


def label_cells(page: str) -> str:
    """``page`` with a ``data-label`` (its column's header) on every body cell that lacks one.

    >>> label_cells('<table><thead><tr><th>model</th><th>size<span class="unit">params</span></th></tr>'
    ...             '</thead><tbody><tr><td>A</td><td>1M</td></tr></tbody></table>')
    '<table><thead><tr><th>model</th><th>size<span class="unit">params</span></th></tr></thead><tbody><tr>\
<td>A</td><td data-label="size">1M</td></tr></tbody></table>'
    """
    return _TABLE.sub(_label_table, page)
