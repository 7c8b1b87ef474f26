"""commscope bench threads"""

import sys

from ..bench.threads import (
    COMPUTE_MODES,
    DEFAULTS,
    DISTRIBUTIONS,
    compare_ompt_with_listing1,
    recovery_table,
    run_threads,
    summarize_run,
)
from ..output import format_table
from ..units import format_seconds
from .common_options import (
    add_launch_options,
    add_resume_option,
    launch_kwargs,
    number,
    resume_if_asked,
)

EXAMPLES = """\
examples:
  commscope bench threads --ranks 2 --threads 2 --iterations 50 --trials 1 \\
      --compute 1e-3 --dist normal --sd 1e-4 --laggard-prob 0.02 --laggard-extra 5e-3 --seed 1
  commscope bench threads --threads 4 --compute-mode sleep   # threads > cores: sleep, not spin
  commscope bench threads --ompt     # also time every thread through OMPT, compare

Tables in the run directory: compute.parquet (trial, rank, iteration, region, thread,
start_s, end_s, compute_time_s: the per-thread times of Listing 1 of Marts et al.) and
injected.parquet (trial, rank, iteration, thread, intended_time_s, laggard: the ground
truth).  Analyse with `commscope stats arrivals <run>/compute.parquet`; the run's
laggards and reclaimable time, recovered vs injected, are printed on stderr.
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "threads",
        help="per-thread arrival times of an OpenMP phase with known imbalance",
        description="MPI+OpenMP steps timed as Marts et al. (2023) Listing 1 (barrier, start, "
        "omp for nowait, end) with per-thread work drawn from a distribution plus "
        "injected laggards; the intended times are kept as ground truth.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "-n", "--ranks", type=int, default=DEFAULTS["ranks"], help="MPI ranks (default %(default)s)"
    )
    p.add_argument(
        "--threads",
        type=int,
        default=DEFAULTS["threads"],
        help="OpenMP threads per rank (default %(default)s)",
    )
    p.add_argument(
        "-i",
        "--iterations",
        type=int,
        default=DEFAULTS["iterations"],
        help="timed iterations per trial (default %(default)s)",
    )
    p.add_argument(
        "-t", "--trials", type=int, default=DEFAULTS["trials"], help="trials (default %(default)s)"
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=DEFAULTS["warmup"],
        help="untimed iterations before each trial (default %(default)s)",
    )
    p.add_argument(
        "--compute",
        dest="work",
        type=number,
        default=DEFAULTS["work"],
        metavar="S",
        help="mean compute time per thread and iteration, seconds (default %(default)s)",
    )
    p.add_argument(
        "--dist",
        choices=DISTRIBUTIONS,
        default=DEFAULTS["dist"],
        help="distribution of the compute times, mean --compute and sd --sd (default %(default)s)",
    )
    p.add_argument(
        "--sd",
        type=number,
        default=DEFAULTS["sd"],
        metavar="S",
        help="standard deviation of the compute times, seconds (default %(default)s)",
    )
    p.add_argument(
        "--laggard-prob",
        type=number,
        default=DEFAULTS["laggard_prob"],
        metavar="P",
        help="probability that a thread-iteration is a laggard (default %(default)s)",
    )
    p.add_argument(
        "--laggard-extra",
        type=number,
        default=DEFAULTS["laggard_extra"],
        metavar="S",
        help="extra time of a laggard, seconds (default %(default)s)",
    )
    p.add_argument(
        "--seed", type=int, default=DEFAULTS["seed"], help="seed of all draws (default %(default)s)"
    )
    p.add_argument(
        "--compute-mode",
        dest="compute",
        choices=COMPUTE_MODES,
        default=DEFAULTS["compute"],
        help="spin (busy, holds the core) or sleep (frees it) (default %(default)s)",
    )
    p.add_argument("--region", default=DEFAULTS["region"], help="region name (default %(default)s)")
    p.add_argument(
        "--threshold",
        type=number,
        default=1e-3,
        metavar="S",
        help="laggard threshold (max - median) for the summary (default %(default)s)",
    )
    p.add_argument(
        "--ompt",
        action="store_true",
        help="also time every thread through the OMPT tool (table threads) and "
        "print OMPT - Listing 1 per thread and iteration",
    )
    add_resume_option(p, "iteration", kind="threads")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _run(args):
    if resume_if_asked(args):
        return 0
    run = run_threads(
        ranks=args.ranks,
        threads=args.threads,
        iterations=args.iterations,
        trials=args.trials,
        warmup=args.warmup,
        work=args.work,
        dist=args.dist,
        sd=args.sd,
        laggard_prob=args.laggard_prob,
        laggard_extra=args.laggard_extra,
        seed=args.seed,
        compute=args.compute,
        region=args.region,
        ompt=args.ompt,
        **launch_kwargs(args),
    )
    if not args.quiet:
        summary = summarize_run(run, args.threshold)
        print(format_table(recovery_table(summary), title="recovered vs injected"), file=sys.stderr)
        print(
            f"# compute - intended: mean {format_seconds(summary['error_mean_s'])}, "
            f"p95 {format_seconds(summary['error_p95_s'])}, "
            f"max {format_seconds(summary['error_max_s'])}",
            file=sys.stderr,
        )
        if args.ompt:
            _, d = compare_ompt_with_listing1(run)
            print(
                f"# OMPT - Listing 1 per thread-iteration ({d['samples']} samples, "
                f"{d['missing']} missing): median {format_seconds(d['median_s'])}, "
                f"p99 {format_seconds(d['p99_s'])}, max {format_seconds(d['max_s'])}",
                file=sys.stderr,
            )
    print(run.path)
    return 0
