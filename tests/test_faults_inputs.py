"""Fault injection: files still being written, and inputs that are not regular files.

A CSV whose last line is half-written (a benchmark still running, or killed) is read
without that line and with a warning naming file and line, by every reader of growing
files.  A FIFO or device given as meta.json, a run table or an input file is refused
without being opened: each case runs in a subprocess with a timeout, so a reader that
blocked would fail the test instead of hanging it.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from commscope.runs import open_run, read_csv_table

PARTIAL = "time_s\n0.001\n0.002\n0.003\n0.004\n0.00"


def test_partial_last_line_dropped_with_warning(tmp_path, capsys):
    f = tmp_path / "growing.csv"
    f.write_text(PARTIAL)
    df = read_csv_table(f)
    assert list(df["time_s"]) == [0.001, 0.002, 0.003, 0.004]
    err = capsys.readouterr().err
    assert str(f) in err and "line 6" in err and "incomplete" in err


@pytest.mark.slow  # a growing file: a writer process that sleeps
@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "gev", "{f}", "--draws", "4"],
        [
            "stats",
            "bootstrap",
            "{f}",
            "--target-ranks",
            "8",
            "--base-ranks",
            "4",
            "--replicas",
            "100",
            "--seed",
            "1",
        ],
    ],
)
def test_stats_read_growing_files(tmp_path, argv):
    rng = np.random.default_rng(3)
    f = tmp_path / "maxima.csv"
    col = "max_time_s" if "bootstrap" in argv else "time_s"
    body = "\n".join(f"{v:.9f}" for v in rng.gumbel(1e-3, 1e-4, 200))
    f.write_text(f"{col}\n{body}\n0.0012")  # last row still being written
    if "gev" in argv:
        argv = argv + ["--column", col]
    proc = subprocess.run(
        [sys.executable, "-m", "commscope", *[a.format(f=f) for a in argv]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{f}: line 202 is incomplete" in proc.stderr


@pytest.mark.slow
def test_arrivals_read_growing_file(tmp_path):
    rows = ["trial,rank,iteration,thread,compute_time_s"]
    rng = np.random.default_rng(1)
    for it in range(20):
        for t in range(4):
            rows.append(f"0,0,{it},{t},{rng.normal(1e-3, 1e-5):.9f}")
    f = tmp_path / "arrivals.csv"
    f.write_text("\n".join(rows) + "\n0,0,20,0,0.00")
    proc = subprocess.run(
        [sys.executable, "-m", "commscope", "stats", "arrivals", str(f)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{f}: line 82 is incomplete" in proc.stderr


def test_raw_table_of_running_run_reads_complete_rows(new_run, capsys):
    run = new_run("bsp")
    (run.raw_dir / "maxima.csv").write_text(
        "interval,max_interval_s,max_workload_s,argmax_rank,wall_s\n0,1e-3,1e-3,0,1e-3\n1,2e"
    )
    df = open_run(run.path).table("maxima")
    assert len(df) == 1
    assert "maxima.csv: line 3 is incomplete" in capsys.readouterr().err


def _fifo(path):
    os.mkfifo(path)
    return path


def _run_cli(argv, timeout=60):
    """The CLI in a subprocess: a reader blocking on a FIFO times out instead of hanging."""
    return subprocess.run(
        [sys.executable, "-m", "commscope", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_fifo_meta_json_refused(new_run, tmp_path):
    run = new_run("pingpong")
    (run.path / "meta.json").unlink()
    _fifo(run.path / "meta.json")
    proc = _run_cli(["report", run.path, "-o", tmp_path / "r.html"])
    assert proc.returncode == 2
    assert "meta.json: is a FIFO (named pipe); only regular files are read" in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_fifo_run_table_refused(new_run):
    run = new_run("bsp")
    run.finish("complete")
    _fifo(run.path / "maxima.parquet")
    code = (
        "import sys\nfrom commscope.runs import open_run\n"
        "from commscope.errors import InputError\n"
        f"try:\n    open_run({str(run.path)!r}).table('maxima')\n"
        "except InputError as e:\n    print(e); sys.exit(2)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "is a FIFO" in proc.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "gev", "{f}"],
        ["stats", "bootstrap", "{f}", "--target-ranks", "8", "--base-ranks", "4"],
        ["stats", "arrivals", "{f}"],
        ["model", "pattern", "--machine-model", "bluewaters", "--messages", "{f}"],
        ["model", "p2p", "--machine-model", "{f}", "--size", "8", "--locality", "intra-socket"],
    ],
)
def test_fifo_and_device_inputs_refused(tmp_path, argv):
    for name, target in (("in.csv", None), ("dev.csv", "/dev/zero")):
        f = tmp_path / name
        if target:
            f.symlink_to(target)  # a link to a device is still a device
        else:
            _fifo(f)
        proc = _run_cli([a.format(f=f) for a in argv])
        assert proc.returncode == 2, proc.stderr
        kind = "a device" if target else "a FIFO"
        assert f"{f}: is {kind}" in proc.stderr, proc.stderr


def test_regular_file_through_symlink_still_read(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("time_s\n1\n2\n3\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert list(read_csv_table(link)["time_s"]) == [1, 2, 3]
