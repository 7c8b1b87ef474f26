"""Bootstrap prediction of maxima at scale (thesis 003, Sec. 3.2.2) and its CLI.

Synthetic truth: per-rank interval times iid Gumbel(mu, beta). Then the maximum over
``P`` ranks is Gumbel(mu + beta ln P, beta), with mean mu + beta (ln P + gamma) and
median mu + beta (ln P - ln ln 2), so every prediction has a known target.
"""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from commscope.cli import main
from commscope.errors import InputError
from commscope.stats import bootstrap as bs
from commscope.stats import evt

GAMMA = float(np.euler_gamma)


def gumbel_max_mean(p, mu=0.0, beta=1.0):
    return mu + beta * (math.log(p) + GAMMA)


def gumbel_max_median(p, mu=0.0, beta=1.0):
    return mu + beta * (math.log(p) - math.log(math.log(2)))


# --- non-parametric ----------------------------------------------------------------------


def test_max_of_k_resamples_matches_brute_force_enumeration():
    values = np.array([1.0, 2.0, 5.0])
    k = 3
    brute = {v: 0 for v in values}
    for combo in itertools.product(values, repeat=k):
        brute[max(combo)] += 1
    draws = bs.max_of_k_resamples(values, k, 300_000, np.random.default_rng(0))
    for v, count in brute.items():
        assert np.mean(draws == v) == pytest.approx(count / len(values) ** k, abs=0.005)


def test_nonparametric_median_matches_known_truth():
    p, P = 16, 256
    base = np.random.default_rng(1).gumbel(math.log(p), 1.0, size=4000)
    r = bs.bootstrap_nonparametric(base, p, P, replicas=10_000, seed=2)
    assert r.k == 16 and r.statistic == "interval_max_s" and r.samples.size == 10_000
    assert r.median_s == pytest.approx(gumbel_max_median(P), abs=0.1)
    assert r.ci_low_s < r.median_s < r.ci_high_s


def test_nonparametric_interval_covers_fresh_maxima_about_95_percent():
    # The replicas are interval maxima at scale P, so a fresh maximum at scale P should
    # land inside the 95% interval ~95% of the time (slightly less: the empirical tail
    # is short, the "too narrow" effect the thesis cites from Kysely 2008).
    rng = np.random.default_rng(100)
    p, P, repeats = 16, 128, 300
    hits = 0
    for i in range(repeats):
        base = rng.gumbel(math.log(p), 1.0, size=1000)
        r = bs.bootstrap_nonparametric(base, p, P, replicas=2000, seed=i)
        hits += r.ci_low_s <= rng.gumbel(math.log(P), 1.0) <= r.ci_high_s
    assert 0.88 <= hits / repeats <= 0.99


def test_nonparametric_runtime_is_sum_over_intervals():
    p, P, m = 8, 64, 50
    base = np.random.default_rng(3).gumbel(math.log(p), 1.0, size=5000)
    r = bs.bootstrap_nonparametric(base, p, P, replicas=4000, seed=1, intervals=m)
    assert r.statistic == "runtime_s"
    # centre: m times the empirical distribution's exact expected max of k draws, which
    # itself estimates the true mean (within its sampling error)
    assert np.mean(r.samples) == pytest.approx(m * evt.expected_max_exact(base, P // p), rel=2e-3)
    assert r.median_s == pytest.approx(m * gumbel_max_mean(P), rel=0.03)
    # sum of m independent maxima: spread grows like sqrt(m) times Gumbel's sd
    assert np.std(r.samples) == pytest.approx(math.sqrt(m) * math.pi / math.sqrt(6), rel=0.1)


def test_nonparametric_at_base_scale_reproduces_the_data_distribution():
    base = np.random.default_rng(4).normal(1.0, 0.1, size=3000)
    r = bs.bootstrap_nonparametric(base, 32, 32, replicas=20_000, seed=0, confidence=0.5)
    lo, hi = np.quantile(base, [0.25, 0.75])
    assert r.ci_low_s == pytest.approx(lo, abs=0.01) and r.ci_high_s == pytest.approx(hi, abs=0.01)


# --- parametric ---------------------------------------------------------------------------


def test_pwm_from_resample_counts_equals_pwm_of_explicit_resample():
    rng = np.random.default_rng(5)
    x = np.sort(rng.gumbel(size=60))
    counts = bs._resample_counts(x.size, 4, rng)
    assert np.all(counts.sum(axis=1) == x.size)
    b0, b1, b2 = bs._pwm_from_counts(x, counts)
    loc, scale, k = bs._mom_from_counts(x, counts)
    for i in range(4):
        explicit = np.repeat(x, counts[i])
        np.testing.assert_allclose([b0[i], b1[i], b2[i]], evt.sample_pwm(explicit), rtol=1e-12)
        mom = evt.fit_mom(explicit)
        assert k[i] == pytest.approx(mom.shape, abs=1e-4)
        assert loc[i] == pytest.approx(mom.loc, abs=1e-4)


@pytest.mark.parametrize("kind", ["internode", "intranode"])
@pytest.mark.parametrize("method", ["pwm", "mom"])
def test_parametric_median_close_to_true_expected_maximum(kind, method):
    times = np.random.default_rng(6).gumbel(0.1, 0.001, size=(200, 64))
    r = bs.predict(
        kind, [1024], times=times, ranks_per_node=16, replicas=2000, seed=3, method=method
    )[0]
    assert r.method == method and r.kind == kind and r.base_ranks == 64
    truth = gumbel_max_mean(1024, 0.1, 0.001)
    # 1024 ranks is 16x the data: the truth sits 7.5 beta above the location, and a
    # median error below 0.6 beta is what 200 intervals allow (intervals are 2-4 beta)
    assert r.median_s == pytest.approx(truth, abs=0.0006)
    assert r.ci_low_s <= truth <= r.ci_high_s
    assert r.replicas == math.ceil(2000 / (4 if kind == "internode" else 16)) * (
        4 if kind == "internode" else 16
    )


@pytest.mark.parametrize("kind", ["internode", "intranode"])
def test_parametric_interval_covers_truth(kind):
    # Pooling groups makes the parametric interval conservative (each replica uses one
    # node's or one rank slot's data), matching the thesis's over-wide intervals.
    rng = np.random.default_rng(7)
    truth, hits, repeats = gumbel_max_mean(256), 0, 60
    for i in range(repeats):
        t = rng.gumbel(0.0, 1.0, size=(100, 32))
        r = bs.predict(kind, 256, times=t, ranks_per_node=8, replicas=400, seed=i)[0]
        hits += r.ci_low_s <= truth <= r.ci_high_s
    assert hits / repeats >= 0.9


@pytest.mark.slow
def test_single_group_parametric_bootstrap_is_calibrated():
    # One node holding all ranks: a plain percentile bootstrap of the EMMA estimate, so
    # its 95% interval should cover the true expected maximum close to 95% of the time.
    rng = np.random.default_rng(8)
    truth, hits, repeats = gumbel_max_mean(256), 0, 200
    for i in range(repeats):
        t = rng.gumbel(0.0, 1.0, size=(200, 32))
        r = bs.bootstrap_internode(t, 32, 256, replicas=500, seed=i)
        hits += r.ci_low_s <= truth <= r.ci_high_s
    assert 0.84 <= hits / repeats <= 0.99


@pytest.mark.slow
def test_parametric_interval_narrows_with_more_data():
    rng = np.random.default_rng(9)
    widths = []
    for m in (100, 1600):
        r = bs.bootstrap_intranode(rng.gumbel(size=(m, 16)), 4, 512, replicas=2000, seed=1)
        widths.append(r.ci_high_s - r.ci_low_s)
    assert 2.5 < widths[0] / widths[1] < 6.5  # ~sqrt(16) = 4


def test_parametric_runtime_scales_expected_maximum():
    t = np.random.default_rng(10).gumbel(size=(100, 32))
    one = bs.bootstrap_internode(t, 8, 128, replicas=800, seed=4)
    run = bs.bootstrap_internode(t, 8, 128, replicas=800, seed=4, intervals=100)
    assert run.statistic == "runtime_s"
    np.testing.assert_allclose(run.samples, 100 * one.samples)


# --- reproducibility ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", bs.KINDS)
def test_same_seed_same_result_and_seed_recorded(kind):
    t = np.random.default_rng(11).gumbel(size=(50, 16))
    kw = dict(times=t, ranks_per_node=4, replicas=500)
    a = bs.predict(kind, [64, 128], seed=42, **kw)
    b = bs.predict(kind, [64, 128], seed=42, **kw)
    c = bs.predict(kind, [64, 128], seed=43, **kw)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x.samples, y.samples)
        assert not np.array_equal(x.samples, z.samples)
    assert [r.seed for r in a] == [42, 43]
    fresh = bs.predict(kind, 64, **kw)[0]  # no seed: one is drawn and recorded
    again = bs.predict(kind, 64, seed=fresh.seed, **kw)[0]
    np.testing.assert_array_equal(fresh.samples, again.samples)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: bs.bootstrap_nonparametric([], 4, 8),
        lambda: bs.bootstrap_nonparametric([1.0, np.nan, 2.0], 4, 8),
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 4, 2),  # k < 1
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 0, 2),
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 4, 8, replicas=0),
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 4, 8, confidence=1.0),
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 4, 8, intervals=0),
        lambda: bs.bootstrap_nonparametric([1.0, 2.0], 4, 8, seed=-1),
        lambda: bs.bootstrap_intranode(np.ones((5, 6)) + np.arange(6), 4, 12),  # 6 % 4
        lambda: bs.bootstrap_intranode(np.arange(24.0).reshape(4, 6), 3, 3),  # k < 1
        lambda: bs.bootstrap_internode(np.ones((5, 8)), 4, 16),  # constant
        lambda: bs.bootstrap_internode(np.arange(16.0).reshape(2, 8), 4, 16),  # 2 values/node
        lambda: bs.bootstrap_internode(np.arange(40.0).reshape(5, 8), 4, 16, method="mle"),
        lambda: bs.bootstrap_internode([1.0, 2.0, 3.0], 1, 4),  # not 2-D
        lambda: bs.predict("jackknife", 8, maxima=[1.0, 2.0], base_ranks=2),
        lambda: bs.predict("intranode", 8, maxima=[1.0, 2.0], base_ranks=2),
    ],
)
def test_bad_input_raises_input_error(call):
    with pytest.raises(InputError):
        call()


# --- tables and CLI ---------------------------------------------------------------------------


def _long_table(times, ranks_per_node=None):
    m, p = times.shape
    frame = pd.DataFrame(
        {
            "iteration": np.repeat(np.arange(m), p),
            "rank": np.tile(np.arange(p), m),
            "time_s": times.ravel(),
        }
    )
    if ranks_per_node:
        frame["node"] = frame["rank"] // ranks_per_node
    return frame


def test_per_rank_matrix_orders_ranks_by_node():
    times = np.arange(12.0).reshape(2, 6)
    frame = _long_table(times)
    frame["node"] = frame["rank"].map({0: 1, 1: 0, 2: 1, 3: 0, 4: 1, 5: 0})
    matrix, rpn = bs.per_rank_matrix(frame.sample(frac=1, random_state=0))
    assert rpn == 3
    np.testing.assert_array_equal(matrix, times[:, [1, 3, 5, 0, 2, 4]])
    with pytest.raises(InputError):
        bs.per_rank_matrix(frame.iloc[1:])  # a missing (iteration, rank)
    with pytest.raises(InputError):
        bs.per_rank_matrix(frame.drop(columns="rank"))


def test_cli_bootstrap_matches_library(tmp_path, capsys):
    times = np.random.default_rng(12).gumbel(0.1, 0.001, size=(80, 32))
    path = tmp_path / "times.parquet"
    _long_table(times, ranks_per_node=8).to_parquet(path)
    assert (
        main(
            [
                "stats",
                "bootstrap",
                str(path),
                "--target-ranks",
                "128,512",
                "--kind",
                "intranode",
                "--replicas",
                "800",
                "--seed",
                "5",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    lib = bs.predict("intranode", [128, 512], times=times, ranks_per_node=8, replicas=800, seed=5)
    assert [o["median_s"] for o in out] == pytest.approx([r.median_s for r in lib])
    assert out[1]["seed"] == 6 and out[0]["base_ranks"] == 32

    maxima = tmp_path / "max.csv"
    pd.DataFrame({"max_time_s": times.max(axis=1)}).to_csv(maxima, index=False)
    assert (
        main(
            [
                "stats",
                "bootstrap",
                str(maxima),
                "--base-ranks",
                "32",
                "--target-ranks",
                "64",
                "--seed",
                "1",
                "--runtime",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    expect = bs.bootstrap_nonparametric(times.max(axis=1), 32, 64, seed=1, intervals=80)
    assert "runtime_s" in text and "nonparametric" in text and expect.replicas == 10_000


@pytest.mark.parametrize(
    "args, words",
    [
        (["--target-ranks", "64"], ["--base-ranks"]),  # maxima, no p
        (["--target-ranks", "64", "--base-ranks", "32", "--kind", "internode"], ["per-rank"]),
        (["--target-ranks", "16", "--base-ranks", "32"], ["--target-ranks"]),  # k < 1
    ],
)
def test_cli_bootstrap_errors_name_the_problem(tmp_path, capsys, args, words):
    path = tmp_path / "max.csv"
    pd.DataFrame({"max_time_s": np.random.default_rng(0).random(20)}).to_csv(path, index=False)
    assert main(["stats", "bootstrap", str(path)] + args) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words)


def test_cli_bootstrap_file_errors(tmp_path, capsys):
    wrong = tmp_path / "wrong.csv"
    pd.DataFrame({"lat_s": [1.0, 2.0]}).to_csv(wrong, index=False)
    assert main(["stats", "bootstrap", str(wrong), "--target-ranks", "8"]) == 2
    err = capsys.readouterr().err
    assert str(wrong) in err and "time_s" in err
    nonode = tmp_path / "t.csv"
    _long_table(np.random.default_rng(1).random((10, 8))).to_csv(nonode, index=False)
    assert (
        main(["stats", "bootstrap", str(nonode), "--target-ranks", "32", "--kind", "internode"])
        == 2
    )
    assert "--ranks-per-node" in capsys.readouterr().err
    assert (
        main(["stats", "bootstrap", str(nonode), "--target-ranks", "32", "--base-ranks", "16"]) == 2
    )
    assert str(nonode) in capsys.readouterr().err
    assert main(["stats", "bootstrap", str(tmp_path / "x.json"), "--target-ranks", "8"]) == 2
    capsys.readouterr()
    negative = tmp_path / "neg.csv"
    frame = _long_table(np.random.default_rng(2).random((10, 8)))
    frame.loc[5, "time_s"] = -1e-3
    frame.to_csv(negative, index=False)
    assert main(["stats", "bootstrap", str(negative), "--target-ranks", "32"]) == 2
    err = capsys.readouterr().err
    assert str(negative) in err and "time_s" in err and "negative" in err
    pd.DataFrame({"max_time_s": [0.1, -0.2, 0.3]}).to_csv(negative, index=False)
    assert main(["stats", "gev", str(negative), "--column", "max_time_s"]) == 2
    assert "negative time" in capsys.readouterr().err
