"""`commscope export` (Perfetto JSON, OTF2) and `commscope.open`, on real traced programs.

Expectations come from the programs' descriptions: tests/programs/exact_threads.c (2
ranks, 2 threads) and tests/programs/export_mix.c (one of every kind of traced call).
"""

import collections
import json
import shutil
from pathlib import Path

import pytest

import commscope
from commscope.cli import main
from commscope.errors import InputError
from commscope.matching.trace import read_trace
from commscope.profile.run import run_profile

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"
T = 2  # threads per rank of exact_threads


def _compile(mpi, name, out_dir):
    import subprocess
    exe = Path(out_dir) / name
    subprocess.run([mpi.mpicc, "-O2", "-pthread", str(PROGRAMS / f"{name}.c"), "-o", str(exe)],
                   check=True)
    return exe


@pytest.fixture(scope="module")
def runs(default_mpi, tmp_path_factory):
    """Three small real profiles: exact_threads traced and not, export_mix traced."""
    root = tmp_path_factory.mktemp("export")
    threads = _compile(default_mpi, "exact_threads", root)
    mix = _compile(default_mpi, "export_mix", root)
    kw = dict(runs_root=root / "runs", echo=False, timeout=120)
    out = {}
    for name, program, args, trace in (("threads", threads, [str(T)], True),
                                       ("mix", mix, [], True),
                                       ("untraced", threads, [str(T)], False)):
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
    5 x (2 Start + 2 Wait); collectives are not traced."""
    return sum(100 + t + 2 * (10 + t) + 1 + 20 for t in range(T))


def threads_messages():
    """rank 0 sends 100+t, 10+t and 5 per thread; rank 1 sends 10+t and 5 per thread."""
    return sum((100 + t) + 2 * (10 + t) + 2 * 5 for t in range(T))


MIX_CALLS = 23 + 24
MIX_MESSAGES = 14


# ---- Perfetto: the trace-event schema ------------------------------------------------------

REQUIRED = {"X": {"name", "ph", "ts", "dur", "pid", "tid"},
            "s": {"name", "cat", "ph", "id", "ts", "pid", "tid"},
            "f": {"name", "cat", "ph", "id", "ts", "pid", "tid", "bp"},
            "C": {"name", "ph", "ts", "pid", "args"},
            "M": {"name", "ph", "pid", "args"}}


def check_trace_event_schema(doc):
    """The Chrome trace-event JSON object format, as Perfetto and chrome://tracing read it.
    Returns the events by phase."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    by = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - set(e)
        assert not missing, (e, missing)
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
    assert {pid: n for (pid, _), n in processes.items()} == {0: f"rank 0 ({host})", 1: f"rank 1 ({host})"}
    threads = names(by, "thread_name")
    assert {(e["pid"], e["tid"]) for e in by["X"]} <= set(threads)
    assert threads[(0, 1)] == "thread 1"

    sends = [e for e in by["X"] if e["name"] == "MPI send"]
    assert len(sends) == sum(100 + t for t in range(T))
    assert {e["args"]["bytes"] for e in sends} == {8 * (t + 1) for t in range(T)}
    assert all(e["args"]["peer"] == 1 and e["args"]["comm"] == "MPI_COMM_WORLD" for e in sends)
    waitall = [e for e in by["X"] if e["name"] == "MPI wait/test" and e["args"].get("records")]
    assert sorted(e["args"]["records"] for e in waitall) == sorted([2 * (10 + t) for t in range(T)] * 2)
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
    assert count[(0, "MPI sendrecv")] == count[(1, "MPI sendrecv")] == 1
    assert count[(1, "MPI probe")] == 1
    assert count[(0, "MPI wait/test")] == count[(1, "MPI wait/test")] == 8 + 1
    dup = [e for e in by["X"] if e["name"] == "MPI send" and e["args"]["comm"] != "MPI_COMM_WORLD"]
    assert len(dup) == 3 and len({e["args"]["comm"] for e in dup}) == 1
    # the cancelled receive is no message: its completion has no arrow
    wait = [e for e in by["X"] if e["name"] == "MPI wait/test" and e["args"]["tag"] == 99]
    assert len(wait) == 2


# ---- OTF2 --------------------------------------------------------------------------------

def read_otf2(anchor):
    otf2 = pytest.importorskip("otf2")
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
    pytest.importorskip("otf2")
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
    pytest.importorskip("otf2")
    run = runs["threads"]
    # the archive's parts: threads.otf2, threads.def and threads/, the run directory
    # itself here: never replaced, even with --force
    code, _, err = export(capsys, run, "--format", "otf2", "-o", run.parent / "threads.otf2",
                          "--force")
    assert code == 2 and "not an earlier export" in err and (run / "meta.json").is_file()
    out_path = run.parent / "threads-trace.otf2"
    code, out, err = export(capsys, run, "--format", "otf2", "-o", out_path)
    assert code == 0, err
    code, out, err = export(capsys, run, "--format", "otf2", "-o", out_path, "--force")
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
    if pytest.importorskip("otf2"):
        code, _, err = export(capsys, run, "--format", "otf2", "-o", tmp_path / "t.otf2")
        assert code == 0 and "profile --trace" in err
        _, _, _, _, ev, _ = read_otf2(tmp_path / "t.otf2")
        assert ev["Enter"] == 0 and ev["Metric"] > 0


def test_an_existing_output_is_kept_unless_forced(runs, capsys, tmp_path):
    run = runs["mix"]
    target = tmp_path / "mine.json"
    target.write_text("precious")
    code, _, err = export(capsys, run, "--format", "perfetto", "-o", target)
    assert code == 2 and str(target) in err and "--force" in err
    assert target.read_text() == "precious"
    code, _, err = export(capsys, run, "--format", "perfetto", "-o", target, "--force")
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
    assert p.callsites is None and p.threads is None  # no call sites; no --ompt
    f = p.functions
    assert f[(f["rank"] == 0) & (f["function"] == "MPI_Send")]["calls"].sum() == sum(100 + t for t in range(T))
    assert len(p.trace) == len(read_trace(runs["threads"] / "raw").events)
    assert len(p.calls()) == 2 * threads_calls_per_rank()
    m = p.messages()
    assert ((m["send"] >= 0) & (m["recv"] >= 0)).sum() == threads_messages()
    q = commscope.open(runs["untraced"])
    assert q.trace is None and q.calls() is None and q.messages() is None
    assert len(q.functions) and "rank" in q.snapshots
