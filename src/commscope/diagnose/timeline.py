"""The traced calls of a profile run, and what each one had to wait for.

A *call* is one entry into a wrapped MPI function by one thread: the trace records a
thread wrote with one entry tick (:func:`commscope.profile.export.call_names`).  A
*stream* is the calls of one (rank, thread) in order; the time between two calls of a
stream is that thread's work outside MPI (a *burst*).

A *link* says that a call could not end before a partner call had begun:

* ``message``: a receive (a blocking receive, or the Wait/Test that completed an
  Irecv) waits for the matched send's entry (messages are paired by
  :func:`commscope.profile.export.match_messages`: source, destination,
  communicator and tag, in order);
* ``sync_send``: a synchronising send (the ``MPI_Ssend`` family, or a message above
  the eager limit: rendezvous) waits for its receive to be posted; for an Isend, the
  Wait/Test that completed it waits;
* a collective waits for the entries of the other calls of its instance (the k-th
  collective of every member on one communicator; kept per instance, not as links, so
  a 128-rank Allreduce is 128 rows), by pattern:
  N x N (Allreduce, Barrier, Alltoall, ...) every other member, 1 x N (Bcast,
  Scatter) the non-roots wait for the root, N x 1 (Reduce, Gather) the root waits
  for the others.  A nonblocking collective's completion waits for its instance's
  starts.

Everything the wait states and the replay need is here, computed once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: Collective stems (:func:`commscope.profile.export.collective_stem`) by pattern.
ONE_TO_ALL = frozenset({"bcast", "scatter", "scatterv"})
ALL_TO_ONE = frozenset({"reduce", "gather", "gatherv"})
#: Functions whose send always waits for its receive (MPI's synchronous mode).
SYNCHRONOUS_SENDS = frozenset(
    {"MPI_Ssend", "MPI_Issend", "MPI_Ssend_init", "MPI_Ssend_c", "MPI_Issend_c", "MPI_Ssend_init_c"}
)


@dataclass
class Timeline:
    """The calls, their links and the run's window per rank (see the module docstring).

    ``calls``: call (= row number), rank, thread, stream, pos (in its stream),
    function, callsite (file:line; unresolved, the raw site ``app+0x11a9``; or None),
    comm (the communicator, the same text on every rank), start_s, end_s, bytes (sent +
    received by the call's records).
    ``links``: the point-to-point waits: call, partner (a call), kind ("message" or
    "sync_send"), bytes (the message's size), src, dst (world ranks).
    ``collectives``: one row per member of every collective instance (see
    :func:`_collectives`): instance, rank, comm, stem, pattern, root, entry_call,
    wait_call.
    ``window``: rank, init_s, fin_s: from the end of MPI_Init to MPI_Finalize on the
    trace's clock.  ``eager_max_bytes``: the largest message treated as eager (sends
    above it wait for their receive), and how that was decided (``eager_basis``).
    """

    calls: pd.DataFrame
    links: pd.DataFrame
    collectives: pd.DataFrame
    window: pd.DataFrame
    eager_max_bytes: float
    eager_basis: str
    host_of: dict = None
    t0_ns: int = 0  # the trace's time zero (CLOCK_MONOTONIC ns of the earliest rank)
    raw_dir: str | None = None  # the run's raw directory (to name a trace file)

    @property
    def runtime_s(self):
        """The run's time: from the first rank's MPI_Init to the last rank's MPI_Finalize."""
        return float(self.window["fin_s"].max() - self.window["init_s"].min())

    def stream_ids(self):
        return self.calls["stream"].unique()


def _stem(function):
    from ..profile.export import collective_stem

    return collective_stem(function)


def _calls(ev, names):
    """One row per call from the trace records (``names``: call_names' result)."""
    from ..collect.trace import comm_labels

    call, name = names
    first = np.flatnonzero(np.r_[True, call[1:] != call[:-1]]) if len(call) else np.zeros(0, int)
    size = np.where(ev["event"].isin(["COLL", "COLL_DONE"]), ev["bytes_received"], 0) + np.where(
        ev["event"].isin(["ICOLL", "COLL_DONE"]), 0, ev["bytes"]
    )
    end = pd.Series(ev["time_end_s"].to_numpy()).groupby(call).max().to_numpy()
    nbytes = pd.Series(np.asarray(size, dtype=float)).groupby(call).sum().to_numpy()
    # file:line, else the raw site (a program rebuilt after the run): sites stay apart
    col = "callsite_key" if "callsite_key" in ev else "callsite"
    site = ev[col].to_numpy()[first] if col in ev else np.full(len(first), None)
    site = np.array([_short_site(x) for x in site], dtype=object)
    calls = pd.DataFrame(
        {
            "call": np.arange(len(first)),
            "rank": ev["rank"].to_numpy()[first].astype(np.int64),
            "thread": ev["thread"].to_numpy()[first].astype(np.int64),
            "function": name,
            "callsite": site,
            "comm": pd.Series(comm_labels(ev)[first], dtype=object),  # shared, not copied
            "start_s": ev["time_begin_s"].to_numpy()[first],
            "end_s": end,
            "bytes": nbytes,
        }
    )
    calls["stream"] = calls.groupby(["rank", "thread"], sort=True).ngroup()
    calls["pos"] = calls.groupby("stream").cumcount()
    return calls


def _short_site(site):
    """``/path/to/halo.c:69`` -> ``halo.c:69`` (None stays None)."""
    if not isinstance(site, str) or not site:
        return None
    return site.rsplit("/", 1)[-1]


def _start_records(ev):
    """For every record with a request, the index of the latest start record (ISEND,
    IRECV, ICOLL) of that request on its rank before it (itself for a start); -1 none."""
    out = np.full(len(ev), -1, np.int64)
    req = ev[ev["request"] != 0]
    if not len(req):
        return out
    req = req.sort_values(["rank", "request", "t_end", "thread", "record"], kind="stable")
    is_start = req["event"].isin(["ISEND", "IRECV", "ICOLL"]).to_numpy()
    idx = pd.Series(np.where(is_start, req.index.to_numpy(), np.nan), index=req.index)
    filled = idx.groupby([req["rank"].to_numpy(), req["request"].to_numpy()]).ffill()
    out[req.index.to_numpy()] = filled.fillna(-1).to_numpy(np.int64)
    return out


def eager_limit(sends, posts, machine_model=None, locality="intra-socket"):
    """The largest message size treated as eager, and why.

    From the trace: a send whose receive was posted after it began either returned
    before the post (eager) or waited for it (rendezvous); the limit lies between the
    largest eager and the smallest rendezvous size seen.  What the run measured comes
    first: a machine model's breakpoints are used where the trace has no evidence, or
    agrees with them (no send that waited at or below the model's limit, none returned
    early above it).  Without either every message is treated as eager (no send waits
    for its receive).
    """
    # Evidence: blocking sends that are not synchronous, whose receive was posted later.
    later = posts > sends["start_s"].to_numpy() + 1e-6
    waited = sends["end_s"].to_numpy() > posts
    size = sends["bytes"].to_numpy(float)
    eager = size[later & ~waited]
    rendezvous = size[later & waited]
    largest_eager = eager.max() if eager.size else 0.0
    above = rendezvous[rendezvous > largest_eager]
    if machine_model is not None:
        bp = machine_model.breakpoints.get(locality)
        limits = (
            [v for v in (bp.eager_max_bytes, bp.short_max_bytes) if v is not None]
            if bp is not None
            else []
        )
        if limits:
            limit = float(max(limits))
            agrees = not (rendezvous <= limit).any() and not (eager > limit).any()
            if agrees:
                return limit, f"the machine model's eager limit ({locality})"
    if above.size:
        return float(above.min() - 1), "the trace: sends that waited for a later receive"
    if eager.size:
        return float("inf"), "the trace: sends up to the largest size returned before their receive"
    return float("inf"), "no evidence in the trace: every message treated as eager"


def build(trace, ranks, machine_model=None):
    """The :class:`Timeline` of a :class:`~commscope.collect.trace.Trace`; ``ranks`` is
    the run's ranks table (wall_s per rank)."""
    from ..profile.export import call_names, match_messages

    ev = trace.events.reset_index(drop=True)
    names = call_names(ev)
    calls = _calls(ev, names)
    call_of = names[0]
    start_rec = _start_records(ev)
    stems = (
        [_stem(f) if isinstance(f, str) else None for f in ev["collective"].to_numpy()]
        if "collective" in ev
        else [None] * len(ev)
    )

    # -- messages ------------------------------------------------------------------
    m = match_messages(trace)
    m = m[(m["send"] >= 0) & (m["recv"] >= 0)]
    send_rec, recv_rec = m["send"].to_numpy(), m["recv"].to_numpy()
    send_call, recv_call = call_of[send_rec], call_of[recv_rec]
    kind = ev["event"].to_numpy()
    # where the receive was posted: the RECV itself, or the IRECV that started the request
    post_rec = np.where(kind[recv_rec] == "RECV", recv_rec, start_rec[recv_rec])
    post_call = np.where(post_rec >= 0, call_of[np.maximum(post_rec, 0)], recv_call)
    start = calls["start_s"].to_numpy()
    end = calls["end_s"].to_numpy()
    msg_bytes = ev["bytes"].to_numpy()[send_rec].astype(float)
    fn = ev["function"].to_numpy()
    synchronous = np.array([f in SYNCHRONOUS_SENDS for f in fn[send_rec]], bool)
    blocking = kind[send_rec] == "SEND"
    ev_basis = blocking & ~synchronous
    locality = "intra-socket" if ranks["host"].nunique() <= 1 else "inter-node"
    eager_max, eager_basis = eager_limit(
        pd.DataFrame(
            {
                "start_s": start[send_call][ev_basis],
                "end_s": end[send_call][ev_basis],
                "bytes": msg_bytes[ev_basis],
            }
        ),
        start[post_call][ev_basis],
        machine_model,
        locality,
    )
    sync = synchronous | (msg_bytes > eager_max)
    links = [
        pd.DataFrame(
            {
                "call": recv_call,
                "partner": send_call,
                "kind": "message",
                "bytes": msg_bytes,
                "src": ev["rank"].to_numpy()[send_rec],
                "dst": ev["rank"].to_numpy()[recv_rec],
            }
        )
    ]
    # A synchronising send's waiting call: the SEND itself, or the Wait/Test completing
    # the Isend (the completion record whose start is this ISEND record).
    completes = np.flatnonzero((kind == "COMPLETE") & (start_rec >= 0))
    completion_of_start = pd.Series(completes, index=start_rec[completes])
    completion_of_start = completion_of_start[~completion_of_start.index.duplicated(keep="last")]
    waiting_rec = np.where(
        blocking, send_rec, completion_of_start.reindex(send_rec).fillna(-1).to_numpy(np.int64)
    )
    ok = sync & (waiting_rec >= 0)
    links.append(
        pd.DataFrame(
            {
                "call": call_of[waiting_rec[ok]],
                "partner": post_call[ok],
                "kind": "sync_send",
                "bytes": msg_bytes[ok],
                "src": ev["rank"].to_numpy()[send_rec[ok]],
                "dst": ev["rank"].to_numpy()[recv_rec[ok]],
            }
        )
    )

    links = pd.concat(links, ignore_index=True)
    links = links[links["call"] != links["partner"]].reset_index(drop=True)
    return Timeline(
        calls=calls,
        links=links,
        collectives=_collectives(ev, call_of, start_rec, stems),
        window=_window(trace, ranks),
        eager_max_bytes=eager_max,
        eager_basis=eager_basis,
        host_of=dict(zip(ranks["rank"].astype(int), ranks["host"].astype(str))),
        t0_ns=int(trace.t0_ns),
        raw_dir=getattr(trace, "raw_dir", None),
    )


def _collectives(ev, call_of, start_rec, stems):
    """One row per member of every collective instance: instance, rank, comm, stem,
    pattern, root (world rank, -1 none), entry_call (the call that began it) and
    wait_call (the call that waited for it: the blocking collective itself, or the
    Wait/Test completing a nonblocking one; -1 when that completion is not traced)."""
    from ..collect.trace import comm_labels

    kind = ev["event"].to_numpy()
    r = np.flatnonzero(np.isin(kind, ("COLL", "ICOLL")))
    c = pd.DataFrame(
        {
            "rec": r,
            "rank": ev["rank"].to_numpy()[r].astype(np.int64),
            "comm": pd.Series(comm_labels(ev)[r], dtype=object),
            "t": ev["time_begin_s"].to_numpy()[r],
            "root": ev["peer_world"].to_numpy()[r].astype(np.int64),
            "stem": np.asarray(stems, dtype=object)[r],
        }
    )
    c = c.sort_values(["rank", "comm", "t", "rec"], kind="stable")
    c["k"] = c.groupby(["rank", "comm"]).cumcount()
    c["instance"] = c.groupby(["comm", "k"], sort=False).ngroup()
    c["entry_call"] = call_of[c["rec"].to_numpy()]
    done = np.flatnonzero(kind == "COLL_DONE")
    done_of = pd.Series(call_of[done], index=start_rec[done])
    done_of = done_of[~done_of.index.duplicated(keep="last")]
    blocking = kind[c["rec"].to_numpy()] == "COLL"
    c["wait_call"] = np.where(
        blocking,
        c["entry_call"],
        done_of.reindex(c["rec"].to_numpy()).fillna(-1).to_numpy(np.int64),
    )
    stem = c["stem"].to_numpy()
    c["pattern"] = np.where(
        np.isin(stem, list(ONE_TO_ALL)),
        "1xn",
        np.where(np.isin(stem, list(ALL_TO_ONE)), "nx1", "nxn"),
    )
    c["root"] = np.where(c["pattern"] == "nxn", -1, c["root"])
    return (
        c.drop(columns=["rec", "t", "k"]).sort_values(["instance", "rank"]).reset_index(drop=True)
    )


def _window(trace, ranks):
    """Per rank: the end of MPI_Init (the counter block's first clock pair) and MPI_Finalize
    (its last), on the trace's clock."""
    rows = []
    wall = dict(zip(ranks["rank"].astype(int), ranks["wall_s"].astype(float)))
    for rank, (tick0, _ns0, tps) in trace.clocks.items():
        if rank not in wall:
            continue
        init = float(trace.time_s(rank, tick0))
        fin = float(trace.time_s(rank, tick0 + wall[rank] * tps))
        rows.append({"rank": int(rank), "init_s": init, "fin_s": fin})
    return pd.DataFrame(rows, columns=["rank", "init_s", "fin_s"])
