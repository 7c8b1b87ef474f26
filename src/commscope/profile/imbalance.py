"""Load imbalance between ranks (Eberius 2020, Sec. 4.3.2, eqs. 4.1-4.2).

    Imbalance = (L_max - L_ave) / L_ave x 100 %        (4.1)
    Load_rank = Time_total - Time_MPI                   (4.2)

Time_total runs from the end of MPI_Init to MPI_Finalize (the counter file's clock
pairs); Time_MPI is the time inside wrapped MPI calls, so it needs the timers set (on
by default; not measured with a --counters list without timers).  A rank with several
threads calling MPI counts the mean over those threads, so that Time_MPI stays a share
of the rank's wall time: the rule of profile/views.py, shared by every view.
"""

from ..lazy import lazy
from .views import rank_times, run_timed

np = lazy("numpy")
pd = lazy("pandas")


def imbalance_percent(loads):
    """Eq. 4.1 for an array of loads (NaN when the mean load is not positive)."""
    loads = np.asarray(loads, dtype=float)
    mean = loads.mean() if loads.size else float("nan")
    return float((loads.max() - mean) / mean * 100) if mean > 0 else float("nan")


def rank_loads(run):
    """Per rank: total_s, mpi_s, load_s (eq. 4.2); None without timers."""
    if not run_timed(run) or "functions" not in run.tables():
        return None
    t = rank_times(run).dropna(subset=["wall_s", "mpi_time_s"])
    return pd.DataFrame(
        {
            "rank": t["rank"].to_numpy(),
            "total_s": t["wall_s"].to_numpy(),
            "mpi_s": t["mpi_time_s"].to_numpy(),
            "load_s": t["compute_s"].to_numpy(),
        }
    )


def imbalance_over_time(run):
    """Eq. 4.1 per snapshot interval, from the snapshots' time in MPI (timers only)."""
    s = run.table("snapshots")
    if s["mpi_time_s"].isna().all():
        return None
    threads = run.table("functions").groupby("rank")["thread"].nunique()
    s = s.sort_values(["rank", "seq"])
    s["mpi_time_s"] = s["mpi_time_s"] / s["rank"].map(threads)
    s["dt_s"] = s.groupby("rank")["time_s"].diff()
    s["dmpi_s"] = s.groupby("rank")["mpi_time_s"].diff()
    s["load_s"] = s["dt_s"] - s["dmpi_s"]
    s = s.dropna(subset=["load_s"])
    return s.groupby("seq")["load_s"].apply(imbalance_percent).rename("imbalance_pct").reset_index()


# ----------------------------------------------------------------------------- threads


def thread_loads(threads):
    """Per rank and thread: busy_s, the summed compute time of every OpenMP segment the
    OMPT tool recorded (``threads`` table); per region too when ``by_region``."""
    return (
        threads.groupby(["rank", "thread"])["compute_time_s"].sum().rename("busy_s").reset_index()
    )


def thread_imbalance(threads, by_region=False):
    """Per rank (and region): eq. 4.1 over the rank's threads (load = busy time in
    OpenMP regions) and the threads' efficiency, mean busy / max busy (1 = balanced):
    the CPU analogue of 001's GPU efficiency (eq. 4.3)."""
    keys = ["rank", "region"] if by_region else ["rank"]
    busy = threads.groupby(keys + ["thread"])["compute_time_s"].sum()
    rows = []
    for key, b in busy.groupby(level=keys if by_region else "rank"):
        b = b.to_numpy(float)
        key = key if isinstance(key, tuple) else (key,)
        rows.append(
            {
                **dict(zip(keys, key)),
                "threads": b.size,
                "mean_busy_s": b.mean(),
                "max_busy_s": b.max(),
                "efficiency": b.mean() / b.max() if b.max() > 0 else float("nan"),
                "thread_imbalance_pct": imbalance_percent(b),
            }
        )
    return pd.DataFrame(rows)


def hierarchical_imbalance(process_loads, efficiency):
    """Eqs. 4.4-4.5: adjusted load = load x efficiency per rank, then eq. 4.1.

    ``process_loads``: DataFrame rank, load_s (eq. 4.2, :func:`rank_loads`);
    ``efficiency``: DataFrame rank, efficiency (threads: :func:`thread_imbalance`;
    GPUs: :func:`gpu_efficiency`).  Returns (per-rank DataFrame, summary dict).
    """
    df = process_loads[["rank", "load_s"]].merge(efficiency[["rank", "efficiency"]], on="rank")
    df["adjusted_load_s"] = df["load_s"] * df["efficiency"]
    return df, {
        "process_imbalance_pct": imbalance_percent(df["load_s"]),
        "adjusted_imbalance_pct": imbalance_percent(df["adjusted_load_s"]),
        "ranks": int(len(df)),
    }


# ----------------------------------------------------------------------------- GPUs

#: Accepted metric names (nvprof, then Nsight Compute equivalents) -> what they are.
SM_EFFICIENCY = ("sm_efficiency", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed")
WARP_EFFICIENCY = (
    "warp_execution_efficiency",
    "smsp__thread_inst_executed_per_inst_executed.pct",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
)
DURATION = ("gpu__time_duration.sum", "gpu__time_duration.avg")
_TIME_UNITS = {
    "nsecond": 1e-9,
    "ns": 1e-9,
    "usecond": 1e-6,
    "us": 1e-6,
    "msecond": 1e-3,
    "ms": 1e-3,
    "second": 1.0,
    "s": 1.0,
}


def _read_metrics_csv(path):
    """A CSV export whose header line may follow tool banner lines ("==..." or text)."""
    from pathlib import Path
    from ..errors import InputError

    path = Path(path)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise InputError(path, None, f"cannot read ({exc.strerror})") from None
    start = next((i for i, ln in enumerate(lines) if "Metric Name" in ln), None)
    if start is None:
        raise InputError(
            path,
            "Metric Name",
            "column missing: not an nvprof --metrics --csv or Nsight Compute --csv export",
        )
    import io

    return pd.read_csv(io.StringIO("\n".join(lines[start:])), thousands=",")


def _as_fraction(values, unit_or_name):
    """Percentages ("95.1%", 95.1, unit %) or ratios -> fractions in [0, 1]."""
    v = pd.to_numeric(
        pd.Series(values).astype(str).str.rstrip("%").str.strip(), errors="coerce"
    ).to_numpy(float)
    if unit_or_name.endswith(".ratio"):
        return v / 32.0 if np.nanmax(v, initial=0) > 1 else v  # threads per warp
    return v / 100.0


def gpu_efficiency(path):
    """SM and warp execution efficiency of one rank's kernels, and GPU_eff (eq. 4.3).

    Accepted exports (one file per rank):

    * nvprof ``--metrics sm_efficiency,warp_execution_efficiency --csv``: columns
      ``Kernel``, ``Invocations``, ``Metric Name``, ``Avg`` (values in %, with or
      without the sign); kernels are weighted by invocations;
    * Nsight Compute ``--csv`` (``ncu --metrics ...``): columns ``Kernel Name``,
      ``Metric Name``, ``Metric Unit``, ``Metric Value``, with
      ``sm__cycles_active.avg.pct_of_peak_sustained_elapsed`` (SM efficiency, %) and
      ``smsp__thread_inst_executed_per_inst_executed.pct`` (%) or ``.ratio`` (threads
      per warp, of 32) for warp execution efficiency, optionally
      ``gpu__time_duration.sum`` (kernel time, weights the kernels and gives time_s).

    Returns a dict: sm_efficiency, warp_efficiency, efficiency (their product),
    time_s (summed kernel time, NaN when the file has none), kernels.
    """
    from ..errors import InputError

    df = _read_metrics_csv(path)
    if "Avg" in df.columns:  # nvprof
        need = ["Metric Name", "Avg"]
        value_col, weight_col, kernel_col = "Avg", "Invocations", "Kernel"
    else:  # Nsight Compute
        need = ["Metric Name", "Metric Value"]
        value_col, weight_col, kernel_col = "Metric Value", None, "Kernel Name"
    for col in need:
        if col not in df.columns:
            raise InputError(path, col, "column missing")
    names = df["Metric Name"].astype(str)
    if kernel_col not in df.columns:
        df[kernel_col] = "all"
    df["_kernel_row"] = df.groupby("Metric Name").cumcount()

    def metric(options, what):
        for name in options:
            sel = df[names == name]
            if len(sel):
                units = (
                    sel["Metric Unit"].fillna("").astype(str).str.lower()
                    if "Metric Unit" in sel
                    else pd.Series("%", index=sel.index)
                )
                if name in DURATION:
                    frac = pd.to_numeric(
                        sel[value_col].astype(str).str.replace(",", ""), errors="coerce"
                    ).to_numpy(float) * units.map(_TIME_UNITS).to_numpy(float)
                else:
                    frac = _as_fraction(sel[value_col], name)
                if np.isnan(frac).any():
                    raise InputError(
                        path,
                        name,
                        f"non-numeric value or unknown unit "
                        f"({', '.join(sorted(set(units)))}) in column {value_col}",
                    )
                return sel.assign(_v=frac)
        if what is None:
            return None
        raise InputError(path, what, f"metric missing (accepted: {', '.join(options)})")

    sm = metric(SM_EFFICIENCY, "sm_efficiency")
    warp = metric(WARP_EFFICIENCY, "warp_execution_efficiency")
    dur = metric(DURATION, None)
    if weight_col and weight_col in df.columns:
        w_sm = pd.to_numeric(sm[weight_col], errors="coerce").to_numpy(float)
        w_warp = pd.to_numeric(warp[weight_col], errors="coerce").to_numpy(float)
    elif dur is not None and len(dur) == len(sm) == len(warp):
        w_sm = w_warp = dur["_v"].to_numpy(float)
    else:
        w_sm, w_warp = np.ones(len(sm)), np.ones(len(warp))
    sm_eff = float(np.average(sm["_v"], weights=w_sm))
    warp_eff = float(np.average(warp["_v"], weights=w_warp))
    return {
        "sm_efficiency": sm_eff,
        "warp_efficiency": warp_eff,
        "efficiency": sm_eff * warp_eff,
        "time_s": float(dur["_v"].sum()) if dur is not None else float("nan"),
        "kernels": int(len(sm)),
    }


def gpu_imbalance(paths, loads_s=None):
    """Eqs. 4.1 and 4.5 over ranks from per-rank GPU metric exports (``paths[r]`` is
    rank r).  Load = the file's kernel time, or ``loads_s[r]`` (e.g. eq. 4.2 from the
    counters) when given.  Returns (per-rank DataFrame, summary dict)."""
    from ..errors import InputError

    rows = []
    for r, p in enumerate(paths):
        e = gpu_efficiency(p)
        load = loads_s[r] if loads_s is not None else e["time_s"]
        if not np.isfinite(load):
            raise InputError(
                p,
                "gpu__time_duration.sum",
                "no kernel time in the file; give "
                "the ranks' loads (a profile run with --counters all)",
            )
        rows.append({"rank": r, "file": str(p), **e, "load_s": load})
    df = pd.DataFrame(rows)
    per, summary = hierarchical_imbalance(df[["rank", "load_s"]], df[["rank", "efficiency"]])
    return df.assign(adjusted_load_s=per["adjusted_load_s"].to_numpy()), summary


def region_process_imbalance(threads):
    """Per region: eq. 4.1 over ranks, a rank's load being the region's time on it (per
    instance, its slowest thread's busy time, summed over instances)."""
    per_inst = threads.groupby(["region", "rank", "instance"])["compute_time_s"].max()
    loads = per_inst.groupby(level=["region", "rank"]).sum()
    rows = [
        {
            "region": region,
            "ranks": int(s.size),
            "mean_load_s": float(s.mean()),
            "max_load_s": float(s.max()),
            "process_imbalance_pct": imbalance_percent(s),
        }
        for region, s in loads.groupby(level="region")
    ]
    return pd.DataFrame(rows)
