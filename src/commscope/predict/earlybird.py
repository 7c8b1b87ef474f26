"""The early-bird advisor: for each OpenMP region of a run, would partitioned
(early-bird) sends after the region pay off, and by how much?

Joins three parts commscope already has:

* the per-thread arrivals of every region instance (``threads`` table: OMPT, from
  ``profile --ompt`` or ``bench threads/partitioned --ompt``), summarised with the
  metrics of Marts et al. (2023) Sec. 4.2 (:mod:`commscope.stats.arrivals`): arrival
  spread, laggard share, average reclaimable time, and both idle ratios (the printed
  R / (n max) and the range-normalised R / (n (max - min)));
* the bytes each rank sends per instance of the region: ``--size``, else the
  event trace of the same run (``profile --ompt --trace``: every send between the
  end of an instance and the start of the next region), else its MPI counters
  (point-to-point bytes sent by the rank divided by the region's instances on that
  rank: exact when the region is the only phase that is followed by sends, an upper
  bound otherwise);
* the partitioned-communication model of Dominguez-Trujillo (2021) Ch. 4
  (:mod:`commscope.models.partitioned`): the single send after the region (postal
  time of the whole buffer after the last thread), Algorithm 1 (normal thread times
  with the measured mean and within-iteration standard deviation) and the Monte
  Carlo that resamples the *measured* arrival vectors (whole iterations, so the
  real spread and laggards are kept), each partition sent when its thread arrives.

The model's saving per iteration = single - partitioned (Monte Carlo), which assumes
each partition leaves at its ``MPI_Pready``; the saving to expect (``saving_s``) is what
this MPI's progress, measured by ``bench progress`` into the machine model, makes of it
(:func:`commscope.predict.earlybird_progress.expect`, for partitions of the bytes per
iteration over the threads and the threads' compute kind: ``busy`` by default), with
the condition in ``progress_note``. A region is worth changing when that saving is at
least ``min_saving_s`` and at least ``min_saving_fraction`` of the time it would save
from (slowest arrival + single send); otherwise the advisor says why not.
"""

from __future__ import annotations


from ..errors import InputError
from ..units import format_seconds
from ..models import partitioned as pm
from ..stats import arrivals
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


COLUMNS = [
    "region",
    "instances",
    "threads",
    "median_arrival_s",
    "spread_s",
    "laggard_share",
    "avg_reclaimable_s",
    "idle_ratio_printed",
    "idle_ratio_range",
    "bytes_per_iteration",
    "bytes_source",
    "single_s",
    "partitioned_alg1_s",
    "partitioned_mc_s",
    "single_bandwidth_Bps",
    "partitioned_mc_bandwidth_Bps",
    "saving_alg1_s",
    "saving_mc_s",
    "saving_s",
    "progress",
    "progress_note",
    "saving_pct",
    "worth_changing",
    "verdict",
]


def link_for(run, machine_model="bluewaters", osu=None, machine=None, locality=None, ppn=1):
    """The link of the model (see :func:`commscope.predict.partitioned.make_link`);
    locality from where ranks 0 and 1 ran, else intra-socket on a single host."""
    from .partitioned import make_link, run_locality

    if machine_model is not None and osu is not None:
        raise InputError("--machine-model/--osu", None, "give one of --machine-model or --osu")
    if locality is None and osu is None:
        try:
            locality = run_locality(run)
        except InputError:
            hosts = run.meta.get("hosts") or []
            locality = "intra-socket" if len(set(hosts)) <= 1 else "inter-node"
    return make_link(
        machine_model=None if osu else machine_model,
        osu=osu,
        machine=machine,
        locality=locality,
        ppn=ppn,
        run=run,
    )


def threads_table(run):
    """The run's per-thread arrivals (OMPT), with a clear error when it has none."""
    if "threads" not in run.tables():
        raise InputError(
            run.table_file("threads"),
            None,
            "missing: no per-thread arrivals in "
            "this run: record them with `commscope profile --ompt` (or bench "
            "threads/partitioned --ompt)",
        )
    return arrivals.validate_arrivals(run.table("threads"), source=run.table_file("threads"))


def bytes_after_regions(run):
    """{region: (bytes per instance, source)} from the run's event trace: a send counts
    for the region instance that ended last before it, when no other region had begun
    (sends inside regions or before the first one count for none).  None without a
    trace."""
    from ..collect.trace import read_trace, trace_files

    if not trace_files(run.raw_dir):
        return None
    trace = read_trace(run.raw_dir, check=False, callsites=False)
    sends = trace.events[trace.events["event"].isin(("SEND", "ISEND"))]
    threads = run.table("threads")
    closing = threads[threads["barrier"] == "closing"]
    per_region = {}
    for rank, sub in closing.groupby("rank"):
        mine = sends[sends["rank"] == rank]
        if rank not in trace.clocks:
            continue
        t0 = int(sub["rank_t0_ns"].iloc[0])
        inst = (
            sub.groupby("instance")
            .agg(region=("region", "first"), start=("start_s", "min"), end=("leave_s", "max"))
            .sort_values("start")
        )
        # every region instance of the rank (all segments) bounds the "after" window
        starts = (
            np.sort(
                threads[threads["rank"] == rank].groupby("instance")["start_s"].min().to_numpy()
            )
            * 1e9
            + t0
        )
        ends = inst["end"].to_numpy() * 1e9 + t0
        t = trace.ns_of(rank, mine["t_begin"].to_numpy(), aligned=False)  # the OMPT times' clock
        nbytes = mine["bytes"].to_numpy(float)
        k = np.searchsorted(ends, t, side="right") - 1
        nxt = np.searchsorted(starts, t, side="left")
        next_start = np.where(nxt < starts.size, starts[np.minimum(nxt, starts.size - 1)], np.inf)
        ok = (k >= 0) & (t < next_start)
        got = np.bincount(k[ok], weights=nbytes[ok], minlength=len(inst))
        for region, total, n in (
            pd.DataFrame({"region": inst["region"].to_numpy(), "b": got})
            .groupby("region")["b"]
            .agg(["sum", "size"])
            .itertuples()
        ):
            per_region.setdefault(region, []).append(total / n)
    return {
        r: (float(np.mean(v)), "trace: sends after the region, before the next")
        for r, v in per_region.items()
    }


def bytes_per_instance(run, regions_instances):
    """{region: (bytes per instance, source)} from the run's MPI counters (None when the
    run has no counters).  ``regions_instances``: DataFrame region, rank, instances."""
    tables = run.tables()
    if "counters" not in tables:
        return None
    # No peers table: the counters saw no point-to-point message at all.
    sent = (
        run.table("peers").groupby("rank")["bytes_sent"].sum()
        if "peers" in tables
        else pd.Series(dtype=float)
    )
    out = {}
    for region, sub in regions_instances.groupby("region"):
        per_rank = [sent.get(r, 0) / n for r, n in zip(sub["rank"], sub["instances"]) if n > 0]
        out[region] = (
            float(np.mean(per_rank)) if per_rank else 0.0,
            "counters: bytes sent / instances",
        )
    return out


def _arrival_matrix(df, region):
    """(process-iterations, threads) compute times of one region, most common team size."""
    g = arrivals.group_samples(df[df["region"] == region], "process-iteration")
    sizes, counts = np.unique(g.sizes, return_counts=True)
    n = int(sizes[np.argmax(counts)])
    mats = [m for idx, m in g.blocks() if m.shape[1] == n]
    return np.vstack(mats), n


def advise(
    run,
    link,
    *,
    message_size=None,
    threshold_s=1e-3,
    min_saving_s=10e-6,
    min_saving_fraction=0.02,
    replicas=2000,
    seed=0,
    compute="busy",
    mpi_calls=False,
):
    """One row per region (:data:`COLUMNS`), ranked by the saving to expect per iteration.

    ``compute``: how the region's threads compute ("busy" or "blocked", the progress
    probe's kinds); ``mpi_calls``: the program calls MPI during the region."""
    if message_size is not None and not message_size > 0:
        raise InputError("--size", None, f"must be > 0 bytes, got {message_size}")
    df = threads_table(run)
    pi = arrivals.process_iterations(df, threshold_s)
    summary = arrivals.idle_summary(df, threshold_s, per_iter=pi)
    pi["spread_s"] = pi["max_s"] - pi["min_s"]
    per_region = pi.groupby("region").agg(
        spread_s=("spread_s", "mean"), max_arrival_s=("max_s", "mean")
    )
    inst = pi.groupby(["region", "rank"]).size().rename("instances").reset_index()
    counted = None
    if message_size is None:
        counted = bytes_after_regions(run) or bytes_per_instance(run, inst)
    rows = []
    for rec in summary.itertuples():
        mat, n = _arrival_matrix(df, rec.region)
        row = {
            "region": rec.region,
            "instances": int(rec.process_iterations),
            "threads": n,
            "median_arrival_s": rec.mean_median_arrival_s,
            "spread_s": per_region.loc[rec.region, "spread_s"],
            "laggard_share": rec.laggard_fraction,
            "avg_reclaimable_s": rec.avg_reclaimable_s,
            "idle_ratio_printed": rec.idle_ratio_printed,
            "idle_ratio_range": rec.idle_ratio_range,
        }
        if message_size is not None:
            size, source = float(message_size), "--size"
        elif counted is not None:
            size, source = counted.get(rec.region, (0.0, "counters"))
        else:
            size, source = None, "unknown (no MPI counters; give --size)"
        row.update(bytes_per_iteration=size, bytes_source=source)
        row.update(_predict(link, n, size, mat, replicas, seed))
        row.update(_progress(run, link, n, size, row["saving_mc_s"], compute, mpi_calls))
        row.update(
            _verdict(
                row, per_region.loc[rec.region, "max_arrival_s"], min_saving_s, min_saving_fraction
            )
        )
        rows.append(row)
    out = pd.DataFrame(rows).reindex(columns=COLUMNS)
    out = out.sort_values("saving_s", ascending=False, na_position="last", kind="stable")
    return out.reset_index(drop=True)


def _predict(link, n, size, mat, replicas, seed):
    """Single vs partitioned time and bandwidth for one region (NaN without bytes)."""
    keys = (
        "single_s",
        "partitioned_alg1_s",
        "partitioned_mc_s",
        "single_bandwidth_Bps",
        "partitioned_mc_bandwidth_Bps",
        "saving_alg1_s",
        "saving_mc_s",
    )
    if not size or n < 2:
        return dict.fromkeys(keys, np.nan)
    sizes = [size]
    single = float(pm.model_single_send(link, sizes)["single_elapsed_s"].iloc[0])
    # Algorithm 1's normal: measured mean, spread *within* iterations (pooled
    # variance of each iteration's threads), not across iterations.
    sd = float(np.sqrt(np.mean(np.var(mat, axis=1, ddof=1)))) if mat.shape[1] > 1 else 0.0
    alg1 = float(
        pm.model_partitioned(link, n, sizes, float(mat.mean()), sigma_s=max(sd, 1e-12))[
            "elapsed_s"
        ].iloc[0]
    )
    mc = float(
        pm.simulate_partitioned(link, n, sizes, mat, replicas=replicas, seed=seed)[
            "mc_elapsed_s"
        ].iloc[0]
    )
    return dict(zip(keys, (single, alg1, mc, size / single, size / mc, single - alg1, single - mc)))


def _progress(run, link, n, size, model_saving_s, compute, mpi_calls):
    """The saving this MPI's progress allows (:mod:`.earlybird_progress`)."""
    from ..models.progress import library_of
    from .earlybird_progress import expect

    if not size or n < 2:
        return {"saving_s": model_saving_s, "progress": None, "progress_note": None}
    e = expect(
        getattr(link, "machine_model", None),
        size / n,
        compute,
        model_saving_s,
        mpi=library_of(run) or None,
        mpi_calls=mpi_calls,
        message_bytes=size,
    )
    return {"saving_s": e.saving_s, "progress": e.regime, "progress_note": e.condition}


def _verdict(row, max_arrival_s, min_saving_s, min_fraction):
    saving = row["saving_s"]
    if row["threads"] < 2:
        return {
            "saving_pct": np.nan,
            "worth_changing": False,
            "verdict": "one thread: nothing arrives early",
        }
    if not row["bytes_per_iteration"]:
        why = (
            "no bytes sent after it"
            if row["bytes_per_iteration"] == 0
            else "bytes sent unknown (give --size)"
        )
        return {"saving_pct": np.nan, "worth_changing": False, "verdict": why}
    if row["bytes_per_iteration"] < 1:
        return {
            "saving_pct": np.nan,
            "worth_changing": False,
            "verdict": "under one byte per iteration sent after it",
        }
    base = max_arrival_s + row["single_s"]
    pct = 100.0 * saving / base if base > 0 else np.nan
    worth = bool(saving >= min_saving_s and saving >= min_fraction * base)
    if worth:
        text = (
            f"worth trying: partitioned sends save {format_seconds(saving)} per iteration "
            f"({pct:.1f}% of slowest arrival + send)"
        )
    elif saving <= 0 < row["saving_mc_s"]:
        text = f"no gain on this MPI: {row['progress_note']}"
    elif saving <= 0:
        text = "no gain: the threads arrive together, the send cannot start earlier"
    else:
        text = (
            f"not worth it: saves {format_seconds(saving)} per iteration ({pct:.1f}%), "
            f"below the threshold ({format_seconds(min_saving_s)} and {min_fraction * 100:g}%)"
        )
    return {"saving_pct": pct, "worth_changing": worth, "verdict": text}


def conclusion(table):
    """One sentence for the whole run."""
    worth = table[table["worth_changing"]]
    if worth.empty:
        return (
            "Nothing worth changing: no region's predicted saving from early-bird "
            "(partitioned) sends reaches the threshold."
        )
    best = worth.iloc[0]
    return (
        f"{len(worth)} region(s) worth changing; best: {best['region']} saves "
        f"{format_seconds(best['saving_s'])} per iteration "
        f"({best['saving_pct']:.1f}%) over {best['instances']} process-iterations."
    )
