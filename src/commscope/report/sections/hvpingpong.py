"""HighVolumePingPong runs: measured vs modelled, ordered and reversed receives (Bienz et al. 2018, Figs. 4-5).

Per run and message size, two panels against the message count n: receives posted
in send order (left) and reversed (right). Measured medians (bars: 25th-75th
percentile of the repetitions); with a machine model (``context["machine_model"]``,
else one fitted from ping-pong runs in the same report) the max-rate model alone
(n messages, each alpha + s / R_b) and max-rate plus queue search (gamma n ordered,
gamma n^2 reversed, eq. 3), with gamma fitted from the run's own ordered and
reversed samples (:func:`commscope.models.fitting.fit_gamma`). Without a machine model
the reversed panel shows a model that needs no machine model: the measured ordered time plus
gamma (n^2 - n). Below, per run (so per MPI), the form fitted by fit quality
(models/queue_search.py): every candidate's scores and the residuals per depth next to
the paper's model (Bienz et al. 2018), and the ob1 queue lengths when the run read them (--queues).
"""

import html

from ...bench.hvpingpong import model_table
from ...errors import InputError
from ...models.fitting import fit_queue_search
from ...models.queue_search import PARAMS
from ...units import format_bytes, format_seconds
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from ..gaps import model_gap_note
from . import more, per_run, report_machine_model
from ...lazy import lazy

np = lazy("numpy")


KINDS = {"hvpingpong"}
TITLE = "HighVolumePingPong: queue search (Bienz et al. 2018, Sec. 4.1)"
ORDER = 25


def _panel(ax, sub, order, show_models, qs=None, label=""):
    m = sub[sub["order"] == order].sort_values("n_messages")
    if m.empty:
        ax.set_visible(False)
        return
    n = m["n_messages"].to_numpy(float)
    med = m["median_s"].to_numpy()
    err = np.vstack([med - m["q25_s"].to_numpy(), m["q75_s"].to_numpy() - med])
    ax.errorbar(
        n, med, yerr=err, fmt="o", color="black", ms=4, capsize=2, label="measured (median)"
    )
    if show_models and m["maxrate_s"].notna().any():
        ax.plot(n, m["maxrate_s"], "-", color="tab:blue", label="max-rate model")
        if m["queue_s"].notna().any():
            ax.plot(n, m["model_s"], "--", color="tab:red", label="max-rate + queue search")
    if qs is not None and order in qs.orders and (m["size_bytes"] == qs.size_bytes).all():
        grid = np.unique(np.geomspace(n.min(), n.max(), 200).round())
        ax.plot(
            grid, qs.time(grid, order), "-.", color="tab:purple", label="form fitted to this MPI"
        )
    if order == "reversed" and m["ordered_plus_queue_s"].notna().any():
        ax.plot(
            n,
            m["ordered_plus_queue_s"],
            ":",
            color="tab:green",
            label="measured ordered + gamma (n^2 - n)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages n")
    ax.set_ylabel("one-way time (s)")
    ax.set_title(
        f"{label}, receives {'in send order' if order == 'ordered' else 'reversed'}"
        if label
        else f"receives {'in send order' if order == 'ordered' else 'reversed'}"
    )
    ax.grid(True, which="both", alpha=0.3)


def _fit_run(run, samples):
    """The queue-search model of this run (its own MPI), or None when it cannot be fitted."""
    if not (
        set(samples["order"]) >= {"ordered", "reversed"} or samples["n_messages"].nunique() > 1
    ):
        return None
    queues = run.table("queues") if "queues" in run.tables() else None
    try:
        return fit_queue_search(
            samples, queues, run.meta.get("mpi", {}).get("name") or "?", source=str(run.path)
        )
    except InputError:
        return None


def _fitted_form(run, qs, tab, machine_model=None):
    """The queue-search form chosen for this run's MPI, its scores and residuals per depth.

    Fitted from the run itself (models/queue_search.py): each order's median time per
    message count, the form with the lowest BIC. Beside each residual, the ratio the
    paper's model (max-rate + gamma, the curves above) reaches at that depth.
    """
    mpi = qs.mpi
    old = tab[tab["size_bytes"] == qs.size_bytes].set_index(["n_messages", "order"])["model_s"]
    parts = [
        f"<h4>Queue-search model fitted per MPI: {html.escape(mpi)}, "
        f"{html.escape(format_bytes(qs.size_bytes))} messages</h4>"
    ]
    other = machine_model.machine.get("mpi_name") if machine_model is not None else None
    if (
        other and other != mpi
    ):  # the paper's alpha and beta of another MPI say nothing about this one
        old = old * np.nan
        parts.append(
            f"<p class='note'>No column for the paper's model: the report's machine model was fitted "
            f"under {html.escape(other)}, this run ran under {html.escape(mpi)}.</p>"
        )
    forms, resid = [], []
    for order in ("ordered", "reversed"):
        if order not in qs.orders:
            continue
        o = qs.order_dict(order)
        params = ", ".join(f"{k} = {format_seconds(o['params'][k])}" for k in PARAMS[o["form"]])
        if o.get("breakpoint_messages"):
            params += f", breakpoint D = {o['breakpoint_messages']:.0f} messages"
        for form, sc in o["scores"].items():
            forms.append(
                {
                    "order": order,
                    "form": form + (" (chosen)" if form == o["form"] else ""),
                    "parameters": params if form == o["form"] else "-",
                    "k": sc["k"],
                    "BIC": sc["bic"],
                    "AIC": sc["aic"],
                    "cv_rel_error": sc["cv_rel_error"],
                    "max_rel_error": sc["max_rel_error"],
                }
            )
        for r in o["residuals"]:
            m_paper = old.get((r["n_messages"], order), np.nan)
            resid.append(
                {
                    "order": order,
                    "n_messages": r["n_messages"],
                    "measured_s": r["measured_s"],
                    "model_s": r["model_s"],
                    "ratio": r["ratio"],
                    "model_paper_s": m_paper,
                    "ratio_paper": r["measured_s"] / m_paper if m_paper and m_paper > 0 else np.nan,
                }
            )
        for flag in o.get("flags", []):
            parts.append(f"<p class='note'>{order}: {html.escape(flag)}</p>")
    parts.append(
        "<p>Forms (models/queue_search.py, docs/machine-model.md): per-message "
        "a + m n; linear a + m n + gamma n(n+1)/2 (Bienz et al. 2018, eq. 3); piecewise: gamma1 per "
        "entry walked while the queue is at most D deep, gamma2 beyond (a queue larger "
        "than the cache); knee: linear plus m2 per message beyond D (the transport's "
        "buffers full); two-regime: separate linear forms below and above D. Chosen: "
        "the fewest parameters within 6 of the lowest BIC (on log(model/measured)), a "
        "breakpoint counting as two; "
        "cv_rel_error is the median error at a depth left out of the fit.</p>"
    )
    parts.append(html_table(forms, caption=f"candidate forms, {mpi}"))
    parts.append(
        html_table(
            resid,
            caption=f"residuals per depth, {mpi}: ratio = measured / "
            "model (chosen form); ratio_paper = measured / the paper's model",
            folded=f"residuals per depth ({mpi}, {len(resid)} rows)",
        )
    )
    if qs.queues:
        parts.append(
            html_table(
                qs.queues,
                caption="ob1 queue lengths (MPI_T pvars) around each "
                "receive phase, median over the sampled repetition: which queue "
                "the search walked",
                folded="queue lengths per depth (ob1 pvars)",
            )
        )
    return "\n".join(parts)


def _render_run(run, machine_model, model_note, key=False):
    p = run.meta["parameters"]
    samples = run.table("samples")
    tab = model_table(samples, machine_model)
    qs = _fit_run(run, samples)
    gamma = tab.attrs.get("gamma_s")
    sizes = (
        "s = %s / n" % format_bytes(p["total_bytes"])
        if p.get("total_bytes")
        else "sizes " + ", ".join(map(format_bytes, p.get("sizes") or []))
    )
    parts = [
        f"<h3>{html.escape(run.path.name)}</h3>",
        f"<p>{p['pairs']} pair(s), {html.escape(p.get('layout', ''))}; "
        f"{html.escape(sizes)}; {p.get('iters', '?')} repetitions per cell after "
        f"{p.get('warmup', '?')} "
        f"warm-up; locality {html.escape(', '.join(sorted(set(samples['locality'].dropna().astype(str)))))}. "
        + (
            f"gamma fitted from this run (upper bound, eq. 3): {format_seconds(gamma)} per element. "
            if gamma is not None
            else ""
        )
        + (
            f"Model parameters {html.escape(model_note)}."
            if machine_model is not None
            else f"No max-rate curves: {html.escape(model_note)} "
            "(commscope fit, or single-pair ping-pong runs in the same report)."
        )
        + "</p>",
    ]
    groups = tab.groupby("size_bytes") if not p.get("total_bytes") else [("total", tab)]
    for size, sub in groups:
        fig, axes = new_figure(ncols=2, width=5.2, height=3.8)
        label = f"{format_bytes(size)} messages" if size != "total" else sizes
        for ax, order in zip(axes[0], ("ordered", "reversed")):
            _panel(ax, sub, order, machine_model is not None, qs, label)
        legend_below(fig)
        parts.append(
            figure_html(fig, f"HighVolumePingPong measured vs modelled, {label}, {run.path.name}")
        )
        for order in ("ordered", "reversed"):
            rows = sub[sub["order"] == order].to_dict("records")
            queue = order == "reversed" and sub["model_s"].notna().any()
            note = model_gap_note(
                rows,
                "median_s",
                "model_s" if queue else "maxrate_s",
                lambda r, o=order: f"n = {r['n_messages']}, {o}",
                "max-rate model with queue search" if queue else "max-rate model alone",
            )
            if note:
                parts.append(f"<p class='note'>{html.escape(note)}</p>")
    top = tab[tab["n_messages"] == tab["n_messages"].max()]
    cols = [
        c
        for c in (
            "n_messages",
            "size_bytes",
            "order",
            "median_s",
            "maxrate_s",
            "model_s",
            "ordered_plus_queue_s",
        )
        if c in top and top[c].notna().any()
    ]
    rest = [html_table(top[cols], caption="largest n: measured vs modelled")]
    if qs is not None:
        rest.append(_fitted_form(run, qs, tab, machine_model))
    if not key:
        return "\n".join(parts + rest)
    return "\n".join(parts) + more(
        "the largest n, the forms fitted to this MPI and their residuals", "\n".join(rest)
    )


def render(runs, context):
    machine_model, note = report_machine_model(context)
    first, others = runs[:1], runs[1:]
    out = per_run(first, lambda run: _render_run(run, machine_model, note, key=True))
    if others:
        out += more(
            f"{len(others)} more run{'s' * (len(others) != 1)}: "
            + ", ".join(r.path.name for r in others),
            per_run(others, lambda run: _render_run(run, machine_model, note)),
        )
    return out
