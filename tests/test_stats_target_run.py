"""The target-run intervals (commscope.stats.target_run) on synthetic series with known truth.

Coverage is measured, not assumed: many calibration/target pairs drawn from a known
process, each interval checked against the target's realised statistic.
"""

import numpy as np
import pytest

from commscope.errors import InputError
from commscope.stats import target_run as tr


def ar1(rng, m, phi, size=()):
    """Stationary AR(1) series around 5 ms with sd 0.5 ms (lag-1 autocorrelation phi)."""
    e = rng.standard_normal(size + (m,))
    x = np.empty_like(e)
    x[..., 0] = e[..., 0] / np.sqrt(1 - phi**2)
    for t in range(1, m):
        x[..., t] = phi * x[..., t - 1] + e[..., t]
    return 5e-3 + 5e-4 * x * np.sqrt(1 - phi**2)


def coverage(phi, statistic, block_of, trials=60, m=200, parametric=False, seed=0):
    rng = np.random.default_rng(seed)
    held = 0
    for trial in range(trials):
        cal = ar1(rng, m, phi)
        target = ar1(rng, m, phi, (2,)).max(axis=0)  # a 2-rank run: max of two series
        truth = np.median(target) if statistic == "median" else target.sum()
        r = tr.predict_statistic(
            parametric,
            [cal],
            2,
            statistic=statistic,
            intervals=m,
            block=block_of(cal),
            replicas=300,
            confidence=0.95,
            seed=trial,
        )
        held += r.ci_low_s <= truth <= r.ci_high_s
    return held / trials


def test_block_length_sees_autocorrelation():
    rng = np.random.default_rng(1)
    assert tr.block_length(rng.standard_normal(500)) == 1
    assert tr.block_length(ar1(rng, 500, 0.6)) >= 4
    assert tr.block_length(np.ones(50)) == 1
    r, bound = tr.lag1(ar1(rng, 400, 0.5))
    assert r > bound == pytest.approx(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("statistic", ["median", "sum"])
def test_block_bootstrap_holds_nominal_coverage_on_correlated_series(statistic):
    # lag-1 autocorrelation 0.6: the independent resample is too narrow, blocks are not
    blocks = coverage(0.6, statistic, tr.block_length)
    iid = coverage(0.6, statistic, lambda x: 1)
    assert blocks >= 0.85, blocks
    assert iid <= blocks - 0.1, (iid, blocks)


@pytest.mark.slow
def test_independent_series_keep_nominal_coverage_both_kinds():
    assert coverage(0.0, "median", tr.block_length) >= 0.88
    assert coverage(0.0, "sum", tr.block_length, trials=30, parametric=True) >= 0.85


def test_predicted_median_of_max_of_two_normals():
    # true median of max of 2 N(5 ms, 0.5 ms): Phi(z)^2 = 1/2, z = 0.5449
    rng = np.random.default_rng(3)
    cal = 5e-3 + 5e-4 * rng.standard_normal(2000)
    for parametric in (False, True):
        r = tr.predict_statistic(
            parametric,
            [cal],
            2,
            statistic="median",
            intervals=2000,
            block=1,
            replicas=500,
            confidence=0.95,
            seed=1,
        )
        assert r.median_s == pytest.approx(5e-3 + 5e-4 * 0.5449, abs=3e-5), parametric


def test_run_effect_from_repeats():
    rng = np.random.default_rng(4)
    same = [5e-3 + 5e-4 * rng.standard_normal(300) for _ in range(6)]
    shifted = [s * np.exp(0.1 * rng.standard_normal()) for s in same]
    assert tr.run_effect_sd(same[:1], "median", 1, rng) == 0.0  # one run: nothing to say
    assert tr.run_effect_sd(same, "median", 1, rng) < 0.02
    assert 0.04 < tr.run_effect_sd(shifted, "median", 1, rng) < 0.25
    r = tr.predict_statistic(
        False,
        shifted,
        2,
        statistic="median",
        intervals=300,
        block=1,
        replicas=500,
        confidence=0.95,
        seed=1,
        run_sd=0.1,
    )
    assert r.ci_high_s / r.ci_low_s > 1.3  # a 10 % run effect widens the interval to ~+-20 %


def run_effect_coverage(run_df, trials=80, runs=3, tau=0.1, seed=6):
    """How often the interval from ``runs`` calibration runs, each at its own level
    (log sd ``tau``), holds the median of a new 1-rank run at a new level."""
    rng = np.random.default_rng(seed)
    held = 0
    for trial in range(trials):
        cal = [
            (5e-3 + 5e-4 * rng.standard_normal(200)) * np.exp(tau * rng.standard_normal())
            for _ in range(runs)
        ]
        target = (5e-3 + 5e-4 * rng.standard_normal(200)) * np.exp(tau * rng.standard_normal())
        sd = tr.run_effect_sd(cal, "median", 1, rng)
        r = tr.predict_statistic(
            False,
            cal,
            1,
            statistic="median",
            intervals=200,
            block=1,
            replicas=400,
            confidence=0.95,
            seed=trial,
            run_sd=sd,
            run_df=runs - 1 if run_df else np.inf,
        )
        held += r.ci_low_s <= np.median(target) <= r.ci_high_s
    return held / trials


@pytest.mark.slow
def test_run_effect_estimated_from_three_runs_needs_students_t():
    # the spread is estimated from 3 runs: a normal with that sd is too narrow for a new
    # run's level (about 80 % here); t with 2 degrees of freedom holds near 95 %
    t, normal = run_effect_coverage(True), run_effect_coverage(False)
    assert t >= 0.88, t
    assert normal <= t - 0.05, (normal, t)


def test_gev_goodness_of_fit():
    rng = np.random.default_rng(5)
    rejected, p = tr.gev_fit_rejected(rng.gumbel(1.0, 0.1, 500))
    assert not rejected and p > 0.05
    bimodal = np.r_[rng.normal(1.0, 0.01, 250), rng.normal(2.0, 0.01, 250)]
    assert tr.gev_fit_rejected(bimodal)[0]


def test_bad_input():
    with pytest.raises(InputError, match="statistic"):
        tr.predict_statistic(
            False,
            [np.ones(10)],
            2,
            statistic="mean",
            intervals=10,
            block=1,
            replicas=10,
            confidence=0.95,
            seed=1,
        )
    with pytest.raises(InputError, match="GEV fit needs"):
        tr.predict_statistic(
            True,
            [np.ones(10)],
            2,
            statistic="sum",
            intervals=10,
            block=1,
            replicas=10,
            confidence=0.95,
            seed=1,
        )
    with pytest.raises(InputError, match="NaN"):
        tr.predict_statistic(
            False,
            [np.array([1.0, np.nan])],
            2,
            statistic="sum",
            intervals=2,
            block=1,
            replicas=10,
            confidence=0.95,
            seed=1,
        )
