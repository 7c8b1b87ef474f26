"""commscope bench bsp"""

from ..bench.bsp import DEFAULTS, DISTRIBUTIONS, WORKLOADS, run_bsp
from ..errors import InputError
from ..units import parse_size
from .common_options import (
    add_launch_options,
    add_resume_option,
    launch_kwargs,
    number,
    resume_if_asked,
)

EXAMPLES = """\
examples:
  commscope bench bsp --workload ftq --intervals 200            # 10 ms normal spins, 2 ranks
  commscope bench bsp --workload ftq --compute 0.1 --sd 0.001   # the thesis's 100 ms FTQ
  commscope bench bsp --workload fwq --ops 5e6 --ranks 4        # drawn integer work, 4 ranks
  commscope bench bsp --workload dgemm --dim 256 --halo-bytes 1M
  commscope bench bsp --workload spmv --dim 512 --reps 4

Tables: <run>/intervals.parquet (interval, rank, host, workload_s, halo_s, barrier_s,
interval_s, requested_s, requested_ops, checksum, halo_sum, halo_bad) and
<run>/maxima.parquet (interval, max_interval_s, max_workload_s, argmax_rank, wall_s,
max_barrier_s).  Predict larger scales with `commscope predict variability RUN`.
On one node, more ranks than cores oversubscribe it (the launcher notes so in meta.json).
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "bsp",
        help="bulk-synchronous variability harness (FTQ/FWQ/DGEMM/SPMV + halo)",
        description="k intervals of MPI_Barrier, workload [+ 2-D halo], MPI_Barrier "
        "(Dominguez-Trujillo 2021, Sec. 3.3): per-rank interval and barrier "
        "times and the per-interval maximum (MPI_Reduce to rank 0).",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "-w",
        "--workload",
        choices=WORKLOADS,
        default=None,
        help="ftq: spin a drawn time; fwq: a drawn number of additions; dgemm, "
        "spmv: fixed operations of --dim (required)",
    )
    p.add_argument("-n", "--ranks", type=int, default=2, help="MPI ranks (default %(default)s)")
    p.add_argument(
        "-k",
        "--intervals",
        type=int,
        default=DEFAULTS["intervals"],
        help="measured intervals (default %(default)s)",
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=DEFAULTS["warmup"],
        help="unrecorded intervals first (default %(default)s)",
    )
    p.add_argument(
        "--dist",
        choices=DISTRIBUTIONS,
        default=DEFAULTS["dist"],
        help="distribution of the FTQ/FWQ draws, each with the given mean and sd; "
        "exponential is shifted, mean - sd + Exp(sd) (default %(default)s)",
    )
    p.add_argument(
        "--compute",
        type=number,
        default=None,
        metavar="S",
        help="FTQ: mean spin per interval, seconds (default 0.01)",
    )
    p.add_argument(
        "--ops",
        type=number,
        default=None,
        metavar="N",
        help="FWQ: mean integer additions per interval (default 5e6)",
    )
    p.add_argument(
        "--sd",
        type=number,
        default=None,
        help="standard deviation of the draws, in the unit of --compute or --ops "
        "(default a tenth of it)",
    )
    p.add_argument(
        "--dim",
        type=int,
        default=None,
        metavar="N",
        help="DGEMM: N x N matrices (default 256); SPMV: N x N grid (default 512)",
    )
    p.add_argument(
        "--reps",
        type=int,
        default=DEFAULTS["reps"],
        help="DGEMM/SPMV operations per interval (default %(default)s)",
    )
    p.add_argument(
        "--halo-bytes",
        default="0",
        metavar="BYTES",
        help="bytes to each of 4 neighbours per interval, e.g. 1M (default 0: none)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed of the draws (recorded)")
    p.add_argument(
        "--flush-every",
        type=int,
        default=DEFAULTS["flush_every"],
        metavar="F",
        help="write per-rank rows every F intervals (default %(default)s)",
    )
    add_resume_option(p, "interval", kind="bsp")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _run(args):
    if resume_if_asked(args):
        return 0
    if args.workload is None:  # not argparse-required: --resume alone must reach its refusal
        raise InputError("-w/--workload", None, f"required: one of {', '.join(WORKLOADS)}")
    own = {"ftq": "--compute", "fwq": "--ops"}.get(args.workload)  # the option of its draws
    for opt in ("--compute", "--ops", "--sd"):
        if opt != own and getattr(args, opt[2:]) is not None and not (opt == "--sd" and own):
            raise InputError(
                opt,
                None,
                f"{args.workload} does not take {opt}; "
                + (f"use {own}" if own else "it takes --dim and --reps"),
            )
    if own and args.dim is not None:
        raise InputError("--dim", None, f"{args.workload} draws its work; use {own}/--sd")
    mean = args.compute if args.workload == "ftq" else args.ops
    run = run_bsp(
        args.workload,
        ranks=args.ranks,
        intervals=args.intervals,
        warmup=args.warmup,
        dist=args.dist,
        mean=mean,
        sd=args.sd,
        dim=args.dim,
        reps=args.reps,
        halo_bytes=parse_size(args.halo_bytes, "--halo-bytes"),
        seed=args.seed,
        flush_every=args.flush_every,
        **launch_kwargs(args),
    )
    print(run.path)
    return 0
