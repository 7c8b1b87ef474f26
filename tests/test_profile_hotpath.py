"""The default counters' hot path stays at its instruction count (issue 37).

scripts/hotpath_instructions.py runs a fixed 2-rank program (tests/programs/hotpath.c)
under valgrind's callgrind with libcommscope.so preloaded and counts the instructions
the library executes per wrapped MPI call, in the steady state: instruction counts are
deterministic (to 0.1 per call here) where times move with the machine's load.
tests/data/hotpath_instructions.json holds the figures of the default counters (timers
included) as recorded (`scripts/hotpath_instructions.py --configs default --record
tests/data/hotpath_instructions.json`); a phase whose count grows by more than 20 %
fails, naming the hooks.  Each wheel takes one job of about 5 s under valgrind.  Skips,
saying why, without valgrind or its callgrind.h, or for an MPI the file has no figure of.
"""

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).parent / "data" / "hotpath_instructions.json"
GROWTH = 1.20


def _script():
    spec = importlib.util.spec_from_file_location(
        "hotpath_instructions", ROOT / "scripts" / "hotpath_instructions.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("which", ["default_mpi", "mpich_mpi"])
def test_default_path_instructions_per_call_do_not_grow(which, request, tmp_path):
    from commscope import mpi as mpimod

    m = request.getfixturevalue(which)
    hp = _script()
    reason = hp.valgrind_ready(m.mpicc)
    if reason:
        pytest.skip(reason)
    recorded = json.loads(RECORDED.read_text())["figures"]
    phases = [p for p in hp.PHASES if f"{m.name}/{p}" in recorded]
    if not phases:
        pytest.skip(f"{RECORDED.name} has no figure for {m.name}")
    lib = mpimod.build(m, target="commscope") / "libcommscope.so"
    exe = hp.compile_program(m, tmp_path)
    short = tempfile.mkdtemp(prefix="cs-hp-")  # Open MPI's session sockets need a short path
    try:
        result = hp.measure(m, lib, exe, "default", 200, phases, tmp=short)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    grown = []
    for phase in phases:
        hooks, total = hp.per_call(result[phase])
        ref = recorded[f"{m.name}/{phase}"]
        if total > GROWTH * ref:
            detail = ", ".join(f"{h} {v:.1f}" for h, v in hooks.items() if v)
            grown.append(f"{phase}: {total:.1f} instructions per call, recorded {ref} ({detail})")
    assert not grown, (
        f"{m.name}: the default path grew by more than {GROWTH - 1:.0%} "
        f"(scripts/hotpath_instructions.py --lines 40 shows where): " + "; ".join(grown)
    )
