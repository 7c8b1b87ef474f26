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
from .units import format_bytes, human_value
from .lazy import lazy

pd = lazy("pandas")


PINGPONG_KINDS = {"pingpong"}
HVPP_KINDS = {"hvpingpong"}
PARTITIONED_KINDS = {"partitioned"}
PROGRESS_KINDS = {"progress"}


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
    runs gamma, contention-layout HighVolumePingPong runs (``--contention``)
    delta, with ``hops`` links per byte (default N/2 for N nodes in a line, 004 Fig. 6),
    and partitioned calibration runs (``bench partitioned --calibrate``) the partitioned
    model's terms. Other partitioned runs are ignored: a machine model is never fitted
    from the runs it predicts. ``machine.term_sources`` says which runs each term came from.
    """
    # every table of every run read first (Run.check): a damaged one is the error, never
    # a term quietly left out of the model ("no partitioned terms")
    runs = [open_run(p).check() for p in expand_run_paths(paths)]
    pp = [r for r in runs if r.kind in PINGPONG_KINDS]
    if not pp:
        raise InputError(
            ", ".join(map(str, paths)),
            "kind",
            "no ping-pong runs among these (run `commscope bench pingpong` first)",
        )
    samples = pd.concat([r.table("samples") for r in pp], ignore_index=True)
    hv = [r for r in runs if r.kind in HVPP_KINDS and not _is_contention(r)]
    hvpp = pd.concat([r.table("samples") for r in hv], ignore_index=True) if hv else None
    hv_mpi = _one_mpi(hv, "the queue-search fit") if hv else None
    queues = [r.table("queues") for r in hv if "queues" in r.tables()]
    queues = pd.concat(queues, ignore_index=True) if queues else None
    first = pp[0].meta
    machine = {
        "hosts": sorted({h for r in pp for h in r.meta.get("hosts", [])}),
        "mpi_library": (first.get("mpi", {}).get("library_version") or "").strip().splitlines()[:1],
        "mpi_name": first.get("mpi", {}).get("name"),
        "source_runs": [
            str(r.path)
            for r in runs
            if r.kind in PINGPONG_KINDS | HVPP_KINDS
            or (r.kind in PARTITIONED_KINDS and _is_calibration(r))
            or r.kind in PROGRESS_KINDS
        ],
        "oversubscribed_runs": [str(r.path) for r in pp if _oversubscribed(r)],
    }
    machine["mpi_library"] = machine["mpi_library"][0] if machine["mpi_library"] else ""
    machine_model = fit_machine_model(
        samples,
        mpi_eager_limits=_eager_limits(pp),
        machine=machine,
        hvpp=hvpp,
        source=_tables_of(pp),
        hvpp_source=_tables_of(hv),
        hvpp_queues=queues,
        hvpp_mpi=hv_mpi,
    )
    warnings = (
        _max_rate_warnings(pp, machine_model)
        + _shared_host_warnings(runs)
        + _mixed_mpi_warnings(pp, hv_mpi)
    )
    contention = [r for r in runs if r.kind in HVPP_KINDS and _is_contention(r)]
    if contention:
        machine_model = _with_delta(machine_model, contention, hops)
    calib = [r for r in runs if r.kind in PARTITIONED_KINDS and _is_calibration(r)]
    if calib:
        try:
            machine_model.partitioned = _partitioned_terms(calib)
            warnings += [
                f"partitioned {name}: {flag}"
                for name, t in machine_model.partitioned.terms.items()
                for flag in t.flags
            ]
        except InputError as exc:  # e.g. an MPI without MPI_Psend_init: the rest still fits
            warnings.append(f"no partitioned terms: {exc}")
            calib = []
    progress = [r for r in runs if r.kind in PROGRESS_KINDS]
    if progress:
        machine_model.progress = _progress_section(progress)
    # which runs each term came from (a prediction refuses to be checked against them)
    machine_model.machine["term_sources"] = {
        "postal/max-rate": [_run_id(r) for r in pp],
        **({"gamma": [_run_id(r) for r in hv]} if hv else {}),
        **({"delta": [_run_id(r) for r in contention]} if contention else {}),
        **({"partitioned": [_run_id(r) for r in calib]} if calib else {}),
        **({"progress": [_run_id(r) for r in progress]} if progress else {}),
    }
    if warnings:
        machine_model.machine["warnings"] = machine_model.machine.get("warnings", []) + warnings
    return machine_model


def _one_mpi(runs, what):
    """The MPI (name) all ``runs`` used; InputError naming two runs that differ.

    A machine model is one MPI's: the queue search differs between MPIs by an order of
    magnitude, so runs of two MPIs are fitted separately.
    """
    names = {}
    for run in runs:
        names.setdefault(run.meta.get("mpi", {}).get("name"), run)
    if len(names) > 1:
        (a, ra), (b, rb) = list(names.items())[:2]
        raise InputError(
            rb.path,
            "mpi.name",
            f"{what}: runs of two MPIs ({ra.path} used {a}, this one {b}); a machine "
            "model belongs to one MPI: fit each MPI's runs separately",
        )
    return next(iter(names), None)


def _mixed_mpi_warnings(pp, hv_mpi):
    """Ping-pong runs of other MPIs than the HighVolumePingPong's: the postal terms then
    mix MPIs (a study comparing two MPIs may want that; the queue search stays one MPI's)."""
    others = sorted({str(r.meta.get("mpi", {}).get("name")) for r in pp} - {str(hv_mpi)})
    if hv_mpi is None or not others:
        return []
    return [
        f"ping-pong runs of {', '.join(others)} fitted beside HighVolumePingPong runs of "
        f"{hv_mpi}: the postal terms mix MPIs, the queue search is {hv_mpi}'s"
    ]


def _is_calibration(run):
    return bool(run.meta.get("parameters", {}).get("calibration"))


def _run_id(run):
    """How a machine model names a source run: its path, and its kind and start time
    (which stay the same when the run directory is copied or moved)."""
    return {"path": str(run.path), "kind": run.kind, "start_time": run.meta.get("start_time")}


def _partitioned_terms(runs):
    """The partitioned model's terms (models/partitioned_terms.py) from calibration runs
    of one configuration (threads, compute, compute mode)."""
    from .models.partitioned_terms import fit_terms, median_lead_s

    conds = {
        (int(p["threads"]), float(p["compute_s"]), p.get("compute_mode", "sleep"))
        for p in (r.meta["parameters"] for r in runs)
    }
    if len(conds) > 1:
        raise InputError(
            ", ".join(str(r.path) for r in runs),
            "parameters",
            f"partitioned calibration runs of different configurations "
            f"(threads, compute_s, compute_mode) {sorted(conds)}: fit them separately",
        )
    ((threads, compute_s, mode),) = conds
    per_run = [r.table("samples") for r in runs]
    samples = pd.concat(per_run, ignore_index=True)
    compute = pd.concat(
        [r.table("compute").assign(calibration=i) for i, r in enumerate(runs)], ignore_index=True
    )
    leads = [lead for lead in map(median_lead_s, per_run) if lead is not None]
    conditions = dict(
        threads=threads,
        compute_s=compute_s,
        compute_mode=mode,
        mpi_name=runs[0].meta.get("mpi", {}).get("name"),
        lead_s=min(leads) if leads else None,
    )  # the shortest calibrated
    return fit_terms(
        samples,
        compute,
        conditions,
        [_run_id(r) for r in runs],
        source=", ".join(str(r.path) for r in runs),
    )


def _progress_section(runs):
    """The machine model's ``progress`` section (models/progress.py): one entry per MPI
    library string and progress setting, the runs of one entry pooled."""
    from .bench.progress import case_notes, overlap_rows_of
    from .machine_load import judge
    from .models.progress import entry_key, library_of, section_entry

    groups = {}
    for run in runs:
        env = run.meta.get("progress_env") or {}
        groups.setdefault(entry_key(library_of(run), env), []).append((run, env))
    section = {}
    for key, members in sorted(groups.items()):
        rows = overlap_rows_of(pd.concat([r.table("samples") for r, _ in members]))
        supported = {}
        for run, _ in members:
            for case, (status, _note) in case_notes(run).items():
                supported[case] = supported.get(case, False) or status == "run"
        first, env = members[0]
        busy = [f"{r.path.name}: {w}" for r, _ in members for w in [judge(r.meta.get("load"))] if w]
        section[key] = section_entry(
            rows.to_dict("records"),
            supported,
            mpi_library=library_of(first),
            mpi_name=first.meta.get("mpi", {}).get("name"),
            settings=env,
            partitions=int(first.meta["parameters"]["partitions"]),
            oversubscribed=any(_oversubscribed(r) for r, _ in members),
            busy_machine=busy,
            source_runs=[_run_id(r) for r, _ in members],
        )
    return section


def _shared_host_warnings(runs):
    """Nodes that shared one host: their inter-node numbers (alpha, R_N, delta) are not a network's."""
    shared = {}
    for run in runs:
        for host, nodes in shared_hosts(run.meta.get("placement")).items():
            shared.setdefault(host, set()).update(nodes)
    return [shared_hosts_note({h: sorted(n)}) for h, n in shared.items()]


def _max_rate_warnings(pp, machine_model):
    """R_N fitted from multi-pair runs that had more ranks than cores measures time-slicing."""
    fitted = [
        loc
        for (proto, loc), p in machine_model.params.items()
        if proto == "rendezvous" and math.isfinite(p.R_N_Bps)
    ]
    if not fitted:
        return []
    return [
        f"R_N ({', '.join(fitted)}) comes from the oversubscribed multi-pair run "
        f"{run.path}: with more ranks than cores it measures time-slicing of the cores, "
        "not the injection limit"
        for run in pp
        if _oversubscribed(run) and int(run.meta.get("parameters", {}).get("pairs", 1)) > 1
    ]


def _with_delta(machine_model, runs, hops):
    """Fit delta (004 eq. 5) from contention-layout HVPP runs of one layout."""
    from dataclasses import replace

    from .models.contention_fit import fit_delta

    if machine_model.gamma_s is None:
        raise InputError(
            runs[0].path,
            "parameters.contention",
            "fitting delta needs gamma: add a plain `commscope bench hvpingpong` run",
        )
    layouts = set()
    for run in runs:
        placed = {node_of(p) for p in run.meta.get("placement", [])}
        nodes = max(1, len(placed or run.meta.get("hosts", [])))
        layouts.add((nodes, max(1, 2 * int(run.meta["parameters"].get("pairs", 1)) // nodes)))
    if len(layouts) > 1:
        raise InputError(
            ", ".join(str(r.path) for r in runs),
            "placement",
            f"contention runs of different layouts (nodes, ppn) {sorted(layouts)}: "
            "fit them separately",
        )
    ((nodes, ppn),) = layouts
    hops = nodes / 2 if hops is None else hops
    samples = pd.concat([r.table("samples") for r in runs], ignore_index=True)
    fit = fit_delta(samples, machine_model, hops=hops, ppn=ppn, source="contention hvpp samples")
    machine = dict(
        machine_model.machine,
        delta_fit=dict(
            fit.to_dict(), hops=hops, ppn=ppn, nodes=nodes, runs=[str(r.path) for r in runs]
        ),
    )
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
            alpha_ci = p.fit.ci95.get("alpha_s", "-") if p.fit else "-"
            # a fit that puts no fixed cost on the protocol: said in words, not "0 s .. 0 s"
            unresolved = p.alpha_s == 0 and (alpha_ci == "-" or max(alpha_ci) == 0)
            rows.append(
                {
                    "locality": loc,
                    "protocol": proto,
                    "sizes": _size_span(bp, proto),
                    "alpha_s": "not resolved" if unresolved else p.alpha_s,
                    "bandwidth_Bps": p.Rb_Bps,  # printed in MB/s, as every table (output.py)
                    # R_N caps the rendezvous node rate (eq. 2); the other protocols never use it
                    "R_N_Bps": "-" if proto != "rendezvous" else p.R_N_Bps,
                    # beyond it the buffers leave the caches: a lower bandwidth (fit_protocol)
                    "capacity_bytes": "-" if p.capacity_bytes is None else p.capacity_bytes,
                    "bandwidth_beyond_Bps": (
                        "-"
                        if p.capacity_bytes is None
                        else 1.0 / p.beta_beyond_s_per_byte
                        if p.beta_beyond_s_per_byte > 0
                        else math.inf
                    ),
                    "median_rel_err": p.fit.median_rel_error if p.fit else math.nan,
                    "max_rel_err": p.fit.max_rel_error if p.fit else math.nan,
                    # 95 % bootstrap intervals over the kept repetitions (models/fitting.py)
                    "alpha_ci95_s": "-" if unresolved else alpha_ci,
                    "bandwidth_ci95_Bps": p.fit.ci95.get("Rb_Bps", "-") if p.fit else "-",
                    "R_N_ci95_Bps": p.fit.ci95.get("R_N_Bps", "-") if p.fit else "-",
                    "quality": ("FLAGGED: " + "; ".join(p.fit.flags))
                    if p.fit and p.fit.flags
                    else "ok"
                    if p.fit
                    else "-",
                }
            )
    return rows


def _size_span(bp, proto):
    """The sizes a protocol covers, for people: 'up to 4 KiB', 'above 4 KiB, up to 1 MiB'."""
    short_max = bp.short_max_bytes if bp else None
    eager_max = bp.eager_max_bytes if bp else None
    if proto == "short":
        return f"up to {format_bytes(short_max)}" if short_max is not None else "all"
    if proto == "eager":
        parts = ([f"above {format_bytes(short_max)}"] if short_max else []) + (
            [f"up to {format_bytes(eager_max)}"] if eager_max is not None else []
        )
        return ", ".join(parts) or "all"
    lo = eager_max if eager_max is not None else short_max
    return f"above {format_bytes(lo)}" if lo is not None else "all"


def queue_search_table(machine_model):
    """One row per order: the queue-search form chosen, its parameters, every form's BIC."""
    from .models.queue_search import FORMS, PARAMS

    qs = machine_model.queue_search
    if qs is None:
        return []
    rows = []
    for order in qs.orders:
        o = qs.order_dict(order)
        row = {
            "mpi": qs.mpi or "-",
            "order": order,
            "form": o["form"],
            "parameters": ", ".join(
                f"{k[:-2] if k.endswith('_s') else k} = {human_value(k, o['params'][k])[1]}"
                for k in PARAMS[o["form"]]
            ),
            "breakpoint_messages": o.get("breakpoint_messages") or "-",
        }
        row.update({f"bic:{f}": o["scores"].get(f, {}).get("bic", "-") for f in FORMS})
        chosen = o["scores"].get(o["form"], {})
        row["max_rel_err"] = chosen.get("max_rel_error", "-")
        row["quality"] = ("FLAGGED: " + "; ".join(o["flags"])) if o.get("flags") else "ok"
        rows.append(row)
    return rows


def queue_search_residuals(machine_model):
    """Rows (order, n_messages, measured_s, model_s, ratio) of the fitted queue-search form."""
    qs = machine_model.queue_search
    if qs is None:
        return []
    return [
        dict(order=order, form=qs.order_dict(order)["form"], **r)
        for order in qs.orders
        for r in qs.order_dict(order)["residuals"]
    ]
