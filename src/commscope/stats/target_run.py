"""Predictive distribution of one target run's statistic, for correlated interval times.

Issue 26, part 3.  The thesis bootstraps (:mod:`commscope.stats.bootstrap`) answer
"what is one interval's maximum at scale P" (non-parametric) and "what is the expected
maximum" (parametric, EMMA), treating every interval as independent.  What a user
compares with is a different statistic: the median interval maximum, or the runtime, of
*one run* at scale P.  On this machine the thesis intervals miss it for four reasons,
each measured in docs/validation.md ("Variability intervals: coverage"):

1. the statistic: a confidence interval for EMMA's expected maximum (which at P = 2 is
   biased high for light tails) is not an interval for a run's median maximum;
2. dependence: interval times of a rank are autocorrelated (DGEMM here: lag-1 r ~ 0.45),
   so an iid resample understates the variance of a run's median or sum;
3. the target run's own sampling: the target's m intervals are a sample too;
4. run-to-run variation: each run's level moves (CPU frequency, other jobs, placement)
   by more than within-run resampling shows.

This module predicts the statistic of one target run, per replica:

* level 1 (what the calibration tells us): a circular block bootstrap of the
  calibration series (blocks of ``block`` intervals keep the autocorrelation), giving an
  empirical distribution (non-parametric) or a GEV fitted to it (parametric);
* level 2 (the target run): ``intervals`` interval maxima drawn from that distribution's
  max-of-``n_target`` law.  Their probability levels are a block-resampled series of the
  calibration's own levels (its ranks, jittered), so the target series has the
  calibration's autocorrelation; the max of ``n`` draws at level ``v`` is the quantile at
  ``v^(1/n)`` (non-parametric, as in the thesis bootstrap) or of the max-stable GEV^n;
* a run effect: a log factor with the between-run standard deviation estimated from
  ``R`` repeated calibration runs (:func:`run_effect_sd`; zero with one run), drawn from
  Student's t with ``R - 1`` degrees of freedom: the prediction interval of one new
  run's level when the spread itself is estimated from ``R`` runs (with three, the
  normal's 1.96 sd would be 4.30 sd; a normal held DGEMM's medians 3-8 times in 12).

The replicas are then the target run's median (or sum) of its interval maxima.
"""

from __future__ import annotations

import math

from ..errors import InputError
from . import bootstrap, evt
from ..lazy import lazy

np = lazy("numpy")
stats = lazy("scipy.stats")

STATISTICS = ("median", "sum")
#: Elements per vectorised chunk (rows x series length), about 100 MB at the peak.
_CHUNK_ELEMENTS = 2_000_000


# --- dependence ------------------------------------------------------------------------


def autocorrelation(x, max_lag):
    """Sample autocorrelation at lags 0 .. ``max_lag`` (the biased, positive-definite form)."""
    x = np.asarray(x, dtype=float)
    xc = x - x.mean()
    var = float(xc @ xc)
    n = x.size
    if var == 0:
        return np.r_[1.0, np.zeros(max_lag)]
    return np.array(
        [1.0] + [float(xc[: n - lag] @ xc[lag:]) / var for lag in range(1, max_lag + 1)]
    )


def lag1(x):
    """(lag-1 autocorrelation, the 2/sqrt(n) bound beyond which it is significant)."""
    x = np.asarray(x, dtype=float)
    if x.size < 3:
        return 0.0, math.inf
    return float(autocorrelation(x, 1)[1]), 2.0 / math.sqrt(x.size)


def block_length(x):
    """Block length for a circular block bootstrap of ``x``: 1 without autocorrelation.

    Politis & White (2004) with the correction of Patton, Politis & White (2009): the
    lag ``m`` after which ``K_n`` autocorrelations are all insignificant (bound
    ``2 sqrt(log10 n / n)``) sets the flat-top window ``M = 2 m``, and
    ``b = (2 G^2 / D)^(1/3) n^(1/3)`` with ``G = sum l(k/M) |k| R(k)``,
    ``D = 4/3 (sum l(k/M) R(k))^2``.  Capped at n / 3.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 8 or np.ptp(x) == 0:
        return 1
    kn = max(5, math.ceil(math.sqrt(math.log10(n))))
    mmax = min(math.ceil(math.sqrt(n)) + kn, n - 1)
    rho = autocorrelation(x, mmax)
    bound = 2.0 * math.sqrt(math.log10(n) / n)
    small = np.abs(rho[1:]) < bound
    mhat = next((j for j in range(0, mmax - kn + 1) if small[j : j + kn].all()), mmax - kn)
    if mhat == 0:
        return 1
    big_m = min(2 * mhat, mmax)
    lags = np.arange(-big_m, big_m + 1)
    t = np.abs(lags) / big_m
    window = np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2.0 * (1.0 - t), 0.0))
    acov = rho[np.abs(lags)] * x.var()
    g = float(np.sum(window * np.abs(lags) * acov))
    d = 4.0 / 3.0 * float(np.sum(window * acov)) ** 2
    if d <= 0:
        return 1
    b = (2.0 * g * g / d) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return int(min(max(1, math.ceil(b)), max(1, n // 3)))


def pooled_block_length(series):
    """One block length for several series of the same experiment: their median."""
    return int(np.median([block_length(s) for s in series]))


def block_index(lengths, block, out_len, rows, rng):
    """(rows, out_len) indices into the concatenated series of ``lengths``.

    Circular blocks of ``block`` consecutive intervals: a block starts at a uniformly
    drawn position of the pool and wraps within its own series (never across runs).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    nblocks = -(-out_len // block)
    start = rng.integers(0, offsets[-1], size=(rows, nblocks))
    which = np.searchsorted(offsets, start, side="right") - 1
    local = start - offsets[which]
    step = np.arange(block)
    idx = offsets[which][..., None] + (local[..., None] + step) % lengths[which][..., None]
    return idx.reshape(rows, nblocks * block)[:, :out_len]


# --- run-to-run variation --------------------------------------------------------------


def _log_stat(values, statistic):
    v = np.median(values, axis=-1) if statistic == "median" else np.mean(values, axis=-1)
    return np.log(v)


def run_effect_sd(series, statistic, block, rng, resamples=400):
    """Between-run standard deviation of the log statistic, from repeated runs.

    One-way random effects: the variance of the runs' log statistics minus the mean
    within-run (block bootstrap) variance of each, floored at 0; times ``1 + 1/R`` as
    the target's level is compared with a mean estimated from ``R`` runs.  0 for one run.
    """
    if len(series) < 2:
        return 0.0
    logs = np.array([_log_stat(s, statistic) for s in series])
    between = float(np.var(logs, ddof=1))
    within = np.mean(
        [
            np.var(_log_stat(s[block_index([s.size], block, s.size, resamples, rng)], statistic))
            for s in series
        ]
    )
    tau2 = max(0.0, between - float(within))
    return math.sqrt(tau2 * (1.0 + 1.0 / len(series)))


# --- the predictor ---------------------------------------------------------------------


def _check_series(series):
    out = [bootstrap._check_array(s, "times", 1) for s in series]
    if not out:
        raise InputError("times", None, "no calibration series")
    return out


def predict_statistic(
    parametric,
    series,
    n_target,
    *,
    statistic,
    intervals,
    block,
    replicas,
    confidence,
    seed,
    run_sd=0.0,
    run_df=math.inf,
    method="pwm",
    label=None,
):
    """Replicas of one target run's ``statistic`` of ``intervals`` interval maxima.

    ``series``: the calibration's interval series (one per run and node or rank slot);
    ``n_target``: how many of them one target interval is the maximum of (k = P/p for
    the non-parametric kind, P ranks or P/rpn nodes for the parametric ones);
    ``statistic``: "median" or "sum"; ``run_sd``, ``run_df``: the run effect's log sd
    and its degrees of freedom (runs - 1; inf: a normal).  Returns a
    :class:`~commscope.stats.bootstrap.BootstrapResult` (see the module doc).
    """
    series = _check_series(series)
    if statistic not in STATISTICS:
        raise InputError("statistic", None, f"expected one of {STATISTICS}, got {statistic!r}")
    bootstrap._check_common(replicas, confidence, intervals)
    if not n_target >= 1:
        raise InputError("target_ranks", None, f"max of {n_target!r} draws: must be >= 1")
    if parametric and method not in bootstrap.FIT_METHODS:
        raise InputError("method", None, f"unknown fit method {method!r}")
    seed, rng = bootstrap._rng(seed)
    x = np.concatenate(series)
    n = x.size
    if parametric and (n < 3 or np.ptp(x) == 0):
        raise InputError("times", None, "a GEV fit needs >= 3 values that are not all equal")
    lengths = [s.size for s in series]
    order = np.argsort(x, kind="stable")
    xs = x[order]
    pos = np.empty(n, dtype=np.int64)  # sorted position of each pooled value
    pos[order] = np.arange(n)
    out = np.empty(replicas)
    rows = max(1, _CHUNK_ELEMENTS // max(n, intervals))
    for start in range(0, replicas, rows):
        r = min(rows, replicas - start)
        # level 1: block resample of the calibration
        idx1 = block_index(lengths, block, n, r, rng)
        # level 2: the target's probability levels, block-resampled, jittered in the cell
        idx2 = block_index(lengths, block, intervals, r, rng)
        v = (pos[idx2] + rng.random((r, intervals))) / n
        if parametric:
            flat = (pos[idx1] + n * np.arange(r)[:, None]).ravel()
            counts = np.bincount(flat, minlength=r * n).reshape(r, n)
            with np.errstate(all="ignore"):
                if method == "pwm":
                    loc, scale, k = evt.pwm_params(*bootstrap._pwm_from_counts(xs, counts))
                else:
                    loc, scale, k = bootstrap._mom_from_counts(xs, counts)
                y = -np.log(v) / n_target  # GEV^n at v is G at v^(1/n): -ln F = y
                loc, scale, k = loc[:, None], scale[:, None], k[:, None]
                gumbel = np.abs(k) < 1e-6
                kk = np.where(gumbel, 1.0, k)
                draws = np.where(gumbel, loc - scale * np.log(y), loc + scale * (1 - y**kk) / kk)
        else:
            resampled = np.sort(x[idx1], axis=1)
            j = np.ceil(n * v ** (1.0 / n_target)).astype(np.int64) - 1
            draws = np.take_along_axis(resampled, np.clip(j, 0, n - 1), axis=1)
        out[start : start + r] = (
            np.median(draws, axis=1) if statistic == "median" else draws.sum(axis=1)
        )
    usable = np.isfinite(out)
    failed = int(out.size - usable.sum())
    if failed > bootstrap.MAX_FAILED_FRACTION * out.size:
        raise InputError(
            "times",
            None,
            f"{failed} of {out.size} resamples gave no usable GEV "
            "fit (too few distinct values, or a tail heavier than a GEV)",
        )
    out = out[usable]
    if run_sd > 0:
        z = (
            rng.standard_normal(out.size)
            if math.isinf(run_df)
            else rng.standard_t(run_df, out.size)
        )
        out = out * np.exp(run_sd * z)
    med, lo, hi = bootstrap._summarise(out, confidence)
    return bootstrap.BootstrapResult(
        label or ("parametric" if parametric else "nonparametric"),
        0,
        n_target,
        n_target,
        "runtime_s" if statistic == "sum" else "median_interval_max_s",
        med,
        lo,
        hi,
        float(confidence),
        int(out.size),
        seed,
        method if parametric else None,
        out,
        failed,
    )


def gev_fit_rejected(sample, method="pwm", alpha=0.05):
    """(rejected, p) of a Kolmogorov-Smirnov test of ``sample`` against its GEV fit.

    The parameters are estimated from the same sample, which makes the test lenient: a
    rejection is strong evidence that the GEV does not describe the data.
    """
    x = np.asarray(sample, dtype=float)
    if x.size < 8 or np.ptp(x) == 0:
        return False, math.nan
    fit = evt.FITTERS[method](x)
    if evt.fit_problem(method, fit, x):
        return True, 0.0
    p = float(stats.kstest(x, fit.scipy().cdf).pvalue)
    return p < alpha, p
