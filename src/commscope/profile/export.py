"""Export a profile run for trace viewers: Perfetto (Chrome trace-event JSON) and OTF2.

``commscope export RUN --format perfetto|otf2`` (docs/export.md) calls
:func:`export_run`.  What is exported:

* with an event trace (``profile --trace``): every traced call, one per group of
  trace records a thread wrote with the same entry time (a ``MPI_Waitall`` that
  completed 20 requests is one call with 20 records, an ``MPI_Sendrecv`` one call with
  a send and a receive record).  The records carry what the call did (send, receive,
  nonblocking post, completion, probe), not which ``MPI_*`` function it was, so a call
  is named by what it did (:data:`KIND_NAMES`);
* the messages: every send paired with its receive by (source, destination,
  communicator, tag) in order (MPI's non-overtaking rule), sends in the order they
  started, receives in the order they were posted (:func:`match_messages`);
* the snapshots (messages, bytes, calls and time in MPI over time, per rank);
* the per-function totals (``functions`` table) and the communicators;
* with OMPT data (``profile --ompt``, the ``threads`` table): per rank, one location
  (OTF2) or track (Perfetto) per OpenMP thread, with each segment (start -> arrival at
  the next barrier) as an OpenMP region and the barrier wait (arrival -> leave) as a
  barrier region (:func:`openmp_slices`).  OpenMP threads are numbered by OpenMP, not
  by the threads that call MPI, so they are kept apart from the MPI threads.

Times: the trace's ticks become CLOCK_MONOTONIC nanoseconds of the rank's node, moved
onto rank 0's clock by the offsets measured in the job
(:class:`~commscope.collect.trace.Trace`), and the snapshots are placed on the same
clock from their raw records, so calls and counters line up.  The OMPT table's times
are seconds after its ``rank_t0_ns`` on the node's clock (CLOCK_MONOTONIC), moved the
same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import EnvironmentProblem, InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

FORMATS = ("perfetto", "otf2")
DEFAULT_NAMES = {"perfetto": "trace.json", "otf2": "traces.otf2"}

#: What a call did, by the kinds of its trace records: the names of calls whose records
#: do not name their MPI function (version 1 traces; docs/export.md).
KIND_NAMES = {
    "SEND": "send",
    "ISEND": "isend",
    "RECV": "recv",
    "IRECV": "irecv",
    "COMPLETE": "wait/test",
    "PROBE": "probe",
    "COLL": "collective",
    "ICOLL": "icollective",
    "COLL_DONE": "wait/test",
    "MARK": "mark",
}
_KIND_ORDER = (
    "SEND",
    "ISEND",
    "RECV",
    "IRECV",
    "PROBE",
    "COMPLETE",
    "COLL",
    "ICOLL",
    "COLL_DONE",
    "MARK",
)
COLLECTIVE_EVENTS = ("COLL", "ICOLL", "COLL_DONE")

#: OTF2 collective operation of each collective's stem (MPI_Ibcast, MPI_Bcast_init and
#: MPI_Bcast_c are all "bcast"); neighbourhood collectives by their global pattern.
COLLECTIVE_OPS = {
    s: s.upper()
    for s in (
        "barrier",
        "bcast",
        "reduce",
        "allreduce",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "exscan",
    )
}


def collective_stem(function):
    """``MPI_Ineighbor_alltoallv_c`` -> ``alltoallv``; None for a non-collective."""
    if not isinstance(function, str) or not function.startswith("MPI_"):
        return None
    stem = function[4:].lower()
    for suffix in ("_c", "_init"):
        stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
    if (
        stem not in COLLECTIVE_OPS
        and stem.startswith("i")
        and stem[1:] in set(COLLECTIVE_OPS) | {"neighbor_" + k for k in COLLECTIVE_OPS}
    ):
        stem = stem[1:]
    stem = stem[len("neighbor_") :] if stem.startswith("neighbor_") else stem
    return stem if stem in COLLECTIVE_OPS else None


_COMBINED = {("SEND", "RECV"): "sendrecv", ("SEND", "IRECV"): "isendrecv"}

#: Snapshot columns exported as counters: track name -> {series name: column}.
COUNTER_TRACKS = {
    "messages": {"sent": "messages_sent", "received": "messages_received"},
    "bytes": {"sent": "bytes_sent", "received": "bytes_received"},
    "calls": {"calls": "calls"},
    "mpi_time_s": {"mpi_time_s": "mpi_time_s"},
}
RECV_SIDE = 1


# ---- what a run holds ------------------------------------------------------------------


def require_profile(run):
    if run.kind != "profile":
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"is a {run.kind!r} run; only profile runs (commscope profile) are exported",
        )


def load_trace(run):
    """The run's :class:`~commscope.collect.trace.Trace`, or None without ``--trace``
    (or, in an interrupted run, when every trace file is gone).  The trace is checked
    against what the run counted first (:mod:`commscope.collect.completeness`): a whole
    run with a gap is an InputError; ``Trace.completeness`` says what an unfinished
    one misses."""
    from ..collect import completeness
    from ..collect.trace import read_trace, trace_files

    gaps = completeness.check(run)
    if not trace_files(run.raw_dir):
        return None
    trace = read_trace(run.raw_dir)
    matched = match_messages(trace) if len(trace.events) else None
    trace.completeness = completeness.partners(gaps, matched)
    return trace


def call_names(events):
    """Per trace record, the id of the call it belongs to and that call's name.

    A call is a run of consecutive records of one thread with the same entry tick
    (``t_begin``): every record a wrapper writes carries its call's entry time.
    """
    ev = events
    rank, thread, tb = (ev[c].to_numpy() for c in ("rank", "thread", "t_begin"))
    func = ev["func"].to_numpy() if "func" in ev else np.zeros(len(ev), np.int64)
    new = np.ones(len(ev), bool)
    if len(ev) > 1:
        new[1:] = (
            (rank[1:] != rank[:-1])
            | (thread[1:] != thread[:-1])
            | (tb[1:] != tb[:-1])
            | (func[1:] != func[:-1])
        )
    call = np.cumsum(new) - 1
    if not len(ev):
        return call, np.zeros(0, dtype=object)
    bit = np.zeros(len(ev), np.int64)
    event = ev["event"].to_numpy()
    for i, k in enumerate(_KIND_ORDER):
        bit[event == k] = 1 << i
    mask = np.bitwise_or.reduceat(bit, np.flatnonzero(new))  # calls are runs of records
    names = {}
    for m in np.unique(mask).tolist():
        combo = tuple(k for i, k in enumerate(_KIND_ORDER) if m >> i & 1)
        names[m] = "MPI " + _COMBINED.get(combo, "+".join(KIND_NAMES[k] for k in combo))
    out = np.array([names[m] for m in mask.tolist()], dtype=object)
    if "function" in ev:  # version 2 and later traces name the function (one per call)
        fn = ev["function"].to_numpy()[np.flatnonzero(new)]
        known = np.array([isinstance(f, str) for f in fn], bool)
        out[known] = fn[known]
    return call, out


def calls_table(trace, named=None, ns=None):
    """One row per traced call: call, rank, thread, name, time_begin_s, time_end_s,
    t_begin_ns, t_end_ns (CLOCK_MONOTONIC ns, on rank 0's clock when the run has clock
    offsets), records, callsite (``name.c:42``, None when unknown: every record of a
    call has its call's site)."""
    ev = trace.events
    call, names = named if named is not None else call_names(ev)
    ns_b, ns_e = ns if ns is not None else _record_ns(trace)
    df = pd.DataFrame(
        {
            "call": call,
            "rank": ev["rank"].to_numpy(),
            "thread": ev["thread"].to_numpy(),
            "time_begin_s": ev["time_begin_s"].to_numpy(),
            "time_end_s": ev["time_end_s"].to_numpy(),
            "t_begin_ns": ns_b,
            "t_end_ns": ns_e,
        }
    )
    out = (
        df.groupby("call", sort=True)
        .agg(
            rank=("rank", "first"),
            thread=("thread", "first"),
            time_begin_s=("time_begin_s", "first"),
            time_end_s=("time_end_s", "max"),
            t_begin_ns=("t_begin_ns", "first"),
            t_end_ns=("t_end_ns", "max"),
            records=("rank", "size"),
        )
        .reset_index()
    )
    out.insert(3, "name", names)
    first = np.r_[0, np.flatnonzero(np.diff(call)) + 1] if len(call) else np.zeros(0, np.int64)
    out["callsite"] = (
        ev["callsite"].to_numpy()[first]
        if "callsite" in ev
        else np.full(len(out), None, dtype=object)
    )
    return out


def _record_ns(trace):
    """Begin and end of every record, integer nanoseconds on its node's monotonic clock."""
    ev = trace.events
    b = np.empty(len(ev), np.int64)
    e = np.empty(len(ev), np.int64)
    for rank, idx in ev.groupby("rank").indices.items():
        b[idx] = np.rint(trace.ns_of(rank, ev["t_begin"].to_numpy()[idx])).astype(np.int64)
        e[idx] = np.rint(trace.ns_of(rank, ev["t_end"].to_numpy()[idx])).astype(np.int64)
    return b, e


def _start_of_completions(ev):
    """For every record, the event and begin time of the latest start (ISEND/IRECV) of
    its request on its rank (persistent requests start again under the same id)."""
    kind = pd.Series(np.nan, index=ev.index, dtype=object)
    post = pd.Series(np.nan, index=ev.index)
    req = ev[ev["request"] != 0].sort_values(["rank", "request", "t_end", "record"], kind="stable")
    if len(req):
        is_start = req["event"].isin(["ISEND", "IRECV"])
        k = req["event"].where(is_start)
        t = req["time_begin_s"].where(is_start)
        keys = [req["rank"], req["request"]]
        kind.loc[req.index] = k.groupby(keys).ffill()
        post.loc[req.index] = t.groupby(keys).ffill()
    return kind, post


def match_messages(trace):
    """Every send paired with its receive: a DataFrame with send (row of trace.events),
    recv (row, -1 when no receive matched), src, dst (world ranks), comm_key, tag,
    bytes (sent), and the unmatched receives as rows with send = -1.

    Sends are SEND and ISEND records (MPI_Start of a persistent send included) to a
    real peer, in the order they began on the sending rank; receives are blocking
    RECV records and receive-side completions, holding the matched source and tag from
    the status, in the order they were posted.  The k-th send and the k-th receive of
    one (source, destination, communicator, tag) are one message (non-overtaking).
    """
    from ..collect.trace import comm_labels

    ev = trace.events
    _, post = _start_of_completions(ev)
    # object, not str: a str column would copy every record's text (the members of a
    # world communicator: kilobytes a record at a thousand ranks)
    key = pd.Series(comm_labels(ev), index=ev.index, dtype=object)
    send = ev[ev["event"].isin(["SEND", "ISEND"]) & (ev["peer_world"] >= 0)]
    recv_mask = (ev["event"] == "RECV") | (
        (ev["event"] == "COMPLETE") & ((ev["flags"] & RECV_SIDE) != 0)
    )
    recv = ev[recv_mask & (ev["peer_world"] >= 0)]
    s = pd.DataFrame(
        {
            "send": send.index,
            "src": send["rank"].to_numpy(),
            "dst": send["peer_world"].to_numpy(),
            "comm": pd.Series(key[send.index].to_numpy(), dtype=object),
            "tag": send["tag"].to_numpy(),
            "order": send["time_begin_s"].to_numpy(),
            "order2": send["record"].to_numpy(),
        }
    )
    posted = np.where(recv["event"] == "RECV", recv["time_begin_s"], post[recv.index])
    posted = np.where(np.isnan(posted.astype(float)), recv["time_begin_s"], posted).astype(float)
    r = pd.DataFrame(
        {
            "recv": recv.index,
            "src": recv["peer_world"].to_numpy(),
            "dst": recv["rank"].to_numpy(),
            "comm": pd.Series(key[recv.index].to_numpy(), dtype=object),
            "tag": recv["tag"].to_numpy(),
            "order": posted,
            "order2": recv["time_end_s"].to_numpy(),
        }
    )
    cols = ["src", "dst", "comm", "tag"]
    s, r = (d.sort_values(["order", "order2"], kind="stable") for d in (s, r))
    s["seq"] = s.groupby(cols).cumcount()
    r["seq"] = r.groupby(cols).cumcount()
    m = s.drop(columns=["order", "order2"]).merge(
        r.drop(columns=["order", "order2"]), on=[*cols, "seq"], how="outer"
    )
    m["send"] = m["send"].fillna(-1).astype(np.int64)
    m["recv"] = m["recv"].fillna(-1).astype(np.int64)
    m["bytes"] = np.where(m["send"] >= 0, ev["bytes"].reindex(m["send"]).to_numpy(), 0)
    return m.sort_values(["send", "recv"]).reset_index(drop=True)


def snapshot_times(run, snapshots):
    """Each snapshot row's time on its node's monotonic clock, in ns (from the raw
    snapshot records), or None when the raw files are gone (then ``time_s`` is used)."""
    from ..collect.node_files import load_node_meta, node_keys, read_snapshots

    frames = []
    try:
        for key in node_keys(run.raw_dir):
            meta = load_node_meta(run.raw_dir / f"node.{key}.json")
            snaps, _ = read_snapshots(run.raw_dir, meta)
            frames.append(pd.DataFrame({"rank": snaps.rank, "seq": snaps.seq, "ns": snaps.ns}))
    except (InputError, OSError, KeyError):
        return None
    if not frames:
        return None
    ns = pd.concat(frames).drop_duplicates(["rank", "seq"])
    got = snapshots[["rank", "seq"]].merge(ns, on=["rank", "seq"], how="left")["ns"]
    return None if got.isna().any() else got.to_numpy(np.int64)


#: OMPT table columns the export needs (commscope.collect.ompt's module docstring).
OMPT_COLUMNS = (
    "rank",
    "thread",
    "region",
    "instance",
    "segment",
    "barrier",
    "start_s",
    "arrival_s",
    "leave_s",
    "rank_t0_ns",
)
#: Perfetto thread ids of OpenMP threads: this plus the OpenMP thread number, apart
#: from the ids of the MPI-calling threads (0, 1, ...).
OPENMP_TID_BASE = 100000


def openmp_slices(threads, path="threads.parquet"):
    """The OMPT ``threads`` table as slices, one row each: rank, omp_thread, name,
    kind ("segment" or "barrier"), barrier (kind of barrier the segment ends at:
    closing, explicit, workshare, ...), region (the segment's region), instance,
    segment, begin_ns, end_ns (CLOCK_MONOTONIC), sorted per (rank, omp_thread) by time.

    A segment row of the table becomes two slices: the segment (start -> arrival),
    named by its region, and the barrier wait (arrival -> leave), named
    ``<barrier> barrier @ <region>``."""
    missing = [c for c in OMPT_COLUMNS if c not in threads.columns]
    if missing:
        raise InputError(path, missing[0], "missing from the OMPT table (commscope profile --ompt)")
    t = threads.reset_index(drop=True)
    t0 = t["rank_t0_ns"].to_numpy(np.int64)
    ns = {
        c: t0 + np.rint(t[c].to_numpy(np.float64) * 1e9).astype(np.int64)
        for c in ("start_s", "arrival_s", "leave_s")
    }
    region = t["region"].astype(str).to_numpy()
    barrier = t["barrier"].astype(str).to_numpy()
    common = {
        "rank": t["rank"].to_numpy(np.int64),
        "omp_thread": t["thread"].to_numpy(np.int64),
        "barrier": barrier,
        "region": region,
        "instance": t["instance"].to_numpy(np.int64),
        "segment": t["segment"].to_numpy(np.int64),
    }
    seg = pd.DataFrame(
        {
            **common,
            "name": region,
            "kind": "segment",
            "begin_ns": ns["start_s"],
            "end_ns": ns["arrival_s"],
        }
    )
    bar = pd.DataFrame(
        {
            **common,
            "name": [f"{b} barrier @ {r}" for b, r in zip(barrier, region)],
            "kind": "barrier",
            "begin_ns": ns["arrival_s"],
            "end_ns": ns["leave_s"],
        }
    )
    out = pd.concat([seg, bar], ignore_index=True)
    out["order"] = np.where(out["kind"] == "segment", 0, 1)  # a segment before its wait
    out = (
        out.sort_values(
            ["rank", "omp_thread", "begin_ns", "instance", "segment", "order"], kind="stable"
        )
        .drop(columns="order")
        .reset_index(drop=True)
    )
    return out


class Contents:
    """Everything an exporter writes, read and checked once."""

    def __init__(self, run):
        require_profile(run)
        self.run = run
        tables = set(run.tables())
        if "ranks" not in tables:
            raise InputError(
                run.path / "ranks.parquet",
                None,
                "missing: the profile was not converted (is it still running?)",
            )
        self.ranks = run.table("ranks").sort_values("rank").reset_index(drop=True)
        self.snapshots = (
            (
                run.table("snapshots")
                if "snapshots" in tables
                else pd.DataFrame({"rank": [], "seq": [], "time_s": []})
            )
            .sort_values(["rank", "seq"])
            .reset_index(drop=True)
        )
        self.functions = run.table("functions") if "functions" in tables else None
        self.communicators = run.table("communicators") if "communicators" in tables else None
        self.trace = load_trace(run)
        snap_ns = snapshot_times(run, self.snapshots)
        if snap_ns is not None and self.trace is not None and self.trace.alignment:
            # on rank 0's clock, as the trace's records are
            snap_ns = snap_ns.copy()
            for rank, idx in self.snapshots.groupby("rank").indices.items():
                snap_ns[idx] = np.rint(self.trace.align_ns(int(rank), snap_ns[idx])).astype(
                    np.int64
                )
        if self.trace is not None:
            self.t0_ns = int(self.trace.t0_ns)
            named = call_names(self.trace.events)
            self.records_ns = _record_ns(self.trace)
            self.calls = calls_table(self.trace, named, self.records_ns)
            self.messages = match_messages(self.trace)
            self.call_of_record = pd.Series(named[0], index=self.trace.events.index)
        else:
            self.calls = self.messages = None
            self.t0_ns = int(snap_ns.min()) if snap_ns is not None and len(snap_ns) else 0
        if snap_ns is not None:
            self.snapshot_ns = snap_ns
        else:  # per rank from its first snapshot
            self.snapshot_ns = self.t0_ns + np.rint(
                self.snapshots["time_s"].to_numpy() * 1e9
            ).astype(np.int64)
        self.openmp = openmp_slices(run.table("threads")) if "threads" in tables else None
        if self.openmp is not None and not len(self.openmp):
            self.openmp = None
        if self.openmp is not None and self.trace is not None and self.trace.alignment:
            for rank, idx in self.openmp.groupby("rank").indices.items():
                for col in ("begin_ns", "end_ns"):
                    at = self.openmp.columns.get_loc(col)
                    ns = self.openmp.iloc[idx, at].to_numpy(np.int64)
                    self.openmp.iloc[idx, at] = np.rint(self.trace.align_ns(int(rank), ns)).astype(
                        np.int64
                    )
        self.threads = self._threads()
        self.comms = self._comms()

    def _threads(self):
        """(rank, thread) of every thread with counters or trace records."""
        pairs = set()
        if self.functions is not None:
            f = self.functions[self.functions["thread"] >= 0]
            pairs |= set(zip(f["rank"].astype(int), f["thread"].astype(int)))
        if self.trace is not None:
            ev = self.trace.events
            pairs |= set(zip(ev["rank"].astype(int), ev["thread"].astype(int)))
        ranks = set(self.ranks["rank"].astype(int))
        pairs |= {(r, 0) for r in ranks if not any(p[0] == r for p in pairs)}
        return sorted(pairs)

    def _comms(self):
        """Communicators across ranks: key -> {index, name, created_by, world_ranks,
        parent (key), inter}; fills ``comm_key_of``: (rank, comm_id) -> key.

        One communicator has a different id on each rank; its key (members, and how many
        communicators with those members the rank created before) is the trace reader's
        (:func:`~commscope.collect.trace.read_comms`)."""
        from ..collect.trace import read_comms
        from ..collect.node_files import expand_ranks

        self.comm_key_of = {}
        out = {}
        table = self.communicators
        if self.trace is not None:
            keyed = self.trace.comms
        elif table is not None and len(table):
            c = table.copy()
            try:  # text in the table: "0-3 7", as the raw comms file has it
                c["world_ranks"] = [expand_ranks(w) for w in c["world_ranks"]]
            except ValueError:
                raise InputError(
                    self.run.path / "communicators.parquet",
                    "world_ranks",
                    "expected ranks and runs of ranks (0-3 7)",
                ) from None
            c["size"] = c["members"]
            keyed = pd.concat(
                [
                    read_comms(c, self.run.path / "communicators.parquet", r)
                    for r in sorted(set(c["rank"].astype(int)))
                ],
                ignore_index=True,
            )
        else:
            return out
        extra = {}
        if table is not None and len(table):
            for row in table.itertuples(index=False):
                extra[(int(row.rank), int(row.comm_id))] = (
                    int(getattr(row, "parent_id", -1)),
                    bool(getattr(row, "inter", False)),
                )
        for row in keyed.itertuples(index=False):
            self.comm_key_of[(int(row.rank), int(row.comm_id))] = row.key
        for row in keyed.itertuples(index=False):
            if row.key in out:
                continue
            parent_id, inter = extra.get((int(row.rank), int(row.comm_id)), (-1, False))
            out[row.key] = {
                "index": len(out),
                "created_by": str(row.created_by),
                "world_ranks": tuple(int(w) for w in row.world_ranks),
                "parent": self.comm_key_of.get((int(row.rank), parent_id)),
                "inter": inter,
            }
        for d in out.values():
            d["name"] = (
                d["created_by"]
                if d["created_by"] in ("MPI_COMM_WORLD", "MPI_COMM_SELF")
                else f"comm {d['index']}"
            )
        return out

    def comm_name(self, rank, comm_id):
        key = self.comm_key_of.get((int(rank), int(comm_id)))
        return (
            self.comms[key]["name"]
            if key in self.comms
            else f"comm id {int(comm_id)} of rank {int(rank)}"
        )

    def host(self, rank):
        row = self.ranks[self.ranks["rank"] == rank]
        return str(row["host"].iloc[0]) if len(row) and "host" in row else "?"


# ---- Perfetto / Chrome trace-event JSON ------------------------------------------------------


def _us(ns, t0):
    return round((int(ns) - t0) / 1000.0, 3)


def _json_events(c):
    """Every trace event, as dicts, in the order written."""
    t0 = c.t0_ns
    if c.openmp is not None and c.t0_ns:  # a region before the first call or snapshot
        t0 = min(t0, int(c.openmp["begin_ns"].min()))
    for r in c.ranks["rank"].astype(int):
        yield {
            "name": "process_name",
            "ph": "M",
            "pid": r,
            "tid": 0,
            "args": {"name": f"rank {r} ({c.host(r)})"},
        }
        yield {
            "name": "process_sort_index",
            "ph": "M",
            "pid": r,
            "tid": 0,
            "args": {"sort_index": r},
        }
    for r, t in c.threads:
        yield {
            "name": "thread_name",
            "ph": "M",
            "pid": r,
            "tid": t,
            "args": {"name": f"thread {t}"},
        }
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": r,
            "tid": t,
            "args": {"sort_index": t},
        }
    if c.openmp is not None:
        yield from _json_openmp(c, t0)
    if c.trace is not None:
        yield from _json_calls(c, t0)
    yield from _json_counters(c, t0)


def _json_calls(c, t0):
    ev = c.trace.events
    b_ns, e_ns = c.records_ns
    call_of = c.call_of_record.to_numpy()
    # flows: out of the send's call, into the call that completed the receive
    m = c.messages[(c.messages["send"] >= 0) & (c.messages["recv"] >= 0)]
    flow_out, flow_in = {}, {}
    for i, (s, r) in enumerate(zip(m["send"].to_numpy(), m["recv"].to_numpy())):
        flow_out.setdefault(int(call_of[s]), []).append(i)
        flow_in.setdefault(int(call_of[r]), []).append(i)
    cols = {
        k: ev[k].to_numpy()
        for k in (
            "peer_world",
            "peer",
            "tag",
            "bytes",
            "comm",
            "rank",
            "event",
            "request",
            "bytes_received",
            "collective",
        )
    }
    starts = np.r_[0, np.flatnonzero(np.diff(call_of)) + 1]
    ends = np.r_[starts[1:], len(call_of)]
    for row, (lo, hi) in zip(c.calls.itertuples(index=False), zip(starts, ends)):
        begin = _us(row.t_begin_ns, t0)
        end = _us(row.t_end_ns, t0)
        pid, tid = int(row.rank), int(row.thread)
        recs = [_record_args(c, cols, i) for i in range(lo, hi)]
        if hi - lo == 1:
            args = recs[0]
        else:
            keys = list(dict.fromkeys(k for r in recs for k in r))
            args = {
                "records": int(hi - lo),
                **{k: [r.get(k) for r in recs] for k in keys},
                "events": [str(cols["event"][i]) for i in range(lo, hi)],
            }
        if isinstance(row.callsite, str):
            args["callsite"] = row.callsite
        yield {
            "name": row.name,
            "cat": "mpi",
            "ph": "X",
            "ts": begin,
            "dur": round(max(end - begin, 0.0), 3),
            "pid": pid,
            "tid": tid,
            "args": args,
        }
        mid = round((begin + end) / 2, 3)  # strictly inside the slice the flow binds to
        for i in flow_out.get(int(row.call), ()):
            yield {
                "name": "message",
                "cat": "mpi",
                "ph": "s",
                "id": i,
                "ts": mid,
                "pid": pid,
                "tid": tid,
            }
        for i in flow_in.get(int(row.call), ()):
            yield {
                "name": "message",
                "cat": "mpi",
                "ph": "f",
                "bp": "e",
                "id": i,
                "ts": mid,
                "pid": pid,
                "tid": tid,
            }


def _json_openmp(c, t0):
    """A track per OpenMP thread in its rank's process (after the MPI threads), with a
    slice per segment and per barrier wait."""
    o = c.openmp
    for r, k in sorted(set(zip(o["rank"].tolist(), o["omp_thread"].tolist()))):
        tid = OPENMP_TID_BASE + k
        yield {
            "name": "thread_name",
            "ph": "M",
            "pid": r,
            "tid": tid,
            "args": {"name": f"OpenMP thread {k}"},
        }
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": r,
            "tid": tid,
            "args": {"sort_index": tid},
        }
    for row in o.itertuples(index=False):
        begin, end = _us(row.begin_ns, t0), _us(row.end_ns, t0)
        yield {
            "name": row.name,
            "cat": "openmp",
            "ph": "X",
            "ts": begin,
            "dur": round(max(end - begin, 0.0), 3),
            "pid": int(row.rank),
            "tid": OPENMP_TID_BASE + int(row.omp_thread),
            "args": {
                "region": row.region,
                "instance": int(row.instance),
                "segment": int(row.segment),
                "barrier": row.barrier,
                "kind": row.kind,
            },
        }


def _record_args(c, cols, i):
    """A trace record's args: peer (world rank), tag, comm and bytes of a point-to-point
    record; collective (its function), comm, root (rank in comm; -1 none), root_world,
    bytes_sent, bytes_received and request (0: blocking) of a collective one."""
    comm = c.comm_name(cols["rank"][i], cols["comm"][i])
    if cols["event"][i] in COLLECTIVE_EVENTS:
        root = int(cols["peer"][i])
        return {
            "collective": cols["collective"][i],
            "comm": comm,
            "root": root if root >= 0 else -1,
            "root_world": int(cols["peer_world"][i]),
            "bytes_sent": int(cols["bytes"][i]),
            "bytes_received": int(cols["bytes_received"][i]),
            "request": int(cols["request"][i]),
        }
    return {
        "peer": int(cols["peer_world"][i]),
        "tag": int(cols["tag"][i]),
        "comm": comm,
        "bytes": int(cols["bytes"][i]),
    }


def _json_counters(c, t0):
    s = c.snapshots
    ns = c.snapshot_ns
    for track, series in COUNTER_TRACKS.items():
        cols = [col for col in series.values() if col in s.columns]
        if not cols or s[cols].isna().all().all():
            continue
        values = s[cols].to_numpy()
        ranks = s["rank"].to_numpy()
        for i in range(len(s)):
            args = {
                name: (float(v) if track == "mpi_time_s" else int(v))
                for (name, col), v in zip(series.items(), values[i])
                if not pd.isna(v)
            }
            yield {
                "name": track,
                "ph": "C",
                "ts": _us(ns[i], t0),
                "pid": int(ranks[i]),
                "args": args,
            }


def _other_data(c):
    meta = c.run.meta
    other = {
        "commscope_version": meta.get("commscope_version"),
        "run": str(c.run.path),
        "command_line": meta.get("command_line"),
        "start_time": meta.get("start_time"),
        "trace": c.trace is not None,
        "communicators": [
            {
                "name": d["name"],
                "created_by": d["created_by"],
                "world_ranks": list(d["world_ranks"]),
            }
            for d in c.comms.values()
        ],
    }
    if c.functions is not None:
        f = c.functions
        other["functions"] = [
            {
                "rank": int(r.rank),
                "thread": int(r.thread),
                "function": r.function,
                "calls": int(r.calls),
                "bytes": float(r.bytes),
                "time_s": None if pd.isna(r.time_s) else float(r.time_s),
            }
            for r in f.itertuples(index=False)
        ]
    return other


def _plain(obj):
    """numpy scalars as Python numbers (json.dumps knows only the latter)."""
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def write_perfetto(c, path):
    """Write the Chrome trace-event JSON object format; returns the number of events."""
    n = 0
    with open(path, "w") as fh:
        fh.write('{"displayTimeUnit":"ns","otherData":')
        fh.write(json.dumps(_other_data(c), separators=(",", ":"), default=_plain))
        fh.write(',"traceEvents":[\n')
        for ev in _json_events(c):
            fh.write((",\n" if n else "") + json.dumps(ev, separators=(",", ":"), default=_plain))
            n += 1
        fh.write("\n]}\n")
    return n


# ---- OTF2 -------------------------------------------------------------------------------------


def _otf2():
    try:
        import otf2
    except ImportError:
        raise EnvironmentProblem(
            "--format otf2 needs the otf2 package (the OTF2 library and its "
            "Python bindings): pip install 'commscope[export]' or pip "
            "install otf2"
        ) from None
    return otf2


def write_otf2(c, anchor):
    """Write an OTF2 archive whose anchor file is ``anchor`` (``<dir>/<name>.otf2``, with
    ``<name>.def`` and ``<name>/`` next to it); returns the number of events."""
    otf2 = _otf2()
    from otf2.enums import (
        GroupType,
        LocationType,
        MetricMode,
        MetricOccurrence,
        MetricType,
        Paradigm,
        RecorderKind,
        RegionRole,
        Type,
    )

    anchor = Path(anchor)
    name = anchor.name[: -len(".otf2")]
    n = 0
    with otf2.writer.open(
        str(anchor.parent), archive_name=name, timer_resolution=1_000_000_000
    ) as w:
        w.creator = "commscope export"
        d = w.definitions
        root = d.system_tree_node("machine")
        nodes, groups, locs, metric_locs = {}, {}, {}, {}
        for r in c.ranks["rank"].astype(int):
            host = c.host(r)
            if host not in nodes:
                nodes[host] = d.system_tree_node(host, class_name="node", parent=root)
            groups[r] = d.location_group(f"rank {r}", system_tree_parent=nodes[host])
        for r, t in c.threads:
            if r not in groups:
                groups[r] = d.location_group(f"rank {r}", system_tree_parent=root)
            locs[(r, t)] = d.location(f"thread {t}", type=LocationType.CPU_THREAD, group=groups[r])
        for r in groups:
            metric_locs[r] = d.location("snapshots", type=LocationType.METRIC, group=groups[r])
        # MPI communicators: rank i of the COMM_LOCATIONS group is world rank i's first thread
        ranks = sorted(groups)
        first = {r: min(t for rr, t in c.threads if rr == r) for r in ranks}
        comms = {}
        if ranks == list(range(len(ranks))) and c.comms:
            d.group(
                "MPI_COMM_WORLD locations",
                group_type=GroupType.COMM_LOCATIONS,
                paradigm=Paradigm.MPI,
                members=[locs[(r, first[r])] for r in ranks],
            )
            for key, info in c.comms.items():
                members = [w for w in info["world_ranks"] if 0 <= w < len(ranks)]
                g = d.group(
                    f"{info['name']} group",
                    group_type=GroupType.COMM_GROUP,
                    paradigm=Paradigm.MPI,
                    members=members,
                )
                comms[key] = d.comm(info["name"], group=g, parent=comms.get(info["parent"]))
        regions = {}
        if c.trace is not None:
            n += _otf2_calls(c, w, d, locs, comms, regions, RegionRole, Paradigm)
        if c.openmp is not None:
            n += _otf2_openmp(c, w, d, groups, RegionRole, Paradigm, LocationType)
        n += _otf2_metrics(
            c, w, d, metric_locs, MetricMode, MetricOccurrence, MetricType, RecorderKind, Type
        )
    return n


def _require_time_order(c):
    """A thread's calls begin in time order and end after they begin (OTF2 refuses
    anything else); a damaged trace file is named instead."""
    for (r, t), g in c.calls.groupby(["rank", "thread"], sort=False):
        b, e = g["t_begin_ns"].to_numpy(), g["t_end_ns"].to_numpy()
        if (np.diff(b) < 0).any() or (e < b).any():
            raise InputError(
                c.run.path / "raw" / f"trace.{r}.{t}.bin",
                "time",
                "calls out of time order (a damaged trace)",
            )


def _otf2_calls(c, w, d, locs, comms, regions, RegionRole, Paradigm):
    ev = c.trace.events
    b_ns, e_ns = c.records_ns
    call_of = c.call_of_record.to_numpy()
    start_kind, _ = _start_of_completions(ev)
    start_kind = start_kind.to_numpy()
    cols = {
        k: ev[k].to_numpy()
        for k in (
            "event",
            "peer",
            "tag",
            "bytes",
            "comm",
            "request",
            "flags",
            "rank",
            "bytes_received",
        )
    }
    fn = ev["collective"].to_numpy() if "collective" in ev else np.full(len(ev), None, dtype=object)
    from otf2.enums import CollectiveOp
    from otf2.events import NonBlockingCollectiveComplete, NonBlockingCollectiveRequest

    n = 0
    starts = np.r_[0, np.flatnonzero(np.diff(call_of)) + 1] if len(call_of) else np.zeros(0, int)
    ends = np.r_[starts[1:], len(call_of)]
    _require_time_order(c)
    writers = {}
    for row, lo, hi in zip(c.calls.itertuples(index=False), starts, ends):
        r, t = int(row.rank), int(row.thread)
        if (r, t) not in writers:
            writers[(r, t)] = w.event_writer_from_location(locs[(r, t)])
        wr = writers[(r, t)]
        name = row.name
        if name not in regions:
            regions[name] = d.region(
                name, paradigm=Paradigm.MPI, region_role=_region_role(name, RegionRole)
            )
        region = regions[name]
        wr.enter(int(row.t_begin_ns), region)
        n += 1
        inner = []
        for i in range(lo, hi):
            kind = cols["event"][i]
            comm = comms.get(c.comm_key_of.get((r, int(cols["comm"][i]))))
            peer, tag, size, req = (
                int(cols["peer"][i]),
                int(cols["tag"][i]),
                int(cols["bytes"][i]),
                int(cols["request"][i]),
            )
            tb, te = int(b_ns[i]), int(e_ns[i])
            if kind == "SEND" and comm is not None and peer >= 0:
                inner.append((tb, "mpi_send", (peer, comm, tag, size)))
            elif kind == "ISEND" and comm is not None and peer >= 0:
                inner.append((tb, "mpi_isend", (peer, comm, tag, size, req)))
            elif kind == "IRECV":
                inner.append((tb, "mpi_irecv_request", (req,)))
            elif kind == "RECV" and comm is not None and peer >= 0:
                inner.append((te, "mpi_recv", (peer, comm, tag, size)))
            elif kind == "COMPLETE":
                if int(cols["flags"][i]) & RECV_SIDE and comm is not None and peer >= 0:
                    inner.append((te, "mpi_irecv", (peer, comm, tag, size, req)))
                elif start_kind[i] == "IRECV":
                    inner.append((te, "mpi_request_cancelled", (req,)))
                else:
                    inner.append((te, "mpi_isend_complete", (req,)))
            elif kind in COLLECTIVE_EVENTS and comm is not None and collective_stem(fn[i]):
                op = getattr(CollectiveOp, COLLECTIVE_OPS[collective_stem(fn[i])])
                root = peer if peer >= 0 else UNDEFINED_UINT32
                sent, got = size, int(cols["bytes_received"][i])
                if kind == "COLL":  # blocking: the operation inside the call
                    inner.append((tb, "mpi_collective_begin", ()))
                    inner.append((te, "mpi_collective_end", (op, comm, root, sent, got)))
                elif kind == "ICOLL":
                    inner.append((tb, NonBlockingCollectiveRequest, (req,)))
                else:
                    inner.append(
                        (te, NonBlockingCollectiveComplete, (op, comm, root, sent, got, req))
                    )
        end = int(row.t_end_ns)
        for time, method, args in sorted(inner, key=lambda x: x[0]):
            time = min(max(time, int(row.t_begin_ns)), end)
            if isinstance(method, str):
                getattr(wr, method)(time, *args)
            else:  # an event the writer has no method for: written as an event object
                wr(method(time, *args))
            n += 1
        wr.leave(end, region)
        n += 1
    return n


def _otf2_openmp(c, w, d, groups, RegionRole, Paradigm, LocationType):
    """A CPU_THREAD location "OpenMP thread k" per OpenMP thread in its rank's group;
    Enter/Leave of a PARALLEL region per segment and of a barrier region per wait."""
    o = c.openmp
    regions, n = {}, 0
    for (r, k), rows in o.groupby(["rank", "omp_thread"], sort=True):
        if int(r) not in groups:  # a rank with OMPT data only
            groups[int(r)] = d.location_group(f"rank {int(r)}")
        loc = d.location(f"OpenMP thread {k}", type=LocationType.CPU_THREAD, group=groups[int(r)])
        wr = w.event_writer_from_location(loc)
        for row in rows.itertuples(index=False):
            if row.name not in regions:
                role = (
                    RegionRole.PARALLEL
                    if row.kind == "segment"
                    else (
                        RegionRole.BARRIER
                        if row.barrier == "explicit"
                        else RegionRole.IMPLICIT_BARRIER
                    )
                )
                regions[row.name] = d.region(row.name, paradigm=Paradigm.OPENMP, region_role=role)
            wr.enter(int(row.begin_ns), regions[row.name])
            wr.leave(int(row.end_ns), regions[row.name])
            n += 2
    return n


UNDEFINED_UINT32 = 0xFFFFFFFF  # OTF2_UNDEFINED_UINT32: no root


def _region_role(name, RegionRole):
    """OTF2 region role of an MPI function (Score-P's choice), by its name."""
    stem = collective_stem(name)
    if stem is None or name.endswith("_init") or name.startswith("MPI_I"):
        return RegionRole.POINT2POINT if stem is None else RegionRole.COLL_OTHER
    if stem == "barrier":
        return RegionRole.BARRIER
    if stem in ("bcast", "scatter", "scatterv"):
        return RegionRole.COLL_ONE2ALL
    if stem in ("reduce", "gather", "gatherv"):
        return RegionRole.COLL_ALL2ONE
    return RegionRole.COLL_ALL2ALL


def _otf2_metrics(
    c, w, d, metric_locs, MetricMode, MetricOccurrence, MetricType, RecorderKind, Type
):
    s = c.snapshots
    members, cols = [], []
    units = {
        "messages_sent": "messages",
        "messages_received": "messages",
        "bytes_sent": "bytes",
        "bytes_received": "bytes",
        "calls": "calls",
        "mpi_time_s": "s",
    }
    for col, unit in units.items():
        if col not in s.columns or s[col].isna().all():
            continue
        double = col == "mpi_time_s"
        members.append(
            d.metric_member(
                col,
                f"{col} since the rank started (commscope snapshots)",
                metric_type=MetricType.OTHER,
                metric_mode=MetricMode.ACCUMULATED_START,
                value_type=Type.DOUBLE if double else Type.UINT64,
                unit=unit,
            )
        )
        cols.append(col)
    if not members or not len(s):
        return 0
    mclass = d.metric_class(
        members, occurrence=MetricOccurrence.ASYNCHRONOUS, recorder_kind=RecorderKind.ABSTRACT
    )
    values = s[cols].fillna(0).to_numpy()
    ranks = s["rank"].to_numpy()
    n = 0
    writers = {}
    order = np.lexsort((c.snapshot_ns, ranks))
    for i in order:
        r = int(ranks[i])
        if r not in metric_locs:
            continue
        if r not in writers:
            writers[r] = w.event_writer_from_location(metric_locs[r])
        row = [float(v) if col == "mpi_time_s" else int(v) for col, v in zip(cols, values[i])]
        writers[r].metric(int(c.snapshot_ns[i]), mclass, row)
        n += 1
    return n


# ---- the command's library function ------------------------------------------------------


def default_output(run, fmt):
    return Path(run.path) / "export" / DEFAULT_NAMES[fmt]


def otf2_parts(anchor):
    """The files and directory an OTF2 archive with this anchor file consists of."""
    anchor = Path(anchor)
    base = anchor.with_name(anchor.name[: -len(".otf2")])
    return [anchor, base.with_name(base.name + ".def"), base]


def _size(path):
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size if path.exists() else 0


def _replaceable(path, fmt):
    """Whether --overwrite may replace ``path``: a file, or an OTF2 archive's directory of
    per-location files (never, say, a run directory that happens to share its name)."""
    if path.is_symlink() or not path.is_dir():
        return True
    return fmt == "otf2" and all(
        p.is_file() and p.suffix in (".evt", ".def", ".snap") for p in path.iterdir()
    )


def export_run(run, fmt, output=None, force=False):
    """Export ``run`` (an open profile run) as ``fmt``; returns what was written:
    path, format, events, calls, messages, unmatched, snapshots, ranks, threads, bytes,
    trace (False: the run has no event trace)."""
    from ..paths import atomic_output, prepare_output

    if fmt not in FORMATS:
        raise InputError("--format", None, f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    require_profile(run)
    if output is None:
        path = default_output(run, fmt)
        path.parent.mkdir(exist_ok=True)
    else:
        path = prepare_output(output)
    if fmt == "otf2" and not path.name.endswith(".otf2"):
        raise InputError(
            "-o",
            None,
            f"{path}: an OTF2 archive is named by its anchor file, "
            "which ends in .otf2 (e.g. traces.otf2)",
        )
    parts = otf2_parts(path) if fmt == "otf2" else [path]
    existing = [p for p in parts if p.exists() or p.is_symlink()]
    if existing and not force:
        raise InputError(
            existing[0], None, "exists; not overwriting it (pass --overwrite to replace it)"
        )
    for p in existing:
        if not _replaceable(p, fmt):
            raise InputError(
                p,
                None,
                "exists and is not an earlier export (a directory other "
                "than an OTF2 archive's event files); not replacing it, "
                "even with --overwrite: choose another -o",
            )
    if fmt == "otf2":
        _otf2()  # say what is missing before reading anything
    c = Contents(run)
    if fmt == "perfetto":
        with atomic_output(path) as tmp:
            events = write_perfetto(c, tmp)
    else:
        events = _write_otf2_in_place(c, path, parts)
    unmatched = 0
    if c.messages is not None:
        unmatched = int(((c.messages["send"] < 0) | (c.messages["recv"] < 0)).sum())
    return {
        "path": str(path),
        "format": fmt,
        "trace": c.trace is not None,
        "events": int(events),
        "calls": int(len(c.calls)) if c.calls is not None else 0,
        "trace_records": int(len(c.trace.events)) if c.trace is not None else 0,
        "messages": int(((c.messages["send"] >= 0) & (c.messages["recv"] >= 0)).sum())
        if c.messages is not None
        else 0,
        "unmatched_messages": unmatched,
        "snapshots": int(len(c.snapshots)),
        "ranks": int(len(c.ranks)),
        "threads": len(c.threads),
        "openmp_threads": 0
        if c.openmp is None
        else int(len(c.openmp.drop_duplicates(["rank", "omp_thread"]))),
        "openmp_slices": 0 if c.openmp is None else int(len(c.openmp)),
        "bytes": int(sum(_size(p) for p in parts)),
    }


def _write_otf2_in_place(c, path, parts):
    """Write into a fresh directory next to ``path``, then move the archive's parts into
    place: a failed export leaves no half archive under the final name."""
    tmpdir = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        events = write_otf2(c, tmpdir / path.name)
        for final in parts:
            if final.is_dir() and not final.is_symlink():
                shutil.rmtree(final)
            elif final.exists() or final.is_symlink():
                final.unlink()
            os.replace(tmpdir / final.name, final)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmpdir)
    return events


def no_trace_note(run):
    return (
        f"{run.path}: no event trace (the program was profiled without --trace): "
        "exported the snapshots as counters and the per-function totals; "
        "`commscope profile --trace` records every point-to-point call"
    )


__all__ = [
    "FORMATS",
    "export_run",
    "default_output",
    "match_messages",
    "calls_table",
    "load_trace",
    "no_trace_note",
    "otf2_parts",
    "Contents",
]
