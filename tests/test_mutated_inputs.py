"""Mutated run directories and machine models: a clear exit 2 or a sane result, never a traceback.

A session fixture makes real, small runs of every benchmark kind and fits a real
machine model. Hypothesis then changes one field of one meta.json or of the machine model (a
value of the wrong type, a removed field, a value wrapped in a list) in a copy, runs
the real CLI commands that read that file and checks: exit 0 with output, or exit 2
with one message naming the file; no exception escapes ``cli.main``; the input files
are byte for byte unchanged.
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commscope import cli
from commscope.bench.bsp import run_bsp
from commscope.bench.hvpingpong import run_hvpingpong
from commscope.bench.mtmatch import run_mtmatch
from commscope.bench.partitioned import run_partitioned
from commscope.bench.pingpong import run_pingpong
from commscope.bench.threads import run_threads

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

QUIET = dict(echo=False)
#: Values of every JSON type, and numbers that are out of range for any field.
WRONG_VALUES = ["text", "", True, False, None, 0, -1, 1.5, 1e308, [], [1, "a"], {}, {"a": 1}]
EXAMPLES = int(os.environ.get("COMMSCOPE_MUTANTS", "30"))  # more: COMMSCOPE_MUTANTS=300
SEEN = {"examples": 0, "exit_0": 0, "exit_2": 0}


@pytest.fixture(scope="session")
def originals(tmp_path_factory, default_mpi):
    """One real run of each kind and a fitted machine model (seconds each, 2 ranks)."""
    root = tmp_path_factory.mktemp("originals")
    runs = root / "runs"
    made = {
        "pingpong": run_pingpong(min_size=1, max_size=1 << 14, iters=20, warmup=2,
                                 large_iters=5, large_warmup=1, runs_root=runs, **QUIET),
        "hvpingpong": run_hvpingpong(counts=[1, 10, 50], sizes=[8], iters=2, warmup=1,
                                     runs_root=runs, **QUIET),
        "mtmatch": run_mtmatch("27", "2x1x1", None, trials=2, warmup=1, runs_root=runs, **QUIET),
        "threads": run_threads(ranks=2, threads=2, iterations=5, trials=1, warmup=1, work=1e-3,
                               compute="sleep", runs_root=runs, **QUIET),
        "partitioned": run_partitioned(threads=2, compute_s=2e-3, variability=0.1,
                                       sizes=[1 << 16, 1 << 18], runs_per_size=2, warmup=1,
                                       runs_root=runs, **QUIET),
        "bsp": run_bsp("ftq", ranks=2, intervals=10, warmup=1, mean=1e-3, sd=1e-4, seed=3,
                       runs_root=runs, **QUIET),
    }
    machine_model = root / "machine-model.json"
    assert _cli(["fit", str(made["pingpong"].path), "-o", str(machine_model)])[0] == 0
    return {"runs": {k: r.path for k, r in made.items()}, "machine_model": machine_model}


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exc:  # argparse rejecting an option
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _paths(doc, prefix=()):
    """Every field path in a JSON document (containers and leaves)."""
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _mutate(doc, path, how, value):
    if not path:
        return value if how == "replace" else [doc]
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "delete" and isinstance(parent, dict):
        del parent[key]
    elif how == "wrap":
        parent[key] = [parent[key]]
    else:
        parent[key] = value
    return doc


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def _commands(target, kind, work, originals):
    """The CLI commands that read the mutated file."""
    runs = originals["runs"]
    if kind == "machine_model":
        return [["model", "p2p", "--machine-model", str(target), "--sizes", "1K,64K",
                 "--locality", "intra-socket"],
                ["predict", "partitioned", str(runs["partitioned"]), "--machine-model",
                 str(target), "--replicas", "50"]]
    by_kind = {
        "pingpong": [["fit", str(target), "-o", str(work / "p.json")]],
        "hvpingpong": [["fit", str(runs["pingpong"]), str(target), "-o", str(work / "p.json")]],
        "partitioned": [["predict", "partitioned", str(target), "--machine-model", "bluewaters",
                         "--replicas", "50"]],
        "bsp": [["predict", "variability", str(target), "--target-ranks", "4",
                 "--replicas", "200", "--seed", "1"],
                ["stats", "bootstrap", str(target / "intervals.parquet"), "--target-ranks", "4",
                 "--replicas", "200", "--seed", "1"]],
        "mtmatch": [],
        "threads": [["stats", "arrivals", str(target / "compute.parquet")]],
    }
    return by_kind[kind] + [["report", str(target), "-o", str(work / "r.html")]]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_inputs_exit_0_or_2_naming_the_file(originals, tmp_path_factory, data):
    kind = data.draw(st.sampled_from(["machine_model", *sorted(originals["runs"])]), label="file")
    work = tmp_path_factory.mktemp("mutant")
    if kind == "machine_model":
        target = work / "machine-model.json"
        shutil.copy(originals["machine_model"], target)
        doc_file = target
    else:
        target = work / kind
        shutil.copytree(originals["runs"][kind], target)
        doc_file = target / "meta.json"
    doc = json.loads(doc_file.read_text())
    path = data.draw(st.sampled_from(sorted(_paths(doc), key=str)), label="field")
    how = data.draw(st.sampled_from(["replace", "delete", "wrap"]), label="how")
    value = data.draw(st.sampled_from(WRONG_VALUES), label="value")
    doc_file.write_text(json.dumps(_mutate(doc, path, how, value)))
    before = _digest(target if target.is_dir() else work)
    for argv in _commands(target, kind, work, originals):
        status, out, err = _cli(argv)
        SEEN["examples"] += 1
        assert status in (0, 2), (argv, status, err)
        SEEN[f"exit_{status}"] += 1
        if status == 2:
            lines = [line for line in err.splitlines() if line.strip()]
            assert lines and "Traceback" not in err, err
            assert any(str(target) in line or target.name in line for line in lines), (argv, err)
        else:
            assert out.strip(), argv
        for leftover in ("p.json", "r.html"):
            (work / leftover).unlink(missing_ok=True)
        assert _digest(target if target.is_dir() else work) == before, f"{argv} changed its input"


def test_zz_report_how_many_mutants_ran():
    """Printed with -s: how many commands the property test ran, by exit status."""
    print(f"\nmutated-input commands: {SEEN}")
