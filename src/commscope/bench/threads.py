"""Thread-arrival benchmark driver (Marts et al. 2023, Sec. 3.1 and 4).

``cs_threads`` times an OpenMP compute phase exactly as the paper's Listing 1 (barrier,
per-thread start time, ``omp for nowait`` loop, per-thread end time) with the same
header applications use (``native/include/commscope_threadtiming.h``), and injects a
known imbalance: per-thread work drawn from a distribution (mean ``work``, standard
deviation ``sd``) plus laggards (probability ``laggard_prob`` per thread-iteration,
``laggard_extra`` seconds more).  Two tables:

* ``compute``: trial, rank, iteration, region, thread, start_s, end_s, compute_time_s
  (what the header measured; the input of :mod:`commscope.stats.arrivals`);
* ``injected``: trial, rank, iteration, thread, intended_time_s, laggard (ground truth).

:func:`compare_with_injected` puts the two side by side: laggards found vs injected,
reclaimable time and idle ratios measured vs expected from the intended times, and the
accuracy of the compute model (measured - intended).
"""

import sys

from ..benchspec.threads import BENCHMARK, COMPUTE_MODES, DISTRIBUTIONS  # noqa: F401
from ..errors import InputError
from ..launch import available_cores
from ..collect.ompt import bench_collector
from ..output import format_table
from ..stats import arrivals
from ..units import format_seconds
from .driver import run_benchmark
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: The run's parameters by default (the descriptor's, as run_threads names them).
DEFAULTS = {k: v for k, v in BENCHMARK.defaults().items() if k != "ompt"}


def run_threads(
    ranks=DEFAULTS["ranks"],
    threads=DEFAULTS["threads"],
    iterations=DEFAULTS["iterations"],
    trials=DEFAULTS["trials"],
    warmup=DEFAULTS["warmup"],
    work=DEFAULTS["work"],
    dist=DEFAULTS["dist"],
    sd=DEFAULTS["sd"],
    laggard_prob=DEFAULTS["laggard_prob"],
    laggard_extra=DEFAULTS["laggard_extra"],
    seed=DEFAULTS["seed"],
    compute=DEFAULTS["compute"],
    region=DEFAULTS["region"],
    ompt=False,
    **launch_kw,
):
    """Run ``cs_threads`` on ``ranks`` x ``threads`` and return the finished :class:`Run`.

    Every thread of every rank computes for an intended time per iteration:
    ``max(0, draw) + laggard * laggard_extra``, the draw from ``dist`` (constant,
    normal, uniform or exponential, each with mean ``work`` and standard deviation
    ``sd`` seconds; exponential is shifted: ``work - sd + Exp(sd)``), ``laggard`` being
    1 with probability ``laggard_prob``.  Draws are a hash of (seed, trial, rank,
    iteration, thread), so the same seed gives the same intended times.

    ``compute="spin"`` polls the clock until the deadline (holds the core, like real
    compute); ``"sleep"`` sleeps to it (frees the core: arrivals stay close to the
    intended times when threads outnumber cores).  ``warmup`` untimed iterations run
    before each trial.  ``ompt=True`` also times every thread through the OMPT
    tool (table ``threads``, see :mod:`commscope.collect.ompt`), for comparison with
    the Listing-1 timings (:func:`compare_ompt_with_listing1`).  ``launch_kw`` go to :func:`run_benchmark` (mpi_spec,
    runs_root, hosts, ranks_per_node, timeout, echo, ...).
    """
    ints = dict(ranks=ranks, threads=threads, iterations=iterations, trials=trials)
    for name, v in ints.items():
        if int(v) != v or v < 1:
            raise InputError(f"--{name}", None, f"must be an integer >= 1, got {v}")
    if int(warmup) != warmup or warmup < 0:
        raise InputError("--warmup", None, f"must be an integer >= 0, got {warmup}")
    for name, v in {"--compute": work, "--sd": sd, "--laggard-extra": laggard_extra}.items():
        if not np.isfinite(v) or v < 0:
            raise InputError(name, None, f"must be a number of seconds >= 0, got {v}")
    if not 0 <= laggard_prob <= 1:
        raise InputError("--laggard-prob", None, f"must lie in [0, 1], got {laggard_prob}")
    if dist not in DISTRIBUTIONS:
        raise InputError(
            "--dist", None, f"expected one of {', '.join(DISTRIBUTIONS)}, got {dist!r}"
        )
    if compute not in COMPUTE_MODES:
        raise InputError("--compute-mode", None, f"expected spin or sleep, got {compute!r}")
    if not region or "," in region or "\n" in region:
        raise InputError("--region", None, "must be a non-empty name without commas")
    if int(seed) != seed or seed < 0:
        raise InputError("--seed", None, f"must be an integer >= 0, got {seed}")
    params = dict(
        ranks=int(ranks),
        threads=int(threads),
        iterations=int(iterations),
        trials=int(trials),
        warmup=int(warmup),
        work_s=float(work),
        dist=dist,
        sd_s=float(sd),
        laggard_prob=float(laggard_prob),
        laggard_extra_s=float(laggard_extra),
        compute=compute,
        region=region,
        ompt=bool(ompt),
    )
    args = BENCHMARK.native_args(
        dict(
            params,
            work=params["work_s"],
            sd=params["sd_s"],
            laggard_extra=params["laggard_extra_s"],
            seed=int(seed),
        )
    )
    run = run_benchmark(
        "threads",
        BENCHMARK.program,
        args,
        nranks=int(ranks),
        threads=int(threads),
        parameters=params,
        seeds={"threads": int(seed)},
        collectors=[bench_collector] if ompt else (),
        **launch_kw,
    )
    launch = run.meta.get("launch", {})
    per_node = -(-int(ranks) // max(1, len(launch.get("hosts") or [1])))
    run.meta["oversubscription"] = {
        "oversubscribed": bool(launch.get("oversubscribed")),
        "threads_per_node": per_node * int(threads),
        "cores": available_cores(),
        "note": (
            "threads outnumber cores: spinning threads are descheduled, so compute "
            "times exceed the intended ones by up to a scheduler slice; "
            "OMP_WAIT_POLICY=passive"
            if launch.get("oversubscribed")
            else "one core or more per thread"
        ),
    }
    run.save_meta()
    return run


def load_tables(run):
    """The run's ``compute`` and ``injected`` tables."""
    return run.table("compute"), run.table("injected")


def _expected_frame(injected, compute):
    """The injected (intended) times in the layout :mod:`arrivals` reads."""
    exp = injected.rename(columns={"intended_time_s": "compute_time_s"})
    regions = compute["region"].astype(str).unique() if "region" in compute else ["all"]
    if len(regions) != 1:
        raise InputError("compute", "region", "expected one region per threads run")
    exp = exp.assign(region=regions[0])
    return exp[["region", "trial", "rank", "iteration", "thread", "compute_time_s"]]


def _gap_to_rest(df):
    """Per process-iteration: slowest time minus the median of the other threads (the
    laggard's extra time; the paper's max - median halves it when there are 2 threads)."""
    groups = arrivals.group_samples(df, "process-iteration")
    gap = np.full(len(groups.sizes), np.nan)
    for idx, mat in groups.blocks(min_size=2):
        gap[idx] = mat[:, -1] - np.median(mat[:, :-1], axis=1)
    out = groups.keys[["region", "trial", "rank", "iteration"]].copy()
    out["gap_s"] = gap
    return out


def compare_with_injected(compute, injected, threshold_s=1e-3):
    """Thread-arrival metrics recovered from ``compute`` vs those implied by ``injected``.

    The ground truth of "this process-iteration has a laggard" is the paper's rule
    (max - median > ``threshold_s``) applied to the intended times: with few threads
    an injected laggard can hide (two laggards among two threads have no spread).
    Returns a dict of numbers:

    ``samples``, ``missing`` (injected rows with no measurement), ``process_iterations``;
    ``injected_laggard_threads``, ``injected_laggard_iterations`` (process-iterations with
    at least one injected laggard); ``expected_laggards`` / ``found_laggards`` (rule on
    intended / measured times), ``true_positives``, ``false_positives``,
    ``false_negatives``, ``laggard_thread_matches`` (found process-iterations whose
    slowest measured thread is an injected laggard); ``mean_excess_expected_s`` /
    ``mean_excess_found_s`` (max - median over the flagged process-iterations);
    ``avg_reclaimable_expected_s`` / ``avg_reclaimable_measured_s``;
    ``idle_ratio_printed_*`` and ``idle_ratio_range_*`` (see :mod:`arrivals`);
    ``error_mean_s``, ``error_median_s``, ``error_p95_s``, ``error_max_s`` (measured -
    intended compute time per thread-iteration: the compute model's accuracy).
    """
    keys = ["trial", "rank", "iteration", "thread"]
    merged = injected.merge(compute[keys + ["compute_time_s"]], on=keys, how="left")
    missing = int(merged["compute_time_s"].isna().sum())
    merged = merged.dropna(subset=["compute_time_s"])
    err = (merged["compute_time_s"] - merged["intended_time_s"]).to_numpy(float)
    meas = arrivals.process_iterations(compute, threshold_s)
    exp = arrivals.process_iterations(_expected_frame(injected, compute), threshold_s)
    pk = ["trial", "rank", "iteration"]
    exp = exp.merge(_gap_to_rest(_expected_frame(injected, compute)), on=["region"] + pk)
    meas = meas.merge(_gap_to_rest(compute), on=["region"] + pk)
    both = exp.merge(meas, on=["region"] + pk, how="inner", suffixes=("_exp", "_meas"))
    lag_threads = injected[injected["laggard"] == 1]
    lag_iters = lag_threads[pk].drop_duplicates()
    found = both[both["laggard_meas"]]
    is_injected = (
        found.merge(
            lag_threads[pk + ["thread"]].rename(columns={"thread": "slowest_thread_meas"}),
            on=pk + ["slowest_thread_meas"],
            how="left",
            indicator=True,
        )["_merge"]
        == "both"
    )
    exp_lag = both["laggard_exp"].to_numpy(bool)
    meas_lag = both["laggard_meas"].to_numpy(bool)

    def mean(x):
        x = np.asarray(x, float)
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else float("nan")

    return {
        "threshold_s": float(threshold_s),
        "samples": int(len(compute)),
        "missing": missing,
        "process_iterations": int(len(both)),
        "injected_laggard_threads": int(len(lag_threads)),
        "injected_laggard_iterations": int(len(lag_iters)),
        "expected_laggards": int(exp_lag.sum()),
        "found_laggards": int(meas_lag.sum()),
        "true_positives": int((exp_lag & meas_lag).sum()),
        "false_positives": int((~exp_lag & meas_lag).sum()),
        "false_negatives": int((exp_lag & ~meas_lag).sum()),
        "laggard_thread_matches": int(is_injected.sum()),
        "mean_excess_expected_s": mean(both.loc[exp_lag, "excess_s_exp"]),
        "mean_excess_found_s": mean(both.loc[meas_lag, "excess_s_meas"]),
        "mean_extra_expected_s": mean(both.loc[exp_lag, "gap_s_exp"]),
        "mean_extra_found_s": mean(both.loc[meas_lag, "gap_s_meas"]),
        "avg_reclaimable_expected_s": mean(both["reclaimable_s_exp"]),
        "avg_reclaimable_measured_s": mean(both["reclaimable_s_meas"]),
        "idle_ratio_printed_expected": mean(both["idle_ratio_printed_exp"]),
        "idle_ratio_printed_measured": mean(both["idle_ratio_printed_meas"]),
        "idle_ratio_range_expected": mean(both["idle_ratio_range_exp"]),
        "idle_ratio_range_measured": mean(both["idle_ratio_range_meas"]),
        "error_mean_s": mean(err),
        "error_median_s": float(np.median(err)) if err.size else float("nan"),
        "error_p95_s": float(np.percentile(err, 95)) if err.size else float("nan"),
        "error_max_s": float(err.max()) if err.size else float("nan"),
    }


def summarize_run(run, threshold_s=1e-3):
    """:func:`compare_with_injected` on a run's tables."""
    compute, injected = load_tables(run)
    return compare_with_injected(compute, injected, threshold_s)


def recovery_table(summary):
    """The comparison as rows (metric, expected, measured) for printing."""
    s = summary
    return pd.DataFrame(
        [
            {
                "metric": f"laggard process-iterations (max - median > {s['threshold_s']:g} s)",
                "expected": s["expected_laggards"],
                "measured": s["found_laggards"],
            },
            {
                "metric": "  of which found where expected (true positives)",
                "expected": s["expected_laggards"],
                "measured": s["true_positives"],
            },
            {
                "metric": "  found, slowest thread is an injected laggard",
                "expected": s["found_laggards"],
                "measured": s["laggard_thread_matches"],
            },
            {
                "metric": "mean excess max - median of flagged iterations (s)",
                "expected": s["mean_excess_expected_s"],
                "measured": s["mean_excess_found_s"],
            },
            {
                "metric": "mean extra time: slowest - median of the others (s)",
                "expected": s["mean_extra_expected_s"],
                "measured": s["mean_extra_found_s"],
            },
            {
                "metric": "average reclaimable time (s)",
                "expected": s["avg_reclaimable_expected_s"],
                "measured": s["avg_reclaimable_measured_s"],
            },
            {
                "metric": "idle ratio, printed R/(n*max)",
                "expected": s["idle_ratio_printed_expected"],
                "measured": s["idle_ratio_printed_measured"],
            },
            {
                "metric": "idle ratio, range R/(n*(max-min))",
                "expected": s["idle_ratio_range_expected"],
                "measured": s["idle_ratio_range_measured"],
            },
        ]
    )


def compare_ompt_with_listing1(run):
    """Per thread and iteration: OMPT compute time (closing-barrier segment) minus the
    Listing-1 compute time of the same run.

    The OMPT instances of the timed region on a rank, in order, are the benchmark's
    steps including warm-ups: instance j is trial j // (warmup + iterations), step
    j % (warmup + iterations) - warmup.  Returns (merged DataFrame with
    ``diff_s``, summary dict: samples, missing, median/p99/max of the difference and
    of its absolute value, in seconds).
    """
    p = run.meta["parameters"]
    compute = run.table("compute")
    ompt = run.table("threads")
    closing = ompt[ompt["barrier"] == "closing"]
    if closing["region"].nunique() != 1:
        raise InputError(
            run.path / "threads.parquet",
            "region",
            f"expected one timed region, found {sorted(closing['region'].unique())}",
        )
    per_trial = int(p["warmup"]) + int(p["iterations"])
    o = closing.assign(
        trial=closing["iteration"] // per_trial,
        iteration=closing["iteration"] % per_trial - int(p["warmup"]),
    )
    o = o[o["iteration"] >= 0]
    keys = ["trial", "rank", "iteration", "thread"]
    m = compute[keys + ["compute_time_s"]].merge(
        o[keys + ["compute_time_s"]].rename(columns={"compute_time_s": "ompt_time_s"}),
        on=keys,
        how="left",
    )
    missing = int(m["ompt_time_s"].isna().sum())
    m = m.dropna(subset=["ompt_time_s"])
    m["diff_s"] = m["ompt_time_s"] - m["compute_time_s"]
    d = m["diff_s"].to_numpy(float)
    a = np.abs(d)

    def q(x, pct):
        return float(np.percentile(x, pct)) if x.size else float("nan")

    return m, {
        "samples": int(d.size),
        "missing": missing,
        "median_s": q(d, 50),
        "p99_s": q(d, 99),
        "max_s": float(d.max()) if d.size else float("nan"),
        "min_s": float(d.min()) if d.size else float("nan"),
        "abs_median_s": q(a, 50),
        "abs_p99_s": q(a, 99),
        "abs_max_s": float(a.max()) if a.size else float("nan"),
    }


def show_threads(run, quiet=False, threshold=1e-3):
    """What ``commscope bench threads`` prints: the laggards and reclaimable time
    recovered vs injected, and with ``ompt`` OMPT vs Listing 1 (stderr, unless
    ``quiet``), then the run directory."""
    if not quiet:
        _show_recovery(run, threshold)
    print(run.path)


def _show_recovery(run, threshold):
    summary = summarize_run(run, threshold)
    print(format_table(recovery_table(summary), title="recovered vs injected"), file=sys.stderr)
    print(
        f"# compute - intended: mean {format_seconds(summary['error_mean_s'])}, "
        f"p95 {format_seconds(summary['error_p95_s'])}, "
        f"max {format_seconds(summary['error_max_s'])}",
        file=sys.stderr,
    )
    if run.meta["parameters"].get("ompt"):
        _, d = compare_ompt_with_listing1(run)
        print(
            f"# OMPT - Listing 1 per thread-iteration ({d['samples']} samples, "
            f"{d['missing']} missing): median {format_seconds(d['median_s'])}, "
            f"p99 {format_seconds(d['p99_s'])}, max {format_seconds(d['max_s'])}",
            file=sys.stderr,
        )
