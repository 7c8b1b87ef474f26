"""commscope advise"""

from ..errors import InputError
from ..output import dump_json, print_table
from ..runs import open_run
from ..units import parse_size
from .common_options import add_link_options, add_monte_carlo_options, number

EXAMPLES = """\
examples:
  commscope profile --ompt --threads 4 -n 2 -- ./app
  commscope advise runs/<profile-run> --machine-model machine-model.json
  commscope advise runs/<profile-run> --size 4MiB --json

For each OpenMP region (from the per-thread OMPT arrivals of the run): arrival spread
(mean max - min per process-iteration), laggard share (max - median > --threshold),
average reclaimable time and the ratio of time spent idle, both as printed in Marts et
al. 2023 (R / (n max)) and range-normalised (R / (n (max - min))); the bytes each rank
sends per iteration (--size, else the run's MPI counters); and the time and
effective bandwidth of one send after the region against partitioned sends as threads
arrive: Dominguez-Trujillo 2021, Algorithm 1 (normal, measured mean and within-iteration sd) and a Monte
Carlo resampling the measured arrival vectors.  The Monte-Carlo saving assumes each
partition leaves at its MPI_Pready; the saving to expect (saving_s) is what this MPI's
progress allows, as `commscope bench progress` measured it into the machine model for
partitions of that size and threads that compute as --compute-kind says (a machine model
without it: the assumption, said).  Regions are ranked by that saving; the last line
says whether anything is worth changing.
"""


def register(registry):
    p = registry.command(
        "advise",
        help="would early-bird (partitioned) sends pay off after each OpenMP region?",
        description="The early-bird advisor: thread-arrival metrics per region joined with the "
        "partitioned-communication model.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="a run with per-thread arrivals (profile --ompt, bench threads/partitioned --ompt)",
    )
    add_link_options(
        p, "machine model (commscope fit); default: the published Blue Waters parameters", ppn=False
    )
    p.add_argument(
        "-s",
        "--size",
        metavar="SIZE",
        default=None,
        help="bytes each rank sends after the region, e.g. 4MiB (default: from the "
        "run's MPI counters)",
    )
    p.add_argument(
        "--threshold",
        type=number,
        default=1e-3,
        metavar="S",
        help="laggard threshold, max - median (default %(default)s s)",
    )
    p.add_argument(
        "--min-saving",
        type=number,
        default=10e-6,
        metavar="S",
        help="smallest saving per iteration worth a change (default %(default)s s)",
    )
    p.add_argument(
        "--min-fraction",
        type=number,
        default=0.02,
        metavar="F",
        help="... and smallest fraction of slowest arrival + send (default %(default)s)",
    )
    p.add_argument(
        "--compute-kind",
        choices=("busy", "blocked"),
        default="busy",
        help="how the region's threads compute: busy on their cores, or blocked (waiting "
        "for I/O or an accelerator, the core free); default %(default)s",
    )
    p.add_argument(
        "--mpi-calls",
        action="store_true",
        help="the program calls MPI during the region (threads or the receiver polling "
        "MPI_Parrived): where this MPI moves partitions only inside MPI calls, they move",
    )
    add_monte_carlo_options(p, replicas=2000)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args):
    from ..predict import earlybird as eb

    if args.replicas < 1:
        raise InputError("--replicas", None, f"must be at least 1, got {args.replicas}")
    run = open_run(args.run).check()  # a damaged table: the error, naming it
    machine_model = args.machine_model if args.machine_model or args.osu else "bluewaters"
    link, info = eb.link_for(
        run, machine_model=machine_model, osu=args.osu, machine=args.machine, locality=args.locality
    )
    size = parse_size(args.size, "--size") if args.size else None
    table = eb.advise(
        run,
        link,
        message_size=size,
        threshold_s=args.threshold,
        min_saving_s=args.min_saving,
        min_saving_fraction=args.min_fraction,
        replicas=args.replicas,
        seed=args.seed,
        compute=args.compute_kind,
        mpi_calls=args.mpi_calls,
    )
    verdict = eb.conclusion(table)
    if args.json:
        dump_json(
            {
                "run": str(run.path),
                "link": info,
                "regions": table.to_dict("records"),
                "conclusion": verdict,
            }
        )
        return 0
    where = info.get("source", "") + (f" ({info['locality']})" if info.get("locality") else "")
    print(f"# {run.path}: link {where}; idle ratio printed = R/(n*max), range = R/(n*(max-min))")
    print_table(
        table,
        [
            "region",
            "instances",
            "threads",
            "spread_s",
            "laggard_share",
            "avg_reclaimable_s",
            "idle_ratio_printed",
            "idle_ratio_range",
            "bytes_per_iteration",
            "single_s",
            "partitioned_alg1_s",
            "partitioned_mc_s",
            "single_bandwidth_Bps",
            "partitioned_mc_bandwidth_Bps",
            "saving_mc_s",
            "saving_s",
            "saving_pct",
        ],
        title="per region, ranked by the saving to expect per iteration (saving_s; "
        "saving_mc_s: the Monte Carlo, every partition moving at its MPI_Pready)",
    )
    for r in table.itertuples():
        print(f"  {r.region}: {r.verdict}")
        if r.progress_note and r.progress_note not in r.verdict:
            print(f"    progress: {r.progress_note}")
    print(verdict)
    return 0
