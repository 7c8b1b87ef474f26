"""Issue 42: the call sites a diagnosis names, from real 2-rank profiles.

- an mpi4py program (tests/programs/imbalance_mpi4py.py, rank 1 computes 3 x as long
  between Allreduce calls): the top finding names the culprit and the script's line,
  as the call-site table does (the trace's records were in mpi4py's module);
- a program rebuilt after its run (tests/programs/callsites.c): with --callsites the
  call sites resolved right after the run are kept; with the trace alone the findings
  stay grouped by the raw site (object and offset) and one note names the object.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import commscope
from commscope.cli import main
from commscope.diagnose.findings import diagnose
from commscope.runs import open_run

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"


def site_line(source, name):
    """The line of the ``# SITE: name`` comment of ``source``."""
    lines = Path(source).read_text().splitlines()
    return next(i for i, t in enumerate(lines, 1) if t.endswith(f"# SITE: {name}"))


def profile(capsys, runs_root, *argv):
    code = main(["profile", "--runs", str(runs_root), "--quiet", "-n", "2", *argv])
    out = capsys.readouterr().out
    assert code == 0, out
    return open_run(sorted(runs_root.iterdir())[-1])


@pytest.mark.parametrize(
    "which, callsites",
    [("default", ["--callsites"]), ("default", []), ("mpich", ["--callsites"])],
    ids=["callsites", "trace", "mpich-callsites"],
)
def test_mpi4py_imbalance_names_the_culprit_and_the_script_line(
    capsys, runs_root, request, which, callsites
):
    """The trace's records of a call from mpi4py hold the return address in mpi4py's
    module, the same for every line that calls Allreduce: their call site was null.
    They now name the Python line (the call-site table's), with or without --callsites."""
    pytest.importorskip("mpi4py")
    request.getfixturevalue("default_mpi" if which == "default" else "mpich_mpi")
    script = PROGRAMS / "imbalance_mpi4py.py"
    mpi = ["--mpi", "mpich"] if which == "mpich" else []
    run = profile(capsys, runs_root, "--trace", *callsites, *mpi, "--", sys.executable, script)
    want = f"imbalance_mpi4py.py:{site_line(script, 'allreduce')}"
    d = diagnose(commscope.open(run.path))
    top = next(f for f in d.findings if f.kind != "cpu_contention")  # a busy machine's first
    # mpi4py calls MPI_Allreduce_c where the MPI has it (MPICH)
    assert (top.kind, top.culprit_ranks, top.waiting_function.removesuffix("_c")) == (
        "load_imbalance",
        [1],
        "MPI_Allreduce",
    ), d.findings
    assert top.callsite == want
    ev = commscope.open(run.path).trace
    ar = ev[ev["function"].str.startswith("MPI_Allreduce")]
    assert len(ar) == 2 * 30 and (ar["callsite"] == want).all(), ar["callsite"].unique()
    assert (ar["caller"] == "<module>").all() and ar["callsite_reason"].isna().all()
    if callsites:  # the same line as the call-site table's
        cs = run.table("callsites")
        cs = cs[cs["function"].str.startswith("MPI_Allreduce")]
        assert {f"{Path(f).name}:{int(n)}" for f, n in zip(cs["file"], cs["line"])} == {want}
    # the JSON says the same
    assert main(["diagnose", str(run.path), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [f["callsite"] for f in found if f["kind"] == "load_imbalance"][:1] == [want]


def build(mpicc, out, *flags):
    src = PROGRAMS / "callsites.c"
    subprocess.run([mpicc, "-O1", "-pthread", "-g", *flags, str(src), "-o", str(out)], check=True)
    return out


def findings_of(run):
    d = diagnose(commscope.open(run.path))
    return [
        (f.kind, f.waiting_function, tuple(f.culprit_ranks), f.callsite)
        for f in d.findings
        if f.kind != "cpu_contention"  # the machine's, at no call site
    ], d


def test_a_rebuilt_program_keeps_its_findings_and_says_so(capsys, runs_root, tmp_path, default_mpi):
    """Rebuilt after the run, the program's call sites no longer resolved, every
    finding's callsite became null and the findings collapsed into one per function
    (64 became 5).  With --callsites the sites resolved after the run are used; with
    the trace alone the findings are the same, named by object and offset, and one
    note names the rebuilt program."""
    exe = build(default_mpi.mpicc, tmp_path / "app")
    with_table = profile(capsys, runs_root, "--trace", "--callsites", "--", exe)
    trace_only = profile(capsys, runs_root, "--trace", "--", exe)
    before = {run: findings_of(run)[0] for run in (with_table, trace_only)}
    assert all(f[3] and f[3].startswith("callsites.c:") for f in before[trace_only])
    build(default_mpi.mpicc, exe, "-DREBUILT=1", "-O2")  # a new build id, same path

    after, d = findings_of(with_table)
    assert after == before[with_table]
    assert not [n for n in d.notes if "not resolved" in n]

    after, d = findings_of(trace_only)
    assert len(after) == len(before[trace_only]) >= 1
    assert [f[:3] for f in after] == [f[:3] for f in before[trace_only]]
    assert all(re.fullmatch(r"app\+0x[0-9a-f]+", f[3]) for f in after), after
    assert len({f[3] for f in after}) == len({f[3] for f in before[trace_only]})
    notes = [n for n in d.notes if "not resolved" in n]
    assert len(notes) == 1 and str(exe) in notes[0] and "rebuilt after the run" in notes[0]
