"""mpi4py's own test suite runs the same under `commscope profile` as without it.

scripts/conformance.py fetches the suite from mpi4py's sdist on PyPI (cached in
build/conformance/) and runs a subset of its modules that touches every family the
profiler wraps (point to point, partitioned, nonblocking, persistent and
neighbourhood collectives, generalized requests, one-sided, MPI-IO, sessions)
twice per MPI wheel: plainly and profiled.  Every test must end the same way on
every rank, and every rank's request ledger must balance.  Without PyPI (and no
cached copy) the MPI tests skip, saying so.
"""

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from needs import need

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "conformance.py"


def _load():
    spec = importlib.util.spec_from_file_location("conformance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conformance", module)
    spec.loader.exec_module(module)
    return module


conformance = _load()


@pytest.fixture(scope="module")
def suite():
    try:
        return conformance.fetch_suite()
    except conformance.SuiteUnavailable as exc:
        need(False, f"mpi4py's test suite could not be fetched from PyPI: {exc}")


def check_quick(mpi, suite, tmp_path):
    res = conformance.check(
        conformance.Job(
            mpi, 2, suite, tmp_path, conformance.QUICK, conformance.QUICK_EXCLUDE, timeout=300
        )
    )
    for which in ("plain", "profiled"):
        job = res[which]
        assert not job["timed_out"], f"{which}: timed out; {job['log']}"
        assert sorted(job["ranks"]) == [0, 1], (
            f"{which}: not every rank reported (exit {job['returncode']}, ended during "
            f"{job['died_in']}); {job['log']}"
        )
    tally = conformance.tally(res["plain"]["ranks"])
    assert tally["tests"] > 100 and tally["pass"] > tally["tests"] // 2, tally
    # every family of the subset ran (a renamed module would silently drop out)
    ran = {tid.split(".")[0] for tid in res["plain"]["ranks"][0]["tests"]}
    assert ran == set(conformance.QUICK), set(conformance.QUICK) - ran
    assert res["differences"] == [], res["differences"][:20]
    assert sorted(res["ledger"]) == [0, 1]
    for rank, led in res["ledger"].items():
        assert led["balanced"], (rank, led)
        # the subset completes or frees every request it starts
        assert led["outstanding_requests"] == 0, (rank, led)
        assert led["requests_untracked"] == 0, (rank, led)
        assert led["requests_started"] > 1000, (rank, led)  # requests were counted at all
        assert led["functions"] > 50, (rank, led)
    assert res["ok"], res["problems"]
    return res


@pytest.mark.mpi
@pytest.mark.slow
def test_quick_subset_unchanged_under_the_profiler_open_mpi(suite, tmp_path):
    from commscope import mpi

    check_quick(mpi.select_mpi("openmpi"), suite, tmp_path)


@pytest.mark.mpi
@pytest.mark.mpich
@pytest.mark.slow
def test_quick_subset_unchanged_under_the_profiler_mpich(suite, mpich_mpi, tmp_path):
    check_quick(mpich_mpi, suite, tmp_path)


# ---- the script's own logic, without MPI --------------------------------------------


def test_differences_name_each_rank_and_test():
    plain = {"ranks": {0: {"tests": {"a": "pass", "b": "skip"}}, 1: {"tests": {"a": "pass"}}}}
    profiled = {"ranks": {0: {"tests": {"a": "fail", "b": "skip", "c": "pass"}}}}
    assert conformance.differences(plain, profiled, 2) == [
        (0, "a", "pass", "fail"),
        (0, "c", "not run", "pass"),
        (1, "<no outcomes: rank did not report>", "ran", "missing"),
    ]


def test_spawnable_keeps_the_binding_but_lets_the_mpi_spawn():
    ompi = SimpleNamespace(argv=["mpiexec", "-n", "2", "--bind-to", "core", "python"], env={})
    assert conformance.spawnable(ompi).argv == [
        "mpiexec",
        "-n",
        "2",
        "--bind-to",
        "core:overload-allowed",
        "python",
    ]
    unbound = SimpleNamespace(argv=["mpiexec", "-n", "2", "--bind-to", "none", "python"], env={})
    assert conformance.spawnable(unbound).argv[3:5] == ["--bind-to", "none"]
    hydra = SimpleNamespace(argv=["mpiexec", "-n", "2", "-bind-to", "core", "python"], env={})
    hydra = conformance.spawnable(hydra)
    assert hydra.argv == ["mpiexec", "-n", "2", "python"]
    assert hydra.env == {"HYDRA_BINDING": "core"}
