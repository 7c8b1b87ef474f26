#!/usr/bin/env python
"""Thread-arrival metrics recovered vs injected (Marts et al. 2023, Sec. 4.2).

Runs ``cs_threads`` with a known imbalance (normal work plus injected laggards) once per
compute mode and prints, per run, what the analysis recovers from the measured compute
times next to what the injected (intended) times imply: laggard count, mean extra time
of the laggards, average reclaimable time, both idle ratios, and the accuracy of the
compute model (measured - intended).  A last run without imbalance measures the spin's
accuracy alone.

    .venv/bin/python scripts/measure_arrivals.py                 # defaults below
    .venv/bin/python scripts/measure_arrivals.py --threads 4 --iterations 200
    .venv/bin/python scripts/measure_arrivals.py --quick         # 20 iterations per run
"""

import argparse
import sys
import tempfile

import numpy as np

from commscope.bench.threads import compare_with_injected, load_tables, recovery_table, run_threads
from commscope.output import format_table


def measure(label, threshold, **kw):
    run = run_threads(echo=False, progress=False, **kw)
    compute, injected = load_tables(run)
    s = compare_with_injected(compute, injected, threshold)
    lag = injected[injected["laggard"] == 1]
    print(
        f"\n## {label}: {kw['ranks']} ranks x {kw['threads']} threads x "
        f"{kw['iterations']} iterations, compute={kw['compute']}  ({run.path})"
    )
    over = run.meta.get("oversubscription", {})
    if over.get("oversubscribed"):
        print(f"#  oversubscribed: {over['threads_per_node']} threads on {over['cores']} cores")
    print(
        f"injected laggard thread-iterations: {len(lag)} (extra {kw['laggard_extra'] * 1e3:g} ms "
        f"each), in {s['injected_laggard_iterations']} process-iterations"
    )
    print(format_table(recovery_table(s)))
    print(f"false positives {s['false_positives']}, false negatives {s['false_negatives']}")
    e = s
    print(
        f"compute - intended: mean {e['error_mean_s'] * 1e6:.1f} us, median "
        f"{e['error_median_s'] * 1e6:.1f} us, p95 {e['error_p95_s'] * 1e6:.1f} us, "
        f"max {e['error_max_s'] * 1e6:.1f} us"
    )
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--work", type=float, default=2e-3)
    ap.add_argument("--sd", type=float, default=1e-4)
    ap.add_argument("--laggard-prob", type=float, default=0.05)
    ap.add_argument("--laggard-extra", type=float, default=5e-3)
    ap.add_argument("--threshold", type=float, default=1e-3, help="laggard threshold (paper: 1 ms)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compute", choices=("spin", "sleep", "both"), default="both")
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--runs", default=None, help="run directory root (default: a temp dir)")
    ap.add_argument("--quick", action="store_true", help="20 iterations per run")
    a = ap.parse_args(argv)
    if a.quick:
        a.iterations = 20
    root = a.runs or tempfile.mkdtemp(prefix="measure_arrivals-")
    common = dict(
        ranks=a.ranks,
        threads=a.threads,
        iterations=a.iterations,
        trials=a.trials,
        work=a.work,
        sd=a.sd,
        seed=a.seed,
        mpi_spec=a.mpi,
        runs_root=root,
    )
    print(
        f"# work normal mean {a.work * 1e3:g} ms sd {a.sd * 1e3:g} ms; laggards p={a.laggard_prob} "
        f"extra {a.laggard_extra * 1e3:g} ms; threshold {a.threshold * 1e3:g} ms"
    )
    modes = ("spin", "sleep") if a.compute == "both" else (a.compute,)
    for mode in modes:
        measure(
            f"imbalance, {mode}",
            a.threshold,
            dist="normal",
            laggard_prob=a.laggard_prob,
            laggard_extra=a.laggard_extra,
            compute=mode,
            **common,
        )
    # The compute model alone: constant work, no laggards, one thread per rank.
    for mode in modes:
        s = measure(
            f"accuracy, {mode}, constant work",
            a.threshold,
            **{**common, "threads": 1, "ranks": 1},
            dist="constant",
            laggard_prob=0.0,
            laggard_extra=0.0,
            compute=mode,
        )
        if not np.isfinite(s["error_mean_s"]):
            print("no samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
