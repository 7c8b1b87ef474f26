"""Shared fixtures. MPI-facing tests launch real jobs through commscope's launcher."""

import os

import pytest


@pytest.fixture(autouse=True)
def _outside_slurm(monkeypatch):
    """Tests launch with mpiexec even when the suite itself runs inside an allocation."""
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)


@pytest.fixture
def runs_root(tmp_path):
    """A fresh directory for run directories."""
    root = tmp_path / "runs"
    root.mkdir()
    return root


@pytest.fixture(scope="session")
def default_mpi():
    """The default MPI (Open MPI wheel unless COMMSCOPE_MPI says otherwise), built."""
    from commscope import mpi
    m = mpi.select_mpi()
    mpi.build(m)
    return m


@pytest.fixture(scope="session")
def mpich_mpi():
    """The mpich wheel (installed into .mpi/mpich by setup, or on first use)."""
    from commscope import mpi
    m = mpi.select_mpi("mpich")
    mpi.build(m)
    return m
