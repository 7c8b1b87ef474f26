"""Thread-arrival statistics of Marts et al. (2023), Sec. 4: are per-thread compute times
normal, are there laggards, and how much idle time could early-bird communication reclaim?

Input is a tidy DataFrame, one row per thread per parallel region instance, with columns
``trial, rank, iteration, thread, compute_time_s`` and optionally ``region`` (a name for
the measured parallel-for region; every analysis is done per region).

Aggregation levels (Sec. 4.1), each also split by ``region`` when present:

* ``application``: every sample of the data set, all trials, ranks and iterations (the
  paper's 768,000 samples per application);
* ``application-iteration``: one iteration across all trials, ranks and threads (the
  paper's 3,840 samples = 10 trials x 8 ranks x 48 threads);
* ``process-iteration``: the threads of one rank in one iteration of one trial (48).

Everything is vectorised over groups: samples are sorted once by (group, time), and the
groups of each distinct size are gathered into a ``(groups, threads)`` matrix that scipy's
tests (``axis=1``) and numpy reductions work on in one call.

Definitions from Sec. 4.2, per process-iteration with arrival (compute) times ``t_i`` of
``n`` threads:

* laggard: ``max(t) - median(t) > threshold`` (1 ms in the paper); the laggard thread is
  the one with ``max(t)``;
* reclaimable time: ``R = sum_i (max(t) - t_i)``; *average reclaimable time* is the mean
  of ``R`` over all process-iterations;
* *ratio of time spent idle*, as printed: ``R / (n * max(t))``, averaged over
  process-iterations (``idle_ratio_printed``);
* the range-normalised variant ``R / (n * (max(t) - min(t)))`` (``idle_ratio_range``),
  which comes closer to the paper's reported ratios (seeds README); groups with
  ``max == min`` have no defined value and are left out of its mean.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import InputError
from ..runs import missing_names
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")
stats = lazy("scipy.stats")


REQUIRED_COLUMNS = ("trial", "rank", "iteration", "thread", "compute_time_s")
LEVEL_KEYS = {
    "application": [],
    "application-iteration": ["iteration"],
    "process-iteration": ["trial", "rank", "iteration"],
}
TESTS = ("dagostino", "shapiro", "anderson")
#: Smallest group each test is applied to; smaller groups count as "not applicable".
#: D'Agostino's skewness test needs n >= 8. scipy sets no floor for Anderson-Darling;
#: commscope uses the same n >= 8 so both tests cover the same groups.
MIN_SIZE = {"dagostino": 8, "shapiro": 3, "anderson": 8}
# D'Agostino & Stephens (1986) 15/10/5/2.5/1% critical values, normal case (as scipy).
_AD_NORMAL_CRITICAL = {15.0: 0.561, 10.0: 0.631, 5.0: 0.752, 2.5: 0.873, 1.0: 1.035}


# ----------------------------------------------------------------------------- input


def validate_arrivals(df: pd.DataFrame, source="data") -> pd.DataFrame:
    """Check columns and values; return a copy with clean dtypes (region filled in)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(source, missing[0], f"column missing (need {', '.join(REQUIRED_COLUMNS)})")
    out = df[[c for c in ("region", *REQUIRED_COLUMNS) if c in df.columns]].copy()
    if out.empty:
        raise InputError(source, None, "no samples")
    for col in ("trial", "rank", "iteration", "thread"):
        v = pd.to_numeric(out[col], errors="coerce")
        if v.isna().any() or (v != np.floor(v)).any():
            raise InputError(source, col, "must hold integers")
        out[col] = v.astype(np.int64)
    t = pd.to_numeric(out["compute_time_s"], errors="coerce")
    bad = ~np.isfinite(t.to_numpy(float))
    if bad.any():
        raise InputError(
            source, "compute_time_s", f"non-numeric value in row {int(np.argmax(bad)) + 1}"
        )
    if (t < 0).any():
        raise InputError(source, "compute_time_s", "times must be >= 0 seconds")
    out["compute_time_s"] = t.astype(float)
    if "region" not in out.columns:
        out.insert(0, "region", "all")
    elif (missing := missing_names(out["region"]).to_numpy()).any():
        raise InputError(
            source, "region", f'missing name (null or "nan") in row {int(np.argmax(missing)) + 1}'
        )
    out["region"] = out["region"].astype(str)
    dup = out.duplicated(["region", "trial", "rank", "iteration", "thread"])
    if dup.any():
        raise InputError(
            source,
            "thread",
            f"duplicate sample for one thread (row {int(np.argmax(dup.to_numpy())) + 1})",
        )
    return out


def read_arrivals(path) -> pd.DataFrame:
    """Read a CSV or Parquet file of per-thread compute times and validate it."""
    from ..tablefile import read_table

    return validate_arrivals(read_table(path), source=path)


# ----------------------------------------------------------------------------- grouping


@dataclass
class Groups:
    """Samples sorted by (group, time): group ``g`` is ``values[starts[g]:starts[g]+sizes[g]]``."""

    keys: pd.DataFrame  # one row per group, in group order
    values: np.ndarray  # compute times, sorted within each group
    threads: np.ndarray  # thread id of each sorted value
    starts: np.ndarray
    sizes: np.ndarray

    def blocks(self, min_size=1):
        """Yield ``(group_indices, matrix)`` per distinct group size (rows sorted ascending)."""
        for n in np.unique(self.sizes):
            if n < min_size:
                continue
            idx = np.flatnonzero(self.sizes == n)
            yield idx, self.values[self.starts[idx, None] + np.arange(n)]


def group_samples(df: pd.DataFrame, level: str) -> Groups:
    """Group samples at an aggregation level (see module docstring).

    Frames from :func:`read_arrivals`/:func:`validate_arrivals` are used as they are;
    any other frame is validated first.
    """
    if level not in LEVEL_KEYS:
        raise InputError("level", "level", f"unknown level '{level}'; one of {list(LEVEL_KEYS)}")
    if "region" not in df.columns:  # a raw frame: validate (this also adds region)
        df = validate_arrivals(df)
    keys = ["region", *LEVEL_KEYS[level]]
    g = df.groupby(keys, sort=True, observed=True)
    codes = g.ngroup().to_numpy()
    key_table = g.size().reset_index(name="n_samples")
    values = df["compute_time_s"].to_numpy(float)
    order = np.lexsort((values, codes))
    sizes = key_table["n_samples"].to_numpy()
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return Groups(key_table, values[order], df["thread"].to_numpy()[order], starts, sizes)


# ----------------------------------------------------------------------------- normality


def ad_critical_value(n: int, significance_pct: float = 5.0) -> float:
    """Anderson-Darling critical value for normality with estimated mean/sd, sample size n.

    The tabulated value divided by ``1 + 0.75/n + 2.25/n^2``, exactly what
    ``scipy.stats.anderson(x).critical_values`` reports (scipy 1.17 deprecates that
    attribute, so the table is kept here; a test checks the two agree).
    """
    # Rounded to 3 decimals as scipy does, so pass/fail decisions agree with it exactly.
    return round(_AD_NORMAL_CRITICAL[significance_pct] / (1.0 + 0.75 / n + 2.25 / n**2), 3)


def anderson_statistic(sorted_rows: np.ndarray) -> np.ndarray:
    """A^2 for normality of each row (rows sorted ascending), as ``scipy.stats.anderson``."""
    n = sorted_rows.shape[1]
    mean = sorted_rows.mean(axis=1, keepdims=True)
    sd = sorted_rows.std(axis=1, ddof=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = (sorted_rows - mean) / sd
    i = np.arange(1, n + 1)
    s = np.sum((2 * i - 1.0) / n * (stats.norm.logcdf(w) + stats.norm.logsf(w[:, ::-1])), axis=1)
    return -n - s


def normality_per_group(df: pd.DataFrame, level: str, alpha: float = 0.05) -> pd.DataFrame:
    """Per group: D'Agostino and Shapiro-Wilk p-values, A^2 and its 5% critical value, and
    ``<test>_pass`` (True = fails to reject normality; NaN = not applicable: group too small
    or all values equal)."""
    if not 0 < alpha < 1:
        raise InputError("--alpha", "alpha", "must be between 0 and 1")
    if alpha != 0.05:
        # Anderson-Darling is tabulated at fixed levels; the paper uses 5%.
        pct = 100 * alpha
        if pct not in _AD_NORMAL_CRITICAL:
            raise InputError(
                "--alpha", "alpha", f"Anderson-Darling needs one of {sorted(_AD_NORMAL_CRITICAL)} %"
            )
    groups = group_samples(df, level)
    ng = len(groups.sizes)
    out = {
        name: np.full(ng, np.nan)
        for name in ("dagostino_p", "shapiro_p", "anderson_stat", "anderson_crit")
    }
    for idx, mat in groups.blocks(min_size=3):
        n = mat.shape[1]
        degenerate = mat[:, -1] == mat[:, 0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # small-n kurtosis and large-n Shapiro notes
            if n >= MIN_SIZE["dagostino"]:
                out["dagostino_p"][idx] = stats.normaltest(mat, axis=1).pvalue
            out["shapiro_p"][idx] = stats.shapiro(mat, axis=1).pvalue
            if n >= MIN_SIZE["anderson"]:
                out["anderson_stat"][idx] = anderson_statistic(mat)
                out["anderson_crit"][idx] = ad_critical_value(n, 100 * alpha)
        for name in out:
            col = out[name]
            col[idx[degenerate]] = np.nan
    res = groups.keys.copy()
    for name, col in out.items():
        res[name] = col
    for test, value, ok in (
        ("dagostino", "dagostino_p", res["dagostino_p"] > alpha),
        ("shapiro", "shapiro_p", res["shapiro_p"] > alpha),
        ("anderson", "anderson_stat", res["anderson_stat"] <= res["anderson_crit"]),
    ):
        res[f"{test}_pass"] = ok.astype("boolean").mask(res[value].isna())
    return res


def normality_summary(
    df: pd.DataFrame, alpha: float = 0.05, levels=tuple(LEVEL_KEYS)
) -> pd.DataFrame:
    """Table 1 of Marts et al. at every level: per region, level and test, how many groups
    were testable and what fraction passed (failed to reject normality) or rejected it."""
    return pd.concat(
        [_summarise_groups(normality_per_group(df, level, alpha), level) for level in levels],
        ignore_index=True,
    )


# ----------------------------------------------------------------------------- laggards, idle time


def process_iterations(df: pd.DataFrame, threshold_s: float = 1e-3) -> pd.DataFrame:
    """One row per process-iteration: spread statistics, reclaimable time, idle ratios and
    laggard flag (``max - median > threshold_s``) with the laggard's thread id."""
    if not (threshold_s >= 0 and np.isfinite(threshold_s)):
        raise InputError("--threshold", "threshold_s", "must be a number of seconds >= 0")
    groups = group_samples(df, "process-iteration")
    ng = len(groups.sizes)
    cols = {
        name: np.full(ng, np.nan)
        for name in (
            "min_s",
            "median_s",
            "max_s",
            "reclaimable_s",
            "idle_ratio_printed",
            "idle_ratio_range",
        )
    }
    for idx, mat in groups.blocks():
        n = mat.shape[1]
        lo, hi = mat[:, 0], mat[:, -1]
        med = np.median(mat, axis=1)
        reclaim = n * hi - mat.sum(axis=1)
        cols["min_s"][idx], cols["median_s"][idx], cols["max_s"][idx] = lo, med, hi
        cols["reclaimable_s"][idx] = reclaim
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["idle_ratio_printed"][idx] = np.where(hi > 0, reclaim / (n * hi), np.nan)
            cols["idle_ratio_range"][idx] = np.where(hi > lo, reclaim / (n * (hi - lo)), np.nan)
    res = groups.keys.rename(columns={"n_samples": "threads"})
    for name, col in cols.items():
        res[name] = col
    res["excess_s"] = res["max_s"] - res["median_s"]
    res["laggard"] = res["excess_s"] > threshold_s
    # The slowest thread is the last of its group in (group, time) order.
    res["slowest_thread"] = groups.threads[groups.starts + groups.sizes - 1]
    return res


def find_laggards(df: pd.DataFrame, threshold_s: float = 1e-3) -> pd.DataFrame:
    """Process-iterations whose slowest thread is more than ``threshold_s`` behind the median.

    Columns: ``region, trial, rank, iteration, thread`` (the laggard), ``max_s``,
    ``median_s``, ``excess_s``.
    """
    pi = process_iterations(df, threshold_s)
    lag = pi[pi["laggard"]]
    return (
        lag[
            [
                "region",
                "trial",
                "rank",
                "iteration",
                "slowest_thread",
                "max_s",
                "median_s",
                "excess_s",
            ]
        ]
        .rename(columns={"slowest_thread": "thread"})
        .reset_index(drop=True)
    )


def idle_summary(df: pd.DataFrame, threshold_s: float = 1e-3, per_iter=None) -> pd.DataFrame:
    """Per region: average reclaimable time, both idle ratios, laggard fraction, mean median."""
    pi = per_iter if per_iter is not None else process_iterations(df, threshold_s)
    agg = pi.groupby("region", sort=True).agg(
        process_iterations=("reclaimable_s", "size"),
        avg_reclaimable_s=("reclaimable_s", "mean"),
        idle_ratio_printed=("idle_ratio_printed", "mean"),
        idle_ratio_range=("idle_ratio_range", "mean"),
        laggard_fraction=("laggard", "mean"),
        mean_median_arrival_s=("median_s", "mean"),
    )
    return agg.reset_index()


# ----------------------------------------------------------------------------- plots' data


def iteration_percentiles(df: pd.DataFrame, percentiles=(5, 25, 50, 75, 95)) -> pd.DataFrame:
    """Percentiles of all samples of each application iteration (the percentile-over-
    iteration plots, Figs 4, 6, 8), plus the inter-quartile range ``iqr_s``."""
    groups = group_samples(df, "application-iteration")
    q = np.asarray(percentiles, dtype=float)
    if q.size == 0 or np.any((q < 0) | (q > 100)):
        raise InputError("percentiles", "percentiles", "must lie in [0, 100]")
    vals = np.full((len(groups.sizes), q.size), np.nan)
    iqr = np.full(len(groups.sizes), np.nan)
    for idx, mat in groups.blocks():
        vals[idx] = np.percentile(mat, q, axis=1).T
        p25, p75 = np.percentile(mat, [25, 75], axis=1)
        iqr[idx] = p75 - p25
    res = groups.keys.copy()
    for j, p in enumerate(q):
        res[f"p{p:g}_s"] = vals[:, j]
    res["iqr_s"] = iqr
    return res


CLASSES = ("normal", "non-normal", "laggard")


def example_histograms(
    df: pd.DataFrame,
    threshold_s: float = 1e-3,
    bin_width_s=None,
    per_iter=None,
    per_group_normality=None,
) -> dict:
    """One representative process-iteration per class, with its histogram (Figs 5, 7, 9).

    Classes: ``laggard`` (max - median > threshold), ``normal`` (no laggard, all three tests
    fail to reject), ``non-normal`` (no laggard, Shapiro-Wilk rejects). The representative
    is the member whose spread (``laggard``: excess) is the median of its class. Returns
    ``{class: {"keys": {...}, "values_s": array, "bin_edges_s": array, "counts": array,
    "class_fraction": float}}``; a class with no member is absent.
    """
    pi = per_iter if per_iter is not None else process_iterations(df, threshold_s)
    norm = (
        per_group_normality
        if per_group_normality is not None
        else normality_per_group(df, "process-iteration")
    )
    all_pass = (norm["dagostino_pass"] & norm["shapiro_pass"] & norm["anderson_pass"]).fillna(False)
    sw_reject = (~norm["shapiro_pass"]).fillna(False)
    lag = pi["laggard"].to_numpy()
    members = {
        "laggard": lag,
        "normal": ~lag & all_pass.to_numpy(bool),
        "non-normal": ~lag & sw_reject.to_numpy(bool),
    }
    spread = (pi["max_s"] - pi["min_s"]).to_numpy()
    groups = group_samples(df, "process-iteration")
    out = {}
    for cls, mask in members.items():
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            continue
        score = pi["excess_s"].to_numpy()[idx] if cls == "laggard" else spread[idx]
        g = idx[np.argsort(score, kind="stable")[idx.size // 2]]
        vals = groups.values[groups.starts[g] : groups.starts[g] + groups.sizes[g]]
        if bin_width_s:
            _check_bins(bin_width_s, vals[-1] - vals[0])
            lo = np.floor(vals[0] / bin_width_s) * bin_width_s
            edges = np.arange(lo, vals[-1] + bin_width_s, bin_width_s)
            if edges.size < 2:
                edges = np.array([lo, lo + bin_width_s])
        else:
            edges = np.histogram_bin_edges(vals, bins="auto")
        counts, edges = np.histogram(vals, bins=edges)
        keys = {
            k: (v.item() if hasattr(v, "item") else v)
            for k, v in pi.iloc[g][["region", "trial", "rank", "iteration"]].items()
        }
        out[cls] = {
            "keys": keys,
            "values_s": vals,
            "bin_edges_s": edges,
            "counts": counts,
            "class_fraction": float(mask.mean()),
        }
    return out


# ----------------------------------------------------------------------------- everything


@dataclass
class ArrivalReport:
    normality: pd.DataFrame
    summary: pd.DataFrame
    laggards: pd.DataFrame
    percentiles: pd.DataFrame
    process_iterations: pd.DataFrame
    histograms: dict = field(default_factory=dict)
    threshold_s: float = 1e-3

    def to_dict(self):
        return {
            "threshold_s": self.threshold_s,
            "normality": self.normality.to_dict("records"),
            "summary": self.summary.to_dict("records"),
            "laggards": self.laggards.to_dict("records"),
            "percentiles": self.percentiles.to_dict("records"),
            "histograms": self.histograms,
        }


#: Most bins one example histogram may have (--bin-width): 8 bytes per edge and count.
MAX_HIST_BINS = 1_000_000


def _check_bins(bin_width_s, span_s):
    bins = span_s / bin_width_s + 2
    if bins > MAX_HIST_BINS:
        raise InputError(
            "--bin-width",
            None,
            f"{bin_width_s:g} s gives {bins:.3g} bins over a {span_s:.3g} s range of "
            f"compute times; at most {MAX_HIST_BINS:,} bins (use a width of at "
            f"least {span_s / (MAX_HIST_BINS - 2):.3g} s)",
        )


def analyse_arrivals(
    df: pd.DataFrame,
    threshold_s: float = 1e-3,
    alpha: float = 0.05,
    source="data",
    bin_width_s=None,
) -> ArrivalReport:
    """The whole Sec. 4 analysis of Marts et al. on one table of thread compute times."""
    if bin_width_s is not None and not (np.isfinite(bin_width_s) and bin_width_s > 0):
        raise InputError(
            "--bin-width", None, f"must be a positive number of seconds, got {bin_width_s!r}"
        )
    data = validate_arrivals(df, source)
    pi = process_iterations(data, threshold_s)
    per_group = normality_per_group(data, "process-iteration", alpha)
    normality = pd.concat(
        [
            normality_summary(data, alpha, levels=("application", "application-iteration")),
            _summarise_groups(per_group, "process-iteration"),
        ],
        ignore_index=True,
    )
    lag = pi[pi["laggard"]][
        ["region", "trial", "rank", "iteration", "slowest_thread", "max_s", "median_s", "excess_s"]
    ].rename(columns={"slowest_thread": "thread"})
    return ArrivalReport(
        normality=normality,
        summary=idle_summary(data, threshold_s, per_iter=pi),
        laggards=lag.reset_index(drop=True),
        percentiles=iteration_percentiles(data),
        process_iterations=pi,
        histograms=example_histograms(data, threshold_s, bin_width_s, pi, per_group),
        threshold_s=threshold_s,
    )


def _summarise_groups(per, level):
    """Fraction of groups passing/rejecting each test, per region (Table 1 layout)."""
    rows = []
    for region, sub in per.groupby("region", sort=True):
        for test in TESTS:
            passed = sub[f"{test}_pass"]
            tested = int(passed.notna().sum())
            n_pass = int(passed.sum(skipna=True))
            rows.append(
                {
                    "region": region,
                    "level": level,
                    "test": test,
                    "groups": len(sub),
                    "groups_tested": tested,
                    "groups_not_applicable": len(sub) - tested,
                    "fraction_pass": n_pass / tested if tested else np.nan,
                    "fraction_reject": (tested - n_pass) / tested if tested else np.nan,
                }
            )
    return pd.DataFrame(rows)
