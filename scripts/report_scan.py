#!/usr/bin/env python3
"""Is every number of a report written for a person? A scan of the HTML (issue 38).

Reads a report written by ``commscope report`` (or ``compare``) and counts, in every table
cell, table header, caption, sentence and figure label (inline SVG text; a PNG figure's
labels from its ``data-texts``):

- ``bare sizes``: a whole number of 5 or more digits that is a size, written in bytes
  without a unit (``2097152``, ``25,200`` in a bytes column, ``at 4194304 B``): sizes read
  ``2 MiB``. A size is a number in a column or after a word about sizes or bytes, one
  followed by ``B``/``bytes``, a multiple of 1,024, or an end of a range ``a..b``.
- ``share fractions``: a share written as a fraction (``laggard_share 0.0192``,
  ``median_error -0.168`` in a share, error or fraction column): shares read ``1.9 %``.
- ``field-name headers``: a table header or a figure label that is a stored name
  (``ratio_median``, ``bytes_per_iteration``): headers are words with units.
- ``small fonts``: figure text smaller than ``MIN_FONT_PT`` at the figure's own size
  (``commscope.report.figures.MIN_FONT_PT``); the browser check measures it as drawn.
- ``overlapping labels``: pairs of figure texts whose boxes overlap, as matplotlib laid
  them out (``data-overlaps``, written by ``figures.figure_html``); the browser check
  measures the SVG ones as drawn.
- ``points outside axes``: plotted points beyond a panel's limits (``data-outside``).

Prints the counts and each finding; exits 1 on any finding.

    .venv/bin/python scripts/report_scan.py report.html [more.html] [--json] [--quiet]
"""

import argparse
import html
import json
import re
import sys
from html.parser import HTMLParser

#: Figure text smaller than this (points at the figure's own size) is too small: the
#: report's own minimum (commscope.report.figures.MIN_FONT_PT).
try:
    from commscope.report.figures import MIN_FONT_PT
except ImportError:  # commscope not installed: the same number
    MIN_FONT_PT = 9.0

_INT = r"(?<![\d.,\w])(?:\d{1,3}(?:,\d{3})+|\d{5,})(?![\d\w]|[.,]\d)"
INT = re.compile(_INT)
FRACTION = re.compile(r"(?<![\d.\w])[-\u2212]?0\.\d+(?![\d\w]|\s*%)")
SIZE_WORDS = re.compile(r"(size|bytes|byte|eager|rendezvous|buffer|halo|message|msg)s?\b", re.I)
SHARE_WORDS = re.compile(
    r"(?<![a-z])(shares?|fractions?|error|err|efficiency|idle|prob|"
    r"probability|pct|percent)(?![a-z])",
    re.I,
)
FIELD = re.compile(r"\b[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b")
#: Names that are not field names: MPI functions, papers' symbols, code.
FIELD_OK = re.compile(r"^(MPI_\w+|R_[NbB]\w*|ob1_\w*|OMP_\w+|osu_\w+|btl_\w+|[A-Z]_[A-Za-z])$")


def _is_size(text, m, context):
    """Whether the number matched by ``m`` in ``text`` is a size (``context``: its column
    header or the figure axis it labels)."""
    value = int(m.group().replace(",", ""))
    after = text[m.end() : m.end() + 8]
    before = text[max(0, m.start() - 24) : m.start()]
    if re.match(r"\s*(B|bytes?|KiB|MiB)\b", after):
        return True
    if re.match(r"\s*\.\.", after) or before.rstrip().endswith(".."):
        return True
    if value % 1024 == 0 and value >= 1 << 14:
        return True
    if re.search(r"(<=|\u2264|>=|\u2265|size|sizes|bytes)\s*$", before, re.I):
        return True
    return bool(context and re.search(r"size|bytes", context, re.I))


#: HTML elements without an end tag.
VOID = {"br", "wbr", "img", "meta", "input", "hr", "link", "source", "col", "area", "base"}


class _Report(HTMLParser):
    """Collects (where, text, context) of every piece of text a person reads."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.items = []  # (kind, text, context)
        self.figures = []  # attributes of figure elements (data-texts, data-overlaps)
        self.stack = []
        self.headers = []  # the current table's header row
        self.row = []  # cells of the current row: (tag, text)
        self.cell = None
        self.svg_text = None
        self.svg_font = None
        self.skip = 0  # inside <pre>, <code>, <script>, <style>
        self.section = ""
        self.text = []  # prose of the current block

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("pre", "code", "script", "style"):
            self.skip += 1
        if tag == "section":
            self.section = a.get("id", "")
        if tag == "table":
            self.headers = []
        if tag == "tr":
            self.row = []
        if tag in ("td", "th"):
            self.cell = [tag, []]
        if tag in ("svg", "img") and ("data-texts" in a or "data-overlaps" in a):
            self.figures.append((self.section, a))
        if tag == "text" and self._in("svg"):
            self.svg_text = []
            self.svg_font = _font_size(a.get("style", ""))
        if tag in ("p", "li", "caption", "summary", "h2", "h3", "h4", "div"):
            self._flush()
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):  # <path .../>: nothing to close
        if tag == "img":
            self.handle_starttag(tag, attrs)

    def _in(self, tag):
        return tag in self.stack

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag in ("pre", "code", "script", "style"):
            self.skip = max(0, self.skip - 1)
        if tag in ("td", "th") and self.cell:
            kind, parts = self.cell
            self.row.append((kind, " ".join("".join(parts).split())))
            self.cell = None
        if tag == "tr":
            self._row_done()
        if tag == "text" and self.svg_text is not None:
            t = "".join(self.svg_text).strip()
            if t:
                self.items.append(("figure", t, "", self.section, self.svg_font))
            self.svg_text = None
        if tag in ("p", "li", "caption", "summary", "h2", "h3", "h4", "div"):
            self._flush(tag)
        while self.stack:
            if self.stack.pop() == tag:
                break

    def _row_done(self):
        cells = self.row
        if cells and all(k == "th" for k, _ in cells):
            self.headers = [t for _, t in cells]
            for _, t in cells:
                self.items.append(("header", t, "", self.section, None))
            return
        for i, (kind, t) in enumerate(cells):
            if kind == "th":  # a row label (the runs' tables)
                continue
            head = (
                self.headers[i]
                if i < len(self.headers)
                else (cells[0][1] if cells and cells[0][0] == "th" else "")
            )
            self.items.append(("cell", t, head, self.section, None))

    def _flush(self, tag=None):
        t = " ".join("".join(self.text).split())
        if t:
            self.items.append(("text", t, tag or "", self.section, None))
        self.text = []

    def handle_data(self, data):
        if self.skip:
            return
        if self.svg_text is not None:
            self.svg_text.append(data)
        elif self.cell is not None:
            self.cell[1].append(data)
        elif not self._in("svg"):
            self.text.append(data)


def _font_size(style):
    """The size of an SVG text of matplotlib: its user units are points."""
    m = re.search(r"font-size:\s*([\d.]+)px", style) or re.search(r"font:[^;]*?([\d.]+)px", style)
    return float(m.group(1)) if m else None


def scan(page):
    """``{category: [finding, ...]}`` of one report's HTML text."""
    p = _Report()
    p.feed(page)
    p._flush()
    found = {
        "bare sizes": [],
        "share fractions": [],
        "field-name headers": [],
        "small fonts": [],
        "overlapping labels": [],
        "points outside axes": [],
    }
    items = list(p.items)
    for section, a in p.figures:
        for t in json.loads(a.get("data-texts") or "[]"):
            items.append(("figure", t["text"], "", section, t.get("pt")))
        for pair in json.loads(a.get("data-overlaps") or "[]"):
            found["overlapping labels"].append(f"{section}: {pair[0]!r} overlaps {pair[1]!r}")
        for panel, n in json.loads(a.get("data-outside") or "[]"):
            found["points outside axes"].append(
                f"{section}: {n} point(s) beyond the axes of {panel!r}"
            )
    seen_fig = set()
    for kind, text, context, section, size in items:
        where = f"{section}: {kind}"
        for m in INT.finditer(text):
            near = context if kind == "cell" else text[max(0, m.start() - 40) : m.start()]
            if _is_size(
                text,
                m,
                near if kind == "cell" else (context if SIZE_WORDS.search(near or "") else None),
            ):
                found["bare sizes"].append(
                    f"{where}: {_clip(text, m)}"
                    + (f" (column {context!r})" if kind == "cell" else "")
                )
        for m in FRACTION.finditer(text):
            before = text[max(0, m.start() - 30) : m.start()]
            if (kind == "cell" and SHARE_WORDS.search(context)) or (
                kind != "cell" and re.search(SHARE_WORDS.pattern + r"\w*\s*[:=]?\s*$", before, re.I)
            ):
                found["share fractions"].append(
                    f"{where}: {_clip(text, m)}"
                    + (f" (column {context!r})" if kind == "cell" else "")
                )
        if kind == "header" or kind == "figure":
            names = [n for n in FIELD.findall(text) if not FIELD_OK.match(n)]
            if names:
                found["field-name headers"].append(f"{where}: {text!r}")
        if kind == "figure" and size is not None and size < MIN_FONT_PT - 1e-6:
            key = (section, text, size)
            if key not in seen_fig:
                seen_fig.add(key)
                found["small fonts"].append(f"{section}: {text!r} at {size:.1f} pt")
    return found


def _clip(text, m, reach=40):
    a, b = max(0, m.start() - reach), min(len(text), m.end() + reach)
    return ("..." if a else "") + text[a:b] + ("..." if b < len(text) else "")


def counts(found):
    return {k: len(v) for k, v in found.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--json", action="store_true", help="print the findings as JSON")
    ap.add_argument("--quiet", action="store_true", help="counts only")
    args = ap.parse_args(argv)
    bad = 0
    out = {}
    for path in args.reports:
        with open(path, encoding="utf-8") as fh:
            found = scan(fh.read())
        out[path] = found
        bad += sum(map(len, found.values()))
        if not args.json:
            print(f"{path}: " + ", ".join(f"{k} {n}" for k, n in counts(found).items()))
            if not args.quiet:
                for k, v in found.items():
                    for f in v:
                        print(f"  {k}: {html.unescape(f)}")
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
