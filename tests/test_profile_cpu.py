"""CPU contention (collect/cpu.py, native/profiler/cs_prof_cpu.c): the time each rank's
threads were runnable but not running, per rank, thread and node, and the trace's CPU
samples.  Real jobs of tests/programs/cpu_contention.c; wall-clock bounds are loose (a
shared 2-core machine), the assertions are on shares."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import commscope
from commscope import launch
from commscope.cli import main
from commscope.collect.cpu import cpu_samples, node_load, rank_cpu, read_cpu_lines, thread_cpu
from commscope.errors import InputError

PROGRAMS = Path(__file__).parent / "programs"


def _exe(mpi, out_dir):
    exe = Path(out_dir) / f"cpu_contention-{mpi.name}"
    subprocess.run(
        [mpi.mpicc, "-O2", str(PROGRAMS / "cpu_contention.c"), "-o", str(exe)], check=True
    )
    return exe


def _profile(runs_root, name, *argv):
    code = main(["profile", "--runs", str(runs_root), "--name", name, "--quiet", *argv])
    assert code == 0
    return commscope.open(Path(runs_root) / name)


@pytest.fixture(scope="module")
def spinning(default_mpi, tmp_path_factory):
    """Two spinning ranks per core (at least 4 ranks), traced."""
    cores = launch.available_cores()
    if cores > 4:
        pytest.skip(f"{cores} cores: 8 or more spinning ranks would be a slow test")
    root = tmp_path_factory.mktemp("cpu")
    exe = _exe(default_mpi, root)
    n = max(4, 2 * cores)
    argv = (
        "-n",
        str(n),
        "--trace",
        "--snapshot-every",
        "50ms",
        "--",
        str(exe),
        "spin",
        "15",
        "0.03",
    )
    return _profile(root / "runs", "spin", *argv), n, cores


@pytest.mark.mpi
def test_spinning_ranks_on_too_few_cores_wait_for_a_core(spinning):
    p, n, cores = spinning
    r = rank_cpu(p)
    assert len(r) == n and r["measured"].all() and (r["source"] == "schedstat").all()
    # 2 ranks per core: each waits for about half its wall time (> 20 % on a loaded machine)
    share = r["cpu_wait_s"] / r["wall_s"]
    assert (share > 0.2).all(), r
    assert (r["cpu_run_s"] > 0.05).all() and (r["mpi_threads"] == 1).all()
    assert (r["os_threads"] >= 1).all() and (r["threads"] >= 1).all()
    load = node_load(p)
    assert len(load) == 1
    row = load.iloc[0]
    assert row["cores"] == cores and row["ranks"] == n and row["threads"] >= n
    assert bool(row["oversubscribed"])
    # the per-thread lines sum to the rank totals exactly (the same final reading)
    per = thread_cpu(p).groupby("rank")[["cpu_wait_s", "cpu_run_s"]].sum()
    tot = r.set_index("rank")
    assert np.allclose(per["cpu_wait_s"], tot["cpu_wait_s"], atol=1e-9)
    assert np.allclose(per["cpu_run_s"], tot["cpu_run_s"], atol=1e-9)
    # the snapshots' time series grows and ends at most at the totals
    s = p.snapshots.sort_values(["rank", "seq"])
    assert (s.groupby("rank")["cpu_wait_s"].diff().dropna() >= 0).all()
    last = s.groupby("rank")["cpu_wait_s"].last()
    assert (last <= tot["cpu_wait_s"] + 1e-9).all() and (last > 0.5 * tot["cpu_wait_s"]).all()


@pytest.mark.mpi
def test_trace_cpu_samples_are_cumulative_and_add_up_to_the_totals(spinning):
    p, n, _ = spinning
    samples = cpu_samples(p)
    assert set(samples["rank"]) == set(range(n))
    assert (samples.groupby("rank").size() >= 10).all()  # 15 calls after 30 ms of work each
    assert "CPU" not in set(p.trace["event"])  # kept out of the calls' records
    g = samples.sort_values(["rank", "thread", "record"]).groupby(["rank", "thread"])
    for col in ("cpu_wait_s", "cpu_run_s", "time_s"):
        assert (g[col].diff().dropna() >= 0).all(), col
    # a sample's time is its call's entry: the time_begin_s of the call's own record
    ev = p.trace[["rank", "thread", "record", "time_begin_s"]]
    nxt = samples.assign(record=samples["record"] + 1).merge(ev, on=["rank", "thread", "record"])
    assert len(nxt) == len(samples) and (nxt["time_s"] == nxt["time_begin_s"]).all()
    inc = g[["cpu_wait_s", "cpu_run_s"]].agg(lambda x: x.iloc[-1] - x.iloc[0]).groupby("rank").sum()
    tot = rank_cpu(p).set_index("rank")
    for col in ("cpu_wait_s", "cpu_run_s"):
        assert (inc[col] <= tot[col] + 1e-6).all(), col  # the samples lie inside the run
        assert (inc[col] >= 0.5 * tot[col]).all(), col  # and cover most of it


@pytest.mark.mpi
def test_a_damaged_cpu_record_is_refused(spinning, tmp_path, capsys):
    from commscope.collect.trace import CPU, HEADER_BYTES, RECORD, read_trace

    p, _, _ = spinning
    raw = tmp_path / "raw"
    shutil.copytree(p.run.raw_dir, raw)
    path = raw / "trace.0.0.bin"
    good = path.read_bytes()
    rec = np.frombuffer(good, RECORD, offset=HEADER_BYTES).copy()
    at = np.flatnonzero(rec["event"] == CPU)
    assert len(at) >= 2

    def damaged(change, match, version=None):
        r = rec.copy()
        change(r)
        head = bytearray(good[:HEADER_BYTES])
        if version is not None:
            head[8:12] = version.to_bytes(4, "little")
        path.write_bytes(bytes(head) + r.tobytes())
        with pytest.raises(InputError, match=match):
            read_trace(raw, callsites=False)

    def later(r):  # an instant with an end
        r["t_end"][at[1]] += 1

    damaged(later, f"trace.0.0.bin: record {at[1]}: a CPU record must have begin = end")

    def back(r):  # a wait that shrinks
        r["request"][at[1]] = r["request"][at[0]] - 1

    damaged(back, f"trace.0.0.bin: record {at[1]}: .*only grow")
    damaged(lambda r: None, f"record {at[0]}: unknown event code {CPU}", version=3)
    path.write_bytes(good + good[-10:])  # a last record cut short: left out, as any
    assert len(read_trace(raw, callsites=False).cpu) == len(cpu_samples(p))
    assert "last record cut short" in capsys.readouterr().err  # one commscope: warning: line


@pytest.mark.mpi
def test_sleeping_ranks_hardly_wait_for_a_core(default_mpi, tmp_path):
    exe = _exe(default_mpi, tmp_path)
    p = _profile(tmp_path / "runs", "sleep", "-n", "2", "--", str(exe), "sleep", "8", "0.05")
    r = rank_cpu(p)
    assert r["measured"].all() and (r["wall_s"] > 0.35).all()
    assert (r["cpu_wait_s"] < 0.05 * r["wall_s"]).all(), r
    assert (r["cpu_run_s"] < 0.5 * r["wall_s"]).all(), r
    assert cpu_samples(p) is None  # no trace
    assert not node_load(p)["oversubscribed"].any()


# ---- without a job -----------------------------------------------------------------


class _Fake:
    """What rank_cpu reads of commscope.open's Profile."""

    def __init__(self, raw, counters, ranks):
        self.run = type("R", (), {"raw_dir": raw})()
        self.meta = {}
        self._t = {"counters": counters, "ranks": ranks}

    def table(self, name):
        return self._t.get(name)


def _ranks(n=2):
    return pd.DataFrame({"rank": range(n), "node": "a", "host": "a", "threads": 1, "wall_s": 2.0})


def _counters(values):
    rows = [
        dict(rank=r, thread=-1, counter=c, kind="regular", unit="", value=float(v))
        for r, per in enumerate(values)
        for c, v in per.items()
    ]
    return pd.DataFrame(rows)


def test_rank_cpu_is_none_for_a_run_before_the_cpu_counters(tmp_path):
    old = _counters([{"outstanding_requests": 0}, {"outstanding_requests": 0}])
    assert rank_cpu(_Fake(tmp_path, old, _ranks())) is None
    assert node_load(_Fake(tmp_path, old, _ranks())) is None


def test_unreadable_schedstat_says_unmeasured_not_zero(tmp_path):
    per = {"cpu_wait": 0, "cpu_run": 1.5e9, "cpu_involuntary_switches": 40, "cpu_threads_hwm": 3}
    c = _counters([{**per, "cpu_source": 2}, {**per, "cpu_source": 1, "cpu_wait": 0.3e9}])
    r = rank_cpu(_Fake(tmp_path, c, _ranks())).set_index("rank")
    assert not r.loc[0, "measured"] and r.loc[0, "source"] == "rusage"
    assert np.isnan(r.loc[0, "cpu_wait_s"]) and r.loc[0, "cpu_run_s"] == 1.5
    assert r.loc[0, "involuntary_switches"] == 40 and r.loc[0, "os_threads"] == 3
    assert r.loc[1, "measured"] and r.loc[1, "cpu_wait_s"] == pytest.approx(0.3)
    off = _counters([{**per, "cpu_source": 0}] * 2)  # timers off: nothing measured
    r = rank_cpu(_Fake(tmp_path, off, _ranks()))
    assert r["source"].isna().all() and r["cpu_run_s"].isna().all() and not r["measured"].any()


def test_a_damaged_cpu_line_names_file_line_and_field(tmp_path):
    good = dict(
        rank=0,
        pid=5,
        source="schedstat",
        cpus_online=2,
        cpus_allowed=2,
        involuntary_switches=1,
        threads=[dict(tid=5, run_ns=10, wait_ns=3, mpi=True, exited=False)],
    )
    path = tmp_path / "cpu.a.jsonl"
    for bad, field in (
        ({**good, "rank": -1}, "line 1: rank"),
        ({**good, "source": "guess"}, "line 1: source"),
        (
            {**good, "threads": [dict(tid=5, run_ns=-1, wait_ns=3, mpi=True, exited=False)]},
            r"line 1: threads\[0\]",
        ),
        ([1], "line 1"),
    ):
        path.write_text(json.dumps(bad) + "\n")
        with pytest.raises(InputError, match=f"cpu.a.jsonl: {field}"):
            read_cpu_lines(tmp_path)
    path.write_text(json.dumps(good) + "\n" + '{"rank": 1, "pi')
    assert list(read_cpu_lines(tmp_path)) == [0]  # a line cut short is left out
    per = thread_cpu(_Fake(tmp_path, None, None))
    assert per.to_dict("records") == [
        dict(rank=0, tid=5, mpi=True, exited=False, cpu_wait_s=3e-9, cpu_run_s=1e-8)
    ]
