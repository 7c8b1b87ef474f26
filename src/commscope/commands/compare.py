"""commscope compare"""

import sys

from .common_options import add_overwrite_option

EXAMPLES = """\
examples:
  commscope compare runs/before runs/after                  # one run each side
  commscope compare --before runs/b1 runs/b2 runs/b3 --after runs/a1 runs/a2 runs/a3
  commscope compare A B --json                              # {"runtime": {...}, "functions": [...], ...}
  commscope compare A B -o compare.html                     # the comparison as an HTML report
  commscope compare --before B1 B2 --after A1 A2 --fail-if 'runtime > +5%' \\
      --fail-if 'MPI_Allreduce > +10%' --fail-if 'callsite halo.c:69 > +1ms'
  commscope compare --bench build/bench/full/previous build/bench/full   # make bench vs the pass before

Profile runs (commscope profile) are compared on run time (the largest wall_s of the
ranks, MPI_Init to MPI_Finalize), time in MPI (mean over ranks, and per rank), time
per MPI function and per call site (per rank: summed over ranks and threads, divided
by the ranks), counters (summed over ranks) and the diagnosis' findings (time lost,
matched by kind, waiting function and call site).  Benchmark runs (pingpong,
hvpingpong, partitioned, mtmatch, multirate, threads, bsp) are compared on their main
figure per point (e.g. the median one-way latency per size).  Each figure: before,
after, difference (after - before), ratio (after / before) and whether the change is
beyond the run-to-run noise: with at least 2 runs on both sides, Welch's t-test of the
means at 95 % (--statistic median: a bootstrap of the difference of the medians); with
one run on a side, untested (null).  Runs of different programs, rank counts or
MPIs are compared on what they share, and the output says what differs.

--fail-if SUBJECT OP CHANGE (repeatable): exit status 1 when a figure's change passes
the bound and is not within the noise, naming the figures.  SUBJECT: runtime, mpi,
MPI_<function>, or LEVEL KEY (function, callsite, rank, counter, finding, point,
figure; KEY may hold wildcards); OP: > < >= <=; CHANGE: +5%, -10%, +1ms, +250us, 3.
An expression that does not parse, or matches nothing: exit status 2.  docs/compare.md.
"""


def register(registry):
    p = registry.command(
        "compare",
        help="before and after: did a change help? (run time, MPI, call sites, "
        "findings; a CI gate)",
        description="Compare runs before a change with runs after it, level by level, with "
        "the difference, the ratio and whether it is beyond the run-to-run noise.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="BEFORE AFTER: one run directory each (or, with --bench, two "
        "`make bench` output folders)",
    )
    p.add_argument(
        "--before",
        nargs="+",
        metavar="RUN",
        default=None,
        help="the runs before the change: repeats of one configuration",
    )
    p.add_argument(
        "--after",
        nargs="+",
        metavar="RUN",
        default=None,
        help="the runs after the change: repeats of one configuration",
    )
    p.add_argument(
        "--bench",
        action="store_true",
        help="compare two `make bench` passes (folders of *.figures.json, e.g. "
        "build/bench/full/previous build/bench/full)",
    )
    p.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="EXPR",
        help="exit 1 when EXPR holds for a figure beyond the noise, e.g. "
        "'runtime > +5%%' (repeatable; see below)",
    )
    p.add_argument(
        "--statistic",
        choices=("mean", "median"),
        default="mean",
        help="mean: the runs' means, Welch's t-test (default %(default)s); median: "
        "the runs' medians, a bootstrap of their difference (robust to a run "
        "the machine stalled)",
    )
    p.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="changes printed per level, largest first (default %(default)s)",
    )
    p.add_argument(
        "--no-findings",
        action="store_true",
        help="do not diagnose the profile runs (faster; no findings level)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"runtime": {"before_s", "after_s", "difference_s", "ratio", '
        '"beyond_noise"}, ...} with every level',
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="HTML",
        help="also write the comparison as an HTML report there",
    )
    add_overwrite_option(p, "the -o file")
    p.set_defaults(func=_run)


def _sides(args):
    from ..errors import InputError

    if args.runs and (args.before or args.after):
        raise InputError(
            "--before/--after",
            None,
            "give the two sides either as BEFORE AFTER or with --before and --after, not both",
        )
    if args.runs:
        if len(args.runs) != 2:
            raise InputError(
                "RUN",
                None,
                f"expected BEFORE AFTER (two runs), got {len(args.runs)}; "
                "repeats go with --before RUN... --after RUN...",
            )
        return [args.runs[0]], [args.runs[1]]
    if not args.before or not args.after:
        missing = "--before" if not args.before else "--after"
        raise InputError(
            missing,
            None,
            "missing: give the runs of both sides "
            "(commscope compare BEFORE AFTER, or --before RUN... --after RUN...)",
        )
    return args.before, args.after


def _run(args):
    from ..compare import gate
    from ..errors import InputError
    from ..output import dump_json
    from ..paths import prepare_output

    rules = [gate.parse(e) for e in args.fail_if]  # a bad expression fails before any work
    if args.top < 1:
        raise InputError("--top", None, f"must be >= 1, got {args.top}")
    out_path = None
    if args.output:
        out_path = prepare_output(args.output)
        if out_path.exists() and not args.overwrite:
            raise InputError(
                out_path,
                None,
                "exists; not overwriting (choose another -o/--output or pass --overwrite)",
            )
    before, after = _sides(args)
    if args.bench:
        if len(before) != 1 or len(after) != 1:
            raise InputError("--bench", None, "compares two folders, one per side")
        from ..compare.figures import compare_dirs

        comparison = compare_dirs(before[0], after[0], statistic=args.statistic)
    else:
        from ..compare.core import compare

        comparison = compare(before, after, findings=not args.no_findings, statistic=args.statistic)
    if rules:
        comparison["gate"] = gate.evaluate(comparison, rules)
    if out_path is not None:
        from ..report.build import build_comparison_report

        build_comparison_report(comparison, out_path, overwrite=args.overwrite)
    if args.json:
        dump_json(comparison)
    else:
        from ..compare.text import render

        render(comparison, sys.stdout, top=args.top)
        if out_path is not None:
            print(f"# report: {out_path}")
    failed = comparison.get("gate", {}).get("failed")
    if failed:
        for line in failed:
            print(f"commscope: compare: fail-if {line}", file=sys.stderr)
        return 1
    return 0
