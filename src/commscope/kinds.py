"""What each kind of run directory holds: its tables' required columns, and the points a
benchmark plans so that a stopped run knows which are complete.

Data about run directories, read by :mod:`commscope.runs` (which depends on this module
and nothing that writes runs): the benchmark drivers (commscope.bench) and the profile
converter write these tables, and name them here once.

Columns map a name to a dtype kind: "i" integer, "p" positive integer, "f" float
(integers accepted), "n" a number that may be missing (NaN), "O" text, "b" true/false,
"*" a label of any type, never missing.
"""

from .benchspec import BENCHMARKS, Check

TABLE_COLUMNS = {
    ("profile", "threads"): {
        "trial": "i",
        "rank": "i",
        "iteration": "i",
        "region": "O",
        "thread": "i",
        "compute_time_s": "f",
        "instance": "i",
        "segment": "i",
        "barrier": "O",
        "start_s": "f",
        "arrival_s": "f",
        "leave_s": "f",
        "rank_t0_ns": "i",
    },
    # every column of the profile converter's tables (docs/profile.md), so readers after
    # open_run never index one they were not promised; "n": a number that may be NaN
    ("profile", "ranks"): {
        "rank": "i",
        "node": "O",
        "host": "O",
        "pid": "i",
        "state": "O",
        "threads": "i",
        "lost_threads": "i",
        "lost_blocks": "i",
        "snapshots": "i",
        "thread_level": "i",
        "tick_s": "n",
        "wall_s": "n",
        # how the rank ended (profile/endings.py; LATER_COLUMNS)
        "ending": "O",
        "ending_value": "n",
        "ended_s": "n",
    },
    ("profile", "counters"): {
        "rank": "i",
        "thread": "i",
        "counter": "O",
        "kind": "O",
        "unit": "O",
        "value": "f",
    },
    # time_s is NaN without the timers
    ("profile", "functions"): {
        "rank": "i",
        "thread": "i",
        "function": "O",
        "calls": "i",
        "bytes": "f",
        "time_s": "n",
    },
    ("profile", "peers"): {
        "rank": "i",
        "peer": "i",
        "messages_sent": "i",
        "bytes_sent": "i",
        "messages_received": "i",
        "bytes_received": "i",
        "rma_bytes_put": "i",
        "rma_bytes_got": "i",
        "rma_bytes_accumulated": "i",
    },
    ("profile", "files"): {
        "rank": "i",
        "file_id": "i",
        "path": "O",
        "reads": "i",
        "bytes_read": "i",
        "writes": "i",
        "bytes_written": "i",
    },
    # time_s (LATER_COLUMNS): the time of the function's own calls per bin, NaN without timers
    ("profile", "size_bins"): {
        "rank": "i",
        "function": "O",
        "bin": "i",
        "min_bytes": "i",
        "max_bytes": "f",
        "count": "i",
        "time_s": "n",
    },
    ("profile", "collective_bins"): {
        "rank": "i",
        "function": "O",
        "message_size": "O",
        "communicator_size": "O",
        "count": "i",
    },
    # and a column per counter of the node files; these four every profile has
    ("profile", "snapshots"): {
        "rank": "i",
        "seq": "i",
        "time_s": "f",
        "calls": "i",
        "mpi_time_s": "n",
        "messages_sent": "i",
        "bytes_sent": "i",
        "messages_received": "i",
        "bytes_received": "i",
    },
    ("profile", "pvars"): {
        "rank": "i",
        "seq": "i",
        "time_s": "f",
        "pvar": "O",
        "index": "i",
        "value": "n",
    },
    # --callsites (collect/callsites.py): file/line/caller missing with the reason when
    # an address cannot be resolved; bytes and time_s NaN without their sets
    ("profile", "callsites"): {
        "rank": "i",
        "function": "O",
        "file": "O",
        "line": "n",
        "caller": "O",
        "object": "O",
        "offset": "i",
        "depth": "i",
        "stack": "O",
        "calls": "i",
        "bytes": "n",
        "time_s": "n",
        "reason": "O",
    },
    ("profile", "communicators"): {
        "rank": "i",
        "comm_id": "i",
        "members": "i",
        "created_by": "O",
        "parent_id": "i",
        "inter": "i",
        "world_ranks": "O",
    },
}

#: Columns whose values are names from a fixed list: any other value is damage (a
#: reader groups and labels by them).
TABLE_VALUES = {
    # how a counter adds up (regular: summed, watermark: the largest, sentinel: a code)
    ("profile", "counters"): {"kind": ("regular", "watermark", "sentinel")},
}

#: Columns that identify a row, for every table: a table with two rows of one key is
#: damaged (a reader that sums, pivots or aligns on the key would count a row twice).
#: tests/test_failures_read.py checks that every table of TABLE_COLUMNS has one.
_OMPT_THREADS_KEY = ("trial", "rank", "iteration", "region", "instance", "thread", "segment")
TABLE_KEYS = {
    ("threads", "threads"): _OMPT_THREADS_KEY,  # bench threads --ompt
    ("profile", "threads"): _OMPT_THREADS_KEY,
    ("profile", "ranks"): ("rank",),
    ("profile", "counters"): ("rank", "thread", "counter"),
    ("profile", "functions"): ("rank", "thread", "function"),
    ("profile", "peers"): ("rank", "peer"),
    ("profile", "files"): ("rank", "file_id"),
    ("profile", "size_bins"): ("rank", "function", "bin"),
    ("profile", "collective_bins"): ("rank", "function", "message_size", "communicator_size"),
    ("profile", "snapshots"): ("rank", "seq"),
    ("profile", "pvars"): ("rank", "seq", "pvar", "index"),
    ("profile", "callsites"): ("rank", "function", "object", "offset", "depth", "stack"),
    ("profile", "communicators"): ("rank", "comm_id"),
}


#: Checks between columns, per table (runs.Run.table applies them after the types).
TABLE_CHECKS = {
    ("profile", "ranks"): (Check("lost_threads", "not negative", lambda d: d["lost_threads"] < 0),),
    ("profile", "functions"): (
        Check("calls", "not negative", lambda d: d["calls"] < 0),
        Check("bytes", "not negative", lambda d: d["bytes"] < 0),
        Check("time_s", "not negative", lambda d: d["time_s"] < 0),
    ),
    ("profile", "callsites"): (
        Check("calls", "not negative", lambda d: d["calls"] < 0),
        Check("bytes", "not negative", lambda d: d["bytes"] < 0),
        Check("time_s", "not negative", lambda d: d["time_s"] < 0),
    ),
    ("profile", "size_bins"): (
        Check("count", "not negative", lambda d: d["count"] < 0),
        Check("max_bytes", "at least min_bytes", lambda d: d["max_bytes"] < d["min_bytes"]),
        Check("time_s", "not negative", lambda d: d["time_s"] < 0),
    ),
    # a counter is a 64-bit count: a value past 2^64 is damage, not a measurement
    ("profile", "counters"): (
        Check(
            "value",
            "a 64-bit counter's value (0 to 2^64)",
            lambda d: (d["value"] < 0) | (d["value"] > 2.0**64),
        ),
    ),
    ("profile", "peers"): tuple(
        Check(c, "not negative", lambda d, c=c: d[c] < 0)
        for c in ("messages_sent", "bytes_sent", "messages_received", "bytes_received")
    ),
}

#: Columns a benchmark derives once its job has ended (its descriptor's Table.derived):
#: required of a complete run (a stopped one has not derived them yet); the step that
#: adds them reads the table without them.
DERIVED_COLUMNS = {}


#: Columns typed when present, absent from runs of an earlier commscope (whose reader
#: says so where it needs them; a descriptor's Table.optional).
OPTIONAL_COLUMNS = {}


#: Columns a later commscope added to a table, with the value they read as in a run
#: written before (NaN: "not measured"), so that it stays readable.
LATER_COLUMNS = {
    ("profile", "size_bins"): {"time_s": float("nan")},  # time per size bin, 2026-11-27
    # how each rank ended (profile/endings.py), 2026-11-28: not recorded before
    ("profile", "ranks"): {
        "ending": "unknown",
        "ending_value": float("nan"),
        "ended_s": float("nan"),
    },
}


#: Planned points of the native benchmarks, from their descriptors (below).
POINTS = {}


# The native benchmarks declare their tables and points in their descriptors
# (commscope.benchspec); they are merged here so that readers look in one place.
for _b in BENCHMARKS.values():
    for _table, _t in _b.tables.items():
        TABLE_COLUMNS[(_b.name, _table)] = _t.columns
        TABLE_KEYS[(_b.name, _table)] = _t.key
        if _t.checks:
            TABLE_CHECKS[(_b.name, _table)] = _t.checks
        if _t.values:
            TABLE_VALUES[(_b.name, _table)] = _t.values
        if _t.derived:
            DERIVED_COLUMNS[(_b.name, _table)] = _t.derived
        if _t.optional:
            OPTIONAL_COLUMNS[(_b.name, _table)] = _t.optional
    if _b.points is not None:
        POINTS[_b.name] = _b.points


#: Tables a profile run whose ranks left counters always has (written before commscope
#: listed them in meta.json's ``profile.tables``).
PROFILE_CORE_TABLES = ("ranks", "counters", "functions")


def profile_tables_expected(run, have):
    """``(tables, problem)``: the tables profile run ``run`` should have (those its
    conversion listed in meta.json, else the core ones when it counted ranks), and a
    problem (InputError arguments) when none was ever converted."""
    from pathlib import Path

    prof = run.meta.get("profile") if isinstance(run.meta.get("profile"), dict) else {}
    listed = prof.get("tables")
    ranks = prof.get("ranks") if isinstance(prof.get("ranks"), dict) else {}
    if isinstance(listed, list) and all(isinstance(t, str) for t in listed):
        want = set(listed)
    elif ranks.get("count"):
        want = set(PROFILE_CORE_TABLES)
    else:
        want = set()
    path = Path(run.path)
    converted = set(have) & {t for k, t in TABLE_COLUMNS if k == "profile"}
    if not converted and list((path / "raw").glob("node.*.json")) and run.status == "running":
        return want, (
            path / "ranks.parquet",
            None,
            "not written yet: the profile is still running (its tables are written "
            f"when it ends; `commscope top {path}` shows it live)",
        )
    if not converted and list((path / "raw").glob("node.*.json")):
        return want, (
            path / "ranks.parquet",
            None,
            "missing: the run's raw counters (raw/node.*) were never converted to "
            "tables (was its commscope stopped before the end?); convert them with "
            f"`commscope profile --convert {path}`",
        )
    return want, None


def profile_table_gone(run, table):
    """InputError arguments for table ``table`` of a profile run, which its conversion
    wrote and which is gone."""
    from pathlib import Path

    path = Path(run.path)
    again = (
        f"; convert again with `commscope profile --convert {path}`"
        if list((path / "raw").glob("node.*.json"))
        else ""
    )
    return (
        path / f"{table}.parquet",
        None,
        "missing, though the run's conversion wrote it (deleted or renamed?)" + again,
    )
