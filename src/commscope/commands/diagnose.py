"""commscope diagnose"""

import sys

EXAMPLES = """\
examples:
  commscope profile -n 4 --trace --callsites -- ./halo      # profile with a trace
  commscope diagnose runs/<time>-profile                    # what is wrong, the fix, the saving
  commscope diagnose RUN --json                             # {"efficiency": ..., "findings": [...]}
  commscope diagnose RUN --what-if balance --what-if network=ideal
  commscope diagnose RUN --machine-model machine-model.json # model small messages, queues

Findings are ranked by what their fix saves, the time they lose beside it: kind,
culprit ranks (whose work causes the loss), waiting ranks and function, call site, the
region of the culprit's extra work, lost time and share of the run, the fix in one
sentence, and the saving with how it was predicted.  CPU contention (ranks runnable
but waiting for a core: a busy or oversubscribed node) comes first when it costs most;
a loss no larger than the run's own jitter explains is marked "(noise X)" and never
heads the text.  With an event trace (profile --trace) the
savings come from replays of the trace (the unchanged replay's error against the
measured run is printed with them); without one only load imbalance (from the
per-function timers) and thread imbalance (--ompt) can be found.  The efficiency line is
POP's: parallel = load balance x communication, communication = serialisation x
transfer (docs/diagnose.md).

--what-if replays the trace with a change and prints the run time it predicts:
  balance                the work between MPI calls spread evenly over the ranks
  network=ideal          zero latency, infinite bandwidth (MPI calls cost nothing)
  machine-model=FILE     messages and collectives timed by that machine model
"""


def register(registry):
    from .common_options import add_machine_model_option

    p = registry.command(
        "diagnose",
        help="name what is wrong in a profile run, the culprit, the fix and the saving",
        description="The diagnosis of a `commscope profile` run: wait states, load and thread "
        "imbalance, small messages, the POP efficiency hierarchy, and for each "
        "finding the fix with a predicted saving from a replay of the trace.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="a profile run directory (commscope profile; --trace for wait states and replays)",
    )
    add_machine_model_option(
        p,
        "machine model (commscope fit) for modelled message times "
        "(small messages; machine-model what-ifs); default: none",
    )
    p.add_argument(
        "--multirate",
        metavar="RUN",
        default=None,
        help="a `commscope bench multirate` run of this machine: threads sharing a "
        "communicator are costed with its shared / per-thread rate",
    )
    p.add_argument(
        "--what-if",
        action="append",
        default=[],
        metavar="CHANGE",
        help="replay the trace with a change: balance, network=ideal or "
        "machine-model=FILE (repeatable)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="list every finding, one per call site (default: one line per kind, culprits "
        "and waiting ranks, the top 5)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"efficiency": ..., "findings": [...] (every call site), "groups": '
        '[...], "replay": ..., "notes": [...]}',
    )
    p.set_defaults(func=_run)


def _run(args):
    from ..diagnose.findings import diagnose
    from ..diagnose.text import render
    from ..errors import InputError
    from ..models.machine_model import load_machine_model
    from ..output import dump_json
    from ..profile.api import open as open_profile

    machine_model = load_machine_model(args.machine_model) if args.machine_model else None
    # a what-if's machine model times its own replay only: the diagnosis of what was
    # measured (eager limit, findings, savings) never sees it
    what_if_models = {}
    for change in args.what_if:
        if change.startswith("machine-model="):
            path = change.split("=", 1)[1]
            if not path:
                raise InputError("--what-if", None, "machine-model= needs a file")
            what_if_models[change] = load_machine_model(path)
    multirate = None
    if args.multirate:
        from ..runs import open_run

        multirate = open_run(args.multirate)
        if multirate.kind != "multirate":
            raise InputError(
                multirate.path / "meta.json",
                "kind",
                f"is a {multirate.kind!r} run; --multirate takes a bench multirate run",
            )
    d = diagnose(
        open_profile(args.run),
        machine_model=machine_model,
        what_if=args.what_if,
        multirate=multirate,
        what_if_models=what_if_models,
    )
    if args.json:
        dump_json(d.to_dict())
        return 0
    render(d, sys.stdout, every=args.all)
    if d.replay and d.replay["what_if"]:
        from ..units import format_seconds

        for w in d.replay["what_if"]:
            print(
                f"what if {w['change']}: {format_seconds(w['runtime_s'])} "
                f"(saves {format_seconds(w['saving_s'])} against the unchanged replay)"
            )
    return 0
