"""Clock offsets of a traced profile run (``commscope profile --trace``): how far each
rank's CLOCK_MONOTONIC was from rank 0's, measured in the job at the end of
``MPI_Init`` and at the start of ``MPI_Finalize`` (native/profiler/cs_prof_clocks.c).

Raw input: ``raw/clocks.<node>.jsonl``, one line per rank and measurement::

    {"rank": 1, "pid": 4242, "node": "n1", "when": "init", "local_ns": 605639552992,
     "offset_ns": -49999528, "rtt_ns": 3869, "rounds": 10}

``local_ns``: when it was measured, on the rank's own clock (the middle of the round
trip kept); ``offset_ns``: rank 0's clock minus the rank's then, to within half of
``rtt_ns``, the shortest of ``rounds`` round trips to rank 0 (rank 0: offset and
round trip 0); ``skew_ns`` (tests only): the shift COMMSCOPE_TEST_CLOCK_SKEW_NS gave
the rank's clock.

:func:`alignment` turns the measurements into an offset per rank over time.  The ranks
of one node read one clock (CLOCK_MONOTONIC is the kernel's), so they share one
offset: rank 0's node none at all, another node the measurement of its rank with the
shortest round trip.  Between the two measurements the offset is interpolated
linearly (the clocks drift apart), outside them it is held; with one measurement it is
constant.  Ranks without a measurement (a run before clock alignment, a single rank)
keep offset 0.
"""

import json
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

WHEN = ("init", "finalize")
COLUMNS = ["rank", "node", "when", "local_ns", "offset_ns", "rtt_ns", "rounds", "skew_ns", "file"]
#: Offsets beyond this are not a clock's (CLOCK_MONOTONIC counts from boot: a day of
#: difference between two nodes' boots is 8.64e13 ns; a year is far beyond any).
MAX_NS = 2**62


def clock_files(raw_dir):
    return sorted(Path(raw_dir).glob("clocks.*.jsonl"))


def _whole(value, low=-MAX_NS, high=MAX_NS):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def read_clock_file(path):
    """The measurements of one node's file as dicts; a half-written last line (a rank
    killed while writing) is dropped; anything else malformed is one InputError
    naming the file, the line and the field."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        lines.pop()  # no newline: cut short
    out = []
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InputError(path, f"line {i}", f"not a JSON record ({exc})") from None
        if not isinstance(rec, dict):
            raise InputError(path, f"line {i}", "not a JSON object")
        checks = (
            ("rank", lambda v: _whole(v, 0, 2**31 - 1), "a rank (a whole number >= 0)"),
            ("when", lambda v: v in WHEN, "init or finalize"),
            ("local_ns", lambda v: _whole(v, 0), "nanoseconds (a whole number >= 0)"),
            ("offset_ns", _whole, "nanoseconds (a whole number)"),
            ("rtt_ns", lambda v: _whole(v, 0), "nanoseconds (a whole number >= 0)"),
        )
        for key, ok, what in checks:
            if key not in rec:
                raise InputError(path, f"line {i}: {key}", "required field is missing")
            if not ok(rec[key]):
                raise InputError(path, f"line {i}: {key}", f"expected {what}, got {rec[key]!r}")
        for key, ok, what in (
            ("node", lambda v: isinstance(v, str), "a node name"),
            ("rounds", lambda v: _whole(v, 0, 2**31 - 1), "a whole number >= 0"),
            ("skew_ns", _whole, "nanoseconds (a whole number)"),
        ):
            if key in rec and not ok(rec[key]):
                raise InputError(path, f"line {i}: {key}", f"expected {what}, got {rec[key]!r}")
        out.append(
            {
                "rank": rec["rank"],
                "node": rec.get("node", ""),
                "when": rec["when"],
                "local_ns": rec["local_ns"],
                "offset_ns": rec["offset_ns"],
                "rtt_ns": rec["rtt_ns"],
                "rounds": rec.get("rounds", 0),
                "skew_ns": rec.get("skew_ns", 0),
                "file": Path(path).name,
                "line": i,
            }
        )
    return out


def read_clocks(raw_dir):
    """Every measurement of a run (COLUMNS), or None when the run has none.  A rank
    measured twice at one point is an InputError (two files claim the rank)."""
    rows, seen = [], {}
    for path in clock_files(raw_dir):
        for rec in read_clock_file(path):
            key = (rec["rank"], rec["when"])
            if key in seen:
                raise InputError(
                    path,
                    f"line {rec['line']}: rank",
                    f"rank {rec['rank']} measured its {rec['when']} offset twice "
                    f"(also {seen[key]})",
                )
            seen[key] = f"{rec['file']} line {rec['line']}"
            rows.append(rec)
    if not rows:
        return None
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["rank", "when"]).reset_index(drop=True)


def alignment(measures):
    """(points, offsets) from :func:`read_clocks`' table.

    ``points``: {rank: (x, y)}, arrays of the rank's node clock (ns) and the offset (ns)
    to add there, for ``numpy.interp``.  ``offsets``: a DataFrame, a row per measured
    rank: rank, node, init_local_ns, init_offset_s, init_rtt_s, finalize_local_ns,
    finalize_offset_s, finalize_rtt_s (the rank's own measurements; NaN when missing),
    init_applied_offset_s, finalize_applied_offset_s (what its clock is corrected by
    there: its node's, see the module docstring)."""
    m = measures.copy()
    # one clock: ranks of one node (with one test skew, the skew being part of the clock)
    m["clock"] = list(zip(m["node"], m["skew_ns"]))
    reference = set(m.loc[m["rank"] == 0, "clock"])
    chosen = {}
    for (clock, when), g in m.groupby(["clock", "when"], sort=False):
        if clock in reference:  # rank 0's own clock: no offset, exactly
            row = g[g["rank"] == 0]
            row = row if len(row) else g.sort_values(["rtt_ns", "rank"]).head(1)
            chosen[(clock, when)] = (int(row["local_ns"].iloc[0]), 0)
        else:
            best = g.sort_values(["rtt_ns", "rank"], kind="stable").iloc[0]
            chosen[(clock, when)] = (int(best["local_ns"]), int(best["offset_ns"]))
    points, rows = {}, []
    for rank, g in m.groupby("rank", sort=True):
        clock = g["clock"].iloc[0]
        pts = [chosen[(clock, w)] for w in WHEN if (clock, w) in chosen]
        if len(pts) == 2 and pts[1][0] <= pts[0][0]:
            pts = pts[:1]  # no time between them: hold the first
        points[int(rank)] = (
            np.array([p[0] for p in pts], np.float64),
            np.array([p[1] for p in pts], np.float64),
        )
        own = {w: g[g["when"] == w] for w in WHEN}
        row = {"rank": int(rank), "node": str(g["node"].iloc[0])}
        for w in WHEN:
            o = own[w]
            row[f"{w}_local_ns"] = int(o["local_ns"].iloc[0]) if len(o) else pd.NA
            row[f"{w}_offset_s"] = o["offset_ns"].iloc[0] / 1e9 if len(o) else np.nan
            row[f"{w}_rtt_s"] = o["rtt_ns"].iloc[0] / 1e9 if len(o) else np.nan
        for w in WHEN:
            c = chosen.get((clock, w))
            row[f"{w}_applied_offset_s"] = c[1] / 1e9 if c else np.nan
        rows.append(row)
    offsets = pd.DataFrame(rows)
    for w in WHEN:
        offsets[f"{w}_local_ns"] = offsets[f"{w}_local_ns"].astype("Int64")
    return points, offsets


def offset_at(points, ns):
    """The offset (ns) to add to readings ``ns`` of a clock with ``points``
    (:func:`alignment`)."""
    x, y = points
    ns = np.asarray(ns, dtype=np.float64)
    if len(x) == 1:
        return np.full(ns.shape, y[0])
    return np.interp(ns, x, y)


__all__ = ["read_clocks", "read_clock_file", "clock_files", "alignment", "offset_at"]
