"""``commscope model holds``: do the models hold on this machine? One verdict per model."""

import sys
from pathlib import Path

from ..models.machine_model import DEFAULT_FILE, LEGACY_FILE, load_machine_model
from ..output import dump_json, print_table
from .common_options import add_machine_model_option

DESCRIPTION = """\
Every model commscope has, judged on the runs given (a study folder, run directories, or
folders of them): postal per protocol, max-rate, node-aware, queue search per receive
order, contention, stencil message/thread counts, partitioned, and the variability
bootstraps. Per model: what it predicted and what was measured at the worst point, the
ratio measured / predicted (median and worst over the points compared), and a verdict:

  holds             median within 1.25x and every point within 1.5x (counts: equal)
  holds within X    every point within X (X <= 4)
  does not hold     some point more than 4x off (counts: any differs)
  not tested here   nothing these runs can judge, and why

Points of oversubscribed runs (more ranks x threads than cores) are shown, never judged.
A point measured by a run the machine model was fitted from is marked "in-sample".

The machine model: --machine-model, else the study folder's machine-model.json, else one
fitted from the ping-pong runs given (then postal and node-aware are in-sample).
See docs/holds.md.

examples:
  commscope model holds studies/20260101T000000Z
  commscope model holds runs/pp-check runs/hvpp --machine-model machine-model.json --json
"""


def register(registry):
    p = registry.group_command(
        "model",
        "holds",
        help="do the models hold on this machine? a verdict per model",
        description=DESCRIPTION,
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a study folder, run directories, or folders holding them",
    )
    add_machine_model_option(
        p,
        help="machine model: a file of `commscope fit`, or bluewaters "
        "(default: the study's, else fitted from the ping-pong runs)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def study_parts(paths):
    """(run paths, machine-model file or None): a study folder gives its runs/ and its model."""
    runs, model = [], None
    for p in map(Path, paths):
        if not (p / "meta.json").exists() and (p / "runs").is_dir():
            runs.append(p / "runs")
            for name in (DEFAULT_FILE, LEGACY_FILE):
                if model is None and (p / name).is_file():
                    model = p / name
        else:
            runs.append(p)
    return runs, model


def resolve_machine_model(given, runs, study_model):
    """(machine model or None, where it comes from)."""
    from ..errors import InputError
    from ..runs import expand_run_paths, open_run

    if given or study_model:
        mm = load_machine_model(given or study_model)
        src = mm.machine.get("source_runs") or []
        fitted = f" (fitted from {', '.join(Path(s).name for s in src)})" if src else ""
        return mm, f"{given or study_model}{fitted}"
    pingpong = [p for p in expand_run_paths(runs) if open_run(p, warn=False).kind == "pingpong"]
    if not pingpong:
        return None, "none given, and no ping-pong run to fit one from"
    from ..machine_fit import fit_runs

    try:
        return fit_runs(pingpong), (
            "fitted from the ping-pong runs given: " + ", ".join(p.name for p in pingpong)
        )
    except InputError as exc:
        return None, f"none could be fitted from the ping-pong runs given: {exc}"


def run(args):
    from ..predict.holds import holds_table, open_runs, printable_rows

    runs, study_model = study_parts(args.runs)
    opened = open_runs(runs)  # a damaged run: exit 2 naming the file, before any verdict
    mm, where = resolve_machine_model(args.machine_model, runs, study_model)
    table = holds_table(opened, mm, where)
    if args.json:
        dump_json(table)
        return 0
    print_table(printable_rows(table), title=f"Do the models hold here? (machine model: {where})")
    print()
    for r in table["rows"]:
        print(f"{r['model']}: {r['verdict']}: {r['reason']}")
    t = table["thresholds"]
    print(
        f"# holds: median within {t['holds_median_ratio']}x, every point within "
        f"{t['holds_worst_ratio']}x; holds within X: X <= {t['within_worst_ratio']}; "
        "ratio = measured / predicted",
        file=sys.stderr,
    )
    return 0
