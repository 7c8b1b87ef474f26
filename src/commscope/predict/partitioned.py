"""Measured partitioned sends against the thesis's model (003 Ch. 4, Figs. 4.3-4.5).

Takes a ``partitioned`` run (``commscope bench partitioned``) and a communication
"link" (a machine model fitted from ping-pong runs, an OSU table, or any object with
``latency_s``/``bandwidth_Bps``), feeds the run's own parameters (threads, mean
compute time, sigma, distribution, buffer sizes) into
:mod:`commscope.models.partitioned` and lines the predictions up with what was
measured:

* ``analytic``: Algorithm 1 (EMMA for the slowest thread, expected spread, serial
  postal messages), for the early-bird approach; the single-send baseline is the
  postal time of the whole buffer (Example 4.2.1);
* ``monte-carlo``: thread times drawn from the nominal distribution, partitions
  serialised on the link as they become ready;
* ``monte-carlo-measured``: the same simulation resampling the *actual* compute
  times the benchmark recorded (its ``compute`` table), i.e. with the measured
  thread-time distribution, sleep overshoot included.

Output is tidy: one row per (size_bytes, method, source). ``method`` is the measured
method (``partitioned``, ``isend``, ``single``) or, for model rows, the approach
modeled (``partitioned``: any early-bird send, compared with both measured
``partitioned`` and ``isend``; ``single``). Measured ``elapsed_s`` is the median run
(:func:`measured_rows` says why), model rows give expected times. Effective bandwidths
are bytes/s (eq. 4.3). Measured ``effective_bandwidth_Bps`` is the mean of the per-run
bandwidths as the thesis averages its runs; the Monte-Carlo rows use the same
statistic (mean over replicas of size/elapsed); Algorithm 1 gives size / expected
elapsed time, as printed.

Deviations: the ``constant`` distribution has sigma = 0, for which Algorithm 1's
EMMA is degenerate; it is evaluated with sigma = 1e-12 s (no overlap: every partition
is sent after the last thread). ``T_wait`` (the ``MPIX_Wait`` overhead of
Algorithm 1) defaults to 0 and can be given.
"""

from __future__ import annotations

from pathlib import Path

from ..bench.partitioned import KIND, method_status
from ..errors import InputError
from ..models import partitioned as pm
from ..models.machine_model import terms_fitted_from
from ..models.partitioned_terms import median_lead_s
from ..units import format_seconds
from ..runs import Run, open_run
from ..stats.robust import median_se
from ..topology import node_of
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


SOURCES = ("measured", "calibrated", "analytic", "monte-carlo", "monte-carlo-measured")
#: ``model``: "calibrated" (Algorithm 1 fed the terms measured by `bench partitioned
#: --calibrate`, the default with a machine model) or "postal" (Algorithm 1 fed the
#: ping-pong link, as the thesis; the only one for OSU tables and link objects).
MODELS = ("calibrated", "postal")
COLUMNS = [
    "size_bytes",
    "method",
    "source",
    "runs",
    "elapsed_s",
    "elapsed_p05_s",
    "elapsed_p95_s",
    "elapsed_se_s",
    "effective_bandwidth_Bps",
    "messages_overlapped",
]


def _as_run(obj):
    run = obj if isinstance(obj, Run) else open_run(obj)
    run.check()  # a damaged table is the error, never a model quietly left out
    if run.kind != KIND:
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"is {run.kind!r}; expected a partitioned run (commscope bench partitioned)",
        )
    return run


def run_locality(run):
    """Locality of the sender/receiver pair from the run's placement (as cs_locality)."""
    places = {p.get("rank"): p for p in run.meta.get("placement") or []}
    a, b = places.get(0), places.get(1)
    if a is None or b is None:
        raise InputError(
            run.path / "meta.json",
            "placement",
            "no placement of ranks 0 and 1 recorded; give --locality",
        )
    if node_of(a) != node_of(b):
        return "inter-node"
    if a.get("socket", -1) >= 0 and b.get("socket", -1) >= 0 and a["socket"] != b["socket"]:
        return "cross-socket"
    return "intra-socket"


def make_link(*, machine_model=None, osu=None, machine=None, locality=None, ppn=1, run=None):
    """The link the model uses: a machine model (object or path) or an OSU table (path(s)).

    ``machine`` names the machine's columns of an OSU reference CSV (with ``osu`` only).
    """
    if (machine_model is None) == (osu is None):
        raise InputError(
            "link",
            None,
            "give exactly one of a machine model (--machine-model) or an OSU table (--osu)",
        )
    if osu is not None:
        from ..models.osu import load_osu

        source = ",".join(map(str, osu)) if isinstance(osu, (list, tuple)) else str(osu)
        return load_osu(osu, machine), {"link": "osu", "source": source, "machine": machine}
    from ..models.machine_model import canonical_locality, load_machine_model

    if isinstance(machine_model, (str, Path)):
        source, machine_model = str(machine_model), load_machine_model(machine_model)
    else:
        source = "machine model object"
    loc = canonical_locality(locality if locality else run_locality(run), "--locality")
    if not any(k[1] == loc for k in machine_model.params):
        have = sorted({k[1] for k in machine_model.params})
        why = "given with --locality" if locality else "where this run's two ranks ran"
        raise InputError(
            source,
            "locality",
            f"the machine model has no parameters for {loc!r} "
            f"({why}); it has {have}: choose one with --locality",
        )
    return pm.MachineModelLink(machine_model, loc, ppn), {
        "link": "machine-model",
        "source": source,
        "locality": loc,
        "ppn": ppn,
    }


def _distribution(params):
    mu, sigma, dist = params["compute_s"], params["sigma_s"], params["dist"]
    if dist == "constant" or sigma <= 0:
        return pm.thread_time_distribution(mu, 1e-12, "normal")
    return pm.thread_time_distribution(mu, sigma, dist)


def measured_rows(run):
    """Per (method, size): runs, median elapsed and its standard error, 5/95 % quantiles,
    mean bandwidth.

    The elapsed time is the median run, not the mean: on a shared machine a run whose
    thread the OS preempted once (a 2-4 ms time slice) moves a 5-run mean by more than
    a whole 72 KiB exchange takes, and no model term describes preemption.
    """
    df = run.table("samples")
    if df.empty:
        raise InputError(run.table_file("samples"), None, "no rows: nothing was measured")
    if (df["mismatches"] > 0).any():
        bad = df[df["mismatches"] > 0].iloc[0]
        raise InputError(
            run.table_file("samples"),
            "mismatches",
            f"the receiver found wrong bytes ({bad['method']}, "
            f"{bad['size_bytes']} B, run {bad['run']}): not a valid measurement",
        )
    g = df.groupby(["size_bytes", "method"], sort=True)
    out = g.agg(
        runs=("run", "count"),
        elapsed_s=("elapsed_s", "median"),
        elapsed_p05_s=("elapsed_s", lambda x: float(np.percentile(x, 5))),
        elapsed_p95_s=("elapsed_s", lambda x: float(np.percentile(x, 95))),
        elapsed_se_s=("elapsed_s", median_se),
        effective_bandwidth_Bps=("effective_bandwidth_Bps", "mean"),
    ).reset_index()
    out["source"] = "measured"
    out["messages_overlapped"] = np.nan
    return out


def check_provenance(run, machine_model, source="machine model"):
    """InputError when ``run`` is among the runs the machine model was fitted from.

    A model checked against the measurement it was fitted from proves nothing; the
    machine model says where each term came from (``machine.term_sources``, and
    ``source_runs`` of files written before it).
    """
    fitted = terms_fitted_from(run, machine_model)
    if fitted:
        raise InputError(
            source,
            "machine.term_sources",
            f"the {fitted[0]} term was fitted from {run.path}, the run being "
            "predicted: a prediction must not be checked against the data it "
            "came from; predict another run, or fit without this one",
        )


class _TermLink:
    """A link whose message time is a measured term (no separate bandwidth)."""

    def __init__(self, term):
        self.term = term

    def latency_s(self, size_bytes):
        return self.term.at(size_bytes)

    def bandwidth_Bps(self, size_bytes):
        return np.full(np.shape(size_bytes), np.inf)


def calibrated_rows(terms, threads, sizes, dist, source="machine model"):
    """Algorithm 1 fed the calibrated terms: rows for source ``calibrated``.

    Partition message time: ``partition_s(size/N)`` is the last partition's time from
    the last ``MPI_Pready`` in the calibration, which includes the partitions that had
    not moved yet (an MPI without progress sends all N then: ``partition_s`` is the
    whole backlog, N - progress (N - 1) partitions), so one partition costs
    ``partition_s / backlog``. The expected spread of the thread finish times (EMMA, as
    Algorithm 1) times ``progress`` is the time early partitions may use; the single
    send is ``single_s(size)``. ``elapsed_se_s``: the calibration's run-to-run standard
    error of the term behind each time, carried over in proportion.
    """
    t_part = terms.term("partition_s", source)
    t_single = terms.term("single_s", source)
    phi = float(terms.term("progress", source).value)
    n_cal = int(terms.conditions.get("threads") or threads)
    backlog = n_cal - phi * (n_cal - 1)
    ana = pm.model_partitioned(_TermLink(t_part), threads, sizes, 1.0, dist=dist)
    t_p = ana["message_s"].to_numpy(float) / backlog
    m = np.minimum(phi * ana["overlap_s"].to_numpy(float) / t_p, threads - 1)
    elapsed = t_p * (threads - m)
    single = t_single.at(sizes)
    inside = t_part.covers(sizes / threads) & t_single.covers(sizes)
    part = pd.DataFrame(
        {
            "size_bytes": sizes,
            "method": "partitioned",
            "source": "calibrated",
            "elapsed_s": elapsed,
            "effective_bandwidth_Bps": sizes / elapsed,
            "elapsed_se_s": elapsed * t_part.rel_se_at(sizes / threads),
            "messages_overlapped": m,
            "calibrated_range": inside,
        }
    )
    sing = pd.DataFrame(
        {
            "size_bytes": sizes,
            "method": "single",
            "source": "calibrated",
            "elapsed_s": single,
            "effective_bandwidth_Bps": sizes / single,
            "elapsed_se_s": single * t_single.rel_se_at(sizes),
            "calibrated_range": inside,
        }
    )
    return [part, sing]


#: a calibration whose threads were this many times further apart than the predicted
#: run's gets a note: after a 10-20 ms lead, this machine's last partition took 2-3x
#: longer below 1 MiB than after a 1 ms one (docs/machine-model.md)
LEAD_RATIO_NOTED = 4.0


def _calibration_notes(terms, params, threads, lead_s=None):
    """Where the calibration's conditions differ from the predicted run's (``lead_s``:
    its median lead of the first thread over the last)."""
    c, notes = terms.conditions, []
    for key, want in (
        ("threads", threads),
        ("compute_s", float(params["compute_s"])),
        ("compute_mode", params.get("compute_mode", "sleep")),
    ):
        if key in c and c[key] != want:
            notes.append(f"calibrated with {key} = {c[key]}, this run has {want}")
    cal_lead = c.get("lead_s")
    if cal_lead and lead_s and cal_lead > LEAD_RATIO_NOTED * lead_s:
        notes.append(
            f"calibrated with the first thread ready {format_seconds(cal_lead)} before "
            f"the last, this run {format_seconds(lead_s)} (medians): the terms of small "
            "partitions depend on that lead, so the model may be slow below 1 MiB"
        )
    for name, t in terms.terms.items():
        notes += [f"{name}: {f}" for f in t.flags]
    return notes


def predict_partitioned(
    run,
    *,
    machine_model=None,
    osu=None,
    machine=None,
    link=None,
    locality=None,
    ppn=1,
    t_wait_s=0.0,
    replicas=4000,
    seed=0,
    measured_times=True,
    model=None,
):
    """Tidy DataFrame of measured and modeled elapsed time and effective bandwidth.

    ``run``: a partitioned run (path or :class:`Run`). The link is ``link`` (any object
    with ``latency_s`` and ``bandwidth_Bps``), or built from ``machine_model`` (a
    :class:`MachineModel` or a JSON path; locality from where the run's two ranks
    ran unless ``locality`` is given) or ``osu`` (a reference CSV with ``machine``, or
    osu_latency/osu_bw outputs). ``measured_times`` adds the Monte Carlo that resamples
    the run's recorded compute times. Columns: :data:`COLUMNS`; ``df.attrs`` holds the
    parameters and link description.
    """
    run = _as_run(run)
    if model is not None and model not in MODELS:
        raise InputError("--model", None, f"unknown model {model!r}; one of {', '.join(MODELS)}")
    mm = None
    if link is None:
        if machine_model is not None:
            from ..models.machine_model import load_machine_model

            mm = (
                load_machine_model(machine_model)
                if isinstance(machine_model, (str, Path))
                else machine_model
            )
            check_provenance(run, mm, getattr(mm, "source", "machine model"))
        link, link_info = make_link(
            machine_model=mm, osu=osu, machine=machine, locality=locality, ppn=ppn, run=run
        )
        if isinstance(machine_model, (str, Path)):
            link_info["source"] = str(machine_model)
    else:
        link_info = {"link": type(link).__name__}
    if model is None:
        model = "calibrated" if mm is not None else "postal"
    if model == "calibrated" and mm is None:
        raise InputError(
            "--model",
            None,
            "the calibrated model needs a machine model with "
            "partitioned terms (--machine-model); an OSU table or link feeds "
            "only --model postal",
        )
    terms = None
    if model == "calibrated":
        terms = getattr(mm, "partitioned", None)
        if terms is None:
            from ..models.partitioned_terms import raise_missing

            raise_missing(getattr(mm, "source", "machine model"), "partition_s")
    if not (np.isfinite(t_wait_s) and t_wait_s >= 0):
        raise InputError("--t-wait", None, f"must be a number >= 0, got {t_wait_s}")
    params = run.meta["parameters"]
    measured = measured_rows(run)
    sizes = np.sort(measured["size_bytes"].unique()).astype(float)
    threads = int(params["threads"])
    dist = _distribution(params)

    frames = [measured]
    if terms is not None:
        frames += calibrated_rows(
            terms, threads, sizes, dist, getattr(mm, "source", "machine model")
        )
    single = pm.model_single_send(link, sizes)
    frames.append(
        pd.DataFrame(
            {
                "size_bytes": sizes,
                "method": "single",
                "source": "analytic",
                "elapsed_s": single["single_elapsed_s"],
                "effective_bandwidth_Bps": single["single_bandwidth_Bps"],
            }
        )
    )
    ana = pm.model_partitioned(
        link, threads, sizes, params["compute_s"], dist=dist, t_wait_s=t_wait_s
    )
    frames.append(
        pd.DataFrame(
            {
                "size_bytes": sizes,
                "method": "partitioned",
                "source": "analytic",
                "elapsed_s": ana["elapsed_s"],
                "effective_bandwidth_Bps": ana["bandwidth_Bps"],
                "messages_overlapped": ana["messages_overlapped"],
            }
        )
    )
    sims = [("monte-carlo", dist)]
    if measured_times:
        comp = run.table("compute")
        if len(comp):
            sims.append(("monte-carlo-measured", comp["actual_s"].to_numpy(float)))
    for source, times in sims:
        mc = pm.simulate_partitioned(
            link, threads, sizes, times, replicas=replicas, seed=seed, t_wait_s=t_wait_s
        )
        frames.append(
            pd.DataFrame(
                {
                    "size_bytes": sizes,
                    "method": "partitioned",
                    "source": source,
                    "runs": replicas,
                    "elapsed_s": mc["mc_elapsed_s"],
                    "elapsed_p05_s": mc["mc_elapsed_p05_s"],
                    "elapsed_p95_s": mc["mc_elapsed_p95_s"],
                    "effective_bandwidth_Bps": mc["mc_bandwidth_mean_Bps"],
                    "messages_overlapped": mc["mc_messages_overlapped"],
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out["size_bytes"] = out["size_bytes"].astype(np.int64)
    out["runs"] = out["runs"].astype("Int64")  # a count, missing for the analytic model
    out = out.reindex(columns=COLUMNS + (["calibrated_range"] if terms is not None else []))
    order = {s: i for i, s in enumerate(SOURCES)}
    out = out.sort_values(
        ["size_bytes", "source", "method"],
        key=lambda c: c.map(order) if c.name == "source" else c,
        kind="stable",
    ).reset_index(drop=True)
    out.attrs.update(
        run=str(run.path),
        threads=threads,
        compute_s=params["compute_s"],
        sigma_s=params["sigma_s"],
        dist=params["dist"],
        t_wait_s=t_wait_s,
        replicas=replicas,
        seed=seed,
        skipped={m: note for m, (st, note) in method_status(run).items() if st == "skipped"},
        model=model,
        **link_info,
    )
    out.attrs["progress"] = progress_attrs(run, mm)
    if terms is not None:
        out.attrs["terms"] = {k: t.to_dict() for k, t in terms.terms.items()}
        out.attrs["calibration"] = dict(terms.conditions, source_runs=terms.source_runs)
        out.attrs["notes"] = _calibration_notes(
            terms, params, threads, median_lead_s(run.table("samples"))
        )
    return out


def progress_attrs(run, machine_model):
    """What :func:`comparison_table` needs to judge the early-bird saving by this MPI's
    progress (JSON, for ``df.attrs``): the run's compute kind, its MPI, and the machine
    model's progress entry for that MPI (none: not probed). The benchmark's receiver
    polls (MPI_Parrived, MPI_Testsome): the program calls MPI during the region."""
    from ..models import progress as pg
    from .earlybird_progress import compute_kind

    mpi = pg.library_of(run) or None
    e = pg.entry(machine_model, mpi) if machine_model is not None else None
    return {
        "compute": compute_kind(run.meta["parameters"].get("compute_mode", "sleep")),
        "mpi": mpi,
        "mpi_calls": True,
        "section": {pg.entry_key(mpi): e} if e else {},
    }


def _with_progress(table, attrs):
    """``model_saving_s`` (model single - model early-bird), ``saving_s`` and the
    ``progress`` regime with its ``progress_note``, per size
    (:func:`commscope.predict.earlybird_progress.expect`)."""
    from .earlybird_progress import expect

    got = attrs.get("progress")
    if not got or table.empty:
        return table
    mm = {"progress": got["section"], "machine": {"mpi_library": got["mpi"] or ""}}
    threads = int(attrs.get("threads") or 1)
    table["model_saving_s"] = table["model_single_s"] - table["model_partitioned_s"]
    e = [
        expect(mm, size / threads, got["compute"], saving, got["mpi"], got["mpi_calls"], size)
        for size, saving in zip(table["size_bytes"], table["model_saving_s"])
    ]
    table["saving_s"] = [x.saving_s for x in e]
    table["progress"] = [x.regime for x in e]
    table["progress_note"] = [x.condition for x in e]
    return table


def comparison_table(pred):
    """One row per size: measured and modeled elapsed/bandwidth side by side, and wins.

    ``*_beats_single``: the early-bird approach has a lower elapsed time than the
    single send, measured (median runs, per measured method) or modeled (expected
    times; analytic: Algorithm 1 vs the postal single send; mc: Monte Carlo vs the same
    single send).
    ``measured_verdict``: "early-bird", "single", or "tie" when the two measured medians
    differ by less than twice the standard error of their difference; ``model_verdict``
    the same for the calibrated model's two times and the standard errors of the
    calibration behind them. A tie on either side is no verdict to agree or disagree
    with: ``verdict_agrees`` is None. With ``pred.attrs["progress"]``
    (:func:`progress_attrs`): the saving this MPI's progress allows, ``saving_s``.
    """
    values = ["elapsed_s", "effective_bandwidth_Bps"] + (
        ["elapsed_se_s"] if "elapsed_se_s" in pred else []
    )
    wide = pred.pivot_table(
        index="size_bytes",
        columns=["source", "method"],
        values=values,
        aggfunc="first",
        dropna=False,
    )
    rows = []
    for size in wide.index:

        def get(value, source, method):
            key = (value, source, method)
            return float(wide.loc[size, key]) if key in wide.columns else np.nan

        row = {"size_bytes": int(size)}
        for m in ("partitioned", "isend", "single"):
            row[f"measured_{m}_s"] = get("elapsed_s", "measured", m)
        row["analytic_partitioned_s"] = get("elapsed_s", "analytic", "partitioned")
        row["analytic_single_s"] = get("elapsed_s", "analytic", "single")
        row["mc_partitioned_s"] = get("elapsed_s", "monte-carlo", "partitioned")
        row["mc_measured_partitioned_s"] = get("elapsed_s", "monte-carlo-measured", "partitioned")
        for m in ("partitioned", "isend", "single"):
            row[f"measured_{m}_Bps"] = get("effective_bandwidth_Bps", "measured", m)
        row["analytic_partitioned_Bps"] = get("effective_bandwidth_Bps", "analytic", "partitioned")
        row["analytic_single_Bps"] = get("effective_bandwidth_Bps", "analytic", "single")
        row["mc_partitioned_Bps"] = get("effective_bandwidth_Bps", "monte-carlo", "partitioned")
        row["mc_measured_partitioned_Bps"] = get(
            "effective_bandwidth_Bps", "monte-carlo-measured", "partitioned"
        )
        single = row["measured_single_s"]
        for m in ("partitioned", "isend"):
            v = row[f"measured_{m}_s"]
            row[f"measured_{m}_beats_single"] = (
                bool(v < single) if np.isfinite(v) and np.isfinite(single) else None
            )
        row["analytic_beats_single"] = bool(
            row["analytic_partitioned_s"] < row["analytic_single_s"]
        )
        mc = row["mc_measured_partitioned_s"]
        if not np.isfinite(mc):
            mc = row["mc_partitioned_s"]
        row["mc_beats_single"] = bool(mc < row["analytic_single_s"]) if np.isfinite(mc) else None
        # the model the prediction stands by: calibrated where there is one, else Algorithm 1
        cal_p = get("elapsed_s", "calibrated", "partitioned")
        cal_s = get("elapsed_s", "calibrated", "single")
        row["calibrated_partitioned_s"], row["calibrated_single_s"] = cal_p, cal_s
        calibrated = np.isfinite(cal_p)
        row["model"] = "calibrated" if calibrated else "postal"
        row["model_partitioned_s"] = cal_p if calibrated else row["analytic_partitioned_s"]
        row["model_single_s"] = cal_s if calibrated else row["analytic_single_s"]
        meas_m = "partitioned" if np.isfinite(row["measured_partitioned_s"]) else "isend"
        row["measured_method"] = meas_m
        meas = row[f"measured_{meas_m}_s"]
        row["ratio_partitioned"] = meas / row["model_partitioned_s"]
        row["ratio_single"] = single / row["model_single_s"]
        row["model_beats_single"] = bool(row["model_partitioned_s"] < row["model_single_s"])
        won = row[f"measured_{meas_m}_beats_single"]
        row["measured_verdict"] = _verdict(
            won,
            meas,
            single,
            get("elapsed_se_s", "measured", meas_m),
            get("elapsed_se_s", "measured", "single"),
        )
        source = "calibrated" if calibrated else "analytic"
        row["model_verdict"] = _verdict(
            row["model_beats_single"],
            row["model_partitioned_s"],
            row["model_single_s"],
            get("elapsed_se_s", source, "partitioned"),
            get("elapsed_se_s", source, "single"),
        )
        decided = {row["measured_verdict"], row["model_verdict"]} <= {"early-bird", "single"}
        row["verdict_agrees"] = (
            bool(row["measured_verdict"] == row["model_verdict"]) if decided else None
        )
        rows.append(row)
    return _with_progress(pd.DataFrame(rows), pred.attrs)


def _verdict(early_bird_won, early_s, single_s, early_se_s, single_se_s):
    """ "early-bird", "single", or "tie" when the two times are closer than twice their
    difference's standard error (unknown standard errors: no tie); None when unknown."""
    if early_bird_won is None:
        return None
    se = np.hypot(early_se_s, single_se_s)
    if np.isfinite(se) and abs(early_s - single_s) <= 2 * se:
        return "tie"
    return "early-bird" if early_bird_won else "single"


def accuracy(table, min_size=256 * 1024):
    """How well the model held: median and worst measured/model ratio of the early-bird
    send over sizes >= ``min_size``, and the sizes whose verdict (early-bird vs single)
    differs from the measurement's. Targets of issue 26: median within 25 %, each size
    within 50 %, every verdict the same."""
    big = table[table["size_bytes"] >= min_size]
    r = big["ratio_partitioned"].to_numpy(float)
    r = r[np.isfinite(r)]
    wrong = [int(s) for s, v in zip(table["size_bytes"], table["verdict_agrees"]) if v is False]
    worst = float(r[np.argmax(np.abs(r - 1))]) if len(r) else np.nan
    return {
        "min_size_bytes": min_size,
        "sizes": int(len(r)),
        "median_ratio": float(np.median(r)) if len(r) else np.nan,
        "worst_ratio": worst,
        "median_within_25pct": bool(len(r) and abs(np.median(r) - 1) <= 0.25),
        "each_within_50pct": bool(len(r) and np.all(np.abs(r - 1) <= 0.5)),
        "verdicts_differ_at": wrong,
    }


def win_ranges(table):
    """{criterion: [(first, last) size of each run of consecutive sizes where it holds]}.

    A size where the criterion fails (or is unknown) ends a run, so a sentence built from
    these ranges never claims a size that the table and figure show losing.
    """
    t = table.sort_values("size_bytes")
    out = {}
    for col in [c for c in t.columns if c.endswith("_beats_single")]:
        runs, current = [], None
        for size, wins in zip(t["size_bytes"], t[col]):
            if wins is True or (wins is not None and wins == wins and bool(wins)):
                current = (current[0], int(size)) if current else (int(size), int(size))
            elif current:
                runs.append(current)
                current = None
        out[col[: -len("_beats_single")]] = runs + ([current] if current else [])
    return out


def range_text(runs, write=None):
    """'100 .. 200 B, 400 B' for the runs of :func:`win_ranges`; 'nowhere' when empty.

    ``write(size)``: how a size is written with its unit (the report: ``64 KiB``)."""
    if not runs:
        return "nowhere"
    write = write or (lambda b: f"{b} B")
    return ", ".join(write(lo) if lo == hi else f"{write(lo)} .. {write(hi)}" for lo, hi in runs)


def peak(table, measured_method="partitioned"):
    """Size of the measured bandwidth peak of ``measured_method`` and model/measured ratios there."""
    col = f"measured_{measured_method}_Bps"
    if col not in table or not table[col].notna().any():
        return None
    i = table[col].idxmax()
    r = table.loc[i]
    meas = float(r[col])
    return {
        "method": measured_method,
        "size_bytes": int(r["size_bytes"]),
        "measured_Bps": meas,
        "analytic_Bps": float(r["analytic_partitioned_Bps"]),
        "mc_Bps": float(r["mc_partitioned_Bps"]),
        "mc_measured_Bps": float(r["mc_measured_partitioned_Bps"]),
        "measured_over_analytic": meas / float(r["analytic_partitioned_Bps"]),
        "measured_over_mc": meas / float(r["mc_partitioned_Bps"]),
        "measured_over_mc_measured": meas / float(r["mc_measured_partitioned_Bps"]),
    }
