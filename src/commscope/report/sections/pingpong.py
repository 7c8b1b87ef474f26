"""Ping-pong: measured versus modeled time per locality and protocol (Bienz et al. 2018, Figs. 2-3)."""

import html

from ...models.message_time import message_time
from ...predict.pingpong_medians import pingpong_medians
from ..figures import figure_html, legend_below, new_figure
from ..gaps import model_gap_note
from ..tables import html_table
from . import more, report_machine_model
from ...units import format_bytes
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"pingpong"}
TITLE = "Point-to-point: ping-pong and the postal / max-rate models"
ORDER = 10
PROTOCOL_MARKERS = {"short": "o", "eager": "s", "rendezvous": "^"}
PROTOCOL_COLORS = {"short": "tab:blue", "eager": "tab:orange", "rendezvous": "tab:green"}


def measured_and_modelled(runs, machine_model):
    """The section's data: the runs' medians (predict.pingpong_medians) with the modelled
    time (``model_s``, models.message_time) and the protocol of each size; NaN and ""
    where there is no machine model or it has no parameters for the locality."""
    med = pingpong_medians(runs).assign(model_s=float("nan"), protocol="")
    for (loc, ppn), idx in med.groupby(["locality", "pairs"]).groups.items():
        if machine_model is None or not any(k[1] == loc for k in machine_model.params):
            continue
        t = message_time(machine_model, med.loc[idx, "size_bytes"].to_numpy(), loc, int(ppn))
        med.loc[idx, "model_s"] = t.time_s
        med.loc[idx, "protocol"] = t.protocol
    return med


def render(runs, context):
    machine_model, where = report_machine_model(context)
    med = measured_and_modelled(runs, machine_model)
    bars = "Median one-way time per size (bars: 10th-90th percentile of every repetition)"
    view = (
        "the same data as bandwidth, size / median time in MB/s (10<sup>6</sup> B/s), as "
        "osu_bw shows it"
    )
    if machine_model is not None:
        intro = (
            f"{bars} against the node-aware max-rate model (Bienz et al. 2018, eq. 2; the "
            "postal model where the machine model has no injection limit R_N), parameters "
            f"{html.escape(where)}. Colours mark the "
            "protocol each size falls in by the machine model's breakpoints; the middle panels "
            f"show the residuals (model - measured, in % of measured), the right ones {view}."
        )
    else:
        intro = f"{bars}; {html.escape(where)}, so no model is drawn. The right panels show {view}."
    parts = [f"<p>{intro}</p>"]
    rows = []
    groups = sorted(
        med.groupby(["locality", "pairs", "oversubscribed"]),
        key=lambda g: (g[0][2], g[0][1] != 1, g[0][0]),
    )  # 1 pair, not oversubscribed first
    for (loc, ppn, over), sub in groups:
        sizes = sub["size_bytes"].to_numpy()
        times = sub["median_s"].to_numpy()
        model, protos = sub["model_s"].to_numpy(), sub["protocol"].to_numpy()
        modelled = bool(np.isfinite(model).any())
        fig, ax = new_figure(ncols=3 if modelled else 2, width=4.0, height=3.6)
        a, *b, c = ax[0]
        for proto in dict.fromkeys(protos):
            m = protos == proto
            marker, color = PROTOCOL_MARKERS.get(proto, "o"), PROTOCOL_COLORS.get(proto, "black")
            what = f", {proto}" if proto else ""
            x = np.maximum(sizes[m], 1)
            yerr = [times[m] - sub["p10_s"].to_numpy()[m], sub["p90_s"].to_numpy()[m] - times[m]]
            a.errorbar(
                x,
                times[m],
                yerr=yerr,
                fmt=marker,
                ms=4,
                color=color,
                label=f"measured{what}",
                capsize=2,
            )
            # the osu_bw view: bytes / one-way time, where the bandwidth limits show
            c.plot(x, sizes[m] / times[m] / 1e6, marker, ms=4, color=color)
            if modelled:
                a.plot(x, model[m], "-", lw=1.5, color=color, alpha=0.7, label=f"model{what}")
                b[0].plot(x, 100 * (model[m] - times[m]) / times[m], marker, ms=4, color=color)
                c.plot(x, sizes[m] / model[m] / 1e6, "-", lw=1.5, color=color, alpha=0.7)
        title = f"{loc}, {ppn} pair(s)" + (", oversubscribed" if over else "")
        a.set(
            xscale="log",
            yscale="log",
            xlabel="message size (bytes)",
            ylabel="time (s)",
            title=title,
        )
        if modelled:
            b[0].axhline(0, color="k", lw=0.8)
            b[0].set(
                xscale="log",
                xlabel="message size (bytes)",
                ylabel="model - measured, % of measured",
                title="residuals",
            )
        c.set(
            xscale="log",
            yscale="log",
            xlabel="message size (bytes)",
            ylabel="size / one-way time (MB/s)",
            title="bandwidth view" + (", per pair" if ppn > 1 else ""),
        )
        legend_below(fig)
        parts.append(
            figure_html(
                fig,
                f"ping-pong {title}: measured"
                + (" vs modelled time and residuals" if modelled else " time and bandwidth"),
            )
        )
        if over:
            parts.append(
                "<p class='note'>More ranks than cores (oversubscribed): these times "
                "include time-slicing of the cores.</p>"
            )
        note = model_gap_note(
            [
                {"size": s, "measured_s": t, "model_s": mdl}
                for s, t, mdl in zip(sizes, times, model)
            ],
            "measured_s",
            "model_s",
            lambda r: format_bytes(r["size"]),
            f"model ({loc}, {ppn} pair(s))",
        )
        if note:
            parts.append(f"<p class='note'>{html.escape(note)}</p>")
        rows += [
            dict(
                locality=loc,
                pairs=ppn,
                size_bytes=s,
                protocol=proto,
                measured_s=t,
                bandwidth_Bps=s / t,
                model_s=mdl,
                rel_error=(mdl - t) / t,
            )
            for s, t, mdl, proto in zip(sizes, times, model, protos)
        ]
    table = html_table(
        rows, caption="measured" + (" and modelled" if machine_model else "") + " times per size"
    )
    first = [i for i, p in enumerate(parts) if p.startswith(("<figure", "<img"))]
    cut = first[1] if len(first) > 1 else len(parts)  # the first group's figure and notes
    others = len(groups) - 1
    what = f"{others} more locality / pair count{'s' * (others != 1)} and " if others else ""
    return "\n".join(parts[:cut]) + more(
        what + "the times per size", "\n".join(parts[cut:]) + table
    )
