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
import subprocess
import sys

import pandas as pd
import pytest

from commscope.runs import open_run

ARGS = ["bench", "pingpong", "-m", "1:4M", "-i", "1000", "-I", "200", "--quiet", "--name", "pp"]


def _bench(runs, preexec=None):
    return subprocess.run([sys.executable, "-m", "commscope", *ARGS, "--runs", str(runs)],
                          capture_output=True, text=True, timeout=300, preexec_fn=preexec)


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
    assert len(counts) == done and (counts == [1000 if s <= 8192 else 200
                                               for s in counts.index]).all()


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
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
    plan = launch.plan_launch(default_mpi, 2, mpi.binary(default_mpi, "pingpong"),
                              ["-m", "1:64", "-i", "10", "-I", "10", "--out", out])
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    assert res.returncode != 0
    assert f"cannot write {out}/samples.csv: No space left on device [errno 28]" in res.stderr
    from commscope.bench.driver import native_write_error
    err = native_write_error(res.stderr)
    assert err.errno == 28 and err.filename == f"{out}/samples.csv"


def test_table_conversion_failure_names_file_and_marks_run(new_run, monkeypatch):
    """No root needed: the Parquet writer fails as pyarrow does on a full disk."""
    run = new_run("pingpong")
    (run.raw_dir / "samples.csv").write_text(
        "size_bytes,pair,rep,time_s,locality,pairs\n1,0,0,1e-6,intra-socket,1\n")

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
    from commscope.profile import ompt
    if ompt.runtime_library() is None:
        pytest.skip("intel-openmp wheel not installed (scripts/setup.sh installs it)")
    tool = ompt.tool_library(default_mpi)
    (tmp_path / victim).symlink_to("/dev/full")
    env = {**os.environ, "LD_PRELOAD": str(ompt.runtime_library()),
           "OMP_TOOL_LIBRARIES": str(tool), "COMMSCOPE_PROFILE_DIR": str(tmp_path),
           "COMMSCOPE_OMPT_BUFFER": "64", "OMP_NUM_THREADS": "2", "OMPI_COMM_WORLD_RANK": "0"}
    probe = mpimod.binary(default_mpi, "ompt_probe")
    res = subprocess.run([str(probe), "2000", "2"], env=env, capture_output=True, text=True,
                         timeout=120)
    line = f"commscope_ompt: cannot write {tmp_path / victim}: No space left on device [errno 28]"
    assert res.stderr.count("commscope_ompt: cannot write") == 1 and line in res.stderr
    # it stopped writing: the metadata was not finalized, the other files did not grow
    meta = json.loads((tmp_path / "ompt.0.json").read_text())
    assert meta["state"] == "running"
    assert not list(tmp_path.glob("*.tmp*"))
