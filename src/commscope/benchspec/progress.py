"""The progress probe: does the MPI move data while the ranks compute outside MPI calls?
native/bench/progress.c (docs/progress.md)."""

from ..errors import InputError
from .spec import Benchmark, Check, Option, Points, StudyRun, Table

#: The send cases, in the order cs_progress numbers them: one MPI_Isend; MPI-4 partitioned
#: with every partition ready before the compute; every partition but the last ready
#: before it (does a partition leave before the last MPI_Pready?).
CASES = ("isend", "partitioned", "early-pready")
#: How the sender computes: spinning on arithmetic, or sleeping (a thread waiting for I/O
#: or an accelerator, which leaves the core free).
SENDERS = ("busy", "blocked")
#: How the receiver waits: an MPI_Test loop, or computing T (spinning) then MPI_Wait.
RECEIVERS = ("polling", "idle")
#: Untimed-compute transfers per (size, case) whose median is "the transfer alone".
BASELINE_REPS = 5
#: Most repetitions per size and case (the C program keeps them for its echo).
MAX_REPS = 64


def planned_sizes(params):
    """``((size,), rows)`` in measuring order: every case x sender x receiver x rep."""
    per = len(params["cases"]) * len(params["sender"]) * len(params["receiver"]) * params["reps"]
    return [((s,), per) for s in params["sizes"]]


def _rules(params):
    p = params["partitions"]
    if params["reps"] > MAX_REPS:
        raise InputError("--reps", None, f"at most {MAX_REPS}, got {params['reps']}")
    for s in params["sizes"]:
        if s % p:
            raise InputError(
                "--sizes",
                None,
                f"{s} bytes is not a multiple of --partitions {p} (equal partitions)",
            )
        if s >= 1 << 31:
            raise InputError("--sizes", None, f"{s} bytes: sizes must stay below 2 GiB (one count)")
    for opt, values, known in (
        ("--cases", params["cases"], CASES),
        ("--sender", params["sender"], SENDERS),
        ("--receiver", params["receiver"], RECEIVERS),
    ):
        if len(set(values)) != len(values):
            raise InputError(opt, None, f"a value given twice: {','.join(values)}")
        unknown = [v for v in values if v not in known]
        if unknown:
            raise InputError(opt, None, f"unknown value {unknown[0]!r} ({', '.join(known)})")


def _resume_from(params, first):
    return dict(params, from_size=[k for k, _ in planned_sizes(params)].index(first))


def _in_unit_interval(d):
    o = d["overlap_fraction"]
    return o.notna() & ((o < 0) | (o > 1))


def study(quick, pairs):
    """Eager and rendezvous sizes, both wheels' cases: about 10 s here."""
    return [
        StudyRun(
            "progress",
            dict(
                sizes=[1 << 10, 1 << 20] if quick else [1 << 10, 1 << 16, 1 << 20, 8 << 20],
                reps=2 if quick else 3,
            ),
            "fit",
            "progress probe: does data move while the ranks compute outside MPI?",
        )
    ]


#: meta.json's fields beyond the parameters that the driver records (JSON Schema).
MORE_META = {
    "progress_env": {
        "description": "the environment's progress settings (MPIR_CVAR_ASYNC_PROGRESS, ...)",
        "type": "object",
        "additionalProperties": {"type": "string"},
    }
}


BENCHMARK = Benchmark(
    name="progress",
    more_meta=MORE_META,
    summary="does data move while the ranks compute outside MPI calls? (the progress probe)",
    description="Two ranks: the sender starts a send (MPI_Isend, or MPI_Pready of every "
    "partition, or of all but the last), computes for T with no MPI call (busy: spinning; "
    "blocked: sleeping), then waits; the receiver polls (MPI_Test) or computes T too, then "
    "waits. Measured: the wait left after T against the same transfer with no compute; "
    "the fraction of the transfer overlapped with T = 1 - wait after T / transfer alone, "
    "clipped to [0, 1], and a verdict per size and case (docs/progress.md).",
    options=(
        Option(
            "sizes",
            "sizes",
            "message sizes, comma-separated (eager and rendezvous), each a multiple of "
            "--partitions",
            default="1K,64K,1M,8M",
            minimum=1,
            unit="bytes",
            metavar="S1,S2,...",
        ),
        Option(
            "cases",
            "choices",
            "isend (one MPI_Isend), partitioned (MPI_Pready of every partition before T), "
            "early-pready (all but the last before T, the last after)",
            default=",".join(CASES),
            choices=CASES,
            metavar="LIST",
        ),
        Option(
            "sender",
            "choices",
            "how the sender computes during T: busy (spinning on arithmetic) and/or blocked "
            "(sleeping, as a thread waiting for I/O or an accelerator)",
            default=",".join(SENDERS),
            choices=SENDERS,
            metavar="LIST",
        ),
        Option(
            "receiver",
            "choices",
            "how the receiver waits: polling (an MPI_Test loop) and/or idle (computing T, "
            "then MPI_Wait)",
            default=",".join(RECEIVERS),
            choices=RECEIVERS,
            metavar="LIST",
        ),
        Option("partitions", "int", "partitions of a partitioned send", default=4, minimum=2),
        Option("reps", "int", "repetitions per size and case", default=5, minimum=1),
        Option("warmup", "int", "untimed repetitions first", default=1, short="x", minimum=0),
        Option(
            "compute-factor",
            "float",
            "T = this many times the transfer alone (median of its untimed-compute runs)",
            default=4.0,
            minimum=1,
            metavar="F",
        ),
        Option(
            "min-compute",
            "float",
            "T is at least this (small messages take microseconds)",
            default=0.0005,
            params=("min_compute_s",),
            minimum=0,
            unit="s",
            metavar="S",
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
        Option("json", "flag", "print the verdicts as JSON", native=False, output=True),
    ),
    tables={
        "samples": Table(
            columns={
                "case": "O",
                "sender": "O",
                "receiver": "O",
                "size_bytes": "p",
                "partitions": "p",
                "rep": "i",
                "compute_s": "n",  # NaN: the case did not run (see the cases table)
                "transfer_s": "n",
                "wait_after_s": "n",
                "sender_wait_s": "n",
                "overlap_fraction": "n",
                "mismatches": "i",
                "clock": "O",
            },
            key=("case", "sender", "receiver", "size_bytes", "rep"),
            checks=(Check("overlap_fraction", "within 0 .. 1", _in_unit_interval),),
            values={"case": CASES, "sender": SENDERS, "receiver": RECEIVERS},
        ),
        "transfers": Table(
            columns={"case": "O", "size_bytes": "p", "rep": "i", "transfer_s": "f"},
            key=("case", "size_bytes", "rep"),
            values={"case": CASES},
        ),
        "cases": Table(
            columns={"case": "O", "status": "O", "note": "O"},
            key=("case",),
            values={"case": CASES},
        ),
    },
    points=Points("samples", ("size_bytes",), "sizes", planned_sizes),
    resume_from=_resume_from,
    ranks=lambda params: 2,
    rules=_rules,
    report_section="progress",
    constants={"BASELINE_REPS": BASELINE_REPS, "MAX_REPS": MAX_REPS},
    study=study,
    study_order=65,
    examples="""\
examples:
  commscope bench progress                          # 1 KiB .. 8 MiB, every case
  commscope bench progress --sizes 64K,8M --cases isend --receiver idle
  commscope bench progress --mpi mpich --json       # the verdicts as JSON
  commscope bench progress --mpi /usr/bin/mpicc.mpich   # Debian's MPICH (with
                                                    # MPIR_CVAR_ASYNC_PROGRESS=1 in the environment: its progress thread)

Per size and case, T is --compute-factor times the transfer alone (at least
--min-compute); overlap = 1 - (wait after T) / (transfer alone), clipped to [0, 1]
(early-pready: over the share of the data made ready before T). Verdicts: "moves at
Isend" / "moves at Pready" (overlap >= 0.7), "moves only inside MPI calls" (<= 0.3),
"whole buffer after the last Pready" (early-pready stays <= 0.3 while partitioned
moved), "partly" in between, "not supported by this MPI". Tables: <run>/samples.parquet
(every repetition), <run>/transfers.parquet (the transfers alone), <run>/cases.parquet.
`commscope fit` puts the verdicts into the machine model's `progress` section.
""",
)
