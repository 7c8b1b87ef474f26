"""Throughput of the matching simulator: queue entries compared per second, per engine.

Run: .venv/bin/python scripts/matchsim_throughput.py [--messages 20000] [--repeat 3] [--quick]

--quick (what `make bench QUICK=1` runs): 2,000 messages, each stream replayed once.

Two streams per engine, each replayed --repeat times (best time kept):
* "reversed": one source, n receives posted in random tag order, then the n messages
  in tag order: about n^2/4 entries compared in the list engines (002's worst kind of
  queue), n in the tag-hashed bins;
* "mixed": 16 sources, 2 communicators, 10 % any-source and 10 % any-tag receives,
  posts and arrivals interleaved at random.
Target (issue 12): at least 1e8 entries compared per second on this machine (the
"reversed" stream, where the queues are long; in "mixed" the queues stay short and
the time per event, not per entry, is what counts). Wall and CPU time are both
shown: on a shared machine the wall-time rate is what other jobs leave over.
"""

import argparse
import time

import numpy as np

from commscope.matching import engines
from commscope.output import print_table

TARGET = 1e8


def reversed_stream(n, rng):
    is_arrival = np.r_[np.zeros(n, np.int8), np.ones(n, np.int8)]
    tag = np.r_[rng.permutation(n), np.arange(n)]
    zeros = np.zeros(2 * n, np.int64)
    return is_arrival, zeros, zeros, tag


def mixed_stream(n, rng):
    m = 2 * n
    is_arrival = rng.integers(0, 2, m).astype(np.int8)
    comm = rng.integers(0, 2, m)
    src = rng.integers(0, 16, m)
    tag = rng.integers(0, 64, m)
    post = is_arrival == 0
    src[post & (rng.random(m) < 0.1)] = -1
    tag[post & (rng.random(m) < 0.1)] = -1
    return is_arrival, comm, src, tag


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bins", type=int, default=engines.DEFAULT_BINS)
    ap.add_argument("--quick", action="store_true", help="2000 messages, 1 repeat")
    args = ap.parse_args()
    if args.quick:
        args.messages, args.repeat = 2000, 1
    engines.load()  # build once, outside the timing
    rng = np.random.default_rng(0)
    streams = {
        "reversed": reversed_stream(args.messages, rng),
        "mixed": mixed_stream(args.messages, rng),
    }
    rows = []
    for name, (arr, comm, src, tag) in streams.items():
        for engine in engines.ENGINES:
            best, cpu, compared = float("inf"), float("inf"), 0
            for _ in range(args.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                *_, compared = engines.run_engine(engine, arr, comm, src, tag, bins=args.bins)
                best = min(best, time.perf_counter() - t0)
                cpu = min(cpu, time.process_time() - c0)
            rows.append(
                {
                    "stream": name,
                    "engine": engine,
                    "events": len(arr),
                    "compared": compared,
                    "seconds": best,
                    "compared_per_s": compared / best,
                    "events_per_s": len(arr) / best,
                    "compared_per_cpu_s": compared / cpu if cpu > 0 else float("nan"),
                    "vs_target": compared / best / TARGET,
                }
            )
    print_table(
        rows,
        title=f"matching simulator, {args.messages} messages "
        f"(target {TARGET:.0e} entries compared per second)",
    )


if __name__ == "__main__":
    main()
