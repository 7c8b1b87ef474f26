"""Before and after (`commscope compare ... -o report.html`): the verdict on the run
time, a figure of the largest changes with their 95 % intervals, and every level's
changes ranked by size.

A comparison is not a kind of run: this section is rendered from the report context's
``"comparison"`` (:func:`commscope.report.build.build_comparison_report`), never for
runs by kind (``KINDS`` is empty).
"""

import html

from ...compare import noise
from ...compare.core import KEY_FIELD, records, suffix_of
from ...compare.gate import describe
from ...compare.text import ORDER as LEVELS, TITLES, table_rows
from ..figures import figure_html, new_figure
from ..tables import html_table

KINDS = frozenset()
TITLE = "Before and after"
ORDER = 2  # (never among a report's run sections: KINDS is empty)
#: The bars of the figure: the largest changes in seconds over every level.
MAX_BARS = 12


def render(runs, context):
    c = context.get("comparison")
    return render_comparison(c) if c else ""


def _level_rows(c, level):
    """The level's table in the report's units: a counter's values keep their own name."""
    rows = table_rows(c, level, changed_only=True)
    suffix = suffix_of(c, level)
    if suffix == "_value":
        for r in rows:
            for k in [k for k in r if k.endswith("_value")]:
                r[k[: -len("_value")]] = r.pop(k)
    return rows


def render_comparison(c):
    e = html.escape
    parts = ['<div class="answer">']
    rt = c.get("runtime") or {}
    if rt.get("before_s") is not None:
        pct = noise.relative_pct(rt)
        word = (
            "faster"
            if rt["difference_s"] < 0
            else "slower"
            if rt["difference_s"] > 0
            else "unchanged"
        )
        parts.append(
            f'<p class="headline">Run time: {e(describe(rt, "_s"))}: '
            f"{e(word)}"
            + (f" by {abs(pct):.1f} %" if pct and word != "unchanged" else "")
            + ".</p>"
        )
    sides = []
    for side in ("before", "after"):
        d = c[side]
        sides.append(
            f"<b>{side}</b>: {len(d.get('runs', []))} run(s) of "
            f"{e(str(d.get('program') or d.get('kind')))}"
            + (f", {d['ranks']} ranks" if d.get("ranks") is not None else "")
            + (f", {e(d['mpi'])}" if d.get("mpi") else "")
        )
    parts.append("<p>" + "; ".join(sides) + ".</p>")
    parts.append(f'<p class="note">Noise: {e(c["noise"]["method"])}.</p></div>')
    if c.get("differs"):
        parts.append(
            html_table(
                [
                    {"differs": d["what"], "before": d["before"], "after": d["after"]}
                    for d in c["differs"]
                ],
                caption="the two sides differ: compared on what they share",
            )
        )
    gate = c.get("gate")
    if gate:
        rows = [
            {
                "rule": r["rule"],
                "verdict": "FAILED" if r["failed"] else "passed",
                "figures": "; ".join(
                    f.get("line", f["figure"]) for f in r["figures"] if f["failed"]
                )
                or "-",
            }
            for r in gate["rules"]
        ]
        parts.append(html_table(rows, caption="CI gate (--fail-if)"))
    parts.append(_figure(c))
    for level in LEVELS:
        if level not in c or isinstance(c[level], dict):
            continue
        rows = _level_rows(c, level)
        if rows:
            parts.append(
                html_table(rows, caption=f"{TITLES[level]}, ranked by the size of the change")
            )
        elif records(c, level):
            parts.append(f'<p class="note">{e(TITLES[level])}: no change.</p>')
    for level, why in c.get("not_compared", {}).items():
        parts.append(f'<p class="note">Not compared: {e(TITLES.get(level, level))}: {e(why)}.</p>')
    for n in c.get("notes", []):
        parts.append(f'<p class="note">{e(n[0].upper() + n[1:])}.</p>')
    return "\n".join(p for p in parts if p)


def _figure(c):
    """The largest changes in seconds, with their 95 % interval where repeats give one."""
    bars = []
    for level in ("runtime", "mpi_time", *LEVELS):
        if level not in c or suffix_of(c, level) != "_s":
            continue
        field = KEY_FIELD.get(level)
        for r in records(c, level):
            d = r.get("difference_s")
            if d is None or d == 0:
                continue
            label = (
                TITLES[level]
                if field is None
                else f"{level[:-1] if level.endswith('s') else level} {r[field]}"
            )
            bars.append((label, d, r.get("ci95_s")))
    if not bars:
        return ""
    bars.sort(key=lambda b: -abs(b[1]))
    bars = bars[:MAX_BARS][::-1]
    fig, axes = new_figure(width=7.5, height=0.35 * len(bars) + 1.2)
    ax = axes[0][0]
    y = list(range(len(bars)))
    colors = ["tab:green" if d < 0 else "tab:red" for _, d, _ in bars]
    ax.barh(y, [d for _, d, _ in bars], color=colors)
    for yi, (_, d, ci) in zip(y, bars):
        if ci and ci[0] is not None:
            ax.plot(ci, [yi, yi], color="black", linewidth=1)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([(b[0] if len(b[0]) <= 40 else b[0][:37] + "...") for b in bars], fontsize=8)
    ax.set_xlabel("after - before (s)")
    fig.tight_layout()
    return figure_html(
        fig,
        "the largest changes, after - before (green: faster); black: "
        "the 95 % interval where repeats give one",
    )
