
"""Per-rank summaries of a profile: the table `profile --summary` and `top` print.

Works from live counters (RankCounters read from the mapped files) so the same
numbers appear while the program runs and after it ended.
"""

from ..lazy import lazy

np = lazy("numpy")


FIELDS = ("messages_sent", "bytes_sent", "messages_received", "bytes_received",
          "outstanding_requests_hwm", "posted_receives_hwm")


def rank_row(c, top=3):
    """One rank's totals: calls, messages, bytes, time in MPI, top functions by calls or time."""
    meta, totals = c.meta, c.totals
    named = {x["name"]: int((c.rank_words if x["scope"] == "rank" else totals)[x["offset"]])
             for x in meta["counters"]}
    calls = np.array([int(totals[f["calls_offset"]]) for f in meta["functions"]])
    timed = "timers" in meta["sets"] and c.ticks_per_s == c.ticks_per_s
    ticks = np.array([int(totals[f["ticks_offset"]]) for f in meta["functions"]], dtype=float)
    key = ticks if timed else calls
    order = [i for i in np.argsort(-key, kind="stable") if calls[i]][:top]
    names = [meta["functions"][i]["name"].removeprefix("MPI_") for i in order]
    row = dict(rank=meta["rank"], threads=int(c.slabs.shape[0]), calls=int(calls.sum()),
               **{k: named.get(k, 0) for k in FIELDS},
               mpi_time_s=float(ticks.sum() / c.ticks_per_s) if timed else float("nan"),
               top_functions=",".join(names))
    return row
