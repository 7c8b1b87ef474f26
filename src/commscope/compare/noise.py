"""Before vs after one figure: the difference, the ratio, and whether it is beyond the
run-to-run noise (docs/compare.md, "Noise").

Each side is one value per run (a run's run time, its time in MPI_Allreduce, ...).
With at least two runs on both sides:

* ``mean`` (the default): the means of the runs, and Welch's t-test of them at 95 %
  (unequal variances, Welch-Satterthwaite degrees of freedom) with the 95 % confidence
  interval of the difference;
* ``median``: the medians of the runs, and a bootstrap of the difference of the medians
  (the runs of each side resampled with replacement, :data:`BOOTSTRAP` times, seeded):
  the 95 % percentile interval, beyond the noise when it excludes 0.  One run stalled by
  the machine (a shared node) moves a mean; a median of 5 runs it does not.

With one run on either side there is no spread to judge by: ``beyond_noise`` is None
("untested"), never a guess.  Two sides whose repeats are all identical (counts of
messages, bytes) have no noise: any difference is beyond it.
"""

from __future__ import annotations

import math

#: The two-sided level of the test and of the confidence interval.
CONFIDENCE = 0.95

#: Resamples of the median's bootstrap, and its seed (the verdict is reproducible).
BOOTSTRAP = 10000
SEED = 0
STATISTICS = ("mean", "median")

METHODS = {
    "mean": (
        "Welch's t-test of the mean of the runs before against the mean of the runs "
        f"after, two-sided at {CONFIDENCE:.0%}; a side of one run: untested"
    ),
    "median": (
        f"the medians of the runs; the {CONFIDENCE:.0%} interval of their difference "
        f"from a bootstrap ({BOOTSTRAP} resamples of each side's runs), beyond the "
        "noise when it excludes 0; a side of one run: untested"
    ),
}
METHOD = METHODS["mean"]


def _mean(xs):
    return sum(xs) / len(xs)


def _var(xs):
    """The sample variance, computed on deviations scaled by the largest one, so that
    no square of a large value overflows (a float ``**`` raises OverflowError; a product
    too large is inf, which the callers treat as no spread to test by)."""
    m = _mean(xs)
    dev = [x - m for x in xs]
    s = max((abs(d) for d in dev), default=0.0)
    if s == 0 or not math.isfinite(s):
        return 0.0 if s == 0 else math.inf
    return (s * s) * math.fsum((d / s) * (d / s) for d in dev) / (len(xs) - 1)


def welch(before, after):
    """``(p_value, ci_low, ci_high)`` of mean(after) - mean(before); both sides need
    at least two values.  Zero spread on both sides: p is 0 when the means differ, 1
    when not, and the interval is the difference itself."""
    from scipy import stats

    nb, na = len(before), len(after)
    diff = _mean(after) - _mean(before)
    vb, va = _var(before) / nb, _var(after) / na
    se2 = vb + va
    if se2 <= 0 or not math.isfinite(se2):
        return (0.0 if diff != 0 else 1.0), diff, diff
    se = math.sqrt(se2)
    df = (se2 * se2) / ((vb * vb / (nb - 1) if vb else 0.0) + (va * va / (na - 1) if va else 0.0))
    if not math.isfinite(df) or df <= 0:  # variances too large to square: Welch's limit
        df = float(min(nb, na) - 1)
    t = diff / se
    p = float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    return p, diff - half, diff + half


def _median(xs):
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else 0.5 * (ys[n // 2 - 1] + ys[n // 2])


def bootstrap_median(before, after):
    """``(p_value, ci_low, ci_high)`` of median(after) - median(before) by a seeded
    bootstrap; p is twice the smaller share of resampled differences on either side of 0."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    b, a = np.asarray(before, float), np.asarray(after, float)
    db = np.median(rng.choice(b, (BOOTSTRAP, b.size)), axis=1)
    da = np.median(rng.choice(a, (BOOTSTRAP, a.size)), axis=1)
    d = da - db
    lo, hi = np.quantile(d, [(1 - CONFIDENCE) / 2, 0.5 + CONFIDENCE / 2])
    p = min(1.0, 2 * min(float(np.mean(d <= 0)), float(np.mean(d >= 0))))
    if lo == hi == 0:
        p = 1.0
    return p, float(lo), float(hi)


def change(before, after, suffix="_s", statistic="mean"):
    """One figure compared: ``before<suffix>``, ``after<suffix>`` (the means, or the
    medians, of the runs: ``statistic``), ``difference<suffix>`` (after - before), ``ratio`` (after / before; None when
    before is 0), ``beyond_noise`` (True, False, or None when untested), the runs on
    each side, the standard deviation of each side (None for one run), the 95 %
    interval of the difference and the test's p value (None when untested).

    ``before`` and ``after`` are the values of each run (missing values dropped); an
    empty side gives None everywhere but the counts.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r} is not one of {STATISTICS}")
    b = [float(x) for x in before if x is not None and math.isfinite(float(x))]
    a = [float(x) for x in after if x is not None and math.isfinite(float(x))]
    centre = _mean if statistic == "mean" else _median
    out = {f"before{suffix}": centre(b) if b else None, f"after{suffix}": centre(a) if a else None}
    diff = out[f"after{suffix}"] - out[f"before{suffix}"] if a and b else None
    out[f"difference{suffix}"] = diff
    out["ratio"] = (
        out[f"after{suffix}"] / out[f"before{suffix}"]
        if diff is not None and out[f"before{suffix}"] != 0
        else None
    )
    tested = len(a) >= 2 and len(b) >= 2
    p = lo = hi = None
    if tested:
        p, lo, hi = welch(b, a) if statistic == "mean" else bootstrap_median(b, a)
    if not tested:
        out["beyond_noise"] = None
    elif statistic == "mean":
        out["beyond_noise"] = p < 1 - CONFIDENCE
    else:
        out["beyond_noise"] = bool(lo > 0 or hi < 0)
    out["runs_before"], out["runs_after"] = len(b), len(a)
    out[f"sd_before{suffix}"] = math.sqrt(_var(b)) if len(b) >= 2 else None
    out[f"sd_after{suffix}"] = math.sqrt(_var(a)) if len(a) >= 2 else None
    out[f"ci95{suffix}"] = [lo, hi] if tested else None
    out["p_value"] = p
    return out


def relative_pct(record, suffix="_s"):
    """The change in percent of before (None when before is 0 or either is missing)."""
    r = record.get("ratio")
    return None if r is None else 100.0 * (r - 1.0)


def verdict(record):
    """``beyond noise``, ``within noise`` or ``untested`` (one run on a side)."""
    b = record.get("beyond_noise")
    return "untested" if b is None else "beyond noise" if b else "within noise"
