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
pd = lazy("pandas")


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


#: More cells than this are drawn by groups: nodes when they are few enough, else
#: equal groups of consecutive ranks ("group", not "block": a rank block is the
#: rank's part of a node file, docs/glossary.md). 64: a cell is about 5 px of a figure
#: read at 1024 px; 256 were about 1 px, and the image scaled down dropped rows.
MAX_CELLS = 64


def _groups(run, nranks):
    """(group of each rank, number of groups, what a group is) for the matrices."""
    if nranks <= MAX_CELLS:
        return np.arange(nranks), nranks, "rank"
    ranks = run.table("ranks") if "ranks" in run.tables() else None
    if ranks is not None and 1 < ranks["node"].nunique() <= MAX_CELLS:
        codes = {n: i for i, n in enumerate(sorted(ranks["node"].unique()))}
        group = np.zeros(nranks, np.int64)
        group[ranks["rank"].to_numpy()] = ranks["node"].map(codes).to_numpy()
        return group, len(codes), "node"
    size = -(-nranks // MAX_CELLS)
    return np.arange(nranks) // size, -(-nranks // size), f"group of {size} ranks"


def _matrix(run, peers, nranks, name):
    if peers is None or peers.empty:
        return ""
    group, n, unit = _groups(run, nranks)
    keep = (peers["rank"] < nranks) & (peers["peer"] < nranks)
    src = group[peers["rank"].to_numpy()[keep]]
    dst = group[peers["peer"].to_numpy()[keep]]
    m = np.zeros((n, n))
    np.add.at(m, (src, dst), peers["bytes_sent"].to_numpy(dtype=float)[keep])
    fig, axes = new_figure(width=4.6, height=4.0)
    ax = axes[0][0]
    im = ax.imshow(m, cmap="viridis", origin="upper", interpolation="nearest")
    fig.colorbar(im, ax=ax, label="sent (bytes)")
    from matplotlib.ticker import MaxNLocator
    for axis in (ax.xaxis, ax.yaxis):  # ranks, nodes, groups: whole numbers
        axis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"destination {unit}")
    ax.set_ylabel(f"source {unit}")
    ax.set_title(f"point-to-point bytes, {unit} x {unit}" if unit == "rank" or unit == "node"
                 else "point-to-point bytes, by groups of ranks")
    note = "" if unit == "rank" else (f"<p>{nranks} ranks: the matrix sums them by {unit}.</p>")
    return note + figure_html(fig, f"{unit} by {unit} matrix of point-to-point bytes sent, {name}")


def _per_rank(run, name):
    """Bytes sent per rank as a distribution, with the ranks at its ends named."""
    counters = run.table("counters")
    per = counters[counters["counter"].isin(["bytes_sent", "messages_sent"])]
    per = per.pivot_table(index="rank", columns="counter", values="value", aggfunc="sum").fillna(0)
    if len(per) < 8 or "bytes_sent" not in per:
        return ""
    b = per["bytes_sent"]
    fig, axes = new_figure(width=6.0, height=3.0)
    ax = axes[0][0]
    ax.hist(b.to_numpy(), bins=min(50, max(10, len(b) // 20)), color="tab:blue")
    ax.set_xlabel("bytes sent by a rank (point to point)")
    ax.set_ylabel("ranks")
    ax.set_title(f"bytes sent per rank, {len(b)} ranks")
    med = float(b.median())
    ends = pd.concat([b.nlargest(3), b.nsmallest(3)])
    rows = pd.DataFrame({"rank": ends.index.astype(int), "bytes_sent": ends.to_numpy(),
                         "times_the_median": ends.to_numpy() / med if med > 0 else np.nan,
                         "messages_sent": per.loc[ends.index, "messages_sent"].to_numpy()
                         if "messages_sent" in per else np.nan})
    return (figure_html(fig, f"histogram of bytes sent per rank, {name}")
            + html_table(rows.drop_duplicates("rank"), caption="the ranks that send most and least"))


def _heatmaps(snaps, name):
    if snaps is None or len(snaps) < 2:
        return ""
    s = snaps.sort_values(["rank", "seq"]).copy()
    s["bytes"] = s["bytes_sent"] + s["bytes_received"]
    s["messages"] = s["messages_sent"] + s["messages_received"]
    panels = [("bytes", "bytes per interval (bytes)"),
              ("messages", "messages per interval")]
    if s["mpi_time_s"].notna().any():
        panels.append(("mpi_time_s", "time in MPI per interval, all threads (s)"))
    for col, _ in panels:  # per interval: the difference to the rank's previous record
        s[col] = s.groupby("rank")[col].diff()
    s = s.dropna(subset=[panels[0][0]])
    s["k"] = s.groupby("rank").cumcount()
    n = int(s.groupby("rank")["k"].max().min()) + 1 if len(s) else 0
    if n < 1:
        return ""
    s = s[s["k"] < n]
    ranks = np.sort(s["rank"].unique())
    t_end = s.groupby("rank")["time_s"].max().min()
    fig, axes = new_figure(ncols=len(panels), width=5.4, height=3.2, wspace=None)
    for ax, (col, label) in zip(axes[0], panels):
        grid = s.pivot(index="rank", columns="k", values=col).to_numpy(dtype=float)
        if len(ranks) <= 64:
            im = ax.imshow(grid, aspect="auto", cmap="magma", interpolation="nearest",
                           extent=(0, t_end, len(ranks) - 0.5, -0.5))
            fig.colorbar(im, ax=ax, label=label)
            ax.set_ylabel("rank")
            step = -(-len(ranks) // 16)  # at most 16 rank labels: readable at 1024 px
            ax.set_yticks(range(0, len(ranks), step), [str(r) for r in ranks[::step]])
        else:  # too many ranks for a row each: the distribution over ranks per interval
            t = np.linspace(0, t_end, n)
            q = np.nanpercentile(grid, [50, 95], axis=0)
            ax.fill_between(t, q[0], q[1], color="tab:orange", alpha=0.3, label="median to p95")
            ax.plot(t, q[0], color="tab:orange", label="median")
            ax.plot(t, np.nanmax(grid, axis=0), color="tab:red", label="max")
            k = int(np.nanargmax(np.nanmax(grid, axis=0)))
            top = int(ranks[int(np.nanargmax(grid[:, k]))])
            ax.annotate(f"rank {top}", (t[k], float(np.nanmax(grid[:, k]))), fontsize=7)
            ax.set_ylabel(label)
            ax.legend(fontsize=7)
        ax.set_xlabel("time since MPI_Init (s)")
    fig.suptitle("rank x time, from the snapshots" if len(ranks) <= 64 else
                 f"per interval over {len(ranks)} ranks, from the snapshots")
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


def _callsites(run):
    """Top call sites by time (with timers) and by bytes, summed over ranks
    (profile --callsites); nothing when the run has none."""
    if "callsites" not in run.tables():
        return ""
    from ...profile.callsites import site_label, top_callsites
    sites = run.table("callsites")

    def rows(top):
        return [{"function": r["function"],
                 "site": site_label(r["file"], r["line"]),
                 "caller": r["caller"], "ranks": r["ranks"], "calls": r["calls"],
                 "bytes": r["bytes"], "time_s": r["time_s"], "stack": r["stack"],
                 "reason": r["reason"]} for r in top.to_dict("records")]
    parts = []
    if sites["time_s"].notna().any():
        parts.append(html_table(rows(top_callsites(sites, 10, by="time_s")), caption="by time"))
    else:
        parts.append(html_table(rows(top_callsites(sites, 10, by="calls")), caption="by calls"))
    if sites["bytes"].fillna(0).gt(0).any():
        parts.append(html_table(rows(top_callsites(sites, 10, by="bytes")), caption="by bytes"))
    return ("<h4>Top call sites by time and by bytes</h4><p>Where the program made its MPI "
            "calls (file:line and the enclosing function, from the return address of each "
            "call), summed over ranks and threads; a site that could not be resolved says "
            "why.</p>" + "".join(parts))


def _tables(run):
    names = set(run.tables())
    return {t: (run.table(t) if t in names else None)
            for t in ("functions", "size_bins", "peers", "snapshots")}


def _render_run(run):
    t = _tables(run)
    p, meta = run.meta["parameters"], run.meta
    overview = meta["profile"]["ranks"]
    nranks = int(p["ranks"])  # the world: the matrices' sides
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
    return (head + "".join(problems) + _function_table(run, t["functions"]) + _callsites(run)
            + _size_histogram(t["size_bins"], run.path.name)
            + _per_rank(run, run.path.name)
            + _matrix(run, t["peers"], nranks, run.path.name)
            + _heatmaps(t["snapshots"], run.path.name) + _imbalance(run))


def render(runs, context):
    return per_run(runs, _render_run)
