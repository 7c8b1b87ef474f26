"""Fitting machine-model parameters from ping-pong measurements (paper 004).

Input is tidy: one row per timed repetition, every repetition kept.

* ping-pong: ``size_bytes``, ``time_s`` (one-way time = half the round trip),
  ``locality``, ``pairs`` (concurrently communicating pairs per node, i.e. ppn of eq. 2;
  optional, default 1);
* HighVolumePingPong: ``n_messages``, ``size_bytes``, ``order`` ("ordered" /
  "reversed"), ``time_s``.

Timings span about six decades (a 1-byte message against a 4 MiB one), so every fit
minimises the *relative* error (least squares weighted by 1/t), and breakpoints and
rates are found from the median time per size so that a few slow repetitions
(OS noise) do not move them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from ..units import format_bytes
from .machine_model import (
    PROTOCOLS,
    Breakpoints,
    FitQuality,
    MachineModel,
    ProtocolParams,
    canonical_locality,
    check_machine_model,
)
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")
optimize = lazy("scipy.optimize")


# ------------------------------------------------------------------ input checks


def _frame(df, columns, source):
    """Validated copy of ``df`` with ``columns`` present; numeric columns coerced."""
    if not isinstance(df, pd.DataFrame):
        try:
            df = pd.DataFrame(df)
        except Exception:
            raise InputError(source, None, "expected a table (DataFrame)") from None
    if df.empty:
        raise InputError(source, None, "no samples")
    for col in columns:
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
    df = df.reset_index(drop=True).copy()
    for col in ("size_bytes", "time_s", "pairs", "n_messages"):
        if col not in df.columns or col not in columns:
            continue
        vals = pd.to_numeric(df[col], errors="coerce")
        if vals.isna().any() or not np.all(np.isfinite(vals)):
            raise InputError(source, col, "contains missing or non-numeric values")
        df[col] = vals
    if "time_s" in columns and (df["time_s"] <= 0).any():
        raise InputError(source, "time_s", "times must be positive")
    if "size_bytes" in columns and (df["size_bytes"] < 0).any():
        raise InputError(source, "size_bytes", "sizes must not be negative")
    for col in ("pairs", "n_messages"):
        if col in columns and (df[col] < 1).any():
            raise InputError(source, col, "must be >= 1")
    return df


def _arrays(sizes, times, source):
    s = np.asarray(sizes, dtype=float).ravel()
    t = np.asarray(times, dtype=float).ravel()
    if s.size == 0:
        raise InputError(source, None, "no samples")
    if s.shape != t.shape:
        raise InputError(source, None, "sizes and times differ in length")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(t))):
        raise InputError(source, None, "sizes and times must be finite")
    if np.any(t <= 0):
        raise InputError(source, "time_s", "times must be positive")
    if np.any(s < 0):
        raise InputError(source, "size_bytes", "sizes must not be negative")
    return s, t


def _medians(s, t):
    """Distinct sizes (sorted) and the median time at each."""
    u, inv = np.unique(s, return_inverse=True)
    med = np.array([np.median(t[inv == i]) for i in range(u.size)])
    return u, med


# ------------------------------------------------------------------ postal fit


def _relative_lsq(s, t):
    """alpha, beta >= 0 minimising sum(((alpha + beta s) - t) / t)^2 (NNLS on scaled rows)."""
    a = np.column_stack([1.0 / t, s / t])
    (alpha, beta), _ = optimize.nnls(a, np.ones_like(t))
    return float(alpha), float(beta)


@dataclass
class PostalFit:
    """Result of :func:`fit_postal` (004 eq. 1)."""

    alpha_s: float
    beta_s_per_byte: float
    n_samples: int
    max_rel_error: float
    median_rel_error: float
    rel_error_by_size: dict = field(default_factory=dict)

    @property
    def Rb_Bps(self):
        return math.inf if self.beta_s_per_byte == 0 else 1.0 / self.beta_s_per_byte

    def quality(self):
        return FitQuality(
            self.n_samples, self.max_rel_error, self.median_rel_error, dict(self.rel_error_by_size)
        )


def fit_postal(sizes, times, source="samples"):
    """Fit ``T = alpha + beta s`` minimising relative error, with alpha, beta >= 0.

    Every sample counts (weight 1/t, so a 1 us and a 1 ms time weigh alike). Fit
    quality is reported per distinct size against the median measured time.
    """
    s, t = _arrays(sizes, times, source)
    if np.unique(s).size < 2:
        raise InputError(
            source, "size_bytes", "need at least two distinct sizes to fit alpha and beta"
        )
    alpha, beta = _relative_lsq(s, t)
    u, med = _medians(s, t)
    rel = (alpha + beta * u - med) / med
    return PostalFit(
        alpha,
        beta,
        int(s.size),
        float(np.max(np.abs(rel))),
        float(np.median(np.abs(rel))),
        {int(k): float(v) for k, v in zip(u, rel)},
    )


# ------------------------------------------------------------- protocol breakpoints


def _median_noise_variance(s, t):
    """Relative variance of a per-size median time, from repetitions; None if too few."""
    u, inv = np.unique(s, return_inverse=True)
    var = []
    for i in range(u.size):
        lt = np.log(t[inv == i])
        if lt.size >= 3:
            mad = 1.4826 * np.median(np.abs(lt - np.median(lt)))
            var.append(mad**2 * (math.pi / 2) / lt.size)  # variance of a median
    if len(var) < max(3, u.size // 2):
        return None
    return max(float(np.mean(var)), 1e-12)  # floor: identical repetitions


@dataclass
class BreakpointSearch:
    """Result of :func:`find_protocol_breakpoints`.

    ``breakpoints`` are the largest measured size of every segment but the last
    (the protocol switch lies between that size and the next measured one).
    """

    breakpoints: tuple
    segments: list  # [(smallest size, largest size)] per segment
    rel_sse: float  # relative squared error of the chosen split
    score_by_segments: dict  # number of segments -> BIC-like score (lower wins)


def _best_splits(m, k_max, k_min, seg_cost):
    """{k: (sse, cuts)}: the best split of m sorted sizes into k = 1..k_max segments.

    Dynamic programming over segment ends; every segment holds >= k_min sizes.
    """
    # dp[k][j]: best (sse, cuts) covering sizes[0:j] with k segments
    dp = [{} for _ in range(k_max + 1)]
    for j in range(k_min, m + 1):
        dp[1][j] = (seg_cost(0, j), ())
    for k in range(2, k_max + 1):
        for j in range(k * k_min, m + 1):
            options = [
                (dp[k - 1][c][0] + seg_cost(c, j), (*dp[k - 1][c][1], c))
                for c in range((k - 1) * k_min, j - k_min + 1)
                if c in dp[k - 1]
            ]
            if options:
                dp[k][j] = min(options)
    return {k: dp[k][m] for k in range(1, k_max + 1) if m in dp[k]}


def find_protocol_breakpoints(
    sizes, times, max_breakpoints=2, min_sizes_per_segment=3, source="samples"
):
    """Find up to ``max_breakpoints`` regime changes (protocol switches) in ping-pong data.

    Exhaustive search (dynamic programming) over splits of the distinct measured
    sizes, each segment having at least ``min_sizes_per_segment`` sizes and its own
    postal fit (relative least squares on the median time per size). The number of
    segments k (1 to max_breakpoints + 1) minimises
    a penalised score with 3k - 1 parameters (alpha, beta per segment plus each
    breakpoint location) for m sizes:

    * with repetitions (>= 3 at most sizes): SSE / sigma^2 + 2 ln(m) (3k - 1), where
      sigma^2 is the variance of a median time, estimated from the spread of the
      repetitions (MAD of log time, times pi/2 over the repetition count);
    * otherwise BIC: m ln(SSE / m) + ln(m) (3k - 1).

    The doubled penalty in the first form pays for the breakpoint being *searched*
    (the best of many splits of pure noise still lowers the SSE), so data without a
    real protocol switch keep fewer segments.
    """
    s, t = _arrays(sizes, times, source)
    u, med = _medians(s, t)
    m = u.size
    if m < min_sizes_per_segment:
        raise InputError(
            source, "size_bytes", f"need at least {min_sizes_per_segment} distinct sizes (got {m})"
        )
    if m > 200:
        raise InputError(
            source, "size_bytes", f"too many distinct sizes for the search ({m} > 200)"
        )

    cost = {}

    def seg_cost(i, j):  # relative SSE of one postal fit over sizes u[i:j]
        if (i, j) not in cost:
            a, b = _relative_lsq(u[i:j], med[i:j])
            cost[(i, j)] = float(np.sum(((a + b * u[i:j]) - med[i:j]) ** 2 / med[i:j] ** 2))
        return cost[(i, j)]

    best = _best_splits(m, max_breakpoints + 1, min_sizes_per_segment, seg_cost)
    sigma2 = _median_noise_variance(s, t)
    n_par = {k: 3 * k - 1 for k in best}
    if sigma2 is not None:
        score = {k: sse / sigma2 + 2 * math.log(m) * n_par[k] for k, (sse, _) in best.items()}
    else:
        floor = 1e-10  # relative RMS of 1e-5: beyond this, exact fits are all "perfect"
        score = {
            k: m * math.log(max(sse / m, floor)) + math.log(m) * n_par[k]
            for k, (sse, _) in best.items()
        }
    k = min(score, key=lambda key: (score[key], key))
    sse, cuts = best[k]
    edges = [0, *cuts, m]
    segments = [(int(u[a]), int(u[b - 1])) for a, b in zip(edges[:-1], edges[1:])]
    return BreakpointSearch(tuple(int(u[c - 1]) for c in cuts), segments, float(sse), score)


def protocol_switches(
    sizes, times, max_regimes=4, max_switches=2, min_sizes_per_segment=3, source="samples"
):
    """Protocol switches among the regime changes of :func:`find_protocol_breakpoints`.

    Not every change of slope is a protocol switch: on a shared-memory transport the
    per-byte cost also rises once messages leave the caches, and a postal fit per
    segment would otherwise spend a "protocol" on that. An MPI switches protocol
    where the next one pays off for larger messages: it costs more to start (higher
    alpha) or moves bytes faster (lower beta), as every step of 004 Table 1 does.
    A regime that is slower per byte *without* costing more to start is a capacity
    effect (caches, memory bandwidth), not a protocol: such boundaries are merged
    back into their neighbours and reported. At most ``max_switches`` switches are
    kept (those with the largest change of alpha).

    Returns ``(BreakpointSearch, regime_changes)``: the search with only the switches,
    and the sizes of the boundaries judged capacity effects (reported, not modelled).
    """
    found = find_protocol_breakpoints(
        sizes,
        times,
        max_breakpoints=max_regimes - 1,
        min_sizes_per_segment=min_sizes_per_segment,
        source=source,
    )
    s, t = _arrays(sizes, times, source)
    u, med = _medians(s, t)
    fits = [
        _relative_lsq(u[(u >= lo) & (u <= hi)], med[(u >= lo) & (u <= hi)])
        for lo, hi in found.segments
    ]
    switches, capacity = [], []
    for i, bp in enumerate(found.breakpoints):
        (a0, b0), (a1, b1) = fits[i], fits[i + 1]
        if b1 > b0 and a1 <= a0:
            capacity.append(bp)
        else:
            switches.append((abs(a1 - a0), bp))
    kept = sorted(bp for _, bp in sorted(switches, reverse=True)[:max_switches])
    capacity = tuple(sorted(capacity + [bp for _, bp in switches if bp not in kept]))
    edges = [None, *kept, None]
    segments = []
    for lo_bp, hi_bp in zip(edges[:-1], edges[1:]):
        lo = int(u[0]) if lo_bp is None else int(u[u > lo_bp][0])
        segments.append((lo, int(u[-1]) if hi_bp is None else hi_bp))
    return BreakpointSearch(tuple(kept), segments, found.rel_sse, found.score_by_segments), capacity


# ---------------------------------------------------------------------- max-rate


@dataclass
class MaxRateFit:
    """Result of :func:`fit_maxrate` (004 eq. 2)."""

    alpha_s: float
    beta_s_per_byte: float
    R_N_Bps: float
    min_size_bytes: int
    node_rate_Bps_by_pairs: dict  # pairs K -> fitted node rate min(R_N, K R_b)
    limited_pairs: list  # the K whose node rate is injection-limited

    @property
    def Rb_Bps(self):
        return math.inf if self.beta_s_per_byte == 0 else 1.0 / self.beta_s_per_byte


def fit_maxrate(df, min_size_bytes=None, threshold=0.9, source="samples"):
    """Fit R_b and R_N of the max-rate model (eq. 2) from one- and multi-pair runs.

    Uses sizes >= ``min_size_bytes`` (default: the last segment found by
    :func:`find_protocol_breakpoints` on the single-pair data, i.e. rendezvous).
    alpha and R_b = 1/beta come from the ``pairs == 1`` samples. For each K > 1 a
    relative-error fit ``t = a + c s`` gives the node rate K / c = min(R_N, K R_b);
    K is injection-limited when that rate is below ``threshold`` * K R_b. R_N is the
    median node rate over limited K, or inf when none is limited (multi-pair
    per-pair rate not lower). An R_N within 1/threshold of K R_b is not detectable.
    """
    df = _frame(df, ("size_bytes", "time_s", "pairs"), source)
    single = df[df["pairs"] == 1]
    if single.empty:
        raise InputError(source, "pairs", "need samples with pairs == 1 to fit R_b")
    if min_size_bytes is None:
        search = find_protocol_breakpoints(single["size_bytes"], single["time_s"], source=source)
        min_size_bytes = search.segments[-1][0]
    sel = df[df["size_bytes"] >= min_size_bytes]
    one = fit_postal(
        sel.loc[sel["pairs"] == 1, "size_bytes"], sel.loc[sel["pairs"] == 1, "time_s"], source
    )
    rates, limited = {}, []
    for k in sorted(int(v) for v in sel["pairs"].unique() if v > 1):
        sub = sel[sel["pairs"] == k]
        if sub["size_bytes"].nunique() < 2:
            continue
        _, c = _relative_lsq(sub["size_bytes"].to_numpy(float), sub["time_s"].to_numpy(float))
        rates[k] = math.inf if c == 0 else k / c
        if rates[k] < threshold * k * one.Rb_Bps:
            limited.append(k)
    r_n = float(np.median([rates[k] for k in limited])) if limited else math.inf
    return MaxRateFit(one.alpha_s, one.beta_s_per_byte, r_n, int(min_size_bytes), rates, limited)


# ------------------------------------------------------------------ queue search

GAMMA_SEARCH = ("upper", "triangular")


@dataclass
class GammaFit:
    """Result of :func:`fit_gamma`."""

    gamma_s: float
    search: str
    n_cells: int  # (n_messages, size_bytes) cells with both orders
    median_rel_residual: float  # of the fitted difference, over those cells


def fit_gamma(df, search="upper", source="samples"):
    """Queue-search cost per element from HighVolumePingPong runs (004 Sec. 4.1).

    For each (n_messages, size_bytes) the median reversed time minus the median
    ordered time is the extra search work. Under the paper's upper bound (eq. 3,
    ``search="upper"``) reversed costs gamma n^2 and ordered gamma n, so the
    difference is gamma (n^2 - n); with ``search="triangular"`` reversed costs
    gamma n(n+1)/2 (Sec. 5) and the difference is gamma n(n-1)/2. gamma is the
    least-squares slope through the origin (clipped at 0), dominated by large n
    where the signal is largest. Cells with n = 1 carry no information.
    """
    if search not in GAMMA_SEARCH:
        raise InputError(source, "search", f"expected one of {GAMMA_SEARCH}, got {search!r}")
    df = _frame(df, ("n_messages", "size_bytes", "order", "time_s"), source)
    orders = set(df["order"].astype(str).str.lower())
    if not orders <= {"ordered", "reversed"}:
        raise InputError(
            source, "order", f"values must be 'ordered' or 'reversed', got {sorted(orders)}"
        )
    if orders != {"ordered", "reversed"}:
        raise InputError(source, "order", "need both ordered and reversed samples")
    df["order"] = df["order"].astype(str).str.lower()
    med = df.groupby(["n_messages", "size_bytes", "order"])["time_s"].median().unstack("order")
    med = med.dropna()
    n = med.index.get_level_values("n_messages").to_numpy(float)
    diff = (med["reversed"] - med["ordered"]).to_numpy()
    f = n * n - n if search == "upper" else n * (n - 1) / 2
    keep = f > 0
    if not keep.any():
        raise InputError(source, "n_messages", "need cells with n_messages >= 2 in both orders")
    f, diff = f[keep], diff[keep]
    gamma = max(0.0, float(np.sum(f * diff) / np.sum(f * f)))
    rel = np.abs(gamma * f - diff) / np.maximum(np.abs(diff), np.finfo(float).tiny)
    return GammaFit(gamma, search, int(keep.sum()), float(np.median(rel)))


def fit_queue_search(df, queues=None, mpi=None, source="samples"):
    """HighVolumePingPong time per order with the form chosen by fit quality (queue_search.py).

    ``df``: HVPP samples (as :func:`fit_gamma`). Each order's median one-way time per
    message count is fitted with every form of :mod:`commscope.models.queue_search` and
    the lowest BIC kept, with every candidate's scores and the residual per depth.
    With several sizes the smallest is used (the search dominates there). ``queues``:
    the run's ``queues`` table (ob1 queue lengths around each receive phase, from
    ``bench hvpingpong --queues``), kept per depth and order as evidence of which queue
    was walked. ``mpi`` names the MPI the runs used: the fit belongs to it.
    """
    from .queue_search import ORDERS, QueueSearchModel, select_form

    df = _frame(df, ("n_messages", "size_bytes", "order", "time_s"), source)
    df["order"] = df["order"].astype(str).str.lower()
    bad = set(df["order"]) - set(ORDERS)
    if bad:
        raise InputError(
            source, "order", f"values must be 'ordered' or 'reversed', got {sorted(bad)}"
        )
    size = int(df["size_bytes"].min())
    df = df[df["size_bytes"] == size]
    fits = {}
    for order, sub in df.groupby("order", sort=True):
        med = sub.groupby("n_messages")["time_s"].median()
        fits[order] = select_form(med.index.to_numpy(float), med.to_numpy(float), order)
    locality = None
    if "locality" in df.columns and df["locality"].nunique() == 1:
        locality = canonical_locality(df["locality"].iloc[0], source, "locality")
    rows = []
    if queues is not None and len(queues):
        q = pd.DataFrame(queues)
        q = q[q["size_bytes"] == size] if "size_bytes" in q else q
        cols = ["unexpected_before_post", "posted_after_post", "unexpected_after_post"]
        if all(c in q for c in cols) and q[cols].notna().any().any():
            g = q.groupby(["n_messages", "order", "initiator"])[cols].median().reset_index()
            rows = [
                {
                    k: (
                        None
                        if isinstance(v, float) and math.isnan(v)
                        else (int(v) if k != "order" else str(v))
                    )
                    for k, v in r.items()
                }
                for r in g.to_dict("records")
            ]
    return QueueSearchModel(
        orders=fits, size_bytes=size, locality=locality, mpi=mpi, queues=rows, source=str(source)
    )


# ------------------------------------------------------------------ fit quality

#: A protocol segment needs this many distinct sizes (a factor 4 in size on the usual
#: doubling grid) and a finite bandwidth: a busy machine gave "short <= 8 B" with beta = 0.
MIN_SIZES_PER_SEGMENT = 3
#: A fit whose median relative error exceeds this is flagged in the table, the machine model
#: and the report.
MAX_MEDIAN_REL_ERROR = 0.10
#: Bootstrap replicas for the confidence intervals (repetitions resampled per size).
BOOTSTRAP_REPLICAS = 200
#: Fewer for R_N and gamma, whose every replica is a whole multi-pair or HVPP fit.
SLOW_REPLICAS = 50
CI_LEVEL = 0.95


def _interval(values):
    """Percentile interval of bootstrap replicas (inf-safe), as (lo, hi)."""
    v = np.asarray(values, dtype=float)
    tail = (1 - CI_LEVEL) / 2 * 100  # no interpolation: an infinite bandwidth stays inf, not nan
    return (
        float(np.percentile(v, tail, method="lower")),
        float(np.percentile(v, 100 - tail, method="higher")),
    )


def bootstrap_ci(frame, statistic, replicas=BOOTSTRAP_REPLICAS, by="size_bytes", seed=0):
    """{name: (lo, hi)}: ``statistic(frame) -> {name: value}`` over resampled repetitions.

    The kept repetitions are resampled with replacement inside each size (or cell of
    ``by``), so every size keeps its weight; seeded, so a fit is reproducible.
    """
    rng = np.random.default_rng(seed)
    groups = list(frame.groupby(by, sort=False).indices.values())
    draws = []
    for _ in range(int(replicas)):
        picks = np.concatenate([idx[rng.integers(0, idx.size, idx.size)] for idx in groups])
        draws.append(statistic(frame.iloc[picks]))
    return {name: _interval([d[name] for d in draws]) for name in draws[0]}


def _postal_statistic(frame):
    alpha, beta = _relative_lsq(
        frame["size_bytes"].to_numpy(float), frame["time_s"].to_numpy(float)
    )
    return {"alpha_s": alpha, "Rb_Bps": math.inf if beta == 0 else 1.0 / beta}


def quality_flags(fit):
    """Why a postal fit should not be trusted (empty when it can be)."""
    flags = []
    if fit.median_rel_error > MAX_MEDIAN_REL_ERROR:
        flags.append(
            f"median relative error {fit.median_rel_error:.0%} > {MAX_MEDIAN_REL_ERROR:.0%}"
        )
    if not fit.beta_s_per_byte > 0:
        flags.append("bandwidth not measurable here (beta = 0: infinite bandwidth)")
    if len(fit.rel_error_by_size) < MIN_SIZES_PER_SEGMENT:
        flags.append(f"only {len(fit.rel_error_by_size)} sizes (< {MIN_SIZES_PER_SEGMENT})")
    return flags


def fit_protocol(sizes, times, capacity_changes=(), source="samples"):
    """``(ProtocolParams, PostalFit)`` of one protocol's sizes: the postal fit, and where
    one of ``capacity_changes`` (regime changes judged capacity effects, bytes) has
    ``MIN_SIZES_PER_SEGMENT`` sizes on each side, a capacity regime beyond it.

    Beyond the capacity C (the largest of those with enough sizes) the time stays
    continuous, ``T(C) + beta_beyond (s - C)``, as a slope change without a jump is what
    :func:`protocol_switches` calls a capacity effect; ``beta_beyond`` minimises the
    relative error there. The fit quality covers every size, the bootstrap (by the
    caller) the sizes up to C.
    """
    s, t = _arrays(sizes, times, source)
    for c in sorted(capacity_changes, reverse=True):
        below, above = s <= c, s > c
        if (
            np.unique(s[below]).size < MIN_SIZES_PER_SEGMENT
            or np.unique(s[above]).size < MIN_SIZES_PER_SEGMENT
        ):
            continue
        low = fit_postal(s[below], t[below], source)
        anchor = low.alpha_s + low.beta_s_per_byte * c
        x, y = (s[above] - c) / t[above], 1.0 - anchor / t[above]
        par = ProtocolParams(
            low.alpha_s,
            low.beta_s_per_byte,
            capacity_bytes=int(c),
            beta_beyond_s_per_byte=max(float(x @ y / (x @ x)), 0.0),
        )
        break
    else:
        fit = fit_postal(s, t, source)
        return ProtocolParams(fit.alpha_s, fit.beta_s_per_byte), fit
    u, med = _medians(s, t)
    rel = (par.postal_s(u) - med) / med
    return par, PostalFit(
        par.alpha_s,
        par.beta_s_per_byte,
        int(s.size),
        float(np.max(np.abs(rel))),
        float(np.median(np.abs(rel))),
        {int(k): float(v) for k, v in zip(u, rel)},
    )


def _segment_fit(single, lo, hi, source):
    seg = single[(single["size_bytes"] >= lo) & (single["size_bytes"] <= hi)]
    if seg["size_bytes"].nunique() < 2:
        return None
    return fit_postal(seg["size_bytes"], seg["time_s"], source)


def _usable_segments(single, segments, source):
    """Merge protocol segments without enough sizes or a finite bandwidth into a neighbour.

    The neighbour is the one whose merged fit has the lower median error, so a short
    noisy segment joins the protocol it most resembles.
    """
    segments = list(segments)
    while len(segments) > 1:
        bad = None
        for i, (lo, hi) in enumerate(segments):
            fit = _segment_fit(single, lo, hi, source)
            if (
                fit is None
                or len(fit.rel_error_by_size) < MIN_SIZES_PER_SEGMENT
                or not fit.beta_s_per_byte > 0
            ):
                bad = i
                break
        if bad is None:
            break
        options = [j for j in (bad - 1, bad + 1) if 0 <= j < len(segments)]
        merged = {
            j: (min(segments[bad][0], segments[j][0]), max(segments[bad][1], segments[j][1]))
            for j in options
        }
        j = min(options, key=lambda k: _segment_fit(single, *merged[k], source).median_rel_error)
        segments[min(bad, j)] = merged[j]
        del segments[max(bad, j)]
    return segments


def breakpoint_contradictions(machine_model):
    """Sentences for found protocol switches that no MPI_T eager limit explains.

    A switch found between sizes b (largest of the lower protocol) and the next
    measured size is explained by an MPI_T limit L with b/2 < L <= 4 b (limits may
    count a header, and sizes are measured in powers of two).
    """
    limits = {k: v for k, v in machine_model.mpi_eager_limits.items() if v and v > 0}
    if not limits:
        return []
    out = []
    for loc, bp in sorted(machine_model.breakpoints.items()):
        for name, b in (("short", bp.short_max_bytes), ("eager", bp.eager_max_bytes)):
            if b is None or any(b / 2 < v <= 4 * max(b, 1) for v in limits.values()):
                continue
            shown = ", ".join(
                f"{k} {format_bytes(v)}" for k, v in sorted(limits.items(), key=lambda kv: kv[1])
            )
            out.append(
                f"{loc}: the switch from {name} above {format_bytes(b)} matches no eager "
                "limit the MPI "
                f"reports through MPI_T ({shown}); it may be noise or a cache effect, "
                "not a protocol"
            )
    return out


# ------------------------------------------------------------------ whole machine model


def fit_machine_model(
    df,
    mpi_eager_limits=None,
    machine=None,
    hvpp=None,
    source="samples",
    hvpp_queues=None,
    hvpp_mpi=None,
    hvpp_source="hvpp samples",
):
    """Fit a :class:`MachineModel` from ping-pong samples (and optionally HVPP samples).

    Per locality: protocol breakpoints (:func:`protocol_switches` on the ``pairs == 1``
    samples; slope changes that are capacity effects such as caches go to
    ``machine["regime_changes_bytes"]``), then one postal fit per
    segment with its fit quality, and a capacity regime where a segment has enough
    sizes beyond such a change (:func:`fit_protocol`).
    Segments are named from the top: the last is always rendezvous, the one below it
    eager, the first short, so with two segments there is no short protocol and with
    one everything is rendezvous. When multi-pair samples exist at a locality,
    :func:`fit_maxrate` on the rendezvous sizes sets that protocol's R_N (on one node:
    the limit the concurrent pairs share; :mod:`commscope.models.message_time` uses it
    at its locality).

    ``mpi_eager_limits`` (MPI_T cvar name -> bytes, e.g. from the MPI library) is
    stored next to the found breakpoints; see :func:`compare_breakpoints`. ``hvpp``,
    HighVolumePingPong samples, sets gamma via :func:`fit_gamma` (upper bound) and the
    queue-search model via :func:`fit_queue_search` (``hvpp_queues``: their queue-length
    table, ``hvpp_mpi``: the MPI they ran with).
    """
    df = _frame(df, ("size_bytes", "time_s", "locality"), source)
    if "pairs" not in df.columns:
        df["pairs"] = 1
    else:
        df = _frame(df, ("size_bytes", "time_s", "locality", "pairs"), source)
    df["locality"] = [canonical_locality(v, source, "locality") for v in df["locality"]]
    params, breakpoints, regime_changes = {}, {}, {}
    for loc, sub in df.groupby("locality", sort=False):
        single = sub[sub["pairs"] == 1]
        if single.empty:
            raise InputError(source, "pairs", f"{loc}: need samples with pairs == 1")
        # regimes may be short (a cache knee near the largest size); protocols may not
        search, continuous = protocol_switches(
            single["size_bytes"], single["time_s"], source=f"{source} ({loc})"
        )
        if continuous:
            regime_changes[loc] = list(continuous)
        segments = _usable_segments(single, search.segments, f"{source} ({loc})")
        names = PROTOCOLS[-len(segments) :]
        for proto, (lo, hi) in zip(names, segments):
            seg = single[(single["size_bytes"] >= lo) & (single["size_bytes"] <= hi)]
            par, fit = fit_protocol(
                seg["size_bytes"], seg["time_s"], continuous, f"{source} ({loc}, {proto})"
            )
            below = (
                seg if par.capacity_bytes is None else seg[seg["size_bytes"] <= par.capacity_bytes]
            )
            par.fit = fit.quality()
            par.fit.ci95 = bootstrap_ci(below[["size_bytes", "time_s"]], _postal_statistic)
            par.fit.flags = quality_flags(fit)
            params[(proto, loc)] = par
        bps = [hi for lo, hi in segments[:-1]]
        breakpoints[loc] = Breakpoints(
            short_max_bytes=bps[0] if len(bps) == 2 else None,
            eager_max_bytes=bps[-1] if bps else None,
        )
        if (sub["pairs"] > 1).any():

            def r_n(frame, lo=segments[-1][0], loc=loc):
                return {
                    "R_N_Bps": fit_maxrate(
                        frame, min_size_bytes=lo, source=f"{source} ({loc})"
                    ).R_N_Bps
                }

            rendezvous = params[("rendezvous", loc)]
            rendezvous.R_N_Bps = r_n(sub)["R_N_Bps"]
            if math.isfinite(rendezvous.R_N_Bps):
                rendezvous.fit.ci95.update(
                    bootstrap_ci(sub, r_n, replicas=SLOW_REPLICAS, by=["pairs", "size_bytes"])
                )
    machine_model = MachineModel(
        params=params,
        breakpoints=breakpoints,
        mpi_eager_limits=dict(mpi_eager_limits or {}),
        gamma_s=fit_gamma(hvpp, source=hvpp_source).gamma_s if hvpp is not None else None,
        machine=dict(machine or {}),
        queue_search=(
            fit_queue_search(hvpp, hvpp_queues, hvpp_mpi, source=hvpp_source)
            if hvpp is not None
            else None
        ),
    )
    if hvpp is not None:
        cells = hvpp.reset_index(drop=True)
        machine_model.machine["gamma_ci95_s"] = list(
            bootstrap_ci(
                cells,
                lambda f: {"gamma_s": fit_gamma(f, source=hvpp_source).gamma_s},
                replicas=SLOW_REPLICAS,
                by=["n_messages", "size_bytes", "order"],
            )["gamma_s"]
        )
    if regime_changes:  # slope changes without a jump (e.g. caches): modelled where
        # a protocol has enough sizes beyond one (fit_protocol), reported either way
        machine_model.machine["regime_changes_bytes"] = regime_changes
    qs_flags = machine_model.queue_search.flags() if machine_model.queue_search else {}
    warnings = (
        breakpoint_contradictions(machine_model)
        + [
            f"queue search, {order}: fit flagged: {'; '.join(f)}"
            for order, f in qs_flags.items()
            if f
        ]
        + [
            f"{loc}, {proto}: fit flagged: {'; '.join(p.fit.flags)}"
            for (proto, loc), p in sorted(params.items())
            if p.fit and p.fit.flags
        ]
    )
    if warnings:
        machine_model.machine["warnings"] = machine_model.machine.get("warnings", []) + warnings
    return check_machine_model(machine_model, source)


def compare_breakpoints(machine_model):
    """Table of found breakpoints per locality next to the MPI's reported eager limits."""
    rows = []
    for loc in machine_model.localities:
        bp = machine_model.breakpoints.get(loc, Breakpoints())
        row = {
            "locality": loc,
            "short_max_bytes": bp.short_max_bytes,
            "eager_max_bytes": bp.eager_max_bytes,
        }
        row.update({f"mpi:{k}": v for k, v in sorted(machine_model.mpi_eager_limits.items())})
        rows.append(row)
    return pd.DataFrame(rows)
