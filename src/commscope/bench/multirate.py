"""Multirate driver: message rate of thread pairs, one shared communicator or one each
(001 Sec. 3.9.1, Table 3.4; the pairwise pattern of the Multirate benchmark).

Thread t of rank 0 sends windows of messages to thread t of rank 1 (native/bench/multirate.c
describes the protocol).  Tables:

    threads  mode, threads, rep, thread, messages, size_bytes, time_s, rate_msgs_per_s
             (every sending thread of every repetition)
    reps     mode, threads, rep, messages, ..., time_s, rate_msgs_per_s,
             rate_per_thread_msgs_per_s, ob1 queue lengths sampled on the receiver

:func:`config_summary` gives the median rate per configuration and :func:`mode_ratio`
the thesis's comparison: rate per thread with a shared communicator over the rate
with one communicator per thread, paired by repetition, at each thread count.
"""

from ..benchspec.multirate import BENCHMARK, MAX_THREADS, MODES  # noqa: F401 (re-exported)
from ..errors import InputError
from ..launch import available_cores
from .driver import register_resume, run_benchmark, split_parameters
from ..lazy import lazy

pd = lazy("pandas")


def parse_modes(modes):
    """'shared,per-thread' or a sequence -> tuple of mode names, validated."""
    names = [m.strip() for m in (modes.split(",") if isinstance(modes, str) else modes)]
    names = [m for m in names if m]
    bad = [m for m in names if m not in MODES]
    if bad or not names:
        raise InputError(
            "--modes",
            None,
            f"expected shared and/or per-thread, got {', '.join(bad) or repr(modes)}",
        )
    return tuple(dict.fromkeys(names))


def run_multirate(**kw):
    """Run the pairwise multirate benchmark on 2 ranks; returns the finished Run.

    ``threads``: thread counts per rank (one job runs them all, repetitions of the
    modes alternating).  Rates are messages / time of the timed windows, from the
    barrier to the last (or each) sending thread's final ack.  Parameters as the
    descriptor names them (commscope/benchspec/multirate.py: threads, modes, size_bytes,
    window, iterations, warmup, reps; the rest default), the other keywords go to
    :func:`~commscope.bench.driver.run_benchmark`.
    """
    params, launch_kw = split_parameters("multirate", kw)
    counts = sorted(dict.fromkeys(int(t) for t in params["threads"]))
    if not counts or counts[0] < 1 or counts[-1] > MAX_THREADS:
        raise InputError(
            "--threads", None, f"thread counts must be 1..{MAX_THREADS}, got {params['threads']}"
        )
    params.update(threads=counts, modes=list(parse_modes(params["modes"])))
    BENCHMARK.check(params)
    run = run_benchmark(
        "multirate",
        "multirate",
        BENCHMARK.native_args(params),
        nranks=2,
        threads=counts[-1],
        parameters=params,
        **launch_kw,
    )
    _postprocess(run)
    return run


def _postprocess(run):
    per_thread = run.table("threads", derived=False)
    per_thread["rate_msgs_per_s"] = per_thread["messages"] / per_thread["time_s"]
    run.write_table("threads", per_thread)
    reps = run.table("reps", derived=False)
    reps["rate_msgs_per_s"] = reps["messages"] / reps["time_s"]
    reps["rate_per_thread_msgs_per_s"] = reps["rate_msgs_per_s"] / reps["threads"]
    cores = available_cores()
    # both ranks on one node: 2 x threads busy-polling threads against the cores
    shared_node = len({p.get("host") for p in run.meta.get("placement", [])}) <= 1
    reps["oversubscribed"] = reps["threads"] * (2 if shared_node else 1) > cores
    run.write_table("reps", reps)
    run.meta["oversubscription"] = {"cores_per_node": cores, "ranks_share_node": shared_node}
    run.save_meta()


register_resume(
    "multirate",
    lambda p, first: BENCHMARK.native_args(
        dict(p, threads=[t for t in p["threads"] if t >= first[0]])
    ),
    after=_postprocess,
)


def show_multirate(run, quiet=False, json=False):
    """What ``commscope bench multirate`` prints: the summary and the mode ratio (as JSON
    with ``json``), then the run directory."""
    from ..output import dump_json, print_table

    reps = run.table("reps")
    summary, ratio = config_summary(reps), mode_ratio(reps)
    if json:
        dump_json(
            {
                "run": str(run.path),
                "summary": summary.to_dict("records"),
                "ratio": ratio.to_dict("records"),
            }
        )
        return
    if not quiet:
        print_table(summary, title="median over repetitions (rates in messages/s)")
        if len(ratio):
            print_table(ratio, title="rate per thread: shared communicator / one per thread")
    print(run.path)


def config_summary(reps):
    """Per (threads, mode): repetitions, median/min/max rate, median rate per thread and the
    largest queue lengths the receiver saw."""
    g = reps.groupby(["threads", "mode"], sort=True)
    out = g.agg(
        reps=("rep", "size"),
        rate_msgs_per_s=("rate_msgs_per_s", "median"),
        rate_min_msgs_per_s=("rate_msgs_per_s", "min"),
        rate_max_msgs_per_s=("rate_msgs_per_s", "max"),
        rate_per_thread_msgs_per_s=("rate_per_thread_msgs_per_s", "median"),
        posted_recvq_mean=("posted_recvq_mean", "mean"),
        posted_recvq_max=("posted_recvq_max", "max"),
        unexpected_msgq_max=("unexpected_msgq_max", "max"),
        oversubscribed=("oversubscribed", "any"),
    ).reset_index()
    return out


def mode_ratio(reps):
    """Per thread count: median rate per thread with a shared communicator and with one per
    thread, and the median over repetitions of their ratio (below 1: sharing the
    communicator costs rate, 001's finding).  The ratio pairs the two modes' runs of
    the same repetition, which ran back to back, so slow phases of a shared machine
    cancel; at 1 thread both modes do the same thing and the ratio shows the noise."""
    cols = ["threads", "shared_msgs_per_s", "per_thread_msgs_per_s", "shared_over_per_thread"]
    if not set(MODES) <= set(reps["mode"]):
        return pd.DataFrame(columns=cols)
    rate = reps.pivot_table(
        index=["threads", "rep"], columns="mode", values="rate_per_thread_msgs_per_s"
    )
    paired = (rate["shared"] / rate["per-thread"]).groupby(level="threads").median()
    med = rate.groupby(level="threads").median()
    out = pd.DataFrame(
        {
            "threads": med.index,
            "shared_msgs_per_s": med["shared"].to_numpy(),
            "per_thread_msgs_per_s": med["per-thread"].to_numpy(),
            "shared_over_per_thread": paired.reindex(med.index).to_numpy(),
        }
    )
    return out[cols].reset_index(drop=True)
