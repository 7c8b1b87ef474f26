"""The launcher: flags set for this machine, and real jobs started through it."""

import os

import pytest

from commscope import launch, mpi
from commscope.errors import InputError
from commscope.launch import available_cores, plan_launch


@pytest.fixture
def ompi():
    return mpi.MPIInstall("openmpi", "/x/mpicc", "/x/mpiexec", "openmpi")


@pytest.fixture
def mpich():
    return mpi.MPIInstall("mpich", "/y/mpicc", "/y/mpiexec", "mpich")


@pytest.fixture
def no_slurm(monkeypatch):
    for var in ("SLURM_JOB_ID", "OMPI_MCA_pml", "OMPI_MCA_btl", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)


def test_open_mpi_single_node_flags(ompi, no_slurm):
    plan = plan_launch(ompi, 2, "prog", ["-a"])
    assert plan.argv[:3] == ["/x/mpiexec", "-n", "2"] and plan.argv[-2:] == ["prog", "-a"]
    assert plan.env["OMPI_MCA_pml"] == "ob1" and plan.env["OMPI_MCA_btl"] == "self,sm"
    assert plan.env["OMP_WAIT_POLICY"] == "passive"
    if os.geteuid() == 0:
        assert plan.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
        assert any("root" in n for n in plan.notes)
    if available_cores() >= 2:
        assert "--bind-to" in plan.argv and plan.argv[plan.argv.index("--bind-to") + 1] == "core"
        assert not plan.oversubscribed


def test_oversubscription_unbinds_and_yields(ompi, no_slurm):
    n = available_cores() + 1
    plan = plan_launch(ompi, n, "prog")
    assert plan.oversubscribed and "--oversubscribe" in plan.argv
    assert plan.argv[plan.argv.index("--bind-to") + 1] == "none"
    assert plan.env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert any("oversubscribed" in note for note in plan.notes)


def test_threads_count_towards_oversubscription(ompi, no_slurm):
    plan = plan_launch(ompi, 2, "prog", threads=available_cores())
    assert plan.oversubscribed
    assert plan.env["OMP_NUM_THREADS"] == str(available_cores())


def test_multi_node_hosts(ompi, mpich, no_slurm):
    plan = plan_launch(ompi, 4, "prog", hosts=["a", "b"])
    assert "--host" in plan.argv and "a:2,b:2" in plan.argv
    assert "OMPI_MCA_btl" not in plan.env  # sm alone cannot reach another node
    plan = plan_launch(mpich, 4, "prog", hosts=["a", "b"])
    assert plan.argv[plan.argv.index("-hosts") + 1] == "a,b"


def test_srun_inside_slurm(ompi, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    plan = plan_launch(ompi, 8, "prog", ranks_per_node=4)
    assert plan.launcher == "srun" and plan.argv[:3] == ["srun", "-n", "8"]
    assert "--ntasks-per-node=4" in plan.argv


def test_nonsense_parameters(ompi):
    with pytest.raises(InputError):
        plan_launch(ompi, 0, "prog")
    with pytest.raises(InputError):
        plan_launch(ompi, 2, "prog", bind="sideways")


@pytest.mark.mpi
def test_real_job_reports_exit_status_and_output(default_mpi):
    program = mpi.binary(default_mpi, "mpiinfo")
    res = launch.run_job(launch.plan_launch(default_mpi, 2, program), echo=False, timeout=120)
    assert res.returncode == 0
    assert '"thread_level_provided"' in res.stdout


@pytest.mark.mpi
def test_timeout_kills_the_job(default_mpi):
    program = mpi.binary(default_mpi, "pingpong")
    plan = launch.plan_launch(default_mpi, 2, program, ["-m", "1:1", "-i", "100000000"])
    res = launch.run_job(plan, echo=False, progress=False, timeout=2)
    assert res.returncode != 0
    assert "timeout" in res.stderr
