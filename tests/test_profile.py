"""`commscope profile`: counts checked against what the profiled program's logic implies.

tests/programs/exact_threads.c documents its calls; every expectation below is
derived from that description, per thread, under MPI_THREAD_MULTIPLE.
"""

import json
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from commscope.cli import main
from commscope.collect.node_files import CounterFile, counter_ranks
from commscope.runs import open_run
from needs import importable, need

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"
T = 8  # threads per rank


def compile_program(mpi, name, out_dir):
    exe = Path(out_dir) / f"{name}-{mpi.name}"
    subprocess.run(
        [mpi.mpicc, "-O2", "-pthread", str(PROGRAMS / f"{name}.c"), "-o", str(exe)], check=True
    )
    return exe


@pytest.fixture(scope="module")
def exact_openmpi(default_mpi, tmp_path_factory):
    return compile_program(default_mpi, "exact_threads", tmp_path_factory.mktemp("progs"))


def profile(capsys, runs_root, *argv):
    code = main(["profile", "--runs", str(runs_root), "--quiet", *argv])
    out, err = capsys.readouterr()
    run_dirs = sorted(runs_root.iterdir())
    return code, out, err, (open_run(run_dirs[-1]) if run_dirs else None)


def expected_thread(t, rank):
    """Calls and counters of worker thread t on `rank`, from exact_threads.c."""
    k = 10 + t
    calls = {
        "MPI_Send" if rank == 0 else "MPI_Recv": 100 + t,
        "MPI_Irecv": k,
        "MPI_Isend": k,
        "MPI_Waitall": 1,
        "MPI_Send_init": 1,
        "MPI_Recv_init": 1,
        "MPI_Start": 10,
        "MPI_Wait": 10,
        "MPI_Request_free": 2,
        "MPI_Allreduce": 3,
        "MPI_Barrier": 1,
    }
    blocking = (100 + t) * 8 * (t + 1)
    sent = (100 + t if rank == 0 else 0) + k + 5
    received = (100 + t if rank == 1 else 0) + k + 5
    nb = k * 64 * (t + 1) + 5 * 16 * (t + 1)
    counters = dict(
        messages_sent=sent,
        messages_received=received,
        bytes_sent=nb + (blocking if rank == 0 else 0),
        bytes_received=nb + (blocking if rank == 1 else 0),
        collective_bytes=3 * (t + 1) * 8,
        any_source_receives=k if t % 2 else 0,
        any_tag_receives=0,
        requests_started=2 * k + 10,
        requests_completed=2 * k + 10,
        requests_untracked=0,
    )
    return calls, counters


def check_exact(run):
    functions = run.table("functions")
    counters = run.table("counters")
    for rank in (0, 1):
        f = functions[functions["rank"] == rank]
        c = counters[counters["rank"] == rank]
        # main thread: Init_thread, T Comm_dup and Comm_free, Finalize; T workers
        assert sorted(f["thread"].unique()) == list(range(T + 1))
        by_thread = {t: dict(zip(g["function"], g["calls"])) for t, g in f.groupby("thread")}
        main_thread = [t for t, calls in by_thread.items() if "MPI_Init_thread" in calls]
        assert len(main_thread) == 1
        assert by_thread.pop(main_thread[0]) == {
            "MPI_Init_thread": 1,
            "MPI_Comm_dup": T,
            "MPI_Comm_free": T,
            "MPI_Finalize": 1,
        }
        # a worker's slab is identified by its Isend count (10 + t)
        seen = set()
        for slab, calls in by_thread.items():
            t = calls["MPI_Isend"] - 10
            seen.add(t)
            want_calls, want_counters = expected_thread(t, rank)
            assert calls == want_calls, f"rank {rank} thread {t}"
            got = dict(zip(c[c["thread"] == slab]["counter"], c[c["thread"] == slab]["value"]))
            for name, value in want_counters.items():
                assert got[name] == value, f"rank {rank} thread {t} {name}"
        assert seen == set(range(T))
        rank_wide = dict(zip(c[c["thread"] == -1]["counter"], c[c["thread"] == -1]["value"]))
        assert rank_wide["outstanding_requests"] == 0 and rank_wide["posted_receives"] == 0
        # at least one thread's own requests were outstanding at once; never more than all
        assert (
            2 * (10 + T - 1)
            <= rank_wide["outstanding_requests_hwm"]
            <= sum(2 * (10 + t) + 2 for t in range(T))
        )
        assert 10 + T - 1 <= rank_wide["posted_receives_hwm"] <= sum(10 + t + 1 for t in range(T))
    peers = run.table("peers").set_index(["rank", "peer"])
    sent0 = sum(expected_thread(t, 0)[1]["messages_sent"] for t in range(T))
    sent1 = sum(expected_thread(t, 1)[1]["messages_sent"] for t in range(T))
    assert peers.loc[(0, 1), "messages_sent"] == sent0 == peers.loc[(1, 0), "messages_received"]
    assert peers.loc[(1, 0), "messages_sent"] == sent1 == peers.loc[(0, 1), "messages_received"]
    sends = functions[(functions["rank"] == 0) & (functions["function"] == "MPI_Send")]
    assert sends["bytes"].sum() == sum((100 + t) * 8 * (t + 1) for t in range(T))
    irecv = functions[(functions["rank"] == 1) & (functions["function"] == "MPI_Irecv")]
    assert irecv["bytes"].sum() == sum((10 + t) * 64 * (t + 1) for t in range(T))  # size received
    bins = run.table("size_bins")
    send_bins = bins[(bins["rank"] == 0) & (bins["function"] == "MPI_Send")]
    want = {}
    for t in range(T):
        b = (8 * (t + 1)).bit_length()
        want[b] = want.get(b, 0) + 100 + t
    assert dict(zip(send_bins["bin"], send_bins["count"])) == want


def test_counts_exact_with_8_threads_open_mpi(capsys, runs_root, exact_openmpi):
    code, out, err, run = profile(
        capsys, runs_root, "-n", "2", "--summary", "--", str(exact_openmpi)
    )
    assert code == 0, err
    assert run.meta["status"] == "complete" and run.meta["exit_status"] == 0
    check_exact(run)
    assert "messages_sent" in out  # the --summary table


@pytest.mark.mpich
def test_counts_exact_with_8_threads_mpich(capsys, runs_root, mpich_mpi, tmp_path):
    exe = compile_program(mpich_mpi, "exact_threads", tmp_path)
    code, out, err, run = profile(capsys, runs_root, "--mpi", "mpich", "--", str(exe))
    assert code == 0, err
    check_exact(run)


def test_snapshots_end_at_the_totals_and_pvars_are_sampled(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(
        capsys, runs_root, "--snapshot-every", "10ms", "--", str(exact_openmpi)
    )
    assert code == 0, err
    snaps = run.table("snapshots")
    counters = run.table("counters")
    for rank, s in snaps.groupby("rank"):
        s = s.sort_values("seq")
        assert s["seq"].tolist() == list(range(1, len(s) + 1))
        assert (s["time_s"].diff().dropna() >= 0).all()
        assert (s["messages_sent"].diff().dropna() >= 0).all()  # cumulative
        total = counters[(counters["rank"] == rank) & (counters["counter"] == "messages_sent")][
            "value"
        ].sum()
        assert s["messages_sent"].iloc[-1] == total
    # the pvars sampled are listed in the node files' metadata; the pvars table holds a row
    # only where a value changed from 0, so a run whose snapshots all met empty queues
    # (a fast one) has none: its presence is not asserted
    sampled = {
        p["name"]
        for f in run.raw_dir.glob("node.*.json")
        for p in json.loads(f.read_text())["pvars"]
    }
    if "openmpi" in run.meta["mpi"]["flavor"]:
        assert {"pml_ob1_posted_recvq_length", "pml_ob1_unexpected_msgq_length"} <= sampled
    if "pvars" in run.tables():
        assert set(run.table("pvars")["pvar"]) <= sampled


def test_counter_sets_select_what_is_counted(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--counters", "bytes", "--", str(exact_openmpi))
    assert code == 0, err
    assert run.meta["parameters"]["counters"] == ["bytes"]
    assert "peers" not in run.tables() and "size_bins" not in run.tables()
    c = run.table("counters")
    assert c[(c["rank"] == 0) & (c["counter"] == "messages_sent")]["value"].sum() == sum(
        expected_thread(t, 0)[1]["messages_sent"] for t in range(T)
    )
    assert c[c["counter"] == "requests_started"]["value"].sum() == 0  # requests set off


def test_timers_give_time_inside_mpi(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--", str(exact_openmpi))  # default: timers on
    assert code == 0, err
    f = run.table("functions")
    assert f["time_s"].notna().all() and (f["time_s"] >= 0).all()
    per_rank = f.groupby("rank")["time_s"].sum()
    # threads overlap, so time in MPI summed over threads can exceed the wall time, but not
    # wall time x threads
    assert (per_rank > 0).all() and (per_rank < run.meta["wall_s"] * (T + 1)).all()


def test_time_per_size_bin_is_the_time_of_the_calls_that_moved_the_message(
    capsys, runs_root, exact_openmpi, tmp_path
):
    """Default counters (timers on): a bin's time is that of its function's own calls that
    moved a message of the bin; a receive completed by MPI_Waitall or a persistent
    message moved by MPI_Start is counted in its posting function's bin, timed in none."""
    code, _, err, run = profile(capsys, runs_root, "--", str(exact_openmpi))
    assert code == 0, err
    assert "timers" in run.meta["parameters"]["counters"]
    bins = run.table("size_bins").groupby(["rank", "function"])["time_s"].sum()
    funcs = run.table("functions").groupby(["rank", "function"])["time_s"].sum()
    for rank in (0, 1):
        for f in ("MPI_Send" if rank == 0 else "MPI_Recv", "MPI_Isend", "MPI_Allreduce"):
            assert funcs[(rank, f)] > 0 and bins[(rank, f)] == pytest.approx(
                funcs[(rank, f)], rel=1e-9
            )
        for f in ("MPI_Irecv", "MPI_Send_init", "MPI_Recv_init"):
            assert bins[(rank, f)] == 0, f
    # a run converted before size_bins had time_s reads as not measured, report included
    old = tmp_path / "converted-before"
    shutil.copytree(run.path, old)
    pd.read_parquet(old / "size_bins.parquet").drop(columns="time_s").to_parquet(
        old / "size_bins.parquet"
    )
    assert open_run(old).table("size_bins")["time_s"].isna().all()
    assert main(["report", str(old), "-o", str(tmp_path / "old.html")]) == 0
    capsys.readouterr()
    assert "Time per message size: not measured" in (tmp_path / "old.html").read_text()
    code, _, err, run = profile(capsys, runs_root, "--counters", "bins", "--", str(exact_openmpi))
    assert code == 0, err
    assert run.table("size_bins")["time_s"].isna().all()  # no timers: not measured, never 0


def test_killed_rank_keeps_its_counts(capsys, runs_root, exact_openmpi, monkeypatch):
    monkeypatch.setenv("CRASH_AFTER_PHASE1", "1")
    code, _, err, run = profile(capsys, runs_root, "--timeout", "60", "--", str(exact_openmpi))
    assert code != 0
    # SIGKILL: no library sees it; Open MPI's prterun names the rank (profile/endings.py)
    assert "rank 1 killed by SIGKILL (signal 9)" in err.splitlines()[-1]
    assert run.meta["status"] == "failed"
    summary = run.table("ranks").set_index("rank")
    assert summary.loc[1, "state"] == "not finalized"
    assert (summary.loc[1, "ending"], summary.loc[1, "ending_value"]) == ("signal", 9)
    assert 1 in run.meta["profile"]["ranks"]["not_finalized"]
    f = run.table("functions")
    recv = f[(f["rank"] == 1) & (f["function"] == "MPI_Recv")]["calls"].sum()
    assert recv == sum(100 + t for t in range(T))  # every blocking receive before the kill


def test_max_threads_is_ignored_with_a_warning(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--max-threads", "4", "--", str(exact_openmpi))
    assert code == 0, err
    assert "--max-threads is ignored" in err
    check_exact(run)  # all 9 threads per rank have slabs of their own


def test_files_are_private(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--", str(exact_openmpi))
    assert code == 0, err
    assert stat.S_IMODE(run.raw_dir.stat().st_mode) == 0o700
    raw = list(run.raw_dir.iterdir())
    key = f"node.{socket.gethostname()}"
    assert {p.name for p in raw} >= {
        f"{key}.bin",
        f"{key}.json",
        f"{key}.snap",
        f"{key}.comms.csv",
        "summary.json",
    }
    for p in raw:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p.name


def test_top_reads_a_running_program(runs_root, default_mpi, tmp_path):
    """top attaches to the mapped files while the program is still inside MPI."""
    src = tmp_path / "slow.c"
    src.write_text("""
#include <mpi.h>
#include <unistd.h>
int main(int c, char **v) {
  MPI_Init(&c, &v); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); char b[8];
  for (int i = 0; i < 100; i++) { if (r == 0) MPI_Send(b, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                                 else MPI_Recv(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                                 usleep(100000); }
  MPI_Finalize(); return 0; }
""")
    exe = tmp_path / "slow"
    subprocess.run([default_mpi.mpicc, str(src), "-o", str(exe)], check=True)
    cmd = [
        sys.executable,
        "-m",
        "commscope",
        "profile",
        "--runs",
        str(runs_root),
        "--quiet",
        "--",
        str(exe),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60  # the program runs 10 s; top must catch it mid-run
        while time.monotonic() < deadline:
            runs = list(runs_root.iterdir())
            if runs and len(counter_ranks(runs[0] / "raw")) == 2:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        top = subprocess.run(
            [sys.executable, "-m", "commscope", "top", str(runs[0]), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert top.returncode == 0, top.stderr
        rows = json.loads(top.stdout)
        assert [r["rank"] for r in rows] == [0, 1]
        assert 0 < rows[0]["calls"] < 102  # mid-run (10 s in all): some of the 100 sends done
        assert proc.poll() is None
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    replay = subprocess.run(
        [sys.executable, "-m", "commscope", "top", str(runs[0]), "--replay", "--once", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        json.loads(replay.stdout)[0]["calls"] == 102
    )  # Init, 100 sends, Finalize (Comm_rank: not wrapped)


def test_trace_records_every_point_to_point_event(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--trace", "--", str(exact_openmpi))
    assert code == 0, err
    traces = sorted(run.raw_dir.glob("trace.0.*.bin"))
    records = cpu = 0
    for p in traces:
        data = p.read_bytes()
        assert data[:8] == b"CSTRACE1" and (len(data) - 64) % 56 == 0
        records += (len(data) - 64) // 56
        cpu += data[64 + 44 :: 56].count(11)  # CPU records (event 11), not calls' records
    # rank 0, thread t: 100+t sends, 2(10+t) posts + 2(10+t) completions, 10 starts + 10
    # completions, 3 MPI_Allreduce + 1 MPI_Barrier
    assert records - cpu == sum(100 + t + 4 * (10 + t) + 20 + 4 for t in range(T))
    assert cpu >= len(traces)  # at least each thread's first traced call
    c = run.table("counters")
    assert c[(c["rank"] == 0) & (c["counter"] == "trace_records")]["value"].sum() == records


def test_trace_limit_drops_records_and_says_so(capsys, runs_root, exact_openmpi, monkeypatch):
    monkeypatch.setenv("COMMSCOPE_TRACE_BUFFER", "16")  # flush often, so the limit bites
    code, _, err, run = profile(
        capsys, runs_root, "--trace", "--trace-limit", "4K", "--", str(exact_openmpi)
    )
    assert code == 0, err
    assert "trace size limit reached" in (run.path / "stderr.txt").read_text()
    c = run.table("counters")
    kept = c[(c["rank"] == 0) & (c["counter"] == "trace_records")]["value"].sum()
    dropped = c[(c["rank"] == 0) & (c["counter"] == "trace_records_dropped")]["value"].sum()
    assert kept * 56 <= 4096 and dropped > 0
    calls = sum(100 + t + 4 * (10 + t) + 20 + 4 for t in range(T))  # + collectives
    # and the CPU records: one at each thread's first traced call, at most one per call
    assert calls + T <= kept + dropped <= 2 * calls
    on_disk = sum((p.stat().st_size - 64) // 56 for p in run.raw_dir.glob("trace.0.*.bin"))
    assert on_disk == kept


# ---- the trace's clock alignment ------------------------------------------------

SKEW_NS = 50_000_000  # rank 1's clock: 50 ms ahead, as on a node whose clock is off


def message_gaps(trace, aligned):
    """Receive end minus send begin (ns) of every matched message of a trace."""
    import numpy as np
    from commscope.profile.export import match_messages

    ev = trace.events
    m = match_messages(trace)
    m = m[(m["send"] >= 0) & (m["recv"] >= 0)]

    def at(rows, col):
        out = np.empty(len(rows))
        for i, (r, t) in enumerate(zip(ev.loc[rows, "rank"], ev.loc[rows, col])):
            out[i] = trace.ns_of(int(r), t, aligned=aligned)
        return out

    return at(m["recv"], "t_end") - at(m["send"], "t_begin"), m


@pytest.mark.parametrize("which", ["default", "mpich"])
def test_trace_clock_alignment_undoes_a_skewed_clock(
    capsys, runs_root, tmp_path, request, monkeypatch, which
):
    """tests/programs/clock_skew.c on 3 ranks with rank 1's clock 50 ms ahead
    (COMMSCOPE_TEST_CLOCK_SKEW_NS shifts every clock reading of the library): on the
    ranks' own clocks, messages from rank 1 arrive before they were sent; aligned, every
    message arrives after it was sent, and the offset measured is the skew, to within
    half a round trip."""
    import commscope
    from commscope.collect.trace import read_trace

    mpi = request.getfixturevalue("default_mpi" if which == "default" else "mpich_mpi")
    exe = compile_program(mpi, "clock_skew", tmp_path)
    monkeypatch.setenv("COMMSCOPE_TEST_CLOCK_SKEW_NS", f"1:{SKEW_NS}")
    code, _, err, run = profile(
        capsys,
        runs_root,
        "-n",
        "3",
        "--trace",
        *(["--mpi", "mpich"] if which == "mpich" else []),
        "--",
        str(exe),
    )
    assert code == 0, err
    lines = [
        json.loads(x)
        for p in run.raw_dir.glob("clocks.*.jsonl")
        for x in p.read_text().splitlines()
    ]
    assert sorted((x["rank"], x["when"]) for x in lines) == [
        (r, w) for r in range(3) for w in ("finalize", "init")
    ]
    assert {x["rank"]: x.get("skew_ns", 0) for x in lines} == {0: 0, 1: SKEW_NS, 2: 0}
    trace = read_trace(run.raw_dir)
    unaligned, m = message_gaps(trace, aligned=False)
    aligned, _ = message_gaps(trace, aligned=True)
    assert len(m) == 10 * 2 * 4  # 10 rounds x 2 ranks x (2 blocking + 2 nonblocking messages)
    from_1 = (trace.events.loc[m["send"], "rank"] == 1).to_numpy()
    assert (unaligned[from_1] < -SKEW_NS / 2).all()  # arrived 50 ms before it was sent
    assert (aligned > 0).all(), aligned.min()
    off = trace.clock_offsets.set_index("rank")
    for when in ("init", "finalize"):
        error_s = off.loc[1, f"{when}_offset_s"] + SKEW_NS / 1e9
        assert abs(error_s) <= off.loc[1, f"{when}_rtt_s"] / 2 + 1e-7 and abs(error_s) < 20e-6, off
        assert off.loc[1, f"{when}_applied_offset_s"] == off.loc[1, f"{when}_offset_s"]
        # rank 2 shares rank 0's clock (one node, no skew): no offset at all
        assert off.loc[0, f"{when}_applied_offset_s"] == off.loc[2, f"{when}_applied_offset_s"] == 0
    # commscope.open gives the aligned times too
    ev = commscope.open(run.path).trace
    assert (
        ev.loc[m["recv"], "time_end_s"].to_numpy() > ev.loc[m["send"], "time_begin_s"].to_numpy()
    ).all()


def test_trace_clocks_of_a_killed_rank_keep_its_init_measurement(
    capsys, runs_root, exact_openmpi, monkeypatch
):
    """Rank 1 of exact_threads kills itself mid-run: its MPI_Init measurement was written
    at once, so its clock still has an offset (held constant)."""
    from commscope.collect.clocks import alignment, read_clocks

    monkeypatch.setenv("CRASH_AFTER_PHASE1", "1")
    code, _, err, run = profile(
        capsys, runs_root, "--trace", "--timeout", "60", "--", str(exact_openmpi)
    )
    assert code != 0
    m = read_clocks(run.raw_dir)
    assert set(m.loc[m["rank"] == 1, "when"]) == {"init"}
    assert set(m.loc[m["rank"] == 0, "when"]) <= {"init", "finalize"} and len(m) >= 2
    points, offsets = alignment(m)
    assert len(points[1][0]) == 1 and points[1][1].tolist() == [0]  # rank 0's node: no offset
    assert offsets.set_index("rank")["finalize_offset_s"].isna()[1]


def _write_clocks(raw, node, *rows):
    with open(raw / f"clocks.{node}.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def test_trace_clock_offsets_are_per_node_and_interpolated(tmp_path):
    """Ranks of one node share its offset (the measurement with the shortest round trip;
    rank 0's node: none), interpolated between MPI_Init and MPI_Finalize."""
    import numpy as np
    from commscope.collect.trace import Trace
    from commscope.collect.clocks import alignment, read_clocks

    def row(rank, node, when, local, offset, rtt, **kw):
        return dict(
            rank=rank,
            pid=1,
            node=node,
            when=when,
            local_ns=local,
            offset_ns=offset,
            rtt_ns=rtt,
            rounds=10,
            **kw,
        )

    _write_clocks(
        tmp_path,
        "a",
        row(0, "a", "init", 1000, 0, 0),
        row(1, "a", "init", 1010, -300, 4000),
        row(0, "a", "finalize", 9000, 0, 0),
        row(1, "a", "finalize", 9010, 200, 4000),
    )
    _write_clocks(
        tmp_path,
        "b",
        row(2, "b", "init", 5000, -2000, 5000),
        row(3, "b", "init", 5005, -1000, 3000),
        row(2, "b", "finalize", 15000, -3000, 2000),
        row(3, "b", "finalize", 15005, 9, 6000),
        row(4, "b", "init", 5000, 70, 1000, skew_ns=5),
    )  # another clock (a test skew)
    points, offsets = alignment(read_clocks(tmp_path))
    t = Trace(events=None, comms=None, clocks={}, alignment=points, clock_offsets=offsets)
    assert t.offset_ns(0, [0, 5000]).tolist() == t.offset_ns(1, [0, 5000]).tolist() == [0, 0]
    # node b: rank 3's init (3 us round trip), rank 2's finalize (2 us), a line between
    assert t.offset_ns(2, [5005, 10002.5, 15000, 20000]).tolist() == [-1000, -2000, -3000, -3000]
    assert t.offset_ns(3, [0]).tolist() == [-1000]
    assert t.offset_ns(4, [0, 99999]).tolist() == [70, 70]  # one measurement: constant
    assert t.offset_ns(7, [123]).tolist() == [0]  # not measured: none
    assert t.align_ns(2, np.array([10002.5])).tolist() == [8002.5]
    o = offsets.set_index("rank")
    assert o.loc[1, "init_offset_s"] == -300e-9 and o.loc[1, "init_applied_offset_s"] == 0
    assert o.loc[2, "finalize_rtt_s"] == 2e-6 and o.loc[2, "init_applied_offset_s"] == -1000e-9
    assert pd.isna(o.loc[4, "finalize_offset_s"]) and o.loc[4, "node"] == "b"


def test_trace_damaged_clocks_and_trace_headers_are_one_clear_error(tmp_path):
    from commscope.errors import InputError
    from commscope.collect.trace import HEADER_BYTES, read_file
    from commscope.collect.clocks import read_clocks

    good = dict(rank=1, node="a", when="init", local_ns=5, offset_ns=-3, rtt_ns=2)
    for bad, field in (
        ({**good, "rank": -1}, "line 1: rank"),
        ({**good, "when": "later"}, "line 1: when"),
        ({**good, "offset_ns": "x"}, "line 1: offset_ns"),
        ({k: v for k, v in good.items() if k != "rtt_ns"}, "line 1: rtt_ns"),
        ({**good, "local_ns": True}, "line 1: local_ns"),
        ([1, 2], "line 1"),
    ):
        (tmp_path / "clocks.a.jsonl").write_text(json.dumps(bad) + "\n")
        with pytest.raises(InputError, match=f"clocks.a.jsonl: {field}"):
            read_clocks(tmp_path)
    (tmp_path / "clocks.a.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(
        InputError, match="clocks.a.jsonl: line 2: rank.*measured its init offset twice"
    ):
        read_clocks(tmp_path)
    (tmp_path / "clocks.a.jsonl").write_text("{not json\n")
    with pytest.raises(InputError, match="clocks.a.jsonl: line 1"):
        read_clocks(tmp_path)
    (tmp_path / "clocks.a.jsonl").write_text(json.dumps(good) + "\n" + '{"rank": 2, "wh')
    assert len(read_clocks(tmp_path)) == 1  # a line cut short (killed while writing) is left out
    head = bytearray(HEADER_BYTES)
    head[:8] = b"CSTRACE1"
    for version, size, field in (
        (9, 56, "version"),
        (3, 48, "record_size"),
        (2, 56, "record_size"),
    ):
        head[8:12], head[12:16] = version.to_bytes(4, "little"), size.to_bytes(4, "little")
        (tmp_path / "trace.0.0.bin").write_bytes(bytes(head))
        with pytest.raises(InputError, match=f"trace.0.0.bin: {field}"):
            read_file(tmp_path / "trace.0.0.bin", 0, 0)


# ---- any program as given -----------------------------------------------------


def test_a_venv_python_runs_in_its_venv(capsys, runs_root, tmp_path):
    """A venv's bin/python is a symlink to the base interpreter, which started by its
    own name runs outside the venv (without mpi4py): the program keeps the name given."""
    python = Path(sys.prefix) / "bin" / "python"
    if sys.prefix == sys.base_prefix or not python.is_symlink():
        pytest.skip("the tests do not run in a venv")
    need(importable("mpi4py"), "mpi4py is not installed (the test extra: scripts/setup.sh)")
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\nfrom mpi4py import MPI\n"
        "for _ in range(3):\n    MPI.COMM_WORLD.Barrier()\n"
        "with open(f'{sys.argv[1]}.{MPI.COMM_WORLD.Get_rank()}', 'w') as f:\n"
        "    f.write(sys.prefix)\n"
    )
    code, _, err, run = profile(
        capsys, runs_root, "-n", "2", "--", str(python), str(script), str(tmp_path / "prefix")
    )
    assert code == 0, err
    assert run.meta["parameters"]["program"] == str(python)
    for rank in (0, 1):
        assert (tmp_path / f"prefix.{rank}").read_text() == sys.prefix
    f = run.table("functions")
    barriers = f[f["function"] == "MPI_Barrier"].groupby("rank")["calls"].sum()
    assert barriers.to_dict() == {0: 3, 1: 3}


def test_a_shebang_wrapper_around_an_mpi_program_is_counted(
    capsys, runs_root, exact_openmpi, tmp_path
):
    wrapper = tmp_path / "run.sh"
    wrapper.write_text(
        f'#!/bin/sh\n# sets things up, then runs the program\nexec "{exact_openmpi}" "$@"\n'
    )
    wrapper.chmod(0o755)
    code, _, err, run = profile(capsys, runs_root, "-n", "2", "--", str(wrapper))
    assert code == 0, err
    assert run.meta["parameters"]["program"] == str(wrapper)
    check_exact(run)


def test_the_mpi_check_reads_a_script_s_interpreter(default_mpi, exact_openmpi, tmp_path):
    """ldd cannot read a script: its interpreter is checked when that is an ELF binary."""
    from commscope import mpi as mpimod
    from commscope.profile.run import _elf_to_check, check_same_mpi

    lib = mpimod.build(default_mpi, target="commscope") / "libcommscope.so"
    scripts = {
        "sh": ("#!/bin/sh\nexec true\n", "/bin/sh"),
        "env": ("#!/usr/bin/env python3\nprint()\n", "/usr/bin/env"),
        "none": ("echo no shebang\n", None),
        "missing": ("#!/no/such/interpreter\n", None),
    }
    for name, (text, interpreter) in scripts.items():
        script = tmp_path / name
        script.write_text(text)
        script.chmod(0o755)
        assert _elf_to_check(script) == (Path(interpreter) if interpreter else None), name
        check_same_mpi(script, lib, default_mpi)  # nothing to refuse
    assert _elf_to_check(exact_openmpi) == exact_openmpi


# ---- bad input --------------------------------------------------------------


def test_missing_program_is_one_clear_error(capsys, runs_root):
    code, _, err, run = profile(capsys, runs_root, "--", str(runs_root / "no-such-app"))
    assert code == 2 and "no such program" in err and run is None


def test_non_mpi_program_is_refused(capsys, runs_root):
    code, _, err, run = profile(capsys, runs_root, "--", shutil.which("true"))
    assert code == 2
    assert "never called MPI_Init" in err and "no run directory was kept" in err
    assert run is None  # nothing half-written claims to be a profile


def test_second_profile_into_the_same_directory_is_refused(capsys, runs_root, exact_openmpi):
    code, _, err, run = profile(capsys, runs_root, "--name", "p", "--", str(exact_openmpi))
    assert code == 0, err
    before = {p.name: p.stat().st_mtime_ns for p in run.raw_dir.iterdir()}
    code, _, err, _ = profile(capsys, runs_root, "--name", "p", "--", str(exact_openmpi))
    assert code == 2 and "exists" in err
    assert {p.name: p.stat().st_mtime_ns for p in run.raw_dir.iterdir()} == before


def test_metadata_that_does_not_match_its_data_file(capsys, runs_root, exact_openmpi):
    for name in ("a", "b"):
        assert profile(capsys, runs_root, "--name", name, "--", str(exact_openmpi))[0] == 0
    a, b = runs_root / "a" / "raw", runs_root / "b" / "raw"
    meta = f"node.{socket.gethostname()}.json"
    shutil.copy(a / meta, b / meta)  # other run's nonce
    with pytest.raises(Exception) as info:
        CounterFile(b, 0)
    assert meta.replace(".json", ".bin") in str(info.value) and "different runs" in str(info.value)
    assert main(["top", str(runs_root / "b"), "--once"]) == 2
    assert "nonce" in capsys.readouterr().err


def test_program_linked_against_another_mpi_is_refused(capsys, runs_root, mpich_mpi, tmp_path):
    exe = compile_program(mpich_mpi, "exact_threads", tmp_path)
    code, _, err, run = profile(capsys, runs_root, "--mpi", "openmpi", "--", str(exe))
    assert code == 2 and "is linked against" in err and run is None


def test_bad_options(capsys, runs_root, exact_openmpi):
    for argv, word in (
        [["--counters", "nope"], "unknown counter set"],
        [["--snapshot-every", "fast"], "duration"],
        [["--snapshot-every", "1ms"], "10 ms"],
    ):
        code, _, err, run = profile(capsys, runs_root, *argv, "--", str(exact_openmpi))
        assert code == 2 and word in err and run is None
    assert main(["profile", "--runs", str(runs_root)]) == 2
    assert "name the program" in capsys.readouterr().err


def test_list_counters_is_the_table_of_the_library(capsys):
    assert main(["profile", "--list-counters"]) == 0
    out = capsys.readouterr().out
    for name in (
        "messages_sent",
        "outstanding_requests_hwm",
        "requests_cancelled",
        "rma_bytes_put",
        "per peer",
        "bytes_written",
        "per file",
    ):
        assert name in out
    doc = (Path(__file__).parents[1] / "docs" / "counters.md").read_text()
    assert out in doc, "docs/counters.md is out of date: scripts/gen_counter_docs.py"


def test_imbalance_formula_eq_4_1():
    from commscope.profile.imbalance import imbalance_percent

    assert imbalance_percent([1, 2, 3, 4]) == pytest.approx(60.0)  # (4 - 2.5) / 2.5
    assert imbalance_percent([5, 5, 5]) == 0.0
    assert imbalance_percent([0, 0]) != imbalance_percent([0, 0])  # NaN: no load at all


def test_load_imbalance_and_report_of_a_ring_with_known_loads(
    capsys, runs_root, default_mpi, tmp_path
):
    """Rank r works (r+1) x 10 ms per iteration: eq. 4.1 gives 60 % on 4 ranks.

    Sleeps overshoot by a similar amount on every rank (about 1 ms per sleep on a loaded
    2-core machine), which pulls the measured imbalance down a little."""
    from commscope.profile.imbalance import imbalance_percent, rank_loads

    exe = compile_program(default_mpi, "ring_imbalance", tmp_path)
    code, _, err, run = profile(
        capsys,
        runs_root,
        "-n",
        "4",
        "--callsites",  # default counters
        "--snapshot-every",
        "20ms",
        "--",
        str(exe),
        "20",
        "10000",
    )
    assert code == 0, err
    f = run.table("functions")
    per_rank = f.groupby(["rank", "function"])["calls"].sum().unstack()
    assert (per_rank["MPI_Sendrecv"] == 20).all() and (per_rank["MPI_Allreduce"] == 20).all()
    peers = run.table("peers")
    assert sorted(zip(peers["rank"], peers["peer"])) == [
        (0, 1),
        (0, 3),
        (1, 0),
        (1, 2),
        (2, 1),
        (2, 3),
        (3, 0),
        (3, 2),
    ]
    assert (peers.groupby("rank")["bytes_sent"].sum() == 20 * 1024).all()
    loads = rank_loads(run).set_index("rank")
    assert list(loads.sort_values("load_s").index) == [0, 1, 2, 3]
    # each rank's load holds its injected work; on a quiet machine eq. 4.1 gives about
    # 58 %, while a loaded one delays wake-ups unevenly (30 % to 80 % seen at load 8-10)
    assert (loads["load_s"] >= [0.2 * (r + 1) for r in range(4)]).all()
    assert 30 < imbalance_percent(loads["load_s"]) < 90
    out = tmp_path / "report.html"
    assert main(["report", str(run.path), "-o", str(out)]) == 0
    page = out.read_text()
    assert "Application profile" in page and "rank by rank matrix" in page
    assert "rank by time heatmaps" in page and "Load imbalance between ranks" in page
    assert "Time in MPI per rank" in page and "ranks sorted by time in MPI" in page
    assert "time per message size" in page and "min_time_s" in page  # call-site statistics


def test_mpi_time_per_rank_call_sites_and_sizes_of_the_ring(
    capsys, runs_root, default_mpi, tmp_path
):
    """The views mpiP and IPM users expect, on the ring of known loads: rank r works
    (r+1) x 10 ms per iteration, then all meet in MPI_Sendrecv (from r-1) and
    MPI_Allreduce, so the ranks that work less wait more: time in MPI falls with the
    rank, and rank 0, whose MPI_Sendrecv waits for the slowest rank's message, holds the
    most of it at the MPI_Sendrecv site.  Each rank sends and receives 20 x 1 KiB."""
    from commscope.profile.views import callsite_time_stats, rank_times, time_by_size

    exe = compile_program(default_mpi, "ring_imbalance", tmp_path)
    code, _, err, run = profile(
        capsys, runs_root, "-n", "4", "--callsites", "--", str(exe), "20", "10000"
    )
    assert code == 0, err
    t = rank_times(run).set_index("rank")
    assert list(t.sort_values("mpi_time_s", ascending=False).index) == [0, 1, 2, 3]
    assert ((t["mpi_pct"] > 0) & (t["mpi_pct"] < 100)).all()
    assert (t["compute_s"] >= [0.2 * (r + 1) for r in range(4)]).all()
    assert (t["wall_s"] - t["mpi_time_s"] - t["compute_s"]).abs().max() < 1e-12
    # top --once --json: the same per-rank times, rates over the whole run
    assert main(["top", str(run.path), "--once", "--json"]) == 0
    rows = {r["rank"]: r for r in json.loads(capsys.readouterr().out)}
    assert [rows[r]["mpi_pct"] > rows[r + 1]["mpi_pct"] for r in range(3)] == [True] * 3
    for r in range(4):  # 20 messages of 1 KiB each way: exact, whatever the wall time
        assert rows[r]["msgs_per_s"] * rows[r]["wall_s"] == pytest.approx(40, rel=1e-9)
        assert rows[r]["bandwidth_Bps"] * rows[r]["wall_s"] == pytest.approx(40 * 1024, rel=1e-9)
    assert main(["top", str(run.path), "--once"]) == 0
    assert "mpi_pct" in capsys.readouterr().out
    # call sites: 20 calls per rank at each line; MPI_Sendrecv's 1 KiB out and 1 KiB in
    sites = callsite_time_stats(run.table("callsites"), 10).set_index("function")
    sr = sites.loc["MPI_Sendrecv"]
    assert (sr["ranks"], sr["calls"], sr["bytes"]) == (4, 80, 4 * 20 * 2048)
    assert sr["max_rank"] == 0 and sr["min_time_s"] <= sr["mean_time_s"] <= sr["max_time_s"]
    assert sr["time_s"] == pytest.approx(4 * sr["mean_time_s"])
    f = run.table("functions").groupby("function")["time_s"].sum()
    assert sr["time_s"] == pytest.approx(f["MPI_Sendrecv"], rel=1e-9)
    # time per size: MPI_Sendrecv's 1 KiB bin holds all its time, MPI_Allreduce's 8 B bin its
    per, unbinned = time_by_size(run.table("size_bins"), run.table("functions"))
    per = per.set_index("min_bytes")
    assert per.loc[1024, "messages"] == 4 * 20 * 2 and per.loc[8, "messages"] == 4 * 20
    assert per.loc[1024, "time_s"] == pytest.approx(f["MPI_Sendrecv"], rel=1e-9)
    assert per.loc[8, "time_s"] == pytest.approx(f["MPI_Allreduce"], rel=1e-9)
    assert unbinned == pytest.approx(0, abs=1e-9)  # no Wait, no barrier: every call in a bin


def test_pcontrol_snapshots_match_ob1_queue_lengths(capsys, runs_root, default_mpi, tmp_path):
    """At MPI_Pcontrol(2) points the posted-receive counter equals Open MPI's own queue length."""
    exe = compile_program(default_mpi, "posted_queue", tmp_path)
    code, _, err, run = profile(capsys, runs_root, "--snapshot-every", "0", "--", str(exe), "25")
    assert code == 0, err
    s = run.table("snapshots")
    s0 = s[s["rank"] == 0].sort_values("seq")
    # start, the two marked points, the end
    assert s0["posted_receives"].tolist() == [0, 25, 0, 0]
    assert s0["posted_receives_hwm"].iloc[-1] == 25
    if default_mpi.flavor != "openmpi":
        pytest.skip("the ob1 queue-length pvars are Open MPI's")
    pv = run.table("pvars")
    q = pv[(pv["rank"] == 0) & (pv["pvar"] == "pml_ob1_posted_recvq_length") & (pv["index"] == 1)]
    # the table holds changes: the value at each snapshot is the last change up to it
    at = s0[["seq"]].merge(q[["seq", "value"]], on="seq", how="left")["value"].ffill().fillna(0)
    assert at.tolist() == [0, 25, 0, 0]
