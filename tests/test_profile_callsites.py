"""`commscope profile --callsites`: file:line of every MPI call, resolved after the run.

tests/programs/callsites.c and callsites.f90 mark their MPI calls with ``SITE:``
comments; the expected lines are read from those comments, the expected counts follow
from the programs' logic (their header comments).  Real 2-rank jobs under both wheels
(and, for Fortran, Debian's Open MPI and MPICH with gfortran when present).
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope.cli import main
from commscope.collect.trace import read_trace
from commscope.collect.callsites import callsites_table
from commscope.runs import open_run
from needs import need

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"


def site_lines(source):
    """{name: line} of the ``SITE: name`` comments of a source file."""
    out = {}
    for i, text in enumerate(Path(source).read_text().splitlines(), 1):
        m = re.search(r"SITE: (\w+)", text)
        if m and not text.lstrip().startswith(("/*", " *", "!")):
            out[m.group(1)] = i
    return out


def build_c(mpicc, out, *flags):
    subprocess.run(
        [mpicc, "-O1", "-pthread", *flags, str(PROGRAMS / "callsites.c"), "-o", str(out)],
        check=True,
    )
    return out


def profile(capsys, runs_root, exe, *options, mpi=None):
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "-n",
            "2",
            *(["--mpi", mpi] if mpi else []),
            *options,
            "--",
            str(exe),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    return open_run(out.strip().splitlines()[-1])


def per_site(df, rank):
    """{(function, line): (calls, bytes)} of one rank, summed over offsets and threads."""
    d = df[df["rank"] == rank].groupby(["function", "line"])[["calls", "bytes"]].sum()
    return {(f, int(l)): (int(c), b) for (f, l), (c, b) in d.iterrows()}


@pytest.mark.parametrize("which", ["default", "mpich"])
def test_c_call_sites_exact(capsys, runs_root, tmp_path, request, which):
    mpi = request.getfixturevalue("default_mpi" if which == "default" else "mpich_mpi")
    exe = build_c(mpi.mpicc, tmp_path / "callsites", "-g")
    run = profile(
        capsys,
        runs_root,
        exe,
        "--callsites",
        "--counters",
        "all",
        mpi=which if which == "mpich" else None,
    )
    sites = run.table("callsites")
    L = site_lines(PROGRAMS / "callsites.c")
    src = str((PROGRAMS / "callsites.c").resolve())
    mine = sites[sites["object"] == str(exe)]
    assert (mine["file"] == src).all() and (mine["reason"] == "").all()
    # rank 0: 7 sends of 8 ints, 5 of 1 int; rank 1 receives them; 2 threads x 11 barriers
    # each; 3 messages of 4 ints sent with MPI_Isend, posted with MPI_Irecv, one
    # MPI_Waitall each; 4 starts of a persistent request of 2 ints, each waited for.
    # Bytes go to the call that carries the buffer: MPI_Irecv (its receives are
    # counted when MPI_Waitall completes them), MPI_Send_init and MPI_Recv_init (their
    # messages when MPI_Start and MPI_Wait move them); MPI_Waitall, MPI_Start and
    # MPI_Wait carry none, as in the per-function table.
    common = {
        ("MPI_Init_thread", L["init"]): (1, 0),
        ("MPI_Comm_dup", L["dup"]): (2, 0),
        ("MPI_Barrier", L["thread_barrier"]): (22, 0),
        ("MPI_Comm_free", L["free"]): (2, 0),
        ("MPI_Finalize", L["finalize"]): (1, 0),
        ("MPI_Waitall", L["waitall"]): (1, 0),
        ("MPI_Start", L["start"]): (4, 0),
        ("MPI_Wait", L["pwait"]): (4, 0),
        ("MPI_Request_free", L["pfree"]): (1, 0),
    }
    assert per_site(mine, 0) == {
        **common,
        ("MPI_Send", L["send_a"]): (7, 224),
        ("MPI_Send", L["send_b"]): (5, 20),
        ("MPI_Isend", L["isend"]): (3, 48),
        ("MPI_Send_init", L["send_init"]): (1, 4 * 8),
    }
    assert per_site(mine, 1) == {
        **common,
        ("MPI_Recv", L["recv_a"]): (7, 224),
        ("MPI_Recv", L["recv_b"]): (5, 20),
        ("MPI_Irecv", L["irecv"]): (3, 48),
        ("MPI_Recv_init", L["recv_init"]): (1, 4 * 8),
    }
    callers = dict(zip(mine["line"].astype(int), mine["caller"]))
    assert callers[L["send_a"]] == "send_a" and callers[L["recv_b"]] == "recv_all"
    assert callers[L["thread_barrier"]] == "worker" and callers[L["init"]] == "main"
    assert mine["time_s"].gt(0).any() and mine["time_s"].notna().all()
    # every call the functions table counts has its call site, and its bytes
    funcs = run.table("functions").groupby(["rank", "function"])[["calls", "bytes"]].sum()
    by_site = sites.groupby(["rank", "function"])[["calls", "bytes"]].sum()
    assert by_site.equals(funcs)
    # top --callsites, by time (timers on), as JSON
    assert main(["top", str(run.path), "--callsites", "--json", "--limit", "3"]) == 0
    top = json.loads(capsys.readouterr().out)
    assert len(top) == 3 and all(r["file"] == src and isinstance(r["line"], int) for r in top)
    assert [r["time_s"] for r in top] == sorted((r["time_s"] for r in top), reverse=True)
    import commscope

    assert commscope.open(run.path).callsites is not None


def raw_site_addresses(run):
    """{rank: the return addresses of its call-site table} from raw/callsites.<node>.jsonl."""
    out = {}
    for path in run.raw_dir.glob("callsites.*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            out.setdefault(rec["rank"], set()).update(s[4] for s in rec["sites"])
    return out


@pytest.mark.parametrize("which", ["default", "mpich"])
def test_trace_records_name_their_call_sites(capsys, runs_root, tmp_path, request, which):
    """Every record of `profile --trace` (no --callsites) names the program line that made
    the call; with --callsites too, its address is the one the call-site table counts."""
    import collections
    import commscope

    mpi = request.getfixturevalue("default_mpi" if which == "default" else "mpich_mpi")
    exe = build_c(mpi.mpicc, tmp_path / "callsites", "-g")
    option = ["--mpi", "mpich"] if which == "mpich" else []
    L = site_lines(PROGRAMS / "callsites.c")
    src = str((PROGRAMS / "callsites.c").resolve())
    for extra in ([], ["--callsites"]):
        run = profile(capsys, runs_root, exe, "--trace", *extra, *option)
        ev = commscope.open(run.path).trace
        assert (ev["site"] > 0).all() and ev["callsite_reason"].isna().all(), ev[
            "callsite_reason"
        ].unique()
        assert (ev["callsite_file"] == src).all()
        assert (ev["callsite"] == "callsites.c:" + ev["callsite_line"].astype(str)).all()
        got = collections.Counter(
            zip(ev["rank"], ev["event"], ev["function"], ev["callsite_line"], ev["caller"])
        )
        # rank 0: 7 sends from send_a, 5 from send_b; rank 1 receives them in recv_all;
        # each of 2 threads per rank: 11 barriers (one COLL record each) in worker; then
        # 3 Isend / Irecv completed by one Waitall (a record per request) in exchange, and
        # 4 starts of a persistent request, each completed by MPI_Wait, in persistent
        barriers = {("COLL", "MPI_Barrier", L["thread_barrier"], "worker"): 22}
        both = {
            ("COMPLETE", "MPI_Waitall", L["waitall"], "exchange"): 3,
            ("COMPLETE", "MPI_Wait", L["pwait"], "persistent"): 4,
        }
        want = {
            0: {
                ("SEND", "MPI_Send", L["send_a"], "send_a"): 7,
                ("SEND", "MPI_Send", L["send_b"], "send_b"): 5,
                **barriers,
                **both,
                ("ISEND", "MPI_Isend", L["isend"], "exchange"): 3,
                ("ISEND", "MPI_Start", L["start"], "persistent"): 4,
            },
            1: {
                ("RECV", "MPI_Recv", L["recv_a"], "recv_all"): 7,
                ("RECV", "MPI_Recv", L["recv_b"], "recv_all"): 5,
                **barriers,
                **both,
                ("IRECV", "MPI_Irecv", L["irecv"], "exchange"): 3,
                ("IRECV", "MPI_Start", L["start"], "persistent"): 4,
            },
        }
        assert got == {(r, *k): n for r, d in want.items() for k, n in d.items()}
        if extra:  # the same addresses as the call-site table's, rank by rank
            table = raw_site_addresses(run)
            for rank, sites in ev.groupby("rank")["site"]:
                assert set(sites.astype(int)) <= table[rank]
            calls = run.table("callsites")
            assert set(zip(ev["rank"], ev["function"], ev["callsite_line"].astype(int))) <= set(
                zip(calls["rank"], calls["function"], calls["line"].astype(int))
            )
        else:  # --trace alone lists the objects that hold the trace's sites, no sites of its own
            rec = [
                json.loads(x)
                for p in run.raw_dir.glob("callsites.*.jsonl")
                for x in p.read_text().splitlines()
            ]
            assert sorted(r["rank"] for r in rec) == [0, 1]
            # the distinct sites of each thread's records, summed over the rank's threads
            distinct = ev.groupby(["rank", "thread"])["site"].nunique().groupby(level="rank").sum()
            got_sites = [(r["sites"], r["depth"], r["trace_sites"]) for r in rec]
            assert got_sites == [([], 0, int(distinct[r["rank"]])) for r in rec]
            assert all(str(exe) in [o["path"] for o in r["objects"]] for r in rec)
            assert "callsites" not in run.tables()
    # the call site is an argument of the call's slice in Perfetto
    assert main(["export", str(run.path), "--format", "perfetto"]) == 0
    capsys.readouterr()
    doc = json.loads((run.path / "export" / "trace.json").read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "MPI_Send"]
    assert {e["args"]["callsite"] for e in slices} == {
        f"callsites.c:{L['send_a']}",
        f"callsites.c:{L['send_b']}",
    }


def test_trace_call_sites_without_g_or_objects_are_none_with_the_reason(
    capsys, runs_root, tmp_path, default_mpi
):
    from commscope.collect.trace import read_trace

    plain = build_c(default_mpi.mpicc, tmp_path / "plain")  # no -g: function+offset
    run = profile(capsys, runs_root, plain, "--trace")
    ev = read_trace(run.raw_dir).events
    sends = ev[ev["function"] == "MPI_Send"]
    assert sends["callsite"].isna().all() and sends["callsite_file"].isna().all()
    assert sends["callsite_line"].isna().all()
    assert sends["caller"].str.match(r"send_[ab]\+0x[0-9a-f]+$").all()
    assert sends["callsite_reason"].str.contains("built without -g").all()
    for p in run.raw_dir.glob("callsites.*.jsonl"):  # as if killed before MPI_Finalize
        p.unlink()
    ev = read_trace(run.raw_dir).events
    assert ev["caller"].isna().all() and ev["callsite"].isna().all()
    assert ev["callsite_reason"].str.contains("listed no loaded objects").all()
    assert (ev["site"] > 0).all()


def test_depth_two_splits_a_helper_by_its_callers(capsys, runs_root, tmp_path, default_mpi):
    exe = build_c(default_mpi.mpicc, tmp_path / "callsites", "-g")
    run = profile(capsys, runs_root, exe, "--callsite-depth", "2", "--counters", "bytes,peers")
    sites = run.table("callsites")
    L = site_lines(PROGRAMS / "callsites.c")
    b = sites[(sites["rank"] == 0) & (sites["line"] == L["send_b"])]
    assert (b["depth"] == 2).all() and (b["caller"] == "send_b").all()
    assert dict(zip(b["stack"], b["calls"])) == {
        f"first_b (callsites.c:{L['first_b']})": 2,
        f"second_b (callsites.c:{L['second_b']})": 3,
    }
    assert sites["time_s"].isna().all()  # no timers: no time, never a made-up one
    assert main(["top", str(run.path), "--callsites"]) == 0
    out = capsys.readouterr().out
    assert "top call sites by calls" in out
    # the time column says it was not measured, and how to measure it
    assert "not measured" in out and "--counters default" in out
    assert main(["top", str(run.path), "--callsites", "--json"]) == 0
    assert all(r["time_s"] is None for r in json.loads(capsys.readouterr().out))


@pytest.mark.parametrize("which", ["default", "mpich"])
def test_python_call_sites_name_the_script_line(capsys, runs_root, request, which):
    """mpi4py: a call's site is the first Python frame outside mpi4py (script:line in
    function), also through mpi4py's own Python code (mpi4py.util.pkl5); the reason is
    empty, and the sums per function are the functions table's.  (mpi4py calls the
    large-count MPI_Send_c ... where the MPI has them: compared by base name.)"""
    pytest.importorskip("mpi4py")
    import sys

    request.getfixturevalue("default_mpi" if which == "default" else "mpich_mpi")
    mpi = ["--mpi", "mpich"] if which == "mpich" else []
    script = PROGRAMS / "callsites_mpi4py.py"
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "-n",
            "2",
            "--callsites",
            "--counters",
            "all",
            *mpi,
            "--",
            sys.executable,
            str(script),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    run = open_run(out.strip().splitlines()[-1])
    sites = run.table("callsites")
    L = site_lines(script)
    mine = sites[sites["file"] == str(script.resolve())]
    assert (mine["reason"] == "").all() and set(mine["caller"]) == {"exchange", "<module>"}
    assert not sites["caller"].str.contains("__pyx|PyMPI", regex=True).any()
    # rank 0 Sends 5 x 800 B; both Isend, Recv and Wait 5 x 800 B; two barriers
    common = {
        ("MPI_Init_thread", L["init"]): (1, 0),
        ("MPI_Isend", L["isend"]): (5, 4000),
        ("MPI_Recv", L["recv2"]): (5, 4000),
        ("MPI_Wait", L["wait"]): (5, 0),
        ("MPI_Barrier", L["barrier_a"]): (1, 0),
        ("MPI_Barrier", L["barrier_b"]): (1, 0),
    }
    got = [
        {(f[:-2] if f.endswith("_c") else f, line): v for (f, line), v in per_site(mine, r).items()}
        for r in (0, 1)
    ]
    assert {k: v for k, v in got[0].items() if k[1] != L["pkl5_send"]} == {
        **common,
        ("MPI_Send", L["send"]): (5, 4000),
    }
    assert {k: v for k, v in got[1].items() if k[1] != L["pkl5_recv"]} == {
        **common,
        ("MPI_Recv", L["recv"]): (5, 4000),
    }
    # pkl5's calls (its Python code calls mpi4py) are at the script's line
    assert any(f == "MPI_Send" for f, line in got[0] if line == L["pkl5_send"])
    assert any(f in ("MPI_Recv", "MPI_Mrecv") for f, line in got[1] if line == L["pkl5_recv"])
    assert dict(zip(mine["line"].astype(int), mine["caller"]))[L["send"]] == "exchange"
    funcs = run.table("functions").groupby(["rank", "function"])[["calls", "bytes"]].sum()
    by_site = sites.groupby(["rank", "function"])[["calls", "bytes"]].sum()
    assert by_site.equals(funcs)
    # top: the script's lines, and a reason (if any) said once, below the table
    assert main(["top", str(run.path), "--callsites", "--limit", "30"]) == 0
    text = capsys.readouterr().out
    assert f"callsites_mpi4py.py:{L['send']}" in text and "__pyx" not in text
    notes = [line for line in text.splitlines() if line.startswith("# [")]
    assert len(notes) == len(set(notes))
    # --callsite-depth 2: the Python caller above, in the stack column
    code = main(
        [
            "profile",
            "--runs",
            str(runs_root),
            "--quiet",
            "-n",
            "2",
            "--callsite-depth",
            "2",
            *mpi,
            "--",
            sys.executable,
            str(script),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    sites = open_run(out.strip().splitlines()[-1]).table("callsites")
    send = sites[sites["function"].str.startswith("MPI_Send") & (sites["line"] == L["send"])]
    assert list(send["stack"]) == [f"<module> (callsites_mpi4py.py:{L['exchange']})"]


def test_without_g_stripped_rebuilt_and_moved_say_unknown_with_the_reason(
    capsys, runs_root, tmp_path, default_mpi
):
    plain = build_c(default_mpi.mpicc, tmp_path / "plain")  # no -g: function+offset
    run = profile(capsys, runs_root, plain, "--callsites")
    s = run.table("callsites")
    s = s[(s["object"] == str(plain)) & (s["function"] == "MPI_Send")]
    assert s["file"].isna().all() and s["line"].isna().all()
    assert set(s["caller"].str.split("+").str[0]) == {"send_a", "send_b"}
    assert s["caller"].str.match(r"send_[ab]\+0x[0-9a-f]+$").all()
    assert s["reason"].str.contains("built without -g").all()

    stripped = tmp_path / "stripped"
    shutil.copy(tmp_path / "plain", stripped)
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    run = profile(capsys, runs_root, stripped, "--callsites")
    s = run.table("callsites")
    s = s[s["object"] == str(stripped)]
    assert len(s) and (s["caller"] == "unknown").all() and s["line"].isna().all()
    assert s["reason"].str.contains("is stripped").all()

    exe = build_c(default_mpi.mpicc, tmp_path / "rebuilt", "-g")
    run = profile(capsys, runs_root, exe, "--callsites")
    build_c(default_mpi.mpicc, exe, "-g", "-DREBUILT=1", "-O2")  # a new build id, same path
    s = callsites_table(run.raw_dir, run.table("ranks"), ("bytes",))
    s = s[s["object"] == str(exe)]
    assert len(s) and (s["caller"] == "unknown").all() and s["file"].isna().all()
    assert s["reason"].str.contains("was rebuilt after the run").all()
    exe.rename(tmp_path / "moved")
    s = callsites_table(run.raw_dir, run.table("ranks"), ("bytes",))
    s = s[s["object"] == str(exe)]
    assert (s["caller"] == "unknown").all() and s["reason"].str.contains("is gone").all()


def test_bad_callsite_input(capsys, runs_root, tmp_path, default_mpi):
    exe = build_c(default_mpi.mpicc, tmp_path / "callsites", "-g")
    assert main(["profile", "--runs", str(runs_root), "--callsite-depth", "0", "--", str(exe)]) == 2
    assert "--callsite-depth" in capsys.readouterr().err
    run = profile(capsys, runs_root, exe)  # no --callsites
    assert main(["top", str(run.path), "--callsites"]) == 2
    assert "commscope profile --callsites" in capsys.readouterr().err
    raw = next(run.raw_dir.glob("node.*.json")).with_name("callsites.x.jsonl")
    raw.write_text('{"rank": 0, "sites": 3, "objects": []}\n')
    from commscope.errors import InputError

    with pytest.raises(InputError, match="sites"):
        callsites_table(run.raw_dir)
    raw.write_text(
        '{"rank": 0, "sites": [["MPI_Send", 1, 0, 0, 1]], "objects": [], '
        '"python_sites": [[1, "a.py", "five", "f"]]}\n'
    )
    with pytest.raises(InputError, match="python_sites"):
        callsites_table(run.raw_dir)
    raw.write_text(
        '{"rank": 0, "sites": [["MPI_Send", 1, 0, 0, 1], ["MPI_Recv", 1, 0, 0, 2]], '
        '"objects": [], "python_sites": [[1, "/x/a.py", 5, "f"]]}\n'
    )
    df = callsites_table(run.raw_dir)
    rows = {r["function"]: r for r in df.to_dict("records")}
    assert (rows["MPI_Send"]["file"], rows["MPI_Send"]["line"], rows["MPI_Send"]["caller"]) == (
        "/x/a.py",
        5,
        "f",
    ) and rows["MPI_Send"]["reason"] == ""
    assert rows["MPI_Recv"]["file"] is None and "not listed" in rows["MPI_Recv"]["reason"]


FORTRAN = [("mpif.h", ["-DMPIF_H"]), ("use mpi", []), ("use mpi_f08", ["-DF08"])]


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
@pytest.mark.parametrize("binding,flags", FORTRAN, ids=[b for b, _ in FORTRAN])
def test_fortran_call_sites(capsys, runs_root, tmp_path, flavour, binding, flags):
    mpif90, mpicc = shutil.which(f"mpif90.{flavour}"), shutil.which(f"mpicc.{flavour}")
    if not (mpif90 and mpicc):
        need(
            False,
            f"mpif90.{flavour} or mpicc.{flavour} not found (Debian as root: apt-get "
            f"install gfortran {'libopenmpi-dev' if flavour == 'openmpi' else 'libmpich-dev'})",
        )
    exe = tmp_path / "callsites_f"
    subprocess.run(
        [mpif90, "-g", "-O0", "-cpp", *flags, str(PROGRAMS / "callsites.f90"), "-o", str(exe)],
        check=True,
    )
    run = profile(capsys, runs_root, exe, "--callsites", mpi=mpicc)
    sites = run.table("callsites")
    mine = sites[sites["object"] == str(exe)]
    L = site_lines(PROGRAMS / "callsites.f90")
    assert (mine["file"] == str((PROGRAMS / "callsites.f90").resolve())).all()
    # every call is the Fortran caller's line, never the MPI's Fortran layer or ours
    assert len(mine) == len(sites), sites[sites["object"] != str(exe)]
    # the lines are the compiler's: binutils' addr2line at each call instruction agrees
    a2l = subprocess.run(
        ["addr2line", "-e", str(exe), *(f"{o - 1:#x}" for o in mine["offset"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [int(x.rsplit(":", 1)[1].split()[0]) for x in a2l] == mine["line"].astype(int).tolist()
    # gfortran's own line table (addr2line, above, agrees with us) puts some calls on
    # the line of the statement that opens their block: MPI_Init and MPI_Finalize on
    # `program` (Open MPI's modules), MPI_Wait on `else if` (gfortran 12, even at -O0)
    text = (PROGRAMS / "callsites.f90").read_text().splitlines()
    opening = {i for i, t in enumerate(text, 1) if t.lstrip().startswith(("program", "else if"))}
    for name, func in (("init", "MPI_Init"), ("finalize", "MPI_Finalize"), ("wait", "MPI_Wait")):
        got = set(mine.loc[mine["function"] == func, "line"].astype(int))
        assert len(got) == 1 and got <= {L[name]} | opening, (name, got)
        L[name] = got.pop()
    common = {
        ("MPI_Init", L["init"]): (1, 0),
        ("MPI_Barrier", L["barrier"]): (2, 0),
        ("MPI_Finalize", L["finalize"]): (1, 0),
    }
    # rank 0 sends 3 + 1 messages of 4 integers; rank 1 receives them, the last one
    # posted by MPI_Irecv, which is credited with its bytes (the call that carries the
    # buffer), and completed by MPI_Wait (none)
    assert per_site(mine, 0) == {
        **common,
        ("MPI_Send", L["send"]): (3, 48),
        ("MPI_Send", L["send2"]): (1, 16),
    }
    assert per_site(mine, 1) == {
        **common,
        ("MPI_Recv", L["recv"]): (3, 48),
        ("MPI_Irecv", L["irecv"]): (1, 16),
        ("MPI_Wait", L["wait"]): (1, 0),
    }
    assert set(mine["caller"]) == {"callsites_f"}
    # traced too: every record names the same Fortran line as the call-site table (also
    # where MPICH's mpif.h layer calls the C MPI_* function and the site is unwound)
    run = profile(capsys, runs_root, exe, "--callsites", "--trace", mpi=mpicc)
    ev = read_trace(run.raw_dir).events
    sites = run.table("callsites")
    assert (ev["callsite_file"] == str((PROGRAMS / "callsites.f90").resolve())).all(), ev[
        ["function", "callsite_file", "callsite_reason"]
    ]
    assert set(zip(ev["rank"], ev["function"], ev["callsite_line"].astype(int))) <= set(
        zip(sites["rank"], sites["function"], sites["line"].astype(int))
    )
    assert set(ev["function"]) == {"MPI_Send", "MPI_Recv", "MPI_Irecv", "MPI_Wait", "MPI_Barrier"}


def test_site_label_of_resolved_and_unresolved_rows():
    """An unresolved row's file reads back from a table as None or NaN: no label, never
    a crash (top --callsites and the report raised on NaN)."""
    from commscope.collect.callsites import site_label

    assert site_label("/src/app/halo.c", 42) == "halo.c:42"
    assert site_label("/src/app/halo.c", float("nan")) == "halo.c"
    assert site_label(None, 3) is None and site_label(float("nan"), 3) is None
    assert site_label("", 3) is None
