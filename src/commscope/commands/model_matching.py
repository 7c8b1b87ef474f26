"""``commscope model matching``: a traced program's matching queues, per engine, and what-ifs."""

import sys
from pathlib import Path

from ..errors import InputError
from ..matching import engines as eng
from ..models.machine_model import load_machine_model
from ..output import dump_json, print_table
from ..paths import write_text_atomic
from ..runs import open_run
from .common_options import add_machine_model_option, comma_list, number

DESCRIPTION = (
    """\
Replays the event trace of a `commscope profile --trace` run through simulated MPI
matching engines and prints, per receiving rank and engine, the average and maximum
search depth of the posted-receive queue (PRQ, searched by an arriving message) and
of the unexpected queue (UMQ, searched by a posted receive), entries compared and the
longest queues. Engines: """
    + eng.ENGINE_HELP
    + """.

Arrival of a message = the sender's send start plus the time --machine-model gives it
(node-aware model; 0 without a machine model), or the receive's completion when a sender
has no trace (--arrivals). Where the run sampled Open MPI's ob1 queue pvars, the
simulated ob1 lengths are compared with them at every snapshot with no traced call
within --guard. --trials N replays N random interleavings of the posting threads.

--threads-send T re-threads the traced halo exchange to T threads per rank (Schonbein et al. 2018
stencil decomposition, --points) and predicts depth and drain time with the
node-aware model plus the machine model's gamma.

A `bench mtmatch` run instead gives, per trial, the simulated ob1 queues at the point
where the benchmark read the pvars, beside what they read.

examples:
  commscope profile -n 3 --trace --snapshot-every 50ms -- ./app
  commscope model matching runs/20261123T073202Z-profile
  commscope model matching RUN --engine ob1 --trials 200 --json
  commscope model matching RUN --lengths queues.csv     # lengths over time, per rank and engine
  commscope model matching RUN --threads-send 64 --points 5 --machine-model bluewaters \\
      --engine mpich,ob1,bins
"""
)


def register(registry):
    p = registry.group_command(
        "model",
        "matching",
        help="matching queues of a traced program, per engine, and re-threading what-ifs",
        description=DESCRIPTION,
    )
    p.add_argument("run", metavar="RUN", help="run directory of `commscope profile --trace`")
    p.add_argument(
        "--engine",
        type=comma_list(str, "engine names", "mpich,ob1"),
        default=list(eng.ENGINES),
        metavar="E1,E2",
        help=f"engines to simulate, comma-separated (default: all, {','.join(eng.ENGINES)})",
    )
    p.add_argument(
        "--bins",
        type=int,
        default=eng.DEFAULT_BINS,
        help=f"lists of the tag-hashed engine (default {eng.DEFAULT_BINS})",
    )
    p.add_argument(
        "--arrivals",
        choices=("auto", "send", "completion"),
        default="auto",
        help="message arrival: send start + model, receive completion, or auto "
        "(send when every sender was traced; default %(default)s)",
    )
    add_machine_model_option(
        p,
        help="machine model (a file of `commscope fit`, or bluewaters): "
        "message times (and gamma for --threads-send)",
    )
    p.add_argument(
        "-t",
        "--trials",
        type=int,
        default=0,
        help="random interleavings of the posting threads (default 0)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the trials (default 0)")
    p.add_argument(
        "--guard",
        type=number,
        default=0.01,
        metavar="S",
        help="a snapshot compared with the pvars has no traced call within S "
        "seconds (default 0.01)",
    )
    p.add_argument(
        "--threads-send",
        type=int,
        default=None,
        metavar="T",
        help="what-if: the halo exchange with T threads per rank",
    )
    p.add_argument(
        "--points", default="5", help="stencil of the what-if: 5, 9 (2-D), 7, 27 (3-D) (default 5)"
    )
    p.add_argument(
        "--lengths",
        metavar="CSV",
        default=None,
        help="also write both queue lengths after every event, per rank and engine, "
        "to this CSV (rank, engine, time_s, kind, posted_length, "
        "unexpected_length, depth); an existing file is not overwritten",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=run_matching)


def _progress(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def run_matching(args):
    # the replay needs numpy and pandas: imported here, so `--help` stays fast
    from ..matching.analysis import analyze, pvar_agreement, trial_summary
    from ..matching.whatif import predict, traced_halo

    for engine in args.engine:  # an unknown name fails before the trace is read
        eng.engine_code(engine)
    if args.trials < 0:
        raise InputError("--trials", None, f"must be >= 0, got {args.trials}")
    if args.bins < 1:
        raise InputError("--bins", None, f"must be >= 1, got {args.bins}")
    if args.threads_send is not None and args.machine_model is None:
        raise InputError(
            "--machine-model",
            None,
            "the --threads-send what-if needs a machine "
            "model (a `commscope fit` JSON or bluewaters)",
        )
    if args.lengths and Path(args.lengths).exists():
        raise InputError(args.lengths, None, "exists; not overwriting it")
    machine_model = load_machine_model(args.machine_model) if args.machine_model else None
    run = open_run(args.run)
    if run.meta.get("kind") == "mtmatch":
        return _mtmatch(run, args)
    a = analyze(
        args.run,
        tuple(args.engine),
        args.bins,
        args.arrivals,
        machine_model,
        args.trials,
        args.seed,
        args.guard,
        progress=None if args.json else _progress,
    )
    if a.results.empty:
        raise InputError(
            run.raw_dir,
            "trace",
            "holds no point-to-point message (collectives "
            "only): there are no matching queues to replay",
        )
    if args.lengths:
        cols = ["rank", "engine", "time_s", "kind", "posted_length", "unexpected_length", "depth"]
        write_text_atomic(args.lengths, a.results[cols].to_csv(index=False))
    equal, quiet = pvar_agreement(a.pvars)
    out = {
        "run": str(a.run.path),
        "summary": a.summary.to_dict("records"),
        "pvars": {
            "quiet_snapshots_equal": equal,
            "quiet_snapshot_values": quiet,
            "rows": a.pvars.to_dict("records"),
        },
    }
    if not a.trials.empty:
        out["trials"] = trial_summary(a.trials).to_dict("records")
    whatif_rows, notes = [], []
    if args.threads_send is not None:
        for rank, ri in a.inputs.items():
            base = {r["engine"]: r for r in a.summary[a.summary["rank"] == rank].to_dict("records")}
            counts, rows, notes = predict(
                traced_halo(ri),
                args.points,
                args.threads_send,
                machine_model,
                tuple(args.engine),
                max(args.trials, 100),
                args.seed + rank,
                args.bins,
                baseline=base,
            )
            whatif_rows += rows
        out["whatif"] = {
            "threads": args.threads_send,
            "points": args.points,
            "rows": whatif_rows,
            "notes": notes,
        }
    if args.json:
        dump_json(out)
        return 0
    cols = [
        "rank",
        "engine",
        "messages",
        "receives",
        "prq_avg_depth",
        "prq_max_depth",
        "umq_avg_depth",
        "umq_max_depth",
        "searched",
        "max_posted",
        "max_unexpected",
    ]
    print_table(a.summary[cols], title=f"matching replay of {a.run.path.name}")
    arr = a.summary.drop_duplicates("rank")
    for r in arr.itertuples():
        print(f"# rank {r.rank}: arrivals from {r.arrivals}; latency: {r.latency}")
    if quiet:
        print(
            f"# ob1 pvars: simulated = measured at {equal} of {quiet} quiet snapshot values "
            f"(peer x queue x snapshot)"
        )
    elif not a.pvars.empty:
        print(f"# ob1 pvars: no snapshot was quiet (a traced call within {args.guard} s of each)")
    else:
        print("# ob1 pvars: not sampled in this run (Open MPI with snapshots only)")
    if not a.trials.empty:
        print()
        print_table(trial_summary(a.trials), title="thread interleavings of the posts")
    if whatif_rows:
        print()
        print_table(
            whatif_rows,
            title=f"what-if: {args.threads_send} threads per rank, "
            f"{args.points}-point stencil (per timestep)",
        )
        for n in notes:
            print(f"note: {n}", file=sys.stderr)
    return 0


def _mtmatch(run, args):
    from ..matching.pvars import mtmatch_comparison

    """A `bench mtmatch` run: its recorded orders through ob1 beside the pvars it read."""
    cmp = mtmatch_comparison(run.table("order"), run.table("trials"))
    if args.json:
        dump_json({"run": str(run.path), "mtmatch": cmp.to_dict("records")})
        return 0
    print_table(
        cmp,
        title=f"ob1 queues after all receives are posted, {run.path.name}: "
        "simulated from post_seq/send_seq vs the pvars rank 0 read",
    )
    print(f"# equal in {int(cmp['equal'].sum())} of {len(cmp)} trials")
    return 0
