"""The machine profile: fitted parameters, breakpoints, fit quality."""

import html

from ...models.fitting import compare_breakpoints
from ...output import format_value
from ..tables import html_table
from . import machine_profile

KINDS = {"pingpong"}
TITLE = "Machine profile"
ORDER = 5


def render(runs, context):
    from ...profile_fit import profile_table
    profile, where = machine_profile(context)
    if profile is None:
        return (f"<p>{html.escape(where[0].upper() + where[1:])}. The ping-pong section shows "
                "the measured times and bandwidth without a model.</p>")
    # shown as `commscope fit` prints it: bandwidth in MB/s
    out = [f"<p>Parameters {html.escape(where)}.</p>", html_table(profile_table(profile))]
    if profile.machine.get("gamma_ci95_s"):
        lo, hi = profile.machine["gamma_ci95_s"]
        out.append(f"<p>gamma 95 % bootstrap interval: {format_value(lo)} .. {format_value(hi)} s.</p>")
    bp = compare_breakpoints(profile)[["locality", "short_max_bytes", "eager_max_bytes"]]
    out.append("<p>Protocol breakpoints found in the data (largest size of each protocol): "
               + "; ".join(f"{r.locality}: short &le; {r.short_max_bytes}, eager &le; {r.eager_max_bytes}"
                           for r in bp.itertuples()) + ".</p>")
    limits = ", ".join(f"{k} = {v}" for k, v in sorted(profile.mpi_eager_limits.items()))
    out.append(f"<p>Eager / rendezvous limits the MPI reports through MPI_T: "
               f"{html.escape(limits) or 'none'}.</p>")
    for loc, sizes in profile.machine.get("regime_changes_bytes", {}).items():
        out.append(f"<p>{html.escape(loc)}: slower per byte above "
                   f"{', '.join(map(str, sizes))} bytes without a protocol change (caches or "
                   f"memory bandwidth); the postal model of that protocol averages over it.</p>")
    if profile.gamma_s is not None:
        out.append(f"<p>Queue search gamma = {profile.gamma_s:.3e} s per element.</p>")
    if profile.delta_s_per_byte is not None:
        out.append(f"<p>Contention delta = {profile.delta_s_per_byte:.3e} s per byte on a link.</p>")
    for warning in profile.machine.get("warnings", []):
        out.append(f"<p class='note'>{html.escape(warning)}</p>")
    over = profile.machine.get("oversubscribed_runs") or []
    if over:
        out.append(f"<p class='note'>Oversubscribed runs (more ranks than cores; times include "
                   f"time-slicing): {html.escape(', '.join(over))}.</p>")
    return "\n".join(out)
