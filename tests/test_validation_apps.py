"""`commscope profile` on real MPI applications that are not part of commscope (issue 9,
item 9): Debian's LAMMPS, built against Debian's Open MPI 4.1.  Counts are checked
against what LAMMPS's own logic implies (scripts/validate_lammps.py derives them).

scripts/setup.sh installs the packages as root (scripts/install_validation_apps.sh
installs only them); without them the tests skip saying so, and fail in CI.
"""

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope import launch, mpi
from needs import needs

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[1]
SYSTEM_MPICC = "/usr/bin/mpicc"
INSTALL = "scripts/setup.sh or scripts/install_validation_apps.sh (as root)"

needs_system_mpi = needs(
    os.access(SYSTEM_MPICC, os.X_OK) and shutil.which("ompi_info"),
    f"Debian's Open MPI with mpicc (libopenmpi-dev) is not installed: run {INSTALL}",
)
needs_lammps = needs(
    shutil.which("lmp") is not None, f"Debian's lammps (lmp) is not installed: run {INSTALL}"
)


def _script():
    spec = importlib.util.spec_from_file_location(
        "validate_lammps", ROOT / "scripts" / "validate_lammps.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_expected_counts_of_a_known_case():
    """The formula against a case worked by hand: 200 steps, a rebuild every 10
    (20 rebuilds): exchange and borders 21 times, forward_comm on 180 steps,
    reverse_comm on 200 steps and in setup."""
    v = _script()
    want = v.expected_p2p(200, 20)
    assert want["MPI_Sendrecv"] == 21 + 2 * 21
    assert (
        want["MPI_Irecv"] == want["MPI_Send"] == want["MPI_Wait"] == 21 + 2 * 21 + 2 * 180 + 2 * 201
    )
    assert v.thermo_outputs(200, 50) == 5 and v.thermo_outputs(300, 10) == 31
    assert v.thermo_outputs(210, 50) == 6  # the last step always prints


@needs_system_mpi
def test_system_open_mpi_4_gets_its_shared_memory_btl():
    system = mpi.select_mpi(SYSTEM_MPICC)
    assert system.flavor == "openmpi" and Path(system.mpicc).name == "mpicc"
    plan = launch.plan_launch(system, 2, "prog")
    version = subprocess.run(
        [str(Path(system.mpiexec).parent / "ompi_info"), "--version"],
        capture_output=True,
        text=True,
    ).stdout  # "Open MPI v4.1.4"
    major = int(version.split(" v")[1].split(".")[0])
    assert plan.env["OMPI_MCA_btl"] == ("self,vader" if major < 5 else "self,sm")


@needs_system_mpi
@needs_lammps
def test_lammps_counts_agree_with_its_logic(tmp_path):
    v = _script()
    cases = [
        (case, *v.profile_case(case, tmp_path, tmp_path / "runs", SYSTEM_MPICC)) for case in v.CASES
    ]
    for case, run, *_ in cases:
        assert run.meta["status"] == "complete" and run.meta["exit_status"] == 0
        assert run.meta["mpi"]["library_version"].startswith("Open MPI")  # Debian's, not the wheel
    rows = v.comparison_rows(cases)
    wrong = [r for r in rows if r[2] != r[3]]
    assert not wrong, "\n".join(
        f"{w} (rank {k}): expected {e}, counted {g}" for w, k, e, g in wrong
    )
    assert len(rows) == 2 * (2 + 2 * 4 + 2) + 4


HPCC_EXAMPLE = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt")
needs_hpcc = needs(
    shutil.which("hpcc") is not None and HPCC_EXAMPLE.exists(),
    f"Debian's hpcc is not installed: run {INSTALL}",
)


@needs_system_mpi
@needs_hpcc
def test_hpcc_every_message_accounted_for(tmp_path, monkeypatch):
    """HPC Challenge (all components, N = 400, a 1 x 2 grid) under the profile.

    Its RandomAccess, PTRANS, FFT, HPL and latency/bandwidth parts complete requests
    through Wait, Waitall, Waitany, Test and Testany, and RandomAccess cancels its
    last any-source receive.  With 2 ranks every message goes to the other rank, so
    each rank's sends (Send + Isend + Sendrecv) are its messages to the other, and
    each rank receives (Recv + Irecv - cancelled + Sendrecv) exactly what the other
    sent: two counts made in different processes by different wrappers."""
    from commscope.profile.run import run_profile

    lines = HPCC_EXAMPLE.read_text().splitlines()
    lines[5], lines[7], lines[10], lines[11] = "400 Ns", "40 NBs", "1 Ps", "2 Qs"
    (tmp_path / "hpccinf.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)  # hpcc reads hpccinf.txt and writes hpccoutf.txt here
    run, status = run_profile(
        "hpcc", nranks=2, mpi_spec=SYSTEM_MPICC, runs_root=tmp_path / "runs", echo=False
    )
    assert status == 0 and "Success=1" in (tmp_path / "hpccoutf.txt").read_text()
    f = run.table("functions")
    calls = {r: g.groupby("function")["calls"].sum() for r, g in f.groupby("rank")}
    peers = run.table("peers").set_index(["rank", "peer"])
    for rank in (0, 1):
        c, other = calls[rank], calls[1 - rank]
        assert c["MPI_Testany"] > 0 and c["MPI_Cancel"] > 0  # the completion paths exercised
        sent = c["MPI_Send"] + c["MPI_Isend"] + c["MPI_Sendrecv"]
        received = (
            other["MPI_Recv"] + other["MPI_Irecv"] - other["MPI_Cancel"] + other["MPI_Sendrecv"]
        )
        assert peers.loc[(rank, 1 - rank), "messages_sent"] == sent == received
        assert peers.loc[(1 - rank, rank), "messages_received"] == sent
        assert (
            peers.loc[(rank, 1 - rank), "bytes_sent"]
            == peers.loc[(1 - rank, rank), "bytes_received"]
        )


# --- commscope diagnose on real applications (issue 42, item 5) ---------------------------


def _apps_script():
    spec = importlib.util.spec_from_file_location(
        "validate_diagnose_apps", ROOT / "scripts" / "validate_diagnose_apps.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shim_rank(rank, wall, mpi, entries):
    calls = [("MPI_Allreduce", e, e + 10) for e in entries]
    return {"rank": rank, "wall_s": wall, "mpi_s": mpi, "init_end_ns": 0,
            "finalize_ns": int(wall * 1e9), "functions": {}, "calls": calls}  # fmt: skip


def test_shim_truth_from_known_records():
    """Rank 0 works 3 s, rank 1 1 s: LB = 2 / 3; rank 0 enters each of the three
    Allreduces 0.5 s after rank 1, so it alone caused the 1.5 s of waiting."""
    v = _apps_script()
    ranks = {
        0: _shim_rank(0, 4.0, 1.0, [int(x * 1e9) for x in (1.5, 2.5, 3.5)]),
        1: _shim_rank(1, 4.0, 3.0, [int(x * 1e9) for x in (1.0, 2.0, 3.0)]),
    }
    t = v.shim_truth(ranks)
    assert t["load_balance"] == pytest.approx(2 / 3)
    assert t["culprits"] == [0] and t["wait_caused_s"][0] == pytest.approx(1.5)
    assert t["wait_caused_s"][1] == 0 and t["runtime_s"] == pytest.approx(4.0)
    ranks[1]["calls"].pop()  # unequal counts: no instance is certain, no culprit
    assert v.shim_truth(ranks)["culprits"] == []


needs_gromacs = needs(
    shutil.which("gmx_mpi") is not None and shutil.which("gmx") is not None,
    f"Debian's gromacs (gmx_mpi) is not installed: run {INSTALL}",
)


def _check_diagnosis_against_the_shim(app_key, tmp_path):
    """The imbalanced variant, short, profiled with the shim stacked above libcommscope:
    commscope's POP load balance within 0.1 of the shim's (the same run), its
    load_imbalance finding's culprits those the shim's collective entries name, and
    every MPI function the profile counted wrapped by the shim."""
    v = _apps_script()
    app = v.APPS[app_key]
    shim = v.shim_library(SYSTEM_MPICC)
    work = tmp_path / app_key
    work.mkdir()
    variant = next(x for x in app.prepare(work, quick=True) if not x.balanced)
    run, truth, _ = v.profiled_run(app, variant, work, "imbalanced", shim, tmp_path / "runs")
    d = v.diagnosis(run)
    assert v.uncovered(run, v.read_shim(work / "imbalanced.shim")) == []
    assert truth["culprits"] == [0]  # rank 0's domain holds twice rank 1's atoms
    assert abs(d["load_balance"] - truth["load_balance"]) <= 0.1, (d, truth)
    assert d["imbalance_culprits"] == truth["culprits"], (d, truth)


@needs_system_mpi
@needs_lammps
def test_lammps_diagnosis_agrees_with_the_timing_shim(tmp_path):
    _check_diagnosis_against_the_shim("lammps", tmp_path)


@needs_system_mpi
@needs_gromacs
def test_gromacs_diagnosis_agrees_with_the_timing_shim(tmp_path):
    _check_diagnosis_against_the_shim("gromacs", tmp_path)


needs_mpicxx = needs(
    Path(SYSTEM_MPICC).with_name("mpicxx").exists(),
    f"Debian's Open MPI mpicxx (libopenmpi-dev) is not installed: run {INSTALL}",
)


@needs_system_mpi
@needs_mpicxx
def test_lulesh_diagnosis_agrees_with_the_timing_shim(tmp_path):
    """LULESH 2.0 (third_party/lulesh), 8 ranks on this machine's cores, `-c 8`: some
    ranks' regions cost more.  With 8 ranks on 2 cores who computes longest (and enters
    the per-cycle MPI_Allreduce last) moves between ranks 0, 1 and 6 from run to run, in
    the shim's truth as in commscope's, so each run is checked against its own truth:
    commscope's POP load balance within 0.1 of the shim's, every rank the shim's
    collective entries name among the load_imbalance finding's culprits, and the machine
    named first (cpu_contention: 8 threads on the cores).  A run where the load beside
    it decides more than the program may miss: one of two must agree."""
    v = _apps_script()
    app = v.APPS["lulesh"]
    shim = v.shim_library(SYSTEM_MPICC)
    for attempt in range(2):
        work = tmp_path / f"lulesh{attempt}"
        work.mkdir()
        variant = next(x for x in app.prepare(work, quick=True) if not x.balanced)
        run, truth, _ = v.profiled_run(app, variant, work, "imbalanced", shim, work / "runs")
        d = v.diagnosis(run)
        assert v.uncovered(run, v.read_shim(work / "imbalanced.shim")) == []
        agree = abs(d["load_balance"] - truth["load_balance"]) <= 0.1 and set(
            truth["culprits"]
        ) <= set(d["imbalance_culprits"])
        if agree:
            break
    assert agree, (d, truth)
    if (os.cpu_count() or 1) < app.nranks:
        assert d["top_kind"] == "cpu_contention", d
