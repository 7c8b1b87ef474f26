"""Multirate benchmark (001 Sec. 3.9.1): real 2-rank jobs with 2-4 threads per rank."""

import json

import pandas as pd
import pytest

from commscope import cli
from commscope.bench.multirate import config_summary, mode_ratio, run_multirate

W, I = 32, 6  # window and timed windows: small, so a repetition takes milliseconds
COUNTS = (2, 4)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, default_mpi):
    root = tmp_path_factory.mktemp("runs")
    return run_multirate(
        threads=COUNTS,
        window=W,
        iterations=I,
        warmup=1,
        reps=2,
        runs_root=root,
        echo=False,
        progress=False,
        timeout=120,
    )


def test_every_repetition_and_thread_kept(small_run):
    assert small_run.meta["status"] == "complete"
    reps, threads = small_run.table("reps"), small_run.table("threads")
    assert len(reps) == len(COUNTS) * 2 * 2  # thread counts x modes x reps
    assert len(threads) == sum(COUNTS) * 2 * 2
    assert set(reps["mode"]) == {"shared", "per-thread"}
    assert (reps["messages"] == reps["threads"] * W * I).all()
    assert (threads["messages"] == W * I).all()
    assert (reps["rate_msgs_per_s"] > 0).all() and (threads["rate_msgs_per_s"] > 0).all()
    for (mode, t, rep), g in threads.groupby(["mode", "threads", "rep"]):
        assert sorted(g["thread"]) == list(range(t))
        # a repetition lasts until its slowest thread's last ack
        wall = reps[(reps["mode"] == mode) & (reps["threads"] == t) & (reps["rep"] == rep)]
        assert wall["time_s"].iloc[0] == pytest.approx(g["time_s"].max(), rel=1e-6)
    # 2 ranks x 2+ threads on this machine's cores: flagged
    assert reps["oversubscribed"].any() == (
        2 * max(COUNTS) > small_run.meta["oversubscription"]["cores_per_node"]
    )


def test_ob1_queue_lengths_within_what_the_protocol_allows(small_run):
    """Open MPI's pvars, read on the receiver: each thread has at most one window of
    receives posted, and a sender at most one window in flight (it waits for the ack)."""
    reps = small_run.table("reps")
    assert reps[["posted_recvq_max", "unexpected_msgq_max"]].notna().all().all()
    assert (reps["posted_recvq_max"] <= reps["threads"] * W).all()
    assert (reps["unexpected_msgq_max"] <= reps["threads"] * W).all()
    assert (reps["posted_recvq_mean"] <= reps["posted_recvq_max"]).all()
    assert (reps["posted_recvq_max"] > 0).any()


def test_summary_and_ratio_from_medians():
    reps = pd.DataFrame(
        {
            "mode": ["shared"] * 3 + ["per-thread"] * 3,
            "threads": [2] * 6,
            "rep": [0, 1, 2] * 2,
            "rate_msgs_per_s": [100.0, 300.0, 200.0, 400.0, 800.0, 600.0],
            "posted_recvq_mean": [1.0] * 6,
            "posted_recvq_max": [2.0] * 6,
            "unexpected_msgq_max": [0.0] * 6,
            "oversubscribed": [False] * 6,
        }
    )
    reps["rate_per_thread_msgs_per_s"] = reps["rate_msgs_per_s"] / reps["threads"]
    s = config_summary(reps).set_index("mode")
    assert (
        s.loc["shared", "rate_msgs_per_s"] == 200
        and s.loc["per-thread", "rate_min_msgs_per_s"] == 400
    )
    r = mode_ratio(reps)
    assert r["shared_msgs_per_s"].iloc[0] == 100 and r["per_thread_msgs_per_s"].iloc[0] == 300
    # paired by repetition: 100/400, 300/800, 200/600 -> median 1/3
    assert r["shared_over_per_thread"].iloc[0] == pytest.approx(1 / 3)
    reps.loc[reps["mode"] == "per-thread", "rate_per_thread_msgs_per_s"] = [100.0, 600.0, 1000.0]
    # 50/100, 150/600, 100/1000 -> median 1/4 (the ratio of medians would be 100/600)
    assert mode_ratio(reps)["shared_over_per_thread"].iloc[0] == pytest.approx(0.25)


def test_cli_json(tmp_path, capsys, default_mpi):
    code = cli.main(
        [
            "bench",
            "multirate",
            "--threads",
            "2",
            "--modes",
            "shared",
            "--window",
            "16",
            "-i",
            "4",
            "-x",
            "1",
            "--reps",
            "1",
            "--json",
            "--runs",
            str(tmp_path),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(r["mode"], r["threads"], r["reps"]) for r in out["summary"]] == [("shared", 2, 1)]
    assert out["ratio"] == []  # one mode only: nothing to compare


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--threads", "0"], "--threads"),
        (["--threads", "2,x"], "--threads"),
        (["--modes", "shared,bogus"], "--modes"),
        (["--window", "0"], "--window"),
        (["--reps", "0"], "--reps"),
    ],
)
def test_bad_input_exit_2_and_nothing_written(tmp_path, capsys, argv, field):
    code = cli.main(["bench", "multirate", "--runs", str(tmp_path / "runs"), *argv])
    assert code == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.mpich
def test_mpich_runs_without_queue_pvars(tmp_path, mpich_mpi):
    run = run_multirate(
        threads=(2,),
        window=16,
        iterations=4,
        warmup=1,
        reps=1,
        mpi_spec="mpich",
        runs_root=tmp_path,
        echo=False,
        progress=False,
        timeout=120,
    )
    reps = run.table("reps")
    assert len(reps) == 2 and (reps["rate_msgs_per_s"] > 0).all()
    assert reps["unexpected_msgq_max"].isna().all()  # the mpich wheel has no pvars


def test_counts_under_the_profile_follow_the_protocol(tmp_path, capsys, default_mpi):
    """cs_multirate under `commscope profile`: every call count, per rank and per thread,
    follows from the window protocol (native/bench/multirate.c)."""
    from commscope import mpi

    T, W, I, X, M, R = 2, 16, 5, 1, 2, 2  # threads, window, timed, warm-up, modes, reps
    binary = mpi.binary(default_mpi, "multirate")
    code = cli.main(
        [
            "profile",
            "-n",
            "2",
            "--threads",
            str(T),
            "--runs",
            str(tmp_path),
            "--quiet",
            "--",
            str(binary),
            "--threads",
            str(T),
            "--window",
            str(W),
            "-i",
            str(I),
            "-x",
            str(X),
            "--reps",
            str(R),
        ]
    )
    capsys.readouterr()
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    from commscope.runs import open_run

    run = open_run(run_dir)
    f = run.table("functions")
    windows = (I + X) * M * R  # per thread
    for rank, data_call, ack_call in ((0, "MPI_Isend", "MPI_Recv"), (1, "MPI_Irecv", "MPI_Send")):
        per_thread = f[(f["rank"] == rank) & (f["function"] == data_call)]
        assert sorted(per_thread["calls"]) == [W * windows] * T
        waitall = f[(f["rank"] == rank) & (f["function"] == "MPI_Waitall")]
        assert sorted(waitall["calls"]) == [windows] * T
        # one ack per window per thread, plus the receiver's queue statistics per repetition
        assert (
            f[(f["rank"] == rank) & (f["function"] == ack_call)]["calls"].sum()
            == T * windows + M * R
        )
        totals = f[f["rank"] == rank].groupby("function")["calls"].sum()
        assert totals["MPI_Barrier"] == M * R and totals["MPI_Comm_dup"] == 1 + T + 1
    peers = run.table("peers").set_index(["rank", "peer"])
    assert (
        peers.loc[(0, 1), "messages_sent"]
        == T * W * windows
        == peers.loc[(1, 0), "messages_received"]
    )
    assert peers.loc[(0, 1), "bytes_sent"] == T * W * windows * 64
    c = run.table("counters")
    hwm = c[(c["thread"] == -1) & (c["counter"] == "posted_receives_hwm")].set_index("rank")[
        "value"
    ]
    # a window's receives stay posted until its Waitall; never more than one window per thread
    assert W <= hwm[1] <= T * W
