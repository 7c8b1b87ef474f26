"""commscope bench pingpong"""

from ..bench.pingpong import DEFAULTS, run_pingpong
from ..units import parse_size_range
from .common_options import add_launch_options, add_resume_option, launch_kwargs, resume_if_asked

EXAMPLES = """\
examples:
  commscope bench pingpong                       # 1 pair, 1 B .. 4 MiB
  commscope bench pingpong -m 1:64K -i 2000      # small messages, more repetitions
  commscope bench pingpong --pairs 2 -m 64K:4M   # 2 concurrent pairs (max-rate ppn)
  commscope bench pingpong --mpi mpich           # the mpich wheel instead of Open MPI
  commscope bench pingpong --resume runs/20260101T120000Z-pingpong
                                                 # continue a stopped run where it ended

Every repetition's one-way time is kept in <run>/samples.parquet
(size_bytes, pair, rep, time_s, locality, pairs); stdout shows the OSU-style table.
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "pingpong",
        help="OSU-style ping-pong latency, every repetition kept",
        description="Ping-pong between pairs of ranks (rank i <-> i+P/2), one-way time = "
        "round trip / 2, labelled with locality (intra-socket, cross-socket, "
        "inter-node) from where the ranks actually run.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "-m",
        "--message-size",
        metavar="MIN:MAX",
        default="1:4M",
        help="message sizes, powers of two from MIN to MAX (default %(default)s; "
        "K = 1024, KB = 1000)",
    )
    p.add_argument(
        "-i",
        "--iterations",
        type=int,
        default=DEFAULTS["iters"],
        help="repetitions per size up to 8 KiB (default %(default)s)",
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=DEFAULTS["warmup"],
        help="warm-up repetitions up to 8 KiB (default %(default)s)",
    )
    p.add_argument(
        "-I",
        "--large-iterations",
        type=int,
        default=DEFAULTS["large_iters"],
        help="repetitions per size above 8 KiB (default %(default)s)",
    )
    p.add_argument(
        "-X",
        "--large-warmup",
        type=int,
        default=DEFAULTS["large_warmup"],
        help="warm-up repetitions above 8 KiB (default %(default)s)",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="concurrent pairs (2*PAIRS ranks): the ppn of the max-rate model "
        "(default %(default)s)",
    )
    p.add_argument(
        "--hugepages",
        action="store_true",
        help="back the buffers with transparent huge pages (as numpy/mpi4py do for "
        ">= 4 MiB arrays); default: page-aligned, as OSU",
    )
    add_resume_option(p, "size")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _run(args):
    if resume_if_asked(args):
        return 0
    lo, hi = parse_size_range(args.message_size)
    run = run_pingpong(
        pairs=args.pairs,
        min_size=lo,
        max_size=hi,
        iters=args.iterations,
        warmup=args.warmup,
        large_iters=args.large_iterations,
        large_warmup=args.large_warmup,
        hugepages=args.hugepages,
        **launch_kwargs(args),
    )
    print(run.path)
    return 0
