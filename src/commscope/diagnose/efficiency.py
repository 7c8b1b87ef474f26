"""The POP efficiency hierarchy of one profile run (docs/diagnose.md).

For P ranks with useful time u_p (time outside MPI between MPI_Init and
MPI_Finalize) and run time T:

    parallel efficiency  PE   = mean(u) / T = LB x CommE
    load balance         LB   = mean(u) / max(u)
    communication eff.   CommE = max(u) / T = SerE x TE
    transfer efficiency  TE   = T_ideal / T          (T_ideal: the trace replayed on
    serialisation eff.   SerE = max(u) / T_ideal      an ideal network, replay.py)

TE and SerE need the event trace (``--trace``); without it CommE is not split.  With
OMPT data (``--ompt``) the OpenMP level adds, per rank and over all regions, the
threads' load balance (the summed mean busy time of each region instance's threads
over their summed maximum) and the share of the useful time spent outside parallel
regions; per region, the same thread balance and the balance of the region's time
over ranks.

Per marked phase (the program's MPI_Pcontrol calls, recorded by ``--trace``): phase k
of rank p runs from its k-th mark to its next (the first from MPI_Init, the last to
MPI_Finalize); its useful time is that span minus the rank's time in the MPI calls that
began in it, its run time the latest end over ranks minus the earliest start, and the
same formulas give the phase's MPI level (the ideal replay's mark times its transfer
split).

A rank with several threads calling MPI counts the mean of its threads' time in MPI,
as ``stats imbalance`` does (profile/imbalance.py), so u stays a share of the rank's
wall time.
"""

from __future__ import annotations

from ..lazy import lazy
from ..profile.settings import chosen_sets

np = lazy("numpy")
pd = lazy("pandas")


def useful_times(profile, timeline=None):
    """Per rank: total_s (MPI_Init to MPI_Finalize), mpi_s, useful_s; and where the MPI
    time comes from.  (None, reason) when no time in MPI was measured."""
    ranks = profile.ranks
    counters = chosen_sets(profile.meta)
    functions = profile.functions
    if "timers" in counters and functions is not None and len(functions):
        per_thread = functions.groupby(["rank", "thread"])["time_s"].sum()
        mpi = per_thread.groupby(level="rank").mean()
        basis = "the per-function timers"
    elif timeline is not None:
        c = timeline.calls
        per_thread = (c["end_s"] - c["start_s"]).groupby([c["rank"], c["thread"]]).sum()
        mpi = per_thread.groupby(level="rank").mean()
        basis = "the event trace's calls (timers were off)"
    else:
        return None, (
            "time in MPI was not measured: the run was made without timers "
            "(commscope profile --counters with timers, the default) and without --trace"
        )
    total = pd.Series(ranks["wall_s"].to_numpy(float), index=ranks["rank"].to_numpy())
    df = pd.DataFrame({"total_s": total, "mpi_s": mpi}).dropna()
    df["mpi_s"] = np.minimum(df["mpi_s"], df["total_s"])
    df["useful_s"] = df["total_s"] - df["mpi_s"]
    return df.rename_axis("rank").reset_index(), basis


def mpi_level(useful, runtime_s, ideal_runtime_s=None):
    """The MPI level of the hierarchy from per-rank useful times (a dict of floats; the
    transfer split only with ``ideal_runtime_s``)."""
    u = useful["useful_s"].to_numpy(float)
    if not len(u) or runtime_s <= 0 or u.max() <= 0:
        return None
    out = {
        "runtime_s": runtime_s,
        "useful_mean_s": float(u.mean()),
        "useful_max_s": float(u.max()),
        "parallel_efficiency": float(u.mean() / runtime_s),
        "load_balance_efficiency": float(u.mean() / u.max()),
        "communication_efficiency": float(min(u.max() / runtime_s, 1.0)),
        "serialisation_efficiency": None,
        "transfer_efficiency": None,
        "ideal_runtime_s": None,
    }
    if ideal_runtime_s is not None and ideal_runtime_s > 0:
        out.update(
            ideal_runtime_s=float(ideal_runtime_s),
            transfer_efficiency=float(min(ideal_runtime_s / runtime_s, 1.0)),
            serialisation_efficiency=float(min(u.max() / ideal_runtime_s, 1.0)),
        )
    return out


#: The function whose traced calls mark phase boundaries.
MARK_FUNCTION = "MPI_Pcontrol"


def phase_levels(timeline, ideal=None):
    """The MPI level per marked phase: a list of dicts (phase, begin, end: the marks'
    call sites, "MPI_Init" and "MPI_Finalize" at the ends; and mpi_level's keys); []
    without marks.  ``ideal``: the network=ideal :class:`~.replay.Replay` (the transfer
    split).  Ranks that marked different numbers of phases raise ValueError."""
    c = timeline.calls
    is_mark = (c["function"] == MARK_FUNCTION).to_numpy()
    if not is_mark.any():
        return []
    win = timeline.window.set_index("rank")
    marks = c[is_mark].sort_values(["rank", "start_s"])
    per_rank = marks.groupby("rank").size().reindex(win.index).fillna(0).astype(int)
    if per_rank.nunique() != 1:
        raise ValueError(
            "ranks marked different numbers of phases with MPI_Pcontrol ("
            + ", ".join(f"rank {r}: {n}" for r, n in per_rank.items())
            + ")"
        )
    k = int(per_rank.iloc[0])
    sites = marks.groupby("rank")["callsite"].apply(list).iloc[0]
    names = ["MPI_Init"] + [s or MARK_FUNCTION for s in sites] + ["MPI_Finalize"]
    bounds = {
        r: np.r_[win.at[r, "init_s"], g["start_s"].to_numpy(), win.at[r, "fin_s"]]
        for r, g in marks.groupby("rank")
    }
    ideal_bounds = None
    if ideal is not None and ideal.call_end_s is not None:
        ideal_bounds = {
            r: np.r_[
                win.at[r, "init_s"],
                ideal.call_end_s[g.index.to_numpy()],
                ideal.end_s.get(r, win.at[r, "fin_s"]),
            ]
            for r, g in marks.groupby("rank")
        }
    calls = c[~is_mark]
    nthreads = calls.groupby("rank")["thread"].nunique()
    mpi = np.zeros((len(bounds), k + 1))
    order = sorted(bounds)
    for i, r in enumerate(order):
        g = calls[calls["rank"] == r]
        phase = np.clip(np.searchsorted(bounds[r], g["start_s"].to_numpy(), "right") - 1, 0, k)
        np.add.at(mpi[i], phase, (g["end_s"] - g["start_s"]).to_numpy())
        mpi[i] /= max(int(nthreads.get(r, 1)), 1)
    out = []
    for j in range(k + 1):
        lo = np.array([bounds[r][j] for r in order])
        hi = np.array([bounds[r][j + 1] for r in order])
        span = hi - lo
        useful = pd.DataFrame({"useful_s": np.maximum(span - np.minimum(mpi[:, j], span), 0)})
        ideal_s = None
        if ideal_bounds is not None:
            ideal_s = float(
                max(ideal_bounds[r][j + 1] for r in order) - min(ideal_bounds[r][j] for r in order)
            )
        level = mpi_level(useful, float(hi.max() - lo.min()), ideal_s)
        if level is not None:
            out.append({"phase": j, "begin": names[j], "end": names[j + 1], **level})
    return out


def region_instances(threads):
    """One row per OpenMP region instance of a rank: rank, region, instance, start_s,
    end_s (the last thread's arrival at its end; rank_t0-relative), threads, mean_busy_s,
    max_busy_s, slowest_thread."""
    # the region ends when its last thread arrives at the closing barrier (a thread
    # leaves it only when woken for the next region, with a passive wait policy)
    busy = threads.groupby(["rank", "region", "instance", "thread"], sort=False).agg(
        busy_s=("compute_time_s", "sum"), start_s=("start_s", "min"), end_s=("arrival_s", "max")
    )
    g = busy.groupby(level=["rank", "region", "instance"], sort=False)
    out = g.agg(
        start_s=("start_s", "min"),
        end_s=("end_s", "max"),
        mean_busy_s=("busy_s", "mean"),
        max_busy_s=("busy_s", "max"),
        threads=("busy_s", "size"),
    )
    out["slowest_thread"] = g["busy_s"].idxmax().map(lambda k: k[-1])
    return out.reset_index()


def openmp_level(threads, useful):
    """The OpenMP level: per run and per region (None without OMPT data)."""
    if threads is None or not len(threads):
        return None
    inst = region_instances(threads)
    inst["region_s"] = inst["end_s"] - inst["start_s"]
    per_rank = inst.groupby("rank").agg(
        in_regions_s=("region_s", "sum"),
        mean_busy_s=("mean_busy_s", "sum"),
        max_busy_s=("max_busy_s", "sum"),
    )
    u = useful.set_index("rank")["useful_s"] if useful is not None else None
    outside = None
    if u is not None:
        share = 1 - per_rank["in_regions_s"].reindex(u.index).fillna(0) / u.replace(0, np.nan)
        outside = float(np.clip(share.mean(), 0, 1)) if share.notna().any() else None
    regions = []
    for region, g in inst.groupby("region"):
        per = g.groupby("rank")["region_s"].sum()
        regions.append(
            {
                "region": str(region),
                "instances": int(len(g)),
                "time_s": float(g["region_s"].sum() / max(g["rank"].nunique(), 1)),
                "thread_load_balance_efficiency": float(
                    g["mean_busy_s"].sum() / g["max_busy_s"].sum()
                )
                if g["max_busy_s"].sum() > 0
                else None,
                "rank_load_balance_efficiency": float(per.mean() / per.max())
                if per.max() > 0
                else None,
            }
        )
    regions.sort(key=lambda r: -r["time_s"])
    return {
        "thread_load_balance_efficiency": float(
            per_rank["mean_busy_s"].sum() / per_rank["max_busy_s"].sum()
        )
        if per_rank["max_busy_s"].sum() > 0
        else None,
        "outside_parallel_regions_share": outside,
        "regions": regions,
    }
