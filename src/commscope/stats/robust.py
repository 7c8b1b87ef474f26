"""Robust summaries of a few repetitions, for machines where a run can be preempted."""

from __future__ import annotations

from ..lazy import lazy

np = lazy("numpy")

#: sd = MAD_TO_SD * MAD for normal data; a median's standard error is
#: MEDIAN_SE_FACTOR * sd / sqrt(n) (its asymptotic efficiency, sqrt(pi / 2))
MAD_TO_SD = 1.4826
MEDIAN_SE_FACTOR = 1.2533


def median_se(values):
    """Standard error of the median of ``values``, with the spread taken from the MAD, so
    one outlying repetition widens it no more than it moves the median; NaN below 2."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return float("nan")
    mad = np.median(np.abs(x - np.median(x)))
    return float(MEDIAN_SE_FACTOR * MAD_TO_SD * mad / np.sqrt(x.size))
