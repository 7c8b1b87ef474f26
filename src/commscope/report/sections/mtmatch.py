"""Multithreaded matching runs: search depth and queue drain time vs threads (Schonbein et al. 2018, Figs. 1-4).

Per run, two panels against threads per process (prod L_d of the decomposition):
the average search depth of an MPICH-style linked list, computed from the recorded
post and send orders, and the queue drain time; one line per stencil. The grey
region marks drain times >= 1 ms, the tightest per-timestep budget of Schonbein et al. 2018, Sec. 4.3
(the dotted line is the 100 ms end of that range). Open markers are oversubscribed
configurations (threads x ranks on a node > cores), as the paper notes in its
captions; a table lists every configuration with the ob1 queue length Open MPI
reported next to the computed depth.
"""

import html
import math

from ...bench.mtmatch import BUDGETS_S, config_summary
from ...errors import InputError
from ..figures import figure_html, hold_scale, legend_below, new_figure
from ..tables import html_table
from ...units import format_bytes
from . import more, per_run

KINDS = {"mtmatch"}
TITLE = "Multithreaded message matching (Schonbein et al. 2018)"
ORDER = 26
COLORS = {
    "5": "tab:blue",
    "9": "tab:orange",
    "7": "tab:green",
    "27": "tab:red",
    "naive": "tab:purple",
    "custom": "tab:gray",
}


def _threads(decomp, fallback):
    try:
        return math.prod(int(v) for v in str(decomp).split("x"))
    except ValueError:
        return fallback


def _render_run(run):
    trials = run.table("trials")
    if "avg_search_depth" not in trials:
        raise InputError(
            run.table_file("trials"), "avg_search_depth", "no search depths (unfinished run)"
        )
    summ = config_summary(trials)
    summ["threads"] = [_threads(d, t) for d, t in zip(summ["decomposition"], summ["threads_recv"])]
    summ["label"] = [
        f"naive k={k}" if p == "naive" else p if p == "custom" else f"{p}-point"
        for p, k in zip(
            summ["points"], trials.groupby("config")["k"].first().reindex(summ["config"]).to_numpy()
        )
    ]
    p = run.meta["parameters"]
    over = [o for o in run.meta.get("oversubscription", []) if o.get("oversubscribed")]
    fig, axes = new_figure(ncols=2, width=5.2, height=3.8)
    ax_d, ax_t = axes[0]
    points = {ax_d: [], ax_t: []}
    for label, sub in summ.groupby("label", sort=False):
        sub = sub.sort_values("threads")
        color = COLORS.get(str(sub["points"].iloc[0]), "black")
        for ax, col in ((ax_d, "avg_search_depth"), (ax_t, "drain_time_s")):
            ax.plot(sub["threads"], sub[col], "-", color=color, label=label)
            for ov, mk in ((False, color), (True, "white")):
                pts = sub[sub["oversubscribed"] == ov]
                if len(pts):
                    ax.plot(pts["threads"], pts[col], "o", color=color, mfc=mk, ms=5)
            points[ax] += [
                (x, y, ov, color)
                for x, y, ov in zip(sub["threads"], sub[col], sub["oversubscribed"])
            ]
    for ax, ylabel, unit, keep in (
        (ax_d, "average search depth (entries)", "entries", ()),
        # the 1 ms budget stays in view
        (ax_t, "queue drain time (s)", "s", (BUDGETS_S[0] / 10, BUDGETS_S[0] * 3)),
    ):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        hold_scale(ax, points[ax], keep, unit)
        ax.set_xlabel("threads per process")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    top = ax_t.get_ylim()[1]
    ax_t.axhspan(
        BUDGETS_S[0],
        max(top, BUDGETS_S[0]),
        color="0.85",
        zorder=0,
        label="drain >= 1 ms (per-timestep budget)",
    )
    if top > BUDGETS_S[1]:
        ax_t.axhline(BUDGETS_S[1], color="0.5", ls=":", lw=1)
    ax_t.set_ylim(top=top)
    # padded: a log axis can put a tick label ("8") at its very top edge
    ax_d.set_title("search depth (open markers: oversubscribed)", pad=12)
    ax_t.set_title("time to drain the queue", pad=12)
    legend_below(fig)
    img = figure_html(fig, f"search depth and drain time against threads, {run.path.name}")
    note = (
        (
            "Oversubscribed (threads x ranks on a node > cores): "
            + ", ".join(
                f"{o['threads_recv']} receiving / {o['threads_send']} sending threads" for o in over
            )
            + ". "
        )
        if over
        else "No configuration was oversubscribed. "
    )
    head = (
        f"<h3>{html.escape(run.path.name)}</h3><p>{p['trials']} trials per configuration "
        f"after {p['warmup']} warm-up, {format_bytes(p['size_bytes'])} messages, "
        f"{html.escape(run.meta.get('mpi', {}).get('name', '?'))}. {html.escape(note)}"
        "Search depth: entries of an MPICH-style posted-receive list passed over before "
        "each match, from the recorded post and send orders.</p>"
    )
    cols = [
        "points",
        "decomposition",
        "threads_recv",
        "threads_send",
        "messages",
        "avg_search_depth",
        "max_search_depth",
        "ob1_posted_recvq_length",
        "drain_time_s",
        "oversubscribed",
    ]
    table = html_table(summ[cols], caption="mean over trials")
    return head + img + more("every configuration: depths, ob1's queue, drain time", table)


def render(runs, context):
    return per_run(runs, _render_run)
