"""Multirate runs: message rate of thread pairs, shared vs per-thread communicators
(001 Sec. 3.9.1, Table 3.4).

Per run, two panels against threads per rank: the message rate per thread (median
over repetitions, bars from the slowest to the fastest repetition), one line per
mode; and the largest unexpected-message queue Open MPI's ob1 reported on the
receiver (absent under MPIs without that pvar).  Open markers are oversubscribed
configurations (2 ranks x threads > cores: the threads then also compete for the
cores).  A table lists every configuration and the shared / per-thread ratio of
the rate per thread, the quantity whose fall 001 traced to out-of-sequence messages.
"""

import html


from ...bench.multirate import MODES, config_summary, mode_ratio
from ...output import format_table
from ..figures import figure_html, new_figure
from . import per_run
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"multirate"}
TITLE = "Multirate: thread pairs sharing a communicator (001 Sec. 3.9.1)"
ORDER = 27
COLORS = {"shared": "tab:red", "per-thread": "tab:blue"}


def _render_run(run):
    reps = run.table("reps")
    summ = config_summary(reps)
    ratio = mode_ratio(reps)
    p = run.meta["parameters"]
    fig, axes = new_figure(ncols=2, width=5.2, height=3.8)
    ax_r, ax_q = axes[0]
    for mode in MODES:
        sub = summ[summ["mode"] == mode].sort_values("threads")
        if sub.empty:
            continue
        color = COLORS[mode]
        lo = sub["rate_per_thread"] - sub["rate_min"] / sub["threads"]
        hi = sub["rate_max"] / sub["threads"] - sub["rate_per_thread"]
        ax_r.errorbar(sub["threads"], sub["rate_per_thread"], yerr=[lo, hi], color=color,
                      capsize=3, label=mode)
        for over, face in ((False, color), (True, "white")):
            pts = sub[sub["oversubscribed"] == over]
            ax_r.plot(pts["threads"], pts["rate_per_thread"], "o", color=color, mfc=face, ms=5)
        if np.isfinite(sub["unexpected_msgq_max"]).any():
            ax_q.plot(sub["threads"], sub["unexpected_msgq_max"], "o-", color=color, label=mode)
    ax_r.set_ylabel("messages/s per thread (median)")
    ax_q.set_ylabel("largest unexpected queue (ob1 pvar)")
    for ax in (ax_r, ax_q):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads per rank")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    ax_r.set_yscale("log")
    fig.suptitle("rate per thread and receiver queue (open markers: oversubscribed)")
    img = figure_html(fig, "message rate per thread against threads, shared vs per-thread")
    queues = ("ob1 queue lengths sampled on the receiver after each window"
              if np.isfinite(reps["unexpected_msgq_max"]).any()
              else "this MPI exposes no queue-length pvars")
    head = (f"<h3>{html.escape(run.path.name)}</h3><p>{p['reps']} repetitions per configuration, "
            f"window {p['window']} x {p['size_bytes']} B, {p['iterations']} timed windows after "
            f"{p['warmup']} warm-up, {html.escape(run.meta.get('mpi', {}).get('name', '?'))}; "
            f"{queues}. Out-of-sequence messages (001's explanation) are counted only by an "
            "Open MPI built with SPCs; standard MPI_T does not expose them.</p>")
    table = "<pre>" + html.escape(format_table(summ, title="median over repetitions")) + "</pre>"
    if len(ratio):
        table += "<pre>" + html.escape(format_table(
            ratio, title="rate per thread: shared communicator / one per thread")) + "</pre>"
    return head + img + table


def render(runs, context):
    return per_run(runs, _render_run)
