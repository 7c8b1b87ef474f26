"""GEV fits, EMMA and the ``commscope stats gev`` command (thesis 003, Sec. 2.3, Ch. 4)."""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from commscope.cli import main
from commscope.errors import InputError
from commscope.stats import evt

US = 1e-6


# --- Example 4.2.1 / 4.3.1: EMMA of N(100 ms, 1 ms) for 4 threads -------------------------


def test_emma_constant_is_exp_of_minus_exp_of_minus_euler_gamma():
    assert evt.EMMA_CONSTANT == pytest.approx(0.570376002, abs=1e-9)


def test_thesis_example_4_2_1_emma_numbers():
    # "10% runtime standard deviation" is sigma = T * 0.1^2 = 1000 us (seeds README).
    compute_s, sigma_s = 100_000 * US, 100_000 * US * 0.1**2
    dist = stats.norm(compute_s, sigma_s)
    last = evt.emma(dist, 4)
    first = 2 * compute_s - last  # symmetric distribution, as the thesis argues
    # The thesis prints truncated microseconds: 101,121 / 98,878 / 2,243.
    assert math.floor(last / US) == 101_121
    assert math.floor(first / US + 1e-9) == 98_878
    assert math.floor((last - first) / US) == 2_243
    # EMMA is an approximation: the exact expected maximum of 4 normals is
    # mu + 1.0293754 sigma (tabulated normal order statistic), 92 us lower.
    exact = evt.expected_max_exact(dist, 4)
    assert exact == pytest.approx(compute_s + 1.0293754 * sigma_s, abs=1e-3 * US)
    assert (last - exact) / US == pytest.approx(92.5, abs=0.5)


def test_expected_max_exact_of_normal_matches_brute_force_monte_carlo():
    rng = np.random.default_rng(7)
    draws = rng.standard_normal((200_000, 4)).max(axis=1)
    exact = evt.expected_max_exact(stats.norm(), 4)
    assert exact == pytest.approx(draws.mean(), abs=4 * draws.std() / math.sqrt(draws.size))


@pytest.mark.parametrize("n", [1, 2, 7, 100, 5000])
def test_expected_max_of_exponential_is_harmonic_number(n):
    # Renyi: the max of n standard exponentials has mean H_n = sum 1/i.
    harmonic = sum(1.0 / i for i in range(1, n + 1))
    assert evt.expected_max_exact(stats.expon(), n) == pytest.approx(harmonic, rel=1e-8)


@pytest.mark.parametrize("n", [1, 2, 10, 1000, 1e6])
def test_emma_is_exact_for_gumbel(n):
    # With -ln P = exp(-gamma)/n the Gumbel quantile equals the Gumbel max's mean.
    for dist in (evt.GEV(3.0, 0.5, 0.0), stats.gumbel_r(3.0, 0.5)):
        assert evt.emma(dist, n) == pytest.approx(
            3.0 + 0.5 * (math.log(n) + evt.EULER_GAMMA), rel=1e-12
        )
    assert evt.expected_max_exact(stats.gumbel_r(3.0, 0.5), n) == pytest.approx(
        evt.emma(stats.gumbel_r(3.0, 0.5), n), rel=1e-8
    )


@pytest.mark.parametrize("k", [-0.2, 0.0, 0.25])
def test_gev_expected_max_closed_form_matches_order_statistic_integral(k):
    g = evt.GEV(1.0, 2.0, k)
    ns = np.array([1.0, 7.5, 100.0])
    closed = evt.expected_max_exact(g, ns)
    integral = evt.expected_max_exact(g.scipy(), ns)
    np.testing.assert_allclose(closed, integral, rtol=1e-7)
    np.testing.assert_allclose(evt.emma(g, ns), evt.emma(g.scipy(), ns), rtol=1e-10)


def test_emma_of_sample_is_empirical_quantile():
    x = np.random.default_rng(1).exponential(size=101)
    for n in (1, 3, 50):
        assert evt.emma(x, n) == pytest.approx(np.quantile(x, evt.EMMA_CONSTANT ** (1 / n)))


def test_empirical_expected_max_matches_enumeration_and_monte_carlo():
    x = np.array([0.3, 1.0, 2.5, 4.0])
    for n in (1, 2, 3):
        brute = np.mean([max(c) for c in itertools.product(x, repeat=n)])
        assert evt.expected_max_exact(x, n) == pytest.approx(brute, rel=1e-12)
    y = np.random.default_rng(2).normal(size=300)
    exact = evt.expected_max_exact(y, 64)
    assert evt.expected_max_mc(y, 64, draws=200_000, seed=3) == pytest.approx(exact, abs=0.01)


# --- the GEV class and conventions -------------------------------------------------------


@pytest.mark.parametrize("k", [-0.3, -0.1, 0.0, 0.1, 0.5])
def test_gev_moments_and_quantiles_match_scipy(k):
    g = evt.GEV(-1.0, 0.7, k)
    ref = stats.genextreme(k, loc=-1.0, scale=0.7)
    assert g.mean() == pytest.approx(ref.mean(), rel=1e-9)
    assert g.var() == pytest.approx(ref.var(), rel=1e-9)
    q = np.array([0.01, 0.5, 0.99])
    np.testing.assert_allclose(g.ppf(q), ref.ppf(q), rtol=1e-12)
    np.testing.assert_allclose(g.scipy().cdf(q), ref.cdf(q))
    # max-stability: the max of n draws has CDF F^n
    xs = g.ppf(np.array([0.3, 0.9]))
    np.testing.assert_allclose(g.max_of(9).cdf(xs), g.cdf(xs) ** 9, rtol=1e-10)


@pytest.mark.parametrize("k", [-0.25, -0.1, 0.0005, 0.1, 0.6, 2.0])
def test_skewness_matches_scipy_and_gumbel_limit(k):
    assert evt.gev_skewness(k) == pytest.approx(float(stats.genextreme(k).stats("s")), rel=1e-5)
    assert evt.gev_skewness(0.0) == pytest.approx(1.1395, abs=1e-4)


def test_shape_convention_and_types():
    assert evt.to_scipy_c(0.2) == 0.2
    assert evt.from_xi(0.2) == -0.2 and evt.to_xi(-0.2) == 0.2
    frechet, weibull = evt.GEV(0, 1, -0.2), evt.GEV(0, 1, 0.2)
    assert frechet.type == "II" and np.isinf(frechet.scipy().support()[1])
    assert weibull.type == "III" and weibull.scipy().support()[1] == pytest.approx(5.0)
    assert evt.GEV(0, 1, 0.004).type == "I"
    assert evt.gev_type(0.004, tol=0.001) == "III"


# --- fits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [-0.15, 0.0, 0.2])
@pytest.mark.parametrize("method", evt.METHODS)
def test_fits_recover_known_parameters(method, k):
    x = stats.genextreme(k, loc=5.0, scale=2.0).rvs(20_000, random_state=np.random.default_rng(11))
    g = evt.FITTERS[method](x)
    assert g.shape == pytest.approx(k, abs=0.04)
    assert g.loc == pytest.approx(5.0, rel=0.02)
    assert g.scale == pytest.approx(2.0, rel=0.04)


@pytest.mark.parametrize("k", [-0.3, -0.1, 0.0, 0.2, 0.45])
def test_pwm_formulas_invert_population_pwms(k):
    # Population PWMs: beta_r = E[max of r+1 draws] / (r+1). Hosking's rational
    # approximation of k is good to ~1e-3 on (-0.5, 0.5).
    g = evt.GEV(2.0, 0.5, k)
    b = [g.max_of(r + 1).mean() / (r + 1) for r in range(3)]
    loc, scale, shape = evt.pwm_params(*b)
    assert float(shape) == pytest.approx(k, abs=2e-3)
    assert float(loc) == pytest.approx(2.0, abs=2e-3)
    assert float(scale) == pytest.approx(0.5, rel=5e-3)


def test_sample_pwm_matches_definition():
    x = np.random.default_rng(4).gamma(2.0, size=40)
    xs, n = np.sort(x), x.size
    brute_b2 = np.mean([xs[j] * (j * (j - 1)) / ((n - 1) * (n - 2)) for j in range(n)])
    b0, b1, b2 = evt.sample_pwm(x)
    assert b0 == pytest.approx(x.mean()) and b2 == pytest.approx(brute_b2)
    # b1 is unbiased for E[X F(X)]: for U(0,1) that is 1/3
    u = np.random.default_rng(5).random(200_000)
    assert evt.sample_pwm(u)[1] == pytest.approx(1 / 3, abs=2e-3)


@pytest.mark.parametrize("k", [-0.3, -0.1, 0.0, 0.3, 1.5])
def test_mom_shape_inverts_skewness_and_moments(k):
    assert evt.mom_shape_from_skewness(evt.gev_skewness(k)) == pytest.approx(k, abs=1e-6)
    g = evt.GEV(1.0, 3.0, k)
    loc, scale = evt._params_from_moments(g.mean(), g.std(), k)
    assert float(loc) == pytest.approx(1.0, abs=1e-9) and float(scale) == pytest.approx(3.0)


def test_fit_all_agrees_on_clean_data_and_not_with_outliers():
    rng = np.random.default_rng(0)
    clean = stats.genextreme(0.3, loc=1.0, scale=0.01).rvs(1000, random_state=rng)
    s = evt.fit_all(clean)
    assert s.agree and set(s.types.values()) == {"III"} and s.n == 1000
    # Like HPCG in Fig. 3.6: a few outliers swing the moment skewness to Type II while
    # PWM (linear in the data) stays Type III.
    dirty = np.concatenate([clean, np.full(4, 1.1)])
    s = evt.fit_all(dirty, methods=("pwm", "mom"))
    assert s.types == {"pwm": "III", "mom": "II"} and not s.agree
    assert s.to_dict()["agree"] is False


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [[], [1.0, 2.0], [1.0, np.nan, 2.0, 3.0], [2.0] * 10, [1.0, np.inf, 0.0], ["a", "b", "c"]],
)
@pytest.mark.parametrize("fit", [evt.fit_mom, evt.fit_pwm, evt.fit_mle, evt.fit_all])
def test_fits_reject_bad_samples(fit, bad):
    with pytest.raises(InputError):
        fit(bad)


def test_emma_and_options_reject_bad_input():
    for n in (0, 0.5, -3, np.nan):
        with pytest.raises(InputError):
            evt.emma(stats.norm(), n)
        with pytest.raises(InputError):
            evt.expected_max_exact(stats.norm(), n)
    with pytest.raises(InputError):
        evt.emma([], 4)
    with pytest.raises(InputError):
        evt.fit_all([1.0, 2.0, 4.0], methods=("lsq",))
    with pytest.raises(InputError):
        evt.fit_all([1.0, 2.0, 4.0], gumbel_tol=-1)
    with pytest.raises(InputError):
        evt.expected_max_mc([1.0, 2.0], 3, draws=0)


# --- CLI ------------------------------------------------------------------------------------


def test_cli_gev_json_reports_fits_and_emma(tmp_path, capsys):
    x = stats.genextreme(-0.2, loc=0.1, scale=0.002).rvs(
        3000, random_state=np.random.default_rng(9)
    )
    path = tmp_path / "maxima.parquet"
    pd.DataFrame({"max_time_s": x}).to_parquet(path)
    assert (
        main(["stats", "gev", str(path), "--column", "max_time_s", "--draws", "4,256", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["agree"] is True and {f["type"] for f in out["fits"]} == {"II"}
    rows = {(r["n"], r["distribution"]): r for r in out["maxima"]}
    pwm = evt.fit_pwm(x)
    assert rows[(256, "pwm")]["emma_s"] == pytest.approx(evt.emma(pwm, 256))
    assert rows[(4, "empirical")]["expected_max_s"] == pytest.approx(evt.expected_max_exact(x, 4))


def test_cli_gev_table_and_errors(tmp_path, capsys):
    path = tmp_path / "t.csv"
    pd.DataFrame({"time_s": np.random.default_rng(1).gumbel(0.01, 1e-4, size=200)}).to_csv(
        path, index=False
    )
    assert main(["stats", "gev", str(path)]) == 0
    assert "types agree" in capsys.readouterr().out
    assert main(["stats", "gev", str(path), "--column", "lat_s"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "lat_s" in err
    assert main(["stats", "gev", str(tmp_path / "none.csv")]) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("time_s\n1.0\nxyz\n2.0\n")
    assert main(["stats", "gev", str(bad)]) == 2
    assert "time_s" in capsys.readouterr().err
