"""Real ping-pong runs through the CLI and the library (2 and 4 ranks)."""

import numpy as np
import pytest

from commscope.bench.pingpong import run_pingpong
from commscope.cli import main
from commscope.errors import EnvironmentProblem
from commscope.runs import open_run

pytestmark = pytest.mark.mpi


def test_cli_run_keeps_every_repetition_with_locality(runs_root, capsys, default_mpi):
    rc = main(
        [
            "bench",
            "pingpong",
            "-m",
            "1:16K",
            "-i",
            "20",
            "-x",
            "2",
            "-I",
            "5",
            "-X",
            "1",
            "--runs",
            str(runs_root),
            "--name",
            "pp",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "# Size" in out and "Avg Lat(us)" in out  # OSU-style table on stdout
    run = open_run(runs_root / "pp")
    assert run.meta["status"] == "complete"
    df = run.table("samples")
    sizes = [1 << k for k in range(15)]
    assert sorted(df["size_bytes"].unique()) == sizes
    counts = df.groupby("size_bytes").size()
    assert all(counts[s] == (20 if s <= 8192 else 5) for s in sizes)  # fewer above 8 KiB
    assert (df["time_s"] > 0).all() and (df["time_s"] < 1).all()
    assert len(set(df["locality"])) == 1  # one pair, one node
    assert set(df["locality"]) <= {"intra-socket", "cross-socket"}
    # Larger messages take longer (medians, 1 B vs 16 KiB: a factor, not a timing bound).
    med = df.groupby("size_bytes")["time_s"].median()
    assert med[16384] > med[1]
    placement = run.meta["placement"]
    assert [p["rank"] for p in placement] == [0, 1]
    assert all(p["host"] == run.meta["hosts"][0] for p in placement)
    assert "Open MPI" in run.meta["mpi"]["library_version"]
    assert run.meta["launch"]["argv"][0].endswith("mpiexec")
    assert run.meta["parameters"]["iters"] == 20


def test_multi_pair_run_labels_pairs(runs_root, default_mpi):
    run = run_pingpong(
        pairs=2,
        min_size=64 << 10,
        max_size=128 << 10,
        iters=5,
        warmup=1,
        large_iters=5,
        large_warmup=1,
        runs_root=runs_root,
        echo=False,
    )
    df = run.table("samples")
    assert set(df["pairs"]) == {2} and set(df["pair"]) == {0, 1}
    assert len(df) == 2 * 2 * 5
    assert len(run.meta["placement"]) == 4
    assert run.meta["launch"]["nranks"] == 4


def test_killed_run_keeps_samples_already_written(runs_root, default_mpi):
    # Many repetitions of large sizes: the first sizes finish, the job is killed mid-way.
    with pytest.raises(EnvironmentProblem, match="partial results kept"):
        run_pingpong(
            min_size=1,
            max_size=4 << 20,
            iters=20000,
            warmup=0,
            large_iters=20000,
            large_warmup=0,
            runs_root=runs_root,
            run_name="killed",
            timeout=3,
            echo=False,
        )
    run = open_run(runs_root / "killed")
    assert run.meta["status"] == "failed"
    df = run.table("samples")
    assert len(df) > 0 and df["size_bytes"].max() < 4 << 20
    counts = df.groupby("size_bytes").size()
    # every size before the one the kill interrupted is complete; rows are written as
    # measured, so the interrupted size keeps its repetitions so far
    assert (counts.iloc[:-1] == 20000).all() and 0 < counts.iloc[-1] <= 20000


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--pairs", "0"], "--pairs"),
        (["-m", "64:1"], "-m"),
        (["-m", "lots"], "-m"),
        (["-i", "0"], "--iterations"),  # the option's name, not the parameter's
        (["-I", "0"], "--large-iterations"),
        (["-m", "1:2G"], "2 GiB"),
        (["--timeout", "0"], "--timeout"),
        (["--ranks-per-node", "0"], "--ranks-per-node"),
    ],
)
def test_bad_options_exit_2(runs_root, capsys, argv, field):
    assert main(["bench", "pingpong", "--runs", str(runs_root), *argv]) == 2
    err = capsys.readouterr().err
    assert field in err
    assert not any(runs_root.iterdir())  # nothing created


@pytest.mark.mpich
def test_mpich_wheel_smoke(runs_root, mpich_mpi):
    run = run_pingpong(
        min_size=1,
        max_size=4096,
        iters=10,
        warmup=1,
        runs_root=runs_root,
        mpi_spec="mpich",
        echo=False,
    )
    assert "MPICH" in run.meta["mpi"]["library_version"]
    assert run.meta["mpi"]["name"] == "mpich"
    df = run.table("samples")
    assert len(df) == 13 * 10 and np.all(df["time_s"] > 0)


@pytest.mark.parametrize("text", ["1.5K:3K", "2KB:2KB", "4k", ":2", "1mb:1MiB"])
def test_a_size_means_the_same_run_directly_or_through_commscope(text, default_mpi, tmp_path):
    """cs_pingpong's own -m parser (cs_common.c) reads a size as commscope.units does:
    K binary, KB SI, decimals, any case, a lone MAX from 1, ':MAX' from 0."""
    from commscope import launch, mpi
    from commscope.units import parse_size_range

    lo, hi = parse_size_range(text)
    expected = []
    s = lo
    while s <= hi:
        expected.append(s)
        s = s * 2 if s else 1
    out = tmp_path / "o"
    out.mkdir()
    args = ["-m", text, "-i", "1", "-x", "0", "-I", "1", "-X", "0", "--out", out]
    plan = launch.plan_launch(default_mpi, 2, mpi.binary(default_mpi, "pingpong"), args)
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    assert res.returncode == 0, res.stderr
    import pandas as pd

    sizes = sorted(pd.read_csv(out / "samples.csv")["size_bytes"].unique().tolist())
    assert sizes == expected, (text, sizes)


def test_a_size_the_python_side_refuses_the_c_side_refuses(default_mpi, tmp_path):
    from commscope import launch, mpi

    for text in ("4Q", "-1:2", "1.3", "inf"):
        plan = launch.plan_launch(
            default_mpi, 2, mpi.binary(default_mpi, "pingpong"), ["-m", text, "--out", tmp_path]
        )
        res = launch.run_job(plan, echo=False, progress=False, timeout=60)
        assert res.returncode != 0 and "-m" in res.stderr, (text, res.stderr[-300:])
