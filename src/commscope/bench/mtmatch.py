"""Multithreaded message-matching benchmark driver (Schonbein et al. 2018, paper 002 Sec. 4.1).

Rank 0's T_r threads pre-post M_t uniquely tagged receives, rank 1's T_s threads
send them (MPI_THREAD_MULTIPLE), and rank 0 times the queue drain. Which thread
posts and which thread sends which tag is planned from the stencil decomposition
(:mod:`commscope.models.stencil_plan`), so the counts are the model's
(:mod:`commscope.models.stencil`) by construction:

* stencils (5/9-point 2-D, 7/27-point 3-D): every boundary thread p of the process
  receives one message per stencil direction d with p + d outside the process; the
  sender is the thread sub-domain p + d of the neighbouring process. The distinct
  senders are the ring of sub-domains just outside the process (T_s, eqs. 4, 8);
  the receivers are the boundary threads (T_r); the messages number M_t (eqs. 2, 6).
* naive: each of the prod L_d threads receives k messages; the k messages of thread
  i come from sending thread i (T_s = T_r = prod L_d, as in the model).

Tags are strided across threads (002: "tags are strided across sending and
receiving threads"): round j hands tag numbers to the j-th message of every
receiving thread in turn, so thread t holds tags t, t + T_r, ... while all have
messages left. Each thread posts, and each sending thread sends, its tags in
increasing order; the global orders are whatever the threads race to, recorded per
message (post_seq, send_seq) in the ``order`` table. The search depth of an
MPICH-style linked list (:mod:`commscope.models.queue_sim`) is computed from those
orders and stored in the ``trials`` table next to the queue lengths Open MPI's ob1
reports through MPI_T.

Tables:

* ``trials``: config, trial, points, decomposition, k, threads_recv, threads_send,
  messages, size_bytes, drain_time_s, avg_search_depth, max_search_depth,
  total_searched, ob1_posted_recvq_length, ob1_unexpected_msgq_length (NaN where the
  MPI has no such pvars), oversubscribed;
* ``order``: config, trial, tag, post_seq, send_seq, recv_thread, send_thread.
"""

from __future__ import annotations


from ..benchspec.mtmatch import BENCHMARK
from ..errors import InputError
from ..launch import available_cores
from ..models import stencil
from ..models.queue_sim import orders_from_sequences, prq_search, summarize
from ..models.stencil_plan import balanced_decomposition, build_plan
from .driver import RunFile, register_resume, run_benchmark, split_parameters
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


BUDGETS_S = (1e-3, 100e-3)  # 002 Sec. 4.3: per-timestep budgets of 1 ms to 100 ms
MAX_THREADS = 1024


def sweep_configs(points, thread_counts, shape="cube", k=None):
    """Configurations for a sweep over threads per process (002 Figs. 1-4).

    ``shape``: "cube" (most cube-like decomposition, Figs. 2-3), "linear" (1 x 1 x n,
    3-D only, Fig. 4). The naive case uses a 1-D decomposition of n threads.
    """
    key = str(points).lower().removesuffix("pt")
    out = []
    for n in thread_counts:
        if key == stencil.NAIVE:
            dims = (int(n),)
        elif shape == "linear":
            if key not in ("7", "27"):
                raise InputError(
                    "--shape", None, "the linear 1x1xn decomposition is 3-D (7 or 27 points)"
                )
            dims = stencil.linear_z(int(n))
        elif shape == "cube":
            dims = balanced_decomposition(
                n, stencil.STENCILS[key][0] if key in stencil.STENCILS else 2
            )
        else:
            raise InputError("--shape", None, f"expected cube or linear, got {shape!r}")
        out.append((key, dims, k))
    return out


def _config_list(points, decomposition, k, configs):
    if configs is None:
        if points is None or decomposition is None:
            raise InputError("--decomp", None, "give --points and --decomp (or a sweep)")
        dims = (
            stencil.parse_decomposition(decomposition)
            if isinstance(decomposition, str)
            else stencil.check_decomposition(decomposition, "--decomp")
        )
        configs = [(points, dims, k)]
    out = []
    for pts, dims, kk in configs:
        dims = (
            stencil.parse_decomposition(dims)
            if isinstance(dims, str)
            else stencil.check_decomposition(dims, "--decomp")
        )
        pts = str(pts).lower().removesuffix("pt")
        if pts != stencil.NAIVE and kk is not None:
            raise InputError("--k", None, "k (messages per thread) only applies to --points naive")
        out.append((pts, dims, kk))
    if not out:
        raise InputError("--decomp", None, "no configuration to run")
    return out


def check_plan(plan, source="plan"):
    """Validate a custom plan (tag, recv_thread, send_thread; rows in posting order)."""
    df = pd.DataFrame(plan).reset_index(drop=True)
    for col in ("tag", "recv_thread", "send_thread"):
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
        vals = pd.to_numeric(df[col], errors="coerce")
        if vals.isna().any() or (vals < 0).any() or (vals != np.floor(vals)).any():
            raise InputError(source, col, "must be whole numbers >= 0")
        df[col] = vals.astype(np.int64)
    if df.empty:
        raise InputError(source, None, "no messages")
    if sorted(df["tag"]) != list(range(len(df))):
        raise InputError(source, "tag", f"tags must be 0..{len(df) - 1}, each once")
    for col in ("recv_thread", "send_thread"):
        used = sorted(df[col].unique())
        if used != list(range(len(used))):
            raise InputError(source, col, "threads must be numbered 0..T-1 without gaps")
    return df[["tag", "recv_thread", "send_thread"]]


def run_mtmatch(points=None, decomposition=None, k=None, *, configs=None, plan=None, **kw):
    """Run the matching benchmark and return the finished :class:`~commscope.runs.Run`.

    One configuration (``points`` in 5, 7, 9, 27 or "naive", ``decomposition`` such as
    "4x4x2" or (4, 4, 2), ``k`` messages per thread for naive) or a list ``configs``
    of (points, decomposition, k), e.g. from :func:`sweep_configs`; all run in one
    job, ``warmup`` unrecorded trials then ``trials`` recorded ones each. ``plan``
    instead runs one hand-made plan (:func:`check_plan`: a receiving thread posts its
    tags in row order, a sending thread sends its tags in increasing order), labelled
    points "custom"; e.g. one thread each side with receives posted in reverse is
    HighVolumePingPong's worst case. After the
    job the search depths are computed from the recorded orders and added to the
    ``trials`` table, and oversubscription (threads x ranks > cores) is noted in
    meta.json under "oversubscription" and per trial. ``sweep`` (thread counts) with
    ``shape`` instead of ``decomposition`` is :func:`sweep_configs`'s sweep. The other
    parameters as the descriptor names them (commscope/benchspec/mtmatch.py: trials,
    warmup, size_bytes; the rest default), the other keywords go to
    :func:`~commscope.bench.driver.run_benchmark`.
    """
    p, launch_kw = split_parameters("mtmatch", kw)
    BENCHMARK.check(p)
    trials, warmup, size_bytes = p["trials"], p["warmup"], p["size_bytes"]
    if plan is None and configs is None:
        if points is None:
            raise InputError("--points", None, "required (5, 7, 9, 27 or naive)")
        if (decomposition is None) == (p["sweep"] is None):
            raise InputError("--decomp", None, "give exactly one of --decomp and --sweep")
        if p["sweep"] is not None:
            if not p["sweep"]:
                raise InputError("--sweep", None, "no thread counts given")
            configs = sweep_configs(points, p["sweep"], p["shape"], k)
    cfgs = [] if plan is not None else _config_list(points, decomposition, k, configs)
    plans, summary = [], []
    for i, (pts, dims, kk) in enumerate(cfgs):
        one = build_plan(pts, dims, kk)
        tr, ts = one["recv_thread"].nunique(), one["send_thread"].nunique()
        if max(tr, ts) > MAX_THREADS:
            raise InputError(
                "--decomp",
                None,
                f"{'x'.join(map(str, dims))} needs {max(tr, ts)} "
                f"threads on one rank (limit {MAX_THREADS})",
            )
        plans.append(one.assign(config=i, points=pts, decomposition="x".join(map(str, dims))))
        c = stencil.stencil_counts(pts, dims, kk)
        summary.append(
            {
                "config": i,
                "points": pts,
                "decomposition": "x".join(map(str, dims)),
                "k": kk,
                "threads": c.threads,
                "M_t": c.M_t,
                "T_r": c.T_r,
                "T_s": c.T_s,
            }
        )
    if plan is not None:
        custom = check_plan(plan)
        tr, ts = custom["recv_thread"].nunique(), custom["send_thread"].nunique()
        if max(tr, ts) > MAX_THREADS:
            raise InputError(
                "plan", None, f"{max(tr, ts)} threads on one rank (limit {MAX_THREADS})"
            )
        plans.append(custom.assign(config=0, points="custom", decomposition="-"))
        summary.append(
            {
                "config": 0,
                "points": "custom",
                "decomposition": "-",
                "k": None,
                "threads": max(tr, ts),
                "M_t": len(custom),
                "T_r": tr,
                "T_s": ts,
            }
        )
    # <run>/plan.csv, written before the job: who posts and sends which tag (the native
    # program reads the first six columns; a resumed run reads the same file)
    full = pd.concat(plans, ignore_index=True).reindex(columns=PLAN_COLUMNS)
    threads = max(max(s["T_r"], s["T_s"]) for s in summary)
    params = dict(configs=summary, trials=trials, warmup=warmup, size_bytes=size_bytes)
    run = run_benchmark(
        "mtmatch",
        "mtmatch",
        native_args(params, plan=full.to_csv(index=False)),
        nranks=2,
        threads=threads,
        parameters=params,
        **launch_kw,
    )
    _postprocess(run)
    return run


PLAN_COLUMNS = [
    "config",
    "points",
    "decomposition",
    "tag",
    "recv_thread",
    "send_thread",
    "recv_position",
    "send_position",
]


def native_args(params, plan=None, from_config=0):
    """Options of cs_mtmatch for the parameters recorded in meta.json (``plan``: the text of
    plan.csv for a new run; a resumed one reads the file already there)."""
    return BENCHMARK.native_args(
        dict(params, plan_file=RunFile("plan.csv", plan), from_config=from_config)
    )


def oversubscription(summary, placement, cores=None):
    """Per config: threads on each rank's node against its cores (002 notes this in captions)."""
    cores = cores or available_cores()
    hosts = [p.get("host") for p in placement] if placement else []
    shared = len(hosts) == 2 and hosts[0] == hosts[1]
    out = []
    for s in summary:
        recv_load = s["T_r"] + (s["T_s"] if shared else 0)
        send_load = s["T_s"] + (s["T_r"] if shared else 0)
        out.append(
            {
                "config": s["config"],
                "threads_recv": s["T_r"],
                "threads_send": s["T_s"],
                "cores_per_node": cores,
                "ranks_share_node": shared,
                "receiver_oversubscribed": recv_load > cores,
                "sender_oversubscribed": send_load > cores,
                "oversubscribed": max(recv_load, send_load) > cores,
            }
        )
    return out


def search_depths(order):
    """Per (config, trial): MPICH-style PRQ search from the recorded post and send orders."""
    rows = []
    for (cfg, trial), sub in order.groupby(["config", "trial"], sort=True):
        post, arrive = orders_from_sequences(sub)
        s = summarize(prq_search(post, arrive, source=f"order table (config {cfg}, trial {trial})"))
        rows.append(
            {
                "config": cfg,
                "trial": trial,
                "avg_search_depth": s.avg_depth,
                "max_search_depth": s.max_depth,
                "total_searched": s.total_searched,
            }
        )
    return pd.DataFrame(rows)


def _postprocess(run):
    summary = run.meta["parameters"]["configs"]
    trials = run.table("trials", derived=False)
    order = run.table("order")
    trials["points"] = trials["points"].astype(str)
    trials["decomposition"] = trials["decomposition"].astype(str)
    depth = search_depths(order)
    trials = trials.drop(columns=depth.columns.drop(["config", "trial"]), errors="ignore").merge(
        depth, on=["config", "trial"], how="left"
    )  # (derived again after a resume)
    over = oversubscription(summary, run.meta.get("placement"))
    flag = {o["config"]: o["oversubscribed"] for o in over}
    kmap = {s["config"]: s["k"] for s in summary}
    trials["k"] = trials["config"].map(kmap).astype("Int64")
    trials["oversubscribed"] = trials["config"].map(flag).astype(bool)
    cols = [
        "config",
        "trial",
        "points",
        "decomposition",
        "k",
        "threads_recv",
        "threads_send",
        "messages",
        "size_bytes",
        "drain_time_s",
        "avg_search_depth",
        "max_search_depth",
        "total_searched",
        "ob1_posted_recvq_length",
        "ob1_unexpected_msgq_length",
        "oversubscribed",
    ]
    run.write_table("trials", trials[cols])
    run.meta["oversubscription"] = over
    run.meta["search_depth"] = (
        "MPICH-style linked list simulated from post_seq/send_seq "
        "(commscope.models.queue_sim): entries passed over before "
        "the match, 0 at the head"
    )
    run.save_meta()


register_resume(
    "mtmatch", lambda p, first: native_args(p, from_config=first[0]), after=_postprocess
)


def show_mtmatch(run, quiet=False):
    """What ``commscope bench mtmatch`` prints: the mean over trials per configuration,
    then the run directory."""
    from ..output import print_table

    if not quiet:
        summary = config_summary(run.table("trials"))
        print_table(
            summary[
                [
                    "points",
                    "decomposition",
                    "threads_recv",
                    "threads_send",
                    "messages",
                    "drain_time_s",
                    "avg_search_depth",
                    "max_search_depth",
                    "ob1_posted_recvq_length",
                    "oversubscribed",
                ]
            ],
            title="mean over trials (search depth: MPICH-style list, entries passed over)",
        )
    print(run.path)


def config_summary(trials):
    """Mean over trials per config: drain time, search depth, queue lengths."""
    g = trials.groupby(
        ["config", "points", "decomposition", "threads_recv", "threads_send", "messages"], sort=True
    )
    return g.agg(
        trials=("trial", "size"),
        drain_time_s=("drain_time_s", "mean"),
        drain_time_min_s=("drain_time_s", "min"),
        drain_time_max_s=("drain_time_s", "max"),
        avg_search_depth=("avg_search_depth", "mean"),
        max_search_depth=("max_search_depth", "max"),
        ob1_posted_recvq_length=("ob1_posted_recvq_length", "mean"),
        oversubscribed=("oversubscribed", "any"),
    ).reset_index()
