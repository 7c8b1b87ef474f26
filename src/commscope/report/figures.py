"""Turning matplotlib figures into inline HTML: SVG (zoomable, searchable text) or PNG."""

import base64
import html
import io
import json
import os
import re

from ..lazy import lazy
from ..units import format_bytes, format_number, format_rate, format_seconds

np = lazy("numpy")
plt = lazy("matplotlib.pyplot")  # importing matplotlib costs a second: only when drawing


os.environ.setdefault("MPLBACKEND", "Agg")  # no display: reports are written on headless nodes

#: Inline SVG when it is at most this many times the size of the base64 PNG; figures
#: with thousands of points or an image (heatmaps) stay PNG.
SVG_MAX_RATIO = 1.5

LOCALITY_COLORS = {
    "intra-socket": "tab:blue",
    "cross-socket": "tab:orange",
    "inter-node": "tab:green",
}


def new_figure(ncols=1, nrows=1, width=6.4, height=4.2, wspace=0.3, **kw):
    """A figure of ``ncols`` x ``nrows`` panels, each ``width`` x ``height`` inches.

    Panels side by side are ``wspace`` of a panel apart (matplotlib: 0.2): a y label
    beside tick labels such as ``100 us`` does not touch the panel to its left. None:
    matplotlib's (a figure laid out by tight_layout).
    """
    if ncols > 1 and wspace is not None:
        kw["gridspec_kw"] = {"wspace": wspace, **kw.get("gridspec_kw", {})}
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


#: An axis labelled with one of these units gets tick labels in human units, and the
#: unit leaves its label: "time (s)" ticks ``10 us``, ``1 ms``; "size (bytes)" ``4 KiB``;
#: "bandwidth (MB/s)" ``1 GB/s``; "rate (msgs/s)" ``1.2 M msgs/s``.
AXIS_UNITS = {
    " (s)": format_seconds,
    " (bytes)": format_bytes,
    " (MB/s)": lambda v: format_rate(v * 1e6, "B/s"),
    " (msgs/s)": lambda v: format_rate(v, "msgs/s"),
}


#: An axis whose label ends with one of these words counts whole things: no tick at 2.5.
WHOLE_LABELS = ("iteration", "iterations", "rank", "ranks", "threads", "node", "interval")


def _human_formatter(default, write):
    """A tick formatter that labels the ticks ``default`` labels, with ``write(x,
    default's text)``: matplotlib still chooses which ticks (log minor ticks only on a
    short range); no offset or ``1e-6`` is ever drawn."""
    from matplotlib import ticker

    class Human(ticker.Formatter):
        def set_axis(self, axis):
            super().set_axis(axis)
            default.set_axis(axis)

        def set_locs(self, locs):
            default.set_locs(locs)

        def __call__(self, x, pos=None):
            text = default(x, pos)
            return write(x, text) if text else ""

    return Human()


def _log_formatter(default):
    """Log-axis ticks as plain numbers (``4``, ``0.5``, ``2,000``) where that is short,
    ``10^k`` (matplotlib's) beyond: never ``4×10^0``."""
    return _human_formatter(
        default, lambda x, text: format_number(x) if 1e-3 <= abs(x) < 1e5 else text
    )


def _binary_locator(most=7):
    """Ticks at powers of two, every 2nd, 4th, ... so at most ``most`` are labelled:
    sizes read ``1 B``, ``16 B``, ``256 B``, ``4 KiB``, not ``9.77 KiB``."""
    from matplotlib import ticker

    class Binary(ticker.Locator):
        def __call__(self):
            lo, hi = sorted(self.axis.get_view_interval())
            return self.tick_values(lo, hi)

        def tick_values(self, vmin, vmax):
            vmin = max(vmin, 1e-3)
            a, b = int(np.floor(np.log2(vmin))), int(np.ceil(np.log2(max(vmax, vmin))))
            step = next(
                s for s in (1, 2, 4, 8, 10, 16, 20, 32) if (b - a) // s + 1 <= most or s == 32
            )
            return [2.0**e for e in range(a - a % step, b + 1, step)]

    return Binary()


def _kib_locator():
    """Linear ticks at round numbers of the binary unit the range is in: 0, 5 KiB,
    10 KiB, not 0, 2.44 KiB, 4.88 KiB."""
    from matplotlib import ticker

    class Kib(ticker.Locator):
        def __call__(self):
            lo, hi = sorted(self.axis.get_view_interval())
            return self.tick_values(lo, hi)

        def tick_values(self, vmin, vmax):
            top = max(abs(vmin), abs(vmax))
            scale = next((s for s in (1 << 40, 1 << 30, 1 << 20, 1 << 10) if top >= s), 1)
            inner = ticker.MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10])
            return [v * scale for v in inner.tick_values(vmin / scale, vmax / scale)]

    return Kib()


def human_axes(fig):
    """Tick labels in human units on every axis labelled "... (s)" or "... (bytes)"
    (colour bars included); other linear axes get plain numbers (``1,500,000``), never
    an offset or ``1e6`` above the axis; axes of whole things (WHOLE_LABELS) whole ticks."""
    from matplotlib import ticker

    for ax in fig.axes:
        for axis, label, set_label in (
            (ax.xaxis, ax.get_xlabel(), ax.set_xlabel),
            (ax.yaxis, ax.get_ylabel(), ax.set_ylabel),
        ):
            unit = next((u for u in AXIS_UNITS if label.endswith(u)), None)
            if unit is None:
                if label.split(" ")[-1] in WHOLE_LABELS and isinstance(
                    axis.get_major_locator(), ticker.AutoLocator
                ):
                    axis.set_major_locator(ticker.MaxNLocator(integer=True))
                if isinstance(axis.get_major_formatter(), ticker.ScalarFormatter):
                    axis.set_major_formatter(
                        _human_formatter(
                            axis.get_major_formatter(), lambda v, _: format_number(v, 6)
                        )
                    )
                elif isinstance(axis.get_major_formatter(), ticker.LogFormatter):
                    for get, put in (
                        (axis.get_major_formatter, axis.set_major_formatter),
                        (axis.get_minor_formatter, axis.set_minor_formatter),
                    ):
                        put(_log_formatter(get()))
                continue
            write = AXIS_UNITS[unit]
            if unit == " (bytes)" and axis.get_scale() == "log":
                axis.set_major_locator(_binary_locator())
                axis.set_minor_locator(ticker.NullLocator())
                axis.set_major_formatter(ticker.FuncFormatter(lambda x, _: format_bytes(x)))
                set_label(label[: -len(unit)])
                continue
            if unit == " (bytes)" and axis.get_scale() == "linear":
                axis.set_major_locator(_kib_locator())
            elif axis is ax.xaxis and isinstance(axis.get_major_locator(), ticker.AutoLocator):
                axis.set_major_locator(ticker.MaxNLocator(nbins=5))  # "100 ms" is wide
            for get, put in (
                (axis.get_major_formatter, axis.set_major_formatter),
                (axis.get_minor_formatter, axis.set_minor_formatter),
            ):
                put(_human_formatter(get(), lambda v, _, write=write: write(v)))
            set_label(label[: -len(unit)])


#: No text of a report figure is smaller than this (points at the figure's own size):
#: tick labels, legends, colour bars and values written on a plot. A figure shrunk to a
#: 1024 px window is drawn at about 0.75 of its size, so this stays about 9 px there.
MIN_FONT_PT = 9.0
#: Labels stacked at one place are this far apart: a line of MIN_FONT_PT text and its gap.
STACK_PT = 1.3 * MIN_FONT_PT
#: A figure grows with the window up to this many times its own size (beyond, a single
#: panel fills a screen and says no more).
MAX_GROW = 1.25


def _texts(fig, drawn_only=False):
    """Every visible, non-empty text of ``fig`` (titles, labels, ticks, legends, notes).

    ``drawn_only``: of the tick labels only those matplotlib draws (ticks inside the
    axis's view; the others exist, positioned beyond it)."""
    ticks, drawn = set(), set()
    if drawn_only:
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                for tick in axis.majorTicks + axis.minorTicks:
                    ticks.update((id(tick.label1), id(tick.label2)))
                if not ax.axison or not ax.get_visible():
                    continue
                for tick in axis._update_ticks():  # the ticks matplotlib draws
                    drawn.update(
                        id(lab)
                        for lab, on in (
                            (tick.label1, tick.label1.get_visible()),
                            (tick.label2, tick.label2.get_visible()),
                        )
                        if on
                    )
    seen, out = set(), []
    for t in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_fontsize")):
        if id(t) in seen or not t.get_visible() or not str(t.get_text()).strip():
            continue
        if id(t) in ticks and id(t) not in drawn:
            continue
        seen.add(id(t))
        out.append(t)
    return out


def enforce_min_font(fig, minimum=MIN_FONT_PT):
    """Raise every text of ``fig`` smaller than ``minimum`` points to it."""
    for t in _texts(fig):
        if t.get_fontsize() < minimum:
            t.set_fontsize(minimum)


def figure_checks(fig):
    """What a person could not read in ``fig``, as laid out for saving.

    ``{"small": [(text, pt)], "overlaps": [(text, text)], "outside": [(what, n)]}``:
    texts below :data:`MIN_FONT_PT`; pairs of texts whose boxes overlap (shrunk by a pixel,
    so touching is not overlapping); per axes, plotted data points outside its limits.
    """
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    shown = []
    for t in _texts(fig, drawn_only=True):
        try:
            box = t.get_window_extent(renderer)
        except (RuntimeError, ValueError):
            continue
        if (
            box.width < 1
            or box.height < 1
            or not np.isfinite([box.x0, box.y0, box.x1, box.y1]).all()
        ):
            continue
        shown.append((t, box.expanded(1, 1).padded(-1)))
    small = [
        (t.get_text(), float(t.get_fontsize()))
        for t, _ in shown
        if t.get_fontsize() < MIN_FONT_PT - 1e-6
    ]
    overlaps = []
    for i, (a, ba) in enumerate(shown):
        for b, bb in shown[i + 1 :]:
            same = a.get_text() == b.get_text() and all(
                abs(u - v) < 1.5 for u, v in zip(ba.extents, bb.extents)
            )  # twin axes' ticks
            if ba.overlaps(bb) and not same:
                overlaps.append((a.get_text(), b.get_text()))
    outside = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.has_data():
            continue
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        n = 0
        for line in ax.get_lines():
            if line.get_transform() != ax.transData or not line.get_visible():
                continue
            x, y = (np.asarray(v, float) for v in line.get_data())
            ok = np.isfinite(x) & np.isfinite(y)
            rx = (x[ok] >= x0 - 1e-9 * abs(x1 - x0)) & (x[ok] <= x1 + 1e-9 * abs(x1 - x0))
            ry = (y[ok] >= y0 - 1e-9 * abs(y1 - y0)) & (y[ok] <= y1 + 1e-9 * abs(y1 - y0))
            n += int((~(rx & ry)).sum())
        if n:
            outside.append((ax.get_title() or ax.get_ylabel() or "a panel", n))
    return {"small": small, "overlaps": overlaps, "outside": outside}


def empty_panel(ax, sentence):
    """A panel with nothing to show says so in one sentence instead of empty axes."""
    ax.clear()
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        sentence,
        ha="center",
        va="center",
        wrap=True,
        transform=ax.transAxes,
        fontsize=10,
        color="0.3",
    )


def figure_html(fig, alt, dpi=110):
    """Close ``fig``; inline SVG (text kept as text) unless much larger than the PNG.

    Axes in seconds or bytes get tick labels in human units first (:func:`human_axes`);
    no text is smaller than :data:`MIN_FONT_PT`. The figure grows with the page up to
    :data:`MAX_GROW` times its own size. What :func:`figure_checks` finds is written on the
    element (``data-overlaps``, ``data-outside``; a PNG's texts in ``data-texts``), for
    scripts/report_scan.py.
    """
    human_axes(fig)
    enforce_min_font(fig)
    found = figure_checks(fig)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi, bbox_inches="tight")
    data = base64.b64encode(png.getvalue()).decode("ascii")
    svg = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # labels stay searchable text
        fig.savefig(svg, format="svg", bbox_inches="tight")
    texts = [
        {"text": t.get_text(), "pt": round(float(t.get_fontsize()), 1)}
        for t in _texts(fig, drawn_only=True)
    ]
    plt.close(fig)
    text = svg.getvalue()
    alt = html.escape(alt)
    attrs = "".join(
        f" data-{k}='{html.escape(json.dumps(v), quote=True)}'"
        for k, v in (("overlaps", found["overlaps"]), ("outside", found["outside"]))
        if v
    )
    if len(text) <= SVG_MAX_RATIO * len(data):
        body = text[text.index("<svg") :]  # drop the XML prologue and doctype
        m = re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', body)
        grow = f' style="max-width: {MAX_GROW * float(m.group(1)) * 4 / 3:.0f}px"' if m else ""
        body = "<svg" + grow + attrs + body[len("<svg") :]
        return f'<figure class="fig" role="img" aria-label="{alt}">{body}</figure>'
    width = _png_width(png.getvalue())
    grow = f' style="max-width: {MAX_GROW * width * 96 / dpi:.0f}px"' if width else ""
    attrs += f" data-texts='{html.escape(json.dumps(texts), quote=True)}' data-dpi='{dpi}'"
    return f'<img alt="{alt}"{grow}{attrs} src="data:image/png;base64,{data}">'


def _png_width(data):
    """The pixel width of a PNG (its IHDR chunk), or None."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(data[16:20], "big")


def legend_below(fig, fontsize=MIN_FONT_PT, ncol=3):
    """One legend for the whole figure, below its panels (labels shared by panels once).

    A legend inside a panel hides the points under it; no report figure puts one there.
    """
    entries = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.draw_without_rendering()  # lays out the ticks whatever the backend
        boxes = [b for b in (ax.get_tightbbox() for ax in fig.axes) if b is not None]
        bottom = min((b.y0 for b in boxes), default=0.0)  # below the lowest tick label
        y = fig.transFigure.inverted().transform((0, bottom))[1]
        fig.legend(
            list(entries.values()),
            list(entries),
            fontsize=fontsize,
            frameon=False,
            loc="upper center",
            bbox_to_anchor=(0.5, y),
            ncol=min(ncol, len(entries)),
        )


#: Label of the marks drawn at an axis edge for oversubscribed points beyond it.
OFF_SCALE_LABEL = "oversubscribed, beyond the axis (value written)"


#: An oversubscribed point this many times beyond all the others would stretch the axis.
STRETCH = 5.0


def _far(y, rest, log):
    """1 when ``y`` lies STRETCH times above every value of ``rest``, -1 below, else 0."""
    top, bottom = max(rest), min(rest)
    if log:
        return 1 if y > top * STRETCH else -1 if y < bottom / STRETCH else 0
    scale = max(top - bottom, abs(top), abs(bottom))
    if scale == 0:  # nothing else has a scale to stretch
        return 0
    reach = (STRETCH - 1) * scale
    return 1 if y > top + reach else -1 if y < bottom - reach else 0


def value_text(value, unit=""):
    """A value written on a figure for people: ``12.3 ms``, ``1.2 M msgs/s``, ``4,000 entries``."""
    if unit == "s":
        return format_seconds(value)
    if unit.endswith("/s"):
        return format_rate(value, unit)
    return f"{format_number(value)} {unit}".strip()


def hold_scale(ax, points, keep=(), unit="", margin=0.05):
    """Y limits of ``ax`` that no oversubscribed outlier stretches.

    An oversubscribed point (more threads x ranks than cores) measures time-slicing as much
    as what the figure studies. It is shown (open marker) when it lies among the others;
    one that lies more than STRETCH times beyond every other value would squash them all
    into a line, so it is drawn at the edge it passes instead, as an open triangle with
    its value written (:func:`value_text`). ``points``: (x, y, oversubscribed, color) of every measured point;
    ``keep``: y values that stay in view (error bars, model curves, thresholds); ``unit``
    follows each value written. Returns the (x, y) drawn at an edge.
    """
    from matplotlib.transforms import blended_transform_factory

    log = ax.get_yscale() == "log"
    usable = [
        (x, float(y), bool(over), color)
        for x, y, over, color in points
        if np.isfinite(y) and (y > 0 or not log)
    ]
    over = [p for p in usable if p[2]]
    inside = [float(v) for v in keep if np.isfinite(v) and (v > 0 or not log)]
    inside += [y for _, y, o, _ in usable if not o]
    if not inside:  # every point oversubscribed: judged from their middle one (with three
        ys = sorted(y for _, y, _, _ in over)  # or more; two cannot tell which is off)
        inside = [ys[(len(ys) - 1) // 2]] if len(ys) >= 3 else ys
        over = [p for p in over if p[1] not in inside]
    lo0, hi0 = (min(inside), max(inside)) if inside else (0.0, 0.0)
    gap = (
        (lambda y: abs(np.log(min(max(y, lo0), hi0) / y)))
        if log
        else (lambda y: abs(min(max(y, lo0), hi0) - y))
    )
    far = []  # nearest first: a trend of oversubscribed points is data, a jump is not
    for point in sorted(over, key=lambda p: gap(p[1])):
        if _far(point[1], inside, log):
            far.append(point)
        else:
            inside.append(point[1])
    if not inside:
        return []
    lo, hi = min(inside), max(inside)
    if log:
        pad = (hi / lo) ** margin if hi > lo else 1.5
        lo, hi = lo / pad, hi * pad
    else:
        pad = (hi - lo) * margin or abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    ax.set_ylim(lo, hi)
    ax.get_xlim()  # x limits settled: where along the axis a point is
    edge = blended_transform_factory(ax.transData, ax.transAxes)
    drawn, stacked = [], {}
    for x, y, _, color in far:
        top = y > hi
        k = stacked[(x, top)] = stacked.get((x, top), -1) + 1  # several at one x: stack labels
        ax.plot(
            [x],
            [1.0 if top else 0.0],
            "^" if top else "v",
            transform=edge,
            clip_on=False,
            color=color,
            mfc="white",
            ms=8,
            zorder=5,
            label=OFF_SCALE_LABEL,
        )
        along = ax.transAxes.inverted().transform(edge.transform((x, 0)))[0]
        ax.annotate(
            value_text(y, unit),
            (x, 1.0 if top else 0.0),
            xycoords=edge,
            textcoords="offset points",
            xytext=(0, -(10 + STACK_PT * k) if top else 10 + STACK_PT * k),
            ha="right" if along > 0.8 else "left" if along < 0.2 else "center",
            va="top" if top else "bottom",
            fontsize=MIN_FONT_PT,
            color=color,
        )
        drawn.append((x, y))
    if far:  # a line through a point drawn at the edge stops there, not beyond the axis
        gone = {(float(x), float(y)) for x, y, _, _ in far}
        for line in ax.get_lines():
            xs, ys = (np.asarray(v, float) for v in line.get_data())
            hit = np.array([(float(a), float(b)) in gone for a, b in zip(xs, ys)], bool)
            if hit.any() and len(xs) == len(ys):
                line.set_data(xs, np.where(hit, np.nan, ys))
    return drawn
