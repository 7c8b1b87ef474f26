"""commscope study"""

from ..study import main_log, run_study


def register(registry):
    p = registry.command(
        "study", help="the default study: ping-pong, multi-pair run, fit, report",
        description="Measure this machine's point-to-point performance and model it: "
                    "ping-pong 1 B .. 4 MiB, a multi-pair run for the injection limit, the "
                    "postal / max-rate fit, and an HTML report. Prints the report's path.\n\n"
                    "example:\n  commscope study --out studies/today")
    p.add_argument("--out", default=None,
                   help="study folder (default studies/<UTC time>); must not exist or be empty")
    p.add_argument("--mpi", default=None, metavar="NAME|MPICC",
                   help="openmpi (default), mpich, or the path of an mpicc")
    p.add_argument("--pairs", type=int, default=2,
                   help="concurrent pairs of the multi-pair run (default %(default)s)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions (for smoke tests)")
    p.add_argument("--echo", action="store_true", help="show each benchmark's table")
    p.set_defaults(func=_run)


def _run(args):
    report = run_study(args.out, mpi_spec=args.mpi, pairs=args.pairs, quick=args.quick,
                       echo=args.echo, log=main_log)
    print(report)
    return 0
