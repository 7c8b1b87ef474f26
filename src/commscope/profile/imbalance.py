"""Load imbalance between ranks (Eberius 2020, Sec. 4.3.2, eqs. 4.1-4.2).

    Imbalance = (L_max - L_ave) / L_ave x 100 %        (4.1)
    Load_rank = Time_total - Time_MPI                   (4.2)

Time_total runs from the end of MPI_Init to MPI_Finalize (the counter file's clock
pairs); Time_MPI is the time inside wrapped MPI calls, so it needs the timers set
(`--counters all`).  A rank with several threads calling MPI counts the mean over
those threads, so that Time_MPI stays a share of the rank's wall time.
"""

import numpy as np
import pandas as pd


def imbalance_percent(loads):
    """Eq. 4.1 for an array of loads (NaN when the mean load is not positive)."""
    loads = np.asarray(loads, dtype=float)
    mean = loads.mean() if loads.size else float("nan")
    return float((loads.max() - mean) / mean * 100) if mean > 0 else float("nan")


def rank_loads(run):
    """Per rank: total_s, mpi_s, load_s (eq. 4.2); None without timers."""
    if "timers" not in run.meta["parameters"].get("counters", []):
        return None
    f = run.table("functions")
    per_thread = f.groupby(["rank", "thread"])["time_s"].sum()
    mpi_s = per_thread.groupby(level="rank").mean()
    total = pd.Series({r["rank"]: r["wall_s"] for r in run.meta["profile"]["ranks"]})
    df = pd.DataFrame({"total_s": total, "mpi_s": mpi_s}).dropna()
    df["load_s"] = df["total_s"] - df["mpi_s"]
    return df.rename_axis("rank").reset_index()


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
    return (s.groupby("seq")["load_s"].apply(imbalance_percent)
             .rename("imbalance_pct").reset_index())
