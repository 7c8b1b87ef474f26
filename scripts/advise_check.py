#!/usr/bin/env python3
"""The early-bird advisor against a measurement: `bench partitioned --ompt`.

One run of the partitioned benchmark measures, per buffer size, the partitioned send
(MPI_Pready as each thread finishes) and the single send after the join, while the
OMPT tool times the sender's threads.  The advisor sees only the OMPT arrivals and a
machine model; its predicted saving per iteration (single - partitioned) is printed
next to the measured one.  Measured figures use medians (the 2-core machine is shared;
means are dominated by descheduling outliers), and the run's spread of measured
savings (p25..p75 of paired differences over runs) is shown.

    .venv/bin/python scripts/advise_check.py [--machine-model machine-model.json]
        [--sizes 256K,1M,4M,16M] [--runs 30] [--compute 0.005] [--sigma 1e-3]

Without --machine-model a ping-pong run is made and fitted first (about 40 s).  --quick
(what `make bench QUICK=1` runs): 256K and 1M, 3 runs per size, a short ping-pong fit.
Without the OMPT runtime or tool it prints "skipped: <reason>" and exits 3.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from commscope.bench.partitioned import run_partitioned
from commscope.errors import EnvironmentProblem
from commscope.predict import earlybird as eb
from commscope.units import parse_size

#: Exit status when OMPT thread timing cannot run here (scripts/bench.py: skipped).
SKIPPED = 3


def ompt_missing(mpi_spec=None):
    """Why `bench partitioned --ompt` cannot run here, or None."""
    from commscope import mpi as mpimod
    from commscope.collect import ompt

    if ompt.runtime_library() is None:
        return "no libiomp5.so in this environment (the intel-openmp wheel; scripts/setup.sh)"
    try:
        ompt.tool_library(mpimod.select_mpi(mpi_spec))
    except EnvironmentProblem as exc:
        return str(exc)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine-model", help="machine model JSON (default: fit a ping-pong run)")
    ap.add_argument("--sizes", default="256K,1M,4M,16M")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compute", type=float, default=0.005)
    ap.add_argument("--sigma", type=float, default=1e-3)
    ap.add_argument("--quick", action="store_true", help="256K,1M, 3 runs, short ping-pong fit")
    a = ap.parse_args()
    if a.quick:
        a.sizes, a.runs = "256K,1M", 3
    why = ompt_missing()
    if why:
        print(f"skipped: {why}", file=sys.stderr)
        return SKIPPED
    root = Path(tempfile.mkdtemp(prefix="advise-check-"))
    machine_model = a.machine_model
    if machine_model is None:
        from commscope.bench.pingpong import run_pingpong
        from commscope.models.machine_model import save_machine_model
        from commscope.machine_fit import fit_runs

        short = dict(max_size=4 << 20, iters=100, warmup=10, large_iters=10, large_warmup=1)
        pp = run_pingpong(runs_root=root, echo=False, progress=False, **(short if a.quick else {}))
        machine_model = root / "machine-model.json"
        save_machine_model(fit_runs([pp.path]), machine_model)
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    run = run_partitioned(
        threads=a.threads,
        compute_s=a.compute,
        sigma_s=a.sigma,
        sizes=sizes,
        runs_per_size=a.runs,
        methods=["partitioned", "single"],
        ompt=True,
        runs_root=root,
        echo=False,
        progress=False,
    )
    link, info = eb.link_for(run, machine_model=str(machine_model))
    samples = run.table("samples")
    print(
        f"# run {run.path}; link {info['source']} ({info['locality']}); {a.threads} threads, "
        f"compute {a.compute} s, sigma {a.sigma} s, {a.runs} runs per size and method"
    )
    print(
        f"{'size':>10} {'meas single':>12} {'meas part':>12} {'meas saving':>12} "
        f"{'p25..p75':>20} {'pred single':>12} {'pred alg1':>12} {'pred MC':>12} "
        f"{'pred saving':>12}   (us, medians)"
    )
    for size in sizes:
        s = samples[samples["size_bytes"] == (size // a.threads) * a.threads]
        single = s[s["method"] == "single"].sort_values("run")["elapsed_s"].to_numpy()
        part = s[s["method"] == "partitioned"].sort_values("run")["elapsed_s"].to_numpy()
        if not len(part):
            print(f"{size:>10} partitioned sends were skipped in this run")
            continue
        paired = single - part  # same run index: same thread-time draws
        t = eb.advise(run, link, message_size=size, replicas=4000)
        row = t[~t["region"].str.contains("#")].iloc[0]
        print(
            f"{size:>10} {np.median(single) * 1e6:12.1f} {np.median(part) * 1e6:12.1f} "
            f"{np.median(paired) * 1e6:12.1f} "
            f"{np.percentile(paired, 25) * 1e6:9.1f}..{np.percentile(paired, 75) * 1e6:<9.1f} "
            f"{row['single_s'] * 1e6:12.1f} {row['partitioned_alg1_s'] * 1e6:12.1f} "
            f"{row['partitioned_mc_s'] * 1e6:12.1f} {row['saving_mc_s'] * 1e6:12.1f}"
        )
    print(
        f"# advisor region: {row['region']}, {row['instances']} instances, arrival spread "
        f"{row['spread_s'] * 1e6:.0f} us; verdict at the largest size: {row['verdict']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
