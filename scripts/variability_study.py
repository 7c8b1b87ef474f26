#!/usr/bin/env python
"""Variability prediction study on this machine (Dominguez-Trujillo 2021, Sec. 3.4.2-3.4.3).

Runs the bulk-synchronous harness at 1, 2 and 4 ranks (4 oversubscribes a 2-core
machine) for two workloads, calibrates the three bootstraps on the 1-rank run,
predicts the 2- and 4-rank interval maxima and runtimes, and prints the fraction of
predicted intervals that hold the measured medians.  Numbers depend on the machine
and its load; nothing here is asserted.

    .venv/bin/python scripts/variability_study.py [--runs DIR] [--intervals 200]
        [--scales 1 2 4] [--repeats 1] [--replicas 10000] [--seed 1] [--mpi NAME] [--quick]

--quick (what `make bench QUICK=1` runs): the ftq workload only, 1 and 2 ranks, 20
intervals, 500 replicas.
"""

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from commscope.bench.bsp import run_bsp
from commscope.output import print_table
from commscope.predict.variability import predict_variability, verdict_summary

WORKLOADS = {
    # 5 ms normal spins, sd 0.5 ms
    "ftq": dict(mean=5e-3, sd=5e-4),
    # 256 x 256 DGEMM, 4 per interval (a few ms, compute bound)
    "dgemm": dict(dim=256, reps=4),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="where to put the runs (default: a temp dir)")
    ap.add_argument("--intervals", type=int, default=200)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--repeats", type=int, default=1, help="runs per larger scale")
    ap.add_argument("--replicas", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument(
        "--quick", action="store_true", help="ftq, 1 and 2 ranks, 20 intervals, 500 replicas"
    )
    args = ap.parse_args()
    if args.quick:
        args.workloads, args.scales, args.intervals, args.replicas = ["ftq"], [1, 2], 20, 500
    root = Path(args.runs or tempfile.mkdtemp(prefix="commscope-variability-"))
    scales = sorted(args.scales)
    print(
        f"# runs in {root}; scales {scales} (above 2 ranks this 2-core machine is oversubscribed)"
    )

    frames = []
    for wl in args.workloads:
        runs = {}
        for p in scales:
            for rep in range(1 if p == scales[0] else args.repeats):
                run = run_bsp(
                    wl,
                    ranks=p,
                    intervals=args.intervals,
                    seed=args.seed + 100 * p + rep,
                    runs_root=root,
                    run_name=f"{wl}-{p}-{rep}",
                    mpi_spec=args.mpi,
                    echo=False,
                    progress=False,
                    **WORKLOADS[wl],
                )
                runs.setdefault(p, []).append(run)
                m = run.table("maxima")["max_interval_s"]
                print(
                    f"{wl:6s} {p} ranks rep {rep}: runtime {m.sum():.4f} s, median max "
                    f"{m.median() * 1e3:.3f} ms, p95 {m.quantile(0.95) * 1e3:.3f} ms, "
                    f"oversubscribed {run.meta['launch']['oversubscribed']}"
                )
        cal = runs[scales[0]][0]
        others = [r for p in scales[1:] for r in runs[p]]
        df = predict_variability(
            cal, scales[1:], compare=others, replicas=args.replicas, seed=args.seed
        )
        frames.append(df)
        cols = [
            "kind",
            "statistic",
            "target_ranks",
            "median_s",
            "ci_low_s",
            "ci_high_s",
            "measured_median_s",
            "inside",
            "median_error",
        ]
        print_table(
            df[cols].astype(object).where(df[cols].notna(), "-"),
            title=f"{wl}: calibrated on {scales[0]} rank(s)",
        )
        print()

    allp = pd.concat(frames, ignore_index=True)
    print_table(
        verdict_summary(allp),
        title="fraction of predicted intervals holding the "
        "measured median (all workloads and scales)",
    )
    judged = allp["inside"].notna()
    total = int(allp.loc[judged, "inside"].astype(bool).sum())
    print(f"\noverall: {total}/{int(judged.sum())} = {total / max(judged.sum(), 1):.2f}")


if __name__ == "__main__":
    main()
