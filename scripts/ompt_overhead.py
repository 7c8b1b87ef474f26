#!/usr/bin/env python3
"""Cost of the OMPT thread-timing tool per parallel-region instance.

Runs native/ompt/probe.c (regions of 2 threads, each a worksharing loop and the closing
barrier) alternately without and with the tool, both on the OMPT runtime (libiomp5.so),
plus on GCC's libgomp for reference, and prints the median time per region of each and
the difference: what the tool adds per region instance (and per event it records).

    .venv/bin/python scripts/ompt_overhead.py [--regions 5000] [--repeats 21] [--threads 2,1]
        [--quick]

The defaults are those of the figures in docs/thread-timing.md (2 threads and 1 thread,
best of 21 runs of 5000 regions).

--quick (what `make bench QUICK=1` runs): 2,000 regions, 1 repeat, 2 threads.  Without the OMPT
runtime (the intel-openmp wheel's libiomp5.so) or the tool (built only where omp-tools.h
is found) it prints "skipped: <reason>" and exits 3.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from commscope.compare.figures import record
from commscope import mpi as mpimod
from commscope.errors import EnvironmentProblem
from commscope.profile import ompt

#: Exit status when the OMPT runtime or tool is missing (scripts/bench.py: skipped).
SKIPPED = 3


def once(probe, regions, threads, env):
    out = subprocess.run([str(probe), str(regions), str(threads)], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[2])


def measure(probe, rt, tool, regions, threads, repeats):
    """Time the probe without and with the tool; print the medians, minima and the difference."""
    times = {"libgomp": [], "libiomp5": [], "libiomp5 + tool": []}
    events = None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            times["libgomp"].append(once(probe, regions, threads, {}))
            times["libiomp5"].append(once(probe, regions, threads, {"LD_PRELOAD": str(rt)}))
            for f in Path(tmp).glob("ompt.*"):
                f.unlink()
            times["libiomp5 + tool"].append(once(probe, regions, threads, {
                "LD_PRELOAD": str(rt), "OMP_TOOL_LIBRARIES": str(tool),
                "COMMSCOPE_PROFILE_DIR": tmp}))
            events = sum(len(ompt.read_events(f)) for f in Path(tmp).glob("ompt.*.bin"))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(f"# {regions} regions x {threads} threads, median of {repeats} runs "
          f"(cores: {os.cpu_count()}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default')})")
    for k, v in times.items():
        print(f"{k:18s} median {med[k] / 1e3:8.2f} us/region, min {best[k] / 1e3:8.2f}   (runs: "
              + " ".join(f"{x / 1e3:.2f}" for x in v) + ")")
    for k, v in times.items():  # kept by `make bench` and checked against the last pass
        record(f"{threads} threads, {k}, per region", [x * 1e-9 for x in v])
    record(f"{threads} threads, tool overhead per region",
           [(t - b) * 1e-9 for t, b in zip(times["libiomp5 + tool"], times["libiomp5"])])
    per_region = events / (regions + 1)
    for label, d in (("median", med), ("min", best)):
        extra = d["libiomp5 + tool"] - d["libiomp5"]
        print(f"tool overhead ({label:6s}) {extra / 1e3:8.2f} us/region instance "
              f"({per_region:.0f} events per instance, {extra / per_region:.0f} ns per event "
              f"recorded; threads record in parallel)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--threads", default="2,1", help="threads per region, a comma list")
    ap.add_argument("--quick", action="store_true", help="2000 regions, 1 repeat, 2 threads")
    a = ap.parse_args()
    if a.quick:
        a.regions, a.repeats, a.threads = 2000, 1, "2"
    rt = ompt.runtime_library()
    if rt is None:
        print("skipped: no libiomp5.so in this environment (the intel-openmp wheel; "
              "scripts/setup.sh installs it)", file=sys.stderr)
        return SKIPPED
    m = mpimod.select_mpi(None)
    probe = mpimod.binary(m, "ompt_probe")
    try:
        tool = ompt.tool_library(m)
    except EnvironmentProblem as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return SKIPPED
    for i, threads in enumerate(int(t) for t in a.threads.split(",") if t):
        if i:
            print()
        measure(probe, rt, tool, a.regions, threads, a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
