"""Partitioned / early-bird sends (Dominguez-Trujillo 2021, Ch. 4, Algorithm 2 and eq. 4.3):
native/bench/partitioned.c."""

from ..errors import InputError
from .spec import Benchmark, Check, Option, Points, StudyRun, Table

#: The send methods, in the order cs_partitioned numbers them.
METHODS = ("partitioned", "isend", "single")
#: Thread compute-time distributions ("stagger": fixed staggered times, the calibration).
DISTRIBUTIONS = ("normal", "uniform", "exponential", "constant", "stagger")
COMPUTE_MODES = ("sleep", "spin", "hybrid")
MIB = 1 << 20


def default_sizes(j_min=-8, j_max=2):
    """The thesis's sweep ``18 * 2**j`` MiB scaled down to this machine: 72 KiB .. 72 MiB."""
    return [int(18 * MIB * 2.0**j) for j in range(j_min, j_max + 1)]


def planned_sizes(params):
    """``((size,), rows)`` in measuring order (sizes rounded down to whole partitions)."""
    t = params["threads"]
    return [
        ((s - s % t,), params["runs_per_size"] * len(params["methods"]))
        for s in params["sizes_bytes"]
    ]


def native_params(params):
    """The options' parameters of a run's meta.json parameters (which name the sizes
    ``sizes_bytes``; the run function and the command line call them ``sizes``)."""
    return dict(params, sizes=params["sizes_bytes"])


def _resume_from(params, first):
    if params.get("ompt"):  # the thread-timing tool is not re-attached to a resumed segment
        raise InputError(
            "--resume", None, "partitioned runs with --ompt cannot be resumed: run them again"
        )
    index = [k for k, _ in planned_sizes(params)].index(first)
    return dict(native_params(params), from_size=index)


_METHOD_VALUES = {"method": METHODS}

#: meta.json's parameters as the driver records them (its own names, e.g. seconds as
#: *_s): the options' schema would not describe them.
RECORDED_PARAMETERS = {
    "type": "object",
    "required": ["threads", "compute_s", "sigma_s", "dist", "runs_per_size"],
    "properties": {
        "threads": {"$ref": "#/$defs/positive"},
        "compute_s": {"$ref": "#/$defs/seconds"},
        "variability": {"type": ["number", "null"]},
        "sigma_s": {"$ref": "#/$defs/seconds"},
        "sigma_convention": {"type": "string"},
        "dist": {"type": "string"},
        "sizes_bytes": {"type": "array", "items": {"$ref": "#/$defs/bytes"}},
        "runs_per_size": {"$ref": "#/$defs/positive"},
        "warmup": {"$ref": "#/$defs/count"},
        "methods": {"type": "array", "items": {"type": "string"}},
        "compute_mode": {"type": "string"},
    },
}


# the study's partitioned run: its thread-time spread (sigma = compute x 0.25^2, the
# thesis's convention), and the calibration whose threads are that close
STUDY_VARIABILITY = 0.25


def study(quick, pairs):
    """Two calibrations before the fit (the machine model never comes from the run it
    predicts): leads of compute_s (20 ms: every partition size clear of the one before
    it) and of the predicted run's sigma, as close as its threads finish (after a long
    idle lead this machine's small partitions take 2-3x longer); then the run the
    partitioned model predicts, against the single send, with threads that sleep through
    their compute (blocked: the cores free for progress) and again with threads that spin
    (busy), the two regimes the progress probe tells apart."""
    run = dict(
        threads=2,
        compute_s=0.02,
        sizes=[1 << 16, 1 << 20] if quick else None,
        runs_per_size=2 if quick else 5,
    )
    cal = dict(run, runs_per_size=2 if quick else 3, calibrate=True)
    return [
        StudyRun(
            "partitioned-calibration",
            cal,
            "fit",
            "partitioned calibration: staggered threads, the partitioned model's terms",
        ),
        StudyRun(
            "partitioned-calibration-short",
            dict(cal, sigma_s=run["compute_s"] * STUDY_VARIABILITY**2 / 2),
            "fit",
        ),
        StudyRun(
            "partitioned",
            dict(run, variability=STUDY_VARIABILITY),
            says="partitioned communication vs single send, 2 threads, sleeping and busy",
        ),
        StudyRun("partitioned-busy", dict(run, variability=STUDY_VARIABILITY, compute_mode="spin")),
    ]


BENCHMARK = Benchmark(
    name="partitioned",
    study=study,
    study_order=60,
    parameters_schema=RECORDED_PARAMETERS,
    summary="partitioned / early-bird sends vs a single send "
    "(Dominguez-Trujillo 2021, Algorithm 2)",
    description="Two ranks: the sender's threads compute for random times and make their "
    "partition of a buffer ready; measured is the time from the last thread's "
    "completion to the end of the transfer at the receiver, and the effective "
    "bandwidth size / elapsed (Dominguez-Trujillo 2021, eq. 4.3), for MPI-4 partitioned "
    "calls, one Isend per partition, and the single-send baseline.",
    options=(
        Option("threads", "int", "sender threads = partitions", default=2, minimum=1),
        Option(
            "compute",
            "float",
            "mean compute time per thread (> 0)",
            default=0.01,
            params=("compute_s",),
            minimum=0,
            unit="s",
            metavar="S",
        ),
        Option(
            "variability",
            "float",
            "sigma = compute * V**2, the thesis's convention (used when --sigma is not "
            "given; not with --sigma)",
            default=0.1,
            minimum=0,
            metavar="V",
        ),
        Option(
            "sigma",
            "float",
            "standard deviation of the compute time (default compute * variability**2)",
            params=("sigma_s",),
            minimum=0,  # meta.json: the sigma used, given or computed
            unit="s",
            metavar="S",
        ),
        Option(
            "dist",
            "choice",
            "compute-time distribution (stagger: thread t of T finishes at "
            "compute + sigma (2t/(T-1) - 1), no draw: the calibration)",
            default="normal",
            choices=DISTRIBUTIONS,
        ),
        Option(
            "compute-mode",
            "choice",
            "sleep to a deadline (as the thesis), spin on the clock, or hybrid (sleep then "
            "spin the last 200 us)",
            default="sleep",
            choices=COMPUTE_MODES,
        ),
        Option("seed", "int", "seed of the draws", default=1, minimum=0),
        Option(
            "sizes",
            "sizes",
            "buffer sizes, comma-separated, A:B doubling (64K, 18M, ...), each rounded down "
            "to a multiple of --threads; the default is 18*2^j MiB for j = -8..2",
            default="72K:72M",  # default_sizes(): 18*2^j MiB for j = -8..2
            recorded=("sizes_bytes",),
            minimum=1,
            unit="bytes",
            metavar="S1,S2,...",
        ),
        Option(
            "runs-per-size",
            "int",
            "recorded runs per size and method",
            default=5,
            minimum=1,
        ),
        Option(
            "warmup",
            "int",
            "unrecorded warm-up runs per size and method",
            default=1,
            short="x",
            minimum=0,
        ),
        Option(
            "methods",
            "choices",
            "comma-separated subset of the send methods",
            default=",".join(METHODS),
            choices=METHODS,
        ),
        Option(
            "from-size",
            "int",
            "start at the K-th size (0-based; resuming a sweep)",
            default=0,
            recorded=(),
            minimum=0,
            cli=False,
        ),
        Option(
            "calibrate",
            "flag",
            "measure the partitioned model's terms (per-partition time, single-send time, "
            "MPI_Pready cost, progress) for `commscope fit`: threads finish at fixed "
            "staggered times (--sigma: half the spread, default compute/2)",
            recorded=("calibration",),
            native=False,
        ),
        Option(
            "ompt",
            "flag",
            "also time the sender's threads through OMPT (table threads, the input of "
            "`commscope advise`)",
            native=False,
        ),
    ),
    tables={
        "samples": Table(
            columns={
                "method": "O",
                "size_bytes": "p",
                "partitions": "p",
                "partition_bytes": "p",
                "run": "i",
                "elapsed_s": "f",
                "effective_bandwidth_Bps": "f",
                "sender_elapsed_s": "f",
                "last_ready_s": "f",
                "first_ready_s": "f",
                "bytes_received": "i",
                "mismatches": "i",
                "threads": "p",
                "dist": "O",
                "compute_s": "f",
                "sigma_s": "f",
                "compute_mode": "O",
                "clock": "O",
                "clock_uncertainty_s": "f",
            },
            key=("method", "size_bytes", "run"),
            checks=(
                Check(
                    "partition_bytes",
                    "size_bytes / partitions",
                    lambda d: d["partition_bytes"] * d["partitions"] != d["size_bytes"],
                ),
                Check(
                    "last_ready_s",
                    "at least first_ready_s",
                    lambda d: d["last_ready_s"] < d["first_ready_s"],
                ),
            ),
            values=_METHOD_VALUES,
        ),
        "compute": Table(
            # per-partition call and arrival times: absent from runs of an earlier commscope
            optional={"call_s": "n", "arrived_s": "n"},
            columns={
                "run": "i",
                "method": "O",
                "size_bytes": "i",
                "thread": "i",
                "requested_s": "f",
                "actual_s": "f",
            },
            key=("run", "method", "size_bytes", "thread"),
            values=_METHOD_VALUES,
        ),
        "methods": Table(
            columns={"method": "O", "status": "O", "note": "O"},
            key=("method",),
            values=_METHOD_VALUES,
        ),
    },
    points=Points("samples", ("size_bytes",), "sizes", planned_sizes),
    resume_from=_resume_from,
    ranks=lambda params: 2,
    report_section="partitioned",
    examples="""\
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
""",
)
