"""``commscope stats gev`` and ``commscope stats bootstrap``: thin shells over
:mod:`commscope.stats.evt` and :mod:`commscope.stats.bootstrap`."""

from pathlib import Path


from .. import tablefile
from ..errors import InputError
from ..limits import LIMIT_HELP
from ..output import dump_json, print_table
from ..paths import require_regular_file
from ..units import parse_count
from ..stats import bootstrap, evt
from .common_options import float_list, number
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


GEV_DESCRIPTION = """\
Fit a GEV distribution to one column of a CSV or Parquet file by the method of moments,
probability-weighted moments and maximum likelihood (Dominguez-Trujillo 2021, Sec. 2.3),
report each fit's extreme-value type (I Gumbel, II Frechet, III Weibull), whether the
methods agree (the Fig. 3.6 diagnostic), and EMMA's expected maximum of N draws (eq. 2.9)
next to the exact expected maximum, for each fit and for the empirical distribution.

Shape is Hosking's k (= scipy's genextreme c); xi = -k. Times are in seconds.

example:
  commscope stats gev RUN/maxima.parquet                 # a `bench bsp` run's maxima
  commscope stats gev times.csv --column time_s --draws 4,64,2048
"""

BOOTSTRAP_DESCRIPTION = """\
Predict the per-interval maximum (or, with --runtime, the runtime) at larger scales by
bootstrapping measurements taken at a base scale (Dominguez-Trujillo 2021, Sec. 3.2.2).

Input (CSV or Parquet), one of two layouts:
  per-rank:  columns iteration (or interval), rank, a time column (--column; time_s or
             interval_s) and optionally node (or host): one row per iteration and rank,
             seconds. Needed by internode / intranode. Without a node column, rank r is
             on node r // --ranks-per-node. `commscope bench bsp` writes this layout as
             <run>/intervals.parquet.
  maxima:    one time column (max_time_s or max_interval_s), one row per interval: the
             maximum over --base-ranks ranks (<run>/maxima.parquet of a bsp run). Only
             for --kind nonparametric.

Kinds: nonparametric (max of k = P/p resampled interval maxima), internode (GEV fit to
each node's interval maxima, EMMA to P/ranks_per_node nodes), intranode (GEV fit to each
rank slot's times, EMMA to P ranks). Prints median and confidence interval per target.

examples:
  commscope stats bootstrap RUN/intervals.parquet --target-ranks 8,16   # a `bench bsp` run
  commscope stats bootstrap times.parquet --base-ranks 256 \\
      --target-ranks 512,1024,2048 --kind intranode --ranks-per-node 32 --seed 7
"""


def read_table(path):
    """A DataFrame from a CSV or Parquet file; InputError naming the file otherwise."""
    require_regular_file(path)  # a directory or a missing file is said as such first
    if Path(path).suffix.lower() not in (".parquet", ".pq", ".csv", ".txt"):
        raise InputError(path, None, "unknown file type; use .csv or .parquet")
    return tablefile.read_table(path)


#: Time columns looked for when --column is not given: a generic table's, then the
#: per-interval maxima and per-rank intervals `commscope bench bsp` writes.
SAMPLE_COLUMNS = ("time_s", "max_interval_s", "interval_s", "max_time_s")
PER_RANK_COLUMNS = ("time_s", "interval_s")
MAXIMA_COLUMNS = ("max_time_s", "max_interval_s")


def pick_column(frame, path, column, candidates):
    """``column`` if given, else the first of ``candidates`` the table has."""
    if column is not None:
        return column
    found = next((c for c in candidates if c in frame.columns), None)
    if found is None:
        raise InputError(
            path,
            None,
            f"no time column: give --column (looked for "
            f"{', '.join(candidates)}; have {list(frame.columns)})",
        )
    return found


def read_column(path, column=None):
    """One numeric column of a table file as a float array (NaN rejected)."""
    frame = read_table(path)
    column = pick_column(frame, path, column, SAMPLE_COLUMNS)
    if column not in frame.columns:
        raise InputError(
            path, column, f"no such column (--column {column!r}; have {list(frame.columns)})"
        )
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise InputError(path, column, "empty, non-numeric, NaN or infinite values")
    if column.endswith("_s") and (values < 0).any():  # a time in seconds, by naming convention
        raise InputError(
            path,
            column,
            f"negative time {values.min():g} s (row {int(np.argmin(values)) + 2} of the file)",
        )
    return values


def gev_report(sample, ns, source="sample", gumbel_tol=evt.GUMBEL_TOL):
    """Fits, types, agreement and EMMA-vs-exact rows for ``commscope stats gev``."""
    try:
        summary = evt.fit_all(sample, gumbel_tol=gumbel_tol)
    except InputError as exc:
        raise InputError(source, exc.field, exc.message) from None
    fits = []
    for m in evt.METHODS:
        if m in summary.fits:
            g = summary.fits[m]
            fits.append(
                dict(
                    method=m,
                    shape_k=g.shape,
                    loc_s=g.loc,
                    scale_s=g.scale,
                    type=summary.types[m],
                    problem=None,
                )
            )
        elif m in summary.failures:
            fits.append(
                dict(
                    method=m,
                    shape_k=None,
                    loc_s=None,
                    scale_s=None,
                    type=None,
                    problem=summary.failures[m],
                )
            )
    dists = dict(summary.fits, empirical=np.asarray(sample, dtype=float))
    maxima, omitted = [], []
    for n in ns:
        for name, dist in dists.items():
            with np.errstate(all="ignore"):
                e, exact = evt.emma(dist, n), evt.expected_max_exact(dist, n)
            if not (np.isfinite(e) and np.isfinite(exact)):  # a result is a number or absent
                omitted.append(f"n = {n:g}, {name}: the expected maximum is not finite")
                continue
            maxima.append(
                dict(
                    n=n,
                    distribution=name,
                    emma_s=e,
                    expected_max_s=exact,
                    rel_diff=(e - exact) / abs(exact) if exact else None,
                )
            )
    return {
        "n_samples": summary.n,
        "agree": summary.agree,
        "agree_among": sorted(summary.fits),
        "fits": fits,
        "maxima": maxima,
        "omitted": omitted,
    }


def _agreement_line(report):
    among = report["agree_among"]
    if report["agree"] is None:
        return (
            f"types agree: cannot tell (only {len(among)} usable fit"
            f"{'' if len(among) == 1 else 's'}{': ' + among[0] if among else ''})"
        )
    return f"types agree: {'yes' if report['agree'] else 'no'} (among {', '.join(among)})"


def _gev(args):
    column = pick_column(read_table(args.file), args.file, args.column, SAMPLE_COLUMNS)
    report = gev_report(
        read_column(args.file, column), args.draws, source=args.file, gumbel_tol=args.gumbel_tol
    )
    if args.json:
        dump_json(report)
        return 0
    shown = [
        {k: ("-" if v is None else v) for k, v in f.items() if k != "problem"}
        for f in report["fits"]
    ]
    print_table(
        shown,
        title=f"GEV fits of {args.file}:{column} (n = {report['n_samples']}; shape k = scipy c)",
    )
    for f in report["fits"]:
        if f["problem"]:
            print(f"{f['method']}: no usable fit: {f['problem']}")
    print(_agreement_line(report))
    print()
    print_table(
        [{k: ("-" if v is None else v) for k, v in r.items()} for r in report["maxima"]],
        title="expected maximum of n draws: EMMA vs exact",
    )
    for note in report["omitted"]:
        print(f"omitted: {note}")
    return 0


def bootstrap_from_file(
    path,
    kind,
    target_ranks,
    base_ranks=None,
    ranks_per_node=None,
    runtime=False,
    column=None,
    **options,
):
    """Load ``path`` (layouts in the command help) and run :func:`bootstrap.predict`."""
    frame = read_table(path)
    # `bench bsp` names the step "interval" and the node "host"
    frame = frame.rename(
        columns={
            k: v
            for k, v in (("interval", "iteration"), ("host", "node"))
            if k in frame.columns and v not in frame.columns
        }
    )
    times = maxima = None
    per_rank = "rank" in frame.columns
    column = pick_column(frame, path, column, PER_RANK_COLUMNS if per_rank else MAXIMA_COLUMNS)
    if column not in frame.columns:
        raise InputError(
            path, column, f"no such column (--column {column!r}; have {list(frame.columns)})"
        )
    if per_rank:
        try:
            times, rpn = bootstrap.per_rank_matrix(frame, source=path, column=column)
        except InputError as exc:
            raise InputError(path, exc.field, exc.message) from None
        if base_ranks is not None and base_ranks != times.shape[1]:
            raise InputError(
                path, "rank", f"has {times.shape[1]} ranks but --base-ranks is {base_ranks}"
            )
        if rpn is not None:
            if ranks_per_node is not None and ranks_per_node != rpn:
                raise InputError(
                    path, "node", f"nodes hold {rpn} ranks but --ranks-per-node is {ranks_per_node}"
                )
            ranks_per_node = rpn
        base_ranks, intervals = times.shape[1], times.shape[0]
    else:
        if kind != "nonparametric":
            raise InputError(path, "rank", f"--kind {kind} needs the per-rank layout")
        if base_ranks is None:
            raise InputError("--base-ranks", None, "required with the maxima layout")
        maxima = read_column(path, column)
        intervals = maxima.size
    if kind != "nonparametric" and ranks_per_node is None:
        raise InputError(
            "--ranks-per-node", None, f"required for --kind {kind} when the file has no node column"
        )
    if kind == "nonparametric":
        ranks_per_node = None
    return bootstrap.predict(
        kind,
        target_ranks,
        times=times,
        maxima=maxima,
        base_ranks=base_ranks,
        ranks_per_node=ranks_per_node,
        intervals=intervals if runtime else None,
        **options,
    )


def _bootstrap(args):
    options = dict(replicas=args.replicas, confidence=args.confidence, seed=args.seed)
    if args.kind != "nonparametric":
        options["method"] = args.method
    results = bootstrap_from_file(
        args.file,
        args.kind,
        args.target_ranks,
        args.base_ranks,
        args.ranks_per_node,
        args.runtime,
        column=args.column,
        **options,
    )
    rows = [r.to_dict() for r in results]
    if args.json:
        dump_json(rows)
        return 0
    stat = rows[0]["statistic"]
    title = (
        f"{args.kind} bootstrap of {args.file}: {stat} median and "
        f"{args.confidence:.0%} interval (seed {rows[0]['seed']})"
    )
    print_table(
        rows,
        columns=["target_ranks", "k", "median_s", "ci_low_s", "ci_high_s", "replicas"],
        title=title,
    )
    return 0


def register(registry):
    p = registry.group_command(
        "stats",
        "gev",
        help="GEV fits (MOM/PWM/MLE), type agreement, EMMA",
        description=GEV_DESCRIPTION,
    )
    p.add_argument("file", help="CSV or Parquet file")
    p.add_argument(
        "--column",
        default=None,
        help="column with the sample in seconds "
        f"(default: the first of {', '.join(SAMPLE_COLUMNS)})",
    )
    p.add_argument(
        "--draws",
        type=float_list,
        default=[4, 64, 2048],
        metavar="N1,N2,...",
        help="numbers of draws for the expected maximum (default: 4 64 2048)",
    )
    p.add_argument(
        "--gumbel-tol",
        type=number,
        default=evt.GUMBEL_TOL,
        help=f"|k| below this is Type I (default: {evt.GUMBEL_TOL})",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_gev)

    p = registry.group_command(
        "stats",
        "bootstrap",
        help="predict maxima at larger scale by bootstrap",
        description=BOOTSTRAP_DESCRIPTION,
    )
    p.add_argument("file", help="CSV or Parquet file (layouts above)")
    p.add_argument(
        "--base-ranks",
        type=int,
        metavar="p",
        help="ranks of the measurement "
        "(inferred from the per-rank layout; required for the maxima layout)",
    )
    p.add_argument(
        "--target-ranks",
        type=float_list,
        required=True,
        metavar="P1,P2,...",
        help="scales to predict (>= base ranks)",
    )
    p.add_argument(
        "--column",
        default=None,
        help="time column, seconds (default: per-rank layout "
        f"{' or '.join(PER_RANK_COLUMNS)}, maxima layout "
        f"{' or '.join(MAXIMA_COLUMNS)})",
    )
    p.add_argument(
        "--kind",
        choices=bootstrap.KINDS,
        default="nonparametric",
        help="bootstrap kind (default: nonparametric)",
    )
    p.add_argument(
        "--ranks-per-node",
        type=int,
        help="ranks per node when the file has no node column (parametric kinds)",
    )
    p.add_argument(
        "--method",
        choices=bootstrap.FIT_METHODS,
        default="pwm",
        help="GEV fit for the parametric kinds (default: pwm)",
    )
    p.add_argument(
        "--replicas",
        type=parse_count,
        default=10_000,
        help="bootstrap replicas "
        "(default: 10000; parametric kinds split them over nodes/rank slots; "
        f"24 bytes each, {LIMIT_HELP})",
    )
    p.add_argument("--seed", type=int, help="random seed (default: fresh, printed)")
    p.add_argument(
        "--confidence",
        type=number,
        default=0.95,
        help="confidence level of the interval (default: 0.95)",
    )
    p.add_argument(
        "--runtime",
        action="store_true",
        help="predict the runtime (sum over "
        "as many intervals as the file has) instead of one interval's maximum",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_bootstrap)
