"""Dependency skips that CI cannot take by accident.

``need(ok, reason)`` inside a test (or fixture), ``@needs(ok, reason)`` on one: when
``ok`` is false the test skips and says why, except under COMMSCOPE_REQUIRE_ALL=1
(scripts/test.sh sets it in CI as root, where scripts/setup.sh has installed Debian's
MPIs, gfortran, chromium, LAMMPS, HPCC and GROMACS, and PyPI is reachable): there a missing
dependency fails the test.  A test that does not apply here (another MPI's feature, a
machine without root) skips with ``pytest.skip`` as before.
"""

import importlib.util
import os

import pytest

REQUIRE_ALL = os.environ.get("COMMSCOPE_REQUIRE_ALL") == "1"


def need(ok, reason):
    """Skip (or, under COMMSCOPE_REQUIRE_ALL=1, fail) with ``reason`` unless ``ok``."""
    if ok:
        return
    if REQUIRE_ALL:
        pytest.fail(f"missing dependency (COMMSCOPE_REQUIRE_ALL=1, CI): {reason}", pytrace=False)
    pytest.skip(reason)


def needs(ok, reason):
    """``need`` as a decorator: checked when the test is set up (tests/conftest.py)."""
    return pytest.mark.needs(ok=bool(ok), reason=reason)


def importable(name):
    return importlib.util.find_spec(name) is not None


def need_module(name, reason):
    """The module ``name``, imported; ``need`` when it cannot be (``reason`` says where
    it comes from)."""
    need(importable(name), f"{name} is not importable: {reason}")
    return importlib.import_module(name)


#: What the OMPT tests say when Intel's OpenMP runtime is missing.
OMPT_RUNTIME = "intel-openmp wheel not installed (scripts/setup.sh installs it)"


def need_ompt_runtime():
    from commscope.collect import ompt

    need(ompt.runtime_library() is not None, OMPT_RUNTIME)
