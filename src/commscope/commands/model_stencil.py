"""``commscope model stencil``: message counts of thread-decomposed stencils (Schonbein et al. 2018)."""

from ..models.stencil import per_thread_table, parse_decomposition, stencil_counts
from ..output import dump_json, print_table
from .common_options import comma_list

DESCRIPTION = """\
Messages per timestep (M_t), receiving threads (T_r) and sending threads (T_s) when
every thread of an MPI process exchanges its own halo messages (Schonbein et al. 2018,
Sec. 3). Only messages crossing the process boundary are counted. T_r uses the form
valid for every L_d >= 1 (prod L_d - prod max(L_d - 2, 0)).

examples:
  commscope model stencil --points 27 --decomp 8x8x4
  commscope model stencil --points 7 --decomp 1x1x128,1x1x256 --json
  commscope model stencil --points naive --k 512 --decomp 8x8
  commscope model stencil --points 9 --decomp 4x4 --per-thread
"""


def register(registry):
    p = registry.group_command(
        "model",
        "stencil",
        help="message counts of thread-decomposed stencils",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--points",
        required=True,
        metavar="{5,7,9,27,naive}",
        help="stencil: 5 or 9 (2-D), 7 or 27 (3-D), or naive (k messages per thread)",
    )
    p.add_argument(
        "--decomp",
        required=True,
        type=comma_list(str, "decompositions", "8x8x4,4x4x4"),
        metavar="LxLy[xLz],...",
        help="thread decomposition(s), e.g. 8x8x4; several comma-separated",
    )
    p.add_argument("--k", type=int, default=None, help="messages per thread (naive only)")
    p.add_argument(
        "--per-thread", action="store_true", help="also list the messages each thread receives"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args):
    results = []
    for text in args.decomp:
        dims = parse_decomposition(text)
        counts = stencil_counts(args.points, dims, args.k).to_dict()
        if args.per_thread:
            counts["per_thread"] = [
                {"thread": "x".join(map(str, r["thread"])), "messages": r["messages"]}
                for r in per_thread_table(args.points, dims, args.k)
            ]
        results.append(counts)
    if args.json:
        dump_json(results)
        return 0
    columns = ["stencil", "decomposition", "threads", "M_t", "T_r", "T_s"]
    if results[0]["stencil"] == "naive":
        columns.insert(3, "k")
    print_table(results, columns)
    for r in results if args.per_thread else []:
        print()
        print_table(
            r["per_thread"],
            ["thread", "messages"],
            title=f"messages received per thread, {r['decomposition']}",
        )
    return 0
