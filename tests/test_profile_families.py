"""`commscope profile` counts every MPI family exactly: one program per family.

Each program in tests/programs/family_<name>.c states in its header comment what it
does and what that implies; the expectations below are derived from those comments
(not from a run), for each rank of a 2-rank job, under the default MPI (the Open MPI
wheel) and under the MPICH wheel.  Each test checks every call count, every counter
(anything not named is 0), the request ledger, and the peers and files tables.
"""

import re
import subprocess

import pytest

from commscope.cli import main
from commscope.runs import open_run

from test_profile import compile_program

RANKS = (0, 1)
#: counters every family is checked on (0 unless the family's expectation says otherwise)
COUNTERS = (
    "messages_sent",
    "bytes_sent",
    "messages_received",
    "bytes_received",
    "collective_bytes",
    "neighbor_bytes_sent",
    "neighbor_bytes_received",
    "rma_bytes_put",
    "rma_bytes_got",
    "rma_bytes_accumulated",
    "io_bytes_read",
    "io_bytes_written",
    "any_source_receives",
    "any_tag_receives",
    "requests_started",
    "requests_completed",
    "requests_cancelled",
    "requests_freed",
    "requests_untracked",
    "outstanding_requests",
    "outstanding_requests_hwm",
    "posted_receives",
    "posted_receives_hwm",
)
PEER_COLUMNS = (
    "messages_sent",
    "bytes_sent",
    "messages_received",
    "bytes_received",
    "rma_bytes_put",
    "rma_bytes_got",
    "rma_bytes_accumulated",
)
INT, CHAR, LL, DBL = 4, 1, 8, 8  # MPI_INT, MPI_CHAR, MPI_LONG_LONG, MPI_DOUBLE
#: the MPIs each family runs under (the test_expectations_* checks need none)
MPIS = [
    pytest.param("default", id="open_mpi", marks=pytest.mark.mpi),
    pytest.param("mpich", id="mpich", marks=[pytest.mark.mpi, pytest.mark.mpich]),
]


# ---- running a family ------------------------------------------------------------


def the_mpi(request, which):
    return request.getfixturevalue("mpich_mpi" if which == "mpich" else "default_mpi")


def profile(capsys, runs_root, which, exe, *args):
    """Run `exe` on 2 ranks under `which` MPI; the run, which must have completed."""
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "-n",
            "2",
            *(["--mpi", "mpich"] if which == "mpich" else []),
            "--",
            str(exe),
            *map(str, args),
        ]
    )
    _, err = capsys.readouterr()
    runs = sorted(runs_root.iterdir())
    assert code == 0, err + "".join(
        (r / "stderr.txt").read_text() for r in runs if (r / "stderr.txt").exists()
    )
    run = open_run(runs[-1])
    assert run.meta["status"] == "complete" and run.meta["exit_status"] == 0
    assert run.table("ranks")["state"].tolist() == ["finalized"] * 2
    return run


def check(run, expect):
    """Every call count, counter and function byte count `expect(rank)` gives, the
    ledger, and (when given) the peers and files tables."""
    functions = run.table("functions")
    calls = functions.groupby(["rank", "function"])["calls"].sum()
    fbytes = functions.groupby(["rank", "function"])["bytes"].sum()
    totals = run.table("counters").groupby(["rank", "counter"])["value"].sum()
    peers_want = {}
    for rank in RANKS:
        want = expect(rank)
        got_calls = {f: int(n) for f, n in calls[rank].items()}
        assert got_calls == want["calls"], f"rank {rank}: calls"
        want_counters = {c: want["counters"].get(c, 0) for c in COUNTERS}
        assert set(want["counters"]) <= set(COUNTERS), set(want["counters"]) - set(COUNTERS)
        got_counters = {c: int(totals[(rank, c)]) for c in COUNTERS}
        assert got_counters == want_counters, f"rank {rank}: counters"
        for f, n in want.get("function_bytes", {}).items():
            assert fbytes[(rank, f)] == n, f"rank {rank}: bytes of {f}"
        # the ledger: started = completed + cancelled + freed + outstanding
        assert got_counters["requests_started"] == (
            got_counters["requests_completed"]
            + got_counters["requests_cancelled"]
            + got_counters["requests_freed"]
            + got_counters["outstanding_requests"]
        )
        peers_want.update(want.get("peers", {}))
    tables = run.tables()
    got_peers = {}
    if "peers" in tables:
        for row in run.table("peers").to_dict("records"):
            got_peers[(row["rank"], row["peer"])] = {c: int(row[c]) for c in PEER_COLUMNS}
    assert got_peers == {k: {c: v.get(c, 0) for c in PEER_COLUMNS} for k, v in peers_want.items()}
    files_want = [row for rank in RANKS for row in expect(rank).get("files", [])]
    got_files = []
    if "files" in tables:
        got_files = sorted(
            run.table("files").to_dict("records"), key=lambda r: (r["rank"], r["file_id"])
        )
        got_files = [{k: (int(v) if k != "path" else v) for k, v in r.items()} for r in got_files]
    assert got_files == files_want


def declares(mpi, function):
    """Whether the MPI's own mpi.h declares `function` (as the profiling library decides)."""
    out = subprocess.run(
        [mpi.mpicc, "-E", "-x", "c", "-"],
        input="#include <mpi.h>\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return re.search(rf"\b{function}\s*\(", out) is not None


# ---- one-sided: tests/programs/family_rma.c -----------------------------------------


def expect_rma(rank):
    o = 1 - rank
    put = 5 * INT + 2 * LL + 6 * LL + 1 * LL  # fence, PSCW, Rput, lock_all
    got = (
        3 * LL
        + 4 * LL
        + 2 * LL
        + LL
        + LL
        + LL  # fence: Get, 2 Get_acc, 2 FAO, CAS
        + 1 * LL
        + 2 * LL
        + 2 * LL
    )  # PSCW Get, Rget, Rget_accumulate
    acc_other = 2 * LL + 4 * LL + 0 + LL + 0 + LL + 3 * LL + 2 * LL  # NO_OPs add nothing
    acc_self = 1 * LL
    calls = {
        "MPI_Init": 1,
        "MPI_Finalize": 1,
        "MPI_Win_create": 1,
        "MPI_Win_allocate": 1,
        "MPI_Win_allocate_shared": 1,
        "MPI_Win_create_dynamic": 1,
        "MPI_Win_attach": 1,
        "MPI_Win_detach": 1,
        "MPI_Win_free": 4,
        "MPI_Win_fence": 2,
        "MPI_Put": 2 + 1 + 1,
        "MPI_Get": 2 + 1,
        "MPI_Accumulate": 1 + 1,
        "MPI_Get_accumulate": 2,
        "MPI_Fetch_and_op": 2,
        "MPI_Compare_and_swap": 1,
        "MPI_Win_post": 1,
        "MPI_Win_start": 1,
        "MPI_Win_complete": 1,
        "MPI_Win_wait": 1,
        "MPI_Barrier": 1,
        "MPI_Win_lock": 2,
        "MPI_Win_unlock": 2,
        "MPI_Rput": 1,
        "MPI_Rget": 1,
        "MPI_Raccumulate": 1,
        "MPI_Rget_accumulate": 1,
        "MPI_Waitall": 1,
        "MPI_Win_lock_all": 1,
        "MPI_Win_flush": 1,
        "MPI_Win_flush_all": 1,
        "MPI_Win_unlock_all": 1,
    }
    counters = dict(
        rma_bytes_put=put,
        rma_bytes_got=got,
        rma_bytes_accumulated=acc_other + acc_self,
        requests_started=4,
        requests_completed=4,
        outstanding_requests_hwm=4,
    )
    return dict(
        calls=calls,
        counters=counters,
        function_bytes={
            "MPI_Put": 5 * INT + 2 * LL + LL,
            "MPI_Get": 3 * LL + LL,
            "MPI_Accumulate": 2 * LL + LL,
            "MPI_Rput": 6 * LL,
            "MPI_Rget": 2 * LL,
            "MPI_Raccumulate": 3 * LL,
        },
        peers={
            (rank, o): dict(rma_bytes_put=put, rma_bytes_got=got, rma_bytes_accumulated=acc_other),
            (rank, rank): dict(rma_bytes_accumulated=acc_self),
        },
    )


def test_expectations_of_rma_add_up():
    """The sums the program's header states."""
    want = expect_rma(0)["counters"]
    assert (want["rma_bytes_put"], want["rma_bytes_got"], want["rma_bytes_accumulated"]) == (
        92,
        136,
        112,
    )


@pytest.mark.parametrize("which", MPIS)
def test_one_sided_counts_exact(request, capsys, runs_root, tmp_path, which):
    exe = compile_program(the_mpi(request, which), "family_rma", tmp_path)
    check(profile(capsys, runs_root, which, exe), expect_rma)


# ---- MPI-IO: tests/programs/family_io.c ---------------------------------------------


def expect_io(rank, directory):
    shared, own = f"{directory}/family_io.dat", f"{directory}/family_io.self.{rank}.dat"
    ordered = 8 * (rank + 1) * CHAR
    writes = [16 * INT, 8 * INT, 10 * INT, 4 * INT, 2 * INT, 6 * INT, 12 * CHAR, ordered]
    reads = [
        16 * INT,
        8 * INT,
        10 * INT,
        4 * INT,
        2 * INT,
        6 * INT,
        12 * CHAR,
        ordered,
        16 * INT,
        8,
    ]  # after reopening: 64 bytes, and the last 8 bytes of the 748
    calls = {
        "MPI_Init": 1,
        "MPI_Finalize": 1,
        "MPI_File_open": 3,
        "MPI_File_close": 3,
        "MPI_File_write_at": 2,
        "MPI_File_read_at": 1 + 1 + 2,
        "MPI_File_write_at_all": 1,
        "MPI_File_read_at_all": 1,
        "MPI_File_set_view": 3,
        "MPI_File_write": 1,
        "MPI_File_seek": 3,
        "MPI_File_read": 1,
        "MPI_File_write_at_all_begin": 1,
        "MPI_File_write_at_all_end": 1,
        "MPI_File_read_at_all_begin": 1,
        "MPI_File_read_at_all_end": 1,
        "MPI_File_write_all_begin": 1,
        "MPI_File_write_all_end": 1,
        "MPI_File_read_all_begin": 1,
        "MPI_File_read_all_end": 1,
        "MPI_File_iwrite_at": 1,
        "MPI_File_iread_at": 1,
        "MPI_Wait": 2,
        "MPI_File_write_shared": 1,
        "MPI_File_sync": 2,
        "MPI_Barrier": 1,
        "MPI_File_seek_shared": 3,
        "MPI_File_read_shared": 1,
        "MPI_File_write_ordered": 1,
        "MPI_File_read_ordered": 1,
        "MPI_File_delete": 1,
        "MPI_File_get_size": 1,
    }
    counters = dict(
        io_bytes_written=sum(writes) + 100,
        io_bytes_read=sum(reads) + 50,
        requests_started=2,
        requests_completed=2,
        outstanding_requests_hwm=1,
    )
    function_bytes = {
        "MPI_File_write_at": 16 * INT + 100,
        "MPI_File_read_at": 16 * INT + 50 + 16 * INT + 8,
        "MPI_File_write_at_all": 8 * INT,
        "MPI_File_read_at_all": 8 * INT,
        "MPI_File_write": 10 * INT,
        "MPI_File_read": 10 * INT,
        "MPI_File_write_at_all_begin": 4 * INT,
        "MPI_File_read_at_all_end": 4 * INT,
        "MPI_File_write_all_begin": 2 * INT,
        "MPI_File_read_all_end": 2 * INT,
        "MPI_File_iwrite_at": 6 * INT,
        "MPI_File_iread_at": 6 * INT,
        "MPI_File_write_shared": 12,
        "MPI_File_read_shared": 12,
        "MPI_File_write_ordered": ordered,
        "MPI_File_read_ordered": ordered,
    }
    files = [
        dict(
            rank=rank,
            file_id=0,
            path=shared,
            reads=len(reads),
            bytes_read=sum(reads),
            writes=len(writes),
            bytes_written=sum(writes),
        ),
        dict(rank=rank, file_id=1, path=own, reads=1, bytes_read=50, writes=1, bytes_written=100),
    ]
    return dict(calls=calls, counters=counters, function_bytes=function_bytes, files=files)


def test_expectations_of_io_add_up():
    files = expect_io(1, "/d")["files"]
    assert (files[0]["writes"], files[0]["bytes_written"]) == (
        8,
        64 + 32 + 40 + 12 + 16 + 16 + 8 + 24,
    )
    assert (files[0]["reads"], files[0]["bytes_read"]) == (
        10,
        64 + 32 + 40 + 12 + 16 + 16 + 8 + 24 + 64 + 8,
    )


@pytest.mark.parametrize("which", MPIS)
def test_mpi_io_counts_exact(request, capsys, runs_root, tmp_path, which):
    exe = compile_program(the_mpi(request, which), "family_io", tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    run = profile(capsys, runs_root, which, exe, data)
    check(run, lambda rank: expect_io(rank, data))
    assert not (data / "family_io.self.0.dat").exists()  # MPI_File_delete did happen


# ---- neighbourhood collectives: tests/programs/family_neighbor.c ---------------------


def expect_neighbor(rank):
    # per topology: real out- and in-neighbours, and the v/w counts over real slots
    topologies = {
        "P": dict(out=2, inn=2, S=2 + 2, R=2 + 2),
        "N": dict(out=1, inn=1, S=3 if rank == 0 else 4, R=4 if rank == 0 else 3),
        "G": dict(
            out=2 if rank == 0 else 0, inn=1, S=2 + 5 if rank == 0 else 0, R=2 if rank == 0 else 5
        ),
    }
    sent = received = 0
    fb = dict.fromkeys(
        (
            "MPI_Neighbor_allgather",
            "MPI_Neighbor_alltoall",
            "MPI_Neighbor_allgatherv",
            "MPI_Neighbor_alltoallv",
            "MPI_Neighbor_alltoallw",
            "MPI_Ineighbor_allgather",
            "MPI_Ineighbor_alltoall",
            "MPI_Neighbor_allgather_init",
            "MPI_Neighbor_alltoall_init",
        ),
        0,
    )
    for t in topologies.values():
        for deg, vw, into in ((t["out"], t["S"], "sent"), (t["inn"], t["R"], "received")):
            parts = {
                "MPI_Neighbor_allgather": deg * 2 * INT,
                "MPI_Neighbor_alltoall": deg * 3 * DBL,
                "MPI_Neighbor_allgatherv": deg * 1 * INT,
                "MPI_Neighbor_alltoallv": vw * INT,
                "MPI_Neighbor_alltoallw": vw * DBL,
                "MPI_Ineighbor_allgather": deg * 2 * INT,
                "MPI_Ineighbor_alltoall": deg * 3 * DBL,
                "MPI_Neighbor_allgather_init": 3 * deg * 2 * INT,  # 3 starts
                "MPI_Neighbor_alltoall_init": 3 * deg * 3 * DBL,
            }
            if into == "sent":
                sent += sum(parts.values())
                for f, n in parts.items():
                    fb[f] += n  # a function's bytes are the bytes it sends
            else:
                received += sum(parts.values())
    per_topology = {
        "MPI_Neighbor_allgather": 1,
        "MPI_Neighbor_alltoall": 1,
        "MPI_Neighbor_allgatherv": 1,
        "MPI_Neighbor_alltoallv": 1,
        "MPI_Neighbor_alltoallw": 1,
        "MPI_Ineighbor_allgather": 1,
        "MPI_Ineighbor_alltoall": 1,
        "MPI_Waitall": 1 + 3,
        "MPI_Neighbor_allgather_init": 1,
        "MPI_Neighbor_alltoall_init": 1,
        "MPI_Startall": 3,
        "MPI_Request_free": 2,
        "MPI_Comm_free": 1,
    }
    calls = {f: 3 * n for f, n in per_topology.items()}
    calls.update(
        {
            "MPI_Init": 1,
            "MPI_Finalize": 1,
            "MPI_Cart_create": 2,
            "MPI_Dist_graph_create_adjacent": 1,
        }
    )
    counters = dict(
        neighbor_bytes_sent=sent,
        neighbor_bytes_received=received,
        requests_started=3 * (2 + 3 * 2),
        requests_completed=3 * (2 + 3 * 2),
        outstanding_requests_hwm=2,
    )
    return dict(calls=calls, counters=counters, function_bytes=fb)


def test_expectations_of_neighbor_add_up():
    s0, r0 = (
        expect_neighbor(0)["counters"][k]
        for k in ("neighbor_bytes_sent", "neighbor_bytes_received")
    )
    s1, r1 = (
        expect_neighbor(1)["counters"][k]
        for k in ("neighbor_bytes_sent", "neighbor_bytes_received")
    )
    assert s0 + s1 == r0 + r1  # what is sent is received
    assert (s0, r0, s1, r1) == (376 + 200 + 412, 376 + 212 + 188, 376 + 212 + 0, 376 + 200 + 224)


@pytest.mark.parametrize("which", MPIS)
def test_neighborhood_collectives_count_exact(request, capsys, runs_root, tmp_path, which):
    exe = compile_program(the_mpi(request, which), "family_neighbor", tmp_path)
    check(profile(capsys, runs_root, which, exe), expect_neighbor)


# ---- persistent collectives: tests/programs/family_pcoll.c --------------------------


def expect_pcoll(rank):
    a, b, c, d = 4 * DBL, 10 * INT, 0, 2 * INT  # bytes of one start of A, B, C, D
    fb = {
        "MPI_Allreduce_init": 5 * a + 2 * a,
        "MPI_Bcast_init": 3 * b + 2 * b,
        "MPI_Barrier_init": 5 * c + 2 * c,
        "MPI_Allgather_init": 2 * d,
        "MPI_Iallreduce": 2 * INT,
        "MPI_Allreduce": 1 * DBL,
    }
    calls = {
        "MPI_Init": 1,
        "MPI_Finalize": 1,
        "MPI_Allreduce_init": 1,
        "MPI_Bcast_init": 1,
        "MPI_Barrier_init": 1,
        "MPI_Allgather_init": 1,
        "MPI_Start": 5 + 3 + 2 + 2,
        "MPI_Wait": 5 + 3 + 2 + 2 + 1,
        "MPI_Startall": 2,
        "MPI_Waitall": 2,
        "MPI_Request_free": 4,
        "MPI_Iallreduce": 1,
        "MPI_Allreduce": 1,
    }
    started = 5 + 3 + 2 + 2 + 2 * 3 + 1
    counters = dict(
        collective_bytes=sum(fb.values()),
        requests_started=started,
        requests_completed=started,
        outstanding_requests_hwm=3,
    )
    return dict(calls=calls, counters=counters, function_bytes=fb)


def test_expectations_of_pcoll_add_up():
    assert expect_pcoll(0)["counters"]["collective_bytes"] == 456


@pytest.mark.parametrize("which", MPIS)
def test_persistent_collectives_count_at_each_start(request, capsys, runs_root, tmp_path, which):
    exe = compile_program(the_mpi(request, which), "family_pcoll", tmp_path)
    run = profile(capsys, runs_root, which, exe)
    check(run, expect_pcoll)
    # the collective bins count each start as one call of the *_init function
    bins = run.table("collective_bins")
    per_function = bins.groupby(["rank", "function"])["count"].sum()
    for rank in RANKS:
        assert per_function[rank].to_dict() == {
            "MPI_Allreduce_init": 5 + 2,
            "MPI_Bcast_init": 3 + 2,
            "MPI_Barrier_init": 2 + 2,
            "MPI_Allgather_init": 2,
            "MPI_Iallreduce": 1,
            "MPI_Allreduce": 1,
        }


# ---- MPI_Isendrecv: tests/programs/family_isendrecv.c -------------------------------


def expect_isendrecv(rank, posted_sizes=False):
    """``posted_sizes``: MPICH completes an MPI_Isendrecv request with a status that is not
    its receive's, so the library counts such a receive at its posted size and source
    (docs/profile.md): step 2's 16-byte buffer, which receives 9 or 7 bytes, and step 4's
    MPI_ANY_SOURCE receive, counted in no peer's row."""
    o = 1 - rank
    # (bytes rank 0 sends, bytes rank 1 sends) per message, in the program's order;
    # None: that rank sends nothing (MPI_PROC_NULL)
    messages = [
        (5 * INT, 5 * INT),
        (7 * CHAR, 9 * CHAR),
        (6 * DBL, 6 * DBL),
        (2 * DBL, 2 * DBL),
        (4 * INT, None),
        (2 * INT, 2 * INT),
        (3 * INT, 3 * INT),
        (5 * CHAR, 5 * CHAR),
    ]
    sent = [m[rank] for m in messages if m[rank] is not None]
    received = [m[o] for m in messages if m[o] is not None]
    from_peer = [
        m[o] for i, m in enumerate(messages) if m[o] is not None and not (posted_sizes and i == 5)
    ]  # messages[5]: step 4, from any source
    if posted_sizes:
        received[1] = from_peer[1] = 16 * CHAR
    calls = {
        "MPI_Init": 1,
        "MPI_Finalize": 1,
        "MPI_Isendrecv": 4,
        "MPI_Isendrecv_replace": 2,
        "MPI_Wait": 1,
        "MPI_Waitany": 2,
        "MPI_Waitall": 1,
        "MPI_Waitsome": 1,
        "MPI_Sendrecv": 1,
        "MPI_Sendrecv_replace": 1,
    }
    counters = dict(
        messages_sent=len(sent),
        bytes_sent=sum(sent),
        messages_received=len(received),
        bytes_received=sum(received),
        any_source_receives=1,
        any_tag_receives=1,
        requests_started=6,
        requests_completed=6,
        outstanding_requests_hwm=2,
        posted_receives_hwm=2,
    )
    peers = {
        (rank, o): dict(
            messages_sent=len(sent),
            bytes_sent=sum(sent),
            messages_received=len(from_peer),
            bytes_received=sum(from_peer),
        )
    }
    return dict(calls=calls, counters=counters, peers=peers)


def test_expectations_of_isendrecv_add_up():
    c0, c1 = expect_isendrecv(0)["counters"], expect_isendrecv(1)["counters"]
    assert (
        c0["messages_sent"],
        c0["bytes_sent"],
        c0["messages_received"],
        c0["bytes_received"],
    ) == (8, 132, 7, 118)
    assert (
        c1["messages_sent"],
        c1["bytes_sent"],
        c1["messages_received"],
        c1["bytes_received"],
    ) == (7, 118, 8, 132)


@pytest.mark.parametrize("which", MPIS)
def test_isendrecv_counts_exact(request, capsys, runs_root, tmp_path, which):
    exe = compile_program(the_mpi(request, which), "family_isendrecv", tmp_path)
    check(
        profile(capsys, runs_root, which, exe),
        lambda rank: expect_isendrecv(rank, posted_sizes=which == "mpich"),
    )


# ---- large count: tests/programs/family_bigcount.c ----------------------------------


def expect_bigcount(rank):
    o = 1 - rank
    p2p = {0: 1000 * INT, 1: 300 * DBL}  # what each rank sends besides the Sendrecv_c
    sent, received = [p2p[rank], 7 * INT], [p2p[o], 7 * INT]
    coll = {
        "MPI_Bcast_c": 50 * DBL,
        "MPI_Allreduce_c": 6 * INT,
        "MPI_Iallreduce_c": 3 * DBL,
        "MPI_Allgatherv_c": (2 + rank) * INT,
    }
    calls = {
        "MPI_Init": 1,
        "MPI_Finalize": 1,
        "MPI_Sendrecv_c": 1,
        "MPI_Wait": 2,
        "MPI_Bcast_c": 1,
        "MPI_Allreduce_c": 1,
        "MPI_Iallreduce_c": 1,
        "MPI_Allgatherv_c": 1,
        "MPI_Win_allocate_c": 1,
        "MPI_Win_fence": 2,
        "MPI_Put_c": 1,
        "MPI_Get_c": 1,
        "MPI_Win_free": 1,
    }
    calls.update(
        {"MPI_Send_c": 1, "MPI_Irecv_c": 1} if rank == 0 else {"MPI_Recv_c": 1, "MPI_Isend_c": 1}
    )
    counters = dict(
        messages_sent=2,
        bytes_sent=sum(sent),
        messages_received=2,
        bytes_received=sum(received),
        collective_bytes=sum(coll.values()),
        rma_bytes_put=5 * DBL,
        rma_bytes_got=3 * DBL,
        requests_started=2,
        requests_completed=2,
        outstanding_requests_hwm=1,
        posted_receives_hwm=1 if rank == 0 else 0,
    )
    function_bytes = dict(coll, MPI_Put_c=5 * DBL, MPI_Get_c=3 * DBL)
    function_bytes.update(
        {"MPI_Send_c": 1000 * INT, "MPI_Irecv_c": 300 * DBL}
        if rank == 0
        else {"MPI_Recv_c": 1000 * INT, "MPI_Isend_c": 300 * DBL}
    )
    peers = {
        (rank, o): dict(
            messages_sent=2,
            bytes_sent=sum(sent),
            messages_received=2,
            bytes_received=sum(received),
            rma_bytes_put=5 * DBL,
            rma_bytes_got=3 * DBL,
        )
    }
    return dict(calls=calls, counters=counters, function_bytes=function_bytes, peers=peers)


def test_expectations_of_bigcount_add_up():
    c0, c1 = expect_bigcount(0)["counters"], expect_bigcount(1)["counters"]
    assert (c0["bytes_sent"], c0["bytes_received"], c0["collective_bytes"]) == (4028, 2428, 456)
    assert (c1["bytes_sent"], c1["bytes_received"], c1["collective_bytes"]) == (2428, 4028, 460)


@pytest.mark.parametrize("which", MPIS)
def test_large_count_functions_count_like_their_int_versions(
    request, capsys, runs_root, tmp_path, which
):
    mpi = the_mpi(request, which)
    if not declares(mpi, "MPI_Send_c"):
        pytest.skip(
            f"{mpi.name}: its mpi.h declares no MPI-4 large-count (_c) functions "
            "(the Open MPI 5 wheel has none), so there is nothing to profile"
        )
    exe = compile_program(mpi, "family_bigcount", tmp_path)
    run = profile(capsys, runs_root, which, exe)
    check(run, expect_bigcount)
    # the size bins are the _c functions' own: the program calls no int-count version
    sizes, colls = run.table("size_bins"), run.table("collective_bins")
    for rank in RANKS:
        moved = {
            "MPI_Send_c" if rank == 0 else "MPI_Recv_c": [1000 * INT],
            "MPI_Irecv_c" if rank == 0 else "MPI_Isend_c": [300 * DBL],
            "MPI_Sendrecv_c": [7 * INT, 7 * INT],  # its send and its receive
            "MPI_Bcast_c": [50 * DBL],
            "MPI_Allreduce_c": [6 * INT],
            "MPI_Iallreduce_c": [3 * DBL],
            "MPI_Allgatherv_c": [(2 + rank) * INT],
            "MPI_Put_c": [5 * DBL],
            "MPI_Get_c": [3 * DBL],
        }
        want = {}
        for f, messages in moved.items():
            for n in messages:
                want[(f, n.bit_length())] = want.get((f, n.bit_length()), 0) + 1
        mine = sizes[sizes["rank"] == rank]
        assert {
            (f, b): c for f, b, c in zip(mine["function"], mine["bin"], mine["count"])
        } == want, f"rank {rank}: size bins"
        mine = colls[colls["rank"] == rank]
        assert dict(zip(mine["function"], mine["count"])) == {
            "MPI_Bcast_c": 1,
            "MPI_Allreduce_c": 1,
            "MPI_Iallreduce_c": 1,
            "MPI_Allgatherv_c": 1,
        }, f"rank {rank}: collective bins"


# ---- sessions: tests/programs/family_sessions.c -------------------------------------


def expect_sessions(rank):
    o = 1 - rank
    sent = [10 * INT] * 3 + [4 * DBL] if rank == 0 else [4 * DBL, 1 * INT]
    received = [4 * DBL, 1 * INT] if rank == 0 else [10 * INT] * 3 + [4 * DBL]
    calls = {
        "MPI_Session_init": 2,
        "MPI_Session_finalize": 2,
        "MPI_Group_from_session_pset": 2,
        "MPI_Comm_create_from_group": 2,
        "MPI_Send": 3 if rank == 0 else 1,
        "MPI_Recv": 1 if rank == 0 else 3,
        "MPI_Allreduce": 1,
        "MPI_Comm_free": 2,
        "MPI_Irecv": 1,
        "MPI_Isend": 1,
        "MPI_Waitall": 1,
        "MPI_Barrier": 1,
    }
    counters = dict(
        messages_sent=len(sent),
        bytes_sent=sum(sent),
        messages_received=len(received),
        bytes_received=sum(received),
        collective_bytes=2 * INT,
        requests_started=2,
        requests_completed=2,
        outstanding_requests_hwm=2,
        posted_receives_hwm=1,
    )
    peers = {
        (rank, o): dict(
            messages_sent=len(sent),
            bytes_sent=sum(sent),
            messages_received=len(received),
            bytes_received=sum(received),
        )
    }
    return dict(
        calls=calls,
        counters=counters,
        peers=peers,
        function_bytes={"MPI_Allreduce": 2 * INT, "MPI_Barrier": 0},
    )


def test_expectations_of_sessions_add_up():
    c0 = expect_sessions(0)["counters"]
    assert (
        c0["messages_sent"],
        c0["bytes_sent"],
        c0["messages_received"],
        c0["bytes_received"],
    ) == (4, 152, 2, 36)


@pytest.mark.parametrize("which", MPIS)
def test_a_sessions_only_program_is_profiled_to_its_last_session(
    request, capsys, runs_root, tmp_path, which
):
    exe = compile_program(the_mpi(request, which), "family_sessions", tmp_path)
    run = profile(capsys, runs_root, which, exe)
    check(run, expect_sessions)
    assert run.table("ranks")["threads"].tolist() == [1, 1]


# ---- requests that end in an error: tests/programs/family_errors.c ---------------------


def expect_errors(rank):
    if rank == 0:
        calls = {"MPI_Send": 3, "MPI_Recv": 20}
        counters = dict(
            messages_sent=3, bytes_sent=3 * 8 * INT, messages_received=20, bytes_received=20 * INT
        )
        peers = {
            (0, 1): dict(
                messages_sent=3,
                bytes_sent=3 * 8 * INT,
                messages_received=20,
                bytes_received=20 * INT,
            )
        }
    else:
        # the 3 truncated receives: completed requests, not messages
        calls = {"MPI_Irecv": 3, "MPI_Isend": 20, "MPI_Wait": 23}
        counters = dict(
            messages_sent=20,
            bytes_sent=20 * INT,
            requests_started=23,
            requests_completed=23,
            outstanding_requests_hwm=1,
            posted_receives_hwm=1,
        )
        peers = {(1, 0): dict(messages_sent=20, bytes_sent=20 * INT)}
    calls.update(
        {"MPI_Init": 1, "MPI_Finalize": 1, "MPI_Comm_dup": 1, "MPI_Comm_free": 1, "MPI_Barrier": 1}
    )
    return dict(calls=calls, counters=counters, peers=peers)


@pytest.mark.parametrize("which", MPIS)
def test_requests_ended_in_error_leave_no_entry_behind(request, capsys, runs_root, tmp_path, which):
    """A receive MPI ends with MPI_ERR_TRUNCATE is completed in the ledger, and its
    table entry goes: MPICH gives its handle to the next requests (sends), which an
    entry left behind would count as receives of garbage (seen under mpi4py's suite)."""
    exe = compile_program(the_mpi(request, which), "family_errors", tmp_path)
    check(profile(capsys, runs_root, which, exe), expect_errors)
