"""Shared fixtures. MPI-facing tests launch real jobs through commscope's launcher.

Tiers: a test that launches an MPI job (or builds the native parts, or opens a
browser) carries the ``mpi`` marker (``browser`` for the browser), set here for every
test that uses an MPI fixture (``MPI_FIXTURES``) and by hand (or ``pytestmark``) for the
rest; ``make check`` runs ``-m "not mpi and not browser and not slow"``.  The marker is
kept honest: a test without it that starts a job, builds, or runs a launcher or a browser
(here or in a child process) fails, naming itself (``_guard``).
"""

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from needs import need

#: Fixtures that build the native parts or launch jobs: a test using one (directly or
#: through another fixture) gets the ``mpi`` marker.
MPI_FIXTURES = {"default_mpi", "mpich_mpi", "fuzz_originals"}

#: Programs a test without the ``mpi`` (or ``browser``) marker may not start.
#: (Asking one its version, or srun its plugins, is allowed: select_mpi and plan_launch do.)
_FORBIDDEN = re.compile(
    r"(mpiexec|mpirun|orterun|prterun|srun|cmake|ninja|chromium|"
    r"chromium-browser|google-chrome|chrome|headless_shell)([.-][\w.-]*)?"
)


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if MPI_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.mpi)


_QUERIES = {"--version", "-V", "--mpi=list"}


def _program(args):
    """The name of the program ``args`` starts, or None for a query (``--version``)."""
    argv = (
        os.fsdecode(args).split()
        if isinstance(args, (str, bytes, os.PathLike))
        else [os.fsdecode(a) for a in args]
    )
    if not argv or _QUERIES & set(argv[1:]):
        return None
    return Path(argv[0]).name


def _guard(item):
    """For a test without the ``mpi`` marker, from the start of its set-up (its module's and
    session's fixtures included) to the end of its teardown: a job commscope's launcher
    would start (here or in a child process, through COMMSCOPE_TEST_NO_JOBS), a build, an
    MPI launcher or (without ``browser``) a browser is not started but written down; the
    test then fails, naming itself and what it ran.  Returns (undo, record) or None."""
    if item.get_closest_marker("mpi"):
        return None
    browser = item.get_closest_marker("browser") is not None
    fd, record = tempfile.mkstemp(prefix="commscope-test-jobs-", suffix=".txt")
    os.close(fd)
    mp = pytest.MonkeyPatch()
    mp.setenv("COMMSCOPE_TEST_NO_JOBS", record)
    execute = subprocess.Popen._execute_child

    def guarded(self, args, *rest, **kw):
        name = _program(args)
        if name and _FORBIDDEN.fullmatch(name) and not (browser and "chrom" in name):
            with open(record, "a") as f:
                f.write(f"{args if isinstance(args, str) else ' '.join(map(str, args))}\n")
            raise OSError(f"{name}: not started (a test without the mpi marker)")
        return execute(self, args, *rest, **kw)

    mp.setattr(subprocess.Popen, "_execute_child", guarded)
    return mp, Path(record)


@pytest.hookimpl(tryfirst=True)  # before any fixture of the test is set up
def pytest_runtest_setup(item):
    item.stash[_GUARD] = _guard(item)
    for mark in item.iter_markers("needs"):
        need(mark.kwargs["ok"], mark.kwargs["reason"])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        guard = item.stash.get(_GUARD, None)
        if guard:
            mp, record = guard
            mp.undo()
            launched = record.read_text().splitlines()
            record.unlink(missing_ok=True)
            if launched:
                pytest.fail(
                    f"{item.nodeid} launches jobs or builds but has no mpi marker (add "
                    f"@pytest.mark.mpi or use an MPI fixture): "
                    f"{'; '.join(launched[:3])}",
                    pytrace=False,
                )


_GUARD = pytest.StashKey()


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
    "pingpong": dict(
        pairs=1, min_size=1, max_size=4, iters=1, warmup=0, large_iters=1, large_warmup=0
    ),
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

    return make_originals(tmp_path_factory.mktemp("originals"), default_mpi, log=lambda line: None)
