"""``commscope fit``: from run directories to a machine profile.

Gathers the ping-pong samples (single- and multi-pair) and HighVolumePingPong
samples of the given runs, takes the eager limits the MPI reported through MPI_T
control variables (recorded in each run's meta.json), and hands them to
:func:`commscope.models.fitting.fit_profile`.
"""

import math

import pandas as pd

from .errors import InputError
from .models.fitting import fit_profile
from .models.profile import LOCALITIES, PROTOCOLS
from .report.build import expand_run_paths
from .runs import open_run

PINGPONG_KINDS = {"pingpong"}
HVPP_KINDS = {"hvpingpong"}


def _eager_limits(runs):
    limits = {}
    for run in runs:
        for cvar in run.meta.get("mpi", {}).get("eager_cvars") or []:
            value = cvar.get("value")
            if isinstance(value, int) and value > 0:
                limits[cvar["name"]] = value
    return limits


def fit_runs(paths):
    """Fit a :class:`MachineProfile` from run directories (or folders of them)."""
    runs = [open_run(p) for p in expand_run_paths(paths)]
    pp = [r for r in runs if r.kind in PINGPONG_KINDS]
    if not pp:
        raise InputError(", ".join(map(str, paths)), "kind",
                         "no ping-pong runs among these (run `commscope bench pingpong` first)")
    samples = pd.concat([r.table("samples") for r in pp], ignore_index=True)
    hv = [r for r in runs if r.kind in HVPP_KINDS]
    hvpp = pd.concat([r.table("samples") for r in hv], ignore_index=True) if hv else None
    first = pp[0].meta
    machine = {
        "hosts": sorted({h for r in pp for h in r.meta.get("hosts", [])}),
        "mpi_library": (first.get("mpi", {}).get("library_version") or "").strip().splitlines()[:1],
        "mpi_name": first.get("mpi", {}).get("name"),
        "source_runs": [str(r.path) for r in runs if r.kind in PINGPONG_KINDS | HVPP_KINDS],
        "oversubscribed_runs": [str(r.path) for r in pp if r.meta.get("launch", {}).get("oversubscribed")],
    }
    machine["mpi_library"] = machine["mpi_library"][0] if machine["mpi_library"] else ""
    return fit_profile(samples, mpi_eager_limits=_eager_limits(pp), machine=machine,
                       hvpp=hvpp, source="ping-pong samples")


def profile_table(profile):
    """One row per (locality, protocol): sizes covered, alpha, bandwidth, R_N, fit error."""
    rows = []
    for loc in LOCALITIES:
        bp = profile.breakpoints.get(loc)
        for proto in PROTOCOLS:
            p = profile.params.get((proto, loc))
            if p is None:
                continue
            lo, hi = _size_span(bp, proto)
            rows.append({
                "locality": loc, "protocol": proto, "sizes_bytes": f"{lo}..{hi}",
                "alpha_us": p.alpha_s * 1e6,
                "bandwidth_MBps": p.Rb_Bps / 1e6 if math.isfinite(p.Rb_Bps) else math.inf,
                "R_N_MBps": p.R_N_Bps / 1e6 if math.isfinite(p.R_N_Bps) else math.inf,
                "median_rel_err": p.fit.median_rel_error if p.fit else math.nan,
                "max_rel_err": p.fit.max_rel_error if p.fit else math.nan,
            })
    return rows


def _size_span(bp, proto):
    short_max = bp.short_max_bytes if bp else None
    eager_max = bp.eager_max_bytes if bp else None
    if proto == "short":
        return "0", str(short_max)
    if proto == "eager":
        return str((short_max or 0) + 1 if short_max else 0), str(eager_max)
    lo = eager_max if eager_max is not None else short_max
    return (str(lo + 1) if lo is not None else "0"), "max"
