"""Multithreaded message matching (Schonbein et al. 2018, Sec. 4.1): native/bench/mtmatch.c."""

from ..errors import InputError
from .spec import Benchmark, Check, Option, Points, StudyRun, Table

MAX_SIZE = 1 << 20  # bytes per message


def _rules(params):
    if params["size_bytes"] > MAX_SIZE:
        raise InputError(
            "--size", None, f"message size must be 0..1 MiB, got {params['size_bytes']}"
        )


def _col(df, name):
    import pandas as pd

    return df[name] if name in df.columns else pd.Series(float("nan"), index=df.index)


def study(quick, pairs):
    return [
        StudyRun(
            "mtmatch",
            dict(
                points=27,
                sweep=[1, 2] if quick else [1, 2, 4, 8],
                trials=3 if quick else 10,
                warmup=1 if quick else 2,
            ),
            says="multithreaded matching, 27-point stencil, 1 .. 8 threads per process",
        )
    ]


#: meta.json's fields beyond the parameters that the driver records (JSON Schema).
MORE_META = {
    "oversubscription": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "config": {"$ref": "#/$defs/count"},
                "oversubscribed": {"type": "boolean"},
                "threads_recv": {"$ref": "#/$defs/count"},
                "threads_send": {"$ref": "#/$defs/count"},
                "cores_per_node": {"$ref": "#/$defs/count"},
            },
            "required": ["config", "oversubscribed", "threads_recv", "threads_send"],
        },
    }
}


BENCHMARK = Benchmark(
    name="mtmatch",
    more_meta=MORE_META,
    summary="multithreaded message matching: queue drain and search depth (Schonbein et al. "
    "2018, Sec. 4.1)",
    description="Threads of a stencil decomposition pre-post and send their own halo "
    "messages; the message counts per thread come from the stencil model "
    "(commscope model stencil).",
    options=(
        Option(
            "points",
            "text",
            "stencil (2-D: 5, 9; 3-D: 7, 27) or naive (k messages per thread); "
            "required unless --resume",
            metavar="5|7|9|27|naive",
            native=False,
            recorded=("configs",),  # recorded as the configurations it makes
            required=False,
        ),
        Option(
            "decomp",
            "text",
            "thread decomposition of the process's domain, e.g. 4x4x2",
            params=("decomposition",),
            metavar="LxL[xL]",
            native=False,
            recorded=("configs",),  # recorded as the configurations it makes
            required=False,
        ),
        Option(
            "k",
            "int",
            "messages per thread (naive only)",
            native=False,
            required=False,
            recorded=("configs",),
        ),
        Option(
            "sweep",
            "ints",
            "instead of --decomp: threads per process to sweep (one job)",
            metavar="T1,T2,...",
            native=False,
            recorded=("configs",),  # recorded as the configurations it makes
            required=False,
        ),
        Option(
            "shape",
            "choice",
            "decompositions of a sweep: most cube-like, or 1x1xT (3-D)",
            default="cube",
            choices=("cube", "linear"),
            native=False,
            recorded=("configs",),  # recorded as the configurations it makes
            required=False,
        ),
        Option("trials", "int", "recorded trials", default=10, short="t", minimum=1),
        Option("warmup", "int", "unrecorded warm-up trials first", default=2, short="x", minimum=0),
        Option(
            "size",
            "size",
            "message size, at most 1 MiB",
            default="8",
            short="s",
            params=("size_bytes",),
            minimum=0,
            unit="bytes",
        ),
        Option(
            "plan",
            "text",
            "CSV config,points,decomposition,tag,recv_thread,send_thread: receives posted "
            "in row order, sends in tag order per thread (the driver writes <run>/plan.csv)",
            params=("plan_file",),
            metavar="FILE",
            cli=False,
            required=False,
        ),
        Option(
            "from-config",
            "int",
            "start at config K of the plan (resuming a sweep)",
            default=0,
            minimum=0,
            metavar="K",
            cli=False,
            required=False,
        ),
    ),
    tables={
        # points and decomposition: "27", "2x1x1" (a raw CSV may read the first as numbers):
        # a label; ob1 queue lengths NaN under MPIs without the pvars
        "trials": Table(
            # derived from the recorded orders once the job has ended (bench/mtmatch.py)
            derived={
                "k": "n",
                "avg_search_depth": "n",
                "max_search_depth": "n",
                "total_searched": "n",
                "oversubscribed": "b",
            },
            columns={
                "config": "i",
                "trial": "i",
                "points": "*",
                "decomposition": "*",
                "threads_recv": "i",
                "threads_send": "i",
                "messages": "i",
                "size_bytes": "i",
                "drain_time_s": "f",
                "ob1_posted_recvq_length": "n",
                "ob1_unexpected_msgq_length": "n",
            },
            key=("config", "trial"),
            checks=(
                Check(
                    "messages",
                    "at least 1 where a search depth or drain time was measured",
                    lambda d: (
                        (d["messages"] < 1)
                        & (
                            (_col(d, "avg_search_depth") > 0)
                            | (_col(d, "max_search_depth") > 0)
                            | (d["drain_time_s"] > 0)
                        )
                    ),
                ),
                Check(
                    "max_search_depth",
                    "at least avg_search_depth",
                    lambda d: _col(d, "max_search_depth") < _col(d, "avg_search_depth"),
                ),
                Check("drain_time_s", "not negative", lambda d: d["drain_time_s"] < 0),
            ),
        ),
        "order": Table(
            columns={
                "config": "i",
                "trial": "i",
                "tag": "i",
                "post_seq": "i",
                "send_seq": "i",
                "recv_thread": "i",
                "send_thread": "i",
            },
            key=("config", "trial", "tag"),
        ),
    },
    # recorded instead of the options that make them: one entry per configuration
    more_parameters={
        "properties": {
            "configs": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": [
                        "config",
                        "points",
                        "decomposition",
                        "threads",
                        "M_t",
                        "T_r",
                        "T_s",
                    ],
                    "properties": {
                        "config": {"$ref": "#/$defs/count"},
                        "points": {"type": "string"},
                        "decomposition": {"type": "string"},
                        "k": {"type": ["integer", "null"]},
                        "threads": {"$ref": "#/$defs/positive"},
                        "M_t": {"$ref": "#/$defs/count"},
                        "T_r": {"$ref": "#/$defs/count"},
                        "T_s": {"$ref": "#/$defs/count"},
                    },
                },
            }
        },
        "required": ["configs"],
    },
    points=Points(
        "trials",
        ("config",),
        "configurations",
        lambda p: [((s["config"],), p["trials"]) for s in p["configs"]],
    ),
    ranks=lambda params: 2,
    report_section="mtmatch",
    study=study,
    study_order=30,
    constants={"MAX_SIZE": MAX_SIZE},
    rules=_rules,
    examples="""\
examples:
  commscope bench mtmatch --points 27 --decomp 2x2x2          # M_t = 152, T_r = 8, T_s = 56
  commscope bench mtmatch --points 27 --decomp 4x4x2 --trials 10 --warmup 2
  commscope bench mtmatch --points naive --k 8 --decomp 4     # 4 threads x 8 messages
  commscope bench mtmatch --points 7 --sweep 1,2,4,8,16       # cube-like decompositions
  commscope bench mtmatch --points 27 --sweep 1,2,4,8 --shape linear   # 1x1xn (Schonbein et al. 2018, Fig. 4)
  commscope bench mtmatch --resume runs/20260101T120000Z-mtmatch   # a stopped sweep, from its first incomplete configuration

Rank 0's receiving threads pre-post M_t tagged receives, rank 1's sending threads
send them after a barrier (MPI_THREAD_MULTIPLE); rank 0 times the queue drain.
<run>/trials.parquet: drain_time_s, the MPICH-style linked-list search depth computed
from the recorded orders, and Open MPI's ob1 queue lengths (NaN under other MPIs);
<run>/order.parquet: every message's post and send sequence numbers.
""",
)
