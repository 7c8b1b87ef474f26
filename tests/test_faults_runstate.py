"""Fault injection: a run directory tells the truth after its commscope was killed.

A real ping-pong is SIGKILLed after its first sizes (no chance to write its status);
readers must say "interrupted" with how much is complete, use only complete sizes, and
``--resume`` must finish the sweep with the recorded parameters.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from commscope.cli import main
from commscope.runs import open_run

PARAMS = ["-m", "1:1M", "-i", "4000", "-I", "1000"]


def _killed_after_first_sizes(runs, name, sig=signal.SIGKILL, mpi="openmpi"):
    argv = [
        sys.executable,
        "-m",
        "commscope",
        "bench",
        "pingpong",
        "--mpi",
        mpi,
        *PARAMS,
        "--quiet",
        "--runs",
        str(runs),
        "--name",
        name,
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    samples = runs / name / "raw" / "samples.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # 3 sizes written: 1, 2, 4 bytes done
        if samples.exists() and samples.read_text().count("\n") > 3 * 4000:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    return proc.wait(timeout=60)


@pytest.mark.mpi
def _until_quiet(path, still_s=1.0, limit_s=30):
    """Wait until nothing writes ``path`` any more (the killed commscope's ranks are gone)."""
    import time

    last, since, end = None, time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() < end:
        size = path.stat().st_size if path.exists() else -1
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since >= still_s:
            return
        time.sleep(0.1)


def test_killed_run_reads_as_interrupted_and_resumes(default_mpi, runs_root, capsys):
    assert _killed_after_first_sizes(runs_root, "pp") == -signal.SIGKILL
    _until_quiet(runs_root / "pp" / "raw" / "samples.csv")  # the job dies ~0.1 s later
    meta = json.loads((runs_root / "pp" / "meta.json").read_text())
    assert meta["status"] == "running" and meta["commscope_pid"] > 0  # as the kill left it
    run = open_run(runs_root / "pp")
    done, planned, unit = run.progress()
    assert run.status == "interrupted" and planned == 21 and unit == "sizes"
    assert 3 <= done < planned
    err = capsys.readouterr().err
    assert "interrupted" in err and f"{done} of 21 sizes complete" in err
    df = run.table("samples")  # only complete sizes, each with all its repetitions
    counts = df.groupby("size_bytes").size()
    assert len(counts) == done and (counts == 4000).all()

    # report says so; nothing in the run directory changes by reading it
    before = (runs_root / "pp" / "meta.json").read_bytes()
    out = runs_root.parent / "report.html"
    main(["report", str(runs_root / "pp"), "-o", str(out)])
    assert f"{done} of 21 sizes complete" in out.read_text()
    assert (runs_root / "pp" / "meta.json").read_bytes() == before

    assert main(["bench", "pingpong", "--resume", str(runs_root / "pp"), "--quiet"]) == 0
    run = open_run(runs_root / "pp")
    assert run.status == "complete" and run.progress() == (21, 21, "sizes")
    counts = run.table("samples").groupby("size_bytes").size()
    assert len(counts) == 21
    assert all(counts[s] == (4000 if s <= 8192 else 1000) for s in counts.index)
    resumed = run.meta["resumed"]
    assert len(resumed) == 1 and resumed[0]["from"]["size_bytes"] == 2**done
    assert run.meta["parameters"]["iters"] == 4000

    # a complete run is not resumed again
    assert main(["bench", "pingpong", "--resume", str(runs_root / "pp")]) == 2
    assert "nothing to resume" in capsys.readouterr().err


@pytest.mark.mpi
def test_sigterm_marks_interrupted_with_signal(default_mpi, runs_root):
    assert _killed_after_first_sizes(runs_root, "pp", signal.SIGTERM) == 128 + signal.SIGTERM
    run = open_run(runs_root / "pp")
    assert run.meta["status"] == "interrupted"
    assert run.meta["interrupted"]["signal"] == "SIGTERM"
    assert run.meta["end_time"] is not None
    # the samples measured before the signal were converted and are readable
    assert (runs_root / "pp" / "samples.parquet").exists()
    assert run.progress()[0] >= 3


def test_running_run_of_a_live_process_stays_running(new_run):
    run = new_run("pingpong")
    assert open_run(run.path).status == "running"  # this very process writes it
    meta = json.loads((run.path / "meta.json").read_text())
    meta["commscope_pid_start"] = -1  # same pid, another process (pid reused)
    (run.path / "meta.json").write_text(json.dumps(meta))
    assert open_run(run.path).status == "interrupted"
    meta["commscope_host"] = "elsewhere"  # cannot check another host: trust the file
    (run.path / "meta.json").write_text(json.dumps(meta))
    assert open_run(run.path).status == "running"


def test_resume_refuses_what_it_cannot_resume(new_run, capsys):
    run = new_run("pingpong")
    assert main(["bench", "pingpong", "--resume", str(run.path)]) == 2
    assert "still running" in capsys.readouterr().err
    other = new_run("bsp")
    other.finish("failed")
    assert main(["bench", "pingpong", "--resume", str(other.path)]) == 2
    assert "cannot be resumed" in capsys.readouterr().err
    assert os.path.exists(other.path / "meta.json")


@pytest.mark.mpi
def test_study_resume_keeps_complete_runs(default_mpi, tmp_path):
    out = tmp_path / "study"
    argv = [
        sys.executable,
        "-m",
        "commscope",
        "study",
        "--quick",
        "--only",
        "pingpong",
        "--output",
        str(out),
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    second = out / "runs" / "pingpong-2pairs" / "raw" / "samples.csv"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (second.exists() and second.stat().st_size):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    first_meta = (out / "runs" / "pingpong-1pair" / "meta.json").read_bytes()
    done, planned, _ = open_run(out / "runs" / "pingpong-2pairs").progress()
    assert main(["study", "--output", str(out), "--resume"]) == 0
    assert (out / "runs" / "pingpong-1pair" / "meta.json").read_bytes() == first_meta
    run = open_run(out / "runs" / "pingpong-2pairs")
    assert run.status == "complete"
    # resumed from the first incomplete size (on a loaded machine the signal may come
    # only after the last size was written; then only the conversion was left)
    assert bool(run.meta.get("resumed")) == (done < planned)
    assert (out / "report.html").exists()


def test_an_unreaped_writer_counts_as_gone():
    """A commscope killed with its parent (scancel) can linger as a zombie: it writes nothing."""
    import subprocess
    import time as _time
    from commscope.runs import process_alive, process_start_ticks

    child = subprocess.Popen(["true"])
    start = process_start_ticks(child.pid)
    deadline = _time.monotonic() + 10
    while _time.monotonic() < deadline:  # exited, not yet reaped
        with open(f"/proc/{child.pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
        _time.sleep(0.01)
    assert not process_alive(child.pid, start)
    child.wait()
    assert not process_alive(child.pid, start)
