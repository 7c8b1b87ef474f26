"""The report's one table renderer: every table of every section goes through it.

Values are written for people (:func:`commscope.units.human_value`, docs/conventions.md):
by the unit suffix of the column, ``1.2 us``, ``4 KiB``, ``3.4 GB/s``, other numbers with
three significant digits, never e-notation, a share of 1 in per cent; the header is the
column's name in words without its unit suffix (:func:`commscope.units.header_words`), the
stored name its tooltip. A missing value (None, NaN, empty text, ``-``)
is printed as ``-``, and a column missing in every row is left out: an empty column
says nothing and only widens the table. Text columns are left-aligned; a table
wider than the page scrolls (the stylesheet), it never overflows.
"""

import html
import math

from ..output import MISSING
from ..units import header_words, human_value


def is_missing(value):
    """None, NaN or infinity (float, numpy, pandas NA), blank text or the text ``-``.

    Infinity (an unbounded rate) is printed ``-`` like every undefined number, so a
    column of nothing else is left out too."""
    if value is None or (isinstance(value, str) and value.strip() in ("", MISSING)):
        return True
    if isinstance(value, float) and math.isinf(value):
        return True
    try:
        return bool(value != value)  # NaN is the one value unequal to itself
    except TypeError:  # pandas.NA refuses to be a bool: it is missing
        return True
    except ValueError:  # an array: a value
        return False


def html_table(rows, columns=None, caption=None, folded=None):
    """HTML for ``rows`` (a DataFrame or dicts), in ``columns`` order (default: all).

    ``caption`` titles the table; ``folded`` is the one-line summary of a <details>
    the table is folded into.
    """
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        columns = list(columns if columns is not None else rows.columns)
        rows = rows.to_dict("records")
    rows = list(rows)
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    if not rows:
        return f'<p class="note">{html.escape(caption or "table")}: no rows.</p>'
    present = {c: [r.get(c) for r in rows if not is_missing(r.get(c))] for c in columns}
    columns = [c for c in columns if present[c]]
    if not columns:
        return f'<p class="note">{html.escape(caption or "table")}: no values.</p>'
    text = {c for c in columns if all(isinstance(v, str) for v in present[c])}

    def cell(tag, c, content, title=None):
        cls = ' class="l"' if c in text else ""
        if title and title != content:
            cls += f' title="{html.escape(title)}"'
        body = html.escape(content)
        return f"<{tag}{cls}>{body}</{tag}>"

    out = ["<table>"]
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append("<tr>" + "".join(cell("th", c, header_words(c), str(c)) for c in columns) + "</tr>")
    for r in rows:
        out.append(
            "<tr>"
            + "".join(
                cell("td", c, MISSING if is_missing(r.get(c)) else human_value(str(c), r.get(c))[1])
                for c in columns
            )
            + "</tr>"
        )
    out.append("</table>")
    table = "".join(out)
    if folded:
        return f"<details><summary>{html.escape(folded)}</summary>{table}</details>"
    return table
