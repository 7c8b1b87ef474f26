#!/usr/bin/env python3
"""How long `commscope diagnose` and the report take on a big traced run.

Profiles tests/programs/ring_imbalance.c (a ring Sendrecv and an Allreduce per
iteration, rank r working r + 1 units) with --trace --callsites at the given rank counts
(oversubscribed on this machine), then times, each in one process on one core:
reading the trace, `commscope diagnose` (wait states, replays, findings) and
`commscope report` of the run, and prints the trace's size with them.  The issue's
target: diagnose of a 128-rank traced run under 30 s on one core.

    .venv/bin/python scripts/diagnose_scaling.py [--ranks 32,128] [--iters 50] [--quick]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def timed(argv, env):
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"{' '.join(map(str, argv))} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0, done.stdout


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--ranks", default="32,128", help="comma list of rank counts (default %(default)s)"
    )
    ap.add_argument(
        "--iters", type=int, default=50, help="iterations of the ring (default %(default)s)"
    )
    ap.add_argument(
        "--unit", type=int, default=200, help="work unit, microseconds (default %(default)s)"
    )
    ap.add_argument("--quick", action="store_true", help="8 ranks, 10 iterations")
    a = ap.parse_args()
    if a.quick:
        a.ranks, a.iters = "8", 10
    from commscope.mpi import select_mpi
    from commscope.output import format_table

    mpi = select_mpi("openmpi")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "ring"
        subprocess.run(
            [mpi.mpicc, "-O2", "-g", str(ROOT / "tests/programs/ring_imbalance.c"), "-o", str(exe)],
            check=True,
        )
        for n in (int(x) for x in a.ranks.split(",") if x):
            runs = Path(tmp) / f"runs{n}"
            profile_s, out = timed(
                [
                    PY,
                    "-m",
                    "commscope",
                    "profile",
                    "-n",
                    str(n),
                    "--trace",
                    "--callsites",
                    "--quiet",
                    "--runs",
                    str(runs),
                    "--timeout",
                    "1800",
                    "--",
                    str(exe),
                    str(a.iters),
                    str(a.unit),
                ],
                env,
            )
            run = out.strip().splitlines()[0]
            read_s, _ = timed(
                [PY, "-c", "import sys, commscope; commscope.open(sys.argv[1]).trace", run], env
            )
            diag_s, text = timed(
                ["taskset", "-c", "0", PY, "-m", "commscope", "diagnose", run], env
            )
            report_s, _ = timed(
                [
                    "taskset",
                    "-c",
                    "0",
                    PY,
                    "-m",
                    "commscope",
                    "report",
                    run,
                    "-o",
                    str(Path(tmp) / f"r{n}.html"),
                ],
                env,
            )
            trace_bytes = sum(p.stat().st_size for p in (Path(run) / "raw").glob("trace.*.bin"))
            rows.append(
                {
                    "ranks": n,
                    "iterations": a.iters,
                    "trace_bytes": trace_bytes,
                    "profile_s": profile_s,
                    "read_trace_s": read_s,
                    "diagnose_s": diag_s,
                    "report_s": report_s,
                    "first_finding": text.splitlines()[1][:80],
                }
            )
            print(f"{n} ranks done", file=sys.stderr)
    print(
        format_table(
            rows,
            title="commscope diagnose of a traced ring (one core for diagnose "
            "and report; wall times of whole commands)",
        )
    )


if __name__ == "__main__":
    main()
