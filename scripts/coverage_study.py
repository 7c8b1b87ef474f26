#!/usr/bin/env python
"""Coverage of the variability intervals, 1 -> 2 ranks, on this machine (issue 26, part 3).

Repeats pairs of bulk-synchronous runs (one at 1 rank, one at 2 ranks, alternating
which goes first) per workload, predicts each pair's 2-rank statistics from 1-rank
runs with ``commscope predict variability`` and counts how often each interval holds
the measured value, for the thesis's intervals (``--ci-method thesis``: what commscope
computed before) and the target-run intervals (``--ci-method run``, the default).  Pair
``i`` is calibrated on the 1-rank runs ``i, i+1, i+2`` (mod the number of pairs): three
repeats give the between-run component, and none of them is the target.  Numbers depend
on the machine and its load; nothing here is asserted (tests/test_predict_variability.py
measures coverage on synthetic series where the truth is known).

    .venv/bin/python scripts/coverage_study.py [--runs DIR] [--pairs 12] [--repeats 3]
        [--workloads ftq dgemm] [--replicas 2000] [--seed 1] [--mpi NAME] [--quick]

--runs DIR keeps the runs and reuses those already there (same names), so a second pass
only re-predicts.  --quick (what `make bench QUICK=1` runs): 4 pairs of 60 intervals,
ftq and dgemm, 500 replicas.
"""

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from commscope.bench.bsp import run_bsp
from commscope.output import print_table
from commscope.predict.variability import predict_variability
from commscope.runs import open_run

WORKLOADS = {
    # the main study's bsp step: 5 ms normal spins (sd 0.5 ms), 256 x 256 DGEMM
    "ftq": dict(mean=5e-3, sd=5e-4),
    "dgemm": dict(dim=256, reps=1),
}
INTERVALS = {"ftq": 200, "dgemm": 300}


def collect(root, workload, pairs, intervals, seed, mpi):
    """``pairs`` (1-rank run, 2-rank run) pairs, reusing finished runs under ``root``."""
    out = []
    for i in range(pairs):
        pair = {}
        order = (1, 2) if i % 2 == 0 else (2, 1)  # alternate: drift hits both scales alike
        for p in order:
            name = f"{workload}-{p}rank-{i:02d}"
            path = root / name
            if (path / "meta.json").exists() and open_run(path).status == "complete":
                pair[p] = open_run(path)
                continue
            pair[p] = run_bsp(
                workload,
                ranks=p,
                intervals=intervals,
                seed=seed + 1000 * i + p,
                runs_root=root,
                run_name=name,
                mpi_spec=mpi,
                echo=False,
                progress=False,
                **WORKLOADS[workload],
            )
        out.append(pair)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="where to keep the runs (default: a temp dir)")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3, help="1-rank runs per calibration")
    ap.add_argument(
        "--intervals", type=int, default=None, help="intervals per run (default ftq 200, dgemm 300)"
    )
    ap.add_argument("--replicas", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="4 pairs of 60 intervals, 500 replicas")
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.intervals, args.replicas = 4, 60, 500
    root = Path(args.runs or tempfile.mkdtemp(prefix="commscope-coverage-"))
    root.mkdir(parents=True, exist_ok=True)
    repeats = max(1, min(args.repeats, args.pairs - 1))
    print(
        f"# runs in {root}; {args.pairs} pairs per workload, calibration on {repeats} "
        "1-rank runs, target one 2-rank run"
    )

    rows = []
    for wl in args.workloads:
        pairs = collect(root, wl, args.pairs, args.intervals or INTERVALS[wl], args.seed, args.mpi)
        for i, pair in enumerate(pairs):
            cal = [pairs[(i + j) % len(pairs)][1] for j in range(repeats)]
            for interval in ("thesis", "run"):
                df = predict_variability(
                    cal[0],
                    [2],
                    compare=[pair[2]],
                    repeats=cal[1:],
                    replicas=args.replicas,
                    seed=args.seed + i,
                    interval=interval,
                )
                for r in df.itertuples():
                    rows.append(
                        dict(
                            workload=wl,
                            pair=i,
                            interval=interval,
                            kind=r.kind,
                            statistic=r.statistic,
                            inside=r.inside,
                            low=r.ci_low_s,
                            high=r.ci_high_s,
                            measured=r.measured_median_s,
                            note=r.note,
                        )
                    )
    df = pd.DataFrame(rows)
    if args.runs:
        df.to_csv(root / "coverage.csv", index=False)
    judged = df[df["inside"].notna()]
    table = (
        judged.groupby(["interval", "kind", "statistic", "workload"], sort=False)["inside"]
        .agg(held=lambda s: int(s.astype(bool).sum()), total="size")
        .reset_index()
    )
    table["coverage"] = table["held"] / table["total"]
    table["nominal"] = 0.95
    print_table(
        table, title="measured 2-rank value inside the predicted 95% interval (held / total pairs)"
    )


if __name__ == "__main__":
    main()
