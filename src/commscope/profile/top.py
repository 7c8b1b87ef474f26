"""`commscope top`: a live view of a running profile, or a replay of a finished one.

Live: attaches read-only to every rank's mapped counter file and shows, per
rank, the message rate, bytes per second, share of time in MPI (with timers),
the busiest functions and the request watermarks, refreshed every interval.
Replay: steps through the snapshots a finished (or killed) run recorded.
"""

import os
import sys
import time

from ..lazy import lazy

from ..errors import InputError
from ..output import format_table
from .counters import CounterFile, RankCounters, counter_ranks, read_snapshots
from .summary import rank_row

np = lazy("numpy")


def open_counter_files(run):
    ranks = counter_ranks(run.raw_dir)
    if not ranks:
        raise InputError(run.raw_dir, None, "holds no counter files (counters.<rank>.json): the "
                                            "program has not reached MPI_Init yet, or this is not "
                                            "a profile run")
    return [CounterFile(run.raw_dir, r) for r in ranks]


def is_live(files):
    """True while some rank's program is running on this host (state running, pid alive)."""
    host = os.uname().nodename
    for f in files:
        h = f.header()
        if h["state"] == 1 and f.meta.get("host") == host:
            try:
                os.kill(h["pid"], 0)
                return True
            except ProcessLookupError:
                continue
            except PermissionError:
                return True
    return False


def frame(prev, now, dt):
    """Rows of the view: rates from two readings ``dt`` seconds apart (prev may be None).

    ``dt`` is one interval for every rank (live: the reader's clock) or a list with one
    per rank (replay: each rank snapshots on its own clock)."""
    rows = []
    for i, c in enumerate(now):
        dt_i = dt[i] if isinstance(dt, (list, tuple)) else dt
        row = rank_row(c)
        out = dict(rank=row["rank"], threads=row["threads"], calls=row["calls"])
        if prev is not None and dt_i > 0:
            p = rank_row(prev[i])
            msgs = (row["messages_sent"] + row["messages_received"]
                    - p["messages_sent"] - p["messages_received"])
            nbytes = (row["bytes_sent"] + row["bytes_received"]
                      - p["bytes_sent"] - p["bytes_received"])
            out["msgs_per_s"] = msgs / dt_i
            out["MB_per_s"] = nbytes / dt_i / 1e6
            out["mpi_time_pct"] = 100 * (row["mpi_time_s"] - p["mpi_time_s"]) / dt_i / max(row["threads"], 1)
        out.update(outstanding_hwm=row["outstanding_requests_hwm"],
                   posted_hwm=row["posted_receives_hwm"], top_functions=row["top_functions"])
        rows.append(out)
    return rows


def snapshot_series(files):
    """Per rank, the list of RankCounters rebuilt from its snapshot records."""
    series = []
    for f in files:
        recs, _ = read_snapshots(f.raw_dir, f.meta)
        words, ncount = f.meta["slab_words"], len(f.meta["counters"])
        header = dict(f.header())
        empty_files = np.zeros((0, len(f.meta["files"]["counters"])), np.uint64)  # not in snapshots
        states = []
        for rec in recs:
            h = dict(header, tick1=int(rec[1]), ns1=int(rec[2]))
            states.append(RankCounters(f.meta, h, rec[3:3 + words][None, :],
                                       rec[3 + words:3 + words + ncount], empty_files))
        series.append(states)
    return series


def _print(rows, title, clear):
    text = format_table(rows, title=title)
    if clear:
        sys.stdout.write("\x1b[H\x1b[2J")
    print(text, flush=True)


def live(run, interval=1.0, once=False, stream_is_tty=None):
    """Refresh until every rank has finalized (or once); returns the last rows."""
    files = open_counter_files(run)
    tty = sys.stdout.isatty() if stream_is_tty is None else stream_is_tty
    prev, t_prev, rows = None, None, []
    try:
        while True:
            now = [f.read() for f in files]
            t = time.monotonic()
            rows = frame(prev, now, (t - t_prev) if t_prev else 0)
            running = is_live(files)
            if once:
                return rows
            _print(rows, f"commscope top {run.path}  ({'running' if running else 'finished'}, "
                         f"every {interval:g} s; Ctrl-C to leave)", tty)
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
        series = snapshot_series(files)
    finally:
        for f in files:
            f.close()
    if not series or min(len(s) for s in series) == 0:
        raise InputError(run.raw_dir, None, "no snapshots recorded (the program died before "
                                            "MPI_Init ended)")
    # ranks snapshot on their own clocks and may hold different numbers of records: step
    # k shows each rank's k-th (or, past its end, its last), so the final frame is exact
    n = max(len(s) for s in series)

    def at(s, k):
        return s[min(k, len(s) - 1)]

    rows = []
    for k in ([n - 1] if once else range(n)):
        now = [at(s, k) for s in series]
        prev = [at(s, k - 1) for s in series] if k else None
        dts = [(int(a.header["ns1"]) - int(b.header["ns1"])) / 1e9 for a, b in zip(now, prev)] \
            if prev else 0
        rows = frame(prev, now, dts)
        t = (int(now[0].header["ns1"]) - int(series[0][0].header["ns1"])) / 1e9
        if not once:
            _print(rows, f"snapshot {k + 1}/{n} at {t:.3f} s", False)
            if speed > 0 and prev is not None:
                time.sleep(max(dts) / speed)
    return rows


__all__ = ["live", "replay", "frame"]
