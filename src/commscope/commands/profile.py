"""commscope profile"""

import argparse
import sys

from ..units import parse_size
from .common_options import add_launch_options, launch_kwargs

EXAMPLES = """\
examples:
  commscope profile -n 4 -- ./my_app input.dat        # every counter set, time in MPI too
  commscope profile --summary -- ./my_app              # + a row per rank: MPI time and MPI %
  commscope profile --counters bytes,peers -- ./my_app # only some sets (no timers: time not measured)
  commscope profile --trace -- ./halo                  # + an event trace of p2p calls and collectives
  commscope profile --callsites -- ./app               # + file:line of every MPI call (build with -g)
  commscope profile --mpi /usr/bin/mpicc -- ./app      # a program built with the system MPI
  commscope profile --ompt --threads 4 -- ./hybrid     # + per-thread OMPT timing
  commscope profile --list-counters                    # what is counted
  commscope profile --convert RUN                      # tables of a run stopped before its end

Inside a Slurm allocation the same command starts the ranks with srun (sbatch scripts:
`commscope profile -n $SLURM_NTASKS -- ./app`).  The program must be linked
dynamically against the selected MPI (the library is preloaded).  While it runs,
`commscope top RUN` shows the counters live.

The run directory (docs/profile.md, "Files"):
  meta.json                what ran, and how each rank ended (profile.ranks.endings)
  stdout.txt, stderr.txt   the program's output, the last 4 MiB of each (also with --quiet)
  ranks.parquet            a row per rank: wall time, how it ended (ending, ending_value)
  counters.parquet         every counter, per rank and thread
  functions.parquet        calls, bytes and time per MPI function, rank and thread
  size_bins.parquet        messages and time per power-of-two message size
  collective_bins.parquet  collectives by message and communicator size (when there are any)
  communicators.parquet    the communicators each rank saw
  snapshots.parquet        every counter over time (--snapshot-every)
  peers.parquet            the rank x rank matrix (when ranks sent each other messages)
  pvars.parquet            MPI_T performance variables where they changed (when the MPI has any)
  files.parquet            MPI-IO per file (when the program opened files with MPI-IO)
  callsites.parquet        with --callsites: calls, bytes and time per call site
  threads.parquet          with --ompt: per-thread arrivals of every OpenMP region (the
                           input of `commscope stats arrivals` and `commscope advise`)
  raw/                     the node files; with --trace also trace.<rank>.<thread>.bin and
                           clocks.<node>.jsonl

Exit status: the program's own as its launcher reports it, the last line naming
the ranks that crashed, aborted or exited without MPI_Finalize, and how; 1 when the
program exited 0 but the profile is partial (a rank left no counters, or exited without
MPI_Finalize); 2 when --ompt could not time the program's threads (the counters are kept).
"""


def register(registry):
    # the sets and defaults are the library's own (native/profiler/settings.def)
    from ..profile.settings import COUNTER_SETS, default, default_snapshot_interval

    trace_limit = default("COMMSCOPE_TRACE_LIMIT")
    p = registry.command(
        "profile",
        help="run any MPI program with software performance counters",
        description="Runs an unmodified MPI program with commscope's PMPI counter library "
        "preloaded: calls, bytes and messages per function, the rank x rank "
        "matrix, message-size bins, request watermarks, time per function, "
        "call site and size bin, an optional event trace, MPI_T performance variables, and snapshots of "
        "all of it over time (Eberius 2020, ch. 3).",
        epilog=EXAMPLES,
    )
    p.add_argument("-n", "--ranks", type=int, default=2, help="MPI ranks (default %(default)s)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="T",
        help="OMP_NUM_THREADS for the program (default %(default)s); alone it "
        "times no thread: --ompt records each thread's time",
    )
    p.add_argument(
        "--counters",
        default="default",
        metavar="SET",
        help="default (every set, time in MPI included; all is the same), or a "
        f"comma list of: {', '.join(COUNTER_SETS)} (without "
        "timers, times are not measured) (default %(default)s)",
    )
    p.add_argument(
        "--snapshot-every",
        default=default_snapshot_interval(),
        metavar="DURATION",
        help="copy every counter this often, e.g. 0.5s or 200ms; 0 = only at the "
        "start and end (default %(default)s)",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="also record an event trace: every point-to-point call (send, "
        "receive, post, start, completion, probe) and every collective "
        "(blocking, nonblocking, persistent; not one-sided or MPI-IO), each "
        "with its call site (file:line, resolved after the run; build with "
        "-g), and each rank's clock offset to rank 0 so that nodes share one "
        "time line (raw/trace.*.bin, raw/clocks.*.jsonl)",
    )
    p.add_argument(
        "--trace-limit",
        default=f"{trace_limit >> 30}G" if trace_limit % (1 << 30) == 0 else str(trace_limit),
        metavar="SIZE",
        help="bytes of trace each rank writes before it drops records: 1G is 1 "
        "GiB, K, M and G are powers of 2 (KiB, MiB, GiB), KB, MB and GB "
        "powers of 10 (default %(default)s)",
    )
    p.add_argument(
        "--callsites",
        action="store_true",
        help="also record where each MPI call was made (file, line, function; "
        "function+offset without -g), resolved after the run into "
        "callsites.parquet",
    )
    p.add_argument(
        "--callsite-depth",
        type=int,
        default=None,
        metavar="N",
        help="callers recorded per call with --callsites: 1 the immediate caller "
        "(default), N > 1 unwinds N frames (costlier; implies --callsites)",
    )
    p.add_argument(
        "--ompt",
        action="store_true",
        help="also time every thread of every OpenMP region through OMPT, no "
        "source change (GCC programs run on libiomp5; see commscope doctor "
        "--ompt PROGRAM)",
    )
    # no longer needed (every thread gets a slab); accepted with a warning for a release
    p.add_argument(
        "--max-threads",
        type=int,
        default=None,
        metavar="N",
        help="deprecated and ignored (default: none): every thread gets counters "
        "of its own; kept for one release so that old scripts still run",
    )
    p.add_argument(
        "--summary",
        action="store_true",
        help="print a summary after the run (like an MPI_Finalize dump): a row per "
        "rank up to 32 ranks, else the job's totals, means and extremes with "
        "the ranks that hold them (raw/summary.json, reduced in the job)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run, a row per rank and the job summary as JSON",
    )
    p.add_argument("--list-counters", action="store_true", help="print the counter table and exit")
    p.add_argument(
        "--convert",
        metavar="RUN",
        default=None,
        help="convert the raw counter files of profile run RUN into its tables "
        "(a run whose commscope was stopped before it converted them, or "
        "whose tables were deleted) and exit; nothing is launched",
    )
    add_launch_options(
        p,
        quiet_help="keep the program's output off the terminal (the run "
        "directory keeps it: stdout.txt and stderr.txt, the last "
        "4 MiB of each)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- PROGRAM [ARGS]",
        help="the MPI program and its arguments, after --",
    )
    p.set_defaults(func=_run)


def _thread_collectors(args, program):
    """The OMPT collector for --ompt, or the reason it cannot work (the program then
    runs with the counters only, and the reason ends the command with exit 2)."""
    if not args.ompt:
        return [], None
    from .. import mpi as mpimod
    from ..errors import InputError
    from ..collect.ompt import OmptCollector
    from ..profile.run import resolve_program

    path = resolve_program(program)  # a missing program fails here, before anything runs
    try:
        return [OmptCollector.for_program(path, mpimod.select_mpi(args.mpi))], None
    except InputError as exc:
        return [], exc.message


def _run(args):
    from ..errors import InputError
    from ..output import dump_json, format_table

    if args.list_counters:
        from ..profile.catalog import catalog_markdown

        print(catalog_markdown(), end="")
        return 0
    if args.convert:
        from ..profile.run import convert_run

        run = convert_run(args.convert)
        problems = run.meta["profile"].get("problems") or []
        for p in problems:
            print(f"commscope profile: partial profile: {p}", file=sys.stderr)
        print(run.path)
        return 1 if problems else 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError(
            "PROGRAM",
            None,
            "name the program to profile after --, e.g. commscope profile -n 2 -- ./app",
        )
    from ..profile.run import run_profile
    from ..collect.node_files import counter_ranks
    from ..profile.settings import chosen_sets
    from ..profile.top import open_counter_files, read_rows
    from ..profile.summary import (
        PER_RANK_ROWS,
        TIMERS_HINT,
        job_rows,
        not_measured_note,
        printable,
        rank_time_rows,
        read_job_summary,
        timed,
    )

    if args.max_threads is not None:
        print(
            "commscope: warning: --max-threads is ignored: every thread now gets counters of "
            "its own (the counter file grows as threads appear)",
            file=sys.stderr,
        )
    collectors, ompt_problem = _thread_collectors(args, command[0])
    run, status = run_profile(
        command[0],
        command[1:],
        nranks=args.ranks,
        threads=args.threads,
        counters=args.counters,
        snapshot_every=args.snapshot_every,
        trace=args.trace,
        trace_limit=parse_size(args.trace_limit, "--trace-limit"),
        callsites=(1 if args.callsite_depth is None else args.callsite_depth)
        if args.callsites or args.callsite_depth is not None
        else None,
        collectors=collectors,
        **launch_kwargs(args),
    )
    if args.ompt:
        from ..collect.ompt import failure_reason

        reason = ompt_problem or failure_reason(run.raw_dir, collectors[0])
        if reason:
            raise InputError(
                command[0], "--ompt", f"{reason}; the MPI counters were collected in {run.path}"
            )
    job = read_job_summary(run.raw_dir) if args.summary or args.json else None
    per_rank = args.json or (args.summary and not (job and job["ranks"] > PER_RANK_ROWS))
    rows = []
    if per_rank:
        files = open_counter_files(run) if counter_ranks(run.raw_dir) else []
        try:
            rows = read_rows(files, chosen_sets(run.meta))
        finally:
            for f in files:
                f.close()
    is_timed = timed(chosen_sets(run.meta))
    note = "" if is_timed else not_measured_note("mpi_time_s, mpi_pct")
    if args.json:
        dump_json(
            {
                "run": str(run.path),
                "exit_status": status,
                "status": run.meta["status"],
                "time_measured": is_timed,
                **({} if is_timed else {"not_measured": f"mpi_time_s, mpi_pct: {TIMERS_HINT}"}),
                "ranks": rows,
                "job": job,
            }
        )
    else:
        if args.summary and not per_rank:
            from ..profile.views import rank_times

            times = rank_times(run)
            extra = rank_time_rows(times, is_timed) if times is not None else []
            print(
                format_table(
                    job_rows(job) + extra,
                    title=f"commscope profile: job summary, {job['ranks_profiled']} of "
                    f"{job['ranks']} ranks (each rank: commscope report RUN); "
                    "mpi_time_s per rank: mean over its threads",
                )
            )
            if note and extra:
                print("# " + note)
        elif args.summary:
            print(
                format_table(
                    printable(rows, is_timed),
                    title="commscope profile: per-rank summary (wall_s since MPI_Init; "
                    "mpi_time_s: mean over the rank's threads that call MPI)",
                )
            )
            if note:
                print("# " + note)
        print(run.path)
        if not status and not args.quiet:
            _print_diagnosis(run)
    if status:  # the last line names the ranks that ended badly, and how
        what = run.meta.get("failure") or f"the program exited with status {status}"
        if not what.startswith("the program exited with status"):
            what += f"; the program's exit status {status}"
        print(
            f"commscope profile: {what}; the counters made up to then are in {run.path}",
            file=sys.stderr,
        )
        return status
    problems = run.meta["profile"].get("problems", [])
    if problems:  # the program succeeded, the profile is partial
        for p in problems:
            print(f"commscope profile: partial profile: {p}", file=sys.stderr)
        return 1
    return 0


def _print_diagnosis(run):
    """The diagnosis in a few lines (commscope diagnose RUN has the rest); a run it
    cannot read is the diagnosis's problem, never the profile's."""
    from ..diagnose.findings import diagnose
    from ..diagnose.text import headline
    from ..errors import InputError
    from ..profile.api import Profile

    try:
        d = diagnose(Profile(run))
    except (InputError, ValueError, KeyError) as exc:
        print(f"diagnosis: not possible ({exc})")
        return
    print(f"diagnosis: {headline(d)}")
    if d.major:
        print(f"  fix: {d.major[0].fix}")
    print(f"  more: commscope diagnose {run.path}")
