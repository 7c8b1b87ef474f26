"""``commscope stats imbalance``: load imbalance of Eberius (2020) ch. 4 on a profile run
and/or per-rank GPU metric exports."""

import math

from ..errors import InputError
from ..output import MISSING, dump_json, print_table
from ..profile.summary import TIMERS_HINT, not_measured_note, printable
from ..runs import open_run

DESCRIPTION = """\
Load imbalance, Eberius (2020) chapter 4: Imbalance = (L_max - L_ave) / L_ave x 100 %
(eq. 4.1).

* process level: load of a rank = its time outside MPI (eq. 4.2; a profile run with
  the per-call timers, on by default; a rank with several threads calling MPI counts
  the mean over them); a run profiled without timers says "not measured";
* thread level, per rank: load of a thread = its busy time in OpenMP regions (the OMPT
  arrivals of profile --ompt); the threads' efficiency = mean busy / max busy;
* hierarchical (eqs. 4.4-4.5): adjusted load of a rank = load x its threads' efficiency;
* per region (with the OMPT arrivals): eq. 4.1 over ranks of the region's time, and
  the thread level within each rank;
* GPUs (--gpu-metrics, one file per rank in rank order): GPU_eff = SM efficiency x warp
  execution efficiency (eq. 4.3), adjusted time = kernel time x GPU_eff (4.4), eq. 4.5.
  Accepted: nvprof --metrics sm_efficiency,warp_execution_efficiency --csv (columns
  Kernel, Invocations, Metric Name, Avg) and Nsight Compute --csv (Kernel Name, Metric
  Name, Metric Unit, Metric Value with sm__cycles_active.avg.pct_of_peak_sustained_elapsed,
  smsp__thread_inst_executed_per_inst_executed.pct or .ratio, and optionally
  gpu__time_duration.sum).  Without kernel times the ranks' loads come from RUN.

examples:
  commscope profile --ompt --threads 4 -n 4 -- ./app
  commscope stats imbalance runs/<profile-run> --by-region
  commscope stats imbalance --gpu-metrics rank0.csv rank1.csv rank2.csv rank3.csv --json
"""


def register(registry):
    p = registry.group_command(
        "stats",
        "imbalance",
        help="load imbalance (Eberius 2020 ch. 4): process, thread, hierarchical and GPU forms",
        description=DESCRIPTION,
    )
    p.add_argument("run", nargs="?", metavar="RUN", help="a profile run (counters, --ompt)")
    p.add_argument(
        "--gpu-metrics",
        nargs="+",
        metavar="CSV",
        default=None,
        help="per-rank nvprof or Nsight Compute CSV exports, rank 0 first",
    )
    p.add_argument("--by-region", action="store_true", help="also per OpenMP region")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args):
    from ..profile import imbalance as im

    if args.run is None and not args.gpu_metrics:
        raise InputError("RUN", None, "give a profile run, --gpu-metrics files, or both")
    out, tables = {}, []
    loads = None
    if args.run:
        run = open_run(args.run)
        names = run.tables()
        loads = im.rank_loads(run) if "functions" in names else None
        if loads is not None:
            out["process"] = {
                "imbalance_pct": im.imbalance_percent(loads["load_s"]),
                "ranks": loads.to_dict("records"),
            }
            tables.append((loads, "process level: load = time outside MPI (eq. 4.2)"))
        elif "functions" in names and "ranks" in names:  # profiled without the timers
            ranks = run.table("ranks")
            rows = [
                {"rank": int(r), "total_s": float(w), "mpi_s": None, "load_s": None}
                for r, w in zip(ranks["rank"], ranks["wall_s"])
            ]
            out["process"] = {
                "imbalance_pct": None,
                "not_measured": f"mpi_s, load_s: {TIMERS_HINT}",
                "ranks": rows,
            }
            tables.append(
                (
                    printable(rows, False, ("mpi_s", "load_s")),
                    "process level: load = time outside MPI (eq. 4.2), not measured",
                )
            )
        if "threads" in names:
            th = run.table("threads")
            if th.empty:
                raise InputError(
                    run.table_file("threads"),
                    None,
                    "no rows: no OpenMP region was timed, so no thread load",
                )
            per_rank = im.thread_imbalance(th)
            out["threads"] = per_rank.to_dict("records")
            tables.append(
                (
                    per_rank,
                    "thread level per rank: load = busy time in OpenMP "
                    "regions; efficiency = mean / max busy",
                )
            )
            if loads is not None:  # without timers: no process load to adjust
                per, summary = im.hierarchical_imbalance(loads, per_rank)
                out["hierarchical"] = {**summary, "per_rank": per.to_dict("records")}
                tables.append(
                    (
                        per,
                        f"hierarchical (eqs. 4.4-4.5): process "
                        f"{summary['process_imbalance_pct']:.2f} %, adjusted "
                        f"{summary['adjusted_imbalance_pct']:.2f} %",
                    )
                )
            if args.by_region:
                reg = im.region_process_imbalance(th)
                per_reg = im.thread_imbalance(th, by_region=True)
                out["regions"] = reg.to_dict("records")
                out["regions_threads"] = per_reg.to_dict("records")
                tables += [
                    (reg, "per region: eq. 4.1 over ranks of the region's time"),
                    (per_reg, "per region and rank: thread level"),
                ]
        if not out:
            raise InputError(
                run.path,
                None,
                "no counters (a profile run) nor thread arrivals "
                "(profile --ompt): no load to compare",
            )
    if args.gpu_metrics:
        gpu_loads = None
        if loads is not None and len(loads) == len(args.gpu_metrics):
            gpu_loads = loads.sort_values("rank")["load_s"].tolist()
        per, summary = im.gpu_imbalance(args.gpu_metrics, gpu_loads)
        out["gpu"] = {**summary, "per_rank": per.to_dict("records")}
        tables.append(
            (
                per.drop(columns=["file"]),
                f"GPU (eqs. 4.3-4.5): time "
                f"{summary['process_imbalance_pct']:.2f} %, "
                f"efficiency-adjusted "
                f"{summary['adjusted_imbalance_pct']:.2f} %",
            )
        )
    if args.json:
        dump_json(out)
        return 0
    if "process" in out:
        pct = out["process"]["imbalance_pct"]  # undefined without rows: "-"
        if "not_measured" in out["process"]:
            print(f"# process imbalance (eq. 4.1): {not_measured_note('time in MPI')}")
        else:
            print(
                f"# process imbalance (eq. 4.1): "
                f"{f'{pct:.2f} %' if pct is not None and math.isfinite(pct) else MISSING}"
            )
    for df, title in tables:
        print_table(df, title=title)
        print()
    return 0
