"""Turning matplotlib figures into inline HTML (PNG, base64)."""

import base64
import io
import os

from ..lazy import lazy

plt = lazy("matplotlib.pyplot")  # importing matplotlib costs a second: only when drawing


os.environ.setdefault("MPLBACKEND", "Agg")  # no display: reports are written on headless nodes

LOCALITY_COLORS = {"intra-socket": "tab:blue", "cross-socket": "tab:orange",
                   "inter-node": "tab:green"}


def new_figure(ncols=1, nrows=1, width=6.4, height=4.2, **kw):
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


def figure_html(fig, alt, dpi=110):
    """Close ``fig`` and return an <img> tag with the PNG inline."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{alt}" src="data:image/png;base64,{data}">'
