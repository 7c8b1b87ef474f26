"""The partitioned model's terms measured on this machine (issue 26, part 1).

Algorithm 1 (Dominguez-Trujillo 2021, Ch. 4) fed the ping-pong postal link predicts
transfers that are 2-4x faster than the partitioned benchmark measures here: a
ping-pong repeats one message between hot caches, while the benchmark's transfers
start after the threads computed (slept) for milliseconds, from a buffer the threads
wrote before, to a receiver that was spinning in MPI on an oversubscribed pair of
cores. So the terms Algorithm 1 needs are measured in the benchmark's own conditions
by a *calibration* run (``commscope bench partitioned --calibrate``): the threads
finish at fixed, staggered times (``--dist stagger``: thread t of T at
``compute + sigma (2t/(T-1) - 1)``), far enough apart that each early partition could
arrive before the last thread is ready. From its per-partition timings
(``compute`` table: ``call_s``, ``arrived_s``) and its samples:

``partition_s``
    time from the last thread's ``MPI_Pready`` to that partition's arrival at the
    receiver, by partition size (the early partitions are already there): the
    per-partition cost, ``MPI_Pready`` and the receiver's notice included;
``single_s``
    the single send's elapsed time (join, then one message of the whole buffer), by
    buffer size;
``pready_s``
    median duration of the ``MPI_Pready`` call itself (shown; inside ``partition_s``);
``progress``
    fraction of early partitions that arrived before the last thread was ready, among
    those that had the time to (lead >= 2x their partition time): 1 when the MPI moves
    a ready partition while another thread still computes, 0 when nothing moves until
    the last thread calls MPI.

Per-size terms are medians per size, interpolated log-log between calibrated sizes;
outside the calibrated range they are extrapolated (time proportional to size above,
constant below) and the prediction says so. Every term carries fit-quality ``flags``
(too few sizes or runs, extrapolated) like the ping-pong fit's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from ..lazy import lazy
from ..stats.robust import median_se

np = lazy("numpy")

#: The command line that measures every term here (named by errors about a missing term).
BENCHMARK = "commscope bench partitioned --calibrate"
TERMS = ("partition_s", "single_s", "pready_s", "progress")
#: Fewer calibrated sizes than this and a per-size term is flagged (3 points = 2 segments).
MIN_SIZES = 3
#: Fewer repetitions per size (or eligible early partitions) than this, flagged.
MIN_RUNS = 3
#: An early partition "had the time" when its lead over the last thread is this many
#: times its own transfer time.
LEAD_FACTOR = 2.0


@dataclass
class Term:
    """One measured term: a value, or medians by size; with counts and flags."""

    name: str
    value: float | None = None
    by_size: dict = field(default_factory=dict)  # bytes -> seconds (median)
    n_samples: int = 0
    flags: list = field(default_factory=list)
    # bytes -> standard error of that median / the median (runs to runs of the calibration)
    rel_se_by_size: dict = field(default_factory=dict)

    def at(self, sizes_bytes):
        """Interpolated value(s) at ``sizes_bytes`` (log-log between calibrated sizes)."""
        x = np.asarray(sizes_bytes, dtype=float)
        if not self.by_size:
            return np.full(x.shape, float(self.value))
        ks = np.array(sorted(self.by_size), dtype=float)
        vs = np.array([self.by_size[int(k)] for k in ks], dtype=float)
        if len(ks) == 1:
            return vs[0] * np.maximum(x / ks[0], 1.0)
        out = np.exp(np.interp(np.log(x), np.log(ks), np.log(vs)))
        above = x > ks[-1]  # bandwidth-bound: time grows with the bytes
        out[above] = vs[-1] * x[above] / ks[-1]
        return out  # below the smallest size: np.interp holds the first value

    def rel_se_at(self, sizes_bytes):
        """Relative standard error at ``sizes_bytes``, interpolated in log size (the
        nearest calibrated size's outside the range); NaN without one."""
        x = np.asarray(sizes_bytes, dtype=float)
        if not self.rel_se_by_size:
            return np.full(x.shape, np.nan)
        ks = np.array(sorted(self.rel_se_by_size), dtype=float)
        return np.interp(np.log(x), np.log(ks), [self.rel_se_by_size[int(k)] for k in ks])

    def covers(self, sizes_bytes):
        """Boolean array: inside the calibrated size range (no extrapolation)."""
        x = np.asarray(sizes_bytes, dtype=float)
        if not self.by_size:
            return np.ones(x.shape, bool)
        return (x >= min(self.by_size)) & (x <= max(self.by_size))

    def to_dict(self):
        d = {"n_samples": int(self.n_samples), "flags": list(self.flags)}
        if self.by_size:
            d["by_size"] = {str(int(k)): float(v) for k, v in sorted(self.by_size.items())}
            if self.rel_se_by_size:
                d["rel_se_by_size"] = {
                    str(int(k)): float(v) for k, v in sorted(self.rel_se_by_size.items())
                }
        else:
            d["value"] = None if self.value is None else float(self.value)
        return d


@dataclass
class PartitionedTerms:
    """The terms of :data:`TERMS`, with the calibration's conditions and source runs."""

    terms: dict  # name -> Term
    conditions: dict = field(default_factory=dict)  # threads, compute_s, compute_mode, mpi
    source_runs: list = field(default_factory=list)  # [{"path", "kind", "start_time"}]

    def term(self, name, source="machine model"):
        """The term ``name``; InputError naming it and the benchmark when it is missing."""
        t = self.terms.get(name)
        if t is None:
            raise_missing(source, name)
        return t

    def to_dict(self):
        return {
            "benchmark": BENCHMARK,
            "conditions": dict(self.conditions),
            "source_runs": list(self.source_runs),
            "terms": {k: t.to_dict() for k, t in self.terms.items()},
        }


def raise_missing(source, name):
    raise InputError(
        source,
        f"partitioned.terms.{name}",
        f"missing: the calibrated partitioned model needs the term {name!r}; "
        f"measure it with `{BENCHMARK}` (same --threads and --compute as the run "
        "to predict) and fit it into the machine model with `commscope fit "
        "<ping-pong runs> <calibration run>`; or ask for the thesis's model fed "
        "the ping-pong link with `--model postal`",
    )


def terms_from_dict(data, source="machine model"):
    """Parse the ``partitioned`` field of a machine model (older files have none: None)."""
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("terms"), dict):
        raise InputError(source, "partitioned.terms", "must be an object name -> term")
    terms = {}
    for name, d in data["terms"].items():
        pre = f"partitioned.terms.{name}"
        if not isinstance(d, dict):
            raise InputError(source, pre, "must be an object")
        by = _by_size(d.get("by_size"), source, f"{pre}.by_size", "seconds", positive=True)
        rel_se = _by_size(
            d.get("rel_se_by_size"),
            source,
            f"{pre}.rel_se_by_size",
            "a relative error",
            positive=False,
        )
        value = d.get("value")
        if not by:
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise InputError(source, f"{pre}.value", f"expected a number >= 0, got {value!r}")
        terms[name] = Term(
            name,
            None if by else float(value),
            by,
            int(d.get("n_samples") or 0),
            [str(f) for f in d.get("flags") or []],
            rel_se,
        )
    return PartitionedTerms(
        terms, dict(data.get("conditions") or {}), list(data.get("source_runs") or [])
    )


def _by_size(data, source, where, what, positive):
    """{bytes: value} of a term's per-size field; InputError naming it when malformed."""
    out = {}
    for k, v in (data or {}).items():
        try:
            kk, vv = int(k), float(v)
        except (TypeError, ValueError):
            raise InputError(source, where, f"{k!r}: {v!r} is not bytes: {what}") from None
        if kk <= 0 or not math.isfinite(vv) or vv < 0 or (positive and vv == 0):
            raise InputError(
                source,
                where,
                f"{k!r}: {v!r}: sizes must be > 0 and values " + ("> 0" if positive else ">= 0"),
            )
        out[kk] = vv
    return out


def _size_term(name, df, key, col, what):
    """A per-size term: the median of ``col`` per ``key`` and its relative standard error."""
    g = df.groupby(key)[col]
    med, counts = g.median(), g.count()
    by = {int(k): float(v) for k, v in med.items() if v > 0}
    rel_se = {
        k: se / by[k]
        for k, se in ((int(k), median_se(x)) for k, x in g)
        if k in by and math.isfinite(se)
    }
    flags = []
    if len(by) < MIN_SIZES:
        flags.append(f"fitted on {len(by)} size(s) < {MIN_SIZES}: too few points")
    few = [int(k) for k, c in counts.items() if c < MIN_RUNS]
    if few:
        flags.append(f"fewer than {MIN_RUNS} {what} at {len(few)} size(s)")
    return Term(name, None, by, int(counts.sum()), flags, rel_se)


def _shortest_clear_lead(last):
    """Per partition size, the last partitions of the calibration with the shortest lead
    that left the partition before them out of the way (median lead >= LEAD_FACTOR x
    median flight); of the one with the longest lead where none did.

    The lead matters twice on this machine: too short, and the last partition waits
    behind the one before (its time is no longer one partition's); long (10-20 ms of an
    idle core), and the last ``MPI_Pready`` and its partition run 2-3x slower than after
    1 ms (docs/machine-model.md). Calibration runs at several ``--sigma`` let each size
    take the shortest lead clear of the first effect. A whole calibration is kept or
    dropped, never single runs: choosing runs by their own times would bias the median.
    """
    import pandas as pd

    picked = []
    for _, g in last.groupby("partition_bytes"):
        by_cal = g.groupby("calibration")[["lead", "flight"]].median()
        clear = by_cal[by_cal["lead"] >= LEAD_FACTOR * by_cal["flight"]]
        pick = clear["lead"].idxmin() if len(clear) else by_cal["lead"].idxmax()
        picked.append(g[g["calibration"] == pick])
    return pd.concat(picked)


def median_lead_s(samples):
    """Median time by which the first thread of a partitioned send was ready before the
    last (``last_ready_s - first_ready_s``), or None without partitioned rows (or times)."""
    part = samples[samples["method"] == "partitioned"]
    lead = float((part["last_ready_s"] - part["first_ready_s"]).median()) if len(part) else None
    return lead if lead is not None and math.isfinite(lead) and lead >= 0 else None


def fit_terms(samples, compute, conditions, source_runs, source="calibration"):
    """:class:`PartitionedTerms` from calibration runs' ``samples`` and ``compute`` tables.

    ``compute`` needs the per-partition columns ``call_s`` and ``arrived_s`` (written by
    the benchmark since issue 26; an older run lacks them: InputError); the tables of
    several calibration runs are told apart by a ``calibration`` column.
    """
    for col in ("call_s", "arrived_s"):
        if col not in compute:
            raise InputError(
                source,
                f"compute.{col}",
                f"missing: a calibration run of an earlier commscope; run `{BENCHMARK}` again",
            )
    if (samples["mismatches"] > 0).any():
        raise InputError(source, "samples.mismatches", "the receiver found wrong bytes")
    part = compute[compute["method"] == "partitioned"].copy()
    if part.empty or part["arrived_s"].isna().all():
        raise InputError(
            source,
            "methods",
            "the calibration measured no MPI-4 partitioned "
            "send (see its methods table): no partitioned terms",
        )
    rows = []
    # one send: a run of one calibration (``calibration`` numbers the runs fitted together)
    keys = ["size_bytes", "run"] + (["calibration"] if "calibration" in part else [])
    for _, g in part.groupby(keys):
        g = g.sort_values("actual_s")
        last = g.iloc[-1]
        nparts = len(g)
        p_bytes = int(last["size_bytes"]) // nparts
        flight = float(last["arrived_s"] - last["actual_s"])
        for _, e in g.iloc[:-1].iterrows():
            rows.append(
                dict(
                    kind="early",
                    partition_bytes=p_bytes,
                    lead=float(last["actual_s"] - e["actual_s"]),
                    before=bool(e["arrived_s"] <= last["actual_s"]),
                )
            )
        rows.append(
            dict(
                kind="last",
                partition_bytes=p_bytes,
                flight=flight,
                lead=float(last["actual_s"] - g.iloc[-2]["actual_s"]) if nparts > 1 else math.inf,
                calibration=last.get("calibration", 0),
            )
        )
    import pandas as pd

    r = pd.DataFrame(rows)
    last = _shortest_clear_lead(r[r["kind"] == "last"])
    terms = {"partition_s": _size_term("partition_s", last, "partition_bytes", "flight", "runs")}
    single = samples[samples["method"] == "single"]
    if single.empty:
        raise InputError(
            source, "methods", "the calibration measured no single send: no single_s term"
        )
    terms["single_s"] = _size_term("single_s", single, "size_bytes", "elapsed_s", "runs")
    calls = part["call_s"].dropna()
    terms["pready_s"] = Term(
        "pready_s",
        float(calls.median()) if len(calls) else 0.0,
        n_samples=len(calls),
        flags=[]
        if len(calls) >= MIN_RUNS
        else [f"{len(calls)} MPI_Pready calls < {MIN_RUNS}: too few points"],
    )
    early = r[r["kind"] == "early"].copy()
    early["could"] = early["lead"] >= LEAD_FACTOR * terms["partition_s"].at(
        early["partition_bytes"].to_numpy(float)
    )
    eligible = early[early["could"]]
    flags = []
    if len(eligible) < MIN_RUNS:
        flags.append(
            f"{len(eligible)} early partitions had the time to arrive before the "
            f"last thread (< {MIN_RUNS}): too few points; widen --sigma"
        )
    phi = float(eligible["before"].mean()) if len(eligible) else 0.0
    terms["progress"] = Term("progress", phi, n_samples=len(eligible), flags=flags)
    return PartitionedTerms(terms, conditions, source_runs)
