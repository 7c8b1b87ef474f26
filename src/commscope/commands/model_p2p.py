"""``commscope model p2p`` and ``commscope model pattern``: node-aware point-to-point models (Bienz et al. 2018)."""

import sys

from ..errors import InputError
from ..units import SIZE_HELP, parse_size_list
from ..models.message_time import message_time
from ..models.p2p import QUEUE_SEARCH_CASES, load_messages, predict_pattern
from ..models.machine_model import LOCALITIES, canonical_locality, load_machine_model
from ..output import dump_json, print_table
from ..paths import prepare_output
from .common_options import add_machine_model_option, number

P2P_DESCRIPTION = """\
Time of one message under the node-aware max-rate model (Bienz, Gropp, Olson 2018):
parameters per locality, protocol from the machine model's breakpoints,
T = alpha + ppn s / min(R_N, ppn R_b) = alpha + max(s / R_b, ppn s / R_N); the postal
model alpha + s / R_b where the machine model has no R_N (on the node, as in the paper).

--machine-model takes a machine-model JSON (`commscope fit`; docs/machine-model.md), a
CSV in the Blue Waters table format, or the word "bluewaters" for the paper's Table 1.
--sizes takes comma-separated byte counts and doubling ranges A:B (A, 2A, 4A, ... <= B).

examples:
  commscope model p2p --machine-model bluewaters --sizes 1024 --locality inter-node --ppn 16
  commscope model p2p --machine-model machine-model.json --sizes 1:4M --locality intra-socket --json
"""

PATTERN_DESCRIPTION = """\
Per-rank modelled cost of a communication phase, split into the max-rate, queue-search
(gamma n^2) and contention (delta * 2 h^3 b ppn) terms, as in the stacked bars of
Bienz, Gropp, Olson 2018, Figs. 10-11, and the maximum over ranks.

The CSV has columns rank, peer_locality, size_bytes[, count]: each row is `count`
messages of `size_bytes` that `rank` sends to peers at that locality
(intra-socket, cross-socket or intra-node, inter-node). A rank's messages are all in
flight at once (n = its total count in the queue term).

examples:
  commscope model pattern --machine-model bluewaters --messages spmv_level3.csv --ppn 16 --hops 2
  commscope model pattern --machine-model machine-model.json --messages pattern.csv \\
      --queue triangular --json
"""


def register(registry):
    p = registry.group_command(
        "model",
        "p2p",
        help="node-aware max-rate time of single messages",
        description=P2P_DESCRIPTION,
    )
    add_machine_model_option(
        p, required=True, help="machine model: a file of `commscope fit`, or bluewaters"
    )
    p.add_argument(
        "--sizes",
        required=True,
        metavar="S1,S2,...",
        help=f"message sizes, comma-separated; A:B for a doubling range ({SIZE_HELP})",
    )
    p.add_argument(
        "--locality",
        required=True,
        help=f"one of {', '.join(LOCALITIES)} (intra-node = cross-socket)",
    )
    p.add_argument(
        "--ppn", type=int, default=1, help="communicating processes per node (default %(default)s)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run_p2p)

    q = registry.group_command(
        "model",
        "pattern",
        help="per-rank cost of a message pattern",
        description=PATTERN_DESCRIPTION,
    )
    add_machine_model_option(
        q, required=True, help="machine model: a file of `commscope fit`, or bluewaters"
    )
    q.add_argument("--messages", required=True, metavar="CSV", help="message table")
    q.add_argument(
        "--ppn", type=int, default=1, help="communicating processes per node (default 1)"
    )
    q.add_argument(
        "--hops",
        type=number,
        default=None,
        help="average network hops per byte, h of eq. 7 (contention omitted if not "
        "given; given, the machine model must have delta_s_per_byte)",
    )
    q.add_argument(
        "--queue",
        choices=(*QUEUE_SEARCH_CASES, "none"),
        default="upper",
        help="queue search (default %(default)s): upper = gamma n^2 (eq. 3), triangular = gamma n(n+1)/2, "
        "ordered = gamma n, none = leave the term out. `commscope fit` fits gamma in the upper form, so "
        "triangular with a fitted gamma gives about half the measured search. A "
        "machine model without gamma_s is an error unless --queue none",
    )
    q.add_argument("--json", action="store_true", help="print JSON instead of tables")
    q.add_argument(
        "--plot",
        metavar="PNG",
        default=None,
        help="also write the stacked view per rank (Bienz et al. 2018, Figs. 10-11) to this PNG; an "
        "existing file is not overwritten",
    )
    q.set_defaults(func=run_pattern)


def run_p2p(args):
    machine_model = load_machine_model(args.machine_model)
    if args.ppn < 1:
        raise InputError("--ppn", None, f"must be >= 1 (got {args.ppn})")
    locality = canonical_locality(args.locality, field_name="--locality")
    columns = message_time(
        machine_model, parse_size_list(args.sizes, "--sizes"), locality, args.ppn
    ).columns()
    table = [dict(zip(columns, row)) for row in zip(*columns.values())]  # no pandas: fast start
    if args.json:
        dump_json({"locality": args.locality, "ppn": args.ppn, "rows": table})
    else:
        print_table(table, title=f"node-aware max-rate model, {args.locality}, ppn={args.ppn}")
    return 0


def run_pattern(args):
    machine_model = load_machine_model(args.machine_model)
    if args.ppn < 1:
        raise InputError("--ppn", None, f"must be >= 1 (got {args.ppn})")
    if args.plot and prepare_output(args.plot, "--plot").exists():
        raise InputError(args.plot, None, "exists; not overwriting it")
    result = predict_pattern(
        machine_model,
        load_messages(args.messages),
        ppn=args.ppn,
        hops=args.hops,
        queue_search=None if args.queue == "none" else args.queue,
    )
    if args.plot:
        from ..report.pattern_plot import plot_pattern

        plot_pattern(result, args.plot)
    if args.json:
        dump_json(result.to_dict())
        return 0
    print_table(result.per_rank, title="per-rank modelled time (seconds)")
    print()
    print_table(
        [{**result.term_max, "max_total_s": result.max_total_s, "max_rank": result.max_rank}],
        title="maximum over ranks (each term separately, and the largest total)",
    )
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
