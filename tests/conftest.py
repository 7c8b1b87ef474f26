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


#: What a run of each kind must record to be read (its meta.json schema requires it).
MINIMAL_PARAMETERS = {
    "pingpong": dict(pairs=1, min_size=1, max_size=4, iters=1, warmup=0, large_iters=1,
                     large_warmup=0),
    "bsp": dict(workload="ftq", ranks=2, intervals=4, warmup=0),
}


@pytest.fixture
def new_run(runs_root):
    """``new_run(kind, root=None, **parameters)``: an empty run directory being written,
    with the parameters its kind requires (overridden by ``parameters``)."""
    from commscope.runs import Run

    def make(kind, root=None, **parameters):
        return Run.create(root or runs_root, kind, {**MINIMAL_PARAMETERS[kind], **parameters})
    return make


@pytest.fixture(scope="session")
def fuzz_originals(tmp_path_factory, default_mpi):
    """Small real runs of every kind and a fitted machine model (tests/fuzzkit.py; about
    10 s): what the mutation test damages and the no-nan test reads."""
    from fuzzkit import make_originals
    return make_originals(tmp_path_factory.mktemp("originals"), default_mpi,
                          log=lambda line: None)
