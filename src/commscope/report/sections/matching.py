"""Matching queues of traced programs (`commscope profile --trace`): replay per engine (issue 12).

Per traced run: the posted and unexpected queue lengths over time per receiving rank
(the ob1 engine's replay as lines; Open MPI's ob1 pvars, summed over peers, as dots
where the run sampled them), the distribution of search depths per engine, the
per-rank summary table, how many quiet snapshots agree with the pvars, and, when
receives were posted by more than one thread, the spread over random thread
interleavings (Schonbein et al. 2018). Runs without a trace are left out.
"""

import html


from ...matching.analysis import analyze, pvar_agreement, trial_summary
from ...matching.pvars import measured
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import more, per_run
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"profile"}
TITLE = "Matching queues of traced programs (Schonbein et al. 2018, Bienz et al. 2018)"
ORDER = 27
TRIALS = 50
ENGINE_COLORS = {"mpich": "tab:blue", "ob1": "tab:orange", "bins": "tab:green"}


#: More events than this per rank and the lengths are drawn as the maximum per time bin
#: (a step line with thousands of steps is a solid block at 1024 px); more ranks than
#: LINES_MAX and the ranks are summarised (median and max over ranks per bin).
EVENTS_MAX = 400
BINS = 200
LINES_MAX = 8


def binned_max(t, y, edges):
    """The maximum of a step function (value ``y[i]`` from ``t[i]`` on) over each bin."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    start = np.searchsorted(t, edges[:-1], side="right") - 1  # the value a bin starts with
    out = np.where(start >= 0, y[np.clip(start, 0, None)], 0.0)
    inside = np.minimum(np.searchsorted(edges, t, side="right") - 1, len(out) - 1)
    ok = (inside >= 0) & (t <= edges[-1])
    np.maximum.at(out, inside[ok], y[ok])
    return out


def _lengths_figure(a, name):
    """Queue lengths over time per receiving rank: a step line each when they are few and
    sparse, else a rank x time heatmap of the longest queue per 1/BINS of the run (rows of
    thousands of steps overplotted are a solid block), beyond 64 ranks the median and
    max over ranks."""
    ranks = sorted(a.inputs)
    ob1 = a.results[a.results["engine"] == "ob1"]
    per_rank = ob1.groupby("rank").size()
    dense = bool(len(per_rank)) and int(per_rank.max()) > EVENTS_MAX
    many = len(ranks) > LINES_MAX
    if (dense or many) and len(ranks) <= HEATMAP_MAX:
        return _lengths_heatmap(a, ob1, ranks, name)
    fig, axes = new_figure(ncols=2, width=5.2, height=3.6)
    t = ob1["time_s"]
    edges = np.linspace(float(t.min()), float(t.max()), BINS + 1) if len(t) else np.zeros(2)
    for ax, col, queue in (
        (axes[0][0], "posted_length", "posted"),
        (axes[0][1], "unexpected_length", "unexpected"),
    ):
        binned = []
        for i, r in enumerate(ranks):
            sub = ob1[ob1["rank"] == r]
            color = f"C{i % 10}"
            if many:
                binned.append(binned_max(sub["time_s"], sub[col], edges))
                continue
            ax.step(sub["time_s"], sub[col], where="post", color=color, lw=1, label=f"rank {r}")
            m = measured(
                a.run.raw_dir, r, a.trace.t0_ns, align=lambda ns, r=r: a.trace.align_ns(r, ns)
            )
            m = m[m["queue"] == queue].groupby("time_s")["length"].sum()
            if len(m):
                ax.plot(m.index, m.to_numpy(), ".", color=color, ms=4)
        if many and binned:
            grid = np.vstack(binned)
            ax.fill_between(
                edges[:-1],
                np.min(grid, axis=0),
                grid.max(axis=0),
                step="post",
                color="tab:blue",
                alpha=0.25,
                lw=0,
                label="min to max over ranks",
            )
            ax.stairs(
                np.median(grid, axis=0), edges, color="tab:blue", lw=1, label="median over ranks"
            )
            top = np.unravel_index(int(np.argmax(grid)), grid.shape)
            ax.annotate(f"rank {ranks[top[0]]}", (edges[top[1]], float(grid.max())))
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"{queue} queue length")
        ax.set_title(f"{queue} queue")
        ax.yaxis.get_major_locator().set_params(integer=True)  # lengths are whole
        ax.grid(True, alpha=0.3)
    legend_below(fig)
    return (
        figure_html(fig, f"queue lengths over time per rank, {name}")
        + "<p class='note'>"
        + (
            f"{len(ranks)} ranks: per 1/{BINS} of the run, each rank's longest queue; the "
            "band spans the ranks, the line is their median."
            if many
            else "Lines: the ob1 engine's replay of the trace (all communicators); dots: Open "
            "MPI's ob1 pvars on MPI_COMM_WORLD (specific-source receives)."
        )
        + "</p>"
    )


#: Up to this many receiving ranks the dense queue lengths are a rank x time heatmap.
HEATMAP_MAX = 64


def _lengths_heatmap(a, ob1, ranks, name):
    from matplotlib import ticker

    t = ob1["time_s"]
    edges = np.linspace(float(t.min()), float(t.max()), BINS + 1)
    fig, axes = new_figure(
        nrows=2, width=7.5, height=max(1.8, 0.6 + 0.22 * len(ranks)), sharex=True
    )
    for ax, col, queue in (
        (axes[0][0], "posted_length", "posted"),
        (axes[1][0], "unexpected_length", "unexpected"),
    ):
        grid = np.vstack(
            [
                binned_max(
                    ob1.loc[ob1["rank"] == r, "time_s"], ob1.loc[ob1["rank"] == r, col], edges
                )
                for r in ranks
            ]
        )
        im = ax.imshow(
            grid,
            aspect="auto",
            cmap="viridis",
            interpolation="nearest",
            extent=(edges[0], edges[-1], len(ranks) - 0.5, -0.5),
            vmin=0,
            vmax=max(1.0, float(grid.max())),
        )
        cb = fig.colorbar(im, ax=ax, pad=0.01)
        cb.set_label("longest", labelpad=2)
        cb.locator = ticker.MaxNLocator(integer=True, nbins=4)
        cb.update_ticks()
        step = -(-len(ranks) // 16)
        ax.set_yticks(range(0, len(ranks), step), [str(r) for r in ranks[::step]])
        ax.set_ylabel("rank")
        ax.set_title(f"{queue} queue length, longest per 1/{BINS} of the run", loc="left")
    axes[1][0].set_xlabel("time (s)")
    fig.tight_layout()
    return (
        figure_html(fig, f"queue lengths over time, rank by time, {name}")
        + f"<p class='note'>The ob1 engine's replay of the trace, all communicators: each "
        f"cell is a rank's longest queue in 1/{BINS} of the run.</p>"
    )


def _depth_figure(a, run_name):
    fig, axes = new_figure(ncols=2, width=5.2, height=3.6)
    for ax, kind, name in (
        (axes[0][0], "arrive", "posted-receive queue (per message)"),
        (axes[0][1], "post", "unexpected queue (per receive)"),
    ):
        sub = a.results[a.results["kind"] == kind]
        top = int(sub["depth"].max()) if len(sub) else 0
        edges = np.arange(top + 2) - 0.5
        for engine, g in sub.groupby("engine", sort=False):
            ax.hist(
                g["depth"],
                bins=edges,
                histtype="step",
                lw=1.5,
                color=ENGINE_COLORS.get(engine, "black"),
                label=engine,
            )
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)  # a depth seen once stays in view
        ax.set_xlabel("search depth (entries passed over)")
        ax.set_ylabel("count")
        ax.set_title(name, fontsize=9)
        ax.grid(True, alpha=0.3)
    legend_below(fig)
    return figure_html(fig, f"search depth distributions per engine, {run_name}")


def _render_run(run):
    a = analyze(run.path, trials=TRIALS)
    if a.results.empty:  # a trace of collectives only: no queue to replay
        return (
            f"<h3>{html.escape(run.path.name)}</h3><p>The trace holds no point-to-point "
            "message, so there are no matching queues to replay.</p>"
        )
    equal, quiet = pvar_agreement(a.pvars)
    arrivals = _arrivals_text(a.inputs)
    if quiet:
        pv = (
            f"Simulated ob1 queue lengths equal the ob1 pvars at {equal} of {quiet} quiet "
            f"snapshot values (no traced call within 10 ms)."
        )
    elif not a.pvars.empty:
        pv = "No snapshot fell in a quiet moment, so none is compared with the pvars."
    else:
        pv = "This MPI reports no ob1 queue pvars."
    cols = [
        "rank",
        "engine",
        "messages",
        "receives",
        "prq_avg_depth",
        "prq_max_depth",
        "umq_avg_depth",
        "umq_max_depth",
        "searched",
        "max_posted",
        "max_unexpected",
    ]
    rest = [_depth_figure(a, run.path.name), html_table(a.summary[cols])]
    if not a.trials.empty:
        rest.append(
            html_table(
                trial_summary(a.trials),
                caption=f"{TRIALS} random interleavings of the posting threads",
            )
        )
    return "\n".join(
        [
            f"<h3>{html.escape(run.path.name)}</h3>",
            f"<p>{html.escape(arrivals)} {html.escape(pv)}</p>",
            _lengths_figure(a, run.path.name),
            more("search depths per engine, the summary per rank", "\n".join(rest)),
        ]
    )


def _arrivals_text(inputs):
    """When each message arrives in the replay, said once for the ranks that share it."""
    groups = {}
    for r, ri in inputs.items():
        groups.setdefault((ri.arrivals, ri.latency), []).append(r)
    said = []
    for (arrivals, latency), ranks in groups.items():
        who = (
            "every rank"
            if len(groups) == 1
            else f"rank{'s' * (len(ranks) != 1)} {', '.join(map(str, ranks))}"
        )
        said.append(f"{who}: {arrivals}, modelled latency {latency}")
    return "Message arrivals in the replay: " + "; ".join(said) + "."


def render(runs, context):
    traced = [r for r in runs if any(r.raw_dir.glob("trace.*.bin"))]
    return per_run(traced, _render_run) if traced else ""
