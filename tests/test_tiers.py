"""The fast tier proves itself (tests/conftest.py): a test that launches an MPI job,
builds or starts a launcher without the ``mpi`` marker fails naming itself, in the test
process or in a child; a test using an MPI fixture gets the marker without asking; and a
missing dependency skips, or fails under COMMSCOPE_REQUIRE_ALL=1 (tests/needs.py)."""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
HERE = Path(__file__).resolve().parent

SUITE = """
import subprocess, sys
from types import SimpleNamespace

import pytest

from commscope import launch

PLAN = SimpleNamespace(argv=["true"], env={}, launcher="mpiexec", hosts=[])


def test_job_in_process_swallowed():
    try:
        launch.run_job(PLAN, echo=False, progress=False)
    except Exception:
        pass  # the guard fails the test all the same


def test_job_in_a_child():
    code = ("from types import SimpleNamespace; from commscope import launch; "
            "launch.run_job(SimpleNamespace(argv=['true'], env={}, launcher='mpiexec', "
            "hosts=[]), echo=False, progress=False)")
    subprocess.run([sys.executable, "-c", code], capture_output=True)


def test_mpiexec_started_by_hand():
    with pytest.raises(OSError):
        subprocess.run(["mpiexec", "-n", "1", "true"])


@pytest.fixture(scope="module")
def module_job():
    try:
        launch.run_job(PLAN, echo=False, progress=False)
    except Exception:
        pass


def test_with_a_module_fixture_that_launches(module_job):
    pass


def test_a_version_query_is_allowed():
    subprocess.run(["mpiexec", "--version"], capture_output=True)


@pytest.mark.mpi
def test_marked_job():
    assert launch.run_job(PLAN, echo=False, progress=False).returncode == 0


def test_uses_an_mpi_fixture(default_mpi):
    raise AssertionError("deselected: the fixture marks it")


def test_pure():
    assert 1 + 1 == 2


from needs import need, needs


@needs(False, "no frobnicator here")
def test_dependency_marked():
    pass


def test_dependency_called():
    need(False, "no frobnicator here")
"""


@pytest.fixture
def suite(pytester):
    pytester.makeconftest((HERE / "conftest.py").read_text())
    pytester.makepyfile(test_suite=SUITE)
    (pytester.path / "needs.py").write_text((HERE / "needs.py").read_text())
    return pytester


def test_unmarked_launches_fail_naming_themselves(suite, monkeypatch):
    """Run as `make check` runs: unmarked launches fail, each naming itself; the test using
    an MPI fixture and the marked one are deselected; a missing dependency skips, saying
    why (-rs)."""
    monkeypatch.delenv("COMMSCOPE_REQUIRE_ALL", raising=False)
    res = suite.runpytest_subprocess("-m", "not mpi", "-p", "no:cacheprovider", "-rfEs")
    out = res.stdout.str()
    res.assert_outcomes(passed=6, errors=4, skipped=2, deselected=2)
    for name in (
        "test_job_in_process_swallowed",
        "test_job_in_a_child",
        "test_mpiexec_started_by_hand",
        "test_with_a_module_fixture_that_launches",
    ):
        assert f"test_suite.py::{name} launches jobs or builds but has no mpi marker" in out
    assert "test_a_version_query_is_allowed launches" not in out
    assert "SKIPPED [2]" in out and "no frobnicator here" in out


def test_in_ci_a_missing_dependency_fails(suite, monkeypatch):
    monkeypatch.setenv("COMMSCOPE_REQUIRE_ALL", "1")
    res = suite.runpytest_subprocess("-k", "dependency", "-p", "no:cacheprovider")
    res.assert_outcomes(failed=1, errors=1)
    assert (
        "missing dependency (COMMSCOPE_REQUIRE_ALL=1, CI): no frobnicator here" in res.stdout.str()
    )
