"""The `commscope diagnose` test programs under `commscope profile`, unfixed and fixed.

tests/programs/diagnose/<kind>.c (registry: tests/diagnose_cases.py) each have a problem
and, with --fixed, the same program without it.  Every program is profiled both ways
with few iterations, as the diagnose runs are made (--counters all --callsites --trace,
--ompt --threads 2 for the OpenMP ones), and the profile is checked against what the
program's logic implies: calls per rank and function, messages, tags, communicators,
OpenMP regions.  Never timing: the machine is shared (scripts/diagnose_programs.py
measures the savings).
"""

import pytest

import commscope
from commscope.cli import main
from commscope.collect import ompt
from commscope.runs import open_run

from diagnose_cases import (
    CASES,
    QUEUE_SEARCH_M as M,
    SMALL_MESSAGES_K as K,
    compile_case,
    profile_options,
    program_args,
)

pytestmark = pytest.mark.mpi

#: Iterations per test run (few: the whole file stays well under a minute) and the unit.
ITERS = {"small_messages": 2, "queue_search": 2}
N_DEFAULT = 3
UNIT = 0.0005
T_SHARED, WINDOW = 4, 64  # shared_communicator's threads per rank and window


def expected_calls(name, fixed, n):
    """{rank: {function: calls}} that ``name``'s source implies for ``n`` iterations."""
    case = CASES[name]
    init = "MPI_Init_thread" if case.threads > 1 else "MPI_Init"
    per_rank = {r: {init: 1, "MPI_Finalize": 1} for r in range(case.ranks)}

    def add(ranks, **calls):
        for r in ranks:
            for f, c in calls.items():
                if c:
                    per_rank[r][f"MPI_{f}"] = per_rank[r].get(f"MPI_{f}", 0) + c

    every = range(case.ranks)
    if name == "load_imbalance":
        add(every, Allreduce=n, Irecv=2 * n, Isend=2 * n, Waitall=n)
    elif name == "wait_at_collective":
        add(every, Barrier=0 if fixed else n, Allreduce=1)
    elif name == "late_broadcast":
        add(every, Allgather=n) if fixed else add(every, Bcast=n)
    elif name == "late_scatter":
        add(every, Scatter=0 if fixed else n)
    elif name == "early_reduce":
        add(every, Reduce=n)
    elif name == "early_gather":
        add(every, Gather=n)
    elif name == "late_sender":
        add([0], Send=n, Allreduce=n)
        add([1], Recv=n, Allreduce=n)
    elif name == "request_reply":
        add(every, Send=n, Recv=n)
    elif name == "late_receiver":
        add([0], Allreduce=n, **({"Issend": n, "Wait": n} if fixed else {"Ssend": n}))
        add([1], Recv=n, Allreduce=n)
    elif name == "wrong_order":
        add([0], Recv=2 * n, Barrier=n)
        add([1, 2], Send=n, Barrier=n)
    elif name == "small_messages":
        add([0], Send=n if fixed else K * n)
        add([1], Recv=n if fixed else K * n)
    elif name == "thread_imbalance":
        add(every, Sendrecv=n)
    elif name == "queue_search":
        add([0], Recv=n, Send=M * n)
        add([1], Irecv=M * n, Send=n, Waitall=n)
    elif name == "shared_communicator":
        windows = T_SHARED * n
        add(
            every,
            Waitall=windows,
            Comm_dup=T_SHARED if fixed else 0,
            Comm_free=T_SHARED if fixed else 0,
        )
        add([0], Isend=WINDOW * windows, Recv=windows)
        add([1], Irecv=WINDOW * windows, Send=windows)
    else:
        raise AssertionError(f"no expectations for {name}")
    return per_rank


@pytest.fixture(scope="module")
def programs(default_mpi, tmp_path_factory):
    out = tmp_path_factory.mktemp("diagnose-programs")
    return {name: compile_case(case, default_mpi, out) for name, case in CASES.items()}


@pytest.fixture(scope="module")
def have_ompt(default_mpi):
    if ompt.runtime_library() is None:
        return False
    ompt.tool_library(default_mpi)
    return True


def profile(runs_root, case, exe, fixed, n, use_ompt, mpi_args=()):
    name = f"{case.name}-{'fixed' if fixed else 'unfixed'}"
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--name",
            name,
            "--quiet",
            *mpi_args,
            "--timeout",
            "120",
            *profile_options(case, use_ompt),
            "--",
            str(exe),
            *program_args(case, fixed, n, UNIT),
        ]
    )
    run = open_run(runs_root / name)
    assert code == 0, (run.path / "stderr.txt").read_text()[-2000:]
    assert run.meta["status"] == "complete" and run.meta["exit_status"] == 0
    return run


def check_specifics(name, fixed, n, run):
    """What else the logic implies, beyond calls per function."""
    counters = run.table("counters")
    total = lambda rank, counter: int(
        counters[(counters["rank"] == rank) & (counters["counter"] == counter)]["value"].sum()
    )
    if name == "small_messages":  # the same bytes in K messages or in one
        peers = run.table("peers").set_index(["rank", "peer"])
        assert peers.loc[(0, 1), "bytes_sent"] == 8 * K * n
        assert peers.loc[(0, 1), "messages_sent"] == (n if fixed else K * n)
    elif name == "wrong_order":  # the fix receives from any source
        assert total(0, "any_source_receives") == (2 * n if fixed else 0)
    elif name == "queue_search":  # every receive posted first; tags sent reversed unless fixed
        assert total(1, "posted_receives_hwm") >= M
        t = commscope.open(run.path).trace
        sends = t[(t["rank"] == 0) & (t["event"] == "SEND")].sort_values(["time_begin_s", "record"])
        tags = sends["tag"].tolist()
        one = list(range(M)) if fixed else list(range(M - 1, -1, -1))
        assert tags == one * n
    elif name == "shared_communicator":  # threads on one communicator, or one each
        f = run.table("functions")
        senders = f[(f["rank"] == 0) & (f["function"] == "MPI_Isend")]
        assert len(senders) == T_SHARED and (senders["calls"] == WINDOW * n).all()
        t = commscope.open(run.path).trace
        comms = t[(t["rank"] == 0) & (t["function"] == "MPI_Isend")]["comm"].unique()
        assert len(comms) == (T_SHARED if fixed else 1)
    elif name in ("thread_imbalance", "load_imbalance") and "threads" in run.tables():
        th = run.table("threads")
        closing = th[th["barrier"] == "closing"]
        for rank in range(CASES[name].ranks):
            mine = closing[closing["rank"] == rank]
            assert mine["instance"].nunique() == n  # one region per iteration
            assert sorted(mine["thread"].unique()) == [0, 1]
            assert len(mine) == 2 * n


def check_run(name, fixed, n, run, have_ompt):
    case = CASES[name]
    f = run.table("functions")
    got = {
        r: {fn: int(c) for fn, c in g.groupby("function")["calls"].sum().items() if c}
        for r, g in f.groupby("rank")
    }
    assert got == expected_calls(name, fixed, n)
    ranks = run.table("ranks")
    assert sorted(ranks["rank"]) == list(range(case.ranks)) and (ranks["wall_s"] > 0).all()
    # the waiting function's calls are placed in the program's own source
    if case.waiting.startswith("MPI_") and case.waiting in f["function"].values:
        cs = run.table("callsites")
        mine = cs[cs["function"] == case.waiting]
        assert len(mine) and mine["file"].str.endswith(f"{name}.c").all()
        assert mine["calls"].sum() == f[f["function"] == case.waiting]["calls"].sum()
    if case.needs_openmp and have_ompt:
        assert "threads" in run.tables()
    check_specifics(name, fixed, n, run)


@pytest.mark.parametrize("fixed", [False, True], ids=["unfixed", "fixed"])
@pytest.mark.parametrize("name", list(CASES))
def test_profile_of_program_matches_its_logic(name, fixed, programs, have_ompt, runs_root):
    n = ITERS.get(name, N_DEFAULT)
    run = profile(runs_root, CASES[name], programs[name], fixed, n, have_ompt)
    check_run(name, fixed, n, run, have_ompt)


#: Under MPICH, a few: OpenMP with OMPT, MPI_THREAD_MULTIPLE, a synchronous send, a
#: long posted queue.
MPICH_CASES = ["load_imbalance", "shared_communicator", "late_receiver", "queue_search"]


@pytest.mark.mpich
@pytest.mark.parametrize("name", MPICH_CASES)
def test_profile_of_program_matches_its_logic_mpich(name, mpich_mpi, tmp_path, runs_root):
    case = CASES[name]
    exe = compile_case(case, mpich_mpi, tmp_path)
    use_ompt = case.needs_openmp and ompt.runtime_library() is not None
    if use_ompt:
        ompt.tool_library(mpich_mpi)
    n = ITERS.get(name, N_DEFAULT)
    for fixed in (False, True):
        run = profile(runs_root, case, exe, fixed, n, use_ompt, ["--mpi", "mpich"])
        check_run(name, fixed, n, run, use_ompt)


def test_registry_matches_the_programs():
    """Every program has a record and every record a program; a designed saving is positive."""
    on_disk = {p.stem for p in CASES["late_sender"].source.parent.glob("*.c")}
    assert on_disk == set(CASES)
    for case in CASES.values():
        text = case.source.read_text()
        assert "d.fixed" in text
        # the program's default iterations are the registry's; its ranks are checked
        assert f"diag_options(argc, argv, {case.iters})" in text
        assert f"diag_ranks(&d, {case.ranks})" in text or case.name == "wait_at_collective"
        assert case.needs_openmp == ("<omp.h>" in text)
        saving = case.designed_saving()
        assert saving is None or saving > 0
        assert (saving is None) == (
            case.measured_per is not None or case.name == "shared_communicator"
        )
    assert CASES["wait_at_collective"].designed_saving(0.002, 80) == pytest.approx(0.003)
