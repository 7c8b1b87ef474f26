"""Report section for bsp runs: runtime variability, prediction vs measurement.

Dominguez-Trujillo (2021), Figs 3.7-3.17: for each experiment (workload and its
parameters) measured at several scales, the smallest scale calibrates the three
bootstraps, and the predicted runtime medians and intervals are drawn against the
measured runtimes at every scale, with the inside/outside verdicts in a table.
Sec. 3.3.4: barrier time next to workload time.
"""

import html

from ...units import format_bytes, format_seconds
from ...predict.variability import KINDS as BOOTSTRAP_KINDS
from ...predict.variability import (
    experiment_key,
    measured_summary,
    note_refs,
    predict_variability,
    run_ranks,
)
from ..figures import figure_html, hold_scale, legend_below, new_figure
from ..tables import html_table
from . import more
from ...lazy import lazy

pd = lazy("pandas")


KINDS = {"bsp"}
TITLE = "Runtime variability (bulk-synchronous harness)"
ORDER = 60
#: Fewer replicas than the CLI default keep report generation quick; seeded.
REPLICAS = 2000
SEED = 0


def _label(key):
    d = dict(key)
    parts = [str(d.get("workload"))]
    if d.get("workload") in ("ftq", "fwq"):
        parts.append(
            f"{d.get('dist')}(mean {format_seconds(d.get('mean'))}, "
            f"sd {format_seconds(d.get('sd'))})"
        )
    else:
        parts.append(f"{d.get('dim')} x {d.get('dim')}, reps {d.get('reps')}")
    parts.append(f"halo {format_bytes(d.get('halo_bytes'))}")
    return ", ".join(parts)


def _barrier_table(runs):
    rows = []
    for run in runs:
        iv = run.table("intervals")
        busy = iv["interval_s"].sum() + iv["barrier_s"].sum()
        rows.append(
            {
                "run": run.path.name,
                "ranks": run_ranks(run),
                "median workload_s": float(iv["workload_s"].median()),
                "median halo_s": float(iv["halo_s"].median()),
                "median barrier_s": float(iv["barrier_s"].median()),
                "barrier share": float(iv["barrier_s"].sum() / busy) if busy > 0 else 0.0,
            }
        )
    return pd.DataFrame(rows)


def _figure(pred, meas, label):
    data = pred[pred["statistic"] == "runtime_s"]
    kinds = [k for k in BOOTSTRAP_KINDS if k in set(data["kind"])]
    fig, axes = new_figure(ncols=len(kinds), width=3.8, height=3.2, sharey=True)
    # one runtime axis for every bootstrap, holding every interval: panels side by side compare
    keep = [*data["ci_low_s"], *data["ci_high_s"], *data["median_s"]]
    for ax, kind in zip(axes[0], kinds):
        ax.set_yscale("log")  # a wide interval and the medians inside it both read
        d = data[data["kind"] == kind].sort_values("target_ranks")
        ok = d["median_s"].notna()
        ax.fill_between(
            d["target_ranks"][ok],
            d["ci_low_s"][ok],
            d["ci_high_s"][ok],
            alpha=0.25,
            color="tab:blue",
            label=f"{d['confidence'].iloc[0]:.0%} interval",
        )
        ax.plot(
            d["target_ranks"][ok],
            d["median_s"][ok],
            "o-",
            color="tab:blue",
            label="predicted median",
        )
        over = meas["oversubscribed"].astype(bool)
        ax.scatter(
            meas["ranks"][~over],
            meas["runtime_s"][~over],
            color="tab:red",
            marker="x",
            zorder=3,
            label="measured runs",
        )
        if over.any():
            ax.scatter(
                meas["ranks"][over],
                meas["runtime_s"][over],
                color="tab:orange",
                marker="^",
                zorder=3,
                label="measured, oversubscribed",
            )
        ax.set_xscale("log", base=2)
        hold_scale(
            ax,
            zip(
                meas["ranks"],
                meas["runtime_s"],
                over,
                over.map({True: "tab:orange", False: "tab:red"}),
            ),
            keep=keep,
            unit="s",
        )
        ax.set_xlabel("ranks")
        ax.set_title(f"{kind} bootstrap")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("runtime, sum of interval maxima (s)")
    legend_below(fig, ncol=4)
    return figure_html(fig, f"predicted vs measured runtime, {label}")


def _repeats_text(repeats):
    if not repeats:
        return "; one run: run-to-run spread not represented"
    return f", with {len(repeats)} repeat(s) for the run-to-run spread"


def render(runs, context):
    key, rest = [], []
    summary = measured_summary(runs)
    rest.append("<h3>Runs</h3>")
    rest.append(html_table(summary.drop(columns=["run"])))
    if summary["oversubscribed"].any():
        rest.append(
            "<p>Some runs had more ranks than cores (oversubscribed): their "
            "maxima include time-slicing, not only system noise.</p>"
        )
    rest.append("<h3>Barrier time (Sec. 3.3.4)</h3>")
    rest.append(html_table(_barrier_table(runs)))

    groups = {}
    for run in runs:
        groups.setdefault(experiment_key(run), []).append(run)
    for key_, members in groups.items():
        label = _label(key_)
        scales = sorted({run_ranks(r) for r in members})
        meas = summary[summary["run"].isin([str(r.path) for r in members])]
        if len(scales) < 2:
            rest.append(
                f"<h3>{html.escape(label)}</h3><p>Measured at {scales[0]} rank(s) only: "
                "run the same experiment at other scales to compare predictions with "
                "measurements.</p>"
            )
            continue
        base_runs = sorted(
            (r for r in members if run_ranks(r) == scales[0]), key=lambda r: r.meta["start_time"]
        )
        cal = base_runs[0]
        try:
            pred = predict_variability(
                cal,
                scales,
                kind="all",
                replicas=REPLICAS,
                seed=SEED,
                compare=[r for r in members if run_ranks(r) != scales[0]],
                repeats=base_runs[1:],
            )
        except Exception as exc:  # a report must not die on one unfit experiment
            rest.append(
                f"<h3>{html.escape(label)}</h3><p>No prediction: {html.escape(str(exc))}</p>"
            )
            continue
        # the first experiment's figure is the section's key figure; the rest below it
        out = key if not key else rest
        out.append(f"<h3>{html.escape(label)}</h3>")
        out.append(
            f"<p>Calibrated on <code>{html.escape(cal.path.name)}</code> "
            f"({scales[0]} rank(s), {pred.attrs['intervals']} intervals"
            f"{_repeats_text(base_runs[1:])}); {REPLICAS} replicas, seed {SEED}. "
            "Each interval is for one target run's median interval maximum or "
            "runtime (autocorrelated intervals resampled in blocks, run-to-run "
            "spread from repeated calibration runs).</p>"
        )
        out.append(_figure(pred, meas, label))
        refs, notes = note_refs(pred["note"])
        table = pred.assign(
            notes=[r or "-" for r in refs],
            statistic=pred["statistic"].map(STATISTICS).fillna(pred["statistic"]),
        )
        cols = [
            "kind",
            "statistic",
            "target_ranks",
            "median_s",
            "ci_low_s",
            "ci_high_s",
            "measured_runs",
            "measured_median_s",
            "inside",
            "median_error",
            "notes",
        ]
        detail = html_table(table, cols)
        if notes:
            detail += (
                '<ol class="notes">'
                + "".join(f"<li>{html.escape(n)}</li>" for n in notes)
                + "</ol>"
            )
        if out is key:
            key.append(more(f"predicted vs measured, every scale and bootstrap ({label})", detail))
        else:
            rest.append(detail)
    return "\n".join(key) + more(
        "the other experiments, the runs and their barrier time", "\n".join(rest)
    )


#: The statistics a prediction is made for, in words.
STATISTICS = {"interval_max_s": "median interval maximum", "runtime_s": "runtime"}
