"""The bulk-synchronous harness (cs_bsp), run for real at small sizes."""

import numpy as np
import pytest
from scipy import stats

from commscope import cli
from commscope.bench.bsp import expected_checksum, expected_halo_sum, run_bsp
from commscope.errors import EnvironmentProblem
from commscope.runs import open_run

QUIET = dict(echo=False, progress=False)


def _check_maxima_match(run, ranks, intervals):
    iv, mx = run.table("intervals"), run.table("maxima")
    assert len(mx) == intervals and list(mx["interval"]) == list(range(intervals))
    assert len(iv) == intervals * ranks
    assert iv.groupby("interval")["rank"].apply(sorted).tolist() == [list(range(ranks))] * intervals
    g = iv.groupby("interval")
    mx = mx.set_index("interval")
    # rank 0's reduction equals the largest per-rank time of the interval
    np.testing.assert_array_equal(mx["max_interval_s"], g["interval_s"].max())
    np.testing.assert_array_equal(mx["max_workload_s"], g["workload_s"].max())
    np.testing.assert_array_equal(mx["max_barrier_s"], g["barrier_s"].max())
    argmax = iv.loc[g["interval_s"].idxmax(), ["interval", "rank"]].set_index("interval")["rank"]
    ties = g["interval_s"].apply(lambda s: (s == s.max()).sum() > 1)
    assert (mx["argmax_rank"][~ties] == argmax[~ties]).all()
    # the time between the barriers is the workload plus the halo
    np.testing.assert_allclose(iv["interval_s"], iv["workload_s"] + iv["halo_s"], atol=1e-8)
    assert (iv[["workload_s", "halo_s", "barrier_s", "interval_s"]] >= 0).all().all()
    # rank 0's barrier-to-barrier wall time is its own interval plus its closing barrier
    # (other ranks leave the opening barrier up to a time slice earlier or later on a
    # loaded machine, so their intervals are not bounded by rank 0's wall time)
    r0 = iv[iv["rank"] == 0].set_index("interval")
    np.testing.assert_allclose(mx["wall_s"], r0["interval_s"] + r0["barrier_s"], atol=1e-8)


def test_ftq_maxima_draws_and_halo(runs_root, default_mpi):
    mean, sd, k, seed = 2e-3, 5e-4, 60, 12345
    run = run_bsp(
        "ftq",
        ranks=2,
        intervals=k,
        mean=mean,
        sd=sd,
        halo_bytes=1024,
        seed=seed,
        flush_every=7,
        runs_root=runs_root,
        **QUIET,
    )
    assert run.meta["status"] == "complete"
    assert run.meta["seeds"]["bsp"] == seed
    assert run.meta["parameters"]["workload"] == "ftq"
    assert len(run.meta["placement"]) == 2
    _check_maxima_match(run, 2, k)

    iv = run.table("intervals")
    # the drawn spins follow the requested normal distribution
    drawn = iv["requested_s"].to_numpy()
    assert stats.kstest(drawn, "norm", args=(mean, sd)).pvalue > 0.01
    assert abs(drawn.mean() - mean) < 4 * sd / np.sqrt(drawn.size)
    assert abs(drawn.std(ddof=1) / sd - 1) < 0.25
    # the two ranks draw from different streams, and each spun at least its draw
    assert not np.allclose(drawn[iv["rank"] == 0], drawn[iv["rank"] == 1])
    assert (iv["workload_s"] >= iv["requested_s"] - 1e-5).all()
    assert iv["requested_ops"].isna().all()

    # halo: every rank got its 4 neighbours' data of this very interval
    nb = run.table("neighbors")
    assert len(nb) == 8 and set(nb["direction"]) == {"x-", "x+", "y-", "y+"}
    assert set(nb[nb["rank"] == 0]["neighbor"]) == {0, 1}  # 2 x 1 periodic grid
    assert (iv["halo_bad"] == 0).all()
    for it in (0, 17, k - 1):
        want = expected_halo_sum(nb, 1024, it)
        got = iv[iv["interval"] == it].set_index("rank")["halo_sum"]
        assert got.to_dict() == pytest.approx(want, rel=0, abs=1e-6)


def test_same_seed_same_draws(runs_root, default_mpi):
    a = run_bsp("ftq", ranks=1, intervals=10, mean=1e-4, seed=7, runs_root=runs_root, **QUIET)
    b = run_bsp("ftq", ranks=1, intervals=10, mean=1e-4, seed=7, runs_root=runs_root, **QUIET)
    c = run_bsp("ftq", ranks=1, intervals=10, mean=1e-4, seed=8, runs_root=runs_root, **QUIET)
    ra, rb, rc = (r.table("intervals")["requested_s"].to_numpy() for r in (a, b, c))
    np.testing.assert_array_equal(ra, rb)
    assert not np.array_equal(ra, rc)


def test_fwq_uniform_draws_and_work(runs_root, default_mpi):
    mean, sd = 200_000, 40_000
    run = run_bsp(
        "fwq",
        ranks=1,
        intervals=80,
        dist="uniform",
        mean=mean,
        sd=sd,
        seed=3,
        runs_root=runs_root,
        **QUIET,
    )
    _check_maxima_match(run, 1, 80)
    iv = run.table("intervals")
    ops = iv["requested_ops"].to_numpy()
    half = sd * np.sqrt(3)
    assert ops.min() >= mean - half - 1 and ops.max() <= mean + half + 1
    assert stats.kstest(ops, "uniform", args=(mean - half, 2 * half)).pvalue > 0.01
    # the checksum proves exactly the drawn number of additions ran
    for n, chk in zip(ops, iv["checksum"]):
        assert chk == expected_checksum("fwq", requested_ops=n)


def test_fwq_exponential_draws_keep_mean_and_sd(runs_root, default_mpi):
    mean, sd = 100_000, 20_000  # shifted: mean - sd + Exp(scale sd)
    run = run_bsp(
        "fwq",
        ranks=1,
        intervals=300,
        dist="exponential",
        mean=mean,
        sd=sd,
        seed=5,
        runs_root=runs_root,
        **QUIET,
    )
    ops = run.table("intervals")["requested_ops"].to_numpy()
    assert ops.min() >= mean - sd - 1
    assert stats.kstest(ops, "expon", args=(mean - sd, sd)).pvalue > 0.01


def test_dgemm_result(runs_root, default_mpi):
    n = 48
    run = run_bsp(
        "dgemm", ranks=2, intervals=4, dim=n, reps=2, seed=1, runs_root=runs_root, **QUIET
    )
    _check_maxima_match(run, 2, 4)
    iv = run.table("intervals")
    want = expected_checksum("dgemm", size=n)
    # hand-checkable anchor: with n = 1, C = A[0,0] B[0,0] = (-5/8)(-4/4)
    assert expected_checksum("dgemm", size=1) == 0.625
    np.testing.assert_allclose(iv["checksum"], want, rtol=1e-12)
    assert run.meta["parameters"]["dim"] == n


def test_spmv_result(runs_root, default_mpi):
    n = 40
    run = run_bsp("spmv", ranks=2, intervals=4, dim=n, reps=3, seed=1, runs_root=runs_root, **QUIET)
    _check_maxima_match(run, 2, 4)
    iv = run.table("intervals")
    # the 5-point Laplacian applied to x = 1..7 repeating, checked with scipy.sparse
    np.testing.assert_allclose(iv["checksum"], expected_checksum("spmv", size=n), rtol=1e-12)
    # anchor: a 1 x 1 grid is the matrix [4], x = [1]
    assert expected_checksum("spmv", size=1) == 4.0


def test_halo_on_a_2x2_grid(runs_root, default_mpi):
    # 4 ranks oversubscribe this 2-core machine; a few tiny intervals suffice
    run = run_bsp(
        "ftq", ranks=4, intervals=5, mean=2e-4, halo_bytes=256, seed=2, runs_root=runs_root, **QUIET
    )
    _check_maxima_match(run, 4, 5)
    nb = run.table("neighbors")
    # periodic 2 x 2 grid: each rank's x neighbours are one rank, y neighbours another
    for rank, grp in nb.groupby("rank"):
        d = grp.set_index("direction")["neighbor"]
        assert d["x-"] == d["x+"] != rank and d["y-"] == d["y+"] != rank and d["x-"] != d["y-"]
    iv = run.table("intervals")
    assert (iv["halo_bad"] == 0).all()
    for it in range(5):
        want = expected_halo_sum(nb, 256, it)
        got = iv[iv["interval"] == it].set_index("rank")["halo_sum"].to_dict()
        assert got == pytest.approx(want, rel=0, abs=1e-6)


def test_killed_run_keeps_finished_intervals(runs_root, default_mpi):
    with pytest.raises(EnvironmentProblem):
        run_bsp(
            "ftq",
            ranks=2,
            intervals=100_000,
            mean=2e-3,
            sd=0,
            dist="constant",
            flush_every=1,
            seed=1,
            runs_root=runs_root,
            timeout=6,
            run_name="killed",
            **QUIET,
        )
    run = open_run(runs_root / "killed")
    assert run.meta["status"] == "failed"
    mx, iv = run.table("maxima"), run.table("intervals")
    assert 0 < len(mx) < 100_000
    assert set(iv["interval"]) <= set(mx["interval"])
    full = iv.groupby("interval")["rank"].nunique()
    assert (full.iloc[:-1] == 2).all()


@pytest.mark.parametrize(
    "argv, where",
    [
        (["--workload", "ftq", "--halo-bytes", "12"], "--halo-bytes"),
        (["--workload", "ftq", "--compute", "-1"], "--compute"),
        (["--workload", "fwq", "--ops", "-1"], "--ops"),
        (["--workload", "ftq", "--ops", "100"], "--ops"),
        (["--workload", "dgemm", "--compute", "0.1"], "--compute"),
        (["--workload", "spmv", "--dim", "0"], "--dim"),
        (["--workload", "ftq", "--intervals", "0"], "--intervals"),
        (["--workload", "fwq", "--dim", "10"], "--dim"),
        (
            ["--workload", "ftq", "--dist", "exponential", "--compute", "0.01", "--sd", "0.02"],
            "--sd",
        ),
    ],
)
def test_bad_input_exit_2(argv, where, runs_root, capsys):
    rc = cli.main(["bench", "bsp", *argv, "--runs", str(runs_root), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("commscope: error: ") and where in err
    assert not any(runs_root.iterdir())  # nothing was launched or written
