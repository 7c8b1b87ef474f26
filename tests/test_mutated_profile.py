"""Mutated profile run directories: a clear exit 2 or a sane result, never a traceback or a hang.

A session fixture profiles a real program (2 ranks x 2 threads, --trace, snapshots,
all counters). Hypothesis then damages one file of a copy of that run: a field of a
JSON file changed, removed or retyped; a binary raw file (node file, snapshots, trace)
cut short or overwritten with garbage at some offset; a CSV file cut short; a Parquet
table with a column dropped or renamed, or replaced by garbage; any file replaced by
a named pipe or a directory. It runs every command that reads profile runs (top, its
replay, stats imbalance, model matching, report, export) and checks: exit 0 with
output, or exit 2 with one message naming the damaged file; no exception escapes
``cli.main``; nothing hangs (a time limit per command); the inputs are unchanged and
nothing outside the work directory is written.

COMMSCOPE_MUTANTS sets the number of cases (20 here, about 4 s each; the long pass:
COMMSCOPE_MUTANTS=300 pytest -s tests/test_mutated_profile.py, totals in
docs/validation.md).
"""

import contextlib
import io
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from commscope import cli

from test_mutated_inputs import WRONG_VALUES, _digest, _mutate, _paths
from test_profile import compile_program

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

EXAMPLES = int(os.environ.get("COMMSCOPE_MUTANTS", "20"))
LIMIT_S = 30  # a command that takes longer on a damaged run hangs
OUTCOMES = {}  # (command, exit status) -> cases
NAMED = {}  # does the one error line name the damaged file (or another it was read with)?


@pytest.fixture(scope="session")
def profiled(tmp_path_factory, default_mpi):
    """A real profile run with every kind of file a profile run holds."""
    root = tmp_path_factory.mktemp("profiled")
    exe = compile_program(default_mpi, "exact_threads", root)
    status, out, err = _cli(["profile", "-n", "2", "--trace", "--counters", "all",
                             "--snapshot-every", "20ms", "--runs", str(root / "runs"),
                             "--quiet", "--", str(exe), "2"])
    assert status == 0, err
    run = Path(out.strip().splitlines()[-1])
    kinds = {p.suffix for p in run.rglob("*") if p.is_file()}
    assert {".json", ".bin", ".snap", ".csv", ".parquet"} <= kinds, kinds
    return run


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(argv)
            except SystemExit as exc:  # argparse refusing an option
                status = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue(), err.getvalue()


def _commands(run, work):
    """(label, argv) of every command that reads a profile run."""
    return [("top --once", ["top", str(run), "--once", "--json"]),
            ("top --replay", ["top", str(run), "--replay", "--speed", "0", "--json"]),
            ("stats imbalance", ["stats", "imbalance", str(run), "--json"]),
            ("model matching", ["model", "matching", str(run), "--json"]),
            ("report", ["report", str(run), "-o", str(work / "report.html")]),
            ("export", ["export", str(run), "--format", "perfetto", "-o", str(work / "trace.json")])]


def _damage(data, path):
    """Damage ``path`` in place; a short description of what was done."""
    size = path.stat().st_size
    choice = data.draw(st.sampled_from(["special", "content"]), label="how")
    if choice == "special":
        kind = data.draw(st.sampled_from(["fifo", "directory", "empty", "symlink-loop"]))
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            path.mkdir()
        elif kind == "empty":
            path.write_bytes(b"")
        else:
            path.symlink_to(path.name)  # points at itself
        return kind
    raw = path.read_bytes()
    if path.suffix == ".json":
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if doc is not None:
            fields = sorted(_paths(doc), key=repr)
            field = data.draw(st.sampled_from(fields), label="field")
            how = data.draw(st.sampled_from(["replace", "delete", "wrap"]), label="change")
            value = data.draw(st.sampled_from(WRONG_VALUES), label="value")
            path.write_text(json.dumps(_mutate(doc, list(field), how, value)))
            return f"{how} {'/'.join(map(str, field))} -> {value!r}"
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq
        table = pq.read_table(path)
        col = data.draw(st.sampled_from(table.column_names), label="column")
        how = data.draw(st.sampled_from(["drop", "rename", "garbage"]), label="change")
        if how == "drop":
            pq.write_table(table.drop([col]), path)
        elif how == "rename":
            pq.write_table(table.rename_columns([c + "_x" if c == col else c
                                                 for c in table.column_names]), path)
        else:
            path.write_bytes(b"PAR1" + b"\x00garbage" * 8)
        return f"{how} column {col}"
    how = data.draw(st.sampled_from(["truncate", "overwrite"]), label="change")
    at = data.draw(st.integers(0, max(size - 1, 0)), label="offset")
    if how == "truncate":
        path.write_bytes(raw[:at])
        return f"cut to {at} bytes"
    junk = data.draw(st.binary(min_size=1, max_size=64), label="bytes")
    path.write_bytes(raw[:at] + junk + raw[at + len(junk):])
    return f"{len(junk)} bytes overwritten at {at}"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate],  # no shrinking: a case says what it did
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_damaged_profile_runs_exit_0_or_2_naming_the_file(profiled, tmp_path_factory, data):
    work = tmp_path_factory.mktemp("mutant")
    run = work / profiled.name
    shutil.copytree(profiled, run, symlinks=True)
    files = sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file())
    target = run / data.draw(st.sampled_from(files), label="file")
    what = _damage(data, target)
    before = _digest(run)
    for label, argv in _commands(run, work):
        try:
            status, out, err = _cli(argv)
        except Hang:
            pytest.fail(f"{label} hangs on {target.relative_to(run)}: {what}")
        case = f"{label} on {target.relative_to(run)} ({what})"
        assert status in (0, 2), f"{case}: exit {status}\n{err[-2000:]}"
        assert "Traceback" not in err, f"{case}:\n{err[-2000:]}"
        if status == 2:
            lines = [ln for ln in err.splitlines() if ln.startswith("commscope: error")]
            assert len(lines) == 1, f"{case}: {err[-2000:]}"
            named = target.name in lines[0]
            NAMED[named] = NAMED.get(named, 0) + 1
        OUTCOMES[(label, status)] = OUTCOMES.get((label, status), 0) + 1
        assert _digest(run) == before, f"{case}: the input changed"
        # outputs only where asked, and none left half-written by a command that failed
        assert {p.name for p in work.iterdir()} <= {run.name, "report.html", "trace.json"}
        if status == 2 and argv[-2] == "-o":
            assert not Path(argv[-1]).exists(), f"{case}: a failed command left {argv[-1]}"


def test_zz_report_how_many_cases_ran():
    print("\nmutated profile runs, cases per command and exit status:")
    for (command, status), n in sorted(OUTCOMES.items()):
        print(f"  {command:18s} exit {status}: {n}")
    print(f"  errors naming the damaged file itself: {NAMED.get(True, 0)} of "
          f"{sum(NAMED.values())}")
