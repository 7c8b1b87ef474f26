"""commscope slurm"""

from ..errors import InputError
from ..paths import prepare_output, write_text_atomic
from ..slurm import batch_script


def register(registry):
    p = registry.command(
        "slurm",
        help="write a Slurm batch script for a multi-node study",
        description="Write an sbatch script that runs a commscope study across nodes: inter-node "
        "ping-pong, a multi-pair run for the injection limit, HighVolumePingPong "
        "(and its contention layout, Bienz et al. 2018, Fig. 6, on an even number of 4 or more "
        "nodes), the fit and the report. Each job writes into its own directory, "
        "study-<job id> (or $COMMSCOPE_STUDY). Steps can be replaced with --step.\n\n"
        "example:\n  commscope slurm --nodes 2 --ntasks-per-node 32 -o study.sbatch"
        "\n  sbatch study.sbatch\n  commscope slurm --nodes 4 --ntasks-per-node 1 "
        "--step 'bench hvpingpong --contention' --step 'fit \"$COMMSCOPE_RUNS\"'",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=2,
        help="nodes to allocate (default %(default)s; 4 or more, even, adds the contention layout)",
    )
    p.add_argument(
        "--ntasks-per-node",
        type=int,
        default=2,
        help="MPI ranks per node; the multi-pair run uses half of them as pairs "
        "across two nodes (default %(default)s)",
    )
    p.add_argument("--time", default="00:30:00", help="wall-time limit (default %(default)s)")
    p.add_argument(
        "--partition", help="Slurm partition (#SBATCH --partition; default: the cluster's default)"
    )
    p.add_argument("--account", help="Slurm account to charge (default: yours)")
    p.add_argument(
        "--step",
        action="append",
        metavar="CMD",
        help="a commscope command line to run, with or without the leading "
        "'commscope' (repeatable; replaces the default steps; {ppn} and "
        "{nodes} are substituted); anything else is refused",
    )
    p.add_argument(
        "-o", "--output", default="-", help="script path, or - for stdout (default %(default)s)"
    )
    p.set_defaults(func=_run)


def _run(args):
    text = batch_script(
        args.nodes,
        args.ntasks_per_node,
        time=args.time,
        partition=args.partition,
        account=args.account,
        steps=args.step,
    )
    if args.output == "-":
        print(text, end="")
        return 0
    out = prepare_output(args.output)
    if out.exists():
        raise InputError(out, None, "exists; not overwriting it")
    write_text_atomic(out, text)
    print(out)
    return 0
