"""The machine model: fitted parameters, breakpoints, fit quality."""

import html

from ...models.fitting import compare_breakpoints
from ...units import format_bytes, format_seconds
from ..tables import html_table
from . import report_machine_model

KINDS = {"pingpong"}
TITLE = "Machine model"
ORDER = 5


def render(runs, context):
    from ...machine_fit import machine_model_table
    machine_model, where = report_machine_model(context)
    if machine_model is None:
        return (f"<p>{html.escape(where[0].upper() + where[1:])}. The ping-pong section shows "
                "the measured times and bandwidth without a model.</p>")
    # shown as `commscope fit` prints it: bandwidth in MB/s
    out = [f"<p>Parameters {html.escape(where)}.</p>",
           html_table(machine_model_table(machine_model))]
    if machine_model.machine.get("gamma_ci95_s"):
        lo, hi = machine_model.machine["gamma_ci95_s"]
        out.append(f"<p>gamma 95 % bootstrap interval: {format_seconds(lo)} .. {format_seconds(hi)}.</p>")
    bp = compare_breakpoints(machine_model)[["locality", "short_max_bytes", "eager_max_bytes"]]
    out.append("<p>Protocol breakpoints found in the data (largest size of each protocol): "
               + "; ".join(f"{r.locality}: short &le; {r.short_max_bytes}, eager &le; {r.eager_max_bytes}"
                           for r in bp.itertuples()) + ".</p>")
    limits = ", ".join(f"{k} = {v}" for k, v in sorted(machine_model.mpi_eager_limits.items()))
    out.append(f"<p>Eager / rendezvous limits the MPI reports through MPI_T: "
               f"{html.escape(limits) or 'none'}.</p>")
    for loc, sizes in machine_model.machine.get("regime_changes_bytes", {}).items():
        out.append(f"<p>{html.escape(loc)}: slower per byte above "
                   f"{', '.join(map(format_bytes, sizes))} without a protocol change (caches or "
                   f"memory bandwidth); the postal model of that protocol averages over it.</p>")
    if machine_model.gamma_s is not None:
        out.append(f"<p>Queue search gamma = {format_seconds(machine_model.gamma_s)} per element.</p>")
    if machine_model.delta_s_per_byte is not None:
        out.append(f"<p>Contention delta = {format_seconds(machine_model.delta_s_per_byte)} per byte on "
                   "a link.</p>")
    for warning in machine_model.machine.get("warnings", []):
        out.append(f"<p class='note'>{html.escape(warning)}</p>")
    over = machine_model.machine.get("oversubscribed_runs") or []
    if over:
        out.append(f"<p class='note'>Oversubscribed runs (more ranks than cores; times include "
                   f"time-slicing): {html.escape(', '.join(over))}.</p>")
    return "\n".join(out)
