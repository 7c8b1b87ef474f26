"""The machine model: fitted parameters, breakpoints, fit quality.

The table of fitted parameters first (as ``commscope fit`` prints it); where the
protocols switch, the MPI's own limits, the queue search and the fit's warnings behind
a disclosure.
"""

import html
from pathlib import Path

from ...models.fitting import compare_breakpoints
from ...units import format_bytes, format_seconds, human_value
from ..tables import html_table
from . import more, report_machine_model

KINDS = {"pingpong"}
TITLE = "Machine model"
ORDER = 5


def render(runs, context):
    from ...machine_fit import machine_model_table

    machine_model, where = report_machine_model(context)
    if machine_model is None:
        return (
            f"<p>{html.escape(where[0].upper() + where[1:])}. The ping-pong section shows "
            "the measured times and bandwidth without a model.</p>"
        )
    e = html.escape
    out = [
        f"<p>Parameters {e(where)}: per protocol a latency alpha and a bandwidth "
        "(time = alpha + size / bandwidth), with 95 % bootstrap intervals.</p>",
        html_table(_compact(machine_model_table(machine_model))),
    ]
    rest = []
    bp = compare_breakpoints(machine_model)[["locality", "short_max_bytes", "eager_max_bytes"]]
    rest.append(
        "<p>Protocol breakpoints found in the data (largest size of each protocol): "
        + "; ".join(
            f"{e(r.locality)}: short up to {_size(r.short_max_bytes)}, eager up "
            f"to {_size(r.eager_max_bytes)}"
            for r in bp.itertuples()
        )
        + ".</p>"
    )
    limits = ", ".join(
        f"<code>{e(k)}</code> {format_bytes(v)}"
        for k, v in sorted(machine_model.mpi_eager_limits.items(), key=lambda kv: kv[1])
    )
    rest.append(
        f"<p>Eager / rendezvous limits the MPI reports through MPI_T: {limits or 'none'}.</p>"
    )
    for loc, sizes in machine_model.machine.get("regime_changes_bytes", {}).items():
        rest.append(
            f"<p>{e(loc)}: slower per byte above "
            f"{', '.join(map(format_bytes, sizes))} without a protocol change (caches or "
            f"memory bandwidth); the postal model of that protocol averages over it.</p>"
        )
    if machine_model.gamma_s is not None:
        ci = machine_model.machine.get("gamma_ci95_s")
        rest.append(
            f"<p>Queue search gamma = {format_seconds(machine_model.gamma_s)} per element"
            + (
                f" (95 % bootstrap interval {format_seconds(ci[0])} .. {format_seconds(ci[1])})"
                if ci
                else ""
            )
            + ".</p>"
        )
    if machine_model.delta_s_per_byte is not None:
        rest.append(
            f"<p>Contention delta = {format_seconds(machine_model.delta_s_per_byte)} per "
            "byte on a link.</p>"
        )
    warnings = machine_model.machine.get("warnings", [])
    rest += [f"<p class='note'>{e(w)}</p>" for w in warnings]
    over = machine_model.machine.get("oversubscribed_runs") or []
    if over:
        rest.append(
            f"<p class='note'>Oversubscribed runs (more ranks than cores; times include "
            f"time-slicing): {e(', '.join(Path(p).name for p in over))}.</p>"
        )
    summary = "breakpoints, the MPI's limits, queue search" + (
        f", {len(warnings)} warning{'s' * (len(warnings) != 1)} of the fit" if warnings else ""
    )
    out.append(more(summary, "\n".join(rest)))
    return "\n".join(out)


def _with_interval(row, name, ci):
    """``341 ns (339 .. 342 ns)``: a value and its interval in one cell."""
    value = row.get(name)
    if isinstance(value, str) or value is None:
        return value or "-"
    text = human_value(name, value)[1]
    interval = row.get(ci)
    if isinstance(interval, (tuple, list)) and len(interval) == 2:
        text += f" ({human_value(name, tuple(interval))[1]})"
    return text


def _compact(rows):
    """The fit table with each value beside its 95 % interval: fits the page."""
    out = []
    for r in rows:
        beyond = r.get("bandwidth_beyond_Bps")
        out.append(
            {
                "locality": r["locality"],
                "protocol": r["protocol"],
                "sizes": r["sizes"],
                "latency alpha (95 %)": _with_interval(r, "alpha_s", "alpha_ci95_s"),
                "bandwidth (95 %)": _with_interval(r, "bandwidth_Bps", "bandwidth_ci95_Bps"),
                "R_N (95 %)": _with_interval(r, "R_N_Bps", "R_N_ci95_Bps"),
                "beyond the caches": (
                    "-"
                    if isinstance(beyond, str)
                    else f"{human_value('b_Bps', beyond)[1]} above "
                    f"{human_value('c_bytes', r['capacity_bytes'])[1]}"
                ),
                "fit error, median / max": f"{human_value('rel_err', r['median_rel_err'])[1]} / "
                f"{human_value('rel_err', r['max_rel_err'])[1]}",
                "quality": r["quality"],
            }
        )
    return out


def _size(value):
    return "-" if value is None or value != value else format_bytes(value)
