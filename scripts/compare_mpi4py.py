#!/usr/bin/env python
"""Side by side: commscope's C ping-pong versus `python -m mpi4py.bench pingpong`.

Both run in this one invocation, on the same MPI (the default Open MPI wheel unless
--mpi says otherwise), with the same launcher flags and repetition counts.  Prints
the mean one-way time per size from each and their ratio (mpi4py / commscope): a
ratio near 1 for large messages says both measure the same transport; at small
sizes mpi4py's Python overhead per call shows.  A third column repeats commscope's
run with transparent huge pages (numpy asks for them for arrays of 4 MiB and more,
which matters for multi-MiB copies when the kernel's THP mode is "madvise").

    .venv/bin/python scripts/compare_mpi4py.py [--mpi mpich] [--max 4M] [--iters 1000] [--quick]

--quick (what `make bench QUICK=1` runs): 1 B .. 64 KiB, 50 iterations (5 large).
"""

import argparse
import re
import sys
import tempfile

from commscope import launch, mpi
from commscope.bench.pingpong import run_pingpong
from commscope.output import print_table
from commscope.units import parse_size

ROW = re.compile(r"^\s*(\d+)\s+[\d.]+\s+\|\s+([\d.eE+-]+)\s")


def mpi4py_pingpong(mpi_install, max_size, iters, large_iters):
    args = [
        "-m",
        "mpi4py.bench",
        "pingpong",
        "-m",
        "1",
        "-n",
        str(max_size),
        "-l",
        str(iters),
        "-s",
        str(max(1, iters // 10)),
        "--loop-large",
        str(large_iters),
        "--skip-large",
        str(max(1, large_iters // 10)),
        "--large-size",
        "8193",
        "--loop-huge",
        str(large_iters),
        "--skip-huge",
        "1",
    ]
    plan = launch.plan_launch(mpi_install, 2, sys.executable, args)
    res = launch.run_job(plan, echo=False, progress=False, timeout=600)
    if res.returncode != 0:
        sys.exit(f"mpi4py.bench failed:\n{res.stderr}")
    return {
        int(m.group(1)): float(m.group(2)) for m in map(ROW.match, res.stdout.splitlines()) if m
    }


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--max", default="4M")
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--large-iters", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="up to 64K, 50 iterations, 5 large")
    a = ap.parse_args()
    if a.quick:
        a.max, a.iters, a.large_iters = "64K", 50, 5
    max_size = parse_size(a.max)
    m = mpi.select_mpi(a.mpi)
    ours = {}
    with tempfile.TemporaryDirectory() as tmp:
        for huge in (False, True):
            run = run_pingpong(
                min_size=1,
                max_size=max_size,
                iters=a.iters,
                warmup=a.iters // 10,
                large_iters=a.large_iters,
                large_warmup=max(1, a.large_iters // 10),
                hugepages=huge,
                runs_root=tmp,
                mpi_spec=a.mpi,
                echo=False,
                progress=False,
            )
            ours[huge] = run.table("samples").groupby("size_bytes")["time_s"].mean()
        library = run.meta["mpi"]["library_version"].splitlines()[0]
    theirs = mpi4py_pingpong(m, max_size, a.iters, a.large_iters)
    rows = [
        {
            "size_bytes": s,
            "commscope_s": ours[False][s],
            "commscope_hugepages_s": ours[True][s],
            "mpi4py_s": theirs[s],
            "mpi4py/commscope": theirs[s] / ours[False][s],
            "mpi4py/commscope_hugepages": theirs[s] / ours[True][s],
        }
        for s in ours[False].index
        if s in theirs
    ]
    if not rows:
        sys.exit("compare_mpi4py: no size in both outputs (did mpi4py.bench's format change?)")
    print(f"# {library}")
    print_table(rows, title="mean one-way time per size, same MPI, same run")


if __name__ == "__main__":
    main()
