"""Every benchmark and figure script runs end to end in its quick mode.

scripts/bench.py (`make bench`) lists the scripts; each runs here as `make bench
QUICK=1` runs it (scripts/bench.py's run_one: a process of its own, --quick, stdout to
<script>.txt), so a renamed function, option or table column breaks a test, not the
next reader of the docs.  A script that exits 3 ("skipped: <reason>": no LAMMPS, no
PyPI, no OpenMP runtime) skips with that reason.  Figures are not asserted: the machine
is shared; only that the script ran and printed its table.
"""

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from needs import need

ROOT = Path(__file__).resolve().parents[1]


def _driver():
    spec = importlib.util.spec_from_file_location("bench_driver", ROOT / "scripts" / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _driver()


def test_make_bench_runs_every_script():
    """A script added to scripts/ is run by `make bench` (or deleted)."""
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    assert scripts - bench.NOT_BENCHMARKS == set(bench.SCRIPTS), (
        "scripts/bench.py SCRIPTS must list every benchmark script"
    )
    assert set(bench.QUICK_EXTRA) <= set(bench.SCRIPTS)


def _params():
    for name, (uses_mpi, _) in bench.SCRIPTS.items():
        marks = [pytest.mark.slow] + ([pytest.mark.mpi] if uses_mpi else [])
        yield pytest.param(name, marks=marks, id=name)


@pytest.fixture
def short_tmpdir():
    """A short TMPDIR for the script's temporary run directories (removed afterwards;
    Open MPI's session sockets must fit in 108 bytes, pytest's tmp_path may not)."""
    path = tempfile.mkdtemp(prefix="cs-quick-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("name", list(_params()))
def test_quick_mode(name, tmp_path, short_tmpdir):
    env = dict(
        os.environ,
        TMPDIR=short_tmpdir,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    )
    status, seconds, detail = bench.run_one(name, True, tmp_path, timeout=600, env=env)
    need(status != "skipped", f"scripts/{name}.py: {detail}")
    log = (tmp_path / f"{name}.log").read_text(errors="replace")
    assert status == "ok", (
        f"scripts/{name}.py {' '.join(bench.quick_args(name))}: {detail}\n{log[-3000:]}"
    )
    table = (tmp_path / f"{name}.txt").read_text()
    assert table.strip(), f"scripts/{name}.py printed no table"
