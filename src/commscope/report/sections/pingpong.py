"""Ping-pong: measured versus modeled time per locality and protocol (Bienz et al. 2018, Figs. 2-3)."""

import html

from ...models.p2p import maxrate_time
from ...output import format_value
from ..figures import figure_html, new_figure
from ..gaps import model_gap_note
from ...lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


KINDS = {"pingpong"}
TITLE = "Point-to-point: ping-pong and the postal / max-rate models"
ORDER = 10
PROTOCOL_MARKERS = {"short": "o", "eager": "s", "rendezvous": "^"}
PROTOCOL_COLORS = {"short": "tab:blue", "eager": "tab:orange", "rendezvous": "tab:green"}


def _profile(runs, context):
    if context.get("profile") is not None:
        return context["profile"], "given profile"
    from ...profile_fit import fit_runs
    return fit_runs([r.path for r in runs]), "fitted from these runs"


def _medians(runs):
    frames = []
    for r in runs:
        df = r.table("samples")
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    g = df.groupby(["locality", "pairs", "size_bytes"])["time_s"]
    return g.median().rename("median_s").to_frame().join(
        g.quantile(0.1).rename("p10_s")).join(g.quantile(0.9).rename("p90_s")).reset_index()


def model_times(profile, locality, sizes, ppn):
    """Node-aware max-rate time per size, with the protocol the profile assigns."""
    protos = profile.protocols_of(sizes, locality)
    out = np.empty(len(sizes))
    for i, (s, proto) in enumerate(zip(sizes, protos)):
        p = profile.params.get((proto, locality))
        if p is None:
            out[i] = np.nan
            continue
        rn = p.R_N_Bps if locality == "inter-node" or ppn > 1 else np.inf
        out[i] = maxrate_time(p.alpha_s, p.beta_s_per_byte, s, ppn=ppn, R_N_Bps=rn)
    return out, protos


def render(runs, context):
    profile, where = _profile(runs, context)
    med = _medians(runs)
    parts = [f"<p>Median one-way time per size (bars: 10th-90th percentile of every repetition) "
             f"against the node-aware max-rate model (Bienz et al. 2018, eq. 2, postal when ppn = 1), "
             f"parameters {html.escape(where)}. Colours mark the protocol each size falls in "
             f"by the fitted breakpoints; the middle panels show the residuals "
             f"(model - measured) / measured, the right ones the same data as bandwidth, "
             f"size / median time in MB/s (10<sup>6</sup> B/s), as osu_bw shows it.</p>"]
    rows = []
    for (loc, ppn), sub in med.groupby(["locality", "pairs"]):
        if (profile.breakpoints.get(loc) is None) and not any(k[1] == loc for k in profile.params):
            continue
        sizes = sub["size_bytes"].to_numpy()
        model, protos = model_times(profile, loc, sizes, ppn)
        fig, ax = new_figure(ncols=3, width=4.6)
        a, b, c = ax[0]
        for proto, marker in PROTOCOL_MARKERS.items():
            m = protos == proto
            if not m.any():
                continue
            x = np.maximum(sizes[m], 1)
            yerr = [sub["median_s"].to_numpy()[m] - sub["p10_s"].to_numpy()[m],
                    sub["p90_s"].to_numpy()[m] - sub["median_s"].to_numpy()[m]]
            color = PROTOCOL_COLORS[proto]
            a.errorbar(x, sub["median_s"].to_numpy()[m], yerr=yerr, fmt=marker, ms=4,
                       color=color, label=f"measured, {proto}", capsize=2)
            a.plot(x, model[m], "-", lw=1.5, color=color, alpha=0.7, label=f"model, {proto}")
            rel = (model[m] - sub["median_s"].to_numpy()[m]) / sub["median_s"].to_numpy()[m]
            b.plot(x, rel, marker, ms=4, color=color, label=proto)
            # the osu_bw view: bytes / one-way time, where the bandwidth limits show
            c.plot(x, sizes[m] / sub["median_s"].to_numpy()[m] / 1e6, marker, ms=4, color=color,
                   label=f"measured, {proto}")
            c.plot(x, sizes[m] / model[m] / 1e6, "-", lw=1.5, color=color, alpha=0.7)
        a.set(xscale="log", yscale="log", xlabel="message size (bytes)", ylabel="time (s)",
              title=f"{loc}, {ppn} pair(s)")
        a.legend(fontsize=7)
        b.axhline(0, color="k", lw=0.8)
        b.set(xscale="log", xlabel="message size (bytes)", ylabel="(model - measured) / measured",
              title="residuals")
        c.set(xscale="log", yscale="log", xlabel="message size (bytes)",
              ylabel="size / one-way time (MB/s)", title="bandwidth view")
        parts.append(figure_html(fig, f"ping-pong {loc}, {ppn} pair(s): measured vs modelled "
                                      "time and residuals"))
        note = model_gap_note([{"size": s, "measured_s": t, "model_s": mdl} for s, t, mdl
                               in zip(sizes, sub["median_s"], model)], "measured_s", "model_s",
                              lambda r: f"{r['size']} B", f"model ({loc}, {ppn} pair(s))")
        if note:
            parts.append(f"<p class='note'>{html.escape(note)}</p>")
        for s, t, mdl, proto in zip(sizes, sub["median_s"], model, protos):
            rows.append((loc, ppn, s, proto, t, mdl, (mdl - t) / t))
    parts.append(_table(rows))
    return "\n".join(parts)


def _table(rows):
    head = ("locality", "pairs", "size_bytes", "protocol", "measured_s", "model_s", "rel_error")
    out = ["<details><summary>measured and modeled times per size</summary><table><tr>"]
    out += [f"<th>{h}</th>" for h in head]
    out.append("</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(format_value(v))}</td>" for v in r) + "</tr>")
    out.append("</table></details>")
    return "".join(out)
