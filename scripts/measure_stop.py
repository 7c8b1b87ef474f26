#!/usr/bin/env python3
"""Kill `commscope bench pingpong` at random moments; count survivors, time the stop.

For each MPI and each signal (SIGINT, SIGTERM, SIGHUP, SIGKILL), start real 2-rank
ping-pong jobs and send the signal at a random moment: every other trial between 0.3 s
and 3 s after the command starts (often before the ranks exist), the others 0 .. 2 s
after the ranks started.  Prints every trial and, per MPI and signal, how many
processes of the job survived (goal: 0) and the time from the signal to the last
process of the job gone (launcher, guard and ranks).

    .venv/bin/python scripts/measure_stop.py [--trials 5] [--seed 14] [--mpi openmpi,mpich]
        [--quick]

--quick (what `make bench QUICK=1` runs): Open MPI only, one trial per signal, SIGTERM
and SIGKILL after the ranks started, SIGINT and SIGHUP at a random moment from the start.
"""

import argparse
import math
import random
import signal
import statistics
import sys
import tempfile
from pathlib import Path

from commscope.killtrial import kill_at, long_pingpong_argv

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5, help="trials per MPI and signal")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--mpi", default="openmpi,mpich")
    ap.add_argument("--quick", action="store_true", help="Open MPI, 1 trial per signal")
    opts = ap.parse_args()
    if opts.quick:
        opts.trials, opts.mpi = 1, "openmpi"
    rng = random.Random(opts.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cs-stop-") as tmp:
        for mpi_name in opts.mpi.split(","):
            for k in range(opts.trials):
                for i, sig in enumerate(SIGNALS):
                    runs = Path(tmp) / f"{mpi_name}-{sig.name}-{k}"
                    argv = long_pingpong_argv(mpi_name, runs)
                    # every other trial; with one trial (--quick), every other signal
                    running = (k + (i if opts.trials == 1 else 0)) % 2 == 1
                    t = kill_at(
                        argv,
                        str(runs),
                        sig,
                        rng.uniform(0, 2) if running else rng.uniform(0.3, 3),
                        after_ranks_start=running,
                    )
                    rows.append((mpi_name, t))
                    print(
                        f"{mpi_name:8s} {t.signal:8s} at {t.delay_s:4.2f} s  job started "
                        f"{'yes' if t.job_started else 'no ':3s}  exit {t.exit_code:4d}  "
                        f"survivors {t.survivors}  gone after {t.gone_after_s:6.3f} s",
                        flush=True,
                    )
    print("\nper MPI and signal (trials where the ranks were running when the signal came):")
    print(
        f"{'MPI':8s} {'signal':8s} {'trials':>6s} {'running':>7s} {'survivors':>9s} "
        f"{'median gone s':>13s} {'max gone s':>10s}"
    )
    for mpi_name in opts.mpi.split(","):
        for sig in SIGNALS:
            ts = [t for m, t in rows if m == mpi_name and t.signal == sig.name]
            started = [
                t.gone_after_s for t in ts if t.job_started and not math.isnan(t.gone_after_s)
            ]
            med = f"{statistics.median(started):.3f}" if started else "-"
            mx = f"{max(started):.3f}" if started else "-"
            print(
                f"{mpi_name:8s} {sig.name:8s} {len(ts):6d} {sum(t.job_started for t in ts):7d} "
                f"{sum(t.survivors for t in ts):9d} {med:>13s} {mx:>10s}"
            )
    total = sum(t.survivors for _, t in rows)
    print(f"\n{len(rows)} kills, {total} surviving processes")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
