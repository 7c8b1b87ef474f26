#!/usr/bin/env python
"""Benchmarks and paper comparisons for thread arrivals and the partitioned model.

1. Seconds for the full thread-arrival analysis (Marts et al. 2023, Sec. 4) at the paper's
   size: 10 trials x 8 ranks x 200 iterations x 48 threads = 768,000 samples.
2. Paper value vs commscope value for the partitioned-communication model
   (Dominguez-Trujillo 2021, Examples 4.2.1/4.3.1 and the Fig. 4.4/4.5 text).
   "thesis MiB/s" is the thesis's (wrong-way) conversion, MB/s x 1.048576; commscope's
   correct MiB/s (bytes/s / 2^20) is printed next to it.

usage: .venv/bin/python scripts/bench_arrivals.py [--repeat N] [--quick]

--quick (what `make bench QUICK=1` runs): the analysis of 1 trial (76,800 samples) once,
and the paper table with 200 Monte Carlo replicas.
"""

import argparse
import time

import numpy as np
import pandas as pd

from commscope.paths import DATA_DIR
from commscope.models import partitioned as pm
from commscope.models.osu import load_osu
from commscope.output import print_table
from commscope.stats import arrivals

OSU = str(DATA_DIR / "osu_internode_lassen_quartz.csv")
MIB = pm.MIB


def synthetic_arrivals(seed=0, trials=10):
    """Paper-sized data: normal threads, with 5% of process-iterations given a laggard."""
    rng = np.random.default_rng(seed)
    idx = np.indices((trials, 8, 200, 48)).reshape(4, -1)
    t = rng.normal(0.025, 2e-4, idx.shape[1])
    n = trials * 8 * 200
    lag = rng.random(n) < 0.05
    t.reshape(n, 48)[lag, rng.integers(0, 48, lag.sum())] += 3e-3
    return pd.DataFrame(
        {
            "trial": idx[0],
            "rank": idx[1],
            "iteration": idx[2],
            "thread": idx[3],
            "compute_time_s": t,
        }
    )


def bench_arrivals(repeat, trials=10):
    df = synthetic_arrivals(trials=trials)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        rep = arrivals.analyse_arrivals(df)
        times.append(time.perf_counter() - t0)
    print(
        f"# thread-arrival analysis, {len(df):,} samples "
        f"({len(rep.process_iterations):,} process-iterations x 48 threads)"
    )
    print(f"analyse_arrivals_s  best {min(times):.3f}  median {np.median(times):.3f}  (n={repeat})")
    print(f"laggard fraction {rep.summary.laggard_fraction[0]:.4f} (injected ~0.05)")
    print()


def _thesis_mibps(bps):
    return bps / 1e6 * 1.048576


def _region(t, col="model_bandwidth_Bps"):
    better = t[t[col] > t["single_bandwidth_Bps"]]["size_bytes"] / MIB
    return f"{better.min():g}-{better.max():g}" if len(better) else "none"


def paper_table(replicas=2000, mc_replicas=20000):
    rows = []
    link = pm.ConstantLink(5e-6, 10_000e6)
    s = pm.model_single_send(link, [16e6]).iloc[0]
    p = pm.model_partitioned(link, 4, [16e6], 0.1, variability=0.1).iloc[0]
    ex = [
        ("Ex 4.2.1 last thread (us)", 101_121, p.last_thread_s * 1e6),
        ("Ex 4.2.1 first thread (us)", 98_878, (p.last_thread_s - p.overlap_s) * 1e6),
        ("Ex 4.2.1 single T_send (us)", 1_605, s.single_elapsed_s * 1e6),
        ("Ex 4.2.1 single BW (MB/s)", 9_969, s.single_bandwidth_Bps / 1e6),
        ("Ex 4.2.1 single BW (MiB/s)", 10_453, s.single_bandwidth_Bps / MIB),
        ("Ex 4.3.1 T_message (us)", 405, p.message_s * 1e6),
        ("Ex 4.3.1 M_overlap", 3, p.messages_overlapped),
        ("Ex 4.3.1 T_extra (us)", 405, p.elapsed_s * 1e6),
        ("Ex 4.3.1 BW (MB/s)", 39_506, p.bandwidth_Bps / 1e6),
        ("Ex 4.3.1 BW (MiB/s)", 41_425, p.bandwidth_Bps / MIB),
    ]
    for name, paper, ours in ex:
        rows.append(
            {
                "quantity": name,
                "paper": paper,
                "commscope": round(ours, 1),
                "note": "thesis x1.048576 slip; corrected" if "MiB" in name else "",
            }
        )

    sizes = pm.buffer_sweep_bytes()
    figs = [  # machine, threads, variability, paper peak size MB, peak thesis-MiB/s, region
        ("lassen", 20, 0.10, 18, 115_000, "0.56-72"),
        ("lassen", 20, 0.25, 144, 186_000, "0.28-4608"),
        ("quartz", 18, 0.10, 9, 54_200, "1.13-72"),
        ("quartz", 18, 0.25, None, None, "?-2304"),
    ]
    for machine, threads, var, pk_size, pk_bw, region in figs:
        t = pm.compare_partitioned(
            load_osu(OSU, machine),
            threads,
            sizes,
            0.1,
            variability=var,
            monte_carlo=True,
            replicas=replicas,
            seed=1,
        )
        i = t["model_bandwidth_Bps"].idxmax()
        j = t["mc_bandwidth_Bps"].idxmax()
        tag = f"{machine} {threads}thr {var:.0%}"
        if pk_size is not None:
            rows.append(
                {
                    "quantity": f"{tag} peak size (MiB)",
                    "paper": pk_size,
                    "commscope": t.size_bytes[i] / MIB,
                    "note": f"Monte Carlo peak at {t.size_bytes[j] / MIB:g}",
                }
            )
            rows.append(
                {
                    "quantity": f"{tag} peak BW (thesis MiB/s)",
                    "paper": pk_bw,
                    "commscope": round(_thesis_mibps(t.model_bandwidth_Bps[i])),
                    "note": f"correct MiB/s {t.model_bandwidth_Bps[i] / MIB:,.0f}; "
                    f"MC {t.mc_bandwidth_Bps[j] / MIB:,.0f}",
                }
            )
        if machine == "lassen" and var == 0.25:
            k = int(np.argmin(np.abs(sizes - 72 * MIB)))
            rows.append(
                {
                    "quantity": f"{tag} BW at 72 MB (thesis MiB/s)",
                    "paper": 136_000,
                    "commscope": round(_thesis_mibps(t.model_bandwidth_Bps[k])),
                    "note": "",
                }
            )
        rows.append(
            {
                "quantity": f"{tag} beats single send (MiB)",
                "paper": region,
                "commscope": _region(t),
                "note": f"Monte Carlo {_region(t, 'mc_bandwidth_Bps')}",
            }
        )
    print_table(
        rows,
        ["quantity", "paper", "commscope", "note"],
        title="partitioned model: paper vs commscope (T_wait = 0, OSU clamped outside table)",
    )
    t0 = time.perf_counter()
    pm.simulate_partitioned(
        load_osu(OSU, "lassen"),
        20,
        sizes,
        pm.thread_time_distribution(0.1, 1e-3),
        replicas=mc_replicas,
        seed=0,
    )
    print(
        f"\nmonte_carlo_s (20 threads, 15 sizes, {mc_replicas} replicas): "
        f"{time.perf_counter() - t0:.3f}"
    )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="1 trial analysed once; 200 (2000) Monte Carlo replicas",
    )
    args = ap.parse_args()
    if args.quick:
        bench_arrivals(1, trials=1)
        paper_table(replicas=200, mc_replicas=2000)
    else:
        bench_arrivals(args.repeat)
        paper_table()


if __name__ == "__main__":
    main()
