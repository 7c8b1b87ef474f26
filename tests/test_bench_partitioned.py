"""cs_partitioned run for real through the Python driver (2 ranks, 2-4 threads, ms computes)."""

import csv
import subprocess

import numpy as np
import pytest
from scipy import stats

from commscope import launch
from commscope.bench.partitioned import BENCHMARK, default_sizes, method_status, run_partitioned
from commscope.benchspec import cgen
from commscope.cli import main
from commscope.models.partitioned import thread_time_distribution
from commscope.paths import native_dir

QUIET = dict(echo=False, progress=False, timeout=180)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, default_mpi):  # a real run: its users get the mpi marker
    """3 threads, a size that is not a multiple of 3, every method."""
    root = tmp_path_factory.mktemp("runs")
    return run_partitioned(
        threads=3,
        compute_s=0.003,
        variability=0.3,
        sizes=[65536, 1000001],
        runs_per_size=3,
        warmup=1,
        seed=7,
        runs_root=root,
        **QUIET,
    )


def test_every_partition_arrives_with_the_right_data(small_run, default_mpi):
    s = small_run.table("samples")
    assert set(method_status(small_run).values()) == {("run", "")}
    assert len(s) == 3 * 2 * 3  # methods x sizes x runs
    assert (s["mismatches"] == 0).all()
    assert (s["bytes_received"] == s["size_bytes"]).all()
    # 1000001 is rounded down to 3 equal partitions.
    assert sorted(s["size_bytes"].unique()) == [65535, 999999]
    assert (s["partitions"] == 3).all()
    assert (s["partition_bytes"] * s["partitions"] == s["size_bytes"]).all()


def test_single_and_partitioned_move_the_same_bytes(small_run):
    s = small_run.table("samples")
    moved = s.groupby(["size_bytes", "method"])["bytes_received"].sum().unstack()
    assert (moved["partitioned"] == moved["single"]).all()
    assert (moved["isend"] == moved["single"]).all()
    assert (moved["single"] == moved.index * 3).all()  # 3 runs each


def test_timings_are_consistent(small_run):
    s = small_run.table("samples")
    c = small_run.table("compute")
    assert (s["elapsed_s"] > 0).all() and (s["sender_elapsed_s"] >= 0).all()
    np.testing.assert_allclose(
        s["effective_bandwidth_Bps"], s["size_bytes"] / s["elapsed_s"], rtol=1e-6
    )
    assert (s["last_ready_s"] >= s["first_ready_s"]).all()
    assert (s["clock"] == "shared-monotonic").all() and (s["clock_uncertainty_s"] == 0).all()
    assert len(c) == len(s) * 3
    # last_ready_s is the slowest thread's actual compute time in the same run.
    last = c.groupby(["method", "size_bytes", "run"])["actual_s"].max()
    merged = s.set_index(["method", "size_bytes", "run"])["last_ready_s"]
    np.testing.assert_allclose(merged.sort_index(), last.sort_index(), atol=1e-8)
    # A sleep can only end late: actual >= requested (clock granularity aside).
    assert (c["actual_s"] >= c["requested_s"] - 1e-6).all()


def test_methods_share_the_draws(small_run):
    c = small_run.table("compute")
    wide = c.pivot_table(
        index=["size_bytes", "run", "thread"], columns="method", values="requested_s"
    )
    assert (wide["partitioned"] == wide["single"]).all()
    assert (wide["isend"] == wide["single"]).all()
    assert wide["single"].nunique() == len(wide)  # but differ between threads/runs/sizes
    params = small_run.meta["parameters"]
    assert params["sigma_s"] == pytest.approx(0.003 * 0.3**2)  # thesis: compute * V^2
    assert small_run.meta["seeds"] == {"thread_times": 7}


@pytest.mark.parametrize("dist", ["normal", "uniform", "exponential", "constant"])
def test_drawn_compute_times_follow_the_distribution(dist, runs_root, default_mpi):
    mu, sigma = 0.002, 0.0004
    run = run_partitioned(
        threads=4,
        compute_s=mu,
        sigma_s=sigma,
        dist=dist,
        sizes=[4096],
        runs_per_size=40,
        warmup=0,
        methods=["single"],
        seed=3,
        runs_root=runs_root,
        **QUIET,
    )
    req = run.table("compute")["requested_s"].to_numpy()
    assert len(req) == 160
    if dist == "constant":
        assert np.all(req == pytest.approx(mu))
        return
    ks = stats.kstest(req, thread_time_distribution(mu, sigma, dist).cdf)
    assert ks.pvalue > 1e-3, ks
    assert abs(req.mean() - mu) < 4 * sigma / np.sqrt(len(req))
    assert 0.7 * sigma < req.std(ddof=1) < 1.3 * sigma
    if dist == "uniform":
        half = sigma * np.sqrt(3)
        assert req.min() >= mu - half and req.max() <= mu + half


def test_seed_reproduces_the_draws(runs_root, default_mpi):
    kw = dict(
        threads=2,
        compute_s=0.002,
        variability=0.5,
        sizes=[4096],
        runs_per_size=4,
        warmup=0,
        methods=["isend"],
        runs_root=runs_root,
        **QUIET,
    )
    a = run_partitioned(seed=11, **kw).table("compute")["requested_s"].to_numpy()
    b = run_partitioned(seed=11, **kw).table("compute")["requested_s"].to_numpy()
    c = run_partitioned(seed=12, **kw).table("compute")["requested_s"].to_numpy()
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_method_subset_is_recorded(runs_root, default_mpi):
    run = run_partitioned(
        threads=2,
        compute_s=0.002,
        sizes=[8192],
        runs_per_size=2,
        methods=["isend", "single"],
        runs_root=runs_root,
        **QUIET,
    )
    st = method_status(run)
    assert st["partitioned"][0] == "not-requested"
    assert set(run.table("samples")["method"]) == {"isend", "single"}


def test_mpich_runs_all_methods(runs_root, mpich_mpi):
    run = run_partitioned(
        threads=2,
        compute_s=0.002,
        variability=0.3,
        sizes=[65536],
        runs_per_size=2,
        mpi_spec="mpich",
        runs_root=runs_root,
        **QUIET,
    )
    s = run.table("samples")
    assert set(s["method"]) == {"partitioned", "isend", "single"}
    assert (s["mismatches"] == 0).all() and (s["bytes_received"] == 65536).all()


def test_partitioned_skipped_with_a_note_without_mpi4_calls(tmp_path, default_mpi):
    """Build cs_partitioned as if mpi.h lacked MPI_Psend_init (no COMMSCOPE_HAVE_PARTITIONED)."""
    exe = tmp_path / "cs_partitioned_nopart"
    src = native_dir() / "bench" / "partitioned.c"
    common = native_dir() / "common"
    gen = tmp_path / "gen"  # the option header, as the CMake build generates it
    cgen.main([str(gen)])
    subprocess.run(
        [
            default_mpi.mpicc,
            "-std=c11",
            "-O2",
            "-fopenmp",
            f"-I{common}",
            f"-I{gen}",
            str(src),
            str(common / "cs_common.c"),
            str(common / "cs_options.c"),
            "-lm",
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = tmp_path / "out"
    plan = launch.plan_launch(
        default_mpi,
        2,
        exe,
        [
            "--threads",
            "2",
            "--compute",
            "0.002",
            "--sizes",
            "4K",
            "--runs-per-size",
            "2",
            "--out",
            out,
        ],
        threads=2,
    )
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "method partitioned skipped" in res.stdout and "MPI_Psend_init" in res.stdout
    with open(out / "methods.csv") as fh:
        rows = {r["method"]: r for r in csv.DictReader(fh)}
    assert rows["partitioned"]["status"] == "skipped"
    assert "MPI_Psend_init" in rows["partitioned"]["note"]
    with open(out / "samples.csv") as fh:
        methods = {r["method"] for r in csv.DictReader(fh)}
    assert methods == {"isend", "single"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--threads", "0"],
        ["--compute", "-1"],
        ["--compute", "0"],
        ["--variability", "-0.1"],
        ["--sizes", "1K,abc"],
        ["--sizes", "2", "--threads", "4"],
        ["--sizes", "4G"],
        ["--methods", "partitioned,bogus"],
        ["--runs-per-size", "0"],
        ["--warmup", "-1"],
        ["--seed", "-3"],
    ],
)
def test_bad_options_exit_2_and_create_nothing(argv, runs_root, capsys):
    assert main(["bench", "partitioned", *argv, "--runs", str(runs_root)]) == 2
    assert "commscope: error:" in capsys.readouterr().err
    assert list(runs_root.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["--variability", "0.1", "--sigma", "0.1"], ["--dist", "cauchy"], ["--compute-mode", "busy"]],
)
def test_bad_choices_exit_2(argv, runs_root):
    try:
        code = main(["bench", "partitioned", *argv, "--runs", str(runs_root)])
    except SystemExit as exc:  # refused by the argument parser
        code = exc.code
    assert code == 2
    assert list(runs_root.iterdir()) == []


def test_native_rejects_bad_options(tmp_path, default_mpi):
    from commscope import mpi

    exe = mpi.binary(default_mpi, "partitioned")
    plan = launch.plan_launch(default_mpi, 2, exe, ["--dist", "bogus", "--out", tmp_path])
    res = launch.run_job(plan, echo=False, progress=False, timeout=60)
    assert res.returncode != 0
    assert "--dist: unknown value 'bogus'" in res.stderr


def test_default_sweep_is_the_scaled_thesis_sweep():
    sizes = default_sizes()
    assert sizes[0] == 18 * 2**20 // 256 and sizes[-1] == 72 * 2**20
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_a_method_name_not_of_the_benchmark_is_one_error_naming_the_table(
    small_run, tmp_path, capsys
):
    """A damaged method column ("nan" as text) was printed as a method by predict --json."""
    import shutil
    from commscope.cli import main
    from commscope.errors import InputError
    from commscope.runs import open_run

    copy = tmp_path / small_run.path.name
    shutil.copytree(small_run.path, copy)
    s = small_run.table("samples")
    s.loc[0, "method"] = "broadcast"
    s.to_parquet(copy / "samples.parquet")
    with pytest.raises(InputError, match="samples.parquet.*method.*'broadcast' is not one of"):
        open_run(copy).table("samples")
    s.loc[0, "method"] = "nan"  # a missing value stored as text: never a name
    s.to_parquet(copy / "samples.parquet")
    with pytest.raises(InputError, match='samples.parquet.*method.*the text "nan"'):
        open_run(copy).table("samples")
    from commscope.paths import DATA_DIR

    osu = str(DATA_DIR / "osu_intranode_lassen_quartz.csv")
    assert (
        main(["predict", "partitioned", str(copy), "--osu", osu, "--machine", "quartz", "--json"])
        == 2
    )
    assert "samples.parquet" in capsys.readouterr().err


def test_descriptor_default_sizes_are_the_thesis_sweep():
    """--sizes's default (72K:72M, doubling) is default_sizes(), as the C program reads it."""
    assert BENCHMARK.defaults()["sizes"] == default_sizes()
    argv = BENCHMARK.native_args(BENCHMARK.defaults())
    assert argv[argv.index("--sizes") + 1] == ",".join(map(str, default_sizes()))
