"""Partitioned runs: measured vs modeled effective bandwidth and elapsed time (Dominguez-Trujillo 2021, Figs 4.3-4.5).

Per run, two panels against total buffer size: effective bandwidth (size / elapsed,
eq. 4.3) and the elapsed time from the last thread's completion to the end of the
transfer. Measured means (bars: 5th-95th percentile of the runs) for the MPI-4
partitioned send, one Isend per partition and the single-send baseline; with a
machine model (``context["machine_model"]``, else one fitted from ping-pong runs in the same
report) the model lines: Algorithm 1, Monte Carlo with the measured thread times, and
the single send. Green bands mark the sizes where an early-bird send beat the single
send in the measurement; triangles along the bottom mark where the model says so.
"""

import html

from ...errors import InputError
from ...units import format_bytes, format_number, format_seconds
from ...predict.partitioned import (
    accuracy,
    comparison_table,
    measured_rows,
    predict_partitioned,
    range_text,
    win_ranges,
)
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import more, report_machine_model
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"partitioned"}
TITLE = "Partitioned communication: early-bird sends vs a single send"
ORDER = 30
STYLE = {
    "partitioned": ("tab:blue", "o"),
    "isend": ("tab:orange", "s"),
    "single": ("tab:gray", "^"),
}
MODEL_STYLE = {
    ("calibrated", "partitioned"): ("tab:red", "-", "model: calibrated terms"),
    ("calibrated", "single"): ("tab:red", ":", "model: calibrated single send"),
    ("analytic", "partitioned"): ("tab:blue", "-", "model: Algorithm 1"),
    ("monte-carlo-measured", "partitioned"): (
        "tab:purple",
        "--",
        "model: Monte Carlo, measured times",
    ),
    ("analytic", "single"): ("tab:gray", ":", "model: single send"),
}


def _spans(ax, sizes, mask, **kw):
    """Shade each run of consecutive sizes where ``mask`` holds (geometric half-steps)."""
    sizes = np.asarray(sizes, float)
    label = kw.pop("label", None)
    for i in np.flatnonzero(mask):
        lo = sizes[i] / np.sqrt(sizes[i] / sizes[i - 1]) if i > 0 else sizes[i] / 1.3
        hi = sizes[i] * np.sqrt(sizes[i + 1] / sizes[i]) if i + 1 < len(sizes) else sizes[i] * 1.3
        ax.axvspan(lo, hi, lw=0, label=label, **kw)
        label = None  # one legend entry for all the shaded spans


def _term_cell(t):
    if t.get("by_size"):
        sizes = sorted(int(k) for k in t["by_size"])
        return (
            f"{len(sizes)} sizes, {format_bytes(sizes[0])} .. {format_bytes(sizes[-1])}: "
            + ", ".join(f"{format_bytes(k)} {format_seconds(t['by_size'][str(k)])}" for k in sizes)
        )
    return "-" if t.get("value") is None else format_number(t["value"])


def _held_html(df, table):
    """The model's terms, then size, measured, model, ratio and verdict per size."""
    a = df.attrs
    out = []
    if a.get("model") == "calibrated":
        rows = [
            {
                "term": k,
                "value": (format_seconds(t["value"]) if k == "pready_s" else _term_cell(t)),
                "samples": t.get("n_samples"),
                "quality": ("FLAGGED: " + "; ".join(t["flags"])) if t.get("flags") else "ok",
            }
            for k, t in a.get("terms", {}).items()
        ]
        cal = a.get("calibration", {})
        runs = ", ".join(str(r.get("path", r)) for r in cal.get("source_runs", []))
        out.append(
            html_table(
                rows,
                ["term", "value", "samples", "quality"],
                caption=f"calibrated terms (from {runs}; {cal.get('threads')} "
                f"threads, compute {cal.get('compute_s')} s)",
            )
        )
        out += [f'<p class="note">{html.escape(n)}</p>' for n in a.get("notes", [])]
    meas = table["measured_method"].iloc[0]
    rows = [
        {
            "size": format_bytes(int(r["size_bytes"])),
            f"measured {meas}": format_seconds(r[f"measured_{meas}_s"]),
            "model": format_seconds(r["model_partitioned_s"]),
            "ratio": r["ratio_partitioned"],
            "measured single": format_seconds(r["measured_single_s"]),
            "model single": format_seconds(r["model_single_s"]),
            "ratio single": r["ratio_single"],
            "verdict (measured / model)": "{} / {}".format(
                _verdict_text(r.get("measured_verdict")), _verdict_text(r.get("model_verdict"))
            )
            + ("" if r["verdict_agrees"] in (True, None) else " DIFFERS"),
        }
        for _, r in table.iterrows()
    ]
    acc = accuracy(table)
    out.append(
        html_table(
            rows,
            caption=f"measured vs model ({a.get('model')}), elapsed time "
            "from the last thread ready to the transfer's end",
        )
    )
    out.append(
        f"<p>Sizes &ge; {format_bytes(acc['min_size_bytes'])}: median measured/model "
        f"{acc['median_ratio']:.2f}, farthest {acc['worst_ratio']:.2f}; verdict differs "
        f"at {', '.join(map(format_bytes, acc['verdicts_differ_at'])) or 'no size'}.</p>"
    )
    return "".join(out)


def _verdict_text(verdict):
    return {
        "tie": "tie (within noise)",
        "early-bird": "early-bird wins",
        "single": "single wins",
    }.get(verdict, "-")


def _render_run(run, machine_model):
    p = run.meta["parameters"]
    head = (
        f"<h3>{html.escape(run.path.name)}</h3><p>{p['threads']} threads, {p['dist']} "
        f"compute mean {format_seconds(p['compute_s'])}, sd {format_seconds(p['sigma_s'])} "
        f"({html.escape(str(p.get('compute_mode', 'sleep')))}), "
        f"{p['runs_per_size']} runs per size.</p>"
    )
    notes = []
    try:
        status = run.table("methods")
        for _, r in status[status["status"] == "skipped"].iterrows():
            notes.append(
                f"<p>Method <b>{html.escape(r['method'])}</b> skipped: "
                f"{html.escape(str(r.get('note', '')))}</p>"
            )
    except InputError:
        pass
    calibration = bool(p.get("calibration"))
    if calibration:
        notes.append(
            "<p>A calibration run (threads finishing at staggered times): it measures "
            "the calibrated model's terms (<code>commscope fit</code>), so it is not "
            "predicted.</p>"
        )
        df = measured_rows(run)
    elif machine_model is not None:
        try:
            df = predict_partitioned(run, machine_model=machine_model, replicas=2000)
        except InputError as exc:
            # said, not silent: the calibrated model cannot be had (a missing term, or a
            # machine model fitted from this very run); the thesis's model may still be
            notes.append(f"<p>No calibrated model: {html.escape(str(exc))}</p>")
            try:
                df = predict_partitioned(
                    run, machine_model=machine_model, replicas=2000, model="postal"
                )
                notes.append(
                    "<p>Shown instead: Algorithm 1 fed the ping-pong postal link "
                    "(the thesis's model, uncalibrated).</p>"
                )
            except InputError as exc2:
                notes.append(f"<p>No model: {html.escape(str(exc2))}</p>")
                df = measured_rows(run)
    else:
        df = measured_rows(run)
    meas = df[df["source"] == "measured"]
    fig, axes = new_figure(ncols=2, width=5.8)
    bw_ax, el_ax = axes[0]
    for method, (color, marker) in STYLE.items():
        sub = meas[meas["method"] == method].sort_values("size_bytes")
        if sub.empty:
            continue
        x = sub["size_bytes"].to_numpy(float)
        el = sub["elapsed_s"].to_numpy()
        yerr = [el - sub["elapsed_p05_s"].to_numpy(), sub["elapsed_p95_s"].to_numpy() - el]
        el_ax.errorbar(
            x, el, yerr=yerr, fmt=marker, ms=4, color=color, capsize=2, label=f"measured: {method}"
        )
        bw_ax.plot(
            x,
            sub["effective_bandwidth_Bps"] / 1e6,
            marker,
            ms=4,
            color=color,
            label=f"measured: {method}",
        )
    calibrated = (df["source"] == "calibrated").any()
    for (source, method), (color, ls, label) in MODEL_STYLE.items():
        if calibrated and source != "calibrated":  # the model the verdicts stand by, only:
            continue  # Algorithm 1 and Monte Carlo are in the table below
        sub = df[(df["source"] == source) & (df["method"] == method)].sort_values("size_bytes")
        if sub.empty:
            continue
        x = sub["size_bytes"].to_numpy(float)
        el_ax.plot(x, sub["elapsed_s"], ls, color=color, lw=1.4, label=label)
        bw_ax.plot(x, sub["effective_bandwidth_Bps"] / 1e6, ls, color=color, lw=1.4, label=label)
    table = comparison_table(df)
    held = "" if calibration or machine_model is None else _held_html(df, table)
    sizes = table["size_bytes"].to_numpy(float)
    early = "measured_partitioned_beats_single"
    if table[early].isna().all():
        early = "measured_isend_beats_single"
    meas_win = table[early].fillna(False).astype(bool).to_numpy()
    model_col = "model_beats_single" if calibrated else "analytic_beats_single"
    model_win = (
        table[model_col].fillna(False).astype(bool).to_numpy()
        if table["model_partitioned_s"].notna().any()
        else np.zeros(len(table), bool)
    )
    for ax in (bw_ax, el_ax):
        _spans(
            ax,
            sizes,
            meas_win,
            color="tab:green",
            alpha=0.12,
            label="measured: early-bird wins" if ax is bw_ax else None,
        )
        if model_win.any():
            ax.plot(
                sizes[model_win],
                np.full(model_win.sum(), 0.02),
                "^",
                color="tab:green",
                ms=6,
                transform=ax.get_xaxis_transform(),
                label="model: early-bird wins",
            )
        ax.set(xscale="log", yscale="log", xlabel="total buffer size (bytes)")
    bw_ax.set(ylabel="effective bandwidth (MB/s)", title="effective bandwidth (eq. 4.3)")
    el_ax.set(ylabel="elapsed time (s)", title="last thread ready -> transfer complete")
    legend_below(fig, ncol=4)  # inside, the legend hid points and the "wins" markers
    ranges = win_ranges(table)
    label = early[: -len("_beats_single")]

    wins = (
        f"<p>Early-bird send beats the single send (lower elapsed time; measured: the "
        f"median run): measured "
        f"({html.escape(label.replace('measured_', ''))}) {range_text(ranges.get(label), format_bytes)}"
        + (
            f"; Algorithm 1 {range_text(ranges.get('analytic'), format_bytes)}; Monte Carlo "
            f"{range_text(ranges.get('mc'), format_bytes)}"
            if table["analytic_partitioned_s"].notna().any()
            else ""
        )
        + ".</p>"
    )
    return (
        head
        + "".join(notes)
        + figure_html(
            fig,
            f"partitioned {run.path.name}: effective bandwidth and elapsed time per buffer "
            "size, early-bird sends vs a single send",
        )
        + wins
        + more(
            "the model's terms, measured vs model per size, every model's elapsed time",
            held
            + html_table(
                table,
                ["size_bytes"] + [c for c in table.columns if c.endswith("_s")],
                caption="elapsed time per size, measured and modelled",
            ),
        )
    )


def render(runs, context):
    machine_model, where = report_machine_model(context)
    intro = (
        "<p>Dominguez-Trujillo (2021) Ch. 4: the sender's threads finish at random times; "
        "an early-bird send (MPI-4 partitioned or one Isend per partition) starts moving "
        "data before the slowest thread is done, the single send waits for the join. "
        "Effective bandwidth = buffer size / time from the last thread's completion to "
        "the end of the transfer at the receiver (eq. 4.3); MB/s = 10<sup>6</sup> B/s. "
    )
    intro += (
        f"Model parameters {html.escape(where)}.</p>"
        if machine_model is not None
        else f"{html.escape(where[0].upper() + where[1:])}: measured only (pass --machine-model to "
        "overlay the model).</p>"
    )
    # every measured run in the open (the study's: sleeping and busy threads), the
    # calibrations behind a disclosure
    main = [r for r in runs if not r.meta.get("parameters", {}).get("calibration")] or runs[:1]
    others = [r for r in runs if r not in main]
    out = intro + "".join(_render_run(r, machine_model) for r in main)
    if others:
        out += more(
            f"{len(others)} more run{'s' * (len(others) != 1)}: "
            + ", ".join(r.path.name for r in others),
            "".join(_render_run(r, machine_model) for r in others),
        )
    return out
