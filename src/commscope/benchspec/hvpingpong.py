"""HighVolumePingPong (Bienz et al. 2018, Alg. 1): native/bench/hvpingpong.c."""

from .spec import Benchmark, Check, Option, Points, StudyRun, Table

ORDERS = ("ordered", "reversed")
MAX_COUNT = 1 << 20  # most messages per exchange
MAX_COUNTS = 256  # most message counts (and sizes) in one run


def repetitions(params, n):
    """Timed repetitions of a cell of ``n`` messages: max(iters, ceil(min_messages / n)),
    as cs_hvpingpong counts them (``min_messages`` is absent in runs made before it)."""
    return max(params["iters"], -(-params.get("min_messages", 0) // n))


def planned_counts(params):
    """``((n,), rows)`` in measuring order: each count with every size and order."""
    cells = len(params["sizes"] or [None]) * len(params["orders"]) * params["pairs"]
    return [((n,), cells * repetitions(params, n)) for n in params["counts"]]


def _resume_from(params, first):
    return dict(
        params,
        counts=[n for n in params["counts"] if n >= first[0]],
        min_messages=params.get("min_messages", 0),  # runs made before it timed ITERATIONS
    )


def study(quick, pairs):
    """Ordered and reversed receives for the queue-search fit (3 depths per decade: enough
    for a form with a breakpoint, 2 depths each side; --queues: the ob1 queue lengths
    beside it), and a held-out run at the same depths for gamma's test."""
    grid = dict(n_min=1, n_max=300 if quick else 10000, per_decade=3, sizes=(8,), warmup=1)
    return [
        StudyRun(
            "hvpingpong",
            dict(grid, iters=2 if quick else 5, queues=True),
            "fit",
            "HighVolumePingPong, ordered and reversed receives",
        ),
        StudyRun("hvpingpong-heldout", dict(grid, iters=1 if quick else 3), "held-out"),
    ]


BENCHMARK = Benchmark(
    name="hvpingpong",
    summary="HighVolumePingPong (Bienz et al. 2018, Alg. 1): n messages, ordered vs reversed "
    "receives",
    description="Pairs of ranks exchange n messages of s bytes each way; receives are "
    "posted in send order (ordered, O(n) queue search) or reversed (O(n^2)). "
    "Every repetition's one-way time is kept.",
    options=(
        Option(
            "messages",
            "range",
            "message counts, log grid from MIN to MAX",
            default="1:10000",
            params=("n_min", "n_max"),
            metavar="MIN:MAX",
            native=False,
            recorded=("counts",),  # the grid is recorded as the counts it makes
            required=False,
        ),
        Option(
            "per-decade",
            "int",
            "grid points per decade of --messages",
            default=4,
            minimum=1,
            native=False,
            recorded=("counts",),  # the grid is recorded as the counts it makes
            required=False,
        ),
        Option(
            "counts",
            "ints",
            "explicit message counts instead of --messages",
            metavar="N1,N2,...",
            max_items=MAX_COUNTS,
            required=False,
        ),
        Option(
            "sizes",
            "sizes",
            "fixed message sizes, every count with every size (K = 1024, KB = 1000)",
            default="8",
            minimum=0,
            unit="bytes",
            metavar="S1,S2,...",
            max_items=MAX_COUNTS,
            required=False,
        ),
        Option(
            "total-bytes",
            "size",
            "constant total bytes per direction: s = B / n (instead of --sizes)",
            minimum=1,
            unit="bytes",
            metavar="B",
            required=False,
        ),
        Option(
            "order",
            "choices",
            "ordered, reversed or both",
            default="ordered,reversed",
            params=("orders",),
            choices=ORDERS,
            metavar="LIST",
            required=False,
        ),
        Option(
            "iterations",
            "int",
            "timed repetitions per (n, s, order)",
            default=10,
            short="i",
            params=("iters",),
            minimum=1,
            required=False,
        ),
        Option(
            "warmup",
            "int",
            "warm-up repetitions",
            default=2,
            short="x",
            minimum=0,
            required=False,
        ),
        Option(
            "min-messages",
            "int",
            "time at least M messages per cell: a cell of n messages gets "
            "max(ITERATIONS, M/n) repetitions, so few-message cells, whose times fall in two "
            "modes, get a stable median (0: ITERATIONS everywhere)",
            default=1000,
            minimum=0,
            metavar="M",
            required=False,
        ),
        Option(
            "pairs",
            "int",
            "concurrent pairs on this node, 2*PAIRS ranks",
            default=1,
            minimum=1,
            native=False,
        ),
        Option(
            "contention",
            "flag",
            "multi-node layout of Bienz et al. 2018, Fig. 6: node i sends to node i + N/2 "
            "(needs --hosts or a Slurm allocation with >= 4 nodes)",
            required=False,
        ),
        Option(
            "queues",
            "flag",
            "one more, untimed repetition per cell reading Open MPI's ob1 queue-length "
            "pvars around each receive phase (table queues; NaN under other MPIs)",
            required=False,
        ),
    ),
    tables={
        "samples": Table(
            columns={
                "n_messages": "i",
                "size_bytes": "i",
                "order": "O",
                "pair": "i",
                "rep": "i",
                "time_s": "f",
                "locality": "O",
                "pairs": "i",
            },
            key=("n_messages", "size_bytes", "order", "pair", "rep"),
            checks=(Check("time_s", "positive", lambda d: d["time_s"] <= 0),),
        ),
        # --queues: ob1 queue lengths around each rank's receive phase (NaN without the pvars)
        "queues": Table(
            columns={
                "n_messages": "i",
                "size_bytes": "i",
                "order": "O",
                "rank": "i",
                "initiator": "i",
                "unexpected_before_post": "n",
                "posted_after_post": "n",
                "unexpected_after_post": "n",
            },
            key=("n_messages", "size_bytes", "order", "rank"),
        ),
    },
    # recorded: pairs, counts (--messages made into counts), sizes (null with
    # --total-bytes), total_bytes, orders, iters, warmup, min_messages, contention, queues
    # and the layout in words; runs of every commscope since the first record pairs
    more_parameters={
        "properties": {
            "sizes": {
                "anyOf": [
                    {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    {"type": "null"},
                ]
            },
            "layout": {"type": "string"},
        },
    },
    points=Points("samples", ("n_messages",), "message counts", planned_counts),
    resume_from=_resume_from,
    ranks=lambda params: 2 * params["pairs"],
    report_section="hvpingpong",
    study=study,
    study_order=20,
    constants={"MAX_COUNT": MAX_COUNT, "MAX_COUNTS": MAX_COUNTS},
    examples="""\
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
""",
)
