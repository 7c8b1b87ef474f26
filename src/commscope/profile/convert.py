"""Raw counter files -> the Parquet tables of a profile run.

Works on whatever the program left behind: a run killed half way has mapped
files holding every count up to the kill, and complete snapshot records.
Tables (columns in docs/profile.md):

* ``counters``: rank, thread, counter, kind, unit, value (thread -1: rank-wide)
* ``functions``: rank, thread, function, calls, bytes, time_s (NaN without the
  bytes or timers set)
* ``peers``: rank, peer, messages_sent, bytes_sent, messages_received, bytes_received,
  rma_bytes_put, rma_bytes_got, rma_bytes_accumulated (the arrays the metadata lists)
* ``files``: rank, file_id, path, reads, bytes_read, writes, bytes_written (MPI-IO)
* ``size_bins``: rank, function, bin, min_bytes, max_bytes, count
* ``collective_bins``: rank, function, message_size, communicator_size, count
* ``snapshots``: rank, seq, time_s, calls, mpi_time_s and one column per counter
* ``pvars``: rank, seq, time_s, pvar, index, value
* ``communicators``: rank, comm_id, members (its number of ranks), created_by, parent_id,
  inter, world_ranks
"""

import warnings

from ..runs import register_table
from .counters import CounterFile, counter_ranks, read_snapshots, ticks_per_second
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


register_table("profile", "counters", {"rank": "i", "thread": "i", "counter": "O", "value": "f"})
# time_s and mpi_time_s are NaN without the timers set, so they are not required numbers
register_table("profile", "functions", {"rank": "i", "thread": "i", "function": "O",
                                        "calls": "i"})
register_table("profile", "peers", {"rank": "i", "peer": "i", "messages_sent": "i",
                                    "bytes_sent": "i", "messages_received": "i",
                                    "bytes_received": "i"})
register_table("profile", "size_bins", {"rank": "i", "function": "O", "bin": "i",
                                        "min_bytes": "i", "max_bytes": "f", "count": "i"})
register_table("profile", "snapshots", {"rank": "i", "seq": "i", "time_s": "f", "calls": "i"})

COLL_BINS = ("small_msg_small_comm", "small_msg_large_comm", "large_msg_small_comm",
             "large_msg_large_comm")


def bin_edges(b):
    """[min, max] bytes of power-of-two bin ``b`` (max inf for the last, open bin)."""
    if b == 0:
        return 0, 0.0
    return 1 << (b - 1), float((1 << b) - 1)


def _function_rows(meta, slabs, rate, rank):
    at = {k: np.array([f[f"{k}_offset"] for f in meta["functions"]]) for k in ("calls", "ticks", "bytes")}
    names = [f["name"] for f in meta["functions"]]
    timed, counted = "timers" in meta["sets"], "bytes" in meta["sets"]
    nan = float("nan")
    rows = []
    for t, slab in enumerate(slabs):
        calls = slab[at["calls"]]
        for i in np.nonzero(calls)[0]:
            rows.append(dict(rank=rank, thread=t, function=names[i], calls=int(calls[i]),
                             bytes=float(slab[at["bytes"][i]]) if counted else nan,
                             time_s=float(slab[at["ticks"][i]]) / rate if timed else nan))
    return rows


def _counter_rows(meta, slabs, rank_words, rank):
    rows = []
    for c in meta["counters"]:
        base = dict(rank=rank, counter=c["name"], kind=c["kind"], unit=c["unit"])
        if c["scope"] == "rank":
            rows.append(dict(base, thread=-1, value=float(rank_words[c["offset"]])))
        else:
            rows += [dict(base, thread=t, value=float(s[c["offset"]])) for t, s in enumerate(slabs)]
    return rows


def _peer_rows(meta, totals, rank):
    p, n = meta["peers"]["offset"], meta["peers"]["count"]
    names = [a["name"] for a in meta["peers"]["arrays"]]
    arrays = totals[p:p + len(names) * n].reshape(len(names), n)
    return [dict(rank=rank, peer=peer, **{name: int(arrays[i, peer]) for i, name in enumerate(names)})
            for peer in np.nonzero(arrays.any(axis=0))[0].tolist()]


def _file_rows(raw_dir, meta, counters, rank):
    """Per-file MPI-IO counters, named by files.<rank>.csv (ids beyond the table's rows
    share its last row, shown as "(other files)")."""
    nfiles = int(counters.header["nfiles"])
    if not nfiles:
        return []
    from ..runs import read_csv_table
    path = raw_dir / meta["files"]["list"]
    names = {}
    if path.is_file():
        listed = read_csv_table(path)
        names = dict(zip(listed["file_id"].astype(int), listed["path"].astype(str)))
    rows_n = meta["files"]["rows"]
    cols = [c["name"] for c in meta["files"]["counters"]]
    out = []
    for fid in range(min(nfiles, rows_n)):
        shared = fid == rows_n - 1 and nfiles > rows_n
        out.append(dict(rank=rank, file_id=fid,
                        path="(other files)" if shared else names.get(fid, "(unlisted)"),
                        **{c: int(counters.per_file[fid, i]) for i, c in enumerate(cols)}))
    return out


def _bin_rows(meta, totals, rank):
    nb = meta["bins"]["count"]
    size_rows, coll_rows = [], []
    for f in meta["functions"]:
        if "bins_offset" in f:
            counts = totals[f["bins_offset"]:f["bins_offset"] + nb]
            for b in np.nonzero(counts)[0]:
                lo, hi = bin_edges(int(b))
                hi = float("inf") if b == nb - 1 else hi
                size_rows.append(dict(rank=rank, function=f["name"], bin=int(b), min_bytes=lo,
                                      max_bytes=hi, count=int(counts[b])))
        if "coll_offset" in f:
            counts = totals[f["coll_offset"]:f["coll_offset"] + 4]
            for k in np.nonzero(counts)[0]:
                msg, _, comm = COLL_BINS[k].partition("_msg_")
                coll_rows.append(dict(rank=rank, function=f["name"], message_size=msg,
                                      communicator_size=comm.replace("_comm", ""),
                                      count=int(counts[k])))
    return size_rows, coll_rows


def _snapshot_frames(raw_dir, meta, rate, rank):
    recs, dropped = read_snapshots(raw_dir, meta)
    if dropped:
        warnings.warn(f"{raw_dir}/snapshots.{rank}.bin: last record cut short "
                      f"({dropped} bytes) and left out", stacklevel=2)
    if not len(recs):
        return None, None
    words = meta["slab_words"]
    totals = recs[:, 3:3 + words]
    rank_words = recs[:, 3 + words:3 + words + len(meta["counters"])]
    ns0 = int(recs[0, 2])
    frame = pd.DataFrame({"rank": rank, "seq": recs[:, 0].astype(np.int64),
                          "time_s": (recs[:, 2].astype(np.int64) - ns0) / 1e9})
    calls_at = [f["calls_offset"] for f in meta["functions"]]
    ticks_at = [f["ticks_offset"] for f in meta["functions"]]
    frame["calls"] = totals[:, calls_at].sum(axis=1).astype(np.int64)
    frame["mpi_time_s"] = (totals[:, ticks_at].sum(axis=1).astype(float) / rate
                           if "timers" in meta["sets"] else np.nan)
    for c in meta["counters"]:
        src = rank_words if c["scope"] == "rank" else totals
        frame[c["name"]] = src[:, c["offset"]].astype(np.int64)
    pv_rows = []
    pv = recs[:, 3 + words + len(meta["counters"]):].view(np.float64)
    for p in meta["pvars"]:
        for k in range(p["count"]):
            pv_rows.append(pd.DataFrame({"rank": rank, "seq": frame["seq"], "time_s": frame["time_s"],
                                         "pvar": p["name"], "index": k,
                                         "value": pv[:, p["offset"] + k]}))
    return frame, (pd.concat(pv_rows, ignore_index=True) if pv_rows else None)


def _read_comms(path):
    from ..runs import read_csv_table
    df = read_csv_table(path)  # a half-written last line (killed program) is dropped
    df.insert(0, "rank", int(path.name.split(".")[1]))
    df["world_ranks"] = df["world_ranks"].astype(str)
    return df.rename(columns={"size": "members"})  # a count of ranks; a "size" is bytes


def rank_summary(cf, counters):
    """What meta.json records about a rank's profile."""
    h = counters.header
    return dict(rank=cf.meta["rank"], host=cf.meta.get("host"), pid=cf.meta.get("pid"),
                wall_s=(int(h["ns1"]) - int(h["ns0"])) / 1e9,
                state=("finalized" if h["state"] == 2 else "not finalized (killed or crashed)"),
                threads=int(counters.slabs.shape[0]), lost_threads=int(h["lost_threads"]),
                snapshots=int(h["seq"]), thread_level=cf.meta.get("thread_level"),
                ticks_per_s=counters.ticks_per_s)


def convert(run):
    """Write the profile tables of ``run`` from its raw files; returns rank summaries."""
    raw = run.raw_dir
    frames = {k: [] for k in ("counters", "functions", "peers", "files", "size_bins",
                              "collective_bins", "snapshots", "pvars")}
    summaries = []
    for rank in counter_ranks(raw):
        cf = CounterFile(raw, rank)
        try:
            c = cf.read()
        finally:
            cf.close()
        rate = c.ticks_per_s
        totals = c.totals
        frames["counters"] += _counter_rows(cf.meta, c.slabs, c.rank_words, rank)
        frames["functions"] += _function_rows(cf.meta, c.slabs, rate, rank)
        frames["peers"] += _peer_rows(cf.meta, totals, rank)
        frames["files"] += _file_rows(raw, cf.meta, c, rank)
        size_rows, coll_rows = _bin_rows(cf.meta, totals, rank)
        frames["size_bins"] += size_rows
        frames["collective_bins"] += coll_rows
        snap, pv = _snapshot_frames(raw, cf.meta, rate if rate == rate else 1.0, rank)
        if snap is not None:
            frames["snapshots"].append(snap)
        if pv is not None:
            frames["pvars"].append(pv)
        summaries.append(rank_summary(cf, c))
    comms = sorted(raw.glob("comms.*.csv"))
    if comms:
        frames["communicators"] = [_read_comms(p) for p in comms]
    for name, parts in frames.items():
        if not parts:
            continue
        df = pd.concat(parts, ignore_index=True) if isinstance(parts[0], pd.DataFrame) \
            else pd.DataFrame(parts)
        run.write_table(name, df)
    return summaries


__all__ = ["convert", "bin_edges", "ticks_per_second", "COLL_BINS"]
