"""Bulk-synchronous variability harness (Dominguez-Trujillo 2021, Sec. 3.3):
native/bench/bsp.c (DGEMM links a CBLAS: native/bench/bsp.cmake)."""

from dataclasses import replace

from ..errors import InputError
from .spec import Benchmark, Option, Points, StudyRun, Table

#: Workloads and draw distributions, in the order cs_bsp numbers them.
WORKLOADS = ("ftq", "fwq", "dgemm", "spmv")
DISTRIBUTIONS = ("constant", "normal", "uniform", "exponential", "lognormal")
#: Halo payload: element j of what rank s sends in interval i is
#: (s+1)*HALO_RANK_W + (i+1)*HALO_ITER_W + j%13 (checked by the receiver and the tests).
HALO_RANK_W = 1000003.0
HALO_ITER_W = 17.0

#: Defaults per workload: FTQ mean/sd in seconds, FWQ in integer additions,
#: DGEMM/SPMV matrix (grid) side.  The thesis ran 100 ms FTQ intervals; 10 ms keeps
#: a 200-interval run near two seconds here.
DEFAULTS = dict(
    intervals=200,
    warmup=2,
    dist="normal",
    ftq_mean_s=0.01,
    ftq_sd_s=0.001,
    fwq_mean_ops=5_000_000,
    fwq_sd_ops=500_000,
    dgemm_dim=256,
    spmv_dim=512,
    reps=1,
    halo_bytes=0,
    flush_every=10,
)


def from_cli(params):
    """The command line's options as run_bsp's keywords: --compute (FTQ) or --ops (FWQ)
    is the draws' mean; each workload refuses the options of the others."""
    params = dict(params)
    workload = params.get("workload")
    if workload is None:  # not required by the parser: --resume alone must reach its refusal
        raise InputError("-w/--workload", None, f"required: one of {', '.join(WORKLOADS)}")
    compute, ops = params.pop("compute", None), params.pop("ops", None)
    own = {"ftq": "--compute", "fwq": "--ops"}.get(workload)  # the option of its draws
    given = {"--compute": compute, "--ops": ops, "--sd": params.get("sd")}
    for opt, value in given.items():
        if opt != own and value is not None and not (opt == "--sd" and own):
            raise InputError(
                opt,
                None,
                f"{workload} does not take {opt}; "
                + (f"use {own}" if own else "it takes --dim and --reps"),
            )
    if own and params.get("dim") is not None:
        raise InputError("--dim", None, f"{workload} draws its work; use {own}/--sd")
    params["mean"] = compute if workload == "ftq" else ops
    return params


#: meta.json's parameters as the driver records them (its own names, e.g. seconds as
#: *_s): the options' schema would not describe them.
RECORDED_PARAMETERS = {
    "type": "object",
    "required": ["workload", "ranks", "intervals", "warmup"],
    "properties": {
        "workload": {"enum": ["ftq", "fwq", "dgemm", "spmv"]},
        "ranks": {"$ref": "#/$defs/positive"},
        "intervals": {"$ref": "#/$defs/positive"},
        "warmup": {"$ref": "#/$defs/count"},
        "halo_bytes": {"$ref": "#/$defs/bytes"},
        "flush_every": {"$ref": "#/$defs/positive"},
        "dist": {"type": ["string", "null"]},
        "mean": {"type": ["number", "null"]},
        "sd": {"type": ["number", "null"]},
        "mean_unit": {"type": ["string", "null"]},
        "dim": {
            "type": ["integer", "null"],
            "description": "DGEMM: side of the N x N matrices; SPMV: side of the N x N grid",
        },
        "size": {
            "type": ["integer", "null"],
            "description": "dim, in runs made before the option was renamed --dim",
        },
        "reps": {"type": ["integer", "null"]},
    },
}


def study(quick, pairs):
    """FTQ (and DGEMM) at 1, 2 and 4 ranks, predicted from 1 rank to the others; two
    more 1-rank runs of each: the predictions' run-to-run spread (without them the
    intervals know only one run's noise, and miss the next run's median)."""
    ftq = dict(workload="ftq", intervals=20 if quick else 500, mean=5e-3, sd=5e-4, seed=1)
    dgemm = dict(workload="dgemm", intervals=300, dim=256, seed=1)
    runs = []
    for ranks in (1, 2) if quick else (1, 2, 4):
        runs.append(StudyRun(f"bsp-ftq-{ranks}rank", dict(ftq, ranks=ranks)))
        if not quick:
            runs.append(StudyRun(f"bsp-dgemm-{ranks}rank", dict(dgemm, ranks=ranks)))
    for repeat in () if quick else (2, 3):
        runs.append(StudyRun(f"bsp-ftq-1rank-repeat{repeat}", dict(ftq, ranks=1)))
        runs.append(StudyRun(f"bsp-dgemm-1rank-repeat{repeat}", dict(dgemm, ranks=1)))
    says = "bulk-synchronous FTQ and DGEMM at 1, 2 and 4 ranks (variability prediction)"
    return [replace(runs[0], says=says), *runs[1:]]


BENCHMARK = Benchmark(
    name="bsp",
    study=study,
    study_order=70,
    parameters_schema=RECORDED_PARAMETERS,
    summary="bulk-synchronous variability harness (FTQ/FWQ/DGEMM/SPMV + halo)",
    description="k intervals of MPI_Barrier, workload [+ 2-D halo], MPI_Barrier "
    "(Dominguez-Trujillo 2021, Sec. 3.3): per-rank interval and barrier "
    "times and the per-interval maximum (MPI_Reduce to rank 0).",
    options=(
        Option(
            "workload",
            "choice",
            "ftq: spin a drawn time; fwq: a drawn number of additions; dgemm, spmv: fixed "
            "operations of --dim (required)",
            short="w",
            choices=WORKLOADS,
        ),
        Option("ranks", "int", "MPI ranks", default=2, short="n", minimum=1, native=False),
        Option(
            "intervals",
            "int",
            "measured intervals",
            default=DEFAULTS["intervals"],
            short="k",
            minimum=1,
        ),
        Option(
            "warmup",
            "int",
            "unrecorded intervals first",
            default=DEFAULTS["warmup"],
            short="x",
            minimum=0,
        ),
        Option(
            "dist",
            "choice",
            "distribution of the FTQ/FWQ draws, each with the given mean and sd; "
            "exponential is shifted, mean - sd + Exp(sd); draws below 0 count as 0",
            default=DEFAULTS["dist"],
            choices=DISTRIBUTIONS,
        ),
        Option(
            "compute",
            "float",
            f"FTQ: mean spin per interval (default {DEFAULTS['ftq_mean_s']})",
            minimum=0,
            unit="s",
            metavar="S",
            recorded=("mean",),
            native=False,
        ),
        Option(
            "ops",
            "float",
            "FWQ: mean integer additions per interval (default 5e6)",
            minimum=0,
            metavar="N",
            recorded=("mean",),
            native=False,
        ),
        Option(
            "mean",
            "float",
            "the draws' mean: FTQ seconds (default 0.01), FWQ additions (default 5e6)",
            minimum=0,
            cli=False,
        ),
        Option(
            "sd",
            "float",
            "standard deviation of the draws, in the unit of --compute or --ops "
            "(default a tenth of it)",
            minimum=0,
        ),
        Option(
            "dim",
            "int",
            f"DGEMM: N x N matrices (default {DEFAULTS['dgemm_dim']}); SPMV: N x N grid "
            f"(default {DEFAULTS['spmv_dim']})",
            minimum=1,
            metavar="N",
        ),
        Option(
            "reps",
            "int",
            "DGEMM/SPMV operations per interval",
            default=DEFAULTS["reps"],
            minimum=1,
        ),
        Option(
            "halo-bytes",
            "size",
            "bytes to each of 4 neighbours per interval, a multiple of 8, e.g. 1M (0: no halo)",
            default="0",
            minimum=0,
            unit="bytes",
            metavar="BYTES",
        ),
        Option(
            "seed",
            "int",
            "seed of the draws, rank r using stream seed + r (default drawn from the OS; "
            "meta.json: seeds.bsp)",
            minimum=0,
            recorded=(),
        ),
        Option(
            "flush-every",
            "int",
            "write per-rank rows every F intervals",
            default=DEFAULTS["flush_every"],
            minimum=1,
            metavar="F",
        ),
    ),
    tables={
        "intervals": Table(
            columns={
                "interval": "i",
                "rank": "i",
                "host": "O",
                "workload_s": "f",
                "halo_s": "f",
                "barrier_s": "f",
                "interval_s": "f",
                # each workload's own (FTQ draws time, FWQ work; NaN otherwise)
                "requested_s": "n",
                "requested_ops": "n",
                "checksum": "n",
                "halo_sum": "n",
                "halo_bad": "n",
            },
            key=("interval", "rank"),
        ),
        "maxima": Table(
            columns={
                "interval": "i",
                "max_interval_s": "f",
                "max_workload_s": "f",
                "argmax_rank": "i",
            },
            key=("interval",),
        ),
        "neighbors": Table(
            columns={"rank": "i", "direction": "O", "neighbor": "i"},
            key=("rank", "direction"),
        ),
    },
    # not a resumable sweep: a run is one time series (the maxima need it unbroken), so a
    # stopped run only says how far it got (no resume_from)
    points=Points(
        "maxima", ("interval",), "intervals", lambda p: [((i,), 1) for i in range(p["intervals"])]
    ),
    ranks=lambda params: params["ranks"],
    report_section="variability",
    constants={"HALO_RANK_W": HALO_RANK_W, "HALO_ITER_W": HALO_ITER_W},
    from_cli=from_cli,
    examples="""\
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
""",
)
