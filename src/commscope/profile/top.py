"""`commscope top`: a live view of a running profile, or a replay of a finished one.

Live: attaches read-only to every rank's mapped counter file and shows, per
rank, its wall time since MPI_Init, time in MPI and its share (mpiP's AppTime, MPITime,
MPI%; with several threads, the mean over those that call MPI), the message rate,
bytes per second, the busiest functions and the request watermarks, refreshed every
interval.  Rates and MPI % cover the last interval, or (the first frame, --once) the
whole run so far.  Replay: steps through the snapshots a finished (or killed) run
recorded.
"""

import os
import sys
import time

from ..lazy import lazy

from ..errors import InputError
from ..output import format_table
from ..collect.node_files import NodeFile, node_keys, read_snapshots
from .settings import chosen_sets
from .summary import not_measured_note, printable, rank_row, row as summary_row, timed

np = lazy("numpy")


def open_counter_files(run):
    """Every rank of the run's node files, as CounterFile-like readers (one per node)."""
    keys = node_keys(run.raw_dir)
    if not keys and "ranks" in run.tables():  # converted: it names the files that are gone
        nodes = sorted(set(run.table("ranks")["node"].astype(str)))
        raise InputError(
            ", ".join(str(run.raw_dir / f"node.{n}.json") for n in nodes),
            None,
            "missing: ranks.parquet lists these nodes' counter files",
        )
    if not keys:
        raise InputError(
            run.raw_dir,
            None,
            "holds no counter files (node.<node>.json): the "
            "program has not reached MPI_Init yet, or this is not "
            "a profile run",
        )
    return [NodeFile(run.raw_dir, k) for k in keys]


def read_rows(files, sets):
    """The summary row of every rank of every node now (each node read at once); a rank
    still running on this host has its wall time up to now.  ``sets``: the run's
    (settings.chosen_sets)."""
    import socket

    host, now = socket.gethostname(), time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    rows = []
    for f in files:
        nc = f.read()
        here = now if f.meta.get("host") == host else None
        rows += [rank_row(nc.rank(i), sets, now_ns=here) for i in range(len(nc.ranks))]
    return sorted(rows, key=lambda r: r["rank"])


def is_live(files):
    """True while some rank's program is running on this host (state running, pid alive)."""
    import socket

    host = socket.gethostname()
    for f in files:
        nc = f.read()
        if f.meta.get("host") != host:
            continue
        for h in nc.headers:
            if int(h["state"]) != 1:
                continue
            try:
                os.kill(int(h["pid"]), 0)
                return True
            except ProcessLookupError:
                continue
            except PermissionError:
                return True
    return False


def frame(prev, now, dt):
    """Rows of the view: from two sets of summary rows ``dt`` seconds apart (prev may be
    None: then rates and MPI % are over the whole run so far, its wall time).

    ``dt`` is one interval for every rank (live: the reader's clock) or a list with one
    per rank (replay: each rank snapshots on its own clock).  Columns: rank, threads,
    calls, wall_s, mpi_time_s (mean over the rank's MPI-calling threads; None: not
    measured), mpi_pct, msgs_per_s and bandwidth_Bps (messages and bytes sent plus
    received), outstanding_hwm, posted_hwm, top_functions."""
    rows = []
    for i, row in enumerate(now):
        dt_i = dt[i] if isinstance(dt, (list, tuple)) else dt
        p = prev[i] if prev is not None and dt_i > 0 else None
        span = dt_i if p is not None else row["wall_s"]
        msgs = (
            row["messages_sent"]
            + row["messages_received"]
            - (p["messages_sent"] + p["messages_received"] if p else 0)
        )
        nbytes = (
            row["bytes_sent"]
            + row["bytes_received"]
            - (p["bytes_sent"] + p["bytes_received"] if p else 0)
        )
        mpi, pct = row["mpi_time_s"], None
        if mpi is not None and span:
            before = (p["mpi_time_s"] or 0.0) if p is not None else 0.0
            pct = 100 * (mpi - before) / span
        out = dict(
            rank=row["rank"],
            threads=row["threads"],
            calls=row["calls"],
            wall_s=row["wall_s"],
            mpi_time_s=mpi,
            mpi_pct=pct,
            msgs_per_s=msgs / span if span else None,
            bandwidth_Bps=nbytes / span if span else None,
            outstanding_hwm=row["outstanding_requests_hwm"],
            posted_hwm=row["posted_receives_hwm"],
            top_functions=row["top_functions"],
        )
        rows.append(out)
    return rows


_SAID = set()


def _say_once(message):
    from ..errors import warn

    if message not in _SAID:
        _SAID.add(message)
        warn(message)


def snapshot_series(files, sets):
    """Per rank, (ns, summary row) at each of its snapshot records."""
    series = {}
    for f in files:
        meta = f.meta
        nc = f.read()
        threads = dict(
            zip(nc.ranks.tolist(), np.bincount(nc.slab_rank, minlength=len(nc.ranks)).tolist())
        )
        rates = dict(zip(nc.ranks.tolist(), nc.ticks_per_s.tolist()))
        snaps, dropped = read_snapshots(f.raw_dir, meta)
        if dropped:
            _say_once(
                f"{f.raw_dir / meta['snapshot_file']}: {dropped} bytes at the end are not a "
                f"whole snapshot record (cut short, or still being written): left out"
            )
        can, nfunc, ncount = meta["canonical"], len(meta["functions"]), len(meta["counters"])
        idx = (
            list(range(ncount))
            + list(range(can["calls"], can["calls"] + nfunc))
            + list(range(can["ticks"], can["ticks"] + nfunc))
        )
        vals = snaps.values(idx)
        # wall time from the rank's first clock pair (MPI_Init), as ranks.parquet's wall_s
        first = dict(zip(nc.ranks.tolist(), nc.headers["ns0"].astype(np.int64).tolist()))
        for k, r in enumerate(snaps.rank.tolist()):
            first.setdefault(r, int(snaps.ns[k]))
            v = vals[k]
            series.setdefault(r, []).append(
                (
                    int(snaps.ns[k]),
                    summary_row(
                        meta,
                        sets,
                        r,
                        threads.get(r, 1),
                        v[:ncount],
                        v[ncount : ncount + nfunc],
                        v[ncount + nfunc :],
                        rates.get(r, float("nan")),
                        wall_s=(int(snaps.ns[k]) - first[r]) / 1e9,
                    ),
                )
            )
    return [series[r] for r in sorted(series)]


def _print(rows, title, clear, is_timed=True):
    text = format_table(printable(rows, is_timed), title=title)
    if not is_timed:
        text += "\n# " + not_measured_note("mpi_time_s, mpi_pct")
    if clear:
        sys.stdout.write("\x1b[H\x1b[2J")
    print(text, flush=True)


def live(run, interval=1.0, once=False, stream_is_tty=None):
    """Refresh until every rank has finalized (or once); returns the last rows."""
    files = open_counter_files(run)
    sets = chosen_sets(run.meta)
    tty = sys.stdout.isatty() if stream_is_tty is None else stream_is_tty
    prev, t_prev, rows = None, None, []
    try:
        while True:
            if prev is not None:  # a node file grows as threads appear: see them too
                for f in files:
                    f.close()
                files = open_counter_files(run)
            now = read_rows(files, sets)
            t = time.monotonic()
            rows = frame(prev, now, (t - t_prev) if t_prev else 0)
            running = is_live(files)
            if once:
                return rows
            _print(
                rows,
                f"commscope top {run.path}  ({'running' if running else 'finished'}, "
                f"every {interval:g} s; Ctrl-C to leave)",
                tty,
                timed(sets),
            )
            if not running:
                return rows
            prev, t_prev = now, t
            time.sleep(interval)
    finally:
        for f in files:
            f.close()


def replay(run, speed=0.0, once=False):
    """Print one frame per snapshot (the last only with ``once``); returns the last rows."""
    files = open_counter_files(run)
    try:
        sets = chosen_sets(run.meta)
        is_timed = timed(sets)
        series = snapshot_series(files, sets)
        snap_files = ", ".join(str(f.raw_dir / f.meta["snapshot_file"]) for f in files)
    finally:
        for f in files:
            f.close()
    if not series or min(len(s) for s in series) == 0:
        raise InputError(
            snap_files,
            None,
            "no snapshots recorded (missing, or the program died before MPI_Init ended)",
        )
    # ranks snapshot on their own clocks and may hold different numbers of records: step
    # k shows each rank's k-th (or, past its end, its last), so the final frame is exact
    n = max(len(s) for s in series)

    def at(s, k):
        return s[min(k, len(s) - 1)]

    rows = []
    for k in [n - 1] if once else range(n):
        now = [at(s, k) for s in series]
        prev = [at(s, k - 1) for s in series] if k and not once else None  # once: the whole run
        dts = [(a[0] - b[0]) / 1e9 for a, b in zip(now, prev)] if prev else 0
        rows = frame([p[1] for p in prev] if prev else None, [a[1] for a in now], dts)
        t = (now[0][0] - series[0][0][0]) / 1e9
        if not once:
            _print(rows, f"snapshot {k + 1}/{n} at {t:.3f} s", False, is_timed)
            if speed > 0 and prev is not None:
                time.sleep(max(dts) / speed)
    return rows


__all__ = ["live", "replay", "frame"]
