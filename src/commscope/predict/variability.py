"""Predicting runtime variability at larger scales from a bulk-synchronous run.

Dominguez-Trujillo (2021, seed 003), Sec. 3.2.2 and the evaluation of Sec. 3.4.2:
calibrate on a ``bsp`` run at one scale (``commscope bench bsp``), predict the
distribution of the per-interval maximum and of the total runtime (the sum of the
interval maxima, as the thesis reports) at larger scales with the bootstraps of
:mod:`commscope.stats.bootstrap`, and, where runs of the same experiment exist at
those scales, say whether each measured median falls inside the predicted interval.

Kinds (see :mod:`commscope.stats.bootstrap` for the details):

* ``nonparametric``: the calibration run's interval maxima (its ``maxima`` table),
  resampled k = P/p times and maxed;
* ``internode``: GEV fits (PWM by default) to each node's interval maxima, EMMA to
  P / ranks_per_node nodes;
* ``intranode``: GEV fits to each rank slot's interval times, EMMA to P ranks.

Nodes are the hosts recorded in the run; on one machine every rank shares one node
unless ``ranks_per_node`` regroups them.  Statistics:

* ``interval_max_s``: one interval's maximum.  The measured value is the median of a
  run's interval maxima (pooled over the runs at that scale).
* ``runtime_s``: the sum of ``m`` interval maxima, ``m`` = the calibration run's
  interval count.  The measured value is the median over runs of each run's
  runtime; a run with a different interval count is rescaled to ``m`` (noted).

Interpretation (as in the bootstrap module): non-parametric replicas are maxima
themselves, so their interval is a prediction interval; parametric replicas are EMMA
(expected-maximum) projections, so theirs is a confidence interval for the mean.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..bench.bsp import EXPERIMENT_KEYS, interval_matrix
from ..errors import InputError
from ..runs import Run, open_run
from ..stats import bootstrap
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


KINDS = ("nonparametric", "internode", "intranode")
STATISTICS = ("interval_max_s", "runtime_s")

COLUMNS = ["workload", "halo_bytes", "kind", "method", "statistic", "base_ranks",
           "target_ranks", "k", "intervals", "median_s", "ci_low_s", "ci_high_s",
           "confidence", "replicas", "seed", "measured_runs", "measured_median_s",
           "measured_mean_s", "measured_low_s", "measured_high_s", "inside", "median_error",
           "oversubscribed", "note"]


# --- runs -----------------------------------------------------------------------------

def _as_run(obj):
    run = obj if isinstance(obj, Run) else open_run(obj)
    if run.kind != "bsp":
        raise InputError(run.path / "meta.json", "kind",
                         f"is {run.kind!r}; variability prediction needs a 'bsp' run "
                         "(commscope bench bsp)")
    return run


def experiment_key(run):
    """The parameters that make two bsp runs the same experiment at different scales."""
    p = dict(run.meta["parameters"])
    p.setdefault("dim", p.get("size"))  # runs made before --size became --dim
    return tuple((k, p.get(k)) for k in EXPERIMENT_KEYS)


def run_ranks(run):
    """Number of ranks of a bsp run (from its parameters, else its placement)."""
    p = run.meta["parameters"]
    if isinstance(p.get("ranks"), int) and p["ranks"] >= 1:
        return p["ranks"]
    if run.meta.get("placement"):
        return len(run.meta["placement"])
    raise InputError(run.path / "meta.json", "parameters.ranks", "missing: cannot tell the scale")


def run_maxima(run):
    """Per-interval maxima (seconds) of a bsp run, in interval order."""
    df = run.table("maxima")
    if df.empty:
        raise InputError(run.path / "maxima.parquet", "max_interval_s", "no intervals recorded")
    vals = df.sort_values("interval")["max_interval_s"].to_numpy(dtype=float)
    if not np.all(np.isfinite(vals)) or np.any(vals < 0):
        raise InputError(run.path / "maxima", "max_interval_s", "has negative or non-finite times")
    return vals


def is_oversubscribed(run):
    return bool((run.meta.get("launch") or {}).get("oversubscribed"))


def measured_summary(runs):
    """One row per run: scale, interval count, runtime and median interval maximum."""
    rows = []
    for run in map(_as_run, runs):
        m = run_maxima(run)
        rows.append({"run": str(run.path), "name": run.path.name,
                     "workload": run.meta["parameters"].get("workload"),
                     "halo_bytes": run.meta["parameters"].get("halo_bytes"),
                     "ranks": run_ranks(run), "intervals": m.size,
                     "runtime_s": float(m.sum()), "median_max_s": float(np.median(m)),
                     "status": run.status, "oversubscribed": is_oversubscribed(run)})
    return pd.DataFrame(rows)


def _collect_compare(compare, calibration):
    """Runs to compare with: explicit run directories must match the calibration's
    experiment (else InputError); runs found inside folders are filtered silently."""
    key = experiment_key(calibration)
    chosen, seen = [], {calibration.path.resolve()}
    for entry in compare or ():
        if isinstance(entry, Run):
            candidates, explicit = [entry], True
        else:
            p = Path(entry)
            if (p / "meta.json").exists():
                candidates, explicit = [open_run(p)], True
            elif p.is_dir():
                found = sorted(q.parent for q in p.glob("*/meta.json"))
                if not found:
                    raise InputError(p, None, "holds no run directories (no */meta.json)")
                candidates, explicit = [open_run(q) for q in found], False
            else:
                raise InputError(p, None, "no such run directory")
        for run in candidates:
            if run.path.resolve() in seen:
                continue
            if run.kind != "bsp" or experiment_key(run) != key:
                if explicit:
                    if run.kind != "bsp":
                        _as_run(run)
                    theirs = dict(experiment_key(run))
                    diff = [k for k, v in key if theirs.get(k) != v]
                    raise InputError(run.path / "meta.json", f"parameters.{diff[0]}",
                                     f"{theirs.get(diff[0])!r} differs from the calibration "
                                     f"run's {dict(key)[diff[0]]!r}: not the same experiment")
                continue
            seen.add(run.path.resolve())
            chosen.append(run)
    return chosen


# --- prediction -----------------------------------------------------------------------

def _check_targets(target_ranks, base):
    out = []
    for t in target_ranks:
        if isinstance(t, bool) or not isinstance(t, (int, np.integer, float)) \
                or not math.isfinite(t) or t < 1:
            raise InputError("--target-ranks", None, f"must be positive rank counts, got {t!r}")
        if t < base:
            raise InputError("--target-ranks", None,
                             f"{t} is below the calibration scale of {base} ranks")
        out.append(int(t) if float(t).is_integer() else float(t))
    return sorted(set(out))


def _kinds(kind):
    if kind in (None, "all"):
        return KINDS
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    for k in kinds:
        if k not in KINDS:
            raise InputError("--kind", None,
                             f"expected one of {', '.join(KINDS)} or all, got {k!r}")
    return kinds


def predict_variability(calibration, target_ranks=None, *, kind="all", replicas=10_000,
                        seed=None, confidence=0.95, compare=(), method="pwm",
                        ranks_per_node=None, statistics=STATISTICS):
    """Predict interval maxima and runtimes at ``target_ranks`` from a bsp run.

    ``calibration``: a bsp run (path or :class:`~commscope.runs.Run`) at the base
    scale.  ``target_ranks``: rank counts to predict (default: the scales of the
    ``compare`` runs).  ``kind``: "nonparametric", "internode", "intranode", "all"
    or a list.  ``compare``: run directories or folders holding runs; those of the
    same experiment (workload and its parameters, halo size) give the measured
    values.  ``ranks_per_node`` regroups the calibration's ranks into nodes of that
    size (default: by recorded host).  ``seed`` makes the prediction reproducible
    (drawn and reported when None).

    Returns a tidy DataFrame, one row per (kind, statistic, target), with columns
    :data:`COLUMNS`: predicted median and ``ci_low_s``/``ci_high_s`` at
    ``confidence``, the measured median and mean (and the central ``confidence``
    spread of the measured values), ``inside`` (measured median within the predicted
    interval; None when nothing was measured at that scale) and ``median_error`` =
    predicted/measured median - 1.  With several kinds, a kind that cannot be
    computed (e.g. a GEV fit to constant times) gives a row of NaN with the reason
    in ``note``.
    """
    cal = _as_run(calibration)
    kinds = _kinds(kind)
    for s in statistics:
        if s not in STATISTICS:
            raise InputError("statistic", None, f"expected one of {STATISTICS}, got {s!r}")
    if not isinstance(replicas, (int, np.integer)) or isinstance(replicas, bool) or replicas < 1:
        raise InputError("--replicas", None, f"must be a positive integer, got {replicas!r}")
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise InputError("--confidence", None, f"must be in (0, 1), got {confidence!r}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("--seed", None, f"must be a non-negative integer, got {seed!r}")

    base = run_ranks(cal)
    maxima = run_maxima(cal)
    m = maxima.size
    times, rpn_hosts = interval_matrix(cal)
    if times.shape[1] != base:
        raise InputError(cal.path / "intervals", "rank",
                         f"has {times.shape[1]} ranks but the run says {base}")
    rpn = ranks_per_node or rpn_hosts or base
    if not isinstance(rpn, (int, np.integer)) or rpn < 1 or base % rpn:
        raise InputError("--ranks-per-node", None,
                         f"{rpn!r} does not divide the calibration's {base} ranks")

    measured = _collect_compare(compare, cal)
    if target_ranks is None or len(target_ranks) == 0:
        target_ranks = sorted({run_ranks(r) for r in measured})
        if not target_ranks:
            raise InputError("--target-ranks", None,
                             "no target scales: give --target-ranks or --compare runs")
    targets = _check_targets(target_ranks, base)

    by_scale = {}
    for run in measured:
        by_scale.setdefault(run_ranks(run), []).append(run)

    params = cal.meta["parameters"]
    tail = (1 - confidence) / 2
    rows = []
    for kind_name in kinds:
        for stat in statistics:
            intervals = m if stat == "runtime_s" else None
            results, note = None, ""
            try:
                results = _bootstrap(kind_name, maxima, times, base, rpn, targets,
                                     replicas=int(replicas), confidence=float(confidence),
                                     seed=int(seed), intervals=intervals, method=method)
            except InputError as exc:
                if len(kinds) == 1:
                    raise
                note = f"{kind_name} not computed: {exc.message}"
            for i, target in enumerate(targets):
                res = results[i] if results else None
                runs_here = by_scale.get(target, [])
                values, rescaled = _measured_values(runs_here, stat, m)
                row = {
                    "workload": params.get("workload"), "halo_bytes": params.get("halo_bytes"),
                    "kind": kind_name,
                    "method": None if kind_name == "nonparametric" else method,
                    "statistic": stat, "base_ranks": base, "target_ranks": target,
                    "k": target / base, "intervals": intervals,
                    "median_s": res.median_s if res else math.nan,
                    "ci_low_s": res.ci_low_s if res else math.nan,
                    "ci_high_s": res.ci_high_s if res else math.nan,
                    "confidence": float(confidence), "replicas": res.replicas if res else 0,
                    "seed": res.seed if res else int(seed) + i,
                    "measured_runs": len(runs_here),
                    "measured_median_s": math.nan, "measured_mean_s": math.nan,
                    "measured_low_s": math.nan,
                    "measured_high_s": math.nan, "inside": None, "median_error": math.nan,
                    "oversubscribed": any(map(is_oversubscribed, runs_here)) if runs_here else None,
                    "note": note,
                }
                if values.size:
                    med = float(np.median(values))
                    lo, hi = np.quantile(values, [tail, 1 - tail])
                    row.update(measured_median_s=med, measured_mean_s=float(np.mean(values)),
                               measured_low_s=float(lo),
                               measured_high_s=float(hi))
                    if res:
                        row["inside"] = bool(res.ci_low_s <= med <= res.ci_high_s)
                        row["median_error"] = res.median_s / med - 1 if med > 0 else math.nan
                    if rescaled:
                        row["note"] = (row["note"] + "; " if row["note"] else "") + \
                            f"measured runtimes rescaled to {m} intervals"
                rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS).astype({"intervals": "Int64"})  # None: per interval
    df.attrs.update(calibration=str(cal.path), base_ranks=base, ranks_per_node=int(rpn),
                    intervals=m, seed=int(seed),
                    compared=[str(r.path) for r in measured])
    return df


def _bootstrap(kind, maxima, times, base, rpn, targets, *, replicas, confidence, seed,
               intervals, method):
    out = []
    for i, target in enumerate(targets):
        opts = dict(replicas=replicas, confidence=confidence, seed=seed + i, intervals=intervals)
        if kind == "nonparametric":
            out.append(bootstrap.bootstrap_nonparametric(maxima, base, float(target), **opts))
        elif kind == "internode":
            out.append(bootstrap.bootstrap_internode(times, int(rpn), float(target),
                                                     method=method, **opts))
        else:
            out.append(bootstrap.bootstrap_intranode(times, int(rpn), float(target),
                                                     method=method, **opts))
    return out


def _measured_values(runs, stat, m):
    if not runs:
        return np.array([]), False
    if stat == "interval_max_s":
        return np.concatenate([run_maxima(r) for r in runs]), False
    vals, rescaled = [], False
    for r in runs:
        mx = run_maxima(r)
        if mx.size != m:
            rescaled = True
        vals.append(mx.sum() * m / mx.size)
    return np.asarray(vals), rescaled


def verdict_summary(df):
    """Fraction of predicted intervals holding the measured median, per kind and statistic."""
    judged = df[df["inside"].notna()]
    if judged.empty:
        return pd.DataFrame(columns=["kind", "statistic", "judged", "inside", "fraction_inside"])
    g = judged.groupby(["kind", "statistic"], sort=False)["inside"]
    out = g.agg(judged="size", inside=lambda s: int(s.astype(bool).sum())).reset_index()
    out["fraction_inside"] = out["inside"] / out["judged"]
    return out
