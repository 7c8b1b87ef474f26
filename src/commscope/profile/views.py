"""The views mpiP and IPM users look for first, from a converted profile run.

* :func:`rank_times`: per rank, mpiP's AppTime / MPITime / MPI%: ``wall_s`` (the rank's
  wall time from MPI_Init to MPI_Finalize, ``ranks.parquet``), ``mpi_time_s`` (time
  inside wrapped MPI calls) and ``mpi_pct``, and ``compute_s`` = wall - MPI (the
  load of eq. 4.2, profile/imbalance.py).  A rank whose several threads call MPI counts
  the **mean over those threads** (the threads of ``functions.parquet``, i.e. the ones
  that made at least one MPI call): time in MPI summed over threads can exceed the
  wall time, the mean cannot, so MPI % stays a share of the rank's wall time.  The
  same rule holds in ``top``, ``profile --summary``/``--json`` and the report.
* :func:`callsite_time_stats`: per call site (``profile --callsites``), mpiP's
  "Callsite Time statistics" over ranks: calls, bytes, total time, and the minimum,
  mean and maximum of the site's time on one rank (over the ranks that called there),
  with the ranks holding the extremes.
* :func:`time_by_size`: IPM's message-size histogram weighted by time: per size bin,
  messages and the time of the calls that moved them (``size_bins.time_s``,
  docs/profile.md "Time per message size"), and the time in MPI that is in no bin.

A time that was not measured (a ``--counters`` list without ``timers``) is NaN here,
never 0; the printers say "not measured" (:data:`profile.summary.NOT_MEASURED`), JSON
says null.
"""

from ..lazy import lazy
from .settings import chosen_sets
from .summary import timed

np = lazy("numpy")
pd = lazy("pandas")

#: Beyond this many ranks, per-rank tables and bars show the distribution and the
#: ranks at its ends (the report's rank x rank matrices group beyond the same number).
MAX_RANK_ROWS = 64


def run_timed(run):
    """True when the run measured time in MPI (its counter sets hold the timers)."""
    return timed(chosen_sets(run.meta))


def rank_times(run):
    """Per rank: rank, threads, wall_s, mpi_time_s, mpi_pct, compute_s (NaN where
    not measured); sorted by rank.  None when the run has no ranks table."""
    if "ranks" not in run.tables():
        return None
    ranks = run.table("ranks")
    out = pd.DataFrame(
        {"rank": ranks["rank"].to_numpy(), "wall_s": ranks["wall_s"].to_numpy(dtype=float)}
    )
    f = run.table("functions") if "functions" in run.tables() else None
    if f is not None and len(f):
        per_thread = f.groupby(["rank", "thread"])["time_s"].sum(min_count=1)
        threads = per_thread.groupby(level="rank").size()
        mpi = per_thread.groupby(level="rank").mean() if run_timed(run) else None
    else:
        threads, mpi = pd.Series(dtype=float), None
    out["threads"] = out["rank"].map(threads).fillna(0).astype(np.int64)
    out["mpi_time_s"] = out["rank"].map(mpi).astype(float) if mpi is not None else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100 * out["mpi_time_s"] / out["wall_s"]
    out["mpi_pct"] = pct.where(out["wall_s"] > 0)
    out["compute_s"] = out["wall_s"] - out["mpi_time_s"]
    return (
        out[["rank", "threads", "wall_s", "mpi_time_s", "mpi_pct", "compute_s"]]
        .sort_values("rank", kind="stable")
        .reset_index(drop=True)
    )


def rank_time_summary(times):
    """The job's figures from :func:`rank_times`: MPI time over wall time of all ranks
    (pct), and the ranks with the least and the most MPI time; None when not measured."""
    t = times.dropna(subset=["mpi_time_s"])
    if t.empty:
        return None
    wall = float(t["wall_s"].sum())
    lo, hi = t.loc[t["mpi_time_s"].idxmin()], t.loc[t["mpi_time_s"].idxmax()]
    return {
        "ranks": int(len(t)),
        "wall_s": wall,
        "mpi_time_s": float(t["mpi_time_s"].sum()),
        "mpi_pct": 100 * float(t["mpi_time_s"].sum()) / wall if wall > 0 else float("nan"),
        "min_mpi_time_s": float(lo["mpi_time_s"]),
        "min_rank": int(lo["rank"]),
        "max_mpi_time_s": float(hi["mpi_time_s"]),
        "max_rank": int(hi["rank"]),
        "mean_mpi_time_s": float(t["mpi_time_s"].mean()),
    }


def rank_time_rows(times, most=MAX_RANK_ROWS):
    """The rows a table shows: every rank up to ``most``, else the 5 ranks with the most
    and the 5 with the least MPI time (by MPI time, most first); and what was left out
    (a sentence, or "")."""
    if len(times) <= most:
        return times, ""
    t = times.sort_values(["mpi_time_s", "rank"], ascending=[False, True], na_position="last")
    shown = pd.concat([t.head(5), t.tail(5)]).drop_duplicates("rank")
    return shown, (
        f"{len(times)} ranks: the 5 with the most and the 5 with the least time in MPI are shown"
    )


def callsite_time_stats(sites, n=10, by="time_s"):
    """Per call site, summed over ranks and threads, the top ``n`` by ``by``: function,
    file, line, caller, stack, reason, ranks, calls, bytes, time_s, and over the ranks
    that called there: min_time_s, mean_time_s, max_time_s, min_rank, max_rank (NaN
    without timers)."""
    if sites is None or not len(sites):
        return sites
    keys = ["function", "file", "line", "caller", "stack", "reason"]
    s = sites.fillna({"file": "", "line": -1, "stack": ""})
    per_rank = s.groupby(keys + ["rank"], sort=False, as_index=False).agg(
        calls=("calls", "sum"),
        bytes=("bytes", lambda x: x.sum(min_count=1)),
        time_s=("time_s", lambda x: x.sum(min_count=1)),
    )
    g = per_rank.groupby(keys, sort=False)
    out = g.agg(
        ranks=("rank", "nunique"),
        calls=("calls", "sum"),
        bytes=("bytes", lambda x: x.sum(min_count=1)),
        time_s=("time_s", lambda x: x.sum(min_count=1)),
        min_time_s=("time_s", "min"),
        mean_time_s=("time_s", "mean"),
        max_time_s=("time_s", "max"),
    ).reset_index()
    timed_rows = per_rank.dropna(subset=["time_s"])
    if len(timed_rows):
        tg = timed_rows.groupby(keys, sort=False)["time_s"]
        ext = pd.DataFrame(
            {
                "min_rank": timed_rows.loc[tg.idxmin(), "rank"].to_numpy(),
                "max_rank": timed_rows.loc[tg.idxmax(), "rank"].to_numpy(),
            },
            index=tg.idxmin().index,
        ).reset_index()
        out = out.merge(ext, on=keys, how="left")
    else:
        out["min_rank"] = out["max_rank"] = np.nan
    for col in ("min_rank", "max_rank"):
        out[col] = out[col].astype("Int64")
    out["file"] = out["file"].replace("", None)
    out["line"] = out["line"].where(out["line"] >= 0).astype("Int64")
    out["stack"] = out["stack"].replace("", None)
    out["reason"] = out["reason"].replace("", None)
    if by == "time_s" and out["time_s"].isna().all():
        by = "calls"
    order = [by] + [c for c in ("calls", "bytes") if c != by]
    return (
        out.sort_values(order, ascending=False, kind="stable", na_position="last")
        .head(n)
        .reset_index(drop=True)
    )


def time_by_size(bins, functions=None):
    """(per bin, unbinned_s): per power-of-two bin over every rank and function: bin,
    min_bytes, max_bytes, messages, time_s; and the time in MPI that is in no bin (Wait
    and Test calls, barriers, posting an MPI_Irecv, ...), NaN without timers."""
    if bins is None or bins.empty:
        return None, float("nan")
    per = bins.groupby("bin", as_index=False).agg(
        min_bytes=("min_bytes", "first"),
        max_bytes=("max_bytes", "first"),
        messages=("count", "sum"),
        time_s=("time_s", lambda x: x.sum(min_count=1)),
    )
    total = float("nan")
    if functions is not None and len(functions) and functions["time_s"].notna().any():
        total = float(functions["time_s"].sum())
    binned = per["time_s"].sum(min_count=1)
    unbinned = total - float(binned) if binned == binned else float("nan")
    if unbinned == unbinned and unbinned < 1e-9 * abs(total):  # the same ticks summed in
        unbinned = 0.0  # another order: rounding
    return per, unbinned


__all__ = [
    "rank_times",
    "rank_time_summary",
    "rank_time_rows",
    "callsite_time_stats",
    "time_by_size",
    "run_timed",
    "MAX_RANK_ROWS",
]
