"""commscope study"""

from ..study import STEPS, main_log, run_study


def register(registry):
    p = registry.command(
        "study",
        help="the default study: every benchmark, the fit, the report",
        description="Measure this machine and model it: ping-pong 1 B .. 4 MiB and a "
        "multi-pair run (postal / max-rate fit), HighVolumePingPong (queue search), "
        "multithreaded matching over a 27-point stencil, thread arrivals, "
        "partitioned communication, and the bulk-synchronous harness with its "
        "variability prediction; then one HTML report. Prints the report's path.\n\n"
        "examples:\n  commscope study -o studies/today\n"
        "  commscope study --only pingpong,hvpingpong --mpi mpich\n"
        "  commscope study -o studies/today --resume   # after a kill or timeout",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="study folder (default studies/<UTC time>); must not exist or be empty",
    )
    p.add_argument(
        "--mpi",
        default=None,
        metavar="NAME|MPICC",
        help="openmpi (default), mpich, or the path of an mpicc",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=2,
        help="concurrent pairs of the multi-pair run (default %(default)s)",
    )
    p.add_argument(
        "--only",
        default=",".join(STEPS),
        metavar="STEPS",
        help="comma-separated benchmarks to run (default: all of %(default)s; "
        "ping-pong always runs)",
    )
    p.add_argument("--quick", action="store_true", help="fewer repetitions (for smoke tests)")
    p.add_argument("--echo", action="store_true", help="show each benchmark's table")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the stopped study in --out with the options it was started "
        "with: complete runs are kept, a stopped ping-pong continues from its "
        "first incomplete size, other stopped runs are measured again",
    )
    p.set_defaults(func=_run)


def _run(args):
    report = run_study(
        args.output,
        mpi_spec=args.mpi,
        pairs=args.pairs,
        quick=args.quick,
        echo=args.echo,
        steps=[s for s in args.only.split(",") if s],
        log=main_log,
        resume=args.resume,
    )
    print(report)
    return 0
