"""Fault injection: a full disk (or a file-size limit) loses nothing silently.

A real ping-pong writes into a 300 KiB tmpfs (root only; skipped where mounting is not
allowed): the native benchmark must stop at the first failed write naming the file, and
commscope must mark the run failed with the reason, leave no temporary file, keep every
complete row, and exit 2 naming the file.  Without root, the native side writes to
/dev/full and the Python side gets the failure pyarrow raises on a full disk.
(RLIMIT_FSIZE cannot stand in: MPI's own shared-memory files hit it first.)
"""

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from commscope.runs import open_run
from needs import need_ompt_runtime

ARGS = ["bench", "pingpong", "-m", "1:4M", "-i", "1000", "-I", "200", "--quiet", "--name", "pp"]


def _bench(runs, preexec=None):
    return subprocess.run(
        [sys.executable, "-m", "commscope", *ARGS, "--runs", str(runs)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
    )


def _check_failed_run(run_dir, proc, reason):
    assert proc.returncode == 2, proc.stderr
    assert f"{run_dir / 'raw' / 'samples.csv'}: {reason}" in proc.stderr, proc.stderr
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "failed"
    assert meta["failure"].startswith(reason.lower()) and "samples.csv" in meta["failure"]
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    run = open_run(run_dir)
    df = run.table("samples")
    done, planned, _ = run.progress()
    assert 0 < done < planned == 23
    counts = df.groupby("size_bytes").size()
    assert (
        len(counts) == done and (counts == [1000 if s <= 8192 else 200 for s in counts.index]).all()
    )


@pytest.fixture
def tiny_tmpfs(tmp_path):
    yield from _tmpfs(tmp_path, "300k")


@pytest.fixture
def tinier_tmpfs(tmp_path):
    """Room for a run's meta.json and the node file's start, not for two ranks' blocks."""
    yield from _tmpfs(tmp_path, "80k")


def _tmpfs(tmp_path, size):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.mpi
def test_full_disk(default_mpi, tiny_tmpfs):
    proc = _bench(tiny_tmpfs)
    _check_failed_run(tiny_tmpfs / "pp", proc, "No space left on device")


@pytest.mark.mpi
def test_native_write_to_full_device_stops_with_the_file_named(default_mpi, tmp_path):
    """No root needed: the table is a link to /dev/full, where every write fails."""
    from commscope import launch, mpi

    out = tmp_path / "raw"
    out.mkdir()
    (out / "samples.csv").symlink_to("/dev/full")
    plan = launch.plan_launch(
        default_mpi,
        2,
        mpi.binary(default_mpi, "pingpong"),
        ["-m", "1:64", "-i", "10", "-I", "10", "--out", out],
    )
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    assert res.returncode != 0
    assert f"cannot write {out}/samples.csv: No space left on device [errno 28]" in res.stderr
    from commscope.collect.lifecycle import native_write_error

    err = native_write_error(res.stderr)
    assert err.errno == 28 and err.filename == f"{out}/samples.csv"


def test_only_commscope_s_own_write_failures_fail_a_run():
    """A profiled program's own message of the same form is its business, not a failed run."""
    from commscope.collect.lifecycle import native_write_error

    own = "commscope profile: rank 1: cannot write /r/c.json: No space left on device [errno 28]"
    app = "solver: cannot write out.dat: Permission denied [errno 13]"
    assert native_write_error(f"{app}\n{own}; stops\n").filename == "/r/c.json"
    assert native_write_error(f"{app}\nprefix {own}\n") is None


def test_table_conversion_failure_names_file_and_marks_run(new_run, monkeypatch):
    """No root needed: the Parquet writer fails as pyarrow does on a full disk."""
    run = new_run("pingpong")
    (run.raw_dir / "samples.csv").write_text(
        "size_bytes,pair,rep,time_s,locality,pairs\n1,0,0,1e-6,intra-socket,1\n"
    )

    def full(self, path, **kw):
        open(path, "wb").write(b"PAR1")  # a partial file, then the failure
        raise OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    with pytest.raises(OSError) as info:
        run.finish("complete")
    assert info.value.filename == str(run.path / "samples.parquet") and info.value.errno == 28
    meta = json.loads((run.path / "meta.json").read_text())
    assert meta["status"] == "failed"
    assert meta["failure"] == f"no space left on device: {run.path / 'samples.parquet'}"
    assert sorted(p.name for p in run.path.iterdir()) == ["meta.json", "raw"]  # no temporary
    assert len(open_run(run.path).table("samples")) == 1  # the raw CSV still serves


@pytest.mark.mpi
@pytest.mark.parametrize("victim", ["ompt.0.1.bin", "ompt.0.maps"])
def test_ompt_tool_stops_at_a_full_disk_with_one_message(default_mpi, tmp_path, victim):
    """The OMPT tool's files: the first failed write stops the tool, named once on stderr."""
    from commscope import mpi as mpimod
    from commscope.collect import ompt

    need_ompt_runtime()
    tool = ompt.tool_library(default_mpi)
    (tmp_path / victim).symlink_to("/dev/full")
    env = {
        **os.environ,
        "LD_PRELOAD": str(ompt.runtime_library()),
        "OMP_TOOL_LIBRARIES": str(tool),
        "COMMSCOPE_PROFILE_DIR": str(tmp_path),
        "COMMSCOPE_OMPT_BUFFER": "64",
        "OMP_NUM_THREADS": "2",
        "OMPI_COMM_WORLD_RANK": "0",
    }
    probe = mpimod.binary(default_mpi, "ompt_probe")
    res = subprocess.run(
        [str(probe), "2000", "2"], env=env, capture_output=True, text=True, timeout=120
    )
    line = f"commscope_ompt: cannot write {tmp_path / victim}: No space left on device [errno 28]"
    assert res.stderr.count("commscope_ompt: cannot write") == 1 and line in res.stderr
    # it stopped writing: the metadata was not finalized, the other files did not grow
    meta = json.loads((tmp_path / "ompt.0.json").read_text())
    assert meta["state"] == "running"
    assert not list(tmp_path.glob("*.tmp*"))


@pytest.fixture
def full_run_file(monkeypatch):
    """``full_run_file(name)``: runs created from then on have ``raw/<name>`` linked to
    /dev/full, so the one write that fails is that file's (no root needed)."""
    from commscope.runs import Run

    create = Run.create.__func__

    def plant(name):
        def create_then_plant(cls, *args, **kw):
            run = create(cls, *args, **kw)
            (run.raw_dir / name).symlink_to("/dev/full")
            return run

        monkeypatch.setattr(Run, "create", classmethod(create_then_plant))

    return plant


@pytest.mark.mpi
@pytest.mark.parametrize(
    "command, program",
    [
        (
            [
                "bench",
                "partitioned",
                "--ompt",
                "--threads",
                "2",
                "--compute",
                "0.001",
                "--runs-per-size",
                "2",
                "--sizes",
                "64K,128K",
            ],
            [],
        ),
        (
            ["profile", "--ompt", "--threads", "2", "-n", "2"],
            ["--", "threads", "-i", "4", "-x", "1", "--compute-mode", "sleep"],
        ),
    ],
)
def test_ompt_write_failure_fails_a_job_that_exits_0(
    default_mpi, tmp_path, capsys, full_run_file, command, program
):
    """The OMPT tool stops timing threads at a failed write and lets the program finish
    (exit 0): the run is still failed with the file named, and commscope exits 2."""
    from commscope import mpi as mpimod
    from commscope.cli import main

    need_ompt_runtime()
    full_run_file("ompt.0.maps")
    runs = tmp_path / "runs"
    program = [str(mpimod.binary(default_mpi, a)) if a == "threads" else a for a in program]
    assert main([*command, "--quiet", "--runs", str(runs), "--name", "r", *program]) == 2
    victim = (runs / "r" / "raw").resolve() / "ompt.0.maps"  # the tool's directory is absolute
    err = capsys.readouterr().err
    assert err.count(str(victim)) == 1
    assert f"{victim}: No space left on device" in err
    meta = json.loads((runs / "r" / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["failure"] == f"no space left on device: {victim}"
    assert meta["exit_status"] == 0  # the program itself succeeded
    assert "thread timing stops here" in (runs / "r" / "stderr.txt").read_text()


@pytest.mark.mpi
def test_profiler_on_a_full_disk_fails_the_run_naming_the_file(default_mpi, tinier_tmpfs):
    """The counter library reserves its blocks and finds the disk full: the profiled program
    runs on unprofiled, and the run is failed with the file named (exit 2)."""
    from commscope import mpi as mpimod

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "commscope",
            "profile",
            "-n",
            "2",
            "--quiet",
            "--runs",
            str(tinier_tmpfs),
            "--name",
            "prof",
            "--",
            str(mpimod.binary(default_mpi, "threads")),
            "-i",
            "4",
            "-x",
            "1",
            "--compute-mode",
            "sleep",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "commscope: error:" in line]
    assert len(lines) == 1 and lines[0].endswith(": No space left on device"), proc.stderr
    meta = json.loads((tinier_tmpfs / "prof" / "meta.json").read_text())
    assert meta["status"] == "failed" and meta["exit_status"] == 0
    assert re.fullmatch(
        rf"no space left on device: {tinier_tmpfs}/prof/raw/node\.[\w.-]+\.(bin|json|snap)",
        meta["failure"],
    ), meta["failure"]
