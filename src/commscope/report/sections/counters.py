"""Profile runs (`commscope profile`): what the program's communication looked like.

Per run: the per-function table (calls, bytes, time, share of the run), message
sizes per function, the rank x rank matrix of bytes sent, rank x time heatmaps of
bytes, messages and time in MPI from the snapshots (after Eberius 2020, Figs.
3.12-3.17), and the load imbalance of eq. 4.1 (time outside MPI, eq. 4.2).
"""

import html


from ...profile.imbalance import imbalance_over_time, imbalance_percent, rank_loads
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import per_run
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"profile"}
TITLE = "Application profile (software counters)"
ORDER = 8


def _function_table(run, functions):
    per = functions.groupby("function").agg(calls=("calls", "sum"), bytes=("bytes", "sum"),
                                            time_s=("time_s", "sum"))
    per = per.sort_values(["time_s", "calls"] if per["time_s"].notna().any() else ["calls"],
                          ascending=False)
    table = run.table("ranks")
    ranks = max(len(table), 1)
    wall = float(table["wall_s"].sum())
    per["share_of_run_pct"] = per["time_s"] / wall * 100 if wall > 0 else np.nan
    per["calls_per_rank"] = per["calls"] / ranks
    per = per.reset_index()[["function", "calls", "calls_per_rank", "bytes", "time_s",
                             "share_of_run_pct"]]
    note = ("" if per["time_s"].notna().any() else
            " Time per function needs the timers set (<code>--counters all</code>).")
    return ("<p>Summed over ranks and threads; share of run = time in the function over the "
            f"ranks' total wall time.{note}</p>" + html_table(per, caption="per MPI function"))


def _size_histogram(bins, name):
    if bins is None or bins.empty:
        return ""
    per = bins.groupby(["function", "bin"])["count"].sum().reset_index()
    funcs = per.groupby("function")["count"].sum().sort_values(ascending=False).index[:6]
    fig, axes = new_figure(width=7.5, height=3.6)
    ax = axes[0][0]
    width = 0.8 / len(funcs)
    for k, fn in enumerate(funcs):
        sub = per[per["function"] == fn]
        ax.bar(sub["bin"] + (k - len(funcs) / 2) * width, sub["count"], width=width, label=fn)
    ticks = sorted(per["bin"].unique())
    ax.set_xticks(ticks)
    ax.set_xticklabels(["0" if b == 0 else _size_label(1 << (b - 1)) for b in ticks], rotation=45)
    ax.set_xlabel("message size (bytes, lower edge of the power-of-two bin)")
    ax.set_ylabel("messages or calls")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.5)  # bars start below one count, so every bar is visible
    legend_below(fig)
    ax.set_title("message sizes per function, all ranks")
    return figure_html(fig, f"histogram of message sizes per MPI function, {name}")


def _size_label(n):
    for unit, f in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= f:
            return f"{n // f}{unit}"
    return str(n)


def _matrix(peers, nranks, name):
    if peers is None or peers.empty:
        return ""
    m = np.zeros((nranks, nranks))
    for r in peers.itertuples():
        if r.rank < nranks and r.peer < nranks:
            m[r.rank, r.peer] = r.bytes_sent
    fig, axes = new_figure(width=4.6, height=4.0)
    ax = axes[0][0]
    im = ax.imshow(m, cmap="viridis", origin="upper")
    fig.colorbar(im, ax=ax, label="bytes sent")
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title("point-to-point bytes, rank x rank")
    return figure_html(fig, f"rank by rank matrix of point-to-point bytes sent, {name}")


def _heatmaps(snaps, name):
    if snaps is None or len(snaps) < 2:
        return ""
    s = snaps.sort_values(["rank", "seq"]).copy()
    s["bytes"] = s["bytes_sent"] + s["bytes_received"]
    s["messages"] = s["messages_sent"] + s["messages_received"]
    panels = [("bytes", "bytes per interval"), ("messages", "messages per interval")]
    if s["mpi_time_s"].notna().any():
        panels.append(("mpi_time_s", "time in MPI per interval (s, all threads)"))
    ranks = sorted(s["rank"].unique())
    fig, axes = new_figure(ncols=len(panels), width=5.4, height=3.2)
    for ax, (col, label) in zip(axes[0], panels):
        grid = []
        for r in ranks:
            sub = s[s["rank"] == r]
            grid.append(np.diff(sub[col].to_numpy(dtype=float)))
        n = min(len(g) for g in grid)
        data = np.array([g[:n] for g in grid])
        t_end = s.groupby("rank")["time_s"].max().min()
        im = ax.imshow(data, aspect="auto", cmap="magma", interpolation="nearest",
                       extent=(0, t_end, len(ranks) - 0.5, -0.5))
        fig.colorbar(im, ax=ax, label=label)
        ax.set_xlabel("time since MPI_Init (s)")
        ax.set_ylabel("rank")
        ax.set_yticks(range(len(ranks)), [str(r) for r in ranks])
    fig.suptitle("rank x time, from the snapshots")
    fig.tight_layout()
    return figure_html(fig, f"rank by time heatmaps of bytes, messages and time in MPI, {name}")


def _imbalance(run):
    loads = rank_loads(run)
    if loads is None or loads.empty:
        return ("<p>Load imbalance (eq. 4.1, load = time outside MPI) needs the timers set: "
                "profile with <code>--counters all</code>.</p>")
    pct = imbalance_percent(loads["load_s"])
    over = imbalance_over_time(run)
    text = (f"<p>Load imbalance between ranks (Eberius 2020, eq. 4.1, load = wall time minus "
            f"time in MPI, eq. 4.2): <b>{pct:.1f} %</b> over the whole run"
            + (f"; per snapshot interval from {over['imbalance_pct'].min():.1f} % to "
               f"{over['imbalance_pct'].max():.1f} % (median {over['imbalance_pct'].median():.1f} %)"
               if over is not None and len(over) else "") + ".</p>")
    return text + html_table(loads, caption="load per rank")


def _tables(run):
    names = set(run.tables())
    return {t: (run.table(t) if t in names else None)
            for t in ("functions", "size_bins", "peers", "snapshots")}


def _render_run(run):
    t = _tables(run)
    p, meta = run.meta["parameters"], run.meta
    overview = meta["profile"]["ranks"]
    nranks = overview.get("count", 0)
    status = meta.get("exit_status")
    head = (f"<h3>{html.escape(run.path.name)}</h3><p>{html.escape(p['program'])} "
            f"{html.escape(' '.join(p['args']))} on {p['ranks']} ranks, "
            f"{html.escape(meta.get('mpi', {}).get('name', '?'))}; counters: "
            f"{html.escape(', '.join(p['counters']))}; exit status {status}.</p>")
    problems = [f"<p class='note'>{html.escape(x)}</p>" for x in meta["profile"].get("problems", [])]
    if overview.get("lost_threads") or overview.get("lost_blocks"):
        problems.append(f"<p class='note'>The node file could not grow (disk full?): "
                        f"{overview.get('lost_threads', 0)} threads and "
                        f"{overview.get('lost_blocks', 0)} size-bin or peer blocks are missing "
                        "from the counts.</p>")
    if overview.get("not_finalized_count"):
        shown = overview["not_finalized"]
        more = overview["not_finalized_count"] - len(shown)
        problems.append(f"<p class='note'>Ranks {shown}{f' and {more} more' if more > 0 else ''} "
                        "did not reach MPI_Finalize: their counts stop where the program was "
                        "killed or crashed.</p>")
    if t["functions"] is None:
        return head + "".join(problems) + "<p>No counters were recorded.</p>"
    return (head + "".join(problems) + _function_table(run, t["functions"])
            + _size_histogram(t["size_bins"], run.path.name)
            + _matrix(t["peers"], nranks, run.path.name)
            + _heatmaps(t["snapshots"], run.path.name) + _imbalance(run))


def render(runs, context):
    return per_run(runs, _render_run)
