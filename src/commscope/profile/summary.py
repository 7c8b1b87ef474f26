"""Per-rank summaries of a profile: the table `profile --summary` and `top` print.

Works from live counters (a rank's slabs read from the mapped node file) or from a
snapshot record, so the same numbers appear while the program runs, in a replay and
after it ended; and the job-wide summary the ranks reduce at MPI_Finalize.
"""

import json
import math
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")


#: What a time shows where it was not measured (the run's --counters left the timers
#: out): printed tables and the report say so in the cell, --json gives null; never 0.
NOT_MEASURED = "not measured"
#: The option that adds the time, named wherever a time is not measured.
TIMERS_HINT = "profile with --counters default, or a --counters list that includes timers"


def timed(sets):
    """True when counter sets ``sets`` (settings.chosen_sets of the run) hold the timers."""
    return "timers" in (sets or ())


def not_measured_note(what="time in MPI"):
    """The sentence under a table whose times were not measured."""
    return f"{what}: {NOT_MEASURED}: the run's --counters had no timers; {TIMERS_HINT}"


FIELDS = (
    "messages_sent",
    "bytes_sent",
    "messages_received",
    "bytes_received",
    "outstanding_requests_hwm",
    "posted_receives_hwm",
)


def canonical_head(c):
    """(counters, calls per function, ticks per function) of RankCounters ``c``."""
    meta, totals = c.meta, c.totals
    counters = np.array(
        [(c.rank_words if x["scope"] == "rank" else totals)[x["offset"]] for x in meta["counters"]],
        dtype=np.uint64,
    )
    calls = totals[[f["calls_offset"] for f in meta["functions"]]]
    ticks = totals[[f["ticks_offset"] for f in meta["functions"]]]
    return counters, calls, ticks


def row(meta, sets, rank, threads, counters, calls, ticks, ticks_per_s, top=3, wall_s=float("nan")):
    """One rank's totals: calls, messages, bytes, its wall time since MPI_Init, time in
    MPI (the mean over its ``threads`` that called MPI: profile/views.py) and its share
    of the wall time, top functions by time (by calls without timers).  A time not
    measured is None (null in JSON, "not measured" where printed)."""
    named = {x["name"]: int(v) for x, v in zip(meta["counters"], counters)}
    calls = np.asarray(calls, dtype=np.int64)
    ticks = np.asarray(ticks, dtype=float)
    is_timed = timed(sets) and ticks_per_s == ticks_per_s
    key = ticks if is_timed else calls
    order = [i for i in np.argsort(-key, kind="stable") if calls[i]][:top]
    names = [meta["functions"][i]["name"].removeprefix("MPI_") for i in order]
    mpi = float(ticks.sum() / ticks_per_s / max(int(threads), 1)) if is_timed else None
    wall = float(wall_s) if wall_s == wall_s and wall_s > 0 else None
    return dict(
        rank=int(rank),
        threads=int(threads),
        calls=int(calls.sum()),
        **{k: named.get(k, 0) for k in FIELDS},
        wall_s=wall,
        mpi_time_s=mpi,
        mpi_pct=100 * mpi / wall if mpi is not None and wall else None,
        top_functions=",".join(names),
    )


def rank_row(c, sets, top=3, now_ns=None):
    """:func:`row` of RankCounters ``c``; its wall time runs to ``now_ns`` (CLOCK_MONOTONIC,
    for a rank still running on this host) or else to its latest clock pair (the last
    snapshot; MPI_Finalize once it has finalized)."""
    counters, calls, ticks = canonical_head(c)
    h = c.header
    end = now_ns if now_ns is not None and int(h["state"]) == 1 else int(h["ns1"])
    return row(
        c.meta,
        sets,
        c.rank,
        c.slabs.shape[0],
        counters,
        calls,
        ticks,
        c.ticks_per_s,
        top,
        wall_s=(end - int(h["ns0"])) / 1e9,
    )


def printable(rows, is_timed, columns=("wall_s", "mpi_time_s", "mpi_pct", "time_s")):
    """``rows`` for a printed table: without timers the time columns say
    :data:`NOT_MEASURED` instead of a blank (``wall_s`` is always measured)."""
    if is_timed:
        return list(rows)
    return [
        {
            k: (NOT_MEASURED if k in columns and k != "wall_s" and (v is None or v != v) else v)
            for k, v in r.items()
        }
        for r in rows
    ]


# ---- the job-wide summary reduced inside the job (raw/summary.json) ---------------

#: Beyond this many ranks `profile --summary` prints the job-wide summary, not a row per rank.
PER_RANK_ROWS = 32
STATS = ("total", "mean", "min", "min_rank", "max", "max_rank")


def read_job_summary(raw_dir):
    """raw/summary.json, checked; None when the job wrote none (it ended before
    MPI_Finalize, or a rank was gone and the reduction's deadline passed)."""
    path = Path(raw_dir) / "summary.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(path, None, f"not readable JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != "commscope.summary":
        raise InputError(path, "schema", "is not commscope.summary")
    for part in ("counters", "functions"):
        if not isinstance(doc.get(part), dict):
            raise InputError(path, part, "missing or not an object")
    for name, stats in doc["counters"].items():
        _check_stats(path, f"counters.{name}", stats)
    for name, per in doc["functions"].items():
        for what in ("calls", "bytes", "time_s"):
            _check_stats(path, f"functions.{name}.{what}", (per or {}).get(what))
    doc["counters"] = _in_data_units(doc["counters"])
    return doc


def _in_data_units(counters):
    """The counters as data: nanosecond ones in seconds (``cpu_wait`` -> ``cpu_wait_s``),
    codes left out (``cpu_source``)."""
    from .catalog import counter_catalog

    unit = {c["name"]: c["unit"] for c in counter_catalog() if c["scope"] in ("thread", "rank")}
    out = {}
    for name, stats in counters.items():
        if unit.get(name) == "code":
            continue
        if unit.get(name) == "ns":
            stats = {
                k: v / 1e9 if k in ("total", "mean", "min", "max") else v for k, v in stats.items()
            }
            name = f"{name}_s"
        out[name] = stats
    return out


def _check_stats(path, field, stats):
    if not isinstance(stats, dict) or any(
        not isinstance(stats.get(k), (int, float))
        or isinstance(stats.get(k), bool)
        or not math.isfinite(stats[k])
        for k in STATS
    ):
        raise InputError(path, field, f"needs finite numbers {', '.join(STATS)}")


def job_rows(doc, top=10):
    """Rows of the job summary: every nonzero counter, then the ``top`` functions by calls.

    A watermark's sum over ranks means nothing (its max does), so its total is None.
    """
    from .catalog import counter_catalog

    catalog = {c["name"]: c for c in counter_catalog() if c["scope"] in ("thread", "rank")}
    watermarks = {n for n, c in catalog.items() if c["kind"] == "watermark"}
    rows = [  # read_job_summary gave the counters in data units already
        dict(
            name=name,
            total=None if name in watermarks else s["total"],
            mean=s["mean"],
            min=s["min"],
            min_rank=s["min_rank"],
            max=s["max"],
            max_rank=s["max_rank"],
        )
        for name, s in doc["counters"].items()
        if s["total"]
    ]
    busiest = sorted(doc["functions"].items(), key=lambda kv: -kv[1]["calls"]["total"])[:top]
    rows += [
        dict(name=f"{name} calls", **{k: per["calls"][k] for k in STATS})
        for name, per in busiest
        if per["calls"]["total"]
    ]
    return rows


def rank_time_rows(times, is_timed):
    """Job-summary rows of the ranks' wall time, time in MPI and MPI % (from
    profile/views.rank_times): total (none for a share), mean, extremes and their ranks;
    "not measured" without timers."""
    rows = []
    for col in ("wall_s", "mpi_time_s", "mpi_pct"):
        t = times.dropna(subset=[col])
        if col != "wall_s" and (not is_timed or t.empty):
            rows.append(
                dict(
                    name=col,
                    **{
                        k: NOT_MEASURED if k in ("total", "mean", "min", "max") else None
                        for k in STATS
                    },
                )
            )
            continue
        if t.empty:
            continue
        lo, hi = t.loc[t[col].idxmin()], t.loc[t[col].idxmax()]
        rows.append(
            dict(
                name=col,
                total=None if col.endswith("_pct") else float(t[col].sum()),
                mean=float(t[col].mean()),
                min=float(lo[col]),
                min_rank=int(lo["rank"]),
                max=float(hi[col]),
                max_rank=int(hi["rank"]),
            )
        )
    return rows
