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

Intervals (``interval``):

* ``"run"`` (default): an interval for the statistic of *one target run*, the thing the
  measured value is (see :mod:`commscope.stats.target_run`): block bootstrap of the
  calibration (its intervals are autocorrelated), the target's own intervals drawn from
  the predicted max-of-k law with the calibration's dependence, and a run-to-run factor
  estimated from ``repeats`` (more calibration runs at the base scale).  For
  ``interval_max_s`` the replicas are the target run's *median* interval maximum.
* ``"thesis"``: the thesis bootstraps as printed (:mod:`commscope.stats.bootstrap`):
  non-parametric replicas are single interval maxima (a prediction interval for one
  interval), parametric ones EMMA projections (a confidence interval for the expected
  maximum), intervals independent.  On this machine they hold the measured medians far
  less often than their level says (docs/validation.md, "Variability intervals").

Every row's ``note`` says which assumptions the data reject or the target breaks: an
oversubscribed target, autocorrelated interval times, a GEV fit rejected by a
Kolmogorov-Smirnov test, too few intervals, a single calibration run.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..bench.bsp import EXPERIMENT_KEYS, interval_matrix
from ..errors import InputError
from ..runs import Run, open_run
from ..stats import bootstrap, target_run
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


KINDS = ("nonparametric", "internode", "intranode")
STATISTICS = ("interval_max_s", "runtime_s")
INTERVALS = ("run", "thesis")
#: Fewer calibration intervals than this: tails (and a GEV fit) are poorly determined.
MIN_INTERVALS = 50

COLUMNS = [
    "workload",
    "halo_bytes",
    "kind",
    "method",
    "statistic",
    "base_ranks",
    "target_ranks",
    "k",
    "intervals",
    "median_s",
    "ci_low_s",
    "ci_high_s",
    "confidence",
    "replicas",
    "seed",
    "measured_runs",
    "measured_median_s",
    "measured_mean_s",
    "measured_low_s",
    "measured_high_s",
    "inside",
    "median_error",
    "oversubscribed",
    "note",
    "interval",
    "block",
    "run_sd_rel",
]


# --- runs -----------------------------------------------------------------------------


def _as_run(obj):
    run = obj if isinstance(obj, Run) else open_run(obj)
    run.check()  # a damaged table is the error, never a kind "not computed"
    if run.kind != "bsp":
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"is {run.kind!r}; variability prediction needs a 'bsp' run (commscope bench bsp)",
        )
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
        raise InputError(run.table_file("maxima"), "max_interval_s", "no intervals recorded")
    vals = df.sort_values("interval")["max_interval_s"].to_numpy(dtype=float)
    if not np.all(np.isfinite(vals)) or np.any(vals < 0):
        raise InputError(
            run.table_file("maxima"), "max_interval_s", "has negative or non-finite times"
        )
    return vals


def is_oversubscribed(run):
    return bool((run.meta.get("launch") or {}).get("oversubscribed"))


def measured_summary(runs):
    """One row per run: scale, interval count, runtime and median interval maximum."""
    rows = []
    for run in map(_as_run, runs):
        m = run_maxima(run)
        rows.append(
            {
                "run": str(run.path),
                "name": run.path.name,
                "workload": run.meta["parameters"].get("workload"),
                "halo_bytes": run.meta["parameters"].get("halo_bytes"),
                "ranks": run_ranks(run),
                "intervals": m.size,
                "runtime_s": float(m.sum()),
                "median_max_s": float(np.median(m)),
                "status": run.status,
                "oversubscribed": is_oversubscribed(run),
            }
        )
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
                candidates, explicit = [open_run(p).check()], True
            elif p.is_dir():
                found = sorted(q.parent for q in p.glob("*/meta.json"))
                if not found:
                    raise InputError(p, None, "holds no run directories (no */meta.json)")
                candidates, explicit = [open_run(q).check() for q in found], False
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
                    raise InputError(
                        run.path / "meta.json",
                        f"parameters.{diff[0]}",
                        f"{theirs.get(diff[0])!r} differs from the calibration "
                        f"run's {dict(key)[diff[0]]!r}: not the same experiment",
                    )
                continue
            seen.add(run.path.resolve())
            chosen.append(run)
    return chosen


# --- prediction -----------------------------------------------------------------------


def _check_targets(target_ranks, base):
    out = []
    for t in target_ranks:
        if (
            isinstance(t, bool)
            or not isinstance(t, (int, np.integer, float))
            or not math.isfinite(t)
            or t < 1
        ):
            raise InputError("--target-ranks", None, f"must be positive rank counts, got {t!r}")
        if t < base:
            raise InputError(
                "--target-ranks", None, f"{t} is below the calibration scale of {base} ranks"
            )
        out.append(int(t) if float(t).is_integer() else float(t))
    return sorted(set(out))


def _kinds(kind):
    if kind in (None, "all"):
        return KINDS
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    for k in kinds:
        if k not in KINDS:
            raise InputError(
                "--kind", None, f"expected one of {', '.join(KINDS)} or all, got {k!r}"
            )
    return kinds


def predict_variability(
    calibration,
    target_ranks=None,
    *,
    kind="all",
    replicas=10_000,
    seed=None,
    confidence=0.95,
    compare=(),
    method="pwm",
    ranks_per_node=None,
    statistics=STATISTICS,
    repeats=(),
    interval="run",
):
    """Predict interval maxima and runtimes at ``target_ranks`` from a bsp run.

    ``calibration``: a bsp run (path or :class:`~commscope.runs.Run`) at the base
    scale.  ``target_ranks``: rank counts to predict (default: the scales of the
    ``compare`` runs).  ``kind``: "nonparametric", "internode", "intranode", "all"
    or a list.  ``compare``: run directories or folders holding runs; those of the
    same experiment (workload and its parameters, halo size) give the measured
    values.  ``ranks_per_node`` regroups the calibration's ranks into nodes of that
    size (default: by recorded host).  ``seed`` makes the prediction reproducible
    (drawn and reported when None).  ``repeats``: more runs of the same experiment at
    the base scale; they join the calibration and give the run-to-run component.
    ``interval``: "run" (an interval for one target run's statistic) or "thesis" (the
    thesis bootstraps as printed); see the module doc.

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
    if interval not in INTERVALS:
        raise InputError(
            "--ci-method", None, f"expected one of {', '.join(INTERVALS)}, got {interval!r}"
        )
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
        raise InputError(
            cal.path / "intervals", "rank", f"has {times.shape[1]} ranks but the run says {base}"
        )
    rpn = ranks_per_node or rpn_hosts or base
    if not isinstance(rpn, (int, np.integer)) or rpn < 1 or base % rpn:
        raise InputError(
            "--ranks-per-node", None, f"{rpn!r} does not divide the calibration's {base} ranks"
        )

    cal_runs = [cal, *_collect_repeats(repeats, cal, base)]
    series = _calibration_series(cal_runs, base, int(rpn))

    preempted = _preemption_note(cal_runs)
    measured = _collect_compare(compare, cal)
    if target_ranks is None or len(target_ranks) == 0:
        target_ranks = sorted({run_ranks(r) for r in measured})
        if not target_ranks:
            raise InputError(
                "--target-ranks", None, "no target scales: give --target-ranks or --compare runs"
            )
    targets = _check_targets(target_ranks, base)

    by_scale = {}
    for run in measured:
        by_scale.setdefault(run_ranks(run), []).append(run)

    params = cal.meta["parameters"]
    tail = (1 - confidence) / 2
    rows = []
    for kind_name in kinds:
        groups, per_rank = series[kind_name]
        block = target_run.pooled_block_length([s for g in groups for s in g])
        kind_notes = _assumption_notes(kind_name, groups, interval, block, len(cal_runs), method)
        if preempted:
            kind_notes.append(preempted)
        for stat in statistics:
            intervals = m if stat == "runtime_s" else None
            results, note, run_sd = None, "", math.nan
            try:
                if interval == "thesis":
                    results = _bootstrap(
                        kind_name,
                        maxima,
                        times,
                        base,
                        rpn,
                        targets,
                        replicas=int(replicas),
                        confidence=float(confidence),
                        seed=int(seed),
                        intervals=intervals,
                        method=method,
                    )
                else:
                    level_runs = series["nonparametric"][0][0]
                    run_sd = target_run.run_effect_sd(
                        level_runs, _RUN_STAT[stat], block, np.random.default_rng(int(seed))
                    )
                    results = _bootstrap_run(
                        kind_name,
                        groups,
                        per_rank,
                        base,
                        targets,
                        m,
                        stat,
                        block,
                        (run_sd, len(level_runs) - 1),
                        replicas=int(replicas),
                        confidence=float(confidence),
                        seed=int(seed),
                        method=method,
                    )
            except InputError as exc:
                if len(kinds) == 1:
                    raise
                note = f"{kind_name} not computed: {exc.message}"
            for i, target in enumerate(targets):
                res = results[i] if results else None
                runs_here = by_scale.get(target, [])
                values, rescaled = _measured_values(runs_here, stat, m)
                notes = [note] if note else []
                over = _oversubscription_note(cal, target, runs_here)
                shared = "" if over else _slowdown_note(cal_runs, runs_here, target)
                notes += ([over] if over else []) + ([shared] if shared else []) + kind_notes
                if run_sd > RUN_SD_NOTE:
                    notes.append(
                        f"calibration runs differ run to run by {run_sd:.0%} "
                        "(log sd of their level): included in the interval"
                    )
                row = {
                    "workload": params.get("workload"),
                    "halo_bytes": params.get("halo_bytes"),
                    "kind": kind_name,
                    "method": None if kind_name == "nonparametric" else method,
                    "statistic": stat,
                    "base_ranks": base,
                    "target_ranks": target,
                    "k": target / base,
                    "intervals": intervals,
                    "median_s": res.median_s if res else math.nan,
                    "ci_low_s": res.ci_low_s if res else math.nan,
                    "ci_high_s": res.ci_high_s if res else math.nan,
                    "confidence": float(confidence),
                    "replicas": res.replicas if res else 0,
                    "seed": res.seed if res else int(seed) + i,
                    "measured_runs": len(runs_here),
                    "measured_median_s": math.nan,
                    "measured_mean_s": math.nan,
                    "measured_low_s": math.nan,
                    "measured_high_s": math.nan,
                    "inside": None,
                    "median_error": math.nan,
                    "oversubscribed": bool(over) if (runs_here or over) else None,
                    "note": "",
                    "interval": interval,
                    "block": block if interval == "run" else 1,
                    "run_sd_rel": run_sd,
                }
                if values.size:
                    med = float(np.median(values))
                    lo, hi = np.quantile(values, [tail, 1 - tail])
                    row.update(
                        measured_median_s=med,
                        measured_mean_s=float(np.mean(values)),
                        measured_low_s=float(lo),
                        measured_high_s=float(hi),
                    )
                    if res:
                        row["inside"] = bool(res.ci_low_s <= med <= res.ci_high_s)
                        row["median_error"] = res.median_s / med - 1 if med > 0 else math.nan
                    if rescaled:
                        notes.append(f"measured runtimes rescaled to {m} intervals")
                row["note"] = "; ".join(notes)
                rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS).astype({"intervals": "Int64"})  # None: per interval
    df.attrs.update(
        calibration=str(cal.path),
        base_ranks=base,
        ranks_per_node=int(rpn),
        intervals=m,
        seed=int(seed),
        compared=[str(r.path) for r in measured],
        repeats=[str(r.path) for r in cal_runs[1:]],
        interval=interval,
    )
    return df


# --- the target-run intervals (interval="run") ----------------------------------------

#: The base-scale statistic whose run-to-run spread gives the run effect.
_RUN_STAT = {"interval_max_s": "median", "runtime_s": "sum"}


def _collect_repeats(repeats, cal, base):
    """More calibration runs: the same experiment at the same scale (else InputError)."""
    key, out, seen = experiment_key(cal), [], {cal.path.resolve()}
    for entry in repeats or ():
        run = _as_run(entry)
        if run.path.resolve() in seen:
            continue
        theirs = dict(experiment_key(run))
        diff = [k for k, v in key if theirs.get(k) != v]
        if diff:
            raise InputError(
                run.path / "meta.json",
                f"parameters.{diff[0]}",
                f"{theirs.get(diff[0])!r} differs from the calibration run's "
                f"{dict(key)[diff[0]]!r}: not a repeat of the same experiment",
            )
        if run_ranks(run) != base:
            raise InputError(
                run.path / "meta.json",
                "parameters.ranks",
                f"{run_ranks(run)} ranks: a repeat must have the calibration's {base}",
            )
        seen.add(run.path.resolve())
        out.append(run)
    return out


def _calibration_series(runs, base, rpn):
    """Per kind: (groups, n_per_unit).  A group is a list of 1-D interval series (one per
    run and node or rank slot) pooled into one fit; the thesis's groups (nodes for
    internode, rank slots for intranode, one for non-parametric)."""
    maxima = [run_maxima(r) for r in runs]
    mats = []
    for r in runs:
        t, _ = interval_matrix(r)
        if t.shape[1] != base:
            raise InputError(
                r.path / "intervals", "rank", f"has {t.shape[1]} ranks but the run says {base}"
            )
        mats.append(t.reshape(t.shape[0], base // rpn, rpn))
    nodes = base // rpn
    inter = [[t.max(axis=2)[:, j] for t in mats] for j in range(nodes)]
    intra = [[t[:, j, s] for t in mats for j in range(nodes)] for s in range(rpn)]
    return {"nonparametric": ([maxima], base), "internode": (inter, rpn), "intranode": (intra, 1)}


def _bootstrap_run(
    kind,
    groups,
    per_rank,
    base,
    targets,
    m,
    stat,
    block,
    run_effect,
    *,
    replicas,
    confidence,
    seed,
    method,
):
    """One pooled result per target: replicas split over the groups, as the thesis does.
    ``run_effect``: (log sd, degrees of freedom) of the run-to-run level."""
    run_sd, run_df = run_effect
    out = []
    per_group = math.ceil(replicas / len(groups))
    for i, target in enumerate(targets):
        n = target / base if kind == "nonparametric" else target / per_rank
        samples, failed = [], 0
        for g, group in enumerate(groups):
            res = target_run.predict_statistic(
                kind != "nonparametric",
                group,
                n,
                statistic=_RUN_STAT[stat],
                intervals=m,
                block=block,
                replicas=per_group,
                confidence=confidence,
                seed=(seed + i) * 1009 + g,
                run_sd=run_sd,
                run_df=max(run_df, 1),
                method=method,
            )
            samples.append(res.samples)
            failed += res.failed_replicas
        pooled = np.concatenate(samples)
        med, lo, hi = bootstrap._summarise(pooled, confidence)
        out.append(
            bootstrap.BootstrapResult(
                kind,
                base,
                target,
                target / base,
                stat,
                med,
                lo,
                hi,
                confidence,
                pooled.size,
                seed + i,
                None if kind == "nonparametric" else method,
                pooled,
                failed,
            )
        )
    return out


# --- notes: assumptions the target breaks or the data reject --------------------------


def _oversubscription_note(cal, target, runs_here):
    """Why the target is oversubscribed, or "" (measured runs, else this machine's cores)."""
    over = [r for r in runs_here if is_oversubscribed(r)]
    topo = cal.meta.get("topology") or {}
    cores = topo.get("usable_cpus") or topo.get("cores")
    one_host = len(cal.meta.get("hosts") or [None]) == 1
    why = (
        ": ranks time-slice there, and the calibration (one rank per core) has none "
        "of that in it, so the prediction does not hold"
    )
    if over:
        return (
            f"target oversubscribed ({len(over)} measured run(s) at {target} ranks had "
            "more ranks than cores)" + why
        )
    if one_host and isinstance(cores, int) and target > cores:
        return f"target oversubscribed on this machine ({target} ranks > {cores} cores)" + why
    return ""


#: Ranks of a measured target this much slower per interval than alone (beyond the
#: calibration runs' own spread): they share something (caches, memory bandwidth).
SLOWDOWN_NOTE = 0.01


def _median_interval_s(run):
    return float(np.median(interval_matrix(run)[0]))


def _slowdown_note(cal_runs, runs_here, target):
    """Why the measured target's ranks are slower than the calibration's, or "".

    The bootstraps draw every target rank from 1-rank samples: they assume ranks that do
    not slow each other. Ranks sharing caches or memory bandwidth (DGEMM here: 2 % per
    rank) shift every interval, and an interval built from the calibration misses.
    """
    if not runs_here:
        return ""
    base = [_median_interval_s(r) for r in cal_runs]
    spread = (max(base) - min(base)) / min(base) if min(base) > 0 else 0.0
    shift = (
        float(np.median([_median_interval_s(r) for r in runs_here])) / float(np.median(base)) - 1
    )
    if shift <= max(SLOWDOWN_NOTE, spread):
        return ""
    return (
        f"ranks at {target} slow each other: their median interval is {shift:.1%} longer "
        f"than at the calibration's scale (beyond the {len(base)} calibration run(s)' spread "
        f"of {spread:.1%}); shared caches or memory bandwidth, which a bootstrap of "
        "calibration samples assumes away"
    )


#: FTQ spins taking this much longer than requested: the ranks were preempted.
PREEMPTED_RATIO = 1.2
#: A run-to-run spread of the level (log sd) above this is worth saying.
RUN_SD_NOTE = 0.05


def _preemption_note(runs):
    """FTQ asks for a known spin time: a calibration whose spins took much longer was
    preempted by other load, which the prediction then carries as if it were noise."""
    ratios = []
    for run in runs:
        iv = run.table("intervals")
        if run.meta["parameters"].get("workload") != "ftq":
            return ""
        req = float(iv["requested_s"].median())
        if req > 0:
            ratios.append(float(iv["workload_s"].median()) / req)
    worst = max(ratios, default=1.0)
    if worst <= PREEMPTED_RATIO:
        return ""
    return (
        f"calibration preempted (FTQ spins took {worst:.1f}x their requested time): "
        "the machine had other load, which changes from run to run and with the "
        "number of busy cores"
    )


def _assumption_notes(kind, groups, interval, block, n_runs, method):
    notes = []
    all_series = [s for g in groups for s in g]
    total = min(sum(s.size for s in g) for g in groups)
    if total < MIN_INTERVALS:
        notes.append(
            f"only {total} calibration intervals (< {MIN_INTERVALS}): the tails "
            "(and a GEV fit) are poorly determined"
        )
    r1, bound = max((target_run.lag1(s) for s in all_series), key=lambda rb: abs(rb[0]))
    if abs(r1) > bound:
        head = f"interval times autocorrelated (lag-1 r = {r1:.2f}, beyond +-{bound:.2f})"
        notes.append(
            head
            + (
                ": the thesis bootstrap assumes independent intervals, so its "
                "interval is too narrow"
                if interval == "thesis"
                else f": resampled in blocks of {block} intervals"
            )
        )
    if kind != "nonparametric":
        tests = [target_run.gev_fit_rejected(np.concatenate(g), method) for g in groups]
        bad = [p for rejected, p in tests if rejected]
        if bad:  # a person reads "p < 0.001", not "p = 5e-08"
            p_text = f"p = {min(bad):.2g} < 0.05" if min(bad) >= 1e-3 else "p < 0.001"
            notes.append(
                f"GEV fit rejected by a Kolmogorov-Smirnov test ({p_text}): "
                "the parametric tail is not the data's"
            )
    if interval == "run" and n_runs < 2:
        notes.append(
            "one calibration run: run-to-run variation is not represented "
            "(give repeats, more runs at the base scale)"
        )
    return notes


def _bootstrap(
    kind, maxima, times, base, rpn, targets, *, replicas, confidence, seed, intervals, method
):
    out = []
    for i, target in enumerate(targets):
        opts = dict(replicas=replicas, confidence=confidence, seed=seed + i, intervals=intervals)
        if kind == "nonparametric":
            out.append(bootstrap.bootstrap_nonparametric(maxima, base, float(target), **opts))
        elif kind == "internode":
            out.append(
                bootstrap.bootstrap_internode(times, int(rpn), float(target), method=method, **opts)
            )
        else:
            out.append(
                bootstrap.bootstrap_intranode(times, int(rpn), float(target), method=method, **opts)
            )
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


def note_refs(column):
    """Each row's notes (the ``note`` column, "; "-separated) as "1,3", and the distinct
    notes they number, for a table with footnotes (the CLI and the report)."""
    order, refs = [], []
    for cell in column:
        parts = [n for n in (cell or "").split("; ") if n]
        order += [n for n in parts if n not in order]
        refs.append(",".join(str(order.index(n) + 1) for n in parts))
    return refs, order


def verdict_summary(df):
    """Fraction of predicted intervals holding the measured median, per kind and statistic."""
    judged = df[df["inside"].notna()]
    if judged.empty:
        return pd.DataFrame(columns=["kind", "statistic", "judged", "inside", "fraction_inside"])
    g = judged.groupby(["kind", "statistic"], sort=False)["inside"]
    out = g.agg(judged="size", inside=lambda s: int(s.astype(bool).sum())).reset_index()
    out["fraction_inside"] = out["inside"] / out["judged"]
    return out
