"""`commscope export` (Perfetto JSON, OTF2) and `commscope.open`, on real traced programs.

Expectations come from the programs' descriptions: tests/programs/exact_threads.c (2
ranks, 2 threads), tests/programs/export_mix.c (one of every kind of traced
point-to-point call) and tests/programs/export_coll.c (2 ranks x 2 threads of
point-to-point calls and blocking, nonblocking and persistent collectives).
"""

import collections
import json
import shutil
from pathlib import Path

import pytest

import commscope
from commscope.cli import main
from commscope.errors import InputError
from commscope.collect.trace import read_trace
from commscope.profile.run import run_profile
from needs import need_module, need_ompt_runtime

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"
T = 2  # threads per rank of exact_threads


def _compile(mpi, name, out_dir):
    import subprocess

    exe = Path(out_dir) / name
    subprocess.run(
        [mpi.mpicc, "-O2", "-pthread", str(PROGRAMS / f"{name}.c"), "-o", str(exe)], check=True
    )
    return exe


@pytest.fixture(scope="module")
def runs(default_mpi, tmp_path_factory):
    """Four small real profiles: exact_threads traced and not, export_mix and export_coll
    traced."""
    root = tmp_path_factory.mktemp("export")
    threads = _compile(default_mpi, "exact_threads", root)
    mix = _compile(default_mpi, "export_mix", root)
    coll = _compile(default_mpi, "export_coll", root)
    kw = dict(runs_root=root / "runs", echo=False, timeout=120)
    out = {}
    for name, program, args, trace in (
        ("threads", threads, [str(T)], True),
        ("mix", mix, [], True),
        ("coll", coll, [], True),
        ("untraced", threads, [str(T)], False),
    ):
        run, status = run_profile(program, args, counters="all", trace=trace, run_name=name, **kw)
        assert status == 0
        out[name] = run.path
    return out


def export(capsys, *argv):
    code = main(["export", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# ---- what the programs imply ---------------------------------------------------------------


def threads_calls_per_rank():
    """exact_threads, thread t: 100+t blocking, 10+t Irecv, 10+t Isend, 1 Waitall,
    5 x (2 Start + 2 Wait), 3 Allreduce and 1 Barrier."""
    return sum(100 + t + 2 * (10 + t) + 1 + 20 + 4 for t in range(T))


def threads_messages():
    """rank 0 sends 100+t, 10+t and 5 per thread; rank 1 sends 10+t and 5 per thread."""
    return sum((100 + t) + 2 * (10 + t) + 2 * 5 for t in range(T))


MIX_CALLS = 24 + 25  # with the MPI_Barrier of each rank
MIX_MESSAGES = 14


# ---- Perfetto: the trace-event schema ------------------------------------------------------

REQUIRED = {
    "X": {"name", "ph", "ts", "dur", "pid", "tid"},
    "s": {"name", "cat", "ph", "id", "ts", "pid", "tid"},
    "f": {"name", "cat", "ph", "id", "ts", "pid", "tid", "bp"},
    "C": {"name", "ph", "ts", "pid", "args"},
    "M": {"name", "ph", "pid", "args"},
}


METADATA_NAMES = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def check_trace_event_schema(doc):
    """The Chrome trace-event JSON object format, as Perfetto and chrome://tracing read it.
    Returns the events by phase."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    by = collections.defaultdict(list)
    json_value = (str, int, float, list, dict, type(None))
    for e in doc["traceEvents"]:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - set(e)
        assert not missing, (e, missing)
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e.get("cat", ""), str), e
        assert isinstance(e.get("args", {}), dict), e
        assert all(isinstance(v, json_value) for v in e.get("args", {}).values()), e
        if e["ph"] == "M":
            assert e["name"] in METADATA_NAMES, e
        if e["ph"] in ("s", "f"):
            assert isinstance(e["id"], int) and not isinstance(e["id"], bool), e
        for k in ("pid", "tid"):
            if k in e:
                assert isinstance(e[k], int) and not isinstance(e[k], bool), e
        if "ts" in e:
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        by[e["ph"]].append(e)
    for e in by["X"]:
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert isinstance(e.get("args", {}), dict)
    for e in by["C"]:
        assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    # a counter track (process, name) is a time series: its samples in time order
    last_ts = {}
    for e in by["C"]:
        key = (e["pid"], e["name"])
        assert e["ts"] >= last_ts.get(key, 0), e
        last_ts[key] = e["ts"]
    for e in by["f"]:
        assert e["bp"] == "e"
    # every flow start has exactly one finish with the same id (and name, category)
    starts = collections.Counter((e["id"], e["cat"], e["name"]) for e in by["s"])
    finishes = collections.Counter((e["id"], e["cat"], e["name"]) for e in by["f"])
    assert starts == finishes and set(starts.values()) <= {1}
    # slices of one thread do not overlap (calls of a thread follow each other), and
    # every flow point lies in a slice of its thread (it binds to the enclosing slice)
    slices = collections.defaultdict(list)
    for e in by["X"]:
        slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in slices.values():
        spans.sort()
        for (b0, e0), (b1, _) in zip(spans, spans[1:]):
            assert e0 <= b1 + 1e-3
    import bisect

    for e in by["s"] + by["f"]:
        spans = slices[(e["pid"], e["tid"])]
        i = bisect.bisect_right(spans, (e["ts"], float("inf"))) - 1
        assert i >= 0 and spans[i][0] <= e["ts"] <= spans[i][1], e
    return by


def names(by, what):
    return {(e["pid"], e.get("tid")): e["args"]["name"] for e in by["M"] if e["name"] == what}


def test_perfetto_json_has_a_slice_per_call_and_an_arrow_per_message(runs, capsys):
    run = runs["threads"]
    code, out, err = export(capsys, run, "--format", "perfetto", "--json")
    assert code == 0, err
    summary = json.loads(out)
    path = run / "export" / "trace.json"
    assert summary["path"] == str(path) and summary["bytes"] == path.stat().st_size
    doc = json.loads(path.read_text())
    by = check_trace_event_schema(doc)
    assert summary["events"] == len(doc["traceEvents"])
    assert summary["ranks"] == 2 and summary["threads"] == 2 * (T + 1)  # + the main thread

    assert len(by["X"]) == 2 * threads_calls_per_rank() == summary["calls"]
    assert len(by["s"]) == len(by["f"]) == threads_messages() == summary["messages"]
    assert summary["unmatched_messages"] == 0
    # the peers table counts the same messages
    p = commscope.open(run)
    assert p.peers["messages_sent"].sum() == threads_messages()
    # each message's arrow leaves rank r's send and ends on the peer's receive
    pid_of_flow = {e["id"]: e["pid"] for e in by["s"]}
    assert all(pid_of_flow[e["id"]] == 1 - e["pid"] for e in by["f"])

    processes = names(by, "process_name")
    host = p.ranks["host"].iloc[0]
    assert {pid: n for (pid, _), n in processes.items()} == {
        0: f"rank 0 ({host})",
        1: f"rank 1 ({host})",
    }
    threads = names(by, "thread_name")
    assert {(e["pid"], e["tid"]) for e in by["X"]} <= set(threads)
    assert threads[(0, 1)] == "thread 1"

    sends = [e for e in by["X"] if e["name"] == "MPI_Send"]
    assert len(sends) == sum(100 + t for t in range(T))
    assert {e["args"]["bytes"] for e in sends} == {8 * (t + 1) for t in range(T)}
    assert all(e["args"]["peer"] == 1 and e["args"]["comm"] == "MPI_COMM_WORLD" for e in sends)
    waitall = [e for e in by["X"] if e["name"] == "MPI_Waitall"]
    assert sorted(e["args"]["records"] for e in waitall) == sorted(
        [2 * (10 + t) for t in range(T)] * 2
    )
    # snapshots as counter tracks: messages, bytes, calls and (counters all) time in MPI
    assert {e["name"] for e in by["C"]} == {"messages", "bytes", "calls", "mpi_time_s"}
    last = {}
    for e in sorted(by["C"], key=lambda e: e["ts"]):
        if e["name"] == "messages":
            last[e["pid"]] = e["args"]
    assert last[0]["sent"] == p.peers.set_index("rank").loc[0, "messages_sent"]
    assert doc["otherData"]["trace"] is True
    assert {f["function"] for f in doc["otherData"]["functions"]} >= {"MPI_Send", "MPI_Waitall"}


def test_every_kind_of_call_and_message_is_exported(runs, capsys):
    run = runs["mix"]
    code, out, err = export(capsys, run, "--format", "perfetto", "--json")
    assert code == 0, err
    by = check_trace_event_schema(json.loads((run / "export" / "trace.json").read_text()))
    assert len(by["X"]) == MIX_CALLS
    assert len(by["s"]) == MIX_MESSAGES and json.loads(out)["unmatched_messages"] == 0
    count = collections.Counter((e["pid"], e["name"]) for e in by["X"])
    assert count[(0, "MPI_Sendrecv")] == count[(1, "MPI_Sendrecv")] == 1
    assert count[(1, "MPI_Probe")] == 1
    assert count[(0, "MPI_Waitany")] == count[(1, "MPI_Waitany")] == 8
    assert count[(0, "MPI_Wait")] == count[(1, "MPI_Wait")] == 1
    assert count[(0, "MPI_Barrier")] == count[(1, "MPI_Barrier")] == 1
    dup = [e for e in by["X"] if e["name"] == "MPI_Send" and e["args"]["comm"] != "MPI_COMM_WORLD"]
    assert len(dup) == 3 and len({e["args"]["comm"] for e in dup}) == 1
    # the cancelled receive is no message: its completion has no arrow
    wait = [e for e in by["X"] if e["name"] == "MPI_Wait" and e["args"]["tag"] == 99]
    assert len(wait) == 2


# ---- OTF2 --------------------------------------------------------------------------------


def read_otf2(anchor):
    otf2 = need_module("otf2", "the export extra (scripts/setup.sh)")
    with otf2.reader.open(str(anchor)) as trace:
        d = trace.definitions
        groups = sorted(g.name for g in d.location_groups)
        locations = [(l.group.name, l.name, str(l.type)) for l in d.locations]
        comms = sorted(c.name for c in d.comms)
        resolution = d.clock_properties.timer_resolution
        events = collections.Counter()
        per_location = collections.defaultdict(list)
        for location, event in trace.events:
            events[type(event).__name__] += 1
            per_location[(location.group.name, location.name)].append(event)
    return groups, locations, comms, resolution, events, per_location


def test_otf2_archive_reads_back_with_every_event(runs, capsys):
    need_module("otf2", "the export extra (scripts/setup.sh)")
    run = runs["mix"]
    code, out, err = export(capsys, run, "--format", "otf2", "--json")
    assert code == 0, err
    summary = json.loads(out)
    anchor = run / "export" / "traces.otf2"
    assert summary["path"] == str(anchor)
    assert (run / "export" / "traces.def").is_file() and (run / "export" / "traces").is_dir()
    groups, locations, comms, resolution, ev, per_location = read_otf2(anchor)
    assert groups == ["rank 0", "rank 1"] and resolution == 10**9
    assert sum(ev.values()) == summary["events"]
    assert ev["Enter"] == ev["Leave"] == MIX_CALLS
    records = read_trace(run / "raw").events["event"].value_counts()
    assert ev["MpiSend"] == records["SEND"] == 5 + 1
    assert ev["MpiRecv"] == records["RECV"] == 1 + 5
    assert ev["MpiIsend"] == records["ISEND"] == 8
    assert ev["MpiIrecvRequest"] == records["IRECV"] == 10
    assert ev["MpiIrecv"] == 8 and ev["MpiIsendComplete"] == 8 and ev["MpiRequestCancelled"] == 2
    assert ev["MpiCollectiveBegin"] == ev["MpiCollectiveEnd"] == records["COLL"] == 2
    assert ev["Metric"] == summary["snapshots"] > 0
    assert {"MPI_COMM_WORLD", "MPI_COMM_SELF"} <= set(comms) and len(comms) == 4  # + the dup
    # every location's events in time order, Enter and Leave nested
    for events in per_location.values():
        times = [e.time for e in events]
        assert times == sorted(times)
        depth = 0
        for e in events:
            depth += {"Enter": 1, "Leave": -1}.get(type(e).__name__, 0)
            assert depth in (0, 1)
        assert depth == 0


def test_otf2_of_a_threaded_program(runs, capsys):
    need_module("otf2", "the export extra (scripts/setup.sh)")
    run = runs["threads"]
    # the archive's parts: threads.otf2, threads.def and threads/, the run directory
    # itself here: never replaced, even with --overwrite
    code, _, err = export(
        capsys, run, "--format", "otf2", "-o", run.parent / "threads.otf2", "--force"
    )
    assert code == 2 and "not an earlier export" in err and (run / "meta.json").is_file()
    out_path = run.parent / "threads-trace.otf2"
    code, out, err = export(capsys, run, "--format", "otf2", "-o", out_path)
    assert code == 0, err
    code, out, err = export(capsys, run, "--format", "otf2", "-o", out_path, "--overwrite")
    assert code == 0, err
    groups, locations, _, _, ev, _ = read_otf2(out_path)
    assert len(groups) == 2
    assert sum(1 for g, _, t in locations if g == "rank 0" and t.endswith("CPU_THREAD")) == T + 1
    assert ev["Enter"] == ev["Leave"] == 2 * threads_calls_per_rank()
    records = read_trace(run / "raw").events["event"].value_counts()
    assert ev["MpiSend"] == records["SEND"] == sum(100 + t for t in range(T))


# ---- without a trace; refusals ------------------------------------------------------------


def test_a_run_without_trace_exports_counters_and_says_how_to_trace(runs, capsys, tmp_path):
    run = runs["untraced"]
    out_path = tmp_path / "t.json"
    code, out, err = export(capsys, run, "--format", "perfetto", "-o", out_path)
    assert code == 0, err
    assert "profile --trace" in err
    by = check_trace_event_schema(json.loads(out_path.read_text()))
    assert not by["X"] and not by["s"] and by["C"]
    doc = json.loads(out_path.read_text())
    assert doc["otherData"]["trace"] is False and doc["otherData"]["functions"]
    if need_module("otf2", "the export extra (scripts/setup.sh)"):
        code, _, err = export(capsys, run, "--format", "otf2", "-o", tmp_path / "t.otf2")
        assert code == 0 and "profile --trace" in err
        _, _, _, _, ev, _ = read_otf2(tmp_path / "t.otf2")
        assert ev["Enter"] == 0 and ev["Metric"] > 0


def test_an_existing_output_is_kept_unless_forced(runs, capsys, tmp_path):
    run = runs["mix"]
    target = tmp_path / "mine.json"
    target.write_text("precious")
    code, _, err = export(capsys, run, "--format", "perfetto", "-o", target)
    assert code == 2 and str(target) in err and "--overwrite" in err
    assert target.read_text() == "precious"
    code, _, err = export(capsys, run, "--format", "perfetto", "-o", target, "--overwrite")
    assert code == 0, err
    assert json.loads(target.read_text())["traceEvents"]
    # an OTF2 archive is refused when any of its parts exists
    (tmp_path / "a.def").write_text("x")
    code, _, err = export(capsys, run, "--format", "otf2", "-o", tmp_path / "a.otf2")
    assert code == 2 and "a.def" in err
    code, _, err = export(capsys, run, "--format", "otf2", "-o", tmp_path / "a.json")
    assert code == 2 and ".otf2" in err


def test_bad_input_is_one_clear_error(runs, capsys, tmp_path, new_run):
    other = new_run("pingpong").finish()
    code, _, err = export(capsys, other.path, "--format", "perfetto")
    assert code == 2 and "meta.json: kind" in err and "profile" in err
    with pytest.raises(InputError, match="kind"):
        commscope.open(other.path)
    code, _, err = export(capsys, tmp_path / "nowhere", "--format", "perfetto")
    assert code == 2 and "nowhere" in err
    broken = tmp_path / "broken"
    shutil.copytree(runs["mix"], broken, ignore=shutil.ignore_patterns("export"))
    f = broken / "raw" / "trace.0.0.bin"
    f.write_bytes(b"NOTTRACE" + f.read_bytes()[8:])
    code, _, err = export(capsys, broken, "--format", "perfetto")
    assert code == 2 and "trace.0.0.bin: magic" in err
    assert not (broken / "export" / "trace.json").exists()


# ---- the Python API ----------------------------------------------------------------------


def test_open_returns_the_tables(runs):
    p = commscope.open(runs["threads"])
    assert p.meta["kind"] == "profile"
    for name in ("functions", "peers", "counters", "snapshots", "communicators", "ranks"):
        assert len(getattr(p, name)) > 0, name
    assert p.callsites is None and p.threads is None  # no --callsites; no --ompt
    f = p.functions
    assert f[(f["rank"] == 0) & (f["function"] == "MPI_Send")]["calls"].sum() == sum(
        100 + t for t in range(T)
    )
    assert len(p.trace) == len(read_trace(runs["threads"] / "raw").events)
    assert len(p.calls()) == 2 * threads_calls_per_rank()
    m = p.messages()
    assert ((m["send"] >= 0) & (m["recv"] >= 0)).sum() == threads_messages()
    q = commscope.open(runs["untraced"])
    assert q.trace is None and q.calls() is None and q.messages() is None
    assert len(q.functions) and "rank" in q.snapshots


# ---- function names and collectives (export_coll) -----------------------------------------

CT = 2  # threads per rank of export_coll
COLL_BYTES = {  # collective -> {rank: (root, bytes sent, bytes received)}, from the program
    "MPI_Bcast": {0: (0, 100, 0), 1: (0, 0, 100)},
    "MPI_Reduce": {0: (1, 32, 0), 1: (1, 32, 32)},
    "MPI_Allreduce": {0: (-1, 8, 8), 1: (-1, 8, 8)},
    "MPI_Gather": {0: (0, 8, 16), 1: (0, 8, 0)},
    "MPI_Barrier": {0: (-1, 0, 0), 1: (-1, 0, 0)},
    "MPI_Iallreduce": {0: (-1, 16, 16), 1: (-1, 16, 16)},
    "MPI_Ibcast": {0: (1, 0, 32), 1: (1, 32, 0)},
    "MPI_Allreduce_init": {0: (-1, 8, 8), 1: (-1, 8, 8)},
}


def coll_records(rank):
    """export_coll: one worker thread's trace records by (event, function)."""
    rec = {
        ("IRECV", "MPI_Irecv"): 2,
        ("ISEND", "MPI_Isend"): 2,
        ("COMPLETE", "MPI_Waitall"): 4,
        ("ICOLL", "MPI_Iallreduce"): 1,
        ("ICOLL", "MPI_Ibcast"): 1,
        ("ICOLL", "MPI_Start"): 2,
        ("COLL_DONE", "MPI_Wait"): 4,
    }
    rec[("SEND", "MPI_Send") if rank == 0 else ("RECV", "MPI_Recv")] = 3
    for f in ("MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Barrier"):
        rec[("COLL", f)] = 1
    return rec


COLL_CALLS = 21  # per thread and rank: records, with the Waitall's 4 as one call


def coll_otf2_events(rank):
    """export_coll: the OTF2 events one rank's threads must hold, from the program."""
    return {
        "Enter": CT * COLL_CALLS,
        "Leave": CT * COLL_CALLS,
        "MpiSend": CT * 3 * (rank == 0),
        "MpiRecv": CT * 3 * (rank == 1),
        "MpiIsend": CT * 2,
        "MpiIrecvRequest": CT * 2,
        "MpiIrecv": CT * 2,
        "MpiIsendComplete": CT * 2,
        "MpiCollectiveBegin": CT * 5,
        "MpiCollectiveEnd": CT * 5,
        "NonBlockingCollectiveRequest": CT * 4,
        "NonBlockingCollectiveComplete": CT * 4,
    }


def check_coll_trace(run):
    """The trace of export_coll names every record's function and holds every collective
    with its root and bytes; returns the trace's events."""
    ev = read_trace(Path(run) / "raw").events
    workers = ev[ev["thread"] > 0]
    assert len(workers) == len(ev)  # the main thread makes no traced call
    for (rank, thread), d in ev.groupby(["rank", "thread"]):
        got = collections.Counter(zip(d["event"], d["function"]))
        assert got == coll_records(rank), (rank, thread, got)
    coll = ev[ev["event"].isin(["COLL", "ICOLL", "COLL_DONE"])]
    for row in coll.itertuples():
        root, sent, received = COLL_BYTES[row.collective][row.rank]
        assert (row.peer, row.bytes, row.bytes_received) == (root, sent, received), row
        assert (row.request == 0) == (row.event == "COLL"), row
        assert row.comm_key[0] == (0, 1)  # the thread's duplicate of MPI_COMM_WORLD
    # a persistent collective starts twice under one request id, named by its init
    starts = coll[(coll["function"] == "MPI_Start")]
    assert set(starts["collective"]) == {"MPI_Allreduce_init"}
    assert starts.groupby(["rank", "thread"])["request"].nunique().eq(1).all()
    return ev


def check_coll_otf2(anchor, ev, snapshots):
    """Read the archive back with the OTF2 reader: per rank and event kind, the counts
    the program implies and the trace holds; collective events inside their call."""
    otf2 = need_module("otf2", "the export extra (scripts/setup.sh)")
    per_rank = collections.defaultdict(collections.Counter)
    with otf2.reader.open(str(anchor)) as trace:
        assert sorted(g.name for g in trace.definitions.location_groups) == ["rank 0", "rank 1"]
        threads = collections.Counter(
            l.group.name for l in trace.definitions.locations if str(l.type).endswith("CPU_THREAD")
        )
        assert threads == {"rank 0": CT + 1, "rank 1": CT + 1}  # + the main thread
        open_region = {}
        for location, event in trace.events:
            kind = type(event).__name__
            rank = int(location.group.name.split()[1])
            per_rank[rank][kind] += 1
            key = (rank, location.name)
            if kind == "Enter":
                assert key not in open_region
                open_region[key] = event.region.name
            elif kind == "Leave":
                assert open_region.pop(key) == event.region.name
            elif kind in ("MpiCollectiveBegin", "MpiCollectiveEnd"):
                assert open_region[key] in COLL_BYTES, (key, kind)
            if kind == "MpiCollectiveEnd":
                root, sent, received = COLL_BYTES[open_region[key]][rank]
                assert str(event.collective_op).split(".")[-1] == open_region[key][4:].upper()
                assert (event.root if root >= 0 else -1, event.size_sent, event.size_received) == (
                    root,
                    sent,
                    received,
                )
            if kind == "NonBlockingCollectiveComplete":
                assert open_region[key] == "MPI_Wait"
                assert str(event.collective_op).split(".")[-1] in ("ALLREDUCE", "BCAST")
        assert not open_region
    for rank in (0, 1):
        mine = ev[ev["rank"] == rank]
        n = collections.Counter(mine["event"])
        recv_done = int(((mine["event"] == "COMPLETE") & (mine["flags"] & 1 == 1)).sum())
        from_trace = {
            "MpiSend": n["SEND"],
            "MpiRecv": n["RECV"],
            "MpiIsend": n["ISEND"],
            "MpiIrecvRequest": n["IRECV"],
            "MpiIrecv": recv_done,
            "MpiIsendComplete": n["COMPLETE"] - recv_done,
            "MpiCollectiveBegin": n["COLL"],
            "MpiCollectiveEnd": n["COLL"],
            "NonBlockingCollectiveRequest": n["ICOLL"],
            "NonBlockingCollectiveComplete": n["COLL_DONE"],
        }
        expected = coll_otf2_events(rank)
        got = per_rank[rank]
        for kind, count in expected.items():
            assert got[kind] == count, (rank, kind, got[kind], count)
            if kind in from_trace:
                assert got[kind] == from_trace[kind], (rank, kind)
        assert got["Metric"] == int((snapshots["rank"] == rank).sum()) > 0
        # nothing else: every event is accounted for
        assert set(got) <= set(expected) | {"Metric"}, got
    return per_rank


def test_export_names_functions_and_writes_collectives_openmpi(runs, capsys):
    run = runs["coll"]
    ev = check_coll_trace(run)
    code, out, err = export(capsys, run, "--format", "perfetto", "--json")
    assert code == 0, err
    summary = json.loads(out)
    by = check_trace_event_schema(json.loads((run / "export" / "trace.json").read_text()))
    assert len(by["X"]) == summary["calls"] == 2 * CT * COLL_CALLS
    assert len(by["s"]) == summary["messages"] == CT * (3 + 2 * 2)  # blocking + both ranks' Isends
    names = collections.Counter((e["pid"], e["name"]) for e in by["X"])
    for rank in (0, 1):
        assert names[(rank, "MPI_Waitall")] == CT and names[(rank, "MPI_Wait")] == 4 * CT
        assert names[(rank, "MPI_Start")] == 2 * CT and names[(rank, "MPI_Ibcast")] == CT
    for e in by["X"]:
        if e["name"] in COLL_BYTES:
            root, sent, received = COLL_BYTES[e["name"]][e["pid"]]
            a = e["args"]
            assert (a["root"], a["bytes_sent"], a["bytes_received"]) == (root, sent, received), e
            assert a["collective"] == e["name"] and a["comm"].startswith("comm ")
    waits = [e for e in by["X"] if e["name"] == "MPI_Wait"]
    assert {e["args"]["collective"] for e in waits} == {
        "MPI_Iallreduce",
        "MPI_Ibcast",
        "MPI_Allreduce_init",
    }

    code, out, err = export(capsys, run, "--format", "otf2", "--json")
    assert code == 0, err
    summary = json.loads(out)
    per_rank = check_coll_otf2(run / "export" / "traces.otf2", ev, commscope.open(run).snapshots)
    assert sum(sum(c.values()) for c in per_rank.values()) == summary["events"]


def test_export_of_collectives_mpich(mpich_mpi, tmp_path, capsys):
    exe = _compile(mpich_mpi, "export_coll", tmp_path)
    run, status = run_profile(
        exe,
        [],
        counters="all",
        trace=True,
        run_name="coll",
        mpi_spec="mpich",
        runs_root=tmp_path / "runs",
        echo=False,
        timeout=120,
    )
    assert status == 0
    ev = check_coll_trace(run.path)
    code, out, err = export(capsys, run.path, "--format", "otf2", "--json")
    assert code == 0, err
    check_coll_otf2(run.path / "export" / "traces.otf2", ev, commscope.open(run.path).snapshots)


def test_a_version_1_trace_is_named_by_kind(runs, tmp_path, capsys):
    """A trace written before function ids (version 1: u16 event and flags) still exports,
    its calls named by what they did."""
    import numpy as np
    from commscope.collect.trace import HEADER_BYTES, RECORD, RECORD_V1

    import pandas as pd

    old = tmp_path / "old"
    shutil.copytree(runs["mix"], old, ignore=shutil.ignore_patterns("export"))
    kept = {}
    for f in (old / "raw").glob("trace.*.bin"):
        data = f.read_bytes()
        rec = np.frombuffer(data, RECORD, offset=HEADER_BYTES)
        rec = rec[~np.isin(rec["event"], (7, 8, 9))]  # version 1 had no collectives
        v1 = np.zeros(len(rec), RECORD_V1)
        for name in RECORD_V1.names:
            v1[name] = rec[name]
        head = bytearray(data[:HEADER_BYTES])
        head[8:12], head[12:16] = (1).to_bytes(4, "little"), (48).to_bytes(4, "little")
        f.write_bytes(bytes(head) + v1.tobytes())
        _, rank, thread, _ = f.name.split(".")
        kept[(int(rank), int(thread))] = len(rec)
    # the run's own count of records written says what version 1 wrote
    counters = pd.read_parquet(old / "counters.parquet")
    for (rank, thread), n in kept.items():
        at = (
            (counters["counter"] == "trace_records")
            & (counters["rank"] == rank)
            & (counters["thread"] == thread)
        )
        counters.loc[at, "value"] = n
    counters.to_parquet(old / "counters.parquet", index=False)
    assert read_trace(old / "raw").events["function"].isna().all()
    code, out, err = export(capsys, old, "--format", "perfetto", "--json")
    assert code == 0, err
    by = check_trace_event_schema(json.loads((old / "export" / "trace.json").read_text()))
    count = collections.Counter(e["name"] for e in by["X"])
    assert len(by["X"]) == MIX_CALLS - 2 and count["MPI sendrecv"] == 2 and count["MPI probe"] == 1
    assert count["MPI wait/test"] == 2 * (8 + 1)


def test_a_version_2_trace_has_no_call_sites_and_still_exports(runs, tmp_path, capsys):
    """A trace written before call sites (version 2: 48-byte records) reads with site 0,
    its call sites None and the reason; its calls still export."""
    import numpy as np
    from commscope.collect.trace import HEADER_BYTES, RECORD, RECORD_V2

    old = tmp_path / "old"
    shutil.copytree(runs["mix"], old, ignore=shutil.ignore_patterns("export"))
    for f in (old / "raw").glob("trace.*.bin"):
        data = f.read_bytes()
        rec = np.frombuffer(data, RECORD, offset=HEADER_BYTES)
        v2 = np.zeros(len(rec), RECORD_V2)
        for name in RECORD_V2.names:
            v2[name] = rec[name]
        head = bytearray(data[:HEADER_BYTES])
        head[8:12], head[12:16] = (2).to_bytes(4, "little"), (48).to_bytes(4, "little")
        f.write_bytes(bytes(head) + v2.tobytes())
    new, ev = read_trace(runs["mix"] / "raw").events, read_trace(old / "raw").events
    assert (new["site"] > 0).all() and (ev["site"] == 0).all()
    assert ev["callsite"].isna().all() and ev["caller"].isna().all()
    assert ev["callsite_reason"].str.contains("no call site recorded").all()
    same = [c for c in new.columns if not c.startswith(("site", "callsite", "caller"))]
    assert ev[same].equals(new[same])
    code, _, err = export(capsys, old, "--format", "perfetto")
    assert code == 0, err
    doc = json.loads((old / "export" / "trace.json").read_text())
    assert not any("callsite" in e.get("args", {}) for e in doc["traceEvents"])


def test_trace_call_sites_of_a_program_built_without_g(runs):
    """exact_threads is built with -O2 and no -g: the call sites name the function and
    offset from the symbol table, no file or line, and say why."""
    ev = commscope.open(runs["threads"]).trace
    assert (ev["site"] > 0).all() and ev["callsite"].isna().all()
    assert ev["caller"].str.match(r"\w+\+0x[0-9a-f]+$").all(), ev["caller"].unique()
    assert ev["callsite_reason"].str.contains("built without -g").all()


# ---- OpenMP regions from OMPT (profile --ompt) ------------------------------------------

OMP_ITERS, OMP_WARMUP, OMP_THREADS = 4, 2, 2  # native/bench/threads.c: a region per step


def test_openmp_regions_from_ompt_are_exported(default_mpi, tmp_path, capsys):
    """A real 2-rank `profile --ompt --trace` of the threads benchmark (each step: one
    parallel region, then MPI_Barrier on the master thread): per rank, a location per
    OpenMP thread with an Enter and a Leave per segment and per barrier wait, on the MPI
    trace's clock, and the same slices in the Perfetto file."""
    from commscope import mpi as mpimod
    import pandas as pd

    need_ompt_runtime()
    need_module("otf2", "the export extra (scripts/setup.sh)")
    runs_dir = tmp_path / "runs"
    assert (
        main(
            [
                "profile",
                "--counters",
                "all",
                "--ompt",
                "--trace",
                "--threads",
                str(OMP_THREADS),
                "-n",
                "2",
                "--runs",
                str(runs_dir),
                "--quiet",
                "--",
                str(mpimod.binary(default_mpi, "threads")),
                "-i",
                str(OMP_ITERS),
                "--warmup",
                str(OMP_WARMUP),
                "--compute-mode",
                "sleep",
                "--compute",
                "1e-3",
            ]
        )
        == 0
    )
    run = next(runs_dir.iterdir())
    capsys.readouterr()
    table = pd.read_parquet(run / "threads.parquet")
    steps = OMP_ITERS + OMP_WARMUP
    code, out, err = export(capsys, run, "--format", "otf2", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["openmp_threads"] == 2 * OMP_THREADS
    assert summary["openmp_slices"] == 2 * len(table)
    _, locations, _, _, ev, per_location = read_otf2(run / "export" / "traces.otf2")
    assert sum(ev.values()) == summary["events"]
    omp_slices = {}
    for r in (0, 1):
        rows = table[table["rank"] == r]
        # the program's logic: every thread ends each step's region at its closing barrier
        assert (rows["barrier"] == "closing").sum() == steps * OMP_THREADS
        names = {n for g, n, t in locations if g == f"rank {r}" and n.startswith("OpenMP")}
        assert names == {f"OpenMP thread {k}" for k in range(OMP_THREADS)}
        assert all(t.endswith("CPU_THREAD") for g, n, t in locations if n.startswith("OpenMP"))
        for k in range(OMP_THREADS):
            events = per_location[(f"rank {r}", f"OpenMP thread {k}")]
            mine = rows[rows["thread"] == k]
            # one Enter and one Leave per segment plus one of each per barrier wait
            assert len(events) == 2 * len(mine) + 2 * len(mine)
            kinds = [type(e).__name__ for e in events]
            assert kinds == ["Enter", "Leave"] * (2 * len(mine))
            times = [e.time for e in events]
            assert times == sorted(times)
            regions = [e.region for e in events[::2]]
            assert all(str(g.paradigm).endswith("OPENMP") for g in regions)
            roles = collections.Counter(str(g.region_role).split(".")[-1] for g in regions)
            assert roles["PARALLEL"] == len(mine)
            assert roles["IMPLICIT_BARRIER"] + roles["BARRIER"] == len(mine)
            # segments (start -> arrival) then waits (arrival -> leave), as in the table
            t0 = int(mine["rank_t0_ns"].iloc[0])
            seg = events[0::4], events[1::4]
            got = sorted((a.time, b.time) for a, b in zip(*seg))
            want = sorted(
                (t0 + round(s * 1e9), t0 + round(a * 1e9))
                for s, a in zip(mine["start_s"], mine["arrival_s"])
            )
            assert got == want
            closing = [
                (e.region.name, b.time)
                for e, b in zip(events[2::4], events[3::4])
                if e.region.name.startswith("closing barrier")
            ]
            assert len(closing) == steps
            omp_slices[(r, k)] = [
                (e.region.name, e.time, b.time) for e, b in zip(events[::2], events[1::2])
            ]
        # the same clock as the MPI trace: on OpenMP thread 0 (the master, which calls
        # MPI) each step's region ends before the step's MPI_Barrier, which ends before
        # the next region begins
        mpi = per_location[(f"rank {r}", "thread 0")]
        enters = [
            e.time for e in mpi if type(e).__name__ == "Enter" and e.region.name == "MPI_Barrier"
        ]
        leaves = [
            e.time for e in mpi if type(e).__name__ == "Leave" and e.region.name == "MPI_Barrier"
        ]
        barriers = list(zip(enters, leaves))
        assert len(enters) == len(leaves)
        assert len(barriers) == steps
        master = rows[rows["thread"] == 0]
        t0 = int(master["rank_t0_ns"].iloc[0])
        spans = master.groupby("instance").agg(b=("start_s", "min"), e=("leave_s", "max"))
        region_spans = [
            (t0 + round(b * 1e9), t0 + round(e * 1e9))
            for b, e in spans.sort_values("b").itertuples(index=False)
        ]
        assert len(region_spans) == steps
        for k, (b, e) in enumerate(barriers):
            assert region_spans[k][1] <= b
            if k + 1 < steps:
                assert e <= region_spans[k + 1][0]
    # Perfetto: the same slices, on tracks named OpenMP thread k in the rank's process
    code, out, err = export(capsys, run, "--format", "perfetto", "--json")
    assert code == 0, err
    doc = json.loads((run / "export" / "trace.json").read_text())
    by = check_trace_event_schema(doc)
    tracks = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in by["M"] if e["name"] == "thread_name"
    }
    for (r, k), slices in omp_slices.items():
        tid = [t for (p, t), n in tracks.items() if p == r and n == f"OpenMP thread {k}"]
        assert len(tid) == 1
        mine = sorted(
            (e for e in by["X"] if (e["pid"], e["tid"]) == (r, tid[0])), key=lambda e: e["ts"]
        )
        assert all(e["cat"] == "openmp" for e in mine)
        assert [e["name"] for e in mine] == [s[0] for s in slices]
        base_us, base_ns = mine[0]["ts"], slices[0][1]
        for e, (_, b, end) in zip(mine, slices):
            assert abs((e["ts"] - base_us) * 1000 - (b - base_ns)) <= 2
            assert abs(e["dur"] * 1000 - (end - b)) <= 2
