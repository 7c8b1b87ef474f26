"""Reader of `commscope profile --trace` event traces (raw/trace.<rank>.<thread>.bin).

Format (docs/profile.md): a 64-byte header {"CSTRACE1", u32 version 4, u32 record
size 56, i32 rank, i32 thread, f64 ticks per second, u64 tick0, 24 bytes 0}, then
56-byte records in the order the thread's calls returned. Version 4 adds CPU records
(the thread's cumulative run-queue wait and on-CPU time at a traced call's entry),
which the reader keeps apart from the calls' records (``Trace.cpu``). Version 3 records
end with the call site (the return address into the program); version 2 records (48 bytes, no
call site) name the MPI function (an id into the node file's function list) and hold
collectives too; version 1 traces (no function id, u16 event and flags) are still
read, their ``function`` column empty. Timestamps are ticks; the rank's block of the
node file holds two (ticks, CLOCK_MONOTONIC ns) pairs, from which every tick becomes
nanoseconds on the clock the snapshots use, so ranks and snapshots line up on one
node; the clock offsets measured in the job (raw/clocks.<node>.jsonl,
:mod:`commscope.collect.clocks`) then put every node on rank 0's clock.

Call sites are resolved to file, line and caller as ``commscope profile --callsites``
resolves them (:mod:`commscope.collect.callsites`), from the loaded objects each rank
listed at MPI_Finalize in raw/callsites.<node>.jsonl, once per distinct address.

Every problem that would make a replay wrong is one :class:`InputError` naming the
file and record: a bad header, an unknown event code, a record ending before it
began or before the previous one (out of order), a communicator id missing from
node.<node>.comms.csv, a peer outside its communicator, a completion whose start is not
in the trace, dropped records (the size limit was reached). A final record cut
short (the program was killed mid-write) is left out with a warning, as the
profile's own converter does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


from ..errors import InputError
from .native_tables import events, magic, record_dtype
from .node_files import NodeFile, node_keys, read_communicators
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


MAGIC, VERSION = magic("TRACE")
HEADER = np.dtype(record_dtype("trace_header"))
HEADER_BYTES = HEADER.itemsize
RECORD = np.dtype(record_dtype("trace_record"))  # versions 3 and 4
RECORD_V2 = np.dtype(
    [
        ("t_begin", "<u8"),
        ("t_end", "<u8"),
        ("request", "<u8"),
        ("bytes", "<i8"),
        ("peer", "<i4"),
        ("tag", "<i4"),
        ("comm", "<i4"),
        ("event", "u1"),
        ("flags", "u1"),
        ("func", "<u2"),
    ]
)
RECORD_V1 = np.dtype(
    [
        ("t_begin", "<u8"),
        ("t_end", "<u8"),
        ("request", "<u8"),
        ("bytes", "<i8"),
        ("peer", "<i4"),
        ("tag", "<i4"),
        ("comm", "<i4"),
        ("event", "<u2"),
        ("flags", "<u2"),
    ]
)
assert RECORD.itemsize == 56 and RECORD_V2.itemsize == RECORD_V1.itemsize == 48
RECORDS = {1: RECORD_V1, 2: RECORD_V2, 3: RECORD, 4: RECORD}  # the record of each version
NO_FUNCTION = 0xFFFF  # func of a record whose function is unknown (and of version 1)
EVENTS = events()  # MARK: MPI_Pcontrol, level in bytes; CPU: not a call's record (Trace.cpu)
STARTS = (2, 4, 8)  # events that start a request (ISEND, IRECV, ICOLL; MPI_Start of each)
COMPLETES = (5, 9)  # COMPLETE, COLL_DONE
COLLECTIVE = (7, 8, 9)  # peer: the root (-1 none, -2 MPI_ROOT, -3 MPI_PROC_NULL), tag: the
# collective's function id
RECV_SIDE = 1  # flags bit 0: a receive-side completion
MARK = 10  # an MPI_Pcontrol call (no communicator, its level in bytes)
CPU = 11  # the thread's CPU times (version 4): wait ns in request, on-CPU ns in bytes
CPU_COLUMNS = ["rank", "thread", "record", "function", "time_s", "cpu_wait_s", "cpu_run_s"]
_NAME = re.compile(r"trace\.(\d+)\.(\d+)\.bin")


@dataclass
class Trace:
    """Every record of a run's trace, one row each (see :func:`read_trace`).

    Times: :meth:`ns_of` turns a rank's ticks into nanoseconds of its node's
    CLOCK_MONOTONIC and, by default, adds the rank's clock offset to rank 0's
    (``alignment``), so that the ranks of all nodes share rank 0's clock.
    ``clock_offsets`` shows the offsets (:func:`commscope.collect.clocks.alignment`);
    None for a run without them (before clock alignment, or not traced with it).
    """

    events: pd.DataFrame
    comms: pd.DataFrame  # rank, comm_id, size, created_by, world_ranks (tuple), key
    clocks: dict  # rank -> (tick0, ns0, ticks per second)
    files: list = field(default_factory=list)
    t0_ns: int = 0  # time zero: the earliest rank's tick0 (aligned)
    alignment: dict = field(default_factory=dict)  # rank -> (node clock ns, offset ns) points
    clock_offsets: object = None  # DataFrame, a row per measured rank, or None
    #: the CPU records (version 4), never in ``events``: rank, thread, record, function
    #: (the call they preceded), time_s (as events' time_begin_s), cpu_wait_s and
    #: cpu_run_s (the thread's run-queue wait and on-CPU time since it started)
    cpu: object = None
    #: {object path: why its call sites could not be resolved (rebuilt after the run, ...)}
    callsite_problems: dict = field(default_factory=dict)
    #: what the run counted that the trace lacks (collect.completeness), None: unchecked
    completeness: object = None
    raw_dir: str | None = None  # where the files are (to name one in an error)

    def callsite_notes(self):
        """One sentence per object whose call sites could not be resolved."""
        return [
            f"call sites not resolved: {why}; they are named by object and offset "
            f"({Path(path).name}+0x...), as the run recorded them"
            for path, why in self.callsite_problems.items()
        ]

    def offset_ns(self, rank, ns):
        """The offset (ns) that puts readings ``ns`` of ``rank``'s node clock on rank 0's
        clock (0 for a rank without measurements)."""
        from .clocks import offset_at

        points = self.alignment.get(rank)
        ns = np.asarray(ns, dtype=np.float64)
        return np.zeros(ns.shape) if points is None else offset_at(points, ns)

    def align_ns(self, rank, ns):
        """Readings ``ns`` of ``rank``'s node clock (a snapshot's, say) on rank 0's clock."""
        ns = np.asarray(ns, dtype=np.float64)
        return ns + self.offset_ns(rank, ns)

    def ns_of(self, rank, ticks, aligned=True):
        """``rank``'s ticks in ns: on rank 0's clock, or with ``aligned=False`` on the
        rank's own node's CLOCK_MONOTONIC (to compare with other times of that node)."""
        tick0, ns0, tps = self.clocks[rank]
        ns = ns0 + (np.asarray(ticks, dtype=np.float64) - tick0) * (1e9 / tps)
        return self.align_ns(rank, ns) if aligned else ns

    def time_s(self, rank, ticks):
        return (self.ns_of(rank, ticks) - self.t0_ns) / 1e9


_SAID = set()


def _warn_once(message):
    """One ``commscope: warning:`` line per message (the completeness check may have
    said it already)."""
    from ..errors import warn

    if message not in _SAID:
        _SAID.add(message)
        warn(message)


def trace_files(raw_dir):
    """{(rank, thread): path} of the trace files in ``raw_dir``."""
    out = {}
    for p in Path(raw_dir).glob("trace.*.bin"):
        m = _NAME.fullmatch(p.name)
        if m:
            out[(int(m.group(1)), int(m.group(2)))] = p
    return dict(sorted(out.items()))


def read_file(path, rank, thread):
    """Records of one trace file as a structured array (header checked)."""
    data = Path(path).read_bytes()
    if len(data) < HEADER_BYTES:
        raise InputError(
            path, "header", f"cut short: {len(data)} bytes, a header is {HEADER_BYTES}"
        )
    if data[:8] != MAGIC:
        raise InputError(path, "magic", f"not a commscope trace (expected {MAGIC.decode()})")
    head = np.frombuffer(data, HEADER, count=1)[0]
    version, size = int(head["version"]), int(head["record_bytes"])
    h_rank, h_thread = int(head["rank"]), int(head["thread"])
    if version not in RECORDS:
        raise InputError(
            path,
            "version",
            f"unknown trace version {version} (this commscope "
            f"reads versions {', '.join(map(str, RECORDS))})",
        )
    layout = RECORDS[version]
    if size != layout.itemsize:
        raise InputError(
            path, "record_size", f"{size}, expected {layout.itemsize} for version {version}"
        )
    if (h_rank, h_thread) != (rank, thread):
        raise InputError(
            path,
            "header",
            f"says rank {h_rank} thread {h_thread}, the file name rank {rank} thread {thread}",
        )
    body = len(data) - HEADER_BYTES
    n, cut = divmod(body, layout.itemsize)
    if cut:
        _warn_once(f"{path}: last record cut short ({cut} bytes) and left out")
    if version >= 3:
        rec = np.frombuffer(data, RECORD, count=n, offset=HEADER_BYTES)
        if version < 4 and (rec["event"] == CPU).any():  # a code of later versions
            i = int(np.argmax(rec["event"] == CPU))
            raise InputError(
                path, f"record {i}", f"unknown event code {CPU} in a version {version} trace"
            )
        return rec
    old = np.frombuffer(data, layout, count=n, offset=HEADER_BYTES)
    rec = np.zeros(n, RECORD)  # site 0: unknown
    for name in layout.names:
        rec[name] = old[name]  # a version 1 event or flags value past 255 stays an unknown code
    if version == 1:
        rec["event"][old["event"] > 255] = 0
        rec["func"] = NO_FUNCTION
    return rec


def read_comms(communicators, raw_dir, rank):
    """``rank``'s rows of the run's communicator lists, with world_ranks as tuples of ints
    and a key that names one communicator across ranks."""
    df = communicators[communicators["rank"] == rank].copy()
    if df.empty:
        lists = (
            [Path(raw_dir) / f"node.{key}.comms.csv" for key in node_keys(raw_dir)]
            if Path(raw_dir).is_dir()
            else [raw_dir]
        )
        where = ", ".join(map(str, lists)) or Path(raw_dir) / "node.<node>.comms.csv"
        raise InputError(
            where, None, f"no communicator list names rank {rank}: the trace cannot be resolved"
        )
    # One communicator has a different id on each rank; its members and how many
    # communicators with the same members that rank created before it identify it.
    df["key"] = [(w, k) for w, k in zip(df["world_ranks"], df.groupby("world_ranks").cumcount())]
    if "list" not in df:  # read from communicators.parquet: that is the list
        df["list"] = str(raw_dir)
    return df[["rank", "comm_id", "size", "created_by", "world_ranks", "key", "list"]].reset_index(
        drop=True
    )


def _clocks(raw_dir):
    """{rank: ((tick0, ns0, ticks per second), trace records dropped, function names)} of
    every rank (the names: the node file's function list, indexed by the trace's ids)."""
    out = {}
    for key in node_keys(raw_dir):
        nf = NodeFile(raw_dir, key)
        try:
            nc = nf.read()
        finally:
            nf.close()
        dropped_at = [
            c["offset"] for c in nc.meta["counters"] if c["name"] == "trace_records_dropped"
        ]
        dropped = np.zeros(len(nc.ranks), np.int64)
        if dropped_at:
            np.add.at(dropped, nc.slab_rank, nc.slabs[:, dropped_at[0]].astype(np.int64))
        for i, r in enumerate(nc.ranks.tolist()):
            h, tps = nc.headers[i], float(nc.ticks_per_s[i])
            if not np.isfinite(tps) or tps <= 0:
                raise InputError(
                    nf.data_path,
                    "tick1",
                    f"rank {r}: no second clock pair: ticks "
                    "cannot be converted to time (the rank died "
                    "before its first snapshot)",
                )
            out[r] = (
                (int(h["tick0"]), int(h["ns0"]), tps),
                int(dropped[i]),
                [f["name"] for f in nc.meta["functions"]],
            )
    return out


def _check_records(path, rec, comm_sizes, rank, comm_list):
    """Event codes, time order and communicators of one file's records."""
    ev = rec["event"]
    bad = ~np.isin(ev, list(EVENTS))
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(path, f"record {i}", f"unknown event code {int(ev[i])}")
    back = rec["t_end"] < rec["t_begin"]
    if back.any():
        i = int(np.argmax(back))
        raise InputError(path, f"record {i}", "ends before it begins")
    if len(rec) > 1:
        order = np.diff(rec["t_end"].astype(np.int64)) < 0
        if order.any():
            i = int(np.argmax(order)) + 1
            raise InputError(
                path,
                f"record {i}",
                f"out of order: ends before record {i - 1} (records are written as calls return)",
            )
    comm = rec["comm"]
    mark = np.isin(ev, (MARK, CPU))  # neither has a communicator or a peer
    known = np.isin(comm, list(comm_sizes)) | (mark & (comm == -1))
    if not known.all():
        i = int(np.argmax(~known))
        raise InputError(
            path,
            f"record {i}",
            f"communicator id {int(comm[i])} was never created "
            f"(not in rank {rank}'s communicator list, {comm_list})",
        )
    size = pd.Series(comm).map(comm_sizes).fillna(0).to_numpy(dtype=np.int64)
    peer = rec["peer"].astype(np.int64)
    coll = np.isin(ev, COLLECTIVE)  # peer: the root
    off = (
        ((peer < -1) & ~coll)
        | (peer < -3)
        | (peer >= size)
        | ((peer < 0) & ~np.isin(ev, (3, 4, 6, *COLLECTIVE)))
    ) & ~(mark & (peer == -1))
    if off.any():
        i = int(np.argmax(off))
        raise InputError(
            path,
            f"record {i}",
            f"{'root' if coll[i] else 'peer'} {int(peer[i])} "
            f"outside its communicator (size {int(size[i])})",
        )
    _check_cpu(path, rec)


def _check_cpu(path, rec):
    """A CPU record is one instant (begin = end), and a thread's times never go back."""
    at = np.flatnonzero(rec["event"] == CPU)
    if not len(at):
        return
    cpu = rec[at]
    bad = (cpu["t_end"] != cpu["t_begin"]) | (cpu["bytes"] < 0)
    back = np.zeros(len(cpu), bool)
    if len(cpu) > 1:
        back[1:] = (np.diff(cpu["request"].astype(np.float64)) < 0) | (
            np.diff(cpu["bytes"].astype(np.float64)) < 0
        )
    if (bad | back).any():
        k = int(np.argmax(bad | back))
        why = (
            "a CPU record must have begin = end and on-CPU time >= 0"
            if bad[k]
            else "a CPU record whose run-queue wait or on-CPU time is below the thread's "
            "previous one (they only grow)"
        )
        raise InputError(path, f"record {int(at[k])}", why)


def _check_requests(df, raw_dir, rank):
    """Every completion has a start earlier in the rank's trace (else records are missing).

    A persistent request starts again under the same id, so per id the starts so far
    must never fall below the completions so far.
    """
    req = df[df["request"] != 0].sort_values(["t_end", "thread", "record"], kind="stable")
    step = np.where(req["event"].isin(STARTS), 1, np.where(req["event"].isin(COMPLETES), -1, 0))
    open_now = pd.Series(step, index=req.index).groupby(req["request"].to_numpy()).cumsum()
    bad = open_now.to_numpy() < 0
    if bad.any():
        row = req.iloc[int(np.argmax(bad))]
        raise InputError(
            Path(raw_dir) / row["file"],
            f"record {row['record']}",
            f"completes request {row['request']} whose start is not in rank "
            f"{rank}'s trace (records missing)",
        )


def _peer_world(comm, peer, members):
    """World rank of each record's peer (-1: any source or outside the communicator)."""
    out = np.full(len(comm), -1, dtype=np.int64)
    for c in np.unique(comm):
        ranks = np.asarray(members.get(int(c), ()), dtype=np.int64)
        m = (comm == c) & (peer >= 0) & (peer < len(ranks))
        out[m] = ranks[peer[m]]
    return out


def _collectives(d):
    """The collective records' fields by name: ``bytes`` sent and ``bytes_received`` on
    every collective row (a blocking one holds the latter in its request field, a
    nonblocking one splits them between its start and its completion), ``request`` the
    request id (0: blocking).  Point-to-point rows: bytes_received 0."""
    ev = d["event"].to_numpy()
    received = np.zeros(len(d), np.int64)
    blocking = ev == 7
    received[blocking] = d["request"].to_numpy()[blocking].astype(np.int64)
    d.loc[blocking, "request"] = 0
    nb = d[np.isin(ev, (8, 9))].sort_values(["t_end", "thread", "record"], kind="stable")
    if len(nb):
        start = nb["event"] == 8
        keys = [nb["request"].to_numpy()]
        sent = nb["bytes"].where(start).groupby(keys).ffill()  # a start before its completion
        got = nb["bytes"].where(~start).groupby(keys).bfill()  # a completion after its start
        d.loc[nb.index, "bytes"] = sent.fillna(0).astype(np.int64).to_numpy()
        received[d.index.get_indexer(nb.index)] = got.fillna(0).astype(np.int64).to_numpy()
    d["bytes_received"] = received


def _call_sites(events, raw_dir):
    """The call-site columns of ``events`` (its ``site`` column: return addresses, 0
    unknown, or Python site ids), resolved per rank and distinct address as the
    ``callsites`` table is, from the loaded objects and Python sites each rank listed
    (raw/callsites.<node>.jsonl), then taken onto the records by index (a million
    records: a fraction of a second).  Returns {object path: why its call sites could
    not be resolved}."""
    from .callsites import Resolver, listed_by_rank

    site = events["site"].to_numpy()
    listed = listed_by_rank(raw_dir) if site.any() else {}
    resolver = Resolver()
    codes = np.zeros(len(events), np.int64)
    rows = []  # _resolve_site's, per distinct (rank, address)
    try:
        for rank, idx in events.groupby("rank").indices.items():
            addrs, inverse = np.unique(site[idx], return_inverse=True)
            codes[idx] = inverse.reshape(-1) + len(rows)
            rows += [
                _resolve_site(a, rank, listed.get(int(rank)), resolver) for a in addrs.tolist()
            ]
        problems = resolver.problems()
    finally:
        resolver.close()
    if problems:
        rows = _sites_resolved_after_the_run(raw_dir, rows, problems)
    cols = list(zip(*rows)) if rows else [()] * 8

    def take(values):  # text: None where missing, as in the callsites table (never NaN)
        table = np.empty(len(values), dtype=object)
        table[:] = values
        return pd.Series(table[codes], index=events.index, dtype=object)

    events["callsite"] = take(cols[0])
    events["callsite_file"] = take(cols[1])
    line = pd.Series(list(cols[2]), dtype="Int64").take(codes)
    line.index = events.index
    events["callsite_line"] = line
    events["caller"] = take(cols[3])
    events["callsite_reason"] = take(cols[4])
    events["callsite_key"] = take(cols[5])
    return problems


def _sites_resolved_after_the_run(raw_dir, rows, problems):
    """``rows`` with the sites in objects that no longer resolve (``problems``: rebuilt,
    changed or gone since) taken from the run's callsites.parquet, which ``commscope
    profile`` resolved right after the run (with --callsites: the same addresses), by
    object and offset; ``problems`` keeps the objects with a site still unresolved."""
    from .callsites import site_label

    table = Path(raw_dir).parent / "callsites.parquet"
    known = {}
    if table.is_file():
        try:
            cs = pd.read_parquet(table, columns=["object", "offset", "file", "line", "caller"])
        except (OSError, ValueError, KeyError):  # unreadable: resolved as it is now
            cs = None
        if cs is not None:
            cs = cs[cs["file"].notna() & cs["line"].notna() & cs["object"].isin(list(problems))]
            for o, off, f, ln, c in cs.itertuples(index=False):
                known[(o, int(off))] = (site_label(f, ln), f, int(ln), c, None, site_label(f, ln))
    out, left = [], set()
    for r in rows:
        obj, rel = r[6], r[7]
        if r[0] is None and obj in problems:
            if (obj, rel) in known:
                r = known[(obj, rel)] + (obj, rel)
            else:
                left.add(obj)
        out.append(r)
    for obj in set(problems) - left:
        del problems[obj]
    return out


def _resolve_site(a, rank, listed, resolver):
    """(callsite, file, line, caller, reason, key, object, offset) of return address (or
    Python site id) ``a`` of ``rank``, whose loaded objects and Python sites are ``listed`` (None:
    it listed none).  ``key`` names the site when file:line is unknown: the symbol and
    offset (``send_a+0x1c``, built without -g), else the object's name and the address
    in it (``app+0x11a9``, an object rebuilt after the run), so that calls from
    different sites stay apart."""
    import os

    from .callsites import UNKNOWN, resolve_sites, site_label

    if a == 0:
        return (
            None,
            None,
            None,
            None,
            "no call site recorded (a record written outside a "
            "wrapped call, or a trace written before call sites, "
            "version 3)",
            None,
            None,
            None,
        )
    if listed is None:
        return (
            None,
            None,
            None,
            None,
            f"rank {rank} listed no loaded objects in "
            "callsites.<node>.jsonl (killed before MPI_Finalize, or "
            "traced before call sites were recorded)",
            None,
            None,
            None,
        )
    objects, python = listed
    f, ln, c, why, obj, rel = resolve_sites([a], objects, resolver, python)[0]
    ln = int(ln) if f and ln else None
    label = site_label(f, ln) if ln else None
    key = label
    if key is None and c and c != UNKNOWN and "+0x" in c:
        key = c
    elif key is None and obj:
        key = f"{os.path.basename(obj)}+{rel:#x}"
    return (label, f, ln, None if c == UNKNOWN else c, why or None, key, obj, rel)


def read_trace(raw_dir, check=True, callsites=True):
    """Read every trace file of a run's raw directory into one :class:`Trace`.

    ``events`` columns: rank, thread, file, record, event (name), t_begin, t_end (ticks),
    time_begin_s, time_end_s (seconds since the earliest rank's first tick, on rank 0's
    clock), request, bytes, peer, tag, comm (the rank's id), comm_key, comm_size,
    peer_world (world rank of the peer, -1 for any source), flags, func (the function
    id), function (its name; None in a version 1 trace), bytes_received, collective,
    and the call site: site (the return address in the program, 0 unknown), callsite
    (``name.c:42``, the file's base name and line), callsite_file (the file as the
    ``callsites`` table gives it), callsite_line, caller (the enclosing function;
    ``function+0x1c`` without -g), callsite_reason (why file and line, or all three, are
    missing; None when resolved), callsite_key (callsite, else ``function+0x1c`` or
    ``object+0x11a9``: what tells sites apart when file:line is unknown).  Unresolved
    parts are None (callsite_line <NA>), as in the ``callsites`` table.  A record of a
    call from mpi4py names the Python line (its site is that Python site id).
    ``callsites=False`` leaves the call sites unresolved (only ``site``).
    The CPU records (version 4) are not in ``events`` but in ``Trace.cpu``.

    Collective rows (COLL, ICOLL, COLL_DONE): peer is the root (peer_world its world
    rank), bytes what this rank sent, bytes_received what it received, request the
    request id of a nonblocking or persistent one (0: blocking), tag and collective the
    collective's function id and name (``MPI_Allreduce_init`` for the start of a
    persistent one in ``MPI_Start``).  Other rows: collective None.
    """
    raw_dir = Path(raw_dir)
    files = trace_files(raw_dir)
    if not files:
        raise InputError(
            raw_dir, None, "no trace.<rank>.<thread>.bin files (run `commscope profile --trace`)"
        )
    frames, comms, clocks, cpu_frames = [], [], {}, []
    communicators, rank_clocks = read_communicators(raw_dir), _clocks(raw_dir)
    for rank in sorted({r for r, _ in files}):
        cm = read_comms(communicators, raw_dir, rank)
        comms.append(cm)
        if rank not in rank_clocks:
            raise InputError(raw_dir, None, f"rank {rank} has trace files but no counters")
        clocks[rank], dropped, names = rank_clocks[rank]
        if dropped and check:
            raise InputError(
                raw_dir,
                "trace_records_dropped",
                f"{dropped} trace records of rank {rank} were dropped (size limit "
                "reached): the trace is incomplete; raise --trace-limit",
            )
        sizes = dict(zip(cm["comm_id"], cm["size"]))
        members = dict(zip(cm["comm_id"], cm["world_ranks"]))
        keys = dict(zip(cm["comm_id"], cm["key"]))
        rank_frames = []
        for (r, thread), path in files.items():
            if r != rank:
                continue
            rec = read_file(path, rank, thread)
            if check:
                _check_records(path, rec, sizes, rank, cm["list"].iloc[0])
            d = pd.DataFrame({name: rec[name] for name in RECORD.names})
            d.insert(0, "record", np.arange(len(d)))
            d.insert(0, "file", path.name)
            d.insert(0, "thread", thread)
            d.insert(0, "rank", rank)
            is_cpu = d["event"].to_numpy() == CPU  # kept apart: not a call's record
            if is_cpu.any():
                cpu_frames.append(d[is_cpu])
                d = d[~is_cpu].reset_index(drop=True)
            rank_frames.append(d)
        if not rank_frames:
            continue
        d = pd.concat(rank_frames, ignore_index=True)
        _collectives(d)
        known = d["func"].to_numpy() < len(names)
        table = np.asarray(names + [None], dtype=object)
        d["function"] = table[np.where(known, d["func"].to_numpy(), len(names))]
        coll = d["event"].isin(COLLECTIVE).to_numpy()
        tag = d["tag"].to_numpy().astype(np.int64)
        ok = coll & (tag >= 0) & (tag < len(names))
        d["collective"] = table[np.where(ok, tag, len(names))]
        d["comm_key"] = d["comm"].map(keys)
        d["comm_size"] = d["comm"].map(sizes).fillna(0).astype(np.int64)
        d["peer_world"] = _peer_world(
            d["comm"].to_numpy(), d["peer"].to_numpy().astype(np.int64), members
        )
        if check:
            _check_requests(d, raw_dir, rank)
        frames.append(d)
    events = pd.concat(frames, ignore_index=True)
    from .clocks import alignment, read_clocks

    measures = read_clocks(raw_dir)
    points, offsets = alignment(measures) if measures is not None else ({}, None)
    trace = Trace(
        events=events,
        comms=pd.concat(comms, ignore_index=True),
        clocks=clocks,
        files=[p.name for p in files.values()],
        alignment=points,
        clock_offsets=offsets,
        raw_dir=str(raw_dir),
    )
    trace.t0_ns = int(min(float(trace.align_ns(r, ns0)) for r, (_, ns0, _) in clocks.items()))
    if callsites:
        trace.callsite_problems = _call_sites(events, raw_dir)
    tb = np.empty(len(events))
    te = np.empty(len(events))
    for rank, idx in events.groupby("rank").indices.items():
        tb[idx] = trace.time_s(rank, events["t_begin"].to_numpy()[idx])
        te[idx] = trace.time_s(rank, events["t_end"].to_numpy()[idx])
    events["time_begin_s"] = tb
    events["time_end_s"] = te
    events["event"] = events["event"].map(EVENTS)
    trace.cpu = _cpu_samples(trace, cpu_frames, rank_clocks)
    return trace


def comm_codes(events):
    """(codes, keys): per record of ``events`` (read_trace's) an integer naming its
    communicator across ranks (``keys[code]`` is its comm_key, None for a record without
    one), worked out once per distinct (rank, comm id), never per record: a key holds
    the communicator's world ranks, so hashing or printing it per record would cost the
    trace's length times the job's size."""
    n = len(events)
    if not n:
        return np.zeros(0, np.int64), []
    pair = events["rank"].to_numpy(np.int64) * (1 << 32) + (events["comm"].to_numpy(np.int64) + 1)
    _, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    key_col = events["comm_key"].to_numpy()
    code_of, keys = {}, []
    per_pair = np.empty(len(first), np.int64)
    for i, k in enumerate(key_col[first].tolist()):
        k = k if isinstance(k, tuple) else None  # NaN: no communicator
        c = code_of.get(k)
        if c is None:
            c = code_of[k] = len(keys)
            keys.append(k)
        per_pair[i] = c
    return per_pair[inverse.reshape(-1)], keys


def comm_labels(events):
    """Per record, its comm_key as text (``repr``), each distinct text one shared
    object (cheap to hash and compare), computed once per communicator."""
    codes, keys = comm_codes(events)
    table = np.empty(len(keys), dtype=object)
    table[:] = [repr(k) if k is not None else repr(np.nan) for k in keys]
    return table[codes]


def _cpu_samples(trace, frames, rank_clocks):
    """``Trace.cpu`` from the CPU records: times as the events' time_begin_s, the
    cumulative nanoseconds in seconds."""
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(CPU_COLUMNS, "iiiOfff")})
    d = pd.concat(frames, ignore_index=True)
    time_s = np.empty(len(d))
    for rank, idx in d.groupby("rank").indices.items():
        time_s[idx] = trace.time_s(rank, d["t_begin"].to_numpy()[idx])
    function = np.empty(len(d), dtype=object)
    for rank, idx in d.groupby("rank").indices.items():
        names = rank_clocks[rank][2]
        table = np.asarray(names + [None], dtype=object)
        f = d["func"].to_numpy()[idx]
        function[idx] = table[np.where(f < len(names), f, len(names))]
    return pd.DataFrame(
        {
            "rank": d["rank"].to_numpy(np.int64),
            "thread": d["thread"].to_numpy(np.int64),
            "record": d["record"].to_numpy(np.int64),
            "function": function,
            "time_s": time_s,
            "cpu_wait_s": d["request"].to_numpy(np.float64) / 1e9,
            "cpu_run_s": d["bytes"].to_numpy(np.float64) / 1e9,
        }
    )
