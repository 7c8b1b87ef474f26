"""Per-thread arrival times of an OpenMP phase with known imbalance (Marts et al. 2023,
Sec. 3.1 and 4): native/bench/threads.c."""

from .spec import Benchmark, Check, Option, Points, StudyRun, Table

#: Compute-time distributions, in the order cs_threads numbers them.
DISTRIBUTIONS = ("constant", "normal", "uniform", "exponential")
#: spin (busy, holds the core) or sleep (frees it).
COMPUTE_MODES = ("spin", "sleep")


def planned_iterations(params):
    """``((trial, iteration), rows)`` in measuring order: every rank's threads."""
    return [
        ((t, i), params["ranks"] * params["threads"])
        for t in range(params["trials"])
        for i in range(params["iterations"])
    ]


#: meta.json's parameters as the driver records them (its own names, e.g. seconds as
#: *_s): the options' schema would not describe them.
RECORDED_PARAMETERS = {
    "type": "object",
    "required": ["ranks", "threads", "iterations", "trials"],
    "properties": {
        "ranks": {"$ref": "#/$defs/positive"},
        "threads": {"$ref": "#/$defs/positive"},
        "iterations": {"$ref": "#/$defs/positive"},
        "trials": {"$ref": "#/$defs/positive"},
        "warmup": {"$ref": "#/$defs/count"},
        "work_s": {"$ref": "#/$defs/seconds"},
        "dist": {"type": "string"},
        "sd_s": {"$ref": "#/$defs/seconds"},
        "laggard_prob": {"type": "number", "minimum": 0, "maximum": 1},
        "laggard_extra_s": {"$ref": "#/$defs/seconds"},
        "compute": {"type": "string"},
        "region": {"type": "string"},
    },
}


def study(quick, pairs):
    return [
        StudyRun(
            "threads",
            dict(
                ranks=2,
                threads=2,
                iterations=20 if quick else 200,
                trials=1,
                work=2e-3,
                dist="normal",
                sd=1e-4,
                laggard_prob=0.05,
                laggard_extra=5e-3,
                seed=1,
                compute="sleep",
            ),
            says="thread arrivals: 2 ranks x 2 threads, normal work with injected laggards",
        )
    ]


BENCHMARK = Benchmark(
    name="threads",
    study=study,
    study_order=50,
    parameters_schema=RECORDED_PARAMETERS,
    summary="per-thread arrival times of an OpenMP phase with known imbalance",
    description="MPI+OpenMP steps timed as Marts et al. (2023) Listing 1 (barrier, start, "
    "omp for nowait, end) with per-thread work drawn from a distribution plus "
    "injected laggards; the intended times are kept as ground truth.",
    options=(
        Option("ranks", "int", "MPI ranks", default=2, short="n", minimum=1, native=False),
        Option("threads", "int", "OpenMP threads per rank", default=2, minimum=1, native=False),
        Option(
            "iterations",
            "int",
            "timed iterations per trial",
            default=50,
            short="i",
            minimum=1,
        ),
        Option("trials", "int", "trials", default=1, short="t", minimum=1),
        Option(
            "warmup",
            "int",
            "untimed iterations before each trial",
            default=2,
            short="x",
            minimum=0,
        ),
        Option(
            "compute",
            "float",
            "mean compute time per thread and iteration",
            default=1e-3,
            params=("work",),
            recorded=("work_s",),
            minimum=0,
            unit="s",
            metavar="S",
        ),
        Option(
            "dist",
            "choice",
            "distribution of the compute times, mean --compute and sd --sd (exponential: "
            "shifted, compute - sd + Exp(sd)); draws below 0 count as 0",
            default="constant",
            choices=DISTRIBUTIONS,
        ),
        Option(
            "sd",
            "float",
            "standard deviation of the compute times",
            default=1e-4,
            recorded=("sd_s",),
            minimum=0,
            unit="s",
            metavar="S",
        ),
        Option(
            "laggard-prob",
            "float",
            "probability that a thread-iteration is a laggard, in [0, 1]",
            default=0.0,
            minimum=0,
            metavar="P",
        ),
        Option(
            "laggard-extra",
            "float",
            "extra time of a laggard",
            default=5e-3,
            recorded=("laggard_extra_s",),
            minimum=0,
            unit="s",
            metavar="S",
        ),
        Option(
            "seed",
            "int",
            "seed of all draws (meta.json: seeds.threads)",
            default=1,
            minimum=0,
            recorded=(),
        ),
        Option(
            "compute-mode",
            "choice",
            "spin (busy, holds the core) or sleep (frees it)",
            default="spin",
            params=("compute",),
            choices=COMPUTE_MODES,
        ),
        Option("region", "text", "region name in the compute table", default="compute"),
        Option(
            "threshold",
            "float",
            "laggard threshold (max - median) for the summary printed after the run",
            default=1e-3,
            minimum=0,
            unit="s",
            metavar="S",
            native=False,
            output=True,
        ),
        Option(
            "ompt",
            "flag",
            "also time every thread through the OMPT tool (table threads) and print "
            "OMPT - Listing 1 per thread and iteration",
            native=False,
        ),
    ),
    tables={
        "compute": Table(
            columns={
                "trial": "i",
                "rank": "i",
                "iteration": "i",
                "region": "O",
                "thread": "i",
                "start_s": "f",
                "end_s": "f",
                "compute_time_s": "f",
            },
            key=("trial", "rank", "iteration", "region", "thread"),
            checks=(Check("end_s", "at least start_s", lambda d: d["end_s"] < d["start_s"]),),
        ),
        "injected": Table(
            columns={
                "trial": "i",
                "rank": "i",
                "iteration": "i",
                "thread": "i",
                "intended_time_s": "f",
                "laggard": "i",
            },
            key=("trial", "rank", "iteration", "thread"),
        ),
    },
    # not a resumable sweep: a run is one time series (the arrival statistics need it
    # unbroken; a trial is flushed to disk when it ends), so a stopped run only says how
    # far it got (no resume_from)
    points=Points("compute", ("trial", "iteration"), "iterations", planned_iterations),
    ranks=lambda params: params["ranks"],
    report_section="threads",
    examples="""\
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
""",
)
