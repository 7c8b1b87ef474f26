"""commscope predict partitioned"""

import math

from ..errors import InputError
from .common_options import add_link_options, add_monte_carlo_options, number
from ..output import MISSING, dump_json, format_value, print_table
from ..units import format_bytes, format_seconds
from ..predict.partitioned import (
    accuracy,
    comparison_table,
    peak,
    predict_partitioned,
    range_text,
    win_ranges,
)


def _term_text(name, t):
    """A term for one line: a value, or its calibrated size range."""
    if t.get("by_size"):
        sizes = sorted(int(k) for k in t["by_size"])
        return f"{len(sizes)} sizes {format_bytes(sizes[0])} .. {format_bytes(sizes[-1])}"
    return format_value(t.get("value"), name)


EXAMPLES = """\
examples:
  commscope fit runs/<pingpong-run> -o machine-model.json
  commscope predict partitioned runs/<partitioned-run> --machine-model machine-model.json
  commscope predict partitioned runs/<partitioned-run> \\
      --osu src/commscope/data/osu_intranode_lassen_quartz.csv --machine quartz --json

The run's own parameters (threads, mean compute, sigma, distribution, sizes) go into
Dominguez-Trujillo 2021, Algorithm 1 (analytic), into a Monte Carlo with the nominal thread-time
distribution, and into a Monte Carlo resampling the compute times the run measured.
Printed per size: elapsed time (last thread ready -> transfer complete; measured: the
median run, robust to a run the OS preempted; models: the expected time) and
effective bandwidth (size / elapsed, bytes/s), measured and modeled, then the size
ranges where the early-bird send beat the single send in the measurement and in the
models, and the measured/modeled ratio at the measured bandwidth peak.
"""


def register(registry):
    p = registry.group_command(
        "predict",
        "partitioned",
        help="modeled vs measured partitioned sends (Dominguez-Trujillo 2021, Algorithm 1 on a bench run)",
        description="Feed a machine model (fitted from ping-pong runs) or an OSU table and a "
        "partitioned run's parameters into the partitioned-communication model and "
        "compare with what the run measured.",
        epilog=EXAMPLES,
    )
    p.add_argument("run", metavar="RUN", help="a run directory of `commscope bench partitioned`")
    add_link_options(
        p,
        "machine model (commscope fit) or bluewaters; alpha/beta per "
        "protocol (give one of --machine-model and --osu)",
    )
    m = p.add_argument_group("model")
    m.add_argument(
        "--model",
        choices=("calibrated", "postal"),
        default=None,
        help="calibrated (default with --machine-model): Algorithm 1 fed the terms "
        "`bench partitioned --calibrate` measured (commscope fit puts them in the "
        "machine model); postal: fed the ping-pong link, as the thesis (the only "
        "one with --osu)",
    )
    m.add_argument(
        "--t-wait",
        type=number,
        default=0.0,
        metavar="S",
        help="MPIX_Wait overhead added to the partitioned send (default 0)",
    )
    add_monte_carlo_options(m)
    p.add_argument("--json", action="store_true", help="print JSON (tidy rows, table, ranges)")
    p.set_defaults(func=_run)


def _run(args):
    if (args.machine_model is None) == (args.osu is None):
        raise InputError(
            "--machine-model/--osu", None, "give exactly one of --machine-model or --osu"
        )
    if args.replicas < 1:
        raise InputError("--replicas", None, f"must be at least 1, got {args.replicas}")
    if args.ppn < 1:
        raise InputError("--ppn", None, f"must be at least 1, got {args.ppn}")
    df = predict_partitioned(
        args.run,
        machine_model=args.machine_model,
        osu=args.osu,
        machine=args.machine,
        locality=args.locality,
        ppn=args.ppn,
        t_wait_s=args.t_wait,
        replicas=args.replicas,
        seed=args.seed,
        model=args.model,
    )
    table = comparison_table(df)
    ranges = win_ranges(table)
    peaks = {m: peak(table, m) for m in ("partitioned", "isend")}
    if args.json:
        dump_json(
            {
                "parameters": dict(df.attrs),
                "rows": df.to_dict("records"),
                "comparison": table.to_dict("records"),
                "beats_single": ranges,
                "peak": peaks,
                "accuracy": accuracy(table),
            }
        )
        return 0
    a = df.attrs
    link = (
        f"machine model {a['source']} ({a['locality']})"
        if a.get("link") == "machine-model"
        else f"OSU {a.get('source')}" + (f" ({a['machine']})" if a.get("machine") else "")
    )
    print(
        f"# {a['run']}: {a['threads']} threads, {a['dist']} compute mean "
        f"{format_seconds(a['compute_s'])}, sd {format_seconds(a['sigma_s'])}; link: {link}"
    )
    for method, note in a.get("skipped", {}).items():
        print(f"# method {method} was skipped in this run: {note}")
    if a.get("model") == "calibrated":
        print(
            "# model: Algorithm 1 fed the calibrated terms ("
            + ", ".join(f"{k} {_term_text(k, t)}" for k, t in a["terms"].items())
            + ")"
        )
        for note in a.get("notes", []):
            print(f"# note: {note}")
    print_table(
        table,
        [
            "size_bytes",
            f"measured_{table['measured_method'].iloc[0]}_s",
            "model_partitioned_s",
            "ratio_partitioned",
            "measured_single_s",
            "model_single_s",
            "ratio_single",
            "measured_verdict",
            "model_verdict",
            "verdict_agrees",
        ],
        title=f"measured vs model ({a.get('model')}), elapsed time",
    )
    acc = accuracy(table)
    print(
        f"sizes >= {format_bytes(acc['min_size_bytes'])}: median measured/model "
        f"{format_value(acc['median_ratio'])}, farthest {format_value(acc['worst_ratio'])}; "
        f"verdict differs at: {', '.join(map(format_bytes, acc['verdicts_differ_at'])) or 'no size'}"
    )
    _print_progress(table, a)
    print()
    cols = [
        "size_bytes",
        "measured_partitioned_s",
        "measured_isend_s",
        "measured_single_s",
        "analytic_partitioned_s",
        "mc_partitioned_s",
        "mc_measured_partitioned_s",
        "analytic_single_s",
    ]
    print_table(
        table,
        [c for c in cols if table[c].notna().any()],
        title="elapsed time, last thread ready -> transfer complete (measured: median run)",
    )
    print()
    bcols = ["size_bytes"] + [
        c for c in table.columns if c.endswith("_Bps") and table[c].notna().any()
    ]
    print_table(table, bcols, title="effective bandwidth size / elapsed (MB/s = 10^6 B/s), eq. 4.3")
    print()
    print("where the early-bird send beats the single send (lower elapsed time):")
    labels = {
        "measured_partitioned": "measured, MPI-4 partitioned",
        "measured_isend": "measured, Isend per partition",
        "analytic": "model, Algorithm 1",
        "mc": "model, Monte Carlo",
    }
    for key, label in labels.items():
        if key in ranges and (
            key != "measured_partitioned" or table["measured_partitioned_s"].notna().any()
        ):
            print(f"  {label:32s} {range_text(ranges[key], format_bytes)}")

    def ratio(v):  # a model time of 0 or inf (an absurd --t-wait) makes it undefined: "-"
        return f"{v:.3g}" if math.isfinite(v) else MISSING

    for m, pk in peaks.items():
        if pk:
            print(
                f"measured {m} peak: {format_value(pk['measured_Bps'], 'peak_Bps')} at "
                f"{format_bytes(pk['size_bytes'])}; measured/analytic "
                f"{ratio(pk['measured_over_analytic'])}, measured/Monte-Carlo "
                f"{ratio(pk['measured_over_mc'])}"
                + (
                    f", measured/MC(measured times) {pk['measured_over_mc_measured']:.3g}"
                    if math.isfinite(pk["measured_over_mc_measured"])
                    else ""
                )
            )
    return 0


def _print_progress(table, attrs):
    """The early-bird saving this MPI's progress allows, per size, and why
    (commscope.predict.earlybird_progress)."""
    if "saving_s" not in table:
        return
    print()
    p = attrs["progress"]
    print_table(
        table,
        ["size_bytes", "model_saving_s", "saving_s", "progress"],
        title=f"early-bird saving the model predicts and this MPI's progress allows "
        f"({p['compute']} threads, receiver polling)",
    )
    seen = set()
    for regime, note in zip(table["progress"], table["progress_note"]):
        if regime not in seen:
            seen.add(regime)
            print(f"  {regime}: {note}")
