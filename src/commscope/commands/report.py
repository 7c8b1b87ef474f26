"""commscope report"""

from ..models.machine_model import load_machine_model
from ..report.build import build_report
from .common_options import add_machine_model_option, add_overwrite_option


def register(registry):
    p = registry.command(
        "report",
        help="write one static HTML report for run directories",
        description="One HTML file with the figures inline (opens without a server): "
        "first the answer (a study's summary of latency, bandwidth, protocol "
        "switches, message rate, queue search and early-bird sends, each with its "
        "uncertainty, and a banner when the machine was busy; a profile's "
        "diagnosis), then one section per kind of run, each its key figure with "
        "the rest folded, whether the models hold, and every run's metadata.\n\nEvery table of every run is read first: a damaged, missing or "
        "unreadable one stops the report with one error naming the file (exit "
        "status 2); of several runs, each damaged one is named in a warning, and "
        "--keep-going writes the report without them."
        "\n\nexample:\n  commscope report runs/ -o report.html",
    )
    p.add_argument(
        "runs", nargs="+", metavar="RUN", help="run directories, or folders holding run directories"
    )
    p.add_argument("-o", "--output", default="report.html", help="HTML path (default %(default)s)")
    add_machine_model_option(
        p,
        help="machine model to model with (default: fitted from the "
        "ping-pong runs); 'bluewaters' for the published Blue "
        "Waters parameters",
    )
    add_overwrite_option(p, "report")
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="of several runs, write the report without the damaged ones (each "
        "named in a warning and in the report); default: a damaged run stops "
        "the report, exit status 2",
    )
    p.set_defaults(func=_run)


def _run(args):
    machine_model = load_machine_model(args.machine_model) if args.machine_model else None
    out = build_report(
        args.runs,
        args.output,
        machine_model=machine_model,
        overwrite=args.overwrite,
        keep_going=args.keep_going,
    )
    print(out)
    return 0
