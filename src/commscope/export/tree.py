"""The call tree both profile exports write, with its values per location.

Nodes, in preorder (a node's id is its position, so a parent comes before its
children):

* the root: the program (its file name); its ``time_s`` is each thread's time outside
  MPI (the rank's ``wall_s`` minus the thread's time in MPI calls);
* one node per MPI function (``functions.parquet``), sorted by name;
* below a function, one node per call site (``callsites.parquet``, ``--callsites``):
  ``file:line`` with the file's base name, as the trace and ``commscope top`` name it
  (sites of several callers, ``--callsite-depth``, are one node); a site the profiler
  could not resolve is ``object+0xoffset``.  A function's own values are what its call
  sites do not hold (none with ``--callsites``, all without);
* with OMPT data (``--ompt``), one node per OpenMP region below the root
  (``OpenMP region NAME``): ``openmp_s`` and ``openmp_barrier_s``, the time the
  region's threads worked and waited at its barriers, summed over the threads.

Values are one row per (node, rank, thread, metric): ``values``.  ``callsites.parquet``
is per rank, not per thread: a rank's threads share a call site's values in proportion
to their time (else calls) in that function, so per rank they are exact.  OpenMP values
belong to the rank (thread ``-1``: the first thread where a format needs a thread).

With an event trace, the wait states of the diagnosis (:func:`commscope.diagnose.waits.
find` on :func:`commscope.diagnose.timeline.build`) are ``waits``: one row per wait with
its rank, thread, node and kind, and ``lost_s``, the time the call waited (Scalasca's
meaning of a wait-state metric: before any of it is passed on to a cause).  A wait whose
call site is not a node (no ``--callsites``) is its function's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: The wait kinds of commscope.diagnose.waits, in the order the metric trees list them.
WAIT_KINDS = (
    "late_sender",
    "late_receiver",
    "wrong_order",
    "wait_nxn",
    "late_broadcast",
    "late_scatter",
    "early_reduce",
    "early_gather",
)
P2P_WAITS = WAIT_KINDS[:3]
COLLECTIVE_WAITS = WAIT_KINDS[3:]

_P2P = re.compile(
    r"^MPI_(I?[sbr]?send|I?ssend|I?recv|I?m?recv|I?sendrecv(_replace)?|I?m?probe|"
    r"(wait|test)(all|any|some)?|start(all)?|p(send|recv|ready\w*|arrived)|"
    r"(send|recv|bsend|ssend|rsend)_init)(_c)?$",
    re.IGNORECASE,
)


def function_family(function):
    """``collective``, ``p2p`` (point-to-point, and the Wait/Test/Start that complete it)
    or ``other`` (init, communicators, one-sided, I/O, ...)."""
    from ..profile.export import collective_stem

    if collective_stem(function):
        return "collective"
    return "p2p" if _P2P.match(str(function)) else "other"


@dataclass
class Tree:
    """See the module docstring.  ``nodes``: id, parent (-1: the root), kind (program,
    function, callsite, openmp), label, function, family, file, line.  ``locations``:
    rank, thread, node (host), one row per thread that called MPI."""

    run_path: str
    meta: dict
    nodes: pd.DataFrame
    values: pd.DataFrame
    locations: pd.DataFrame
    waits: pd.DataFrame | None
    useful: pd.DataFrame | None
    nranks: int
    has_callsites: bool
    has_openmp: bool
    notes: list = field(default_factory=list)

    @property
    def has_trace(self):
        return self.waits is not None

    def per_rank(self, metric):
        """{(node, rank): value} of ``metric`` summed over the threads."""
        v = self.values[self.values["metric"] == metric]
        return v.groupby(["node", "rank"])["value"].sum().to_dict()

    def wait_by(self, keys=("node", "rank", "thread", "kind")):
        if self.waits is None or not len(self.waits):
            return {}
        return self.waits.groupby(list(keys))["lost_s"].sum().to_dict()


def _site_label(row):
    f = row.get("file")
    line = row.get("line")
    if isinstance(f, str) and f and line is not None and not pd.isna(line):
        return f"{os.path.basename(f)}:{int(line)}"
    obj, off = row.get("object"), row.get("offset")
    if isinstance(obj, str) and obj and off is not None and not pd.isna(off):
        return f"{os.path.basename(obj)}+0x{int(off):x}"
    return None


def _program_name(meta):
    prog = (meta.get("parameters") or {}).get("program")
    return os.path.basename(str(prog)) if prog else "program"


def build(run):
    """The :class:`Tree` of an open profile run (``runs.open_run``).  Every table it
    needs and the trace are read here: a damaged one is an InputError naming it."""
    from ..diagnose import damage
    from ..diagnose import efficiency as eff
    from ..profile.api import Profile

    p = Profile(run)
    ranks = p.ranks
    if ranks is None or not len(ranks):
        raise InputError(
            p.path / "ranks.parquet",
            None,
            "missing or empty: the profile was not converted (is it still running?)",
        )
    functions = p.functions
    if functions is None:
        raise InputError(
            p.path / "functions.parquet", None, "missing: the profile has no per-function table"
        )
    damage.check(p)
    notes = []
    functions = functions.copy()
    if functions["time_s"].isna().all() if len(functions) else False:
        notes.append(
            "time in MPI was not measured (the profile ran without timers): time_s is absent"
        )
    callsites = p.callsites
    trace_tl = None
    from ..profile.export import load_trace

    trace = load_trace(run)
    if trace is not None:
        from ..diagnose import timeline as tlm

        trace_tl = tlm.build(trace, ranks)

    # ---- nodes ----------------------------------------------------------------------
    rows = [
        dict(
            id=0,
            parent=-1,
            kind="program",
            label=_program_name(p.meta),
            function=None,
            family=None,
            file=None,
            line=None,
        )
    ]
    site_of = {}  # (function, label) -> node
    func_node = {}
    sites = None
    if callsites is not None and len(callsites):
        sites = callsites.copy()
        sites["label"] = [_site_label(r) for r in sites.to_dict("records")]
        sites = sites[sites["label"].notna()]
    for fn in sorted(functions["function"].astype(str).unique()):
        func_node[fn] = len(rows)
        rows.append(
            dict(
                id=len(rows),
                parent=0,
                kind="function",
                label=fn,
                function=fn,
                family=function_family(fn),
                file=None,
                line=None,
            )
        )
        if sites is None:
            continue
        mine = sites[sites["function"] == fn]
        for label in sorted(mine["label"].unique()):
            first = mine[mine["label"] == label].iloc[0]
            site_of[(fn, label)] = len(rows)
            line = first.get("line")
            rows.append(
                dict(
                    id=len(rows),
                    parent=func_node[fn],
                    kind="callsite",
                    label=label,
                    function=fn,
                    family=function_family(fn),
                    file=first.get("file") if isinstance(first.get("file"), str) else None,
                    line=None if line is None or pd.isna(line) else int(line),
                )
            )
    threads = p.threads
    has_openmp = threads is not None and len(threads) > 0
    region_node = {}
    if has_openmp:
        for region in sorted(threads["region"].astype(str).unique()):
            region_node[region] = len(rows)
            rows.append(
                dict(
                    id=len(rows),
                    parent=0,
                    kind="openmp",
                    label=f"OpenMP region {region}",
                    function=None,
                    family=None,
                    file=None,
                    line=None,
                )
            )
    nodes = pd.DataFrame(rows)

    # ---- locations ------------------------------------------------------------------
    loc = functions[["rank", "thread"]].drop_duplicates()
    if trace_tl is not None and len(trace_tl.calls):
        loc = pd.concat([loc, trace_tl.calls[["rank", "thread"]].drop_duplicates()])
    loc = loc.drop_duplicates().astype({"rank": "int64", "thread": "int64"})
    loc = loc.sort_values(["rank", "thread"]).reset_index(drop=True)
    host = (
        dict(zip(ranks["rank"].astype(int), ranks["host"].astype(str))) if "host" in ranks else {}
    )
    loc["host"] = [host.get(int(r), "localhost") for r in loc["rank"]]

    # ---- values ---------------------------------------------------------------------
    vals = []

    def add(node, rank, thread, metric, value):
        vals.append((int(node), int(rank), int(thread), metric, value))

    f = functions
    for r in f.itertuples(index=False):
        fn = str(r.function)
        node = func_node[fn]
        share = {"calls": r.calls, "bytes": r.bytes, "time_s": r.time_s}
        if sites is not None:
            mine = sites[(sites["rank"] == r.rank) & (sites["function"] == fn)]
            if len(mine):
                same = f[(f["rank"] == r.rank) & (f["function"] == fn)]
                basis = "time_s" if same["time_s"].fillna(0).sum() > 0 else "calls"
                tot = float(same[basis].fillna(0).sum())
                w = float(getattr(r, basis) or 0) / tot if tot > 0 else 1.0 / len(same)
                for label, g in mine.groupby("label"):
                    for m in ("calls", "bytes", "time_s"):
                        x = g[m].sum(min_count=1)
                        if not pd.isna(x):
                            add(site_of[(fn, label)], r.rank, r.thread, m, float(x) * w)
                            share[m] = (share[m] if not pd.isna(share[m]) else 0) - float(x) * w
        whole = {"calls": r.calls, "bytes": r.bytes, "time_s": r.time_s}
        for m, x in share.items():
            if x is not None and not pd.isna(x):
                # what the sites leave, to rounding (the sites of a rank hold it all)
                tol = 1e-9 * abs(float(whole[m] or 0))
                add(node, r.rank, r.thread, m, float(x) if float(x) > tol else 0.0)
    wall = dict(zip(ranks["rank"].astype(int), ranks["wall_s"].astype(float)))
    mpi_of = f.groupby(["rank", "thread"])["time_s"].sum(min_count=1)
    for (rank, thread), mpi in mpi_of.items():
        if not pd.isna(mpi) and int(rank) in wall:
            add(0, rank, thread, "time_s", max(wall[int(rank)] - float(mpi), 0.0))
    if has_openmp:
        t = threads
        work = (t["arrival_s"] - t["start_s"]).clip(lower=0)
        wait = (t["leave_s"] - t["arrival_s"]).clip(lower=0)
        g = pd.DataFrame(
            {"rank": t["rank"], "region": t["region"].astype(str), "w": work, "b": wait}
        )
        for (rank, region), x in g.groupby(["rank", "region"]):
            add(region_node[region], rank, -1, "openmp_s", float(x["w"].sum()))
            add(region_node[region], rank, -1, "openmp_barrier_s", float(x["b"].sum()))
    values = pd.DataFrame(vals, columns=["node", "rank", "thread", "metric", "value"])

    # ---- wait states ----------------------------------------------------------------
    waits = None
    if trace_tl is not None:
        from ..diagnose import waits as wst

        ws = wst.find(trace_tl).waits if len(trace_tl.calls) else None
        cols = ["rank", "thread", "node", "kind", "lost_s", "direct_s", "function", "site"]
        if ws is None or not len(ws):
            waits = pd.DataFrame(columns=cols)
        else:
            node = [
                site_of.get((str(fn), site), func_node.get(str(fn), 0))
                for fn, site in zip(ws["function"], ws["site"])
            ]
            waits = pd.DataFrame(
                {
                    "rank": ws["rank"].astype(int).to_numpy(),
                    "thread": ws["thread"].astype(int).to_numpy(),
                    "node": node,
                    "kind": ws["kind"].to_numpy(),
                    "lost_s": ws["lost_s"].astype(float).to_numpy(),
                    "direct_s": ws["direct_s"].astype(float).to_numpy(),
                    "function": ws["function"].to_numpy(),
                    "site": ws["site"].to_numpy(),
                }
            )
    else:
        notes.append(
            f"{p.path}: no event trace (the program was profiled without --trace): the "
            "wait-state metrics (" + ", ".join(WAIT_KINDS) + ") are absent; "
            "`commscope profile --trace` records them"
        )
    useful, _basis = eff.useful_times(p, trace_tl)
    return Tree(
        run_path=str(p.path),
        meta=p.meta,
        nodes=nodes,
        values=values,
        locations=loc,
        waits=waits,
        useful=useful,
        nranks=int(len(ranks)),
        has_callsites=sites is not None,
        has_openmp=has_openmp,
        notes=notes,
    )


def run_facts(meta):
    """meta.json's facts as flat scalars (the top-level metadata Thicket groups by)."""
    par = meta.get("parameters") or {}
    mpi = meta.get("mpi") or {}
    hosts = meta.get("hosts") or []
    prog = par.get("program")
    facts = {
        "commscope.version": meta.get("commscope_version"),
        "run": None,
        "kind": meta.get("kind"),
        "status": meta.get("status"),
        "start_time": meta.get("start_time"),
        "end_time": meta.get("end_time"),
        "command_line": meta.get("command_line"),
        "program": os.path.basename(str(prog)) if prog else None,
        "program_path": str(prog) if prog else None,
        "args": " ".join(str(a) for a in par.get("args") or []),
        "ranks": par.get("ranks"),
        "mpi.world.size": par.get("ranks"),
        "threads": par.get("threads"),
        "mpi": mpi.get("name"),
        "mpi_flavor": mpi.get("flavor"),
        "mpi_library": mpi.get("library_version"),
        "mpi_version": mpi.get("mpi_version"),
        "thread_level": mpi.get("thread_level_provided"),
        "hosts": ",".join(str(h) for h in hosts),
        "node_count": len(hosts),
        "trace": bool(par.get("trace")),
        "callsite_depth": par.get("callsite_depth"),
        "counters": ",".join(str(c) for c in par.get("counters") or []),
        "wall_s": meta.get("wall_s"),
    }
    return {k: v for k, v in facts.items() if v is not None or k == "run"}
