"""The test programs of `commscope diagnose`: one record per problem kind.

Each program in tests/programs/diagnose/<kind>.c has the problem, and with ``--fixed``
the same program with the problem removed and nothing else changed; its header comment
says who causes the problem, where the others wait, the fix and the saving the fix
brings.  A record here repeats that for code: what `commscope diagnose RUN` should say
about a profile of the unfixed program (``finding``, ``culprits``, ``waiting``) and the
saving per iteration its logic implies (``saving``), which scripts/diagnose_programs.py
compares with the measured one.

    from diagnose_cases import CASES, compile_case, profile_options
    exe = compile_case(CASES["late_sender"], mpi, tmp_dir)   # mpi: commscope.mpi.select_mpi()
    main(["profile", *profile_options(CASES["late_sender"]), "--", str(exe), "--fixed"])

Time is in seconds; ``U`` is the work unit (``--unit``, default 0.002 s) and ``N`` the
iterations (``--iters``).
"""

import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

PROGRAMS = Path(__file__).resolve().parent / "programs" / "diagnose"

#: The work unit every program uses unless given --unit.
DEFAULT_UNIT = 0.002

#: Messages per iteration of small_messages, posted receives of queue_search.
SMALL_MESSAGES_K = 4000
QUEUE_SEARCH_M = 2000


@dataclass(frozen=True)
class Case:
    """One problem kind and its program."""

    name: str  # the problem kind; the program is PROGRAMS/<name>.c
    ranks: int  # P, the ranks it is written for (it refuses others)
    iters: int  # N by default (a run of about 0.2-0.6 s at U = 2 ms)
    culprits: tuple  # world ranks whose behaviour causes the loss
    waiting: str  # the MPI function where the others lose the time, or
    # "omp closing barrier" (an OpenMP region's end)
    #: designed saving per iteration, f(U, N) in seconds; None: it must be measured
    saving: Optional[Callable[[float, int], float]]
    summary: str  # the problem in one line
    threads: int = 1  # threads per rank (OpenMP or pthreads)
    needs_openmp: bool = False
    args: tuple = ()  # program arguments besides --fixed, --iters, --unit
    finding: str = ""  # the kind `commscope diagnose` should name first ("" = name)
    #: for a measured saving: what one unit of it is and how many a run has, f(N)
    measured_per: Optional[tuple] = None
    #: kinds whose fix may save more and so come first (findings are ranked by saving)
    outranked_by: tuple = ()

    @property
    def source(self):
        return PROGRAMS / f"{self.name}.c"

    @property
    def first_finding(self):
        return self.finding or self.name

    def designed_saving(self, unit=DEFAULT_UNIT, iters=None):
        """Seconds saved per iteration by the fix, from the program's logic (None: measured)."""
        return None if self.saving is None else self.saving(unit, iters or self.iters)


def _rotating_barrier_saving(U, N, P=4):
    # unfixed N x 3U; fixed: the largest total of a rank, U N + 2U ceil(N / P) (rank 0's)
    return (3 * U * N - (U * N + 2 * U * math.ceil(N / P))) / N


_CASES = [
    Case(
        "load_imbalance",
        ranks=4,
        threads=2,
        needs_openmp=True,
        iters=80,
        culprits=(2,),
        waiting="MPI_Allreduce",
        saving=lambda U, N: 1.5 * U,
        summary="rank 2's OpenMP region lasts 3U, the others' U; they wait in MPI_Allreduce",
    ),
    Case(
        "wait_at_collective",
        ranks=4,
        iters=80,
        culprits=(0, 1, 2, 3),
        waiting="MPI_Barrier",
        saving=_rotating_barrier_saving,
        summary="an unneeded MPI_Barrier after a rotating 3U / U imbalance",
    ),
    Case(
        "late_broadcast",
        ranks=4,
        iters=80,
        culprits=(0,),
        waiting="MPI_Bcast",
        saving=lambda U, N: 2.25 * U,
        summary="root 0 prepares 64 KiB alone (3U) before MPI_Bcast",
    ),
    Case(
        "late_scatter",
        ranks=4,
        iters=80,
        culprits=(0,),
        waiting="MPI_Scatter",
        saving=lambda U, N: 2.25 * U,
        summary="root 0 prepares every 16 KiB chunk (3U) before MPI_Scatter",
    ),
    Case(
        "early_reduce",
        ranks=4,
        iters=150,
        culprits=(1, 2, 3),
        waiting="MPI_Reduce",
        saving=lambda U, N: 0.5 * U,
        summary="non-roots work 2U, root 0 none, then MPI_Reduce of 1 KiB",
    ),
    Case(
        "early_gather",
        ranks=4,
        iters=150,
        culprits=(1, 2, 3),
        waiting="MPI_Gather",
        saving=lambda U, N: 0.5 * U,
        summary="non-roots work 2U, root 0 none, then MPI_Gather of 1 KiB each",
    ),
    Case(
        "late_sender",
        ranks=2,
        iters=60,
        culprits=(0,),
        waiting="MPI_Recv",
        saving=lambda U, N: 2 * U,
        summary="rank 0 works 2U before sending x (4 KiB) that rank 1 needs",
    ),
    Case(
        "request_reply",
        ranks=2,
        iters=40,
        culprits=(0,),
        waiting="MPI_Recv",
        saving=lambda U, N: 3 * U,
        summary="rank 0 works 4U before sending the request rank 1 answers in 3U",
        finding="late_sender",
    ),
    Case(
        "late_receiver",
        ranks=2,
        iters=120,
        culprits=(1,),
        waiting="MPI_Ssend",
        saving=lambda U, N: U,
        summary="rank 0's MPI_Ssend waits for rank 1's receive, posted after U of work",
    ),
    Case(
        "wrong_order",
        ranks=3,
        iters=60,
        culprits=(1,),
        waiting="MPI_Recv",
        saving=lambda U, N: U,
        summary="rank 0 receives from 1 (arrives at 2U) before 2 (arrived at 0.2U)",
    ),
    Case(
        "small_messages",
        ranks=2,
        iters=60,
        culprits=(0,),
        waiting="MPI_Recv",
        saving=None,
        measured_per=("per message", lambda N: N * (SMALL_MESSAGES_K - 1)),
        summary=f"{SMALL_MESSAGES_K} messages of 8 B per iteration instead of one",
    ),
    Case(
        "thread_imbalance",
        ranks=2,
        threads=2,
        needs_openmp=True,
        iters=80,
        culprits=(0, 1),
        waiting="omp closing barrier",
        saving=lambda U, N: U,
        summary="thread 0 spins 3U, thread 1 U: thread 1 waits at the region's end",
    ),
    Case(
        "queue_search",
        ranks=2,
        iters=50,
        culprits=(0, 1),  # the sender's order and the receiver's posting order differ
        waiting="MPI_Waitall",
        saving=None,
        # the 2000 messages of 8 B are small too: packing them also ends the search
        outranked_by=("small_messages",),
        measured_per=(
            "per comparison",
            lambda N: N * (QUEUE_SEARCH_M * (QUEUE_SEARCH_M + 1) // 2 - QUEUE_SEARCH_M),
        ),
        summary=f"{QUEUE_SEARCH_M} messages arrive in the reverse of their posted order",
    ),
    Case(
        "shared_communicator",
        ranks=2,
        threads=4,
        iters=1000,
        culprits=(0, 1),
        waiting="MPI_Waitall",
        saving=None,
        summary="4 threads per rank send windows on MPI_COMM_WORLD, not a dup each",
    ),
]

CASES = {c.name: c for c in _CASES}


def compile_case(case, mpi, out_dir):
    """Build ``case``'s program with ``mpi``'s mpicc (``-O2 -g``, ``-fopenmp`` where it
    needs OpenMP) into ``out_dir``; returns the executable's path."""
    exe = Path(out_dir) / f"{case.name}-{mpi.name}"
    cmd = [
        mpi.mpicc,
        "-O2",
        "-g",
        "-pthread",
        *(["-fopenmp"] if case.needs_openmp else []),
        str(case.source),
        "-o",
        str(exe),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")
    return exe


def profile_options(case, ompt=True):
    """The `commscope profile` options a case runs with (before ``-- PROGRAM``): its
    ranks, per-function timers, call sites and the trace; for OpenMP programs
    ``--ompt --threads T`` (without OMPT: only ``--threads T``); ``--threads T`` also
    for pthreads programs, so that the launcher counts their threads."""
    opts = ["-n", str(case.ranks), "--counters", "all", "--callsites", "--trace"]
    if case.needs_openmp and ompt:
        opts.append("--ompt")
    if case.threads > 1:
        opts += ["--threads", str(case.threads)]
    return opts


def program_args(case, fixed, iters=None, unit=None):
    """The program's arguments: the case's own, then --fixed, --iters and --unit."""
    return [
        *case.args,
        *(["--fixed"] if fixed else []),
        *(["--iters", str(iters)] if iters is not None else []),
        *(["--unit", repr(float(unit))] if unit is not None else []),
    ]
