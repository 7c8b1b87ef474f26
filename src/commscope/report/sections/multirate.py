"""Multirate runs: message rate of thread pairs, shared vs per-thread communicators
(Eberius 2020, Sec. 3.9.1, Table 3.4).

Per run, two panels against threads per rank: the message rate per thread (median
over repetitions, bars from the slowest to the fastest repetition), one line per
mode; and the largest unexpected-message queue Open MPI's ob1 reported on the
receiver (absent under MPIs without that pvar).  Open markers are oversubscribed
configurations (2 ranks x threads > cores: the threads then also compete for the
cores).  A table lists every configuration and the shared / per-thread ratio of
the rate per thread, the quantity whose fall Eberius 2020 traced to out-of-sequence messages.
"""

import html


from ...bench.multirate import MODES, config_summary, mode_ratio
from ...units import format_bytes
from ..figures import empty_panel, figure_html, hold_scale, legend_below, new_figure
from ..tables import html_table
from . import more, per_run
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"multirate"}
TITLE = "Multirate: thread pairs sharing a communicator (Eberius 2020, Sec. 3.9.1)"
ORDER = 27
COLORS = {"shared": "tab:red", "per-thread": "tab:blue"}


def _marks(ax, x, y, over, color):
    """The points of one mode: filled, open where the configuration was oversubscribed."""
    for flag, face in ((False, color), (True, "white")):
        ax.plot(x[over == flag], y[over == flag], "o", color=color, mfc=face, ms=5)


def _render_run(run):
    reps = run.table("reps")
    summ = config_summary(reps)
    ratio = mode_ratio(reps)
    p = run.meta["parameters"]
    fig, axes = new_figure(ncols=2, width=5.2, height=3.8)
    ax_r, ax_q = axes[0]
    ax_r.set_yscale("log")
    for ax in (ax_r, ax_q):
        ax.set_xscale("log", base=2)
    rates, rate_bars, queue_points, all_bars = [], [], [], []
    for mode in MODES:
        sub = summ[summ["mode"] == mode].sort_values("threads")
        if sub.empty:
            continue
        color = COLORS[mode]
        lo = sub["rate_min_msgs_per_s"] / sub["threads"]
        hi = sub["rate_max_msgs_per_s"] / sub["threads"]
        rate = sub["rate_per_thread_msgs_per_s"]
        over = sub["oversubscribed"].astype(bool)
        ax_r.errorbar(
            sub["threads"], rate, yerr=[rate - lo, hi - rate], color=color, capsize=3, label=mode
        )
        _marks(ax_r, sub["threads"], rate, over, color)
        rates += [(x, y, ov, color) for x, y, ov in zip(sub["threads"], rate, over)]
        rate_bars += [*lo[~over], *hi[~over]]
        all_bars += list(zip(sub["threads"], rate, lo, hi))
        if np.isfinite(sub["unexpected_msgq_max"]).any():
            ax_q.plot(sub["threads"], sub["unexpected_msgq_max"], "-", color=color, label=mode)
            _marks(ax_q, sub["threads"], sub["unexpected_msgq_max"], over, color)
            queue_points += [
                (x, y, ov, color)
                for x, y, ov in zip(sub["threads"], sub["unexpected_msgq_max"], over)
            ]
    edge = hold_scale(ax_r, rates, keep=rate_bars, unit="msgs/s")
    # the bars of every point on the axis stay on it too (an oversubscribed one's included)
    shown = [(lo, hi) for x, y, lo, hi in all_bars if (x, y) not in edge and lo > 0]
    if shown:
        b, t = ax_r.get_ylim()
        ax_r.set_ylim(
            min(b, min(lo for lo, _ in shown) / 1.1), max(t, max(hi for _, hi in shown) * 1.1)
        )
    ax_r.set_ylabel("rate per thread, median (msgs/s)")
    ax_r.set_title("rate per thread (open markers: oversubscribed)")
    panels = [ax_r]
    if not queue_points:  # one sentence, not an empty axis
        empty_panel(ax_q, "This MPI exposes no\nqueue-length pvars:\nno receiver queue to show.")
    elif not any(y for _, y, _, _ in queue_points):
        empty_panel(
            ax_q,
            "No unexpected message waited\nin the receiver's queue\n"
            "at any thread count (ob1 pvar).",
        )
    else:
        hold_scale(ax_q, queue_points, unit="messages")
        ax_q.set_ylabel("largest unexpected queue (ob1 pvar)")
        ax_q.set_title("receiver queue")
        panels.append(ax_q)
    for ax in panels:
        ax.set_xlabel("threads per rank")
        ax.grid(True, which="both", alpha=0.3)
    legend_below(fig)
    img = figure_html(
        fig, f"message rate per thread against threads, shared vs per-thread, {run.path.name}"
    )
    queues = (
        "ob1 queue lengths sampled on the receiver after each window"
        if np.isfinite(reps["unexpected_msgq_max"]).any()
        else "this MPI exposes no queue-length pvars"
    )
    head = (
        f"<h3>{html.escape(run.path.name)}</h3><p>{p['reps']} repetitions per configuration, "
        f"window {p['window']} x {format_bytes(p['size_bytes'])}, {p['iterations']} timed windows after "
        f"{p['warmup']} warm-up, {html.escape(run.meta.get('mpi', {}).get('name', '?'))}; "
        f"{queues}. Out-of-sequence messages (Eberius 2020's explanation) are counted only "
        "by an Open MPI built with SPCs; standard MPI_T does not expose them.</p>"
    )
    table = html_table(summ, caption="median over repetitions")
    if len(ratio):
        table += html_table(ratio, caption="rate per thread: shared communicator / one per thread")
    return head + img + more("the rates and queues per configuration", table)


def render(runs, context):
    return per_run(runs, _render_run)
