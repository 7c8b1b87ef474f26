"""commscope predict variability"""

from ..limits import LIMIT_HELP
from ..output import dump_json, print_table
from ..predict.variability import INTERVALS, KINDS, note_refs, predict_variability, verdict_summary
from .common_options import int_list, number

EXAMPLES = """\
examples:
  commscope predict variability runs/ftq-256 --target-ranks 512,1024,2048
  commscope predict variability runs/ftq-1 --compare runs/          # targets = scales found
  commscope predict variability runs/ftq-1 --kind intranode --compare runs/ftq-2 runs/ftq-4
  commscope predict variability runs/ftq-1a --repeats runs/ftq-1b runs/ftq-1c --compare runs/ftq-2
  commscope predict variability runs/ftq-1 --target-ranks 4 --json

For each kind and target scale: the predicted median and interval of one target run's
median interval maximum (interval_max_s) and runtime (runtime_s, the sum of the
calibration run's number of interval maxima), with autocorrelated intervals resampled
in blocks and the run-to-run spread of --repeats added.  With runs of the same
experiment at a target scale, the measured value and whether it lies inside.
--ci-method thesis gives the thesis's intervals instead (Dominguez-Trujillo 2021, Sec.
3.2.2: one interval's maximum, or EMMA's expected maximum, intervals independent).
Notes [n] say which assumptions the target breaks or the data reject.
"""


def register(registry):
    p = registry.group_command(
        "predict",
        "variability",
        help="bootstrap the per-interval maximum and runtime of a bsp run to larger scales",
        description="Calibrate on a `commscope bench bsp` run at one scale and predict the "
        "distribution of the per-interval maximum and the total runtime at "
        "larger scales (non-parametric and inter-/intra-node parametric "
        "bootstraps, Dominguez-Trujillo 2021, Sec. 3.2.2 and 3.4.2).",
        epilog=EXAMPLES,
    )
    p.add_argument("calibration", metavar="CALIBRATION_RUN", help="bsp run at the base scale")
    p.add_argument(
        "--target-ranks",
        type=int_list,
        metavar="P1,P2,...",
        default=None,
        help="scales to predict (default: the scales of the --compare runs)",
    )
    p.add_argument(
        "--kind",
        choices=(*KINDS, "all"),
        default="all",
        help="bootstrap kind (default %(default)s)",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=10_000,
        help=f"bootstrap replicas per prediction (default %(default)s; 24 bytes "
        f"each, {LIMIT_HELP})",
    )
    p.add_argument("--seed", type=int, default=None, help="seed (drawn and printed if absent)")
    p.add_argument(
        "--confidence", type=number, default=0.95, help="interval coverage (default %(default)s)"
    )
    p.add_argument(
        "--method",
        choices=("pwm", "mom"),
        default="pwm",
        help="GEV fit of the parametric kinds (default %(default)s)",
    )
    p.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        metavar="N",
        help="group the calibration ranks into nodes of N (default: by host)",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        default=(),
        metavar="RUN",
        help="bsp runs (or folders of runs) measured at the target scales",
    )
    p.add_argument(
        "--repeats",
        nargs="+",
        default=(),
        metavar="RUN",
        help="more runs of the same experiment at the calibration's scale: they "
        "join the calibration and give the run-to-run spread",
    )
    p.add_argument(
        "--ci-method",
        dest="interval",
        choices=INTERVALS,
        default="run",
        help="run: an interval for one target run's statistic (default); "
        "thesis: the thesis's bootstrap intervals as printed",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_run)


def _run(args):
    df = predict_variability(
        args.calibration,
        args.target_ranks,
        kind=args.kind,
        replicas=args.replicas,
        seed=args.seed,
        confidence=args.confidence,
        compare=args.compare,
        method=args.method,
        ranks_per_node=args.ranks_per_node,
        repeats=args.repeats,
        interval=args.interval,
    )
    summary = verdict_summary(df)
    if args.json:
        dump_json(
            {
                "calibration": df.attrs["calibration"],
                "base_ranks": df.attrs["base_ranks"],
                "ranks_per_node": df.attrs["ranks_per_node"],
                "intervals": df.attrs["intervals"],
                "seed": df.attrs["seed"],
                "compared": df.attrs["compared"],
                "repeats": df.attrs["repeats"],
                "interval": df.attrs["interval"],
                "predictions": df.astype(object).where(df.notna(), None).to_dict("records"),
                "verdicts": summary.to_dict("records"),
            }
        )
        return 0
    print(
        f"# calibration {df.attrs['calibration']}: {df.attrs['base_ranks']} ranks "
        f"({df.attrs['ranks_per_node']} per node), {df.attrs['intervals']} intervals, "
        f"seed {df.attrs['seed']}"
    )
    refs, notes = note_refs(df["note"])
    cols = [
        "kind",
        "statistic",
        "target_ranks",
        "median_s",
        "ci_low_s",
        "ci_high_s",
        "measured_runs",
        "measured_median_s",
        "inside",
    ]
    show = df[cols].astype(object).where(df[cols].notna(), "-")
    show["notes"] = [r or "-" for r in refs]
    print_table(
        show,
        title=f"predicted vs measured ({df['confidence'].iloc[0]:.0%} "
        f"intervals, {df.attrs['interval']})",
    )
    for i, note in enumerate(notes, 1):
        print(f"# [{i}] {note}")
    if not summary.empty:
        print()
        print_table(summary, title="measured medians inside the predicted interval")
    return 0
