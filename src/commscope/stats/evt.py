"""Extreme-value statistics: GEV fits (MOM, PWM, MLE) and EMMA expected maxima.

Implements Dominguez-Trujillo (2021), Sec. 2.3 (seed 003).

Shape convention
----------------
One convention at the API: Hosking's ``k`` (the thesis's kappa in eqs. 2.2-2.8), which is
identical to scipy's ``genextreme`` ``c``::

    F(x) = exp(-(1 - k (x - loc) / scale) ** (1 / k))        (k != 0)
    F(x) = exp(-exp(-(x - loc) / scale))                       (k == 0, Gumbel)

so ``k < 0`` is Type II (Frechet, heavy upper tail), ``k > 0`` is Type III (Weibull,
bounded upper tail) and ``k == 0`` is Type I (Gumbel). The climate-science ``xi`` used by
the thesis's eq. 2.1 is ``xi = -k``; convert with :func:`from_xi` / :func:`to_xi`.

Deviations from the printed thesis (see seeds/README.md)
--------------------------------------------------------
* Eq. 2.1 prints the ``xi`` sign while eqs. 2.2-2.8 use ``k``; we use ``k`` throughout.
* Eq. 2.3's exponent is 1/2, not 3/2: ``scale = sigma |k| / sqrt(G(1+2k) - G(1+k)^2)``.
* Eqs. 2.6-2.7 must use the sample probability-weighted moments b0, b1, b2 (Hosking,
  Wallis & Wood 1985), not the mean/variance/skewness the text names.
* Eq. 2.2 is 0/0 at ``k = 0``; the Gumbel limit (skewness 1.13955) is used there.
* EMMA's constant 0.570376002 is ``exp(-exp(-euler_gamma))``; we compute it exactly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
integrate = lazy("scipy.integrate")
optimize = lazy("scipy.optimize")
special = lazy("scipy.special")
stats = lazy("scipy.stats")


EULER_GAMMA = 0.5772156649015329  # numpy.euler_gamma, written out: no numpy at import
#: EMMA probability base (eq. 2.9): exp(-exp(-gamma)) = 0.570376002...
EMMA_CONSTANT = math.exp(-math.exp(-EULER_GAMMA))
#: Skewness of the Gumbel distribution, 12 sqrt(6) zeta(3) / pi^3.
APERY = 1.2020569031595942  # zeta(3), written out so importing this module needs no scipy
GUMBEL_SKEWNESS = 12.0 * math.sqrt(6.0) * APERY / math.pi**3
#: |k| below this counts as Type I (Gumbel) when classifying a fit.
GUMBEL_TOL = 0.01
#: |k| below this uses the closed-form k = 0 limits (avoids 0/0 in eqs. 2.2-2.8).
_K_EPS = 1e-6
#: Eq. 2.2 loses precision for |k| below this; interpolate through the Gumbel value.
_SKEW_EPS = 1e-3
#: Skewness is finite only for k > -1/3.
_K_MIN = -1.0 / 3.0 + 1e-9
_K_MAX = 20.0
METHODS = ("mom", "pwm", "mle")


def to_scipy_c(k):
    """Hosking's ``k`` as scipy's ``genextreme`` ``c`` (they are the same number)."""
    return k


def from_xi(xi):
    """Convert the climate-science shape ``xi`` (thesis eq. 2.1) to Hosking's ``k``."""
    return -xi


def to_xi(k):
    """Convert Hosking's ``k`` to the climate-science shape ``xi = -k``."""
    return -k


def gev_type(shape, tol=GUMBEL_TOL):
    """Extreme-value type of a shape ``k``: "I" Gumbel, "II" Frechet, "III" Weibull."""
    if abs(shape) < tol:
        return "I"
    return "II" if shape < 0 else "III"


@dataclass(frozen=True)
class GEV:
    """A GEV distribution with Hosking's shape ``k`` (= scipy ``c``); see module doc."""

    loc: float
    scale: float
    shape: float

    def scipy(self):
        """The same distribution as a frozen ``scipy.stats.genextreme``."""
        return stats.genextreme(c=self.shape, loc=self.loc, scale=self.scale)

    @property
    def type(self):
        return gev_type(self.shape)

    @property
    def xi(self):
        return to_xi(self.shape)

    def mean(self):
        k = self.shape
        if k <= -1:
            return math.inf
        if abs(k) < _K_EPS:
            return self.loc + EULER_GAMMA * self.scale
        return self.loc + self.scale * (1.0 - special.gamma(1.0 + k)) / k

    def var(self):
        k = self.shape
        if k <= -0.5:
            return math.inf
        if abs(k) < _K_EPS:
            return (math.pi * self.scale) ** 2 / 6.0
        g1, g2 = special.gamma(1.0 + k), special.gamma(1.0 + 2.0 * k)
        return self.scale**2 * (g2 - g1**2) / k**2

    def std(self):
        return math.sqrt(self.var())

    def skewness(self):
        return gev_skewness(self.shape)

    def quantile_from_y(self, y):
        """Quantile at ``F = exp(-y)``; taking ``y = -ln F`` keeps precision near F = 1."""
        y = np.asarray(y, dtype=float)
        k = self.shape
        if abs(k) < _K_EPS:
            return self.loc - self.scale * np.log(y)
        return self.loc + self.scale * (1.0 - y**k) / k

    def ppf(self, q):
        return self.quantile_from_y(-np.log(np.asarray(q, dtype=float)))

    def cdf(self, x):
        return self.scipy().cdf(x)

    def max_of(self, n):
        """Distribution of the maximum of ``n`` iid draws (GEV is max-stable)."""
        k = self.shape
        if abs(k) < _K_EPS:
            return GEV(self.loc + self.scale * math.log(n), self.scale, k)
        return GEV(self.loc + self.scale * (1.0 - n ** (-k)) / k, self.scale * n ** (-k), k)

    def to_dict(self):
        return {
            "loc": self.loc,
            "scale": self.scale,
            "shape_k": self.shape,
            "xi": self.xi,
            "type": self.type,
        }


def _skew_formula(k):
    g1 = special.gamma(1.0 + k)
    g2 = special.gamma(1.0 + 2.0 * k)
    g3 = special.gamma(1.0 + 3.0 * k)
    return np.sign(k) * (-g3 + 3.0 * g1 * g2 - 2.0 * g1**3) / (g2 - g1**2) ** 1.5


def gev_skewness(k):
    """GEV skewness as a function of Hosking's ``k`` (thesis eq. 2.2, k > -1/3).

    Near ``k = 0`` eq. 2.2 is 0/0; there we interpolate linearly between the Gumbel
    value and eq. 2.2 at ``+-1e-3`` (error ~1e-6).
    """
    k = np.asarray(k, dtype=float)
    out = np.empty_like(k)
    small = np.abs(k) < _SKEW_EPS
    with np.errstate(all="ignore"):
        out[~small] = _skew_formula(k[~small])
    if small.any():
        ks = k[small]
        edge = np.where(ks < 0, _skew_formula(-_SKEW_EPS), _skew_formula(_SKEW_EPS))
        out[small] = GUMBEL_SKEWNESS + (edge - GUMBEL_SKEWNESS) * np.abs(ks) / _SKEW_EPS
    out[k <= -1.0 / 3.0] = np.inf
    return out if out.ndim else float(out)


def _check_sample(sample, source="sample", min_size=3):
    """A finite, non-constant 1-D float array, or InputError."""
    try:
        x = np.asarray(sample, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise InputError(source, None, f"not numeric data ({exc})") from None
    if x.size < min_size:
        raise InputError(source, None, f"need at least {min_size} values, got {x.size}")
    if not np.all(np.isfinite(x)):
        raise InputError(source, None, "contains NaN or infinite values")
    if np.ptp(x) == 0:
        raise InputError(source, None, "all values are equal; a GEV cannot be fitted")
    return x


# --- method of moments (Madsen et al.; thesis eqs. 2.2-2.4) -----------------------------


def mom_shape_from_skewness(skew):
    """Solve eq. 2.2 for ``k`` given a skewness (brentq on k in (-1/3, 20]).

    The thesis minimises with Nelder-Mead from k = 0; eq. 2.2 is monotone in ``k`` so a
    bracketing root-finder gives the same root reliably. Skewness beyond the bracket is
    clipped to its end.
    """
    lo, hi = _K_MIN, _K_MAX
    if skew >= gev_skewness(lo):
        return lo
    if skew <= gev_skewness(hi):
        return hi
    return optimize.brentq(lambda k: gev_skewness(k) - skew, lo, hi, xtol=1e-12)


def _params_from_moments(mean, std, k):
    """Eqs. 2.3 (exponent 1/2, corrected) and 2.4; arrays allowed."""
    k = np.asarray(k, dtype=float)
    kk = np.where(np.abs(k) < _K_EPS, 1.0, k)  # placeholder where the k = 0 limit is used
    g1 = special.gamma(1.0 + kk)
    g2 = special.gamma(1.0 + 2.0 * kk)
    scale = np.where(
        np.abs(k) < _K_EPS, std * math.sqrt(6.0) / math.pi, std * np.abs(kk) / np.sqrt(g2 - g1**2)
    )
    loc = np.where(np.abs(k) < _K_EPS, mean - EULER_GAMMA * scale, mean - scale / kk * (1.0 - g1))
    return loc, scale


def fit_mom(sample):
    """Method-of-moments GEV fit (Madsen et al. 1997; thesis eqs. 2.2-2.4, corrected)."""
    x = _check_sample(sample)
    skew = float(stats.skew(x, bias=False))
    k = mom_shape_from_skewness(skew)
    loc, scale = _params_from_moments(x.mean(), x.std(ddof=1), k)
    return GEV(float(loc), float(scale), float(k))


# --- probability-weighted moments (Hosking et al. 1985; thesis eqs. 2.5-2.8) ------------


def sample_pwm(sample):
    """Unbiased sample probability-weighted moments b0, b1, b2 (Hosking 1985)."""
    x = np.sort(np.asarray(sample, dtype=float))
    n = x.size
    j = np.arange(1, n + 1, dtype=float)
    b0 = x.mean()
    b1 = np.sum((j - 1) / (n - 1) * x) / n
    b2 = np.sum((j - 1) * (j - 2) / ((n - 1) * (n - 2)) * x) / n
    return b0, b1, b2


def pwm_params(b0, b1, b2):
    """GEV (loc, scale, k) from PWMs: eqs. 2.5-2.8 with b0, b1, b2 (arrays allowed).

    ``c = (2 b1 - b0) / (3 b2 - b0) - ln2/ln3``, ``k = 7.8590 c + 2.9554 c^2``,
    ``scale = (2 b1 - b0) k / (G(1+k) (1 - 2^-k))``, ``loc = b0 + scale (G(1+k) - 1) / k``.
    """
    b0, b1, b2 = (np.asarray(b, dtype=float) for b in (b0, b1, b2))
    l2 = 2.0 * b1 - b0
    with np.errstate(all="ignore"):
        c = l2 / (3.0 * b2 - b0) - math.log(2.0) / math.log(3.0)
    k = 7.8590 * c + 2.9554 * c**2
    gumbel = np.abs(k) < _K_EPS
    kk = np.where(gumbel, 1.0, k)
    g1 = special.gamma(1.0 + kk)
    scale = np.where(gumbel, l2 / math.log(2.0), l2 * kk / (g1 * (1.0 - 2.0 ** (-kk))))
    loc = np.where(gumbel, b0 - EULER_GAMMA * scale, b0 + scale * (g1 - 1.0) / kk)
    return loc, scale, k


def fit_pwm(sample):
    """Probability-weighted-moments GEV fit (Hosking, Wallis & Wood 1985)."""
    x = _check_sample(sample)
    loc, scale, k = pwm_params(*sample_pwm(x))
    return GEV(float(loc), float(scale), float(k))


# --- maximum likelihood ------------------------------------------------------------------


def fit_mle(sample):
    """Maximum-likelihood GEV fit via ``scipy.stats.genextreme.fit``, started from PWM."""
    x = _check_sample(sample)
    start = fit_pwm(x)
    c, loc, scale = stats.genextreme.fit(x, start.shape, loc=start.loc, scale=start.scale)
    return GEV(float(loc), float(scale), float(c))


FITTERS = {"mom": fit_mom, "pwm": fit_pwm, "mle": fit_mle}

#: Shapes (Hosking's k) a fit may have to be used: k > -1 keeps the mean, hence the
#: expected maximum, finite (xi < 1); k < 1 is where maximum likelihood is regular
#: (Smith 1985; xi > -1).  A fit outside says so instead of printing inf or nonsense.
VALID_SHAPE = (-1.0, 1.0)


def fit_problem(method, fit, sample):
    """Why ``fit`` (by ``method``) cannot be used, or None when it can."""
    params = (fit.loc, fit.scale, fit.shape)
    if not all(math.isfinite(v) for v in params):
        return f"non-finite parameters (loc {fit.loc:g}, scale {fit.scale:g}, k {fit.shape:g})"
    if fit.scale <= 0:
        return f"scale {fit.scale:g} is not positive"
    if method == "mom" and fit.shape in (_K_MIN, _K_MAX):
        skew = float(stats.skew(sample, bias=False))
        return (
            f"sample skewness {skew:.3g} is beyond what a GEV can have; the moment "
            "equation has no solution"
        )
    lo, hi = VALID_SHAPE
    if fit.shape <= lo:
        return (
            f"shape k = {fit.shape:.3g} <= {lo:g} (xi >= 1): no finite mean, so no "
            "expected maximum; the tail is heavier than a GEV fit can represent "
            "(outliers, or too few samples)"
        )
    if fit.shape >= hi:
        return (
            f"shape k = {fit.shape:.3g} >= {hi:g} (xi <= -1): outside the range where "
            "the fit is regular"
        )
    return None


@dataclass(frozen=True)
class FitSummary:
    """GEV fits of one sample by several methods; ``agree`` is the Fig. 3.6 diagnostic.

    ``fits`` holds only usable fits; ``failures`` maps each other method to the reason.
    """

    fits: dict
    n: int
    gumbel_tol: float = GUMBEL_TOL
    failures: dict = field(default_factory=dict)

    @property
    def types(self):
        return {m: gev_type(g.shape, self.gumbel_tol) for m, g in self.fits.items()}

    @property
    def agree(self):
        """True/False when two or more usable fits give the same / different types;
        None when fewer than two fits are usable (nothing to compare)."""
        if len(self.fits) < 2:
            return None
        return len(set(self.types.values())) == 1

    def to_dict(self):
        return {
            "n": self.n,
            "agree": self.agree,
            "gumbel_tol": self.gumbel_tol,
            "fits": {m: dict(g.to_dict(), type=self.types[m]) for m, g in self.fits.items()},
            "failures": dict(self.failures),
        }


def fit_all(sample, methods=METHODS, gumbel_tol=GUMBEL_TOL):
    """Fit a GEV by each method and report types and agreement (thesis Fig. 3.6).

    The thesis compares PWM and MOM; pass ``methods=("pwm", "mom")`` for exactly that.
    A fit with ``|k| < gumbel_tol`` counts as Type I: sample shapes are never exactly 0,
    and the standard error of k is about ``0.75 / sqrt(n)`` near the Gumbel case.
    """
    if not gumbel_tol >= 0:
        raise InputError("gumbel_tol", None, f"must be >= 0, got {gumbel_tol!r}")
    x = _check_sample(sample)
    unknown = [m for m in methods if m not in FITTERS]
    if unknown or not methods:
        raise InputError("methods", None, f"unknown fit method(s) {unknown}; use {METHODS}")
    distinct = np.unique(x).size
    if distinct < 3:
        raise InputError(
            "sample",
            None,
            f"only {distinct} distinct values among {x.size} "
            "(ties, e.g. a coarse timer): a 3-parameter GEV cannot be fitted",
        )
    fits, failures = {}, {}
    for m in methods:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # reported as the reason
                fit = FITTERS[m](x)
            reason = fit_problem(m, fit, x)
        except (ValueError, ArithmeticError, RuntimeError) as exc:
            reason = f"the estimator failed ({exc})"
        if reason:
            failures[m] = reason
        else:
            fits[m] = fit
    return FitSummary(fits, int(x.size), float(gumbel_tol), failures)


# --- EMMA (eq. 2.9) and the exact expected maximum ---------------------------------------


def _check_n(n):
    n_arr = np.asarray(n, dtype=float)
    if not np.all(np.isfinite(n_arr)) or np.any(n_arr < 1):
        raise InputError("n", None, f"number of draws must be >= 1, got {n}")
    return n_arr


def emma_probability(n):
    """The EMMA probability ``P = 0.570376002 ** (1/n)`` of eq. 2.9."""
    return EMMA_CONSTANT ** (1.0 / _check_n(n))


def _scalar_or_array(out, n):
    out = np.asarray(out, dtype=float)
    return float(out) if np.ndim(n) == 0 else out


def emma(dist, n):
    """Expected maximum of ``n`` iid draws by EMMA (eq. 2.9): ``F^-1(0.570376002^(1/n))``.

    ``dist`` is a :class:`GEV`, a frozen scipy distribution (anything with ``isf``), or a
    1-D sample (then ``F`` is the empirical distribution and the quantile is linearly
    interpolated, numpy's default). ``n`` may be a float or an array. EMMA is exact for a
    Gumbel distribution and approximate otherwise.
    """
    n_arr = _check_n(n)
    # y = -ln F at the EMMA probability: exactly exp(-gamma) / n.
    y = math.exp(-EULER_GAMMA) / n_arr
    if isinstance(dist, GEV):
        out = dist.quantile_from_y(y)
    elif hasattr(dist, "isf"):
        out = dist.isf(-np.expm1(-y))  # 1 - F computed without cancellation
    else:
        x = _check_sample(dist, min_size=1)
        out = np.quantile(x, np.exp(-y))
    return _scalar_or_array(out, n)


def expected_max_exact(dist, n):
    """Exact ``E[max of n iid draws]`` to compare with :func:`emma`.

    * :class:`GEV`: closed form (the max of n GEV draws is GEV, see ``GEV.max_of``).
    * frozen scipy distribution: ``int_0^1 F^-1(v^(1/n)) dv`` (the order-statistic
      integral ``int x n F^(n-1) f dx`` after substituting ``v = F(x)^n``), by quad.
    * sample: the empirical distribution's exact value
      ``sum_j x_(j) [(j/N)^n - ((j-1)/N)^n]``.
    """
    n_arr = _check_n(n)
    if isinstance(dist, GEV):
        out = [dist.max_of(float(m)).mean() for m in n_arr.ravel()]
    elif hasattr(dist, "isf"):

        def quantile(v, m):
            # F^-1(v^(1/m)): via ppf in the lower half, via isf(1 - q) near q = 1 where
            # ppf would lose the digits that matter for large m
            log_q = math.log(v) / m if v > 0 else -math.inf
            return dist.ppf(math.exp(log_q)) if log_q < -0.7 else dist.isf(-math.expm1(log_q))

        def one(m):
            f = lambda v: quantile(v, m)
            val, _ = integrate.quad(f, 0.0, 1.0, limit=200, epsabs=0, epsrel=1e-9)
            return val

        out = [one(float(m)) for m in n_arr.ravel()]
    else:
        x = np.sort(_check_sample(dist, min_size=1))
        cdf = np.arange(0, x.size + 1) / x.size
        out = [float(np.sum(x * np.diff(cdf**m))) for m in n_arr.ravel()]
    return _scalar_or_array(np.reshape(out, n_arr.shape), n)


def expected_max_mc(sample, n, draws=100_000, seed=0):
    """Monte-Carlo ``E[max of n draws with replacement from sample]``.

    Draws the maximum directly by the inverse-CDF trick: the max of ``n`` iid draws from
    the empirical CDF has CDF ``F^n``, so ``x_(ceil(N U^(1/n)))`` with U uniform is one
    such maximum and nothing of size ``draws * n`` is materialised.
    """
    x = np.sort(_check_sample(sample, min_size=1))
    n_val = float(_check_n(n))
    if draws < 1:
        raise InputError("draws", None, f"must be >= 1, got {draws}")
    u = np.random.default_rng(seed).random(int(draws))
    idx = np.clip(np.ceil(x.size * u ** (1.0 / n_val)).astype(np.int64) - 1, 0, x.size - 1)
    return float(x[idx].mean())
