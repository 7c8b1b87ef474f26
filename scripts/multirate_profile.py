#!/usr/bin/env python3
"""Multirate under `commscope profile --counters all`: where the time of each mode goes.

001 Sec. 3.9.1 explains the lower rate of threads sharing a communicator with SPC
counters: out-of-sequence messages and the time spent matching them.  This script
runs cs_multirate once per mode under the counter library with per-function timers
and prints, next to the benchmark's own rate and the ob1 queue lengths it samples:
calls per function (the same work in both modes), time per call of MPI_Isend,
MPI_Irecv and the ack, and time in MPI_Waitall per window, where Open MPI progresses
and matches.

    scripts/multirate_profile.py [--threads 4] [--reps 5] [--mpi openmpi] [--runs DIR] [--quick]

--quick (what `make bench QUICK=1` runs): 2 threads per rank, 1 repetition, the runs in
a temporary directory unless --runs is given.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd


def profile_mode(mode, threads, reps, mpi_spec, runs_root):
    """One profiled run of cs_multirate in ``mode``; returns (profile run, reps table)."""
    from commscope import mpi as mpimod
    from commscope.profile.run import run_profile

    binary = mpimod.binary(mpimod.select_mpi(mpi_spec), "multirate")
    bench_out = Path(runs_root) / f"multirate-{mode}-tables"
    run, status = run_profile(
        binary,
        ["--threads", threads, "--modes", mode, "--reps", reps, "--out", bench_out],
        nranks=2,
        threads=threads,
        counters="all",
        mpi_spec=mpi_spec,
        runs_root=runs_root,
        run_name=f"profile-multirate-{mode}",
        echo=False,
    )
    if status:
        raise SystemExit(f"cs_multirate exited with status {status} ({run.path})")
    return run, pd.read_csv(bench_out / "reps.csv")


def mode_row(mode, run, reps):
    f = run.table("functions").groupby(["rank", "function"])[["calls", "time_s"]].sum()
    per_call = lambda rank, fn: f.loc[(rank, fn), "time_s"] / f.loc[(rank, fn), "calls"]
    mpi_time = f["time_s"].groupby(level="rank").sum()
    rate = reps["messages"] / reps["time_s"]
    return {
        "mode": mode,
        "rate_msgs_per_s": rate.median(),
        "isend_calls": int(f.loc[(0, "MPI_Isend"), "calls"]),
        "irecv_calls": int(f.loc[(1, "MPI_Irecv"), "calls"]),
        "isend_s": per_call(0, "MPI_Isend"),
        "irecv_s": per_call(1, "MPI_Irecv"),
        "ack_recv_s": per_call(0, "MPI_Recv"),
        "waitall_s_per_window": per_call(1, "MPI_Waitall"),
        "waitall_share_of_mpi_time": f.loc[(1, "MPI_Waitall"), "time_s"] / mpi_time[1],
        "posted_recvq_mean": reps["posted_recvq_mean"].mean(),
        "unexpected_msgq_max": reps["unexpected_msgq_max"].max(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--runs", default=None, help="where the runs go (default: runs/)")
    ap.add_argument("--quick", action="store_true", help="2 threads, 1 repetition")
    args = ap.parse_args(argv)
    if args.quick:
        args.threads, args.reps = 2, 1
    if args.runs is None:
        args.runs = tempfile.mkdtemp(prefix="multirate-profile-") if args.quick else "runs"
    from commscope.output import format_table

    Path(args.runs).mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in ("shared", "per-thread"):
        print(f"profiling cs_multirate --modes {mode} --threads {args.threads}", file=sys.stderr)
        run, reps = profile_mode(mode, args.threads, args.reps, args.mpi, args.runs)
        rows.append(mode_row(mode, run, reps))
        print(f"run: {run.path}", file=sys.stderr)
    print(
        format_table(
            pd.DataFrame(rows),
            title=f"multirate, {args.threads} threads per rank, "
            "under commscope profile --counters all "
            "(times per call in seconds; rank 0 sends)",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
