"""commscope top"""

from .common_options import number

EXAMPLES = """\
examples:
  commscope top runs/20261123T071404Z-profile             # live while the program runs
  commscope top RUN --replay --speed 4                    # replay the snapshots, 4x faster
  commscope top RUN --once --json                         # one frame for scripts
  commscope top RUN --callsites                           # top call sites (profile --callsites)

Columns (a row per rank; --json has the same keys):
  rank, threads     the rank and its threads that called MPI
  calls             MPI calls so far
  wall_s            the rank's time since MPI_Init (to MPI_Finalize once it ended)
  mpi_time_s        its time inside MPI calls (with several threads calling MPI, the
                    mean over them)
  mpi_pct           mpi_time_s as a share of wall_s (mpiP's AppTime, MPITime and MPI%)
  msgs_per_s        messages sent plus received per second
  bandwidth_Bps     bytes sent plus received per second (printed as 3.4 MB/s,
                    MB = 10^6 bytes)
  outstanding_hwm   high watermark of outstanding requests
  posted_hwm        high watermark of posted receives
  top_functions     the rank's three busiest MPI functions, by time (by calls
                    without the timers)
Live and in a replay, mpi_pct and the rates cover the last interval (a call's time
counts when it returns, so a long call that spans intervals can push one interval above
100 %); with --once (the first frame) the whole run so far.  Without the timers (a
--counters list without timers) the times say "not measured" (null in --json).
"""


def register(registry):
    p = registry.command(
        "top",
        help="live view of a running profile, or a replay of its snapshots",
        description="Attaches read-only to the mapped counter files of a `commscope profile` "
        "run and shows per rank: message rate, bytes per second, time in MPI, "
        "busiest functions, request watermarks.",
        epilog=EXAMPLES,
    )
    p.add_argument("run", metavar="RUN", help="a profile run directory")
    p.add_argument(
        "--interval",
        type=number,
        default=1.0,
        metavar="S",
        help="refresh interval in seconds (default %(default)s)",
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="step through the recorded snapshots instead of the live counters",
    )
    p.add_argument(
        "--speed",
        type=number,
        default=0.0,
        help="replay speed-up (0: as fast as possible; default %(default)s)",
    )
    p.add_argument("--once", action="store_true", help="print one frame (the latest) and exit")
    p.add_argument("--json", action="store_true", help="print the frame as JSON (implies --once)")
    p.add_argument(
        "--callsites",
        action="store_true",
        help="print the run's top call sites (file:line, caller) summed over ranks: "
        "by time (by calls, then bytes, when the run had no timers), with "
        "the site's time on the ranks: min, mean, max",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=20,
        metavar="N",
        help="call sites shown with --callsites (default %(default)s)",
    )
    p.set_defaults(func=_run)


def _run(args):
    from ..errors import InputError
    from ..output import dump_json, format_table
    from ..profile.settings import chosen_sets
    from ..profile.summary import not_measured_note, printable, timed
    from ..profile.top import live, replay
    from ..runs import open_run

    if not args.interval > 0:
        raise InputError("--interval", None, f"must be positive, got {args.interval}")
    run = open_run(args.run)
    if run.kind != "profile":
        raise InputError(run.path, "kind", f"is a {run.kind!r} run; top reads profile runs")
    if args.callsites:
        return _callsites(run, args)
    once = args.once or args.json
    rows = replay(run, args.speed, once) if args.replay else live(run, args.interval, once)
    is_timed = timed(chosen_sets(run.meta))
    if args.json:
        dump_json(rows)
    elif once:
        print(format_table(printable(rows, is_timed), title=f"commscope top {run.path}"))
        if not is_timed:
            print("# " + not_measured_note("mpi_time_s, mpi_pct"))
    return 0


def _callsites(run, args):
    """The run's top call sites, from callsites.parquet (commscope profile --callsites)."""
    from ..errors import InputError
    from ..output import dump_json, format_table
    from ..collect.callsites import reason_notes, site_label
    from ..profile.settings import chosen_sets
    from ..profile.summary import not_measured_note, printable, timed
    from ..profile.views import callsite_time_stats

    if args.limit < 1:
        raise InputError("--limit", None, f"must be at least 1, got {args.limit}")
    if "callsites" not in run.tables():
        raise InputError(
            run.path,
            "callsites.parquet",
            "no call sites in this run: profile it with `commscope profile --callsites`",
        )
    top = callsite_time_stats(run.table("callsites"), args.limit)
    if args.json:
        dump_json(top.to_dict("records"))
        return 0
    is_timed = timed(chosen_sets(run.meta))
    rows = [
        {
            "function": r["function"],
            "site": site_label(r["file"], r["line"]),
            "caller": r["caller"],
            "ranks": r["ranks"],
            "calls": r["calls"],
            "bytes": r["bytes"],
            "time_s": r["time_s"],
            **(
                {
                    "min_time_s": r["min_time_s"],
                    "mean_time_s": r["mean_time_s"],
                    "max_time_s": r["max_time_s"],
                    "max_rank": r["max_rank"],
                }
                if is_timed
                else {}
            ),
            **({"stack": r["stack"]} if top["stack"].notna().any() else {}),
            "reason": r["reason"] or None,
        }
        for r in top.to_dict("records")
    ]
    notes = reason_notes(rows)
    by = "time" if top["time_s"].notna().any() else "calls"
    print(
        format_table(
            printable(rows, is_timed),
            title=f"commscope top {run.path}: top call sites by {by}"
            + (
                " (time on one rank: min, mean, max over the ranks that called there)"
                if is_timed
                else ""
            ),
        )
    )
    for i, text in enumerate(notes, 1):
        print(f"# [{i}] {text}")
    if not is_timed:
        print("# " + not_measured_note("time_s"))
    return 0
