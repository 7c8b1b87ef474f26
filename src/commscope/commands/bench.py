"""commscope bench <name>: one command per benchmark descriptor (commscope.benchspec).

The options, their defaults and help come from the descriptor; the run goes to the
benchmark's driver (commscope.bench.RUNNERS).
"""

from ..benchspec import BENCHMARKS
from .common_options import (
    add_launch_options,
    add_resume_option,
    launch_kwargs,
    number,
    resume_if_asked,
)


def register(registry):
    for bench in BENCHMARKS.values():
        p = registry.group_command(
            "bench",
            bench.name,
            help=bench.summary,
            description=bench.description,
            epilog=bench.examples,
        )
        for opt in (o for o in bench.options if o.cli):
            _add_option(p, opt)
        p.add_argument(
            "--print-binary",
            action="store_true",
            help="build the native program for the selected MPI, print its path and exit "
            "(to run it under `commscope profile`)",
        )
        _add_resume(p, bench)
        add_launch_options(p)
        p.set_defaults(func=_run, benchmark=bench.name)


def _add_option(parser, opt):
    names = ([f"-{opt.short}"] if opt.short else []) + [opt.flag]
    dest = opt.name.replace("-", "_")
    if opt.kind == "flag":
        parser.add_argument(*names, dest=dest, action="store_true", help=opt.help)
        return
    shown = "" if opt.default is None else f" (default {opt.default})"
    parser.add_argument(
        *names,
        dest=dest,
        default=None,
        type=number if opt.kind == "float" else None,  # a finite number
        metavar=opt.metavar or dest.upper(),
        help=opt.help + shown,
    )


def _add_resume(parser, bench):
    from ..bench.driver import resume_rule

    if bench.points is not None and resume_rule(bench.name) is not None:
        add_resume_option(parser, bench.points.unit.removesuffix("s"))
    else:
        add_resume_option(parser, None, kind=bench.name)


def _run(args):
    if resume_if_asked(args):
        return 0
    from ..bench import RUNNERS, SHOWERS

    bench = BENCHMARKS[args.benchmark]
    if args.print_binary:
        from .. import mpi as mpimod

        print(mpimod.binary(mpimod.select_mpi(args.mpi), bench.program))
        return 0
    params, shown = {}, {}  # the run's parameters; the output options (--json)
    for opt in (o for o in bench.options if o.cli):
        value = getattr(args, opt.name.replace("-", "_"))
        into = shown if opt.output else params
        if opt.kind == "flag":
            into[opt.params[0]] = value
        elif value is not None:
            into.update(opt.parse(value))
    if bench.from_cli is not None:
        params = bench.from_cli(params)
    kw = launch_kwargs(args)
    if shown.get("json"):
        kw["echo"] = False  # stdout is the JSON alone
    run = RUNNERS[bench.name](**params, **kw)
    if bench.name in SHOWERS:
        SHOWERS[bench.name](run, quiet=args.quiet, **shown)
    else:
        print(run.path)
    return 0
