"""Profile runs (`commscope profile`): what the program's communication looked like.

Per run: time in MPI per rank (mpiP's AppTime, MPITime, MPI%) with IPM's sorted
communication-balance chart, the per-function table (calls, bytes, time, share of the
run and of MPI), call sites with their time over ranks (min, mean, max: mpiP's callsite
time statistics), message sizes per function and the time per size (IPM's histogram
by time), the rank x rank matrix of bytes sent, rank x time heatmaps of bytes, messages
and time in MPI from the snapshots (after Eberius 2020, Figs. 3.12-3.17), and the load
imbalance of eq. 4.1 (time outside MPI, eq. 4.2).  A time the run did not measure (a
--counters list without timers) reads "not measured", with the option that adds it.
"""

import html


from ...profile.endings import sentence
from ...profile.imbalance import imbalance_over_time, imbalance_percent, rank_loads
from ...profile.summary import NOT_MEASURED, TIMERS_HINT
from ...profile.views import (
    MAX_RANK_ROWS,
    callsite_time_stats,
    rank_time_rows,
    rank_time_summary,
    rank_times,
    run_timed,
    time_by_size,
)
from ...units import format_bytes, format_seconds
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import more, per_run
from ...lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


KINDS = {"profile"}
TITLE = "Application profile (software counters)"
ORDER = 8


def _not_measured(what):
    """The sentence a report part says for a time the run did not measure."""
    return (
        f"<p class='note'>{html.escape(what)}: {NOT_MEASURED}: the run's "
        f"<code>--counters</code> had no timers; {html.escape(TIMERS_HINT)}.</p>"
    )


def _unmeasured(rows, columns):
    """``rows`` (dicts) with ``columns`` saying "not measured" (never a blank or 0)."""
    return [{k: (NOT_MEASURED if k in columns else v) for k, v in r.items()} for r in rows]


def _function_table(run, functions):
    timed = run_timed(run)
    per = functions.groupby("function").agg(
        calls=("calls", "sum"),
        bytes=("bytes", "sum"),
        time_s=("time_s", lambda x: x.sum(min_count=1)),
    )
    per = per.sort_values(["time_s", "calls"] if timed else ["calls"], ascending=False)
    table = run.table("ranks")
    ranks = max(len(table), 1)
    wall = float(table["wall_s"].sum())
    per["share_of_run_pct"] = per["time_s"] / wall * 100 if wall > 0 else np.nan
    total = per["time_s"].sum()
    per["share_of_mpi_pct"] = per["time_s"] / total * 100 if timed and total > 0 else np.nan
    per["calls_per_rank"] = per["calls"] / ranks
    per = per.reset_index()[
        [
            "function",
            "calls",
            "calls_per_rank",
            "bytes",
            "time_s",
            "share_of_run_pct",
            "share_of_mpi_pct",
        ]
    ]
    rows = per.to_dict("records")
    if not timed:
        rows = _unmeasured(rows, ("time_s", "share_of_run_pct", "share_of_mpi_pct"))
    return (
        "<p>Summed over ranks and threads, "
        + ("by time" if timed else "by calls")
        + "; share of run = time in the function over the ranks' total wall time, share "
        "of MPI = over the time in all MPI functions (mpiP's App% and MPI%).</p>"
        + ("" if timed else _not_measured("time per function"))
        + html_table(rows, caption="per MPI function")
    )


def _rank_times(run, name):
    """Time in MPI per rank (mpiP's AppTime, MPITime, MPI%) and IPM's sorted
    communication-balance chart; ``(the chart and its sentence, the table)``."""
    times = rank_times(run)
    if times is None or times.empty:
        return "", ""
    timed = run_timed(run)
    head = (
        "<h4>Time in MPI per rank</h4><p>Per rank: wall time from MPI_Init to "
        "MPI_Finalize (mpiP's AppTime), time inside MPI calls (MPITime) and its share "
        "(MPI%), and the rest, compute. A rank whose several threads call MPI counts the "
        "mean over those threads, so MPI% stays a share of its wall time.</p>"
    )
    shown, left_out = rank_time_rows(times)
    rows = shown.to_dict("records")
    if not timed:
        return (
            head + _not_measured("time in MPI per rank"),
            html_table(
                _unmeasured(rows, ("mpi_time_s", "mpi_pct", "compute_s")), caption="time per rank"
            ),
        )
    summary = rank_time_summary(times)
    text = ""
    if summary:
        text = (
            f"<p>All ranks: <b>{summary['mpi_pct']:.1f} %</b> of their wall time in MPI; "
            f"rank {summary['max_rank']} the most ({format_seconds(summary['max_mpi_time_s'])}), "
            f"rank {summary['min_rank']} the least ({format_seconds(summary['min_mpi_time_s'])}).</p>"
        )
    note = f"<p>{html.escape(left_out)}.</p>" if left_out else ""
    return (
        head + text + _balance_chart(times, name) + note,
        html_table(rows, caption="time per rank" + (", the extremes" if left_out else "")),
    )


def _balance_chart(times, name):
    """IPM's communication balance: per rank, time in MPI and compute stacked, ranks
    sorted by time in MPI; beyond MAX_RANK_ROWS ranks the sorted ranks as stacked areas
    with the ranks at both ends named."""
    t = times.dropna(subset=["mpi_time_s"]).sort_values(["mpi_time_s", "rank"], kind="stable")
    if t.empty:
        return ""
    n = len(t)
    mpi = t["mpi_time_s"].to_numpy(float)
    comp = np.maximum(t["compute_s"].to_numpy(float), 0)
    fig, axes = new_figure(width=6.4 if n <= 16 else 7.5, height=3.2)
    ax = axes[0][0]
    x = np.arange(n)
    if n <= MAX_RANK_ROWS:
        ax.bar(x, mpi, width=0.8, color="tab:red", label="time in MPI")
        ax.bar(
            x,
            comp,
            width=0.8,
            bottom=mpi,
            color="tab:blue",
            alpha=0.6,
            label="compute (wall - MPI)",
        )
        step = -(-n // 16)  # at most 16 rank labels: readable at 1024 px
        ax.set_xticks(x[::step], [str(r) for r in t["rank"].to_numpy()[::step]])
        ax.set_xlabel("rank, sorted by time in MPI")
        ax.set_xlim(-0.6, n - 0.4)
    else:
        ax.fill_between(x, 0, mpi, color="tab:red", step="mid", label="time in MPI")
        ax.fill_between(
            x,
            mpi,
            mpi + comp,
            color="tab:blue",
            alpha=0.6,
            step="mid",
            label="compute (wall - MPI)",
        )
        ax.set_xlim(0, n - 1)
        ax.set_xticks([])
        ranks = t["rank"].to_numpy()
        for i, where in ((0, "left"), (n - 1, "right")):
            ax.annotate(
                f"rank {ranks[i]}",
                (i, mpi[i]),
                textcoords="offset points",
                xytext=(4 if where == "left" else -4, 4),
                ha=where,
            )
        ax.set_xlabel(f"{n} ranks, sorted by time in MPI (least at the left)")
    ax.set_ylabel("time (s)")
    ax.set_ylim(bottom=0)
    ax.set_title("communication balance: time in MPI and compute per rank")
    legend_below(fig, ncol=2)
    return figure_html(fig, f"ranks sorted by time in MPI, time in MPI and compute stacked, {name}")


def _size_histogram(bins, name):
    if bins is None or bins.empty:
        return ""
    per = bins.groupby(["function", "bin"])["count"].sum().reset_index()
    funcs = per.groupby("function")["count"].sum().sort_values(ascending=False).index[:6]
    fig, axes = new_figure(width=7.5, height=3.6)
    ax = axes[0][0]
    width = 0.8 / len(funcs)
    ticks = sorted(per["bin"].unique())
    pos = {b: i for i, b in enumerate(ticks)}  # the bins present, side by side: labels apart
    for k, fn in enumerate(funcs):
        sub = per[per["function"] == fn]
        ax.bar(
            sub["bin"].map(pos) + (k - (len(funcs) - 1) / 2) * width,
            sub["count"],
            width=width,
            label=fn,
        )
    ax.set_xticks(range(len(ticks)))
    ax.set_xticklabels(["0 B" if b == 0 else _size_label(1 << (b - 1)) for b in ticks], rotation=45)
    ax.set_xlabel("message size, lower edge of the power-of-two bin")
    ax.set_ylabel("messages or calls")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.5)  # bars start below one count, so every bar is visible
    legend_below(fig)
    ax.set_title("message sizes per function, all ranks")
    return figure_html(fig, f"histogram of message sizes per MPI function, {name}")


def _size_time(run, bins, functions, name):
    """IPM's message-size histogram by time: per size bin, the time of the calls that
    moved a message of that size (size_bins.time_s), by function; the time in MPI in no
    bin (Wait/Test calls, barriers, posting receives) is said, not spread over sizes."""
    if bins is None or bins.empty:
        return ""
    if not run_timed(run) or bins["time_s"].isna().all():
        why = "the run was converted before commscope kept it" if run_timed(run) else None
        return (
            f"<p class='note'>Time per message size: {NOT_MEASURED}: {why}.</p>"
            if why
            else _not_measured("time per message size")
        )
    per, unbinned = time_by_size(bins, functions)
    by_fn = bins.groupby(["function", "bin"])["time_s"].sum().reset_index()
    top = by_fn.groupby("function")["time_s"].sum().sort_values(ascending=False)
    top = [f for f in top.index[:5] if top[f] > 0]
    fig, axes = new_figure(width=7.5, height=3.4)
    ax = axes[0][0]
    ticks = sorted(per["bin"].unique())
    pos = {b: i for i, b in enumerate(ticks)}
    bottom = np.zeros(len(ticks))
    rest = by_fn[~by_fn["function"].isin(top)].groupby("bin")["time_s"].sum()
    for fn, values in [
        (f, by_fn[by_fn["function"] == f].set_index("bin")["time_s"]) for f in top
    ] + ([("other functions", rest)] if rest.sum() > 0 else []):
        h = np.zeros(len(ticks))
        for b, v in values.items():
            h[pos[b]] = v
        ax.bar(np.arange(len(ticks)), h, bottom=bottom, width=0.7, label=fn)
        bottom += h
    ax.set_xticks(np.arange(len(ticks)))
    ax.set_xticklabels(["0 B" if b == 0 else _size_label(1 << (b - 1)) for b in ticks], rotation=45)
    ax.set_xlabel("message size, lower edge of the power-of-two bin")
    ax.set_ylabel("time in the calls (s)")
    ax.set_title("time per message size, all ranks and threads")
    legend_below(fig)
    total = float(per["time_s"].sum())
    rows = per.assign(
        share_of_mpi_pct=per["time_s"] / (total + unbinned) * 100
        if total + unbinned > 0
        else np.nan
    )
    text = (
        "<p>Each call's time goes to the size bin of the message it moved (docs/profile.md, "
        '"Time per message size"): blocking sends and receives and collectives whole, '
        "MPI_Isend its own call. "
        + (
            f"Time in MPI in no size bin (Wait and Test calls, "
            f"barriers, posting receives): "
            f"<b>{format_seconds(unbinned)}</b>."
            if unbinned == unbinned
            else ""
        )
        + "</p>"
    )
    return (
        text
        + figure_html(fig, f"time per message size and function, {name}")
        + html_table(
            rows[["min_bytes", "max_bytes", "messages", "time_s", "share_of_mpi_pct"]],
            caption="messages and time per size bin",
        )
    )


def _size_label(n):
    return format_bytes(n)


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
    ax.set_title(
        f"point-to-point bytes, {unit} x {unit}"
        if unit == "rank" or unit == "node"
        else "point-to-point bytes, by groups of ranks"
    )
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
    rows = pd.DataFrame(
        {
            "rank": ends.index.astype(int),
            "bytes_sent": ends.to_numpy(),
            "times_the_median": ends.to_numpy() / med if med > 0 else np.nan,
            "messages_sent": per.loc[ends.index, "messages_sent"].to_numpy()
            if "messages_sent" in per
            else np.nan,
        }
    )
    return figure_html(fig, f"histogram of bytes sent per rank, {name}") + html_table(
        rows.drop_duplicates("rank"), caption="the ranks that send most and least"
    )


def _heatmaps(snaps, name, timed=True):
    if snaps is None or len(snaps) < 2:
        return ""
    note = "" if timed else _not_measured("time in MPI per snapshot interval")
    s = snaps.sort_values(["rank", "seq"]).copy()
    s["bytes"] = s["bytes_sent"] + s["bytes_received"]
    s["messages"] = s["messages_sent"] + s["messages_received"]
    panels = [("bytes", "bytes per interval (bytes)"), ("messages", "messages per interval")]
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
    # one panel a row, the window's width each: time runs along the page
    fig, axes = new_figure(nrows=len(panels), width=7.5, height=2.1, sharex=True)
    for ax, (col, label) in zip(axes[:, 0], panels):
        grid = s.pivot(index="rank", columns="k", values=col).to_numpy(dtype=float)
        if len(ranks) <= 64:
            im = ax.imshow(
                grid,
                aspect="auto",
                cmap="magma",
                interpolation="nearest",
                extent=(0, t_end, len(ranks) - 0.5, -0.5),
            )
            # the unit on the colour bar, what it counts in the panel's title
            fig.colorbar(
                im,
                ax=ax,
                pad=0.01,
                label=(
                    "time (s)" if col.endswith("_s") else "bytes (bytes)" if col == "bytes" else col
                ),
            )
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
            ax.annotate(f"rank {top}", (t[k], float(np.nanmax(grid[:, k]))))
            ax.set_ylabel(label)
        ax.set_title(
            label.split(" (")[0]
            + (", per rank" if len(ranks) <= 64 else f", over {len(ranks)} ranks"),
            loc="left",
        )
    axes[-1][0].set_xlabel("time since MPI_Init (s)")
    if len(ranks) > 64:
        legend_below(fig, ncol=3)
    fig.tight_layout()
    return (
        figure_html(fig, f"rank by time heatmaps of bytes, messages and time in MPI, {name}") + note
    )


def _imbalance(run):
    loads = rank_loads(run)
    if loads is None or loads.empty:
        return _not_measured("Load imbalance (eq. 4.1, load = time outside MPI)")
    pct = imbalance_percent(loads["load_s"])
    over = imbalance_over_time(run)
    return (
        f"<p>Load imbalance between ranks (Eberius 2020, eq. 4.1, load = wall time minus "
        f"time in MPI, eq. 4.2: the compute column of the time per rank): <b>{pct:.1f} %</b> "
        "over the whole run"
        + (
            f"; per snapshot interval from {over['imbalance_pct'].min():.1f} % to "
            f"{over['imbalance_pct'].max():.1f} % (median {over['imbalance_pct'].median():.1f} %)"
            if over is not None and len(over)
            else ""
        )
        + ".</p>"
    )


def _callsites(run):
    """Top call sites by time with the site's time over ranks (mpiP's callsite time
    statistics), and by bytes, summed over ranks (profile --callsites); nothing when the
    run has none."""
    if "callsites" not in run.tables():
        return ""
    from ...collect.callsites import site_label, top_callsites

    sites = run.table("callsites")
    timed = run_timed(run)
    notes = []  # each reason said once, below the tables (rows point to it: [n])

    def rows(top, stats=False):
        out = [
            {
                "function": r["function"],
                "site": site_label(r["file"], r["line"]),
                "caller": r["caller"],
                "ranks": r["ranks"],
                "calls": r["calls"],
                "bytes": r["bytes"],
                "time_s": r["time_s"],
                **(
                    {
                        "min_time_s": r["min_time_s"],
                        "mean_time_s": r["mean_time_s"],
                        "max_time_s": r["max_time_s"],
                        "max_rank": r["max_rank"],
                    }
                    if stats
                    else {}
                ),
                "stack": r["stack"],
                "reason": r["reason"],
            }
            for r in top.to_dict("records")
        ]
        for r in out:  # numbered across the tables of this section
            text = r["reason"] if isinstance(r["reason"], str) and r["reason"] else None
            if text and text not in notes:
                notes.append(text)
            r["reason"] = f"[{notes.index(text) + 1}]" if text else None
        return out if timed else _unmeasured(out, ("time_s",))

    parts = []
    if timed:
        parts.append(
            html_table(
                rows(callsite_time_stats(sites, 10), stats=True),
                caption="by time; per rank (summed over its threads): min, mean "
                "and max over the ranks that called there",
            )
        )
    else:
        parts.append(_not_measured("time per call site"))
        parts.append(html_table(rows(top_callsites(sites, 10, by="calls")), caption="by calls"))
    if sites["bytes"].fillna(0).gt(0).any():
        parts.append(html_table(rows(top_callsites(sites, 10, by="bytes")), caption="by bytes"))
    return (
        "<h4>Top call sites by time and by bytes</h4><p>Where the program made its MPI "
        "calls (file:line and the enclosing function, from the return address of each "
        "call), summed over ranks and threads; a receive's bytes count at the call that "
        "posted it (MPI_Irecv), not at the Wait that completed it. A site that could not "
        "be resolved says why.</p>"
        + "".join(parts)
        + (
            "<p>" + "<br>".join(f"[{i}] {html.escape(t)}" for i, t in enumerate(notes, 1)) + "</p>"
            if notes
            else ""
        )
    )


def _tables(run):
    names = set(run.tables())
    return {
        t: (run.table(t) if t in names else None)
        for t in ("functions", "size_bins", "peers", "snapshots")
    }


def _render_run(run):
    t = _tables(run)
    p, meta = run.meta["parameters"], run.meta
    overview = meta["profile"]["ranks"]
    nranks = int(p["ranks"])  # the world: the matrices' sides
    status = meta.get("exit_status")
    head = (
        f"<h3>{html.escape(run.path.name)}</h3><p>{html.escape(p['program'])} "
        f"{html.escape(' '.join(p['args']))} on {p['ranks']} ranks, "
        f"{html.escape(meta.get('mpi', {}).get('name', '?'))}; counters: "
        f"{html.escape(', '.join(p['counters']))}; exit status {status}.</p>"
    )
    problems = [
        f"<p class='note'>{html.escape(x)}</p>" for x in meta["profile"].get("problems", [])
    ]
    if overview.get("lost_threads") or overview.get("lost_blocks"):
        problems.append(
            f"<p class='note'>The node file could not grow (disk full?): "
            f"{overview.get('lost_threads', 0)} threads and "
            f"{overview.get('lost_blocks', 0)} size-bin or peer blocks are missing "
            "from the counts.</p>"
        )
    endings = overview.get("endings")
    if endings:  # which ranks ended badly and how (profile/endings.py)
        problems.append(
            "<p class='note'>How the ranks ended: "
            + html.escape(sentence(endings, limit=6))
            + (
                ". The counts of a rank that did not reach MPI_Finalize stop where it ended."
                if overview.get("not_finalized_count")
                else "."
            )
            + "</p>"
        )
    elif overview.get("not_finalized_count"):  # a run converted before endings were kept
        shown = overview["not_finalized"]
        others = overview["not_finalized_count"] - len(shown)
        problems.append(
            f"<p class='note'>Ranks {shown}{f' and {others} more' if others > 0 else ''} "
            "did not reach MPI_Finalize: their counts stop where they ended (how "
            "was not recorded by the commscope that made this run).</p>"
        )
    if t["functions"] is None:
        return head + "".join(problems) + "<p>No counters were recorded.</p>"
    name = run.path.name
    key, table = _rank_times(run, name)
    # the key figure (time in MPI per rank) and the imbalance; the rest one click away
    return (
        head
        + "".join(problems)
        + key
        + _imbalance(run)
        + more(
            "per function, call sites, message sizes, who sends to whom, rank x time",
            table
            + _function_table(run, t["functions"])
            + _callsites(run)
            + _size_histogram(t["size_bins"], name)
            + _size_time(run, t["size_bins"], t["functions"], name)
            + _per_rank(run, name)
            + _matrix(run, t["peers"], nranks, name)
            + _heatmaps(t["snapshots"], name, run_timed(run)),
        )
    )


def render(runs, context):
    return per_run(runs, _render_run)
