"""Raw node files -> the Parquet tables of a profile run.

Works on whatever the program left behind: a run killed half way has mapped files
holding every count up to the kill, and complete snapshot records.  Each node is
converted on its own (in parallel when there are several; a node whose files are
unreadable is named and left out, the others still convert) and with array
operations over all its ranks at once.  Tables (columns in docs/profile.md):

* ``ranks``: rank, node, host, pid, state, threads, lost_threads, lost_blocks,
  snapshots, thread_level, tick_s (one tick in seconds), wall_s, ending (exit, signal,
  abort, unknown), ending_value (status, signal or error code), ended_s (after MPI_Init)
* ``counters``: rank, thread, counter, kind, unit, value (thread -1: rank-wide)
* ``functions``: rank, thread, function, calls, bytes, time_s (NaN without the
  bytes or timers set)
* ``peers``: rank, peer, messages_sent, bytes_sent, messages_received, bytes_received,
  rma_bytes_put, rma_bytes_got, rma_bytes_accumulated (nonzero rows only)
* ``files``: rank, file_id, path, reads, bytes_read, writes, bytes_written (MPI-IO)
* ``size_bins``: rank, function, bin, min_bytes, max_bytes, count, time_s (the time of
  the function's own calls that moved a message of the bin; NaN without the timers)
* ``collective_bins``: rank, function, message_size, communicator_size, count
* ``snapshots``: rank, seq, time_s, calls, mpi_time_s and one column per counter
* ``pvars``: rank, seq, time_s, pvar, index, value: a row where a value changed (it
  holds until the rank's next row for that pvar and index)
* ``communicators``: rank, comm_id, members (its number of ranks), created_by,
  parent_id, inter, world_ranks (runs: "0-127", "3 5 8-11")
"""

import os
import warnings

from ..errors import InputError, warn
from ..collect.node_files import NodeFile, node_keys, read_snapshots
from .endings import HOW, fill_from_launcher, summarize
from .settings import chosen_sets
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


# time_s and mpi_time_s are NaN without the timers set, so they are not required numbers

COLL_BINS = (
    "small_msg_small_comm",
    "small_msg_large_comm",
    "large_msg_small_comm",
    "large_msg_large_comm",
)


def bin_edges(b):
    """[min, max] bytes of power-of-two bin ``b`` (max inf for the last, open bin)."""
    if b == 0:
        return 0, 0.0
    return 1 << (b - 1), float((1 << b) - 1)


def _ranks_table(nc, key):
    h = nc.headers
    threads = np.bincount(nc.slab_rank, minlength=len(nc.ranks))
    return pd.DataFrame(
        {
            "rank": nc.ranks,
            "node": key,
            "host": nc.meta.get("host", key),
            "pid": h["pid"].astype(np.int64),
            "state": np.where(h["state"] == 2, "finalized", "not finalized"),
            "threads": threads.astype(np.int64),
            "lost_threads": h["lost_threads"].astype(np.int64),
            "lost_blocks": h["lost_blocks"].astype(np.int64),
            "snapshots": h["seq"].astype(np.int64),
            "thread_level": h["thread_level"].astype(np.int64),
            "tick_s": 1.0 / nc.ticks_per_s,
            "wall_s": (h["ns1"].astype(np.float64) - h["ns0"].astype(np.float64)) / 1e9,
            # how the process ended (profile/endings.py): exit, signal, abort, or unknown
            "ending": np.array([HOW.get(int(x), "unknown") for x in h["end_how"]], dtype=object),
            "ending_value": np.where(h["end_how"] > 0, h["end_code"].astype(np.float64), np.nan),
            "ended_s": np.where(
                h["end_how"] > 0,
                (h["end_ns"].astype(np.float64) - h["ns0"].astype(np.float64)) / 1e9,
                np.nan,
            ),
        }
    )


def _counters_table(nc):
    meta = nc.meta
    thread = [c for c in meta["counters"] if c["scope"] == "thread"]
    rank = [c for c in meta["counters"] if c["scope"] == "rank"]
    parts = []
    if thread and len(nc.slabs):
        off = np.array([c["offset"] for c in thread])
        vals = nc.slabs[:, off].astype(np.float64)
        S, K = vals.shape
        parts.append(
            pd.DataFrame(
                {
                    "rank": np.repeat(nc.ranks[nc.slab_rank], K),
                    "thread": np.repeat(nc.slab_thread, K),
                    "counter": np.tile([c["name"] for c in thread], S),
                    "kind": np.tile([c["kind"] for c in thread], S),
                    "unit": np.tile([c["unit"] for c in thread], S),
                    "value": vals.reshape(-1),
                }
            )
        )
    if rank and len(nc.ranks):
        off = np.array([c["offset"] for c in rank])
        vals = nc.rank_words[:, off].astype(np.float64)
        R, K = vals.shape
        parts.append(
            pd.DataFrame(
                {
                    "rank": np.repeat(nc.ranks, K),
                    "thread": -1,
                    "counter": np.tile([c["name"] for c in rank], R),
                    "kind": np.tile([c["kind"] for c in rank], R),
                    "unit": np.tile([c["unit"] for c in rank], R),
                    "value": vals.reshape(-1),
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else None


def _functions_table(nc, sets):
    meta = nc.meta
    f = meta["functions"]
    calls = nc.slabs[:, [x["calls_offset"] for x in f]]
    s, i = np.nonzero(calls)
    if not len(s):
        return None
    timed, counted = "timers" in sets, "bytes" in sets
    rate = nc.ticks_per_s[nc.slab_rank[s]]
    ticks = nc.slabs[s, np.array([x["ticks_offset"] for x in f])[i]].astype(np.float64)
    nbytes = nc.slabs[s, np.array([x["bytes_offset"] for x in f])[i]].astype(np.float64)
    return pd.DataFrame(
        {
            "rank": nc.ranks[nc.slab_rank[s]],
            "thread": nc.slab_thread[s],
            "function": np.array([x["name"] for x in f], dtype=object)[i],
            "calls": calls[s, i].astype(np.int64),
            "bytes": nbytes if counted else np.nan,
            "time_s": ticks / rate if timed else np.nan,
        }
    )


def _peers_table(nc):
    if not len(nc.peer_slab):
        return None
    names = [a["name"] for a in nc.meta["peers"]["arrays"]]
    df = pd.DataFrame(nc.peer_values.astype(np.int64), columns=names)
    df.insert(0, "peer", nc.peer_rank)
    df.insert(0, "rank", nc.ranks[nc.slab_rank[nc.peer_slab]])
    df = df.groupby(["rank", "peer"], as_index=False, sort=True).sum()
    return df[df[names].to_numpy().any(axis=1)].reset_index(drop=True)


def _bins_tables(nc, sets):
    meta = nc.meta
    by_row = {f["bin_row"]: f["name"] for f in meta["functions"] if "bin_row" in f}
    size = None
    if len(nc.bin_slab):
        nb = nc.bin_counts.shape[1]
        k, b = np.nonzero(nc.bin_counts)
        rank_row = nc.slab_rank[nc.bin_slab[k]]
        timed = "timers" in sets and nc.bin_ticks is not None
        df = pd.DataFrame(
            {
                "rank": nc.ranks[rank_row],
                "row": nc.bin_row[k],
                "bin": b,
                "count": nc.bin_counts[k, b].astype(np.int64),
                "time_s": (
                    nc.bin_ticks[k, b].astype(np.float64) / nc.ticks_per_s[rank_row]
                    if timed
                    else np.nan
                ),
            }
        )
        df = df.groupby(["rank", "row", "bin"], as_index=False, sort=True)[["count", "time_s"]].sum(
            min_count=1
        )
        df.insert(1, "function", df.pop("row").map(by_row))
        lo = np.where(df["bin"] == 0, 0, 1 << np.maximum(df["bin"].to_numpy() - 1, 0))
        hi = np.where(df["bin"] == 0, 0.0, (1 << df["bin"].to_numpy()).astype(np.float64) - 1)
        hi = np.where(df["bin"] == nb - 1, np.inf, hi)
        df.insert(3, "min_bytes", lo.astype(np.int64))
        df.insert(4, "max_bytes", hi)
        size = df
    coll = [f for f in meta["functions"] if "coll_offset" in f]
    colls = None
    if coll and len(nc.slabs):
        off = np.array([[f["coll_offset"] + k for k in range(4)] for f in coll])
        per_rank = np.zeros((len(nc.ranks),) + off.shape, np.uint64)
        np.add.at(per_rank, nc.slab_rank, nc.slabs[:, off])
        r, i, k = np.nonzero(per_rank)
        if len(r):
            msg = np.array([c.partition("_msg_")[0] for c in COLL_BINS])
            comm = np.array([c.partition("_msg_")[2].replace("_comm", "") for c in COLL_BINS])
            colls = pd.DataFrame(
                {
                    "rank": nc.ranks[r],
                    "function": np.array([f["name"] for f in coll], dtype=object)[i],
                    "message_size": msg[k],
                    "communicator_size": comm[k],
                    "count": per_rank[r, i, k].astype(np.int64),
                }
            )
    return size, colls


def _files_table(nc, raw_dir):
    nfiles = nc.headers["nfiles"].astype(np.int64)
    if not nfiles.any():
        return None
    from ..runs import read_csv_table

    path = raw_dir / nc.meta["files_file"]
    names = {}
    if path.is_file():
        listed = read_csv_table(path)
        for col in ("rank", "file_id", "path"):
            if col not in listed.columns:
                raise InputError(path, col, "required column is missing")
        names = {
            (int(r), int(f)): str(p)
            for r, f, p in zip(listed["rank"], listed["file_id"], listed["path"])
        }
    rows = nc.meta["files"]["rows"]
    cols = [c["name"] for c in nc.meta["files"]["counters"]]
    r = np.repeat(np.arange(len(nc.ranks)), np.minimum(nfiles, rows))
    fid = np.arange(len(r)) - np.repeat(
        np.cumsum(np.minimum(nfiles, rows)) - np.minimum(nfiles, rows), np.minimum(nfiles, rows)
    )
    shared = (fid == rows - 1) & (nfiles[r] > rows)
    df = pd.DataFrame(
        {
            "rank": nc.ranks[r],
            "file_id": fid,
            "path": [
                "(other files)" if s else names.get((int(nc.ranks[ri]), int(f)), "(unlisted)")
                for ri, f, s in zip(r, fid, shared)
            ],
        }
    )
    for i, c in enumerate(cols):
        df[c] = nc.per_file[r, fid, i].astype(np.int64)
    return df


def _snapshot_tables(raw_dir, nc, rank_rate, sets):
    meta = nc.meta
    snaps, dropped = read_snapshots(raw_dir, meta)
    if dropped:
        warnings.warn(
            f"{raw_dir / meta['snapshot_file']}: {dropped} bytes at the end are not a "
            "whole record (a rank stopped while writing) and are left out",
            stacklevel=2,
        )
    if not len(snaps.rank):
        return None, None
    can = meta["canonical"]
    cols = [c["name"] for c in meta["counters"]]
    vals = snaps.values(list(range(len(cols))) + [can["total_calls"], can["total_ticks"]])
    t0 = pd.Series(snaps.ns).groupby(snaps.rank).transform("min").to_numpy()
    frame = pd.DataFrame({"rank": snaps.rank, "seq": snaps.seq, "time_s": (snaps.ns - t0) / 1e9})
    frame["calls"] = vals[:, len(cols)].astype(np.int64)
    rate = np.array([rank_rate.get(int(r), np.nan) for r in snaps.rank])
    frame["mpi_time_s"] = vals[:, len(cols) + 1] / rate if "timers" in sets else np.nan
    for i, c in enumerate(meta["counters"]):
        if c.get("unit") == "ns":  # cpu_wait, cpu_run: seconds, as every stored time
            frame[f"{c['name']}_s"] = vals[:, i] / 1e9
        else:
            frame[c["name"]] = vals[:, i].astype(np.int64)
    pv = None
    at = can["pvars"]
    sel = snaps.change_index >= at
    if sel.any() and meta["pvars"]:
        idx = snaps.change_index[sel] - at
        rec = snaps.change_record[sel]
        starts = np.array([p["offset"] for p in meta["pvars"]])
        which = np.searchsorted(starts, idx, side="right") - 1
        names = np.array([p["name"] for p in meta["pvars"]], dtype=object)
        pv = pd.DataFrame(
            {
                "rank": snaps.rank[rec],
                "seq": snaps.seq[rec],
                "time_s": frame["time_s"].to_numpy()[rec],
                "pvar": names[which],
                "index": idx - starts[which],
                "value": snaps.change_value[sel].view(np.float64),
            }
        )
    return frame, pv


def _communicators(raw_dir, meta):
    from ..runs import read_csv_table

    path = raw_dir / meta["comms_file"]
    if not path.is_file():
        return None
    df = read_csv_table(path)  # a half-written last line (killed program) is dropped
    for col in ("rank", "comm_id", "size", "created_by", "world_ranks"):
        if col not in df.columns:
            raise InputError(path, col, "required column is missing")
    df["world_ranks"] = df["world_ranks"].astype(str)
    return df.rename(columns={"size": "members"})  # a count of ranks; a "size" is bytes


def convert_node(raw_dir, key, sets):
    """Every table's rows of one node: {table: DataFrame}; ``sets``: the run's counter
    sets (settings.chosen_sets: what was not counted is NaN, not 0)."""
    nf = NodeFile(raw_dir, key)
    try:
        nc = nf.read()
        lost_ranks = nf.lost_ranks
    finally:
        nf.close()
    out = {
        "ranks": _ranks_table(nc, key),
        "counters": _counters_table(nc),
        "functions": _functions_table(nc, sets),
        "peers": _peers_table(nc),
        "files": _files_table(nc, raw_dir),
    }
    out["size_bins"], out["collective_bins"] = _bins_tables(nc, sets)
    rates = dict(zip(nc.ranks.tolist(), nc.ticks_per_s.tolist()))
    out["snapshots"], out["pvars"] = _snapshot_tables(raw_dir, nc, rates, sets)
    out["communicators"] = _communicators(raw_dir, nc.meta)
    out["_lost_ranks"] = lost_ranks
    return {k: v for k, v in out.items() if v is not None}


def _convert_one(args):
    raw_dir, key, sets = args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return key, convert_node(raw_dir, key, sets), None, [str(w.message) for w in caught]
        except InputError as exc:
            return key, None, str(exc), [str(w.message) for w in caught]


def convert(run, jobs=None):
    """Write the profile tables of ``run`` from its raw files; returns the rank summary
    (see :func:`rank_overview`).  A node whose files cannot be read is left out and
    named in ``run.meta["profile"]["problems"]``."""
    raw = run.raw_dir
    keys = node_keys(raw)
    jobs = jobs or min(len(keys), os.cpu_count() or 1)
    sets = chosen_sets(run.meta)
    work = [(raw, k, sets) for k in keys]
    if jobs > 1 and len(keys) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_convert_one, work, chunksize=max(1, len(work) // (4 * jobs))))
    else:
        results = [_convert_one(w) for w in work]
    frames, problems, lost = {}, [], 0
    for key, tables, problem, warned in results:
        for w in warned:  # said here, once, in the CLI's form (a worker's are recorded)
            warn(w)
        if problem:
            problems.append(problem)
            continue
        lost += tables.pop("_lost_ranks", 0)
        for name, df in tables.items():
            frames.setdefault(name, []).append(df)
    if "ranks" in frames:  # endings the library could not record (SIGKILL), from the launcher
        frames["ranks"] = [
            fill_from_launcher(pd.concat(frames["ranks"], ignore_index=True), _launcher_said(run))
        ]
    for name, parts in frames.items():
        df = pd.concat(parts, ignore_index=True)
        if "rank" in df.columns:
            df = df.sort_values(
                [c for c in ("rank", "thread", "seq") if c in df.columns], kind="stable"
            ).reset_index(drop=True)
        run.write_table(name, df)
    ranks = pd.concat(frames["ranks"], ignore_index=True) if "ranks" in frames else None
    return rank_overview(ranks, problems, lost)


def _launcher_said(run):
    """The launcher's report (kept in stderr.txt), for the endings the library missed."""
    path = run.path / "stderr.txt"
    try:
        return path.read_text(errors="replace") if path.is_file() and not path.is_symlink() else ""
    except OSError:
        return ""


def rank_overview(ranks, problems=(), lost_ranks=0):
    """What meta.json records about the ranks (the per-rank rows are ranks.parquet)."""
    if ranks is None or not len(ranks):
        return dict(count=0, problems=list(problems), lost_ranks=lost_ranks)
    unfinished = ranks.loc[ranks["state"] != "finalized", "rank"].astype(int).tolist()
    return dict(
        count=int(len(ranks)),
        nodes=int(ranks["node"].nunique()),
        endings=summarize(ranks.sort_values("rank")),
        threads_max=int(ranks["threads"].max()),
        not_finalized=unfinished[:64],
        not_finalized_count=len(unfinished),
        lost_threads=int(ranks["lost_threads"].sum()),
        lost_blocks=int(ranks["lost_blocks"].sum()),
        lost_ranks=int(lost_ranks),
        problems=list(problems),
    )


__all__ = ["convert", "convert_node", "bin_edges", "COLL_BINS", "rank_overview"]
