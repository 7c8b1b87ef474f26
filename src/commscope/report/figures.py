"""Turning matplotlib figures into inline HTML: SVG (zoomable, searchable text) or PNG."""

import base64
import html
import io
import os

from ..lazy import lazy

plt = lazy("matplotlib.pyplot")  # importing matplotlib costs a second: only when drawing


os.environ.setdefault("MPLBACKEND", "Agg")  # no display: reports are written on headless nodes

#: Inline SVG when it is at most this many times the size of the base64 PNG; figures
#: with thousands of points or an image (heatmaps) stay PNG.
SVG_MAX_RATIO = 1.5

LOCALITY_COLORS = {"intra-socket": "tab:blue", "cross-socket": "tab:orange",
                   "inter-node": "tab:green"}


def new_figure(ncols=1, nrows=1, width=6.4, height=4.2, **kw):
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


def figure_html(fig, alt, dpi=110):
    """Close ``fig``; inline SVG (text kept as text) unless much larger than the PNG."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi, bbox_inches="tight")
    data = base64.b64encode(png.getvalue()).decode("ascii")
    svg = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # labels stay searchable text
        fig.savefig(svg, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = svg.getvalue()
    alt = html.escape(alt)
    if len(text) <= SVG_MAX_RATIO * len(data):
        body = text[text.index("<svg"):]  # drop the XML prologue and doctype
        return f'<figure class="fig" role="img" aria-label="{alt}">{body}</figure>'
    return f'<img alt="{alt}" src="data:image/png;base64,{data}">'
