"""commscope bench mtmatch"""

from ..bench.mtmatch import config_summary, run_mtmatch, sweep_configs
from ..errors import InputError
from ..output import print_table
from ..units import parse_size
from .common_options import add_launch_options, add_resume_option, launch_kwargs, resume_if_asked

EXAMPLES = """\
examples:
  commscope bench mtmatch --points 27 --decomp 2x2x2          # M_t = 152, T_r = 8, T_s = 56
  commscope bench mtmatch --points 27 --decomp 4x4x2 --trials 10 --warmup 2
  commscope bench mtmatch --points naive --k 8 --decomp 4     # 4 threads x 8 messages
  commscope bench mtmatch --points 7 --sweep 1,2,4,8,16       # cube-like decompositions
  commscope bench mtmatch --points 27 --sweep 1,2,4,8 --shape linear   # 1x1xn (Schonbein et al. 2018, Fig. 4)
  commscope bench mtmatch --resume runs/20260101T120000Z-mtmatch   # a stopped sweep, from its first incomplete configuration

Rank 0's receiving threads pre-post M_t tagged receives, rank 1's sending threads
send them after a barrier (MPI_THREAD_MULTIPLE); rank 0 times the queue drain.
<run>/trials.parquet: drain_time_s, the MPICH-style linked-list search depth computed
from the recorded orders, and Open MPI's ob1 queue lengths (NaN under other MPIs);
<run>/order.parquet: every message's post and send sequence numbers.
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "mtmatch",
        help="multithreaded message matching: queue drain and search depth (Schonbein et al. 2018, Sec. 4.1)",
        description="Threads of a stencil decomposition pre-post and send their own halo "
        "messages; the message counts per thread come from the stencil model "
        "(commscope model stencil).",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--points",
        metavar="5|7|9|27|naive",
        help="stencil (2-D: 5, 9; 3-D: 7, 27) or naive (k messages per thread); "
        "required unless --resume",
    )
    p.add_argument(
        "--decomp",
        metavar="LxL[xL]",
        default=None,
        help="thread decomposition of the process's domain, e.g. 4x4x2",
    )
    p.add_argument("--k", type=int, default=None, help="messages per thread (naive only)")
    p.add_argument(
        "--sweep",
        metavar="T1,T2,...",
        default=None,
        help="instead of --decomp: threads per process to sweep (one job)",
    )
    p.add_argument(
        "--shape",
        choices=("cube", "linear"),
        default="cube",
        help="decompositions of a sweep: most cube-like, or 1x1xT (3-D) (default %(default)s)",
    )
    p.add_argument(
        "-t", "--trials", type=int, default=10, help="recorded trials (default %(default)s)"
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=2,
        help="unrecorded warm-up trials first (default %(default)s)",
    )
    p.add_argument("-s", "--size", default="8", help="message size (default %(default)s bytes)")
    add_resume_option(p, "configuration")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _run(args):
    if resume_if_asked(args):
        return 0
    if args.points is None:  # not argparse-required: --resume alone needs none
        raise InputError("--points", None, "required (5, 7, 9, 27 or naive)")
    if (args.decomp is None) == (args.sweep is None):
        raise InputError("--decomp", None, "give exactly one of --decomp and --sweep")
    configs = None
    if args.sweep is not None:
        try:
            counts = [int(v) for v in args.sweep.split(",") if v.strip()]
        except ValueError:
            raise InputError(
                "--sweep", None, f"expected thread counts like 1,2,4,8, got {args.sweep!r}"
            ) from None
        if not counts:
            raise InputError("--sweep", None, "no thread counts given")
        configs = sweep_configs(args.points, counts, args.shape, args.k)
    run = run_mtmatch(
        args.points,
        args.decomp,
        args.k,
        configs=configs,
        trials=args.trials,
        warmup=args.warmup,
        size_bytes=parse_size(args.size, "--size"),
        **launch_kwargs(args),
    )
    if not args.quiet:
        summary = config_summary(run.table("trials"))
        print_table(
            summary[
                [
                    "points",
                    "decomposition",
                    "threads_recv",
                    "threads_send",
                    "messages",
                    "drain_time_s",
                    "avg_search_depth",
                    "max_search_depth",
                    "ob1_posted_recvq_length",
                    "oversubscribed",
                ]
            ],
            title="mean over trials (search depth: MPICH-style list, entries passed over)",
        )
    print(run.path)
    return 0
