"""commscope bench partitioned"""

from ..bench.partitioned import (
    COMPUTE_MODES,
    DISTRIBUTIONS,
    METHODS,
    default_sizes,
    run_partitioned,
)
from ..units import parse_size_list
from .common_options import (
    add_launch_options,
    add_resume_option,
    launch_kwargs,
    number,
    resume_if_asked,
)

EXAMPLES = """\
examples:
  commscope bench partitioned                                  # 2 threads, 10 ms, 72 KiB .. 72 MiB
  commscope bench partitioned --threads 2 --compute 0.01 --variability 0.1 \\
      --sizes 288K,1152K,4608K --runs-per-size 5
  commscope bench partitioned --threads 4 --sigma 0.002 --dist uniform --methods isend,single
  commscope bench partitioned --mpi mpich --compute-mode hybrid
  commscope bench partitioned --calibrate --compute 0.02    # the model's terms, for `fit`

Thread compute times have mean --compute seconds and standard deviation --sigma, or
--variability V in the thesis's convention sigma = compute * V**2 ("10 %" of 100 ms is
1 ms).  Methods: partitioned (MPI-4 MPI_Psend_init / MPI_Pready; skipped with a note
when the MPI lacks them), isend (one MPI_Isend per partition from its thread,
MPI_THREAD_MULTIPLE) and single (join, then one message).

Tables: <run>/samples.parquet (method, size_bytes, partitions, run, elapsed_s,
effective_bandwidth_Bps, sender_elapsed_s, last_ready_s, mismatches, ...),
<run>/compute.parquet (run, method, size_bytes, thread, requested_s, actual_s) and
<run>/methods.parquet (which methods ran).  elapsed_s runs from the slowest thread's
ready time to the receiver's completion (eq. 4.3: bandwidth = size / elapsed).
"""


def _sizes(text):
    return None if text is None else parse_size_list(text, "--sizes")


def register(registry):
    default = ",".join(f"{s // 1024}K" for s in (default_sizes()[0], default_sizes()[-1]))
    p = registry.group_command(
        "bench",
        "partitioned",
        help="partitioned / early-bird sends vs a single send (Dominguez-Trujillo 2021, Algorithm 2)",
        description="Two ranks: the sender's threads compute for random times and make their "
        "partition of a buffer ready; measured is the time from the last thread's "
        "completion to the end of the transfer at the receiver, and the effective "
        "bandwidth size / elapsed (Dominguez-Trujillo 2021, eq. 4.3), for MPI-4 partitioned calls, one "
        "Isend per partition, and the single-send baseline.",
        epilog=EXAMPLES,
    )
    w = p.add_argument_group("workload")
    w.add_argument(
        "--threads", type=int, default=2, help="sender threads = partitions (default %(default)s)"
    )
    w.add_argument(
        "--compute",
        type=number,
        default=0.01,
        metavar="S",
        help="mean compute time per thread, seconds (default %(default)s)",
    )
    sd = w.add_mutually_exclusive_group()
    sd.add_argument(
        "--variability",
        type=number,
        default=None,
        metavar="V",
        help="sigma = compute * V**2, the thesis's convention (default 0.1)",
    )
    sd.add_argument(
        "--sigma",
        type=number,
        default=None,
        metavar="S",
        help="standard deviation of the compute time, seconds",
    )
    w.add_argument(
        "--dist",
        default="normal",
        choices=DISTRIBUTIONS,
        help="compute-time distribution (default %(default)s)",
    )
    w.add_argument(
        "--compute-mode",
        default="sleep",
        choices=COMPUTE_MODES,
        help="sleep to a deadline (default, as the thesis), spin on the clock, or "
        "hybrid (sleep then spin the last 200 us)",
    )
    w.add_argument("--seed", type=int, default=1, help="seed of the draws (default 1)")
    s = p.add_argument_group("sweep")
    s.add_argument(
        "--sizes",
        metavar="S1,S2,...",
        default=None,
        help=f"buffer sizes, comma-separated, A:B doubling (64K, 18M, ...); default 18*2^j MiB "
        f"for j = -8..2 ({default})",
    )
    s.add_argument(
        "--runs-per-size",
        type=int,
        default=5,
        help="recorded runs per size and method (default %(default)s)",
    )
    s.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=1,
        help="unrecorded warm-up runs per size and method (default %(default)s)",
    )
    s.add_argument(
        "--methods", default=",".join(METHODS), help="comma-separated subset of %(default)s"
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="measure the partitioned model's terms (per-partition time, single-send "
        "time, MPI_Pready cost, progress) for `commscope fit`: threads finish at "
        "fixed staggered times (--sigma: half the spread, default compute/2)",
    )
    p.add_argument(
        "--ompt",
        action="store_true",
        help="also time the sender's threads through OMPT (table threads, the "
        "input of `commscope advise`)",
    )
    add_resume_option(p, "size")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _run(args):
    if resume_if_asked(args):
        return 0
    run = run_partitioned(
        threads=args.threads,
        compute_s=args.compute,
        variability=args.variability,
        sigma_s=args.sigma,
        dist=args.dist,
        sizes=_sizes(args.sizes),
        runs_per_size=args.runs_per_size,
        warmup=args.warmup,
        methods=[m.strip() for m in args.methods.split(",") if m.strip()],
        compute_mode=args.compute_mode,
        seed=args.seed,
        ompt=args.ompt,
        calibrate=args.calibrate,
        **launch_kwargs(args),
    )
    print(run.path)
    return 0
