"""Issue 35, the launch side: a refused launch leaves no run directory; a rank that
crashes, aborts or exits without MPI_Finalize is named with how it ended (meta.json,
ranks.parquet, the CLI's last line, the report); no control byte reaches a stream; the
program's output is kept in the run directory, bounded, whatever --quiet says.

Real jobs of 2 ranks under both wheels (tests/programs/endings.c)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commscope import launch
from commscope.cli import main
from commscope.runs import open_run

PROGRAMS = Path(__file__).resolve().parent / "programs"
CONTROL = set(range(32)) - {9, 10}


def _no_control_bytes(text, where):
    bad = sorted({ord(c) for c in text if ord(c) in CONTROL or 0x7F <= ord(c) <= 0x9F})
    assert not bad, f"{where}: control bytes {bad}"


@pytest.fixture(scope="module")
def endings(default_mpi, mpich_mpi, tmp_path_factory):
    out = tmp_path_factory.mktemp("endings")
    exes = {}
    for mpi in (default_mpi, mpich_mpi):
        exe = out / f"endings-{mpi.name}"
        subprocess.run(
            [mpi.mpicc, "-O1", "-g", str(PROGRAMS / "endings.c"), "-o", str(exe)], check=True
        )
        exes[mpi.name] = exe
    return exes


def _profile(capfd, runs_root, *argv):
    code = main(["profile", "--runs", str(runs_root), "-n", "2", *argv])
    out, err = capfd.readouterr()
    runs = sorted(p for p in runs_root.iterdir())
    return code, out, err, (open_run(runs[-1], warn=False) if runs else None)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["-n", "0"], "--ranks"),
        (["--threads", "0"], "--threads"),
        (["--ranks-per-node", "0"], "--ranks-per-node"),
    ],
)
def test_a_refused_launch_leaves_no_run_directory(argv, option, runs_root, capsys):
    code = main(["profile", "--runs", str(runs_root), *argv, "--", "/bin/true"])
    err = capsys.readouterr().err
    assert code == 2 and option in err and err.count("\n") == 1, err
    assert list(runs_root.iterdir()) == []


def test_a_refused_benchmark_leaves_no_run_directory(runs_root, capsys):
    code = main(["bench", "bsp", "-w", "ftq", "-n", "0", "--runs", str(runs_root), "--quiet"])
    assert code == 2 and "--ranks" in capsys.readouterr().err
    assert list(runs_root.iterdir()) == []


#: (program arguments, MPI) -> what the last line, meta.json and ranks.parquet must say
CASES = [
    (["segv", "1"], "rank 1 killed by SIGSEGV (signal 11)", ("signal", 11)),
    (["kill", "1", "6"], "rank 1 killed by SIGABRT (signal 6)", ("signal", 6)),
    (["abort", "1", "3"], "rank 1 called MPI_Abort with error code 3", ("abort", 3)),
    (["exit", "1", "5"], "rank 1 exited with status 5 without calling MPI_Finalize", ("exit", 5)),
]


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("args, says, ending", CASES, ids=[c[0][0] for c in CASES])
def test_a_crash_names_the_rank_and_how_it_ended(
    mpi, args, says, ending, endings, runs_root, capfd, tmp_path
):
    code, out, err, run = _profile(
        capfd, runs_root, "--mpi", mpi, "--timeout", "120", "--", str(endings[mpi]), *args
    )
    assert code != 0
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"commscope profile: {says}; "), last  # the culprit first
    assert str(run.path) in last
    assert run.meta["status"] == "failed" and run.meta["failure"].startswith(says)
    first = run.meta["profile"]["ranks"]["endings"][0]
    assert (first["ranks"], first["ending"], first["code"]) == ([1], *ending)
    ranks = run.table("ranks").set_index("rank")
    assert (ranks.loc[1, "ending"], int(ranks.loc[1, "ending_value"])) == ending
    assert ranks.loc[1, "state"] == "not finalized"
    _no_control_bytes(out + err, "stdout and stderr")
    # the report says the same
    html = tmp_path / "r.html"
    assert main(["report", str(run.path), "-o", str(html)]) == 0
    assert says in html.read_text()


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_exiting_without_finalize_is_said_even_when_the_job_exits_0(mpi, endings, runs_root, capfd):
    code, out, err, run = _profile(
        capfd, runs_root, "--mpi", mpi, "--quiet", "--", str(endings[mpi]), "nofinalize"
    )
    assert code != 0
    # both ranks, or the first to exit while the launcher stops the other (MPICH, a race)
    says = "exited with status 0 without calling MPI_Finalize"
    assert says in err.strip().splitlines()[-1]
    assert run.meta["status"] == "failed" and says in run.meta["failure"]
    assert run.meta["profile"]["ranks"]["endings"][0]["ending"] == "exit"


@pytest.mark.mpi
def test_a_rank_that_finalizes_then_fails_is_named(endings, runs_root, capfd):
    code, out, err, run = _profile(
        capfd, runs_root, "--quiet", "--", str(endings["openmpi"]), "status", "1", "4"
    )
    assert code == 4
    # rank 0, finalized too, may still be exiting when mpiexec sees rank 1's status and
    # kills the job: then it is named as well (it was killed), after rank 1
    rank0 = "rank 0 finalized, then killed by SIGTERM (signal 15)"
    assert run.meta["failure"] in (
        "rank 1 finalized, then exited with status 4",
        f"rank 1 finalized, then exited with status 4; {rank0}",
    )
    last = err.strip().splitlines()[-1]
    assert last.startswith("commscope profile: rank 1 finalized, then exited with status 4; ")
    assert "the program's exit status 4; " in last


@pytest.fixture(scope="module")
def user_preload(default_mpi, tmp_path_factory):
    """tests/programs/user_preload.c built: a user's LD_PRELOAD library with handlers."""
    lib = tmp_path_factory.mktemp("preload") / "libuser_preload.so"
    src = PROGRAMS / "user_preload.c"
    subprocess.run([default_mpi.mpicc, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    return lib


@pytest.mark.mpi
@pytest.mark.parametrize(
    "mpi, mode",
    [("openmpi", m) for m in ("handlers", "siginfo", "ignore", "nocldwait", "reap")]
    + [("mpich", "ignore"), ("mpich", "reap")],
)
def test_a_users_preload_with_signal_handlers_never_breaks_profile(
    mpi, mode, user_preload, endings, runs_root, tmp_path
):
    """Issue 42: a user's LD_PRELOAD library whose constructor installs signal handlers
    (in commscope's own process too) made profile exit 1 with a traceback (restoring
    a handler Python had not installed); one that ignores SIGCHLD lost the job's exit
    status (and MPICH's launcher hung).  A complete run exits 0; a failing rank is still
    reported, with its status."""
    env = {**os.environ, "LD_PRELOAD": str(user_preload), "USER_PRELOAD_MODE": mode}
    exe = str(endings[mpi])

    def profile(*args):
        argv = [
            sys.executable,
            "-m",
            "commscope",
            "profile",
            "--mpi",
            mpi,
            "--runs",
            str(runs_root),
        ]
        return subprocess.run(
            [*argv, "-n", "2", "--quiet", "--", exe, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    ok = profile("ok")
    assert ok.returncode == 0 and "Traceback" not in ok.stderr, ok.stderr
    run = open_run(ok.stdout.strip().splitlines()[0])
    assert run.meta["status"] == "complete"
    bad = profile("status", "1", "4")
    assert bad.returncode == 4 and "Traceback" not in bad.stderr, bad.stderr
    assert "rank 1 finalized, then exited with status 4" in bad.stderr.strip().splitlines()[-1]
    # the library given to the ranks only, through the program's own environment
    wrapper = tmp_path / "with_preload.sh"
    wrapper.write_text(f'#!/bin/sh\nLD_PRELOAD="$LD_PRELOAD:{user_preload}" exec "$@"\n')
    wrapper.chmod(0o755)
    del env["LD_PRELOAD"]
    exe = str(wrapper)
    ok = profile(str(endings[mpi]), "ok")
    assert ok.returncode == 0 and "Traceback" not in ok.stderr, ok.stderr


@pytest.mark.mpi
def test_the_abort_notice_reaches_the_terminal_without_a_nul(endings, runs_root, capfd):
    """Open MPI 5's prterun ends its MPI_Abort notice with a NUL byte: it is cleaned from
    the echoed stream and from stderr.txt."""
    code, out, err, run = _profile(
        capfd, runs_root, "--", str(endings["openmpi"]), "abort", "1", "3"
    )
    assert code == 3 and "MPI_ABORT was invoked on rank 1" in err
    _no_control_bytes(out + err, "the terminal")
    _no_control_bytes((run.path / "stderr.txt").read_text(), "stderr.txt")


@pytest.mark.mpi
@pytest.mark.parametrize("quiet", [True, False])
def test_the_programs_output_is_kept_with_or_without_quiet(quiet, endings, runs_root, capfd):
    code, out, err, run = _profile(
        capfd,
        runs_root,
        *(["--quiet"] if quiet else []),
        "--",
        str(endings["openmpi"]),
        "print",
        "3000",
    )
    assert code == 0, err
    kept = (run.path / "stdout.txt").read_text()
    assert kept.startswith("endings: line 000000000 ") and len(kept) >= 3000
    assert (run.path / "stderr.txt").read_text() == "endings: a line on stderr\n"
    shown = "endings: line 000000000" in out and "endings: a line on stderr" in err
    assert shown != quiet  # --quiet: the terminal only
    assert out.strip().splitlines()[-1] if quiet else True


@pytest.mark.mpi
def test_kept_output_is_bounded_with_a_note(endings, runs_root, capfd, monkeypatch):
    monkeypatch.setattr(launch, "KEEP_BYTES", 4096)
    code, out, err, run = _profile(
        capfd, runs_root, "--quiet", "--", str(endings["openmpi"]), "print", "100000"
    )
    assert code == 0, err
    kept = (run.path / "stdout.txt").read_text()
    note, rest = kept.split("\n", 1)
    assert (
        note.startswith("[commscope: the first ")
        and "of the program's stdout are not kept; the last" in note
    )
    assert len(rest.encode()) <= 4096 and rest.endswith("of the program's own output\n")


def test_a_stream_is_kept_by_whole_lines_and_cleaned():
    tail = launch._Tail(10)
    for line in ("12345\n", "abcde\n", "xyz\n"):
        tail.add(line)
    assert (tail.text(), tail.dropped_bytes, tail.dropped_lines) == ("abcde\nxyz\n", 6, 1)
    assert launch.clean_line("a\x00b\x1b[31mred\x1b[0m\r\n\tt\x07") == "abred\n\tt"
    res = launch.JobResult(0, "y\n", "", 0.0, stdout_dropped=(6, 1))
    assert res.kept("stdout").splitlines()[0] == (
        "[commscope: the first 6 bytes (1 lines) of the program's stdout are not kept; the "
        "last 2 bytes follow]"
    )
    assert res.kept("stderr") == ""


def test_endings_in_words():
    from commscope.profile.endings import describe, sentence, summarize
    import pandas as pd

    assert describe(False, "signal", 11) == "killed by SIGSEGV (signal 11)"
    assert describe(True, "exit", 0) == "finalized"
    assert describe(False, "unknown", None).startswith("ended without MPI_Finalize")
    ranks = pd.DataFrame(
        {
            "rank": [0, 1, 2, 3],
            "state": ["not finalized"] * 3 + ["finalized"],
            "ending": ["signal", "abort", "signal", "exit"],
            "ending_value": [15.0, 2.0, 15.0, 0.0],
        }
    )
    groups = summarize(ranks)  # the culprit first, bystanders after, clean ranks left out
    assert [g["ranks"] for g in groups] == [[1], [0, 2]]
    assert sentence(groups) == (
        "rank 1 called MPI_Abort with error code 2; ranks 0, 2 killed by SIGTERM (signal 15)"
    )
    assert json.loads(json.dumps(groups)) == groups
