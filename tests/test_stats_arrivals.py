"""Thread-arrival statistics (000 Sec. 3-4) on synthetic data with known truth."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from commscope.cli import main
from commscope.errors import InputError
from commscope.stats import arrivals as A


def make_frame(trials, ranks, iterations, threads, draw, region=None):
    """Tidy frame with compute times from ``draw(size)``."""
    idx = np.indices((trials, ranks, iterations, threads)).reshape(4, -1)
    df = pd.DataFrame(
        {
            "trial": idx[0],
            "rank": idx[1],
            "iteration": idx[2],
            "thread": idx[3],
            "compute_time_s": draw(idx.shape[1]),
        }
    )
    if region is not None:
        df.insert(0, "region", region)
    return df


@pytest.fixture(scope="module")
def normal_df():
    rng = np.random.default_rng(42)
    # 2 x 5 x 100 = 1000 process-iterations of 48 threads, 25 ms +- 20 us.
    return make_frame(2, 5, 100, 48, lambda n: rng.normal(0.025, 2e-5, n))


@pytest.fixture(scope="module")
def expo_df():
    rng = np.random.default_rng(7)
    return make_frame(1, 4, 50, 48, lambda n: 0.02 + rng.exponential(1e-3, n))


def _level(summary, level, test):
    row = summary[(summary.level == level) & (summary.test == test)]
    assert len(row) == 1
    return row.iloc[0]


def test_normal_threads_pass_at_about_95_percent(normal_df):
    s = A.normality_summary(normal_df)
    for test in A.TESTS:
        r = _level(s, "process-iteration", test)
        assert r.groups == 1000 and r.groups_tested == 1000
        # 1000 groups, nominal 5% size (D'Agostino's true size at n=48 is ~5.8%):
        # binomial sd ~0.75%, so these bounds are > 5 sd from the expected pass rate.
        assert 0.90 <= r.fraction_pass <= 0.985, (test, r.fraction_pass)
        assert r.fraction_pass + r.fraction_reject == pytest.approx(1)
    app = _level(s, "application", "shapiro")
    assert app.groups == 1 and app.fraction_pass in (0.0, 1.0)
    assert _level(s, "application-iteration", "anderson").groups == 100


def test_exponential_threads_are_rejected(expo_df):
    s = A.normality_summary(expo_df)
    for test in A.TESTS:
        assert _level(s, "process-iteration", test).fraction_reject > 0.9, test
        assert _level(s, "application", test).fraction_reject == 1.0
        assert _level(s, "application-iteration", test).fraction_reject == 1.0


def test_vectorised_tests_equal_scipy_per_group():
    """Brute-force cross-check with unequal group sizes (one rank has fewer threads)."""
    rng = np.random.default_rng(3)
    df = make_frame(1, 3, 4, 30, lambda n: rng.gamma(4.0, 1e-3, n))
    df = df[~((df["rank"] == 1) & (df["thread"] >= 12))]
    per = A.normality_per_group(df, "process-iteration")
    for row in per.itertuples():
        x = df[(df["rank"] == row.rank) & (df.iteration == row.iteration)].compute_time_s.to_numpy()
        assert row.n_samples == len(x)
        assert row.dagostino_p == pytest.approx(stats.normaltest(x).pvalue, rel=1e-9)
        assert row.shapiro_p == pytest.approx(stats.shapiro(x).pvalue, rel=1e-6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ad = stats.anderson(x)
        assert row.anderson_stat == pytest.approx(ad.statistic, rel=1e-9)
        assert row.anderson_crit == ad.critical_values[2]
        assert bool(row.anderson_pass) == (ad.statistic <= ad.critical_values[2])


def test_small_groups_not_applicable():
    rng = np.random.default_rng(0)
    df = make_frame(1, 2, 3, 5, lambda n: rng.normal(1.0, 0.1, n))
    s = A.normality_summary(df, levels=("process-iteration",))
    assert _level(s, "process-iteration", "dagostino").groups_not_applicable == 6
    assert _level(s, "process-iteration", "anderson").groups_not_applicable == 6
    assert _level(s, "process-iteration", "shapiro").groups_tested == 6


def test_injected_laggards_found_exactly(normal_df):
    df = normal_df.copy()
    injected = {(0, 1, 7, 13): 5e-3, (1, 4, 99, 0): 2e-3, (1, 0, 50, 47): 1.5e-3}
    key = list(zip(df.trial, df["rank"], df.iteration, df.thread))
    pos = {k: i for i, k in enumerate(key)}
    for k, delay in injected.items():
        df.loc[pos[k], "compute_time_s"] += delay
    lag = A.find_laggards(df, threshold_s=1e-3)
    found = set(zip(lag.trial, lag["rank"], lag.iteration, lag.thread))
    assert found == set(injected)
    big = lag[lag.thread == 13].iloc[0]
    assert big.excess_s == pytest.approx(5e-3, abs=1e-4)
    # A larger threshold keeps only the largest injection.
    assert len(A.find_laggards(df, threshold_s=3e-3)) == 1
    summary = A.idle_summary(df, 1e-3)
    assert summary.laggard_fraction[0] == pytest.approx(3 / 1000)


def test_reclaimable_time_hand_computed():
    # Group A: 3 threads at 1, 2, 4 ms  -> R = 3 + 2 + 0 = 5 ms,
    #   printed ratio 5 / (3 * 4) = 5/12, range ratio 5 / (3 * 3) = 5/9.
    # Group B: 4 threads at 2, 2, 2, 6 ms -> R = 12 ms,
    #   printed 12 / (4 * 6) = 1/2, range 12 / (4 * 4) = 3/4.
    df = pd.DataFrame(
        {
            "trial": 0,
            "rank": [0, 0, 0, 1, 1, 1, 1],
            "iteration": 0,
            "thread": [0, 1, 2, 0, 1, 2, 3],
            "compute_time_s": np.array([1, 2, 4, 2, 2, 2, 6]) * 1e-3,
        }
    )
    pi = A.process_iterations(df, threshold_s=1e-3)
    assert np.allclose(pi.reclaimable_s, [5e-3, 12e-3])
    assert np.allclose(pi.idle_ratio_printed, [5 / 12, 1 / 2])
    assert np.allclose(pi.idle_ratio_range, [5 / 9, 3 / 4])
    assert list(pi.laggard) == [True, True]  # 4-2 = 2 ms, 6-2 = 4 ms
    assert list(pi.slowest_thread) == [2, 3]
    s = A.idle_summary(df, 1e-3).iloc[0]
    assert s.avg_reclaimable_s == pytest.approx(8.5e-3)
    assert s.idle_ratio_printed == pytest.approx((5 / 12 + 1 / 2) / 2)
    assert s.idle_ratio_range == pytest.approx((5 / 9 + 3 / 4) / 2)
    assert s.mean_median_arrival_s == pytest.approx(2e-3)


def test_equal_arrivals_have_no_range_ratio():
    df = pd.DataFrame(
        {
            "trial": 0,
            "rank": 0,
            "iteration": [0, 0, 1, 1],
            "thread": [0, 1, 0, 1],
            "compute_time_s": [1.0, 1.0, 1.0, 3.0],
        }
    )
    s = A.idle_summary(df).iloc[0]
    assert s.idle_ratio_range == pytest.approx(0.5)  # only iteration 1 defined
    assert s.idle_ratio_printed == pytest.approx((0 + 2 / 6) / 2)


def test_iteration_percentiles_brute_force(expo_df):
    p = A.iteration_percentiles(expo_df)
    assert len(p) == 50
    for it in (0, 17, 49):
        x = expo_df[expo_df.iteration == it].compute_time_s
        row = p[p.iteration == it].iloc[0]
        assert row.p5_s == pytest.approx(np.percentile(x, 5))
        assert row.p50_s == pytest.approx(np.median(x))
        assert row.iqr_s == pytest.approx(np.percentile(x, 75) - np.percentile(x, 25))


def test_regions_analysed_separately():
    rng = np.random.default_rng(5)
    a = make_frame(1, 2, 20, 48, lambda n: rng.normal(0.01, 1e-5, n), region="force")
    b = make_frame(1, 2, 20, 48, lambda n: 0.01 + rng.exponential(1e-4, n), region="spmv")
    s = A.normality_summary(pd.concat([a, b]), levels=("process-iteration",))
    sh = s[s.test == "shapiro"].set_index("region")
    assert sh.loc["force", "fraction_pass"] > 0.8
    assert sh.loc["spmv", "fraction_reject"] > 0.9


def test_full_report_and_histograms(normal_df):
    df = normal_df.copy()
    rng = np.random.default_rng(9)
    # Make a few process-iterations clearly non-normal (uniform-ish two clusters) and one laggard.
    bimodal = (df.trial == 0) & (df["rank"] == 2) & (df.iteration < 5)
    df.loc[bimodal, "compute_time_s"] = (
        0.025 + np.where(df.thread[bimodal] % 2 == 0, 0, 4e-4) + rng.normal(0, 1e-6, bimodal.sum())
    )
    df.loc[
        (df.trial == 1) & (df["rank"] == 3) & (df.iteration == 42) & (df.thread == 5),
        "compute_time_s",
    ] += 4e-3
    rep = A.analyse_arrivals(df, threshold_s=1e-3, bin_width_s=1e-5)
    assert set(rep.histograms) == {"normal", "non-normal", "laggard"}
    lag = rep.histograms["laggard"]
    assert lag["keys"] == {"region": "all", "trial": 1, "rank": 3, "iteration": 42}
    assert lag["counts"].sum() == 48
    assert np.allclose(np.diff(lag["bin_edges_s"]), 1e-5)
    assert rep.histograms["laggard"]["class_fraction"] == pytest.approx(1 / 1000)
    assert len(rep.laggards) == 1 and rep.laggards.thread[0] == 5
    assert set(rep.normality.level) == set(A.LEVEL_KEYS)
    json.dumps(rep.to_dict(), default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda d: d.drop(columns="thread"), "thread"),
        (lambda d: d.assign(compute_time_s="x"), "compute_time_s"),
        (lambda d: d.assign(compute_time_s=-1.0), "compute_time_s"),
        (lambda d: d.assign(rank=0.5), "rank"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "thread"),
        (lambda d: d.iloc[:0], None),
    ],
)
def test_bad_frames(mutate, field):
    df = make_frame(1, 1, 2, 4, lambda n: np.linspace(1, 2, n))
    with pytest.raises(InputError) as exc:
        A.validate_arrivals(mutate(df), source="t.csv")
    assert exc.value.field == field and exc.value.source == "t.csv"


def test_bad_parameters():
    df = make_frame(1, 1, 2, 4, lambda n: np.linspace(1, 2, n))
    with pytest.raises(InputError):
        A.process_iterations(df, threshold_s=-1)
    with pytest.raises(InputError):
        A.normality_per_group(df, "process-iteration", alpha=0.07)
    with pytest.raises(InputError):
        A.group_samples(df, "node")
    with pytest.raises(InputError):
        A.iteration_percentiles(df, percentiles=(50, 150))


def test_read_files(tmp_path):
    df = make_frame(1, 2, 3, 8, lambda n: np.arange(n) * 1e-3)
    csv, pq = tmp_path / "a.csv", tmp_path / "a.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(pq)
    pd.testing.assert_frame_equal(A.read_arrivals(csv), A.read_arrivals(pq))
    broken = tmp_path / "b.parquet"
    broken.write_text("not parquet")
    with pytest.raises(InputError, match="b.parquet"):
        A.read_arrivals(broken)
    with pytest.raises(InputError, match="no such file"):
        A.read_arrivals(tmp_path / "none.csv")


def test_cli(tmp_path, capsys, normal_df):
    path = tmp_path / "t.parquet"
    normal_df.iloc[: 48 * 40].to_parquet(path)
    assert main(["stats", "arrivals", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["threshold_s"] == 1e-3
    assert {r["level"] for r in out["normality"]} == set(A.LEVEL_KEYS)
    assert out["summary"][0]["process_iterations"] == 40
    assert main(["stats", "arrivals", str(path), "--threshold", "1e-6"]) == 0
    text = capsys.readouterr().out
    assert "laggards: 40 process-iterations (largest 20 shown)" in text
    bad = tmp_path / "bad.csv"
    normal_df.drop(columns="iteration").head(10).to_csv(bad, index=False)
    assert main(["stats", "arrivals", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "iteration" in err
