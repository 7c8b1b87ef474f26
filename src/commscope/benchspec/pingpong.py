"""Ping-pong (004 Sec. 2; OSU latency conventions): native/bench/pingpong.c."""

from ..errors import InputError
from .spec import Benchmark, Check, Option, Points, StudyRun, Table

LARGE_MESSAGE = 8192  # bytes; above it the large-message repetition counts apply (OSU)


def planned_sizes(params):
    """``((size,), rows)`` in measuring order: 0 (if asked), then powers of two."""
    out, s = [], params["min_size"]
    while s <= params["max_size"]:
        large = s > LARGE_MESSAGE
        out.append(((s,), params["pairs"] * params["large_iters" if large else "iters"]))
        s = s * 2 if s else 1
    return out


def _rules(params):
    if params["min_size"] > params["max_size"]:
        raise InputError(
            "-m", None, f"need MIN <= MAX, got {params['min_size']}:{params['max_size']}"
        )
    if params["max_size"] >= 1 << 31:  # MPI counts are C ints
        raise InputError(
            "-m", None, f"MAX must be below 2 GiB (2147483648 bytes), got {params['max_size']}"
        )


#: The held-out single-pair ping-pong of the study (not fitted from: the postal model's test).
HELD_OUT = "pingpong-1pair-heldout"
# up to 16 MiB: on this machine ping-pong loses half its bandwidth between 2 and 4 MiB
# (the buffers leave the caches); 4, 8 and 16 MiB let the fit model that regime
SINGLE_PAIR_MAX = 16 << 20


def study(quick, pairs):
    """One pair over every size and ``pairs`` concurrent pairs (the max-rate ppn) for the
    fit; a second single pair the fit never sees, for "Do the models hold here?"."""
    reps = (
        dict(iters=100, warmup=10, large_iters=10, large_warmup=2)
        if quick
        else dict(iters=1000, warmup=100, large_iters=100, large_warmup=10)
    )
    fewer = dict(reps, iters=reps["iters"] // 4, large_iters=reps["large_iters"] // 2)
    single = dict(pairs=1, min_size=1, max_size=SINGLE_PAIR_MAX)
    return [
        StudyRun(
            "pingpong-1pair",
            dict(single, **reps),
            "fit",
            f"ping-pong, 1 pair, 1 B .. 16 MiB; then {pairs} concurrent pairs, 16 KiB .. 4 MiB",
        ),
        StudyRun(
            f"pingpong-{pairs}pairs",
            dict(pairs=pairs, min_size=16 << 10, max_size=4 << 20, **fewer),
            "fit",
        ),
        StudyRun(HELD_OUT, dict(single, **fewer), "held-out"),
    ]


BENCHMARK = Benchmark(
    name="pingpong",
    summary="OSU-style ping-pong latency, every repetition kept",
    description="Ping-pong between pairs of ranks (rank i <-> i+P/2), one-way time = "
    "round trip / 2, labelled with locality (intra-socket, cross-socket, inter-node) from "
    "where the ranks actually run.",
    options=(
        Option(
            "message-size",
            "range",
            "message sizes, powers of two from MIN to MAX (K = 1024, KB = 1000); "
            "MAX below 2 GiB (MPI counts are C ints)",
            default="1:4M",
            short="m",
            params=("min_size", "max_size"),
            minimum=0,
            unit="bytes",
            metavar="MIN:MAX",
        ),
        Option(
            "iterations",
            "int",
            "repetitions per size up to 8 KiB",
            default=1000,
            short="i",
            params=("iters",),
            minimum=1,
        ),
        Option(
            "warmup",
            "int",
            "warm-up repetitions up to 8 KiB",
            default=100,
            short="x",
            minimum=0,
        ),
        Option(
            "large-iterations",
            "int",
            "repetitions per size above 8 KiB",
            default=100,
            short="I",
            params=("large_iters",),
            minimum=1,
        ),
        Option(
            "large-warmup",
            "int",
            "warm-up repetitions above 8 KiB",
            default=10,
            short="X",
            minimum=0,
        ),
        Option(
            "pairs",
            "int",
            "concurrent pairs (2*PAIRS ranks): the ppn of the max-rate model",
            default=1,
            minimum=1,
            native=False,
        ),
        Option(
            "hugepages",
            "flag",
            "back the buffers with transparent huge pages (as numpy/mpi4py do for >= 4 MiB "
            "arrays); default: page-aligned, as OSU",
            required=False,
        ),
    ),
    tables={
        "samples": Table(
            columns={
                "size_bytes": "i",
                "pair": "i",
                "rep": "i",
                "time_s": "f",
                "locality": "O",
                "pairs": "i",
            },
            key=("size_bytes", "pair", "rep"),
            checks=(Check("time_s", "positive", lambda d: d["time_s"] <= 0),),
        )
    },
    points=Points("samples", ("size_bytes",), "sizes", planned_sizes),
    resume_from=lambda params, first: dict(params, min_size=first[0]),
    ranks=lambda params: 2 * params["pairs"],
    report_section="pingpong",
    constants={"LARGE_MESSAGE": LARGE_MESSAGE},
    rules=_rules,
    study=study,
    study_order=10,
    examples="""\
examples:
  commscope bench pingpong                       # 1 pair, 1 B .. 4 MiB
  commscope bench pingpong -m 1:64K -i 2000      # small messages, more repetitions
  commscope bench pingpong --pairs 2 -m 64K:4M   # 2 concurrent pairs (max-rate ppn)
  commscope bench pingpong --mpi mpich           # the mpich wheel instead of Open MPI
  commscope bench pingpong --resume runs/20260101T120000Z-pingpong
                                                 # continue a stopped run where it ended

Every repetition's one-way time is kept in <run>/samples.parquet
(size_bytes, pair, rep, time_s, locality, pairs); stdout shows the OSU-style table.
""",
)
