"""commscope bench hvpingpong"""

from ..bench.hvpingpong import DEFAULTS, ORDERS, run_hvpingpong
from ..errors import InputError
from ..units import parse_size, parse_size_list
from .common_options import add_launch_options, add_resume_option, launch_kwargs, resume_if_asked

EXAMPLES = """\
examples:
  commscope bench hvpingpong                          # n = 1..10000, 8 B, both orders
  commscope bench hvpingpong --messages 1:1000 --sizes 8,1K   # two fixed sizes
  commscope bench hvpingpong --total-bytes 1M         # constant total, s = 1 MiB / n (Bienz et al. 2018, Fig. 4)
  commscope bench hvpingpong --order reversed -i 5    # worst-case posting order only
  commscope bench hvpingpong --contention --hosts a,b,c,d --ranks-per-node 16
                                                      # Bienz et al. 2018, Fig. 6: node i -> node i + N/2

Every repetition's one-way time (half the round trip) is kept in
<run>/samples.parquet (n_messages, size_bytes, order, pair, rep, time_s, locality,
pairs). --queues adds <run>/queues.parquet: the ob1 queue lengths each rank saw
around its receive phase. `commscope fit` fits the queue-search model from it
(scripts/measure_gamma.py prints the residuals per depth).
--contention needs 4 or more nodes (an even number): on one node it stops with an
explanation.
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "hvpingpong",
        help="HighVolumePingPong (Bienz et al. 2018, Alg. 1): n messages, ordered vs reversed receives",
        description="Pairs of ranks exchange n messages of s bytes each way; receives are "
        "posted in send order (ordered, O(n) queue search) or reversed (O(n^2)). "
        "Every repetition's one-way time is kept.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--messages",
        metavar="MIN:MAX",
        default="1:10000",
        help="message counts, log grid from MIN to MAX (default %(default)s)",
    )
    p.add_argument(
        "--per-decade",
        type=int,
        default=DEFAULTS["per_decade"],
        help="grid points per decade of --messages (default %(default)s)",
    )
    p.add_argument(
        "--counts",
        metavar="N1,N2,...",
        default=None,
        help="explicit message counts instead of --messages",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--sizes",
        metavar="S1,S2,...",
        default="8",
        help="fixed message sizes, every count with every size (default %(default)s; "
        "K = 1024, KB = 1000)",
    )
    g.add_argument(
        "--total-bytes",
        metavar="B",
        default=None,
        help="constant total bytes per direction: s = B / n",
    )
    p.add_argument(
        "--order",
        default="ordered,reversed",
        metavar="LIST",
        help="ordered, reversed or both (default %(default)s)",
    )
    p.add_argument(
        "-i",
        "--iterations",
        type=int,
        default=DEFAULTS["iters"],
        help="timed repetitions per (n, s, order) (default %(default)s)",
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=DEFAULTS["warmup"],
        help="warm-up repetitions (default %(default)s)",
    )
    p.add_argument(
        "--min-messages",
        type=int,
        default=DEFAULTS["min_messages"],
        metavar="M",
        help="time at least M messages per cell: a cell of n messages gets "
        "max(ITERATIONS, M/n) repetitions, so few-message cells, whose times "
        "fall in two modes, get a stable median (default %(default)s; 0: "
        "ITERATIONS everywhere)",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="concurrent pairs on this node, 2*PAIRS ranks (default %(default)s)",
    )
    p.add_argument(
        "--contention",
        action="store_true",
        help="multi-node layout of Bienz et al. 2018, Fig. 6: node i sends to node i + N/2 "
        "(needs --hosts or a Slurm allocation with >= 4 nodes)",
    )
    p.add_argument(
        "--queues",
        action="store_true",
        help="one more, untimed repetition per cell reading Open MPI's ob1 queue-length "
        "pvars around each receive phase (table queues; NaN under other MPIs)",
    )
    add_resume_option(p, "message count")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _int_list(text, option):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(
            option, None, f"expected comma-separated whole numbers, got {text!r}"
        ) from None


def _run(args):
    if resume_if_asked(args):
        return 0
    lo, sep, hi = args.messages.partition(":")
    try:
        n_min, n_max = (int(lo), int(hi)) if sep else (1, int(lo))
    except ValueError:
        raise InputError(
            "--messages", None, f"expected MIN:MAX message counts, got {args.messages!r}"
        ) from None
    counts = _int_list(args.counts, "--counts") if args.counts else None
    sizes = parse_size_list(args.sizes, "--sizes", ranges=False)
    total = parse_size(args.total_bytes, "--total-bytes") if args.total_bytes else None
    orders = [o for o in args.order.split(",") if o.strip()]
    for o in orders:
        if o.strip().lower() not in ORDERS:
            raise InputError("--order", None, f"expected ordered, reversed or both, got {o!r}")
    run = run_hvpingpong(
        pairs=args.pairs,
        n_min=n_min,
        n_max=n_max,
        per_decade=args.per_decade,
        counts=counts,
        sizes=sizes,
        total_bytes=total,
        orders=orders,
        iters=args.iterations,
        warmup=args.warmup,
        min_messages=args.min_messages,
        contention=args.contention,
        queues=args.queues,
        **launch_kwargs(args),
    )
    print(run.path)
    return 0
