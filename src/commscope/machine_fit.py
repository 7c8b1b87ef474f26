"""``commscope fit``: from run directories to a machine model.

Gathers the ping-pong samples (single- and multi-pair) and HighVolumePingPong
samples of the given runs, takes the eager limits the MPI reported through MPI_T
control variables (recorded in each run's meta.json), and hands them to
:func:`commscope.models.fitting.fit_machine_model`.
"""

import math

from .errors import InputError
from .mpi import eager_limits
from .models.fitting import fit_machine_model
from .models.machine_model import LOCALITIES, PROTOCOLS
from .runs import expand_run_paths, open_run
from .topology import node_of, shared_hosts, shared_hosts_note
from .lazy import lazy

pd = lazy("pandas")


PINGPONG_KINDS = {"pingpong"}
HVPP_KINDS = {"hvpingpong"}


def _eager_limits(runs):
    limits = {}
    for run in runs:
        limits.update(eager_limits(run.meta.get("mpi", {}).get("eager_cvars")))
    return limits


def _oversubscribed(run):
    return bool(run.meta.get("launch", {}).get("oversubscribed"))


def _is_contention(run):
    return bool(run.meta.get("parameters", {}).get("contention"))


def _tables_of(runs):
    """The samples tables a fit reads, for its errors (a bad one is named)."""
    return ", ".join(str(r.path / "samples.parquet") for r in runs) or "samples"


def fit_runs(paths, hops=None):
    """Fit a :class:`MachineModel` from run directories (or folders of them).

    Ping-pong runs give the postal / max-rate parameters, plain HighVolumePingPong
    runs gamma, and contention-layout HighVolumePingPong runs (``--contention``)
    delta, with ``hops`` links per byte (default N/2 for N nodes in a line, 004 Fig. 6).
    """
    runs = [open_run(p) for p in expand_run_paths(paths)]
    pp = [r for r in runs if r.kind in PINGPONG_KINDS]
    if not pp:
        raise InputError(", ".join(map(str, paths)), "kind",
                         "no ping-pong runs among these (run `commscope bench pingpong` first)")
    samples = pd.concat([r.table("samples") for r in pp], ignore_index=True)
    hv = [r for r in runs if r.kind in HVPP_KINDS and not _is_contention(r)]
    hvpp = pd.concat([r.table("samples") for r in hv], ignore_index=True) if hv else None
    first = pp[0].meta
    machine = {
        "hosts": sorted({h for r in pp for h in r.meta.get("hosts", [])}),
        "mpi_library": (first.get("mpi", {}).get("library_version") or "").strip().splitlines()[:1],
        "mpi_name": first.get("mpi", {}).get("name"),
        "source_runs": [str(r.path) for r in runs if r.kind in PINGPONG_KINDS | HVPP_KINDS],
        "oversubscribed_runs": [str(r.path) for r in pp if _oversubscribed(r)],
    }
    machine["mpi_library"] = machine["mpi_library"][0] if machine["mpi_library"] else ""
    machine_model = fit_machine_model(samples, mpi_eager_limits=_eager_limits(pp), machine=machine,
                          hvpp=hvpp, source=_tables_of(pp), hvpp_source=_tables_of(hv))
    warnings = _max_rate_warnings(pp, machine_model) + _shared_host_warnings(runs)
    contention = [r for r in runs if r.kind in HVPP_KINDS and _is_contention(r)]
    if contention:
        machine_model = _with_delta(machine_model, contention, hops)
    if warnings:
        machine_model.machine["warnings"] = machine_model.machine.get("warnings", []) + warnings
    return machine_model


def _shared_host_warnings(runs):
    """Nodes that shared one host: their inter-node numbers (alpha, R_N, delta) are not a network's."""
    shared = {}
    for run in runs:
        for host, nodes in shared_hosts(run.meta.get("placement")).items():
            shared.setdefault(host, set()).update(nodes)
    return [shared_hosts_note({h: sorted(n)}) for h, n in shared.items()]


def _max_rate_warnings(pp, machine_model):
    """R_N fitted from multi-pair runs that had more ranks than cores measures time-slicing."""
    fitted = [loc for (proto, loc), p in machine_model.params.items()
              if proto == "rendezvous" and math.isfinite(p.R_N_Bps)]
    if not fitted:
        return []
    return [f"R_N ({', '.join(fitted)}) comes from the oversubscribed multi-pair run "
            f"{run.path}: with more ranks than cores it measures time-slicing of the cores, "
            "not the injection limit"
            for run in pp
            if _oversubscribed(run) and int(run.meta.get("parameters", {}).get("pairs", 1)) > 1]


def _with_delta(machine_model, runs, hops):
    """Fit delta (004 eq. 5) from contention-layout HVPP runs of one layout."""
    from dataclasses import replace

    from .models.contention_fit import fit_delta
    if machine_model.gamma_s is None:
        raise InputError(runs[0].path, "parameters.contention",
                         "fitting delta needs gamma: add a plain `commscope bench hvpingpong` run")
    layouts = set()
    for run in runs:
        placed = {node_of(p) for p in run.meta.get("placement", [])}
        nodes = max(1, len(placed or run.meta.get("hosts", [])))
        layouts.add((nodes, max(1, 2 * int(run.meta["parameters"].get("pairs", 1)) // nodes)))
    if len(layouts) > 1:
        raise InputError(", ".join(str(r.path) for r in runs), "placement",
                         f"contention runs of different layouts (nodes, ppn) {sorted(layouts)}: "
                         "fit them separately")
    (nodes, ppn), = layouts
    hops = nodes / 2 if hops is None else hops
    samples = pd.concat([r.table("samples") for r in runs], ignore_index=True)
    fit = fit_delta(samples, machine_model, hops=hops, ppn=ppn, source="contention hvpp samples")
    machine = dict(machine_model.machine, delta_fit=dict(fit.to_dict(), hops=hops, ppn=ppn, nodes=nodes,
                                                   runs=[str(r.path) for r in runs]))
    return replace(machine_model, delta_s_per_byte=fit.delta_s_per_byte, machine=machine)


def machine_model_table(machine_model):
    """One row per (locality, protocol): sizes covered, alpha, bandwidth, R_N, fit error."""
    rows = []
    for loc in LOCALITIES:
        bp = machine_model.breakpoints.get(loc)
        for proto in PROTOCOLS:
            p = machine_model.params.get((proto, loc))
            if p is None:
                continue
            lo, hi = _size_span(bp, proto)
            rows.append({
                "locality": loc, "protocol": proto, "sizes_bytes": f"{lo}..{hi}",
                "alpha_s": p.alpha_s,
                "bandwidth_Bps": p.Rb_Bps,  # printed in MB/s, as every table (output.py)
                # R_N caps the rendezvous node rate (eq. 2); the other protocols never use it
                "R_N_Bps": "-" if proto != "rendezvous" else p.R_N_Bps,
                "median_rel_err": p.fit.median_rel_error if p.fit else math.nan,
                "max_rel_err": p.fit.max_rel_error if p.fit else math.nan,
                # 95 % bootstrap intervals over the kept repetitions (models/fitting.py)
                "alpha_ci95_s": p.fit.ci95.get("alpha_s", "-") if p.fit else "-",
                "bandwidth_ci95_Bps": p.fit.ci95.get("Rb_Bps", "-") if p.fit else "-",
                "R_N_ci95_Bps": p.fit.ci95.get("R_N_Bps", "-") if p.fit else "-",
                "quality": ("FLAGGED: " + "; ".join(p.fit.flags)) if p.fit and p.fit.flags
                           else "ok" if p.fit else "-",
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
