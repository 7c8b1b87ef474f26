"""``commscope export``: a profile run as a Perfetto (Chrome trace-event JSON) or OTF2 trace,
or as a profile for Hatchet/Thicket (Caliper split JSON) or CubeGUI (Cube 4 .cubex)."""

from .common_options import add_overwrite_option

EXAMPLES = """\
Perfetto: Chrome trace-event JSON, opened by ui.perfetto.dev ("Open trace file") and
chrome://tracing: a process per rank, a track per thread, a slice per traced call with
its peer, tag, communicator and bytes, an arrow per message from the send to the call
that completed its receive, and the snapshots (messages, bytes, calls, time in MPI) as
counter tracks.  OTF2: an archive for Vampir and other OTF2 readers, written with the
OTF2 library (the otf2 package): a location group per rank, a location per thread,
Enter/Leave per call, MpiSend/MpiRecv, MpiIsend/MpiIsendComplete,
MpiIrecvRequest/MpiIrecv, the communicators, the snapshots as metrics (ns timer).
Without an event trace (a profile made without --trace) only the snapshots and the
per-function totals are exported.  caliper-json: Caliper's split JSON, read by
hatchet.GraphFrame.from_caliper and thicket.Thicket.from_caliper: the call tree program >
MPI function > call site, calls, time_s, bytes and the wait states per rank, meta.json's
facts as metadata.  cube: a Cube 4 .cubex for CubeGUI and pycubexr: Scalasca's metric
tree (time > MPI > communication > point-to-point / collective > wait states; load
imbalance), the same call tree, the system tree (machine > node > rank > thread).  The
wait states need the trace; without it they are left out, said once.  See docs/export.md.

examples:
  commscope profile --trace -n 4 -- ./halo
  commscope export runs/<time>-profile --format perfetto       # RUN/export/trace.json
  commscope export runs/<time>-profile --format otf2           # RUN/export/traces.otf2
  commscope export RUN --format perfetto -o halo.json --overwrite --json
  commscope export RUN --format caliper-json                   # RUN/export/caliper.json
  commscope export RUN --format cube                           # RUN/export/profile.cubex
"""


def register(registry):
    p = registry.command(
        "export",
        help="export a profile run as a Perfetto or OTF2 trace, or a Caliper JSON or Cube profile",
        description="Writes a profile run's traced calls, messages and counter snapshots in "
        "a format trace viewers open: Perfetto's UI and chrome://tracing (JSON), "
        "or Vampir and other OTF2 tools; or its profile and wait states for Hatchet and "
        "Thicket (Caliper split JSON) or CubeGUI (Cube 4).",
        epilog=EXAMPLES,
    )
    p.add_argument("run", metavar="RUN", help="a profile run directory (commscope profile)")
    p.add_argument(
        "--format",
        required=True,
        choices=("perfetto", "otf2", "caliper-json", "cube"),
        help="perfetto: Chrome trace-event JSON; otf2: an OTF2 archive; caliper-json: "
        "Caliper split JSON (Hatchet, Thicket); cube: a Cube 4 .cubex (CubeGUI, pycubexr)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default=None,
        help="the file to write (default: RUN/export/trace.json for perfetto, "
        "RUN/export/traces.otf2 for otf2, whose traces.def and traces/ sit "
        "next to it, RUN/export/caliper.json, RUN/export/profile.cubex)",
    )
    p.add_argument(
        "--rank-summary",
        action="store_true",
        help="caliper-json: one row per call-tree node, each metric summed over the ranks "
        "with its least, most and mean rank, instead of a row per rank (Thicket's groupby "
        "and filters need a row per node and profile)",
    )
    add_overwrite_option(p, "output")
    p.add_argument(
        "--json",
        action="store_true",
        help="print what was written (path, events, ranks, threads, bytes) as JSON",
    )
    p.set_defaults(func=_run)


def _run(args):
    from ..errors import warn
    from ..output import dump_json
    from ..profile.export import export_run, no_trace_note, require_profile
    from ..runs import open_run

    run = open_run(args.run)
    require_profile(run)
    if args.format in ("caliper-json", "cube"):
        return _run_profile_format(args, run)
    out = export_run(run, args.format, output=args.output, force=args.overwrite)
    if not out["trace"]:
        warn(no_trace_note(run))
    if args.json:
        dump_json(out)
        return 0
    what = (
        (f"{out['calls']} calls, {out['messages']} messages, " if out["trace"] else "")
        + f"{out['snapshots']} snapshots"
        + (
            f", {out['openmp_slices']} OpenMP slices on {out['openmp_threads']} OpenMP threads"
            if out["openmp_slices"]
            else ""
        )
    )
    print(
        f"wrote {out['path']}: {out['events']} events ({what}) of {out['ranks']} ranks, "
        f"{out['threads']} threads; {out['bytes']} bytes"
    )
    if out["unmatched_messages"]:
        warn(
            f"{out['unmatched_messages']} sends or receives have no partner in the trace "
            "(no arrow drawn for them)"
        )
    return 0


def _run_profile_format(args, run):
    from ..errors import warn
    from ..export import export_profile
    from ..output import dump_json
    from ..units import format_bytes

    if args.rank_summary and args.format != "caliper-json":
        from ..errors import InputError

        raise InputError("--rank-summary", None, "is for --format caliper-json only")
    out = export_profile(
        run, args.format, output=args.output, force=args.overwrite, rank_summary=args.rank_summary
    )
    for note in out.pop("notes"):
        warn(note)
    if args.json:
        dump_json(out)
        return 0
    waits = f", {out['wait_states']} wait states" if out["trace"] else ""
    print(
        f"wrote {out['path']}: {out['nodes']} call-tree nodes, {len(out['metrics'])} metrics "
        f"of {out['ranks']} ranks, {out['threads']} threads{waits}; {format_bytes(out['bytes'])}"
    )
    return 0
