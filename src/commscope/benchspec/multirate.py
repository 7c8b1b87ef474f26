"""Pairwise multirate (Eberius 2020, Sec. 3.9.1, Table 3.4): native/bench/multirate.c."""

from ..errors import InputError
from .spec import Benchmark, Check, Option, Points, StudyRun, Table

MODES = ("shared", "per-thread")
MAX_THREADS = 64  # threads per rank
MAX_THREAD_COUNTS = 16  # thread counts in one run
MAX_SIZE = 1 << 20  # bytes per message


def _rules(params):
    if max(params["threads"]) > MAX_THREADS:
        raise InputError(
            "--threads", None, f"thread counts must be 1..{MAX_THREADS}, got {params['threads']}"
        )
    if params["size_bytes"] > MAX_SIZE:
        raise InputError(
            "--size", None, f"message size must be 0..1 MiB, got {params['size_bytes']}"
        )


def _positive_time(d):
    return (d["time_s"] <= 0) & (d["messages"] > 0)


_RATE_CHECK = Check(
    "time_s", "positive where messages were sent (rates divide by it)", _positive_time
)


def study(quick, pairs):
    return [
        StudyRun(
            "multirate",
            dict(
                threads=(1, 2) if quick else (1, 2, 4),
                window=32 if quick else 256,
                iterations=5 if quick else 100,
                warmup=1 if quick else 10,
                reps=2 if quick else 10,
            ),
            says="multirate: thread pairs, one shared communicator vs one per thread",
        )
    ]


#: meta.json's fields beyond the parameters that the driver records (JSON Schema).
MORE_META = {
    "oversubscription": {
        "type": "object",
        "properties": {
            "cores_per_node": {"$ref": "#/$defs/count"},
            "ranks_share_node": {"type": "boolean"},
        },
    }
}


BENCHMARK = Benchmark(
    name="multirate",
    more_meta=MORE_META,
    summary="message rate of thread pairs: shared vs per-thread communicators (Eberius 2020, "
    "Table 3.4)",
    description="Pairwise multirate pattern (Eberius 2020, Sec. 3.9.1): T threads per rank, "
    "thread t of rank 0 sends windows of messages to thread t of rank 1, either all in "
    "one communicator or each pair in its own; message rate per configuration, "
    "every repetition kept.",
    options=(
        Option(
            "threads",
            "ints",
            "threads per rank, one job runs them all",
            default="1,2,4",
            minimum=1,
            metavar="T1,T2,...",
            max_items=MAX_THREAD_COUNTS,
        ),
        Option(
            "modes",
            "choices",
            "shared (one communicator, tag = thread) and/or per-thread (one communicator "
            "per thread)",
            default="shared,per-thread",
            choices=MODES,
            metavar="LIST",
        ),
        Option(
            "size",
            "size",
            "message size, at most 1 MiB (as Eberius 2020)",
            default="64",
            short="s",
            params=("size_bytes",),
            minimum=0,
            unit="bytes",
        ),
        Option("window", "int", "messages per window", default=256, minimum=1),
        Option(
            "iterations",
            "int",
            "timed windows per repetition",
            default=100,
            short="i",
            minimum=1,
        ),
        Option("warmup", "int", "untimed windows first", default=10, short="x", minimum=0),
        Option("reps", "int", "repetitions per configuration", default=5, minimum=1),
        Option("json", "flag", "print the summary and ratios as JSON", native=False, output=True),
    ),
    tables={
        "threads": Table(
            derived={"rate_msgs_per_s": "f"},  # once the job has ended (bench/multirate.py)
            columns={
                "mode": "O",
                "threads": "i",
                "rep": "i",
                "thread": "i",
                "messages": "i",
                "size_bytes": "i",
                "time_s": "f",
            },
            key=("mode", "threads", "rep", "thread"),
            checks=(_RATE_CHECK,),
        ),
        # queue columns NaN under MPIs without the pvars
        "reps": Table(
            derived={  # once the job has ended (bench/multirate.py)
                "rate_msgs_per_s": "f",
                "rate_per_thread_msgs_per_s": "f",
                "oversubscribed": "b",
            },
            columns={
                "mode": "O",
                "threads": "i",
                "rep": "i",
                "messages": "i",
                "size_bytes": "i",
                "window": "i",
                "iterations": "i",
                "time_s": "f",
                "posted_recvq_mean": "n",
                "posted_recvq_max": "n",
                "unexpected_msgq_mean": "n",
                "unexpected_msgq_max": "n",
            },
            key=("mode", "threads", "rep"),
            checks=(_RATE_CHECK,),
        ),
    },
    points=Points(
        "reps",
        ("threads",),
        "thread counts",
        lambda p: [((t,), len(p["modes"]) * p["reps"]) for t in p["threads"]],
    ),
    ranks=lambda params: 2,
    report_section="multirate",
    study=study,
    study_order=40,
    constants={"MAX_THREADS": MAX_THREADS, "MAX_SIZE": MAX_SIZE},
    rules=_rules,
    examples="""\
examples:
  commscope bench multirate                            # 1, 2, 4 threads; both modes; sizes of Eberius 2020
  commscope bench multirate --threads 2,4 --reps 10    # more repetitions
  commscope bench multirate --modes shared --window 64 -i 20 # one mode, smaller windows
  commscope bench multirate --json                     # summary and ratios as JSON

Thread t of rank 0 sends windows of W messages to thread t of rank 1
(MPI_THREAD_MULTIPLE), all threads in one communicator (tags tell them apart) or one
communicator per thread. Every repetition is kept: <run>/reps.parquet (rate, and Open
MPI's ob1 queue lengths sampled on the receiver) and <run>/threads.parquet (each
sending thread). Under the counter library:
  commscope profile -n 2 --threads 4 -- $(commscope bench multirate --print-binary) \\
      --threads 4 --modes shared --reps 1
""",
)
