"""The request ledger and message counts under 500 threads and every completion path.

tests/programs/ledger_threads.c documents what it does; the expectations below are
derived from that description.  On every rank, at the end and at each quiet point the
program marks with MPI_Pcontrol(2): started = completed + cancelled + freed +
outstanding, with outstanding what the program's logic leaves open (none).
"""

import pytest

from commscope.cli import main
from commscope.collect.trace import read_trace
from commscope.runs import open_run

from test_profile import compile_program

pytestmark = pytest.mark.mpi
T, N = 500, 100
LEDGER = (
    "requests_started",
    "requests_completed",
    "requests_cancelled",
    "requests_freed",
    "outstanding_requests",
)


def expected(rank):
    """The counters ledger_threads.c implies for `rank` (its header comment)."""
    tn = T * N
    if rank == 0:
        return dict(
            requests_started=tn + 12 + 1 + 1 + 3 + 1,
            requests_completed=tn + 12 + 3 + 1,
            requests_cancelled=1,
            requests_freed=1,
            outstanding_requests=0,
            posted_receives=0,
            messages_sent=tn + 6 + 5 + 1 + 3,
            messages_received=6,
        )
    return dict(
        requests_started=tn + 12 + 1 + 2 + 3 + 1,
        requests_completed=tn + 12 + 2 + 3 + 1,
        requests_cancelled=1,
        requests_freed=0,
        outstanding_requests=0,
        posted_receives=0,
        messages_sent=6,
        messages_received=tn + 6 + 5 + 1 + 3,
    )


def profile(capsys, runs_root, *argv):
    code = main(["profile", "--runs", str(runs_root), "--quiet", *argv])
    _, err = capsys.readouterr()
    assert code == 0, err
    return open_run(sorted(runs_root.iterdir())[-1])


def check_ledger(run):
    counters = run.table("counters")
    totals = counters.groupby(["rank", "counter"])["value"].sum()
    for rank in (0, 1):
        got = {k: int(totals[(rank, k)]) for k in expected(rank)}
        assert got == expected(rank), f"rank {rank}"
        assert run.table("ranks").set_index("rank").loc[rank, "threads"] == T + 1
    # the peer matrix: every message from rank 0 that rank 1 received, and its own 6
    peers = run.table("peers").set_index(["rank", "peer"])
    assert (
        peers.loc[(1, 0), "messages_received"]
        == T * N + 5 + 1 + 3
        == peers.loc[(0, 1), "messages_sent"]
    )
    assert peers.loc[(1, 1), "messages_received"] == 6 == peers.loc[(0, 0), "messages_sent"]
    # the ledger holds at every quiet point the program marked (after phase 1, at the end)
    snaps = run.table("snapshots")
    for rank, s in snaps.groupby("rank"):
        s = s.sort_values("seq")
        balance = (
            s["requests_started"]
            - s["requests_completed"]
            - s["requests_cancelled"]
            - s["requests_freed"]
            - s["outstanding_requests"]
        )
        marked = s.iloc[[-3, -2, -1]]  # Pcontrol(2) after phase 1 is followed by more
        assert (balance.loc[marked.index] == 0).all(), f"rank {rank}"
        assert (s["outstanding_requests"] >= 0).all()
        assert s["requests_started"].iloc[-1] == expected(rank)["requests_started"]


@pytest.fixture(scope="module")
def ledger_openmpi(default_mpi, tmp_path_factory):
    return compile_program(default_mpi, "ledger_threads", tmp_path_factory.mktemp("progs"))


def test_ledger_exact_with_500_threads_open_mpi(capsys, runs_root, ledger_openmpi):
    check_ledger(profile(capsys, runs_root, "-n", "2", "--", str(ledger_openmpi)))


@pytest.mark.mpich
def test_ledger_exact_with_500_threads_mpich(capsys, runs_root, mpich_mpi, tmp_path):
    exe = compile_program(mpich_mpi, "ledger_threads", tmp_path)
    check_ledger(profile(capsys, runs_root, "--mpi", "mpich", "-n", "2", "--", str(exe)))


def test_trace_with_500_threads(capsys, runs_root, ledger_openmpi):
    run = profile(capsys, runs_root, "-n", "2", "--trace", "--", str(ledger_openmpi), "500", "4")
    files = sorted(run.raw_dir.glob("trace.*.bin"))
    assert len(files) >= 2 * 500  # one per thread that called MPI, none shared
    trace = read_trace(run.raw_dir)
    ev = trace.events
    isends = ev[(ev["rank"] == 0) & (ev["event"] == "ISEND") & (ev["peer"] == 1)]
    assert len(isends) == 500 * 4 + 1 + 3  # the workers', the freed one, 3 persistent starts
    assert ev["thread"].nunique() >= 500
