#!/usr/bin/env python
"""Measure the queue search per MPI and print how well each model holds at every depth.

Runs HighVolumePingPong (Bienz et al. 2018, Sec. 4.1) with receives ordered and reversed, 8-byte
messages, n = 1 .. 10,000 on a log grid, with --queues (Open MPI's ob1 queue-length
pvars around each receive phase), under each MPI of --mpis, the MPIs alternating
round by round so they see the same machine; then per MPI, on the rounds pooled:

* before: the paper's model, n (alpha + beta s) + gamma n^2 reversed / gamma n ordered,
  alpha and beta from a short ping-pong run of that MPI (or --machine-model), gamma
  from ``fit_gamma``;
* after: the form ``fit_queue_search`` chose by fit quality (models/queue_search.py),
  every candidate's BIC, AIC and leave-one-depth-out error;
* residuals per depth and order: measured median, both models, measured / model; the
  spread of the per-round medians (max / min: how reproducible the measurement is
  here); the queue lengths ob1 reported.

Usage: .venv/bin/python scripts/measure_gamma.py [--mpis openmpi,mpich] [--nmax 10000]
       [--per-decade 4] [--iters 7] [--rounds 2] [--runs DIR] [--machine-model FILE] [--quick]
       [--from DIR]   (fit the runs of an earlier --runs DIR again, measuring nothing)
       [--compare-env OMPI_MCA_btl_sm_free_list_max=65536]   (what the ordered case waits for:
                      runs without and with the setting, alternating; n from nmax/100)
Prints numbers only; nothing is asserted (the machine is shared and noisy). --quick
(what `make bench QUICK=1` runs): n = 1 .. 100, 1 iteration, 1 round, a 200-iteration ping-pong.
"""

import argparse
import tempfile

import numpy as np
import pandas as pd

from commscope.bench.hvpingpong import run_hvpingpong
from commscope.bench.pingpong import run_pingpong
from commscope.models.fitting import fit_gamma, fit_postal, fit_queue_search
from commscope.models.queue_search import MAX_REL_ERROR, PARAMS


def _alpha_beta(mpi, a, kw, done=()):
    if done:  # --from: the ping-pong run measured with the HighVolumePingPong runs
        s = done[-1].table("samples")
        fit = fit_postal(s["size_bytes"], s["time_s"])
        return fit.alpha_s, fit.beta_s_per_byte, f"ping-pong run {done[-1].path}"
    if a.machine_model:
        from commscope.models.machine_model import load_machine_model

        mm = load_machine_model(a.machine_model)
        p = mm.get(mm.protocol_of(a.size, "intra-socket"), "intra-socket")
        return p.alpha_s, p.beta_s_per_byte, a.machine_model
    iters = 200 if a.quick else 2000
    pp = run_pingpong(
        min_size=1, max_size=1024, iters=iters, warmup=iters // 10, mpi_spec=mpi, **kw
    )
    s = pp.table("samples")
    fit = fit_postal(s["size_bytes"], s["time_s"])
    return fit.alpha_s, fit.beta_s_per_byte, f"ping-pong run {pp.path}"


def _report(mpi, runs, alpha, beta, src, size):
    samples = pd.concat(
        [r.table("samples").assign(round=i) for i, r in enumerate(runs)], ignore_index=True
    )
    queues = [r.table("queues") for r in runs if "queues" in r.tables()]
    queues = pd.concat(queues, ignore_index=True) if queues else None
    qs = fit_queue_search(samples, queues, mpi)
    g = fit_gamma(samples)
    print(f"\n===== {mpi}: {', '.join(str(r.path) for r in runs)}")
    print(
        f"the paper's model: alpha = {alpha:.3e} s, beta = {beta:.3e} s/B (from {src}); "
        f"gamma (upper bound, eq. 3) = {g.gamma_s:.3e} s per entry"
    )
    spread = (
        samples.groupby(["n_messages", "order", "round"])["time_s"]
        .median()
        .groupby(["n_messages", "order"])
        .agg(lambda v: v.max() / v.min())
    )
    rows = []
    for order in ("ordered", "reversed"):
        o = qs.order_dict(order)
        print(
            f"\n{order}: chosen form {o['form']} ({o['selected_by']}): "
            + ", ".join(f"{k} = {o['params'][k]:.3e}" for k in PARAMS[o["form"]])
            + (
                f", breakpoint D = {o['breakpoint_messages']:.0f}"
                if o.get("breakpoint_messages")
                else ""
            )
        )
        print(pd.DataFrame(o["scores"]).T.to_string())
        for flag in o["flags"]:
            print(f"  FLAGGED: {flag}")
        for r in o["residuals"]:
            n = r["n_messages"]
            old = n * (alpha + beta * size) + g.gamma_s * (n * n if order == "reversed" else n)
            rows.append(
                {
                    "mpi": mpi,
                    "n": n,
                    "order": order,
                    "measured_s": r["measured_s"],
                    "model_paper_s": old,
                    "ratio_paper": r["measured_s"] / old,
                    "model_s": r["model_s"],
                    "ratio": r["ratio"],
                    "round_spread": spread.get((n, order), np.nan),
                }
            )
    tab = pd.DataFrame(rows)
    with pd.option_context("display.float_format", "{:.3g}".format, "display.width", 200):
        print(
            f"\nresiduals per depth ({mpi}; ratio = measured / model; round_spread = max / min "
            "of the per-round medians)"
        )
        print(tab.to_string(index=False))
    # relative error as everywhere in commscope: |model - measured| / measured
    within = (1 / tab["ratio"] - 1).abs() <= MAX_REL_ERROR
    within_paper = (1 / tab["ratio_paper"] - 1).abs() <= MAX_REL_ERROR
    print(
        f"\nwithin {MAX_REL_ERROR:.0%} (|model - measured| / measured): chosen form "
        f"{within.sum()} of {len(tab)} depths x orders; the paper's model {within_paper.sum()} of {len(tab)}"
    )
    if qs.queues:
        q = pd.DataFrame(qs.queues)
        print(
            "\nob1 queue lengths around each receive phase (medians; initiator 1 = the timed rank)"
        )
        print(q.to_string(index=False))
    return tab


def _compare_env(setting, a, kw):
    """Alternate runs without and with one environment setting (e.g. an Open MPI MCA
    parameter) and print the ratio of the medians per depth and order."""
    import os

    key, _, value = setting.partition("=")
    med = {}
    for rnd in range(a.rounds):
        for label in ("default", setting):
            if label == setting:
                os.environ[key] = value
            else:
                os.environ.pop(key, None)
            run = run_hvpingpong(
                n_min=max(1, a.nmax // 100),
                n_max=a.nmax,
                per_decade=a.per_decade,
                sizes=[a.size],
                iters=a.iters,
                warmup=1,
                mpi_spec=a.mpi or "openmpi",
                **kw,
            )
            s = run.table("samples")
            med.setdefault(label, []).append(s.groupby(["n_messages", "order"])["time_s"].median())
    os.environ.pop(key, None)
    tab = pd.DataFrame({f"{label} r{i}": m for label, ms in med.items() for i, m in enumerate(ms)})
    tab["with / without (sum of rounds)"] = sum(med[setting]) / sum(med["default"])
    with pd.option_context("display.float_format", "{:.3g}".format, "display.width", 200):
        print(f"median one-way time (s) without and with {setting}, rounds alternating")
        print(tab.to_string())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpis", default="openmpi,mpich")
    ap.add_argument("--mpi", default=None, help="one MPI only (same as --mpis NAME)")
    ap.add_argument("--nmax", type=int, default=10000)
    ap.add_argument("--per-decade", type=int, default=4)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=2, help="runs per MPI, MPIs alternating")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--runs", default=None, help="keep the run directories here")
    ap.add_argument("--machine-model", default=None, help="machine model for alpha and beta")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="n up to 100, 1 iteration, 1 round; ping-pong of 200 iterations",
    )
    ap.add_argument(
        "--from",
        dest="from_dir",
        default=None,
        help="fit the runs a previous --runs DIR holds instead of measuring",
    )
    ap.add_argument(
        "--compare-env",
        metavar="KEY=VALUE",
        default=None,
        help="instead: alternate runs without and with this environment setting "
        "(e.g. OMPI_MCA_btl_sm_free_list_max=65536) and print the ratios",
    )
    a = ap.parse_args()
    if a.quick:
        a.nmax, a.iters, a.rounds = 100, 1, 1
    mpis = [a.mpi] if a.mpi else [m for m in a.mpis.split(",") if m]
    root = a.runs or tempfile.mkdtemp(prefix="measure-gamma-")
    kw = dict(runs_root=root, echo=False, progress=False)
    if a.compare_env:
        return _compare_env(a.compare_env, a, kw)
    runs, pingpong = {m: [] for m in mpis}, {m: [] for m in mpis}
    if a.from_dir:
        from commscope.runs import expand_run_paths, open_run

        for run in map(open_run, expand_run_paths([a.from_dir])):
            name = run.meta.get("mpi", {}).get("name")
            if name in runs:
                {"hvpingpong": runs, "pingpong": pingpong}.get(run.kind, {}).get(name, []).append(
                    run
                )
    else:
        for _ in range(a.rounds):
            for m in mpis:  # alternating: both MPIs see the same load
                runs[m].append(
                    run_hvpingpong(
                        n_min=1,
                        n_max=a.nmax,
                        per_decade=a.per_decade,
                        sizes=[a.size],
                        iters=a.iters,
                        warmup=1,
                        queues=True,
                        mpi_spec=m,
                        **kw,
                    )
                )
    for m in mpis:
        if runs[m]:
            alpha, beta, src = _alpha_beta(m, a, kw, pingpong[m])
            _report(m, runs[m], alpha, beta, src, a.size)


if __name__ == "__main__":
    main()
