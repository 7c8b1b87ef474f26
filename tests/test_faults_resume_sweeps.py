"""Fault injection: every sweep benchmark survives a SIGKILL (or SIGTERM) mid-sweep and resumes.

A real job is killed after its first points are on disk (after SIGKILL commscope gets no
chance to write its status); the run must read as interrupted with "k of N <unit>
complete", and ``--resume`` must measure the remaining points so that the union of the
segments holds every planned point exactly once, with all its rows.  Benchmarks that are
not sweeps say how much is complete and refuse ``--resume`` (exit 2).
"""

import re
import signal
import subprocess
import sys
import time

import pytest

from commscope.cli import main
from commscope.runs import open_run


def kill_mid_sweep(runs, name, bench_argv, table, rows, sig=signal.SIGKILL):
    """Start ``commscope bench ...``, send ``sig`` once ``raw/<table>.csv`` has ``rows`` rows."""
    argv = [
        sys.executable,
        "-m",
        "commscope",
        "bench",
        *bench_argv,
        "--quiet",
        "--runs",
        str(runs),
        "--name",
        name,
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    path = runs / name / "raw" / f"{table}.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_text().count("\n") > rows:
            break
        time.sleep(0.02)
    proc.send_signal(sig)
    # a caught signal ends commscope with 128 + signal
    assert proc.wait(timeout=60) == (-sig if sig == signal.SIGKILL else 128 + sig)
    return runs / name


def interrupted_then_resumed(path, bench, unit, capsys, key, values):
    """Check the killed run's state, resume it, check the resumed segment started at the
    first incomplete of the planned ``values`` of ``key``; return the finished run."""
    run = open_run(path)
    done, planned, got_unit = run.progress()
    assert run.status == "interrupted" and got_unit == unit and 1 <= done < planned
    # the warning was printed when open_run read the files; the dying job may have
    # completed one more point before progress() read them again
    said = re.search(rf"(\d+) of {planned} {unit} complete", capsys.readouterr().err)
    assert said and 1 <= int(said.group(1)) <= done
    assert main(["bench", bench, "--resume", str(path), "--quiet"]) == 0
    run = open_run(path)
    assert run.status == "complete" and run.progress() == (planned, planned, unit)
    assert len(run.meta["resumed"]) == 1
    assert run.meta["resumed"][0]["from"] == {key: values[done]}
    return run


def each_point_once(df, key, values, unique, group, rows):
    """Every planned point present, no row measured twice, ``rows`` rows per ``group``."""
    assert not df.duplicated(unique).any() and sorted(set(df[key])) == values
    per = df.groupby(group).size()
    assert (per == rows).all()
    return per


@pytest.mark.mpi
def test_hvpingpong_resumes_from_first_incomplete_count(default_mpi, runs_root, capsys):
    counts, iters = [1, 2, 4, 8, 16, 32, 64], 1000
    path = kill_mid_sweep(
        runs_root,
        "hv",
        ["hvpingpong", "--counts", ",".join(map(str, counts)), "-i", str(iters), "--sizes", "8"],
        "samples",
        3 * 2 * iters,
    )
    run = interrupted_then_resumed(
        path, "hvpingpong", "message counts", capsys, "n_messages", counts
    )
    per = each_point_once(
        run.table("samples"),
        "n_messages",
        counts,
        ["n_messages", "order", "pair", "rep"],
        ["n_messages", "order"],
        iters,
    )
    assert len(per) == 14


@pytest.mark.mpi
def test_partitioned_resumes_with_the_same_draws(default_mpi, runs_root, capsys):
    sizes, runs = [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20], 15
    argv = [
        "partitioned",
        "--threads",
        "2",
        "--compute",
        "0.002",
        "--runs-per-size",
        str(runs),
        "--sizes",
        ",".join(map(str, sizes)),
    ]
    path = kill_mid_sweep(runs_root, "part", argv, "samples", 2 * 3 * runs)
    run = interrupted_then_resumed(path, "partitioned", "sizes", capsys, "size_bytes", sizes)
    each_point_once(
        run.table("samples"),
        "size_bytes",
        sizes,
        ["method", "size_bytes", "run"],
        ["method", "size_bytes"],
        runs,
    )
    # a resumed size draws the thread times the uninterrupted sweep would have drawn
    assert (
        main(
            [
                "bench",
                "partitioned",
                *argv[1:],
                "--quiet",
                "--runs",
                str(runs_root),
                "--name",
                "whole",
            ]
        )
        == 0
    )
    key = ["method", "size_bytes", "run", "thread"]
    resumed = run.table("compute").sort_values(key).reset_index(drop=True)
    whole = open_run(runs_root / "whole").table("compute").sort_values(key).reset_index(drop=True)
    assert resumed[key + ["requested_s"]].equals(whole[key + ["requested_s"]])


@pytest.mark.mpi
def test_multirate_resumes_and_derives_rates(default_mpi, runs_root, capsys):
    threads, reps = [1, 2, 3, 4], 4
    # killed once the first thread count is on disk: the job that outlives commscope
    # for a moment (its guard then stops it) has three more to go, ~1 s each
    path = kill_mid_sweep(
        runs_root,
        "mr",
        ["multirate", "--threads", ",".join(map(str, threads)), "--reps", str(reps), "-i", "500"],
        "reps",
        2 * reps,
    )
    run = interrupted_then_resumed(path, "multirate", "thread counts", capsys, "threads", threads)
    df = run.table("reps")
    each_point_once(df, "threads", threads, ["threads", "mode", "rep"], ["threads", "mode"], reps)
    assert df["rate_msgs_per_s"].gt(0).all()  # derived after the resume too


@pytest.mark.mpi
def test_mtmatch_resumes_from_first_incomplete_configuration(default_mpi, runs_root, capsys):
    """SIGTERM after the first configuration: the complete ones are kept as measured, the
    resumed job measures the rest from the same plan.csv, search depths cover them all."""
    configs, trials, messages = 16, 20, 2 * 8  # naive: 2 threads x 8 messages
    # long warm-ups (not recorded) keep every configuration busy for a while (~0.5 s on a
    # quiet 2-core machine), so the kill lands between the first and the last, and the job
    # cannot finish all 16 in the moment it outlives commscope (8 once did, in CI)
    argv = [
        "mtmatch",
        "--points",
        "naive",
        "--k",
        "8",
        "--sweep",
        ",".join(["2"] * configs),
        "--trials",
        str(trials),
        "--warmup",
        "4000",
        "-s",
        "64K",
    ]
    path = kill_mid_sweep(runs_root, "mt", argv, "trials", trials, sig=signal.SIGTERM)
    stopped = open_run(path, warn=False)
    assert stopped.meta["interrupted"]["signal"] == "SIGTERM"
    done = stopped.progress()[0]
    kept = {t: stopped.table(t) for t in ("trials", "order")}
    assert sorted(set(kept["trials"]["config"])) == list(range(done))  # complete configs only
    # without the plan it was measured with, a resume is refused and changes nothing
    files = {f: f.read_bytes() for f in path.rglob("*") if f.is_file()}
    (path / "plan.csv").rename(path / "plan.kept")
    assert main(["bench", "mtmatch", "--resume", str(path), "--quiet"]) == 2
    assert f"{path}/plan.csv: missing" in capsys.readouterr().err
    (path / "plan.kept").rename(path / "plan.csv")
    assert {f: f.read_bytes() for f in path.rglob("*") if f.is_file()} == files
    run = interrupted_then_resumed(
        path, "mtmatch", "configurations", capsys, "config", list(range(configs))
    )
    trials_df, order = run.table("trials"), run.table("order")
    assert len(trials_df) == trials * configs
    each_point_once(
        trials_df, "config", list(range(configs)), ["config", "trial"], ["config"], trials
    )
    each_point_once(
        order,
        "config",
        list(range(configs)),
        ["config", "trial", "tag"],
        ["config"],
        messages * trials,
    )
    assert trials_df["avg_search_depth"].notna().all()  # derived after the resume too
    assert trials_df["max_search_depth"].notna().all()
    # the configurations measured before the kill are untouched
    for table, df, cols in (
        ("trials", trials_df, ["config", "trial", "drain_time_s"]),
        ("order", order, ["config", "trial", "tag", "post_seq", "send_seq"]),
    ):
        before, after = (
            d[d["config"] < done][cols].sort_values(cols).reset_index(drop=True)
            for d in (kept[table], df)
        )
        assert len(before) and after.equals(before)


@pytest.mark.mpi
@pytest.mark.parametrize(
    "bench, argv, table, rows, unit",
    [
        (
            "bsp",
            ["-w", "ftq", "-k", "400", "--compute", "0.005", "--sd", "0"],
            "maxima",
            30,
            "intervals",
        ),
        (
            "threads",
            ["-i", "40", "-t", "6", "--compute", "0.002"],
            "compute",
            2 * 2 * 40,
            "iterations",
        ),
    ],
)
def test_non_sweeps_say_how_far_and_refuse_resume(
    default_mpi, runs_root, capsys, bench, argv, table, rows, unit
):
    path = kill_mid_sweep(runs_root, bench, [bench, *argv], table, rows)
    run = open_run(path)
    done, planned, got = run.progress()
    assert run.status == "interrupted" and got == unit and 1 <= done < planned
    # the warning was printed when open_run read the files; the dying job may have
    # completed one more point before progress() read them again
    said = re.search(rf"(\d+) of {planned} {unit} complete", capsys.readouterr().err)
    assert said and 1 <= int(said.group(1)) <= done
    before = (path / "meta.json").read_bytes()
    assert main(["bench", bench, "--resume", str(path)]) == 2
    err = capsys.readouterr().err
    assert "cannot be resumed" in err and "restarts" in err and "meta.json" in err
    assert (path / "meta.json").read_bytes() == before
