#!/usr/bin/env python
"""Overhead of the counter library, measured as Eberius (2020, Sec. 3.7) does.

commscope's OSU-style ping-pong (2 ranks, intra-node, 1 B to 4 MiB) runs without the
library ("none"), with the default counters ("default": every set, the per-call timers
included), with the default counters before the timers joined them ("no_timers":
--counters bytes,peers,bins,requests,pvars), with the default counters plus the event
trace (`--trace`), and with the default counters plus call sites (`--callsites`, the
return address of every call), alternating A B C A B C ... in this one invocation so
that drifts of a shared machine hit every configuration alike.  Per size and run: the
mean one-way latency of the repetitions below the 95th percentile; then per
configuration the median over rounds, and the median over rounds of the per-round
ratio to the run without the library, and the median over rounds of the per-round
difference to it (`<config>_added_s`: the time the library adds per one-way trip, a
send on one rank and a receive on the other; stable across hosts where ratios move
with the baseline).  timers_over_no_timers is the median of the per-round ratio
default / no_timers: what the timers (and the time per size bin) add.
Targets (issue 37; the default counters include the timers): at most 10 ns added at
8 B, and no size from 8 B to 64 KiB more than the 8 B figure + 5 ns; ratios at most
1.07 at 8 B (Open MPI; 1.02 MPICH), at most 1.01 from 64 KiB; with call sites as well
at most 15 ns added at 8 B; the trace below 100 ns per traced event.

    .venv/bin/python scripts/profile_overhead.py [--mpi openmpi,mpich] [--rounds 7] [--json FILE]
        [--quick] [--callsites | --trace] [--mpip PATH/libmpiP.so]

One table per MPI of --mpi (default both wheels, as docs/profile.md shows them).  --quick
(what `make bench QUICK=1` runs): Open MPI, 1 round, 1 B .. 64 KiB, 100 iterations (10
large); its ratios are noise, the point is that every configuration runs.  --callsites
runs only none, default and callsites (the call-site figures of docs/profile.md).
--trace runs only default and trace (the default counters with and without the event
trace) and gives the cost of the trace per traced event: per round the one-way latency
with the trace minus the one without, divided by the trace records per one-way trip
(the trace_records counter of the run over its one-way trips, warm-up included: a send
and a receive record, 2, plus the few records of the barriers between sizes), the
median over rounds (added_s_per_event).
The load average (/proc/loadavg) is printed before and after: a loaded machine moves the
absolute times, the ratios of neighbouring runs much less.

--baseline-lib PATH adds a configuration "baseline": the same counter sets as the
default (timers included) with another build of the library, e.g. one built from an
earlier commit (PATH may hold {mpi}, replaced by the MPI's name: openmpi, mpich);
default_over_baseline is the median of the per-round ratio of the two, what the
changes between the two builds cost (for the time per size bin: docs/profile.md).
With --callsites it also adds "baseline_callsites", with --trace "baseline_trace"
(and the other build's cost per traced event), so before and after are one run.

--mpip PATH (PATH may hold {mpi}) adds mpiP (LLNL/mpiP, libmpiP.so built against the
same MPI) preloaded instead of commscope, alternating with the others in each round:
"mpip" with its default options (a call site one frame up per call, through glibc's
backtrace() when built without libunwind) and "mpip_k0" with `MPIP="-k 0"` (no stack
walk), its report written into the run's own directory.  With --callsites they run
beside that mode's configurations; --trace (a comparison of two commscope runs) runs
without them.
"""

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from commscope import launch, mpi as mpimod
from commscope.output import format_table
from commscope.runs import read_csv_table
from commscope.units import format_seconds

CONFIGS = {
    "none": None,
    "default": "default",
    "no_timers": "bytes,peers,bins,requests,pvars",
    "trace": "default,trace",
    "callsites": "default+sites",  # +sites: COMMSCOPE_CALLSITES=1
    # --baseline-lib: the default's sets, named (an older library's default differs)
    "baseline": "bytes,peers,bins,requests,timers,pvars",
    "baseline_callsites": "bytes,peers,bins,requests,timers,pvars+sites",
    "baseline_trace": "bytes,peers,bins,requests,timers,pvars,trace",
    # --mpip: mpiP preloaded instead, with its default options and with -k 0
    "mpip": "mpip:",
    "mpip_k0": "mpip:-k 0",
    # only by --configs: calls counted and nothing else (the cost of the wrapper)
    "calls": "calls",
}
#: Ratio targets at 8 B by MPI (issue 37), and from 64 KiB on; added nanoseconds.
RATIO_TARGET_8B = {"openmpi": 1.07, "mpich": 1.02}
RATIO_TARGET_LARGE = 1.01
ADDED_TARGET_S = {"default": 10e-9, "callsites": 15e-9}
FLAT_TARGET_S = 5e-9  # no size from 8 B to 64 KiB above the 8 B figure by more than this
TRACE_CONFIGS = ("default", "trace")
TRACE_TARGET_S = 100e-9  # the trace's cost per traced event at 8 B (issue)


def trace_records(profile_dir):
    """The trace_records counter summed over every rank and thread of a run's node files."""
    from commscope.collect.node_files import NodeFile, node_keys

    total = 0
    for key in node_keys(profile_dir):
        nf = NodeFile(profile_dir, key)
        try:
            nc = nf.read()
        finally:
            nf.close()
        at = next(c["offset"] for c in nc.meta["counters"] if c["name"] == "trace_records")
        total += int(nc.slabs[:, at].astype("int64").sum())
    return total


def one_way_trips(df, iters, large_iters):
    """One-way trips of a ping-pong run, warm-up included, from its samples (a size has
    n timed repetitions of 2 trips, after n // 10 untimed ones, as one_run asks)."""
    trips = 0
    for _, n in df.groupby("size_bytes").size().items():
        warm = iters // 10 if n == iters else max(1, large_iters // 10)
        trips += 2 * (n + warm)
    return trips


def one_run(m, program, lib, counters, out, iters, large_iters, max_size="4M", records=None):
    sites = counters is not None and counters.endswith("+sites")
    counters = counters[: -len("+sites")] if sites else counters
    if counters is not None and counters.startswith("mpip:"):  # lib is libmpiP.so
        opts = counters[len("mpip:") :]
        env = [f"LD_PRELOAD={lib}", f"MPIP=-f {out} {opts}".strip()]
        counters = None
    else:
        env = (
            []
            if counters is None
            else [
                f"LD_PRELOAD={lib}",
                f"COMMSCOPE_COUNTERS={counters}",
                f"COMMSCOPE_PROFILE_DIR={out}/profile",
                *(["COMMSCOPE_CALLSITES=1"] if sites else []),
            ]
        )
    args = [
        *env,
        str(program),
        "-m",
        f"1:{max_size}",
        "-i",
        str(iters),
        "-x",
        str(iters // 10),
        "-I",
        str(large_iters),
        "-X",
        str(max(1, large_iters // 10)),
        "--out",
        str(out),
    ]
    plan = launch.plan_launch(m, 2, shutil.which("env"), args)
    res = launch.run_job(plan, echo=False, progress=False, timeout=900)
    if res.returncode != 0:
        sys.exit(f"ping-pong failed ({counters}):\n{res.stderr}")
    df = read_csv_table(Path(out) / "samples.csv")
    if records is not None and counters and "trace" in counters.split(","):
        records.append(trace_records(Path(out) / "profile") / one_way_trips(df, iters, large_iters))
    # mean of the repetitions below each size's 95th percentile: single repetitions of a
    # 0.2 us one-way time are quantised by the timer, and a few are hit by preemption
    return df.groupby("size_bytes")["time_s"].apply(lambda t: t[t <= t.quantile(0.95)].mean())


def overhead(
    mpi_spec,
    rounds,
    iters,
    large_iters,
    max_size,
    configs=tuple(CONFIGS),
    baseline_lib=None,
    mpip=None,
):
    """Rows of the overhead table of one MPI: per size, each configuration's median, its
    median ratio to the run without the library and the median time it adds; prints
    the table and the targets."""
    m = mpimod.select_mpi(mpi_spec)
    program = mpimod.binary(m, "pingpong")
    lib = mpimod.build(m, target="commscope") / "libcommscope.so"
    base = Path(baseline_lib.replace("{mpi}", m.name)) if baseline_lib else None
    if base is not None and not base.is_file():
        sys.exit(f"--baseline-lib: {base}: no such library")
    mpip_lib = Path(mpip.replace("{mpi}", m.name)) if mpip else None
    if mpip_lib is not None and not mpip_lib.is_file():
        sys.exit(f"--mpip: {mpip_lib}: no such library")
    libs = {
        "baseline": base,
        "baseline_callsites": base,
        "baseline_trace": base,
        "mpip": mpip_lib,
        "mpip_k0": mpip_lib,
    }
    trace_mode = configs[:2] == TRACE_CONFIGS
    medians = {c: [] for c in configs}
    records = {c: [] for c in configs}  # trace records per one-way trip, per trace run
    ref = configs[0]  # the ratios' denominator: none, or default with --trace
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for c in configs:
                counters = CONFIGS[c]
                out = Path(tmp) / f"{c}-{r}"
                out.mkdir()
                medians[c].append(
                    one_run(
                        m,
                        program,
                        libs.get(c) or lib,
                        counters,
                        out,
                        iters,
                        large_iters,
                        max_size,
                        records[c],
                    )
                )
            print(f"{m.name}: round {r + 1}/{rounds} done", file=sys.stderr)
    rows = []
    for size in medians[ref][0].index:
        row = {
            "size_bytes": int(size),
            f"{ref}_s": statistics.median(s[size] for s in medians[ref]),
        }
        for c in configs[1:]:
            row[f"{c}_s"] = statistics.median(s[size] for s in medians[c])
            row[f"{c}_ratio" if ref == "none" else f"{c}_over_{ref}_ratio"] = statistics.median(
                x[size] / n[size] for x, n in zip(medians[c], medians[ref])
            )
            row[f"{c}_added_s" if ref == "none" else f"{c}_over_{ref}_added_s"] = statistics.median(
                x[size] - n[size] for x, n in zip(medians[c], medians[ref])
            )
        if {"no_timers", "default"} <= set(configs):  # the timers on top of the other counters
            row["timers_over_no_timers_ratio"] = statistics.median(
                x[size] / d[size] for x, d in zip(medians["default"], medians["no_timers"])
            )
        if {"baseline", "default"} <= set(configs):  # this build over the baseline build
            row["default_over_baseline_ratio"] = statistics.median(
                x[size] / d[size] for x, d in zip(medians["default"], medians["baseline"])
            )
        if trace_mode:  # per traced event, the round's own records per trip
            row["added_s_per_event"] = statistics.median(
                (x[size] - d[size]) / k
                for x, d, k in zip(medians["trace"], medians["default"], records["trace"])
            )
            if "baseline_trace" in configs:
                row["baseline_added_s_per_event"] = statistics.median(
                    (x[size] - d[size]) / k
                    for x, d, k in zip(
                        medians["baseline_trace"], medians["baseline"], records["baseline_trace"]
                    )
                )
        if "baseline_callsites" in configs:
            row["baseline_callsites_over_baseline_ratio"] = statistics.median(
                x[size] / d[size]
                for x, d in zip(medians["baseline_callsites"], medians["baseline"])
            )
        if {"callsites", "default"} <= set(configs):  # call sites on top of the default counters
            row["callsites_over_default_ratio"] = statistics.median(
                x[size] / d[size] for x, d in zip(medians["callsites"], medians["default"])
            )
        rows.append(row)
    print(
        format_table(
            rows,
            title=f"commscope profile overhead, {m.name}, one-way latency, "
            f"median of {rounds} alternating rounds",
        )
    )
    if records.get("trace"):
        print(
            f"trace records per one-way trip: {statistics.median(records['trace']):.3f} "
            f"(median of {len(records['trace'])} runs; a send and a receive, and the barriers)"
        )
    for r in rows if trace_mode else ():
        if r["size_bytes"] == 8:
            print(
                f"trace at 8 B: {format_seconds(r['added_s_per_event'])} per traced event "
                f"(target < {format_seconds(TRACE_TARGET_S)})"
                + (
                    f"; baseline build: {format_seconds(r['baseline_added_s_per_event'])}"
                    if "baseline_added_s_per_event" in r
                    else ""
                )
            )
    for line in target_lines(m.name, rows):
        print(line)
    return m.name, rows


def target_lines(mpi_name, rows):
    """The issue's targets, met or not, from one MPI's rows."""
    out = []
    at8 = next((r for r in rows if r["size_bytes"] == 8), None)
    if at8 is None:
        return out
    ns = lambda s: f"{s * 1e9:.1f} ns"  # noqa: E731
    for c, target in ADDED_TARGET_S.items():
        if f"{c}_added_s" in at8:
            got = at8[f"{c}_added_s"]
            out.append(
                f"{c} at 8 B: {ns(got)} added per one-way trip (target <= {ns(target)}): "
                f"{'met' if got <= target else 'NOT met'}"
            )
    if "default_added_s" in at8:
        mid = [r for r in rows if 8 <= r["size_bytes"] <= 65536]
        worst = max(mid, key=lambda r: r["default_added_s"])
        ok = worst["default_added_s"] <= at8["default_added_s"] + FLAT_TARGET_S
        out.append(
            f"default from 8 B to 64 KiB: at most {ns(worst['default_added_s'])} added (at "
            f"{worst['size_bytes']} B; target <= the 8 B figure + {ns(FLAT_TARGET_S)}): "
            f"{'met' if ok else 'NOT met'}"
        )
        target = RATIO_TARGET_8B.get(mpi_name, RATIO_TARGET_8B["openmpi"])
        got = at8["default_ratio"]
        out.append(
            f"default at 8 B: ratio {got:.3f} (target <= {target}): {'met' if got <= target else 'NOT met'}"
        )
        big = [r["default_ratio"] for r in rows if r["size_bytes"] >= 65536]
        if big:
            out.append(
                f"default from 64 KiB: worst ratio {max(big):.3f} (target <= {RATIO_TARGET_LARGE}): "
                f"{'met' if max(big) <= RATIO_TARGET_LARGE else 'NOT met'}"
            )
    for c in ("mpip", "mpip_k0"):
        if f"{c}_added_s" in at8:
            out.append(
                f"{c} at 8 B: ratio {at8[f'{c}_ratio']:.3f}, {ns(at8[f'{c}_added_s'])} added "
                f"(commscope default: {at8.get('default_ratio', float('nan')):.3f}, "
                f"{ns(at8.get('default_added_s', float('nan')))})"
            )
    return out


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg has them ("-" elsewhere)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "-"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--mpi",
        default="openmpi,mpich",
        help="comma list of openmpi, mpich or mpicc paths (default %(default)s)",
    )
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--large-iters", type=int, default=200)
    ap.add_argument("--max", default="4M", help="largest message (default %(default)s)")
    ap.add_argument(
        "--json",
        default=None,
        help="also write the tables as JSON here (a list: mpi and rows per MPI)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="Open MPI, 1 round, up to 64K, 100 iterations, 10 large",
    )
    ap.add_argument(
        "--callsites",
        action="store_true",
        help="only none, default and callsites (default counters + --callsites)",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="only default and trace (default counters + --trace): the trace's "
        "cost per traced event",
    )
    ap.add_argument(
        "--baseline-lib",
        metavar="PATH",
        default=None,
        help="another libcommscope.so ({mpi}: the MPI's name) run with the default "
        "counter sets, alternating with the others: configuration 'baseline'",
    )
    ap.add_argument(
        "--configs",
        default=None,
        help="comma list of configurations to run instead of the mode's (the first is "
        f"the ratios' reference): {', '.join(CONFIGS)}",
    )
    ap.add_argument(
        "--mpip",
        metavar="PATH",
        default=None,
        help="mpiP's libmpiP.so ({mpi}: the MPI's name), preloaded with its default "
        "options and with -k 0, alternating with the others: 'mpip', 'mpip_k0'",
    )
    a = ap.parse_args()
    if a.callsites and a.trace:
        ap.error("--callsites and --trace are separate modes: pass one")
    if a.quick:
        a.mpi, a.rounds, a.max, a.iters, a.large_iters = "openmpi", 1, "64K", 100, 10
    tables = []
    print(f"# load average before: {loadavg()}")
    for i, spec in enumerate(x for x in a.mpi.split(",") if x):
        if i:
            print()
        configs = (
            ("none", "default", "callsites")
            if a.callsites
            else TRACE_CONFIGS
            if a.trace
            else tuple(
                c
                for c in CONFIGS
                if c
                not in (
                    "baseline",
                    "baseline_callsites",
                    "baseline_trace",
                    "mpip",
                    "mpip_k0",
                    "calls",
                )
            )
        )
        if a.configs:
            configs = tuple(c for c in a.configs.split(",") if c)
            bad = [c for c in configs if c not in CONFIGS]
            if bad:
                ap.error(
                    f"--configs: unknown configuration {', '.join(bad)} (known: {', '.join(CONFIGS)})"
                )
        if a.baseline_lib:
            configs += (
                ("baseline", "baseline_callsites")
                if a.callsites
                else ("baseline", "baseline_trace")
                if a.trace
                else ("baseline",)
            )
        if a.mpip and not a.trace:
            configs += ("mpip", "mpip_k0")
        configs = tuple(dict.fromkeys(configs))  # --configs may name them too
        name, rows = overhead(
            spec, a.rounds, a.iters, a.large_iters, a.max, configs, a.baseline_lib, a.mpip
        )
        tables.append({"mpi": name, "rows": rows})
    print(f"# load average after: {loadavg()}")
    if a.json:
        Path(a.json).write_text(json.dumps(tables, indent=1))


if __name__ == "__main__":
    main()
