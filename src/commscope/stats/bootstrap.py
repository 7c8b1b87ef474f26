"""Bootstrap prediction of per-interval maxima at a larger scale (thesis Sec. 3.2.2).

Dominguez-Trujillo (2021), seed 003. A bulk-synchronous run has ``m`` intervals on ``p``
ranks; each interval's length is the maximum over the ranks. Given data at the base
scale ``p`` we predict the interval maximum (or the runtime) at a target scale ``P``.

Three predictors, each returning a :class:`BootstrapResult` with the median and an
equal-tailed confidence interval (2.5th / 97.5th percentiles for 95%, the thesis's
``[n(1-ci)/2, n(1+ci)/2]`` positions):

``nonparametric`` (thesis: "resample the original maxima k times with replacement and
    take the maximum ... repeated n times"): each replica is the max of ``k = P/p``
    base interval maxima drawn with replacement. Drawn without materialising the ``k``
    draws: the max of ``k`` iid draws from the empirical CDF ``F`` has CDF ``F^k``, so
    ``x_(ceil(N U^(1/k)))`` (U uniform) is exactly one such maximum. The replicas form a
    predictive distribution of one interval's maximum at scale ``P``. Non-integer ``k``
    is allowed (it interpolates ``F^k``).

``internode`` (thesis: "one node at a time is used to generate the 50 bootstrap
    replicas and this process is repeated for the total number of nodes"): for each node,
    its per-interval maxima over the node's ranks are resampled with replacement, a GEV is
    fitted to each resample (PWM by default, or MOM), and EMMA (eq. 2.9) projects the
    expected maximum over the ``P / ranks_per_node`` nodes of the target scale. Replicas
    of all nodes are pooled.

``intranode`` (thesis: "a single rank for each node is selected to generate the 50
    replicas, and this process is repeated for the total number of ranks per node"): for
    each rank slot ``r`` (the r-th rank of every node), the per-rank interval times of
    those ranks are pooled, resampled, GEV-fitted, and EMMA projects the expected
    maximum over the ``P`` ranks of the target scale. Replicas of all slots are pooled.

Interpretation notes (the thesis is brief here):

* The parametric replicas are EMMA projections, i.e. estimates of the *expected*
  interval maximum; their interval is a confidence interval for that mean. The
  non-parametric replicas are interval maxima themselves, so their interval is a
  prediction interval for one interval's maximum. This follows the thesis's text.
* The thesis evaluates predicted *runtimes*. With ``intervals=m`` every replica is a
  runtime: the sum of ``m`` independent non-parametric maxima, or ``m`` times the EMMA
  projection for the parametric kinds (the expected runtime). With ``intervals=None``
  (default) the statistic is one interval's maximum.
* ``replicas`` is the total; the parametric kinds split it evenly over the groups
  (nodes or rank slots), rounding up, as the thesis uses 50 per group.
* Rank ``r`` lives on node ``r // ranks_per_node`` (block placement); callers with a
  different placement reorder the columns first.

All randomness comes from ``numpy.random.default_rng(seed)``; the seed (drawn from OS
entropy when not given) is stored in the result, so a result can be reproduced.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from ..errors import InputError
from ..limits import check_memory
from . import evt
from ..lazy import lazy

np = lazy("numpy")


KINDS = ("nonparametric", "internode", "intranode")
FIT_METHODS = ("pwm", "mom")
#: Largest share of parametric replicas that may fail (no GEV fit) before refusing.
MAX_FAILED_FRACTION = 0.01
#: Cap on elements per vectorised chunk, to keep memory near 100 MB whatever the sizes.
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class BootstrapResult:
    """Prediction at one target scale; ``samples`` holds every replica (seconds)."""

    kind: str
    base_ranks: int
    target_ranks: float  # an int when whole
    k: float
    statistic: str  # "interval_max_s" or "runtime_s"
    median_s: float
    ci_low_s: float
    ci_high_s: float
    confidence: float
    replicas: int
    seed: int
    method: str | None = None
    samples: np.ndarray = field(default=None, repr=False, compare=False)
    failed_replicas: int = 0  # resamples that gave no usable GEV fit (left out)

    def to_dict(self):
        """JSON-ready summary (replica samples left out)."""
        return {
            "kind": self.kind,
            "base_ranks": self.base_ranks,
            "target_ranks": self.target_ranks,
            "k": self.k,
            "statistic": self.statistic,
            "median_s": self.median_s,
            "ci_low_s": self.ci_low_s,
            "ci_high_s": self.ci_high_s,
            "confidence": self.confidence,
            "replicas": self.replicas,
            "seed": self.seed,
            "method": self.method,
            "failed_replicas": self.failed_replicas,
        }


# --- input checks ------------------------------------------------------------------------


def _check_array(values, name, ndim):
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(name, None, f"not numeric data ({exc})") from None
    if a.ndim != ndim:
        raise InputError(name, None, f"expected a {ndim}-D array, got shape {a.shape}")
    if a.size == 0:
        raise InputError(name, None, "is empty")
    if not np.all(np.isfinite(a)):
        raise InputError(name, None, "contains NaN or infinite values")
    return a


#: Bytes per replica at the peak: the replica array, the copy np.quantile sorts, and
#: (parametric kinds) the per-group arrays before they are joined.
BYTES_PER_REPLICA = 3 * 8


def _check_common(replicas, confidence, intervals):
    if not isinstance(replicas, (int, np.integer)) or replicas < 1:
        raise InputError("replicas", None, f"must be a positive integer, got {replicas!r}")
    check_memory(
        "--replicas",
        replicas,
        replicas * BYTES_PER_REPLICA,
        f"{BYTES_PER_REPLICA} bytes per replica",
    )
    if not 0 < confidence < 1:
        raise InputError("confidence", None, f"must be in (0, 1), got {confidence!r}")
    if intervals is not None and (not isinstance(intervals, (int, np.integer)) or intervals < 1):
        raise InputError("intervals", None, f"must be a positive integer, got {intervals!r}")


def _check_scale(base, target):
    if not np.isfinite(target) or target <= 0:
        raise InputError("target_ranks", None, f"must be positive, got {target!r}")
    k = float(target) / float(base)
    if k < 1:
        raise InputError(
            "target_ranks", None, f"{target} is below the base scale {base} (k = {k:.3g} < 1)"
        )
    return k


def _ranks(target):
    """A whole number of ranks as an int (a script reads 4, not 4.0); a fraction stays."""
    return int(target) if float(target).is_integer() else float(target)


def _rng(seed):
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", None, f"must be a non-negative integer, got {seed!r}")
    return int(seed), np.random.default_rng(int(seed))


def _summarise(samples, confidence):
    tail = (1.0 - confidence) / 2.0
    lo, med, hi = np.quantile(samples, [tail, 0.5, 1.0 - tail])
    return float(med), float(lo), float(hi)


# --- non-parametric ----------------------------------------------------------------------


def max_of_k_resamples(sorted_values, k, size, rng):
    """``size`` draws of the max of ``k`` resamples (with replacement) of ``sorted_values``.

    Inverse-CDF trick: P(max <= x_(j)) = (j/N)^k, so index ``ceil(N U^(1/k)) - 1``.
    """
    n = sorted_values.size
    u = rng.random(size)
    idx = np.ceil(n * u ** (1.0 / k)).astype(np.int64) - 1
    return sorted_values[np.clip(idx, 0, n - 1)]


def bootstrap_nonparametric(
    maxima, base_ranks, target_ranks, *, replicas=10_000, confidence=0.95, seed=None, intervals=None
):
    """Non-parametric prediction from per-interval maxima at ``base_ranks`` (see module doc).

    ``maxima``: 1-D per-interval maxima (seconds) measured on ``base_ranks`` ranks.
    Returns a :class:`BootstrapResult` whose replicas are interval maxima at
    ``target_ranks`` (or runtimes over ``intervals`` intervals).
    """
    x = np.sort(_check_array(maxima, "maxima", 1))
    _check_common(replicas, confidence, intervals)
    if base_ranks < 1:
        raise InputError("base_ranks", None, f"must be >= 1, got {base_ranks!r}")
    k = _check_scale(base_ranks, target_ranks)
    seed, rng = _rng(seed)
    m = intervals or 1
    out = np.empty(replicas)
    rows = max(1, _CHUNK_ELEMENTS // m)
    for start in range(0, replicas, rows):
        r = min(rows, replicas - start)
        draws = max_of_k_resamples(x, k, (r, m), rng)
        out[start : start + r] = draws.sum(axis=1)
    med, lo, hi = _summarise(out, confidence)
    return BootstrapResult(
        "nonparametric",
        int(base_ranks),
        _ranks(target_ranks),
        k,
        "runtime_s" if intervals else "interval_max_s",
        med,
        lo,
        hi,
        float(confidence),
        int(replicas),
        seed,
        None,
        out,
    )


# --- parametric --------------------------------------------------------------------------


def _resample_counts(n, rows, rng):
    """Multiplicity of each of ``n`` sorted values in ``rows`` resamples of size ``n``."""
    idx = rng.integers(0, n, size=(rows, n))
    flat = (idx + n * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n)


def _pwm_from_counts(x, counts):
    """Sample PWMs b0, b1, b2 of each resample, from multiplicities of the sorted ``x``.

    In a sorted resample the copies of ``x_i`` occupy 0-based positions
    ``S_{i-1} .. S_i - 1`` (S = cumulative counts), so Hosking's position weights
    ``t / (n-1)`` and ``t (t-1) / ((n-1)(n-2))`` sum over them in closed form and no
    resample is ever sorted.
    """
    n = counts.shape[1]
    s_hi = np.cumsum(counts, axis=1, dtype=np.float64)
    s_lo = s_hi - counts
    # sum of t and of t(t-1) over t = s_lo .. s_hi - 1
    w1 = (s_hi * (s_hi - 1) - s_lo * (s_lo - 1)) / 2.0
    w2 = (s_hi * (s_hi - 1) * (s_hi - 2) - s_lo * (s_lo - 1) * (s_lo - 2)) / 3.0
    b0 = counts @ x / n
    b1 = w1 @ x / (n * (n - 1))
    b2 = w2 @ x / (n * (n - 1) * (n - 2))
    return b0, b1, b2


@functools.cache
def _mom_grid():
    """(shape k, skewness) on a dense grid, built on first use (not at import)."""
    k = np.concatenate(
        [
            np.linspace(-0.33, -0.05, 3000, endpoint=False),
            np.linspace(-0.05, 0.05, 2001),
            np.linspace(0.05, 5.0, 6000)[1:],
        ]
    )
    return k, evt.gev_skewness(k)


def _mom_shape_vectorised(skew):
    """Invert eq. 2.2 for many skewness values by interpolation on a dense grid."""
    grid_k, grid_skew = _mom_grid()
    # skewness decreases with k; np.interp needs increasing x, so flip both
    return np.interp(skew, grid_skew[::-1], grid_k[::-1])


def _mom_from_counts(x, counts):
    n = counts.shape[1]
    # raw moments about the base sample's mean (three mat-vecs, no rows x n temporaries);
    # resample means sit close to it, so converting to central moments loses little
    centre = x.mean()
    xc = x - centre
    s1, s2, s3 = (counts @ xc**p / n for p in (1, 2, 3))
    mean = centre + s1
    m2 = s2 - s1**2
    m3 = s3 - 3.0 * s1 * s2 + 2.0 * s1**3
    # bias-corrected skewness and std, as evt.fit_mom uses
    with np.errstate(all="ignore"):
        g1 = m3 / m2**1.5 * math.sqrt(n * (n - 1)) / (n - 2)
    std = np.sqrt(m2 * n / (n - 1))
    k = _mom_shape_vectorised(g1)
    loc, scale = evt._params_from_moments(mean, std, k)
    return loc, scale, k


def _emma_gev(loc, scale, k, n_target):
    """EMMA (eq. 2.9) of GEV(loc, scale, k) arrays; ``-ln P = exp(-gamma) / n``."""
    y = math.exp(-evt.EULER_GAMMA) / n_target
    small = np.abs(k) < 1e-6
    kk = np.where(small, 1.0, k)
    return np.where(small, loc - scale * math.log(y), loc + scale * (1.0 - y**kk) / kk)


def bootstrap_gev_emma(sample, n_target, replicas, rng, method="pwm"):
    """``replicas`` EMMA projections at ``n_target`` from GEV fits to resamples of ``sample``.

    Vectorised: every resample is represented by multiplicities of the sorted sample.
    """
    x = np.sort(np.asarray(sample, dtype=float))
    n = x.size
    out = np.empty(replicas)
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, replicas, rows):
        r = min(rows, replicas - start)
        counts = _resample_counts(n, r, rng)
        if method == "pwm":
            loc, scale, k = evt.pwm_params(*_pwm_from_counts(x, counts))
        else:
            loc, scale, k = _mom_from_counts(x, counts)
        out[start : start + r] = _emma_gev(loc, scale, k, n_target)
    return out


def _check_times(times, ranks_per_node):
    t = _check_array(times, "times", 2)
    n_ranks = t.shape[1]
    if not isinstance(ranks_per_node, (int, np.integer)) or ranks_per_node < 1:
        raise InputError(
            "ranks_per_node", None, f"must be a positive integer, got {ranks_per_node!r}"
        )
    if n_ranks % ranks_per_node:
        raise InputError(
            "ranks_per_node", None, f"{n_ranks} ranks do not split into nodes of {ranks_per_node}"
        )
    return t


def _parametric(
    kind,
    groups,
    n_target,
    base_ranks,
    target_ranks,
    k,
    replicas,
    confidence,
    seed,
    intervals,
    method,
):
    if method not in FIT_METHODS:
        raise InputError("method", None, f"unknown fit method {method!r}; use {FIT_METHODS}")
    for g in groups:
        if g.size < 3:
            raise InputError("times", None, f"{kind}: each group needs >= 3 values to fit a GEV")
        if np.ptp(g) == 0:
            raise InputError("times", None, f"{kind}: a group has constant values; no GEV fit")
    seed, rng = _rng(seed)
    per_group = math.ceil(replicas / len(groups))
    with np.errstate(all="ignore"):
        out = np.concatenate(
            [bootstrap_gev_emma(g, n_target, per_group, rng, method) for g in groups]
        )
    # A resample of few distinct values (ties) or a heavy tail gives no GEV fit: its
    # projection is NaN or infinite. Leave those out and say how many; too many, refuse.
    usable = np.isfinite(out)
    failed = int(out.size - usable.sum())
    if failed > MAX_FAILED_FRACTION * out.size:
        raise InputError(
            "times",
            None,
            f"{kind}: {failed} of {out.size} bootstrap resamples "
            "gave no usable GEV fit (too few distinct values, or a tail heavier "
            "than a GEV); use --kind nonparametric",
        )
    out = out[usable]
    if intervals:
        out = out * intervals
    med, lo, hi = _summarise(out, confidence)
    return BootstrapResult(
        kind,
        int(base_ranks),
        _ranks(target_ranks),
        k,
        "runtime_s" if intervals else "interval_max_s",
        med,
        lo,
        hi,
        float(confidence),
        int(out.size),
        seed,
        method,
        out,
        failed,
    )


def bootstrap_internode(
    times,
    ranks_per_node,
    target_ranks,
    *,
    replicas=10_000,
    confidence=0.95,
    seed=None,
    intervals=None,
    method="pwm",
):
    """Inter-node parametric prediction (see module doc).

    ``times``: array (intervals, ranks) of per-rank interval times in seconds, rank ``r``
    on node ``r // ranks_per_node``. Each node contributes its per-interval maxima; EMMA
    projects to ``target_ranks / ranks_per_node`` nodes.
    """
    t = _check_times(times, ranks_per_node)
    _check_common(replicas, confidence, intervals)
    k = _check_scale(t.shape[1], target_ranks)
    n_nodes = t.shape[1] // ranks_per_node
    node_max = t.reshape(t.shape[0], n_nodes, ranks_per_node).max(axis=2)
    groups = [node_max[:, j] for j in range(n_nodes)]
    return _parametric(
        "internode",
        groups,
        float(target_ranks) / ranks_per_node,
        t.shape[1],
        target_ranks,
        k,
        replicas,
        confidence,
        seed,
        intervals,
        method,
    )


def bootstrap_intranode(
    times,
    ranks_per_node,
    target_ranks,
    *,
    replicas=10_000,
    confidence=0.95,
    seed=None,
    intervals=None,
    method="pwm",
):
    """Intra-node parametric prediction (see module doc).

    ``times``: array (intervals, ranks) as for :func:`bootstrap_internode`. Rank slot
    ``r`` pools the times of the r-th rank of every node; EMMA projects to
    ``target_ranks`` ranks.
    """
    t = _check_times(times, ranks_per_node)
    _check_common(replicas, confidence, intervals)
    k = _check_scale(t.shape[1], target_ranks)
    n_nodes = t.shape[1] // ranks_per_node
    by_slot = t.reshape(t.shape[0], n_nodes, ranks_per_node)
    groups = [by_slot[:, :, r].ravel() for r in range(ranks_per_node)]
    return _parametric(
        "intranode",
        groups,
        float(target_ranks),
        t.shape[1],
        target_ranks,
        k,
        replicas,
        confidence,
        seed,
        intervals,
        method,
    )


def predict(
    kind, target_ranks, *, times=None, maxima=None, base_ranks=None, ranks_per_node=None, **options
):
    """Run one bootstrap ``kind`` for each of ``target_ranks``; a list of results.

    ``nonparametric`` needs ``maxima`` and ``base_ranks``, or ``times`` (then the
    maxima are its row maxima and the base scale its column count). The parametric kinds
    need ``times`` and ``ranks_per_node``. With a ``seed``, target ``i`` uses
    ``seed + i`` so each target is reproducible on its own.
    """
    if kind not in KINDS:
        raise InputError("kind", None, f"unknown bootstrap kind {kind!r}; use {KINDS}")
    targets = np.atleast_1d(target_ranks)
    seed = options.pop("seed", None)
    if seed is None:
        seed, _ = _rng(None)
    results = []
    for i, target in enumerate(targets):
        opts = dict(options, seed=int(seed) + i)
        if kind == "nonparametric":
            if maxima is None:
                if times is None:
                    raise InputError("maxima", None, "nonparametric needs maxima or times")
                t = _check_array(times, "times", 2)
                maxima, base_ranks = t.max(axis=1), t.shape[1]
            if base_ranks is None:
                raise InputError("base_ranks", None, "nonparametric needs the base scale")
            results.append(bootstrap_nonparametric(maxima, base_ranks, float(target), **opts))
        else:
            if times is None or ranks_per_node is None:
                raise InputError("times", None, f"{kind} needs per-rank times and ranks_per_node")
            fn = bootstrap_internode if kind == "internode" else bootstrap_intranode
            results.append(fn(times, ranks_per_node, float(target), **opts))
    return results


# --- tables ------------------------------------------------------------------------------


def per_rank_matrix(frame, source="table", column="time_s"):
    """(intervals x ranks) array from a long table ``iteration, rank, time_s[, node]``.

    Columns are ordered by ``(node, rank)`` when a ``node`` column exists (so ranks of a
    node are adjacent, as the parametric kinds expect) and by ``rank`` otherwise. Returns
    ``(times, ranks_per_node)``; ``ranks_per_node`` is None without a ``node`` column.
    Every (iteration, rank) pair must appear exactly once.
    """
    for col in ("iteration", "rank", column):
        if col not in frame.columns:
            raise InputError(source, col, f"missing column (have {list(frame.columns)})")
    if frame.empty:
        raise InputError(source, column, "table has no rows")
    values = frame[column].to_numpy(dtype=float, na_value=np.nan)
    if not np.all(np.isfinite(values)):
        raise InputError(source, column, "contains NaN or infinite values")
    if (values < 0).any():
        raise InputError(source, column, f"contains negative times (smallest {values.min():g} s)")
    if frame.duplicated(["iteration", "rank"]).any():
        raise InputError(source, "rank", "an (iteration, rank) pair appears twice")
    wide = frame.pivot(index="iteration", columns="rank", values=column)
    if wide.isna().any().any():
        raise InputError(source, "rank", "not every rank has a time in every iteration")
    ranks_per_node = None
    if "node" in frame.columns:
        node_of = frame.groupby("rank")["node"].first()
        if (frame.groupby("rank")["node"].nunique() > 1).any():
            raise InputError(source, "node", "a rank appears on more than one node")
        sizes = node_of.value_counts()
        if sizes.nunique() != 1:
            raise InputError(source, "node", "nodes have different numbers of ranks")
        ranks_per_node = int(sizes.iloc[0])
        order = node_of.reset_index().sort_values(["node", "rank"])["rank"]
        wide = wide[list(order)]
    return wide.to_numpy(dtype=float), ranks_per_node
