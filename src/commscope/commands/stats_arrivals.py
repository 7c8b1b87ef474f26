"""``commscope stats arrivals``: a thin shell over :mod:`commscope.stats.arrivals`."""

from ..output import dump_json, print_table
from ..stats import arrivals
from .common_options import number

DESCRIPTION = """\
Analyse per-thread compute (arrival) times as Marts et al. (2023) do: normality tests
(D'Agostino, Shapiro-Wilk, Anderson-Darling, all at 5%) at the application,
application-iteration and process-iteration levels (Table 1: fraction of groups that
pass, i.e. fail to reject normality); laggards (process-iterations whose slowest thread
is more than --threshold seconds behind the median); average reclaimable time (per
process-iteration, the sum over threads of latest - own arrival, averaged); and the
ratio of time spent idle in the printed form, reclaimable / (threads x latest), and
range-normalised, reclaimable / (threads x (latest - earliest)).

Input: CSV or Parquet with columns trial, rank, iteration, thread, compute_time_s
(seconds) and optionally region (analysed separately).

example:
  commscope stats arrivals RUN/compute.parquet --threshold 1e-3   # a `bench threads` run
"""


def run(args):
    data = arrivals.read_arrivals(args.file)
    report = arrivals.analyse_arrivals(
        data, threshold_s=args.threshold, source=args.file, bin_width_s=args.bin_width
    )
    if args.json:
        dump_json(report.to_dict())
        return 0
    print_table(
        report.normality,
        ["region", "level", "test", "groups", "groups_tested", "fraction_pass", "fraction_reject"],
        title="normality at 5% (fraction of groups that pass / reject)",
    )
    print()
    print_table(
        report.summary,
        title=f"idle time (laggard threshold {args.threshold} s; "
        "idle_ratio_printed = R/(n*max), idle_ratio_range = R/(n*(max-min)))",
    )
    print()
    lag = report.laggards.sort_values("excess_s", ascending=False)
    shown = lag.head(args.max_laggards)
    print_table(
        shown,
        title=f"laggards: {len(lag)} process-iterations"
        + (f" (largest {len(shown)} shown)" if len(shown) < len(lag) else ""),
    )
    return 0


def register(registry):
    p = registry.group_command(
        "stats",
        "arrivals",
        help="thread-arrival normality, laggards and reclaimable time",
        description=DESCRIPTION,
    )
    p.add_argument("file", help="CSV or Parquet of per-thread compute times")
    p.add_argument(
        "--threshold",
        type=number,
        default=1e-3,
        metavar="S",
        help="laggard threshold, max - median in seconds (default 1e-3)",
    )
    p.add_argument(
        "--bin-width",
        type=number,
        default=None,
        metavar="S",
        help="bin width of the example histograms in --json (default: auto); "
        "at most 1,000,000 bins per histogram",
    )
    p.add_argument(
        "--max-laggards",
        type=int,
        default=20,
        metavar="N",
        help="laggard rows to print (default 20; --json has all)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print everything (incl. per-iteration percentiles and example histograms) as JSON",
    )
    p.set_defaults(func=run)
