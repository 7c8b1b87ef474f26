#!/usr/bin/env python
"""Measure the queue-search cost gamma on this machine (004 Sec. 4.1, eqs. 3-4).

Runs HighVolumePingPong with receives ordered and reversed (8-byte messages,
n = 1 .. 10,000 on a log grid), fits gamma with ``fit_gamma`` (upper bound eq. 3:
reversed - ordered = gamma (n^2 - n); also the triangular n(n-1)/2 form), then
prints the reversed-order one-way time at the largest n measured against modelled:

* max-rate + queue search: n (alpha + beta s) + gamma n^2, alpha and beta from
  ``--machine-model`` (intra-socket) or else from a short ping-pong run fitted here;
* without a machine model: measured ordered time + gamma (n^2 - n).

Usage: .venv/bin/python scripts/measure_gamma.py [--mpi mpich] [--nmax 10000]
       [--iters 5] [--runs DIR] [--machine-model machine-model.json] [--quick]
Prints numbers only; nothing is asserted (the machine is shared and noisy).  --quick
(what `make bench QUICK=1` runs): n = 1 .. 100, 1 iteration, a 200-iteration ping-pong.
"""

import argparse
import tempfile

from commscope.bench.hvpingpong import medians, run_hvpingpong
from commscope.bench.pingpong import run_pingpong
from commscope.models.fitting import fit_gamma, fit_postal


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--nmax", type=int, default=10000)
    ap.add_argument("--per-decade", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--runs", default=None, help="keep the run directories here")
    ap.add_argument("--machine-model", default=None, help="machine model for alpha and beta")
    ap.add_argument("--quick", action="store_true",
                    help="n up to 100, 1 iteration; ping-pong of 200 iterations")
    a = ap.parse_args()
    if a.quick:
        a.nmax, a.iters = 100, 1
    root = a.runs or tempfile.mkdtemp(prefix="measure-gamma-")
    kw = dict(mpi_spec=a.mpi, runs_root=root, echo=False)

    run = run_hvpingpong(n_min=1, n_max=a.nmax, per_decade=a.per_decade, sizes=[a.size],
                         iters=a.iters, warmup=1, **kw)
    samples = run.table("samples")
    g_up = fit_gamma(samples, search="upper")
    g_tri = fit_gamma(samples, search="triangular")
    print(f"HighVolumePingPong run: {run.path} ({run.meta['mpi']['name']}, "
          f"{samples['locality'].iloc[0]})")
    print(f"gamma (upper bound, eq. 3: gamma n^2)      = {g_up.gamma_s:.3e} s per element "
          f"(median rel. residual {g_up.median_rel_residual:.2f} over {g_up.n_cells} cells)")
    print(f"gamma (triangular, gamma n(n+1)/2)         = {g_tri.gamma_s:.3e} s per element")
    print("Blue Waters, 004 eq. 4                     = 8.4e-09 s per element")

    if a.machine_model:
        from commscope.models.machine_model import load_machine_model
        machine_model = load_machine_model(a.machine_model)
        p = machine_model.get(machine_model.protocol_of(a.size, "intra-socket"), "intra-socket")
        alpha, beta, src = p.alpha_s, p.beta_s_per_byte, a.machine_model
    else:
        iters = 200 if a.quick else 2000
        pp = run_pingpong(min_size=1, max_size=1024, iters=iters, warmup=iters // 10, **kw)
        s = pp.table("samples")
        fit = fit_postal(s["size_bytes"], s["time_s"])
        alpha, beta, src = fit.alpha_s, fit.beta_s_per_byte, f"ping-pong run {pp.path}"
    print(f"postal alpha = {alpha:.3e} s, beta = {beta:.3e} s/B (from {src})")

    med = medians(samples).set_index(["n_messages", "order"])["median_s"]
    print(f"\n{'n':>7} {'ordered_s':>11} {'reversed_s':>11} {'model_rev_s':>12} "
          f"{'ord+gamma_s':>12} {'maxrate_s':>11}")
    for n in sorted(samples["n_messages"].unique()):
        o, r = med[(n, "ordered")], med[(n, "reversed")]
        maxrate = n * (alpha + beta * a.size)
        model = maxrate + g_up.gamma_s * n * n
        print(f"{n:7d} {o:11.4e} {r:11.4e} {model:12.4e} "
              f"{o + g_up.gamma_s * (n * n - n):12.4e} {maxrate:11.4e}")
    n = int(samples["n_messages"].max())
    r, o = med[(n, "reversed")], med[(n, "ordered")]
    print(f"\nreversed order at n = {n}: measured {r * 1e3:.2f} ms, modelled (max-rate + gamma n^2) "
          f"{(n * (alpha + beta * a.size) + g_up.gamma_s * n * n) * 1e3:.2f} ms, "
          f"measured ordered + gamma (n^2 - n) {(o + g_up.gamma_s * (n * n - n)) * 1e3:.2f} ms; "
          f"reversed - ordered = {(r - o) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
