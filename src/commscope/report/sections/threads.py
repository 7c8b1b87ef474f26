"""Report section for ``threads`` runs: thread arrivals as Marts et al. (2023) Sec. 4 show them.

Per run: the percentile-over-iteration plot (Figs 4, 6, 8: min, 25th, median, 75th and
max of all thread compute times of each iteration, across ranks and trials), example
per-process-iteration histograms per class (Figs 5, 7, 9: normal, non-normal, laggard),
the per-iteration reclaimable time and idle ratio, and the metrics: normality rejection
fractions per aggregation level, laggards found vs injected, average reclaimable time
and both idle ratios (printed R/(n*max) and range-normalised R/(n*(max-min))).
"""

import html

from ...bench.threads import compare_with_injected, load_tables, recovery_table
from ...stats import arrivals
from ...units import format_percent, format_seconds
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import more, per_run
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"threads"}
TITLE = "Thread arrivals"
ORDER = 40
THRESHOLD_S = 1e-3  # the paper's laggard threshold
CLASS_COLORS = {"normal": "tab:blue", "non-normal": "tab:orange", "laggard": "tab:red"}
#: Fewer threads than this per process-iteration: a histogram is a few bars of height 1
#: that hide where the values lie; each thread is drawn as a point instead.
FEW_THREADS = 8


def _human_rows(table):
    """Rows whose metric is in seconds ("... (s)") written as times (``2.5 ms``)."""
    rows = table.to_dict("records")
    for row in rows:
        if row["metric"].endswith(" (s)"):
            row["metric"] = row["metric"][: -len(" (s)")]
            row["expected"], row["measured"] = (
                format_seconds(row["expected"]),
                format_seconds(row["measured"]),
            )
    return rows


def _percentile_figure(compute, name):
    pct = arrivals.iteration_percentiles(compute, (0, 25, 50, 75, 100))
    fig, axes = new_figure(width=7.0, height=3.6)
    ax = axes[0][0]
    for region, sub in pct.groupby("region", sort=True):
        x = sub["iteration"].to_numpy()
        ax.fill_between(
            x,
            sub["p0_s"] * 1e3,
            sub["p100_s"] * 1e3,
            color="tab:blue",
            alpha=0.15,
            label="min - max" if region == pct["region"].iloc[0] else None,
        )
        ax.fill_between(
            x,
            sub["p25_s"] * 1e3,
            sub["p75_s"] * 1e3,
            color="tab:blue",
            alpha=0.35,
            label="25th - 75th",
        )
        ax.plot(x, sub["p50_s"] * 1e3, color="tab:blue", lw=1.2, label=f"median ({region})")
    ax.set_xlabel("iteration")
    ax.set_ylabel("thread compute time (ms)")
    ax.set_title("percentiles per iteration, all ranks and trials")
    legend_below(fig)
    return figure_html(fig, f"thread compute-time percentiles per iteration, {name}")


def _histogram_figure(rep, name, threshold_s):
    hists = rep.histograms
    classes = [c for c in arrivals.CLASSES if c in hists]
    if not classes:
        need = arrivals.MIN_SIZE
        return (
            '<p class="note">No example process-iteration: none had a laggard (max - '
            f"median &gt; {format_seconds(threshold_s)}), none was found non-normal "
            f"(Shapiro-Wilk, from {need['shapiro']} threads) and none normal (all three "
            f"tests, from {max(need.values())} threads).</p>"
        )
    fig, axes = new_figure(ncols=len(classes), width=3.6, height=3.0)
    for ax, cls in zip(axes[0], classes):
        h = hists[cls]
        values = np.sort(np.asarray(h["values_s"])) * 1e3
        if len(values) < FEW_THREADS:  # a strip: every thread's time is a point
            ax.plot(
                values,
                np.arange(1, len(values) + 1),
                "o",
                color=CLASS_COLORS[cls],
                ms=7,
                label="one thread",
            )
            ax.set_ylim(0.5, len(values) + 0.5)
            ax.set_yticks(range(1, len(values) + 1))
            ax.set_ylabel("thread, fastest first (too few for a histogram)")
        else:
            edges = np.asarray(h["bin_edges_s"]) * 1e3
            ax.bar(
                edges[:-1],
                h["counts"],
                width=np.diff(edges),
                align="edge",
                color=CLASS_COLORS[cls],
                edgecolor="black",
                lw=0.4,
            )
            ax.set_ylabel("threads")
        median = np.median(values)
        ax.axvline(median, color="black", lw=0.8, label="median")
        ax.axvline(
            median + threshold_s * 1e3,
            color="black",
            lw=0.8,
            ls="--",
            label=f"laggard threshold: median + {format_seconds(threshold_s)}",
        )
        k = h["keys"]
        ax.set_title(
            f"{cls}: {100 * h['class_fraction']:.1f}% of iterations\n"
            f"trial {k['trial']} rank {k['rank']} iteration {k['iteration']}",
            fontsize=9,
        )
        ax.set_xlabel("compute time (ms)")
    legend_below(fig)
    return figure_html(fig, f"example per-process-iteration compute times per class, {name}")


def _idle_figure(rep, name):
    pi = rep.process_iterations
    per_it = pi.groupby("iteration", sort=True).agg(
        reclaimable_s=("reclaimable_s", "mean"), idle=("idle_ratio_printed", "mean")
    )
    fig, axes = new_figure(width=7.0, height=3.0)
    ax = axes[0][0]
    ax.plot(per_it.index, per_it["reclaimable_s"] * 1e3, color="tab:green", lw=1.0)
    ax.set_xlabel("iteration")
    ax.set_ylabel("reclaimable time (ms)", color="tab:green")
    ax2 = ax.twinx()
    ax2.plot(per_it.index, per_it["idle"], color="tab:purple", lw=0.8, ls="--")
    ax2.set_ylabel("idle ratio R/(n*max) (printed)", color="tab:purple")
    ax.set_title("mean over ranks and trials per iteration")
    return figure_html(fig, f"reclaimable time and idle ratio per iteration, {name}")


def _normality_rows(rep):
    rows = []
    for level in arrivals.LEVEL_KEYS:
        sub = rep.normality[rep.normality["level"] == level]
        row = {"level": level, "groups": int(sub["groups"].max()) if len(sub) else 0}
        for _, r in sub.iterrows():
            row[f"{r['test']} reject"] = (
                f"{100 * r['fraction_reject']:.0f}% of {r['groups_tested']}"
                if r["groups_tested"]
                else "n/a"
            )
        rows.append(row)
    return rows


def render_run(run, threshold_s=THRESHOLD_S):
    """HTML for one threads run."""
    name = run.path.name
    compute, injected = load_tables(run)
    rep = arrivals.analyse_arrivals(
        compute, threshold_s=threshold_s, source=run.table_file("compute")
    )
    rec = compare_with_injected(compute, injected, threshold_s)
    p = run.meta.get("parameters", {})
    over = run.meta.get("oversubscription", {})
    parts = [
        f"<h3>{html.escape(name)}</h3>",
        f'<p class="note">{p.get("ranks")} rank(s) x {p.get("threads")} thread(s), '
        f"{p.get('trials')} trial(s) x {p.get('iterations')} iteration(s); work "
        f"{html.escape(str(p.get('dist')))} mean {format_seconds(p.get('work_s'))} sd {format_seconds(p.get('sd_s'))}, "
        f"laggards p={p.get('laggard_prob')} extra {format_seconds(p.get('laggard_extra_s'))}, "
        f"compute={html.escape(str(p.get('compute')))}, seed {run.meta.get('seeds', {}).get('threads')}"
        + (
            f"; <b>oversubscribed</b> ({over.get('threads_per_node')} threads on "
            f"{over.get('cores')} cores)"
            if over.get("oversubscribed")
            else ""
        )
        + ".</p>",
        _percentile_figure(compute, name),
        '<p class="note">Percentile plot (Marts et al. Figs 4, 6, 8): every thread\'s compute '
        "time of each iteration across ranks and trials; no idle ratio involved.</p>",
        _summary_sentence(rep),
        MORE,
        _histogram_figure(rep, name, threshold_s),
        f'<p class="note">Example process-iterations per class (Figs 5, 7, 9): laggard = '
        f"max - median &gt; {format_seconds(threshold_s)}; normal = no laggard and "
        "D'Agostino, Shapiro-Wilk and Anderson-Darling all fail to reject at 5%; "
        "non-normal = no laggard and Shapiro-Wilk rejects. The representative is the median-spread member. "
        "No idle ratio involved.</p>",
        _idle_figure(rep, name),
        '<p class="note">Reclaimable time R = sum over threads of (latest - own) per '
        "process-iteration; the dashed line uses the <b>printed</b> idle ratio "
        "R/(n*max).</p>",
        "<h4>Normality (fraction of groups rejecting normality at 5%)</h4>",
        html_table(
            _normality_rows(rep),
            ["level", "groups", "dagostino reject", "shapiro reject", "anderson reject"],
        ),
        "<h4>Recovered vs injected</h4>",
        html_table(_human_rows(recovery_table(rec)), ["metric", "expected", "measured"]),
        f'<p class="note">Expected = the same metric on the intended (injected) times. '
        "Compute model accuracy, measured - intended: mean "
        f"{format_seconds(rec['error_mean_s'])}, median "
        f"{format_seconds(rec['error_median_s'])}, 95th percentile "
        f"{format_seconds(rec['error_p95_s'])}. The idle ratio as printed in the paper is "
        "R/(n*max); the range-normalised R/(n*(max-min)) is the one that comes close to the "
        "paper's reported ratios (with 2 threads it is always 0.5).</p>",
    ]
    s = rep.summary.to_dict("records")
    parts.append(
        html_table(
            s,
            [
                "region",
                "process_iterations",
                "avg_reclaimable_s",
                "idle_ratio_printed",
                "idle_ratio_range",
                "laggard_fraction",
                "mean_median_arrival_s",
            ],
        )
    )
    cut = parts.index(MORE)
    return "\n".join(x for x in parts[:cut] if x) + more(
        "example iterations per class, idle time, normality, recovered vs injected",
        "\n".join(x for x in parts[cut + 1 :] if x),
    )


#: Where a run's key figure ends and the rest (behind a disclosure) begins.
MORE = "<!-- more -->"


def _summary_sentence(rep):
    """What the threads did, in one sentence: laggards and reclaimable time per region."""
    out = []
    for r in rep.summary.to_dict("records"):
        out.append(
            f"{html.escape(str(r.get('region')))}: laggards in "
            f"{format_percent(r.get('laggard_fraction') or 0)} of the process-iterations; "
            f"on average {format_seconds(r.get('avg_reclaimable_s'))} reclaimable per "
            "process-iteration (the time threads wait for the last one)"
        )
    return "<p>" + "; ".join(out) + ".</p>" if out else ""


def render(runs, context):
    return per_run(runs, render_run)
