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
from commscope.profile.callsites import callsites_table
from commscope.runs import open_run

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
    subprocess.run([mpicc, "-O1", "-pthread", *flags, str(PROGRAMS / "callsites.c"), "-o", str(out)],
                   check=True)
    return out


def profile(capsys, runs_root, exe, *options, mpi=None):
    code = main(["profile", "--runs", str(runs_root), "--quiet", "-n", "2",
                 *(["--mpi", mpi] if mpi else []), *options, "--", str(exe)])
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
    run = profile(capsys, runs_root, exe, "--callsites", "--counters", "all", mpi=which if which == "mpich" else None)
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
    common = {("MPI_Init_thread", L["init"]): (1, 0), ("MPI_Comm_dup", L["dup"]): (2, 0),
              ("MPI_Barrier", L["thread_barrier"]): (22, 0), ("MPI_Comm_free", L["free"]): (2, 0),
              ("MPI_Finalize", L["finalize"]): (1, 0), ("MPI_Waitall", L["waitall"]): (1, 0),
              ("MPI_Start", L["start"]): (4, 0), ("MPI_Wait", L["pwait"]): (4, 0),
              ("MPI_Request_free", L["pfree"]): (1, 0)}
    assert per_site(mine, 0) == {**common, ("MPI_Send", L["send_a"]): (7, 224),
                                 ("MPI_Send", L["send_b"]): (5, 20),
                                 ("MPI_Isend", L["isend"]): (3, 48),
                                 ("MPI_Send_init", L["send_init"]): (1, 4 * 8)}
    assert per_site(mine, 1) == {**common, ("MPI_Recv", L["recv_a"]): (7, 224),
                                 ("MPI_Recv", L["recv_b"]): (5, 20),
                                 ("MPI_Irecv", L["irecv"]): (3, 48),
                                 ("MPI_Recv_init", L["recv_init"]): (1, 4 * 8)}
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


def test_depth_two_splits_a_helper_by_its_callers(capsys, runs_root, tmp_path, default_mpi):
    exe = build_c(default_mpi.mpicc, tmp_path / "callsites", "-g")
    run = profile(capsys, runs_root, exe, "--callsite-depth", "2", "--counters", "bytes,peers")
    sites = run.table("callsites")
    L = site_lines(PROGRAMS / "callsites.c")
    b = sites[(sites["rank"] == 0) & (sites["line"] == L["send_b"])]
    assert (b["depth"] == 2).all() and (b["caller"] == "send_b").all()
    assert dict(zip(b["stack"], b["calls"])) == {f"first_b (callsites.c:{L['first_b']})": 2,
                                                 f"second_b (callsites.c:{L['second_b']})": 3}
    assert sites["time_s"].isna().all()  # no timers: no time, never a made-up one
    assert main(["top", str(run.path), "--callsites"]) == 0
    out = capsys.readouterr().out
    assert "top call sites by calls" in out
    # the time column says it was not measured, and how to measure it
    assert "not measured" in out and "--counters default" in out
    assert main(["top", str(run.path), "--callsites", "--json"]) == 0
    assert all(r["time_s"] is None for r in json.loads(capsys.readouterr().out))


def test_without_g_stripped_rebuilt_and_moved_say_unknown_with_the_reason(capsys, runs_root, tmp_path,
                                                                           default_mpi):
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


FORTRAN = [("mpif.h", ["-DMPIF_H"]), ("use mpi", []), ("use mpi_f08", ["-DF08"])]


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
@pytest.mark.parametrize("binding,flags", FORTRAN, ids=[b for b, _ in FORTRAN])
def test_fortran_call_sites(capsys, runs_root, tmp_path, flavour, binding, flags):
    mpif90, mpicc = shutil.which(f"mpif90.{flavour}"), shutil.which(f"mpicc.{flavour}")
    if not (mpif90 and mpicc):
        pytest.skip(f"mpif90.{flavour} or mpicc.{flavour} not found (Debian as root: apt-get "
                    f"install gfortran {'libopenmpi-dev' if flavour == 'openmpi' else 'libmpich-dev'})")
    exe = tmp_path / "callsites_f"
    subprocess.run([mpif90, "-g", "-O0", "-cpp", *flags, str(PROGRAMS / "callsites.f90"), "-o", str(exe)],
                   check=True)
    run = profile(capsys, runs_root, exe, "--callsites", mpi=mpicc)
    sites = run.table("callsites")
    mine = sites[sites["object"] == str(exe)]
    L = site_lines(PROGRAMS / "callsites.f90")
    assert (mine["file"] == str((PROGRAMS / "callsites.f90").resolve())).all()
    # every call is the Fortran caller's line, never the MPI's Fortran layer or ours
    assert len(mine) == len(sites), sites[sites["object"] != str(exe)]
    # the lines are the compiler's: binutils' addr2line at each call instruction agrees
    a2l = subprocess.run(["addr2line", "-e", str(exe), *(f"{o - 1:#x}" for o in mine["offset"])],
                         capture_output=True, text=True, check=True).stdout.splitlines()
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
    common = {("MPI_Init", L["init"]): (1, 0), ("MPI_Barrier", L["barrier"]): (2, 0),
              ("MPI_Finalize", L["finalize"]): (1, 0)}
    # rank 0 sends 3 + 1 messages of 4 integers; rank 1 receives them, the last one
    # posted by MPI_Irecv, which is credited with its bytes (the call that carries the
    # buffer), and completed by MPI_Wait (none)
    assert per_site(mine, 0) == {**common, ("MPI_Send", L["send"]): (3, 48), ("MPI_Send", L["send2"]): (1, 16)}
    assert per_site(mine, 1) == {**common, ("MPI_Recv", L["recv"]): (3, 48), ("MPI_Irecv", L["irecv"]): (1, 16),
                                 ("MPI_Wait", L["wait"]): (1, 0)}
    assert set(mine["caller"]) == {"callsites_f"}


def test_site_label_of_resolved_and_unresolved_rows():
    """An unresolved row's file reads back from a table as None or NaN: no label, never
    a crash (top --callsites and the report raised on NaN)."""
    from commscope.profile.callsites import site_label
    assert site_label("/src/app/halo.c", 42) == "halo.c:42"
    assert site_label("/src/app/halo.c", float("nan")) == "halo.c"
    assert site_label(None, 3) is None and site_label(float("nan"), 3) is None
    assert site_label("", 3) is None
