"""Per-rank summaries of a profile: the table `profile --summary` and `top` print.

Works from live counters (a rank's slabs read from the mapped node file) or from a
snapshot record, so the same numbers appear while the program runs, in a replay and
after it ended.
"""

from ..lazy import lazy

np = lazy("numpy")


FIELDS = ("messages_sent", "bytes_sent", "messages_received", "bytes_received",
          "outstanding_requests_hwm", "posted_receives_hwm")


def canonical_head(c):
    """(counters, calls per function, ticks per function) of RankCounters ``c``."""
    meta, totals = c.meta, c.totals
    counters = np.array([(c.rank_words if x["scope"] == "rank" else totals)[x["offset"]]
                         for x in meta["counters"]], dtype=np.uint64)
    calls = totals[[f["calls_offset"] for f in meta["functions"]]]
    ticks = totals[[f["ticks_offset"] for f in meta["functions"]]]
    return counters, calls, ticks


def row(meta, rank, threads, counters, calls, ticks, ticks_per_s, top=3):
    """One rank's totals: calls, messages, bytes, time in MPI, top functions by calls or time."""
    named = {x["name"]: int(v) for x, v in zip(meta["counters"], counters)}
    calls = np.asarray(calls, dtype=np.int64)
    ticks = np.asarray(ticks, dtype=float)
    timed = "timers" in meta["sets"] and ticks_per_s == ticks_per_s
    key = ticks if timed else calls
    order = [i for i in np.argsort(-key, kind="stable") if calls[i]][:top]
    names = [meta["functions"][i]["name"].removeprefix("MPI_") for i in order]
    return dict(rank=int(rank), threads=int(threads), calls=int(calls.sum()),
                **{k: named.get(k, 0) for k in FIELDS},
                mpi_time_s=float(ticks.sum() / ticks_per_s) if timed else float("nan"),
                top_functions=",".join(names))


def rank_row(c, top=3):
    """:func:`row` of RankCounters ``c``."""
    counters, calls, ticks = canonical_head(c)
    return row(c.meta, c.rank, c.slabs.shape[0], counters, calls, ticks, c.ticks_per_s, top)
