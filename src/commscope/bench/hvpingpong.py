"""HighVolumePingPong driver (Bienz et al. 2018, Algorithm 1, Sec. 4.1 queue search, Sec. 4.2 contention).

A pair of ranks exchanges n messages of s bytes each way, receives posted in the
order of the sends ("ordered") or reversed ("reversed"); every repetition's one-way
time (half the round trip) is kept in the ``samples`` table:

    n_messages, size_bytes, order, pair, rep, time_s, locality, pairs

``fit_gamma`` (:mod:`commscope.models.fitting`) turns ordered and reversed samples
into the queue-search cost gamma; :func:`model_table` sets the measured medians next
to the max-rate model with and without the queue-search term (Bienz et al. 2018, Figs. 4-5).
"""

from __future__ import annotations

import math
import os

from ..benchspec.hvpingpong import (  # noqa: F401 (re-exported)
    BENCHMARK,
    MAX_COUNT,
    MAX_COUNTS,
    ORDERS,
    planned_counts,
)
from ..errors import InputError
from ..launch import in_slurm_allocation
from .driver import run_benchmark, split_parameters
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


def count_grid(n_min, n_max, per_decade=4):
    """Message counts from ``n_min`` to ``n_max`` (both included), ``per_decade`` per decade,
    log-spaced and rounded (the native program gets the counts, ``--counts``)."""
    if not 1 <= n_min <= n_max:
        raise InputError(
            "--messages", None, f"need 1 <= MIN <= MAX message counts, got {n_min}:{n_max}"
        )
    if per_decade < 1:
        raise InputError("--per-decade", None, f"must be at least 1, got {per_decade}")
    a, b = math.log10(n_min), math.log10(n_max)
    steps = math.ceil((b - a) * per_decade - 1e-9)
    out = []
    for k in range(steps + 1):
        v = int(np.clip(round(10 ** (a + (b - a) * (k / steps if steps else 0))), n_min, n_max))
        if not out or v != out[-1]:
            out.append(v)
    return out


def node_count(hosts=None):
    """Nodes a launch would use: ``hosts``, else the Slurm allocation, else this node."""
    if hosts:
        return len(hosts)
    if in_slurm_allocation():
        try:
            return int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
        except ValueError:
            return 1
    return 1


def check_contention_layout(hosts=None, ranks_per_node=None):
    """Nodes and ranks for the contention layout (Bienz et al. 2018, Fig. 6), or InputError explaining why not.

    Node i sends to node i + N/2, so every byte crosses the middle link of a line
    of N nodes; that needs an even number N >= 4 of nodes.
    """
    nodes = node_count(hosts)
    where = (
        "--hosts"
        if hosts
        else "the Slurm allocation"
        if in_slurm_allocation()
        else "no --hosts and not inside a Slurm allocation"
    )
    if nodes < 4 or nodes % 2:
        raise InputError(
            "--contention",
            None,
            f"needs an even number of nodes, at least 4 ({where}: {nodes} node"
            f"{'' if nodes == 1 else 's'}). Contention (Bienz et al. 2018, Sec. 4.2) is the wait for a shared "
            "network link: ranks on node i send to node i + N/2 so that every byte crosses the "
            "middle of a line of nodes (Fig. 6). On one node no message crosses a network link, "
            "so there is nothing to measure; run it with --hosts H1,H2,H3,H4 or inside a Slurm "
            "allocation of 4 or more nodes",
        )
    ppn = ranks_per_node or 1
    if ppn < 1:
        raise InputError("--ranks-per-node", None, f"must be at least 1, got {ppn}")
    return nodes, ppn


def run_hvpingpong(**kw):
    """Run HighVolumePingPong and return the finished :class:`~commscope.runs.Run`.

    Message counts: ``counts`` (a list) or the log grid ``n_min..n_max`` with
    ``per_decade`` points per decade (:func:`count_grid`). Sizes: every count with
    every size in ``sizes``, or a constant total ``total_bytes`` (s = total // n, as in
    Bienz et al. 2018, Fig. 4). ``orders``: any of "ordered", "reversed" (both by default, run
    interleaved). ``pairs`` concurrent pairs (rank i <-> i + P/2), or with
    ``contention=True`` the multi-node layout of Bienz et al. 2018, Fig. 6 (node i <-> node i + N/2,
    ``ranks_per_node`` ranks on each of the ``hosts`` or Slurm nodes); on one node
    that raises InputError explaining why it cannot run. ``queues=True`` adds one untimed
    repetition per cell that reads Open MPI's ob1 queue-length pvars around each receive
    phase (table ``queues``: unexpected messages before the receives are posted, posted
    receives and unexpected messages right after; NaN under an MPI without them), to
    show which queue the search walked. Parameters as the descriptor names them
    (commscope/benchspec/hvpingpong.py: pairs, n_min, n_max, per_decade, counts, sizes,
    total_bytes, orders, iters, warmup, min_messages, contention, queues; the rest
    default), the other keywords go to :func:`~commscope.bench.driver.run_benchmark`.
    """
    p, launch_kw = split_parameters("hvpingpong", kw)
    BENCHMARK.check(p)
    if "sizes" in kw and p["total_bytes"] is not None:
        raise InputError("--total-bytes", None, "give --sizes or --total-bytes, not both")
    pairs, counts, sizes, total_bytes = p["pairs"], p["counts"], p["sizes"], p["total_bytes"]
    iters, warmup, min_messages = p["iters"], p["warmup"], p["min_messages"]
    contention, queues = p["contention"], p["queues"]
    orders = tuple(dict.fromkeys(str(o).strip().lower() for o in p["orders"]))
    bad = [o for o in orders if o not in ORDERS]
    if bad or not orders:
        raise InputError(
            "--order",
            None,
            f"expected ordered, reversed or both, got {','.join(orders) or 'nothing'}",
        )
    count_opt = "--counts" if counts is not None else "--messages"  # what the user typed
    if counts is not None:
        counts = sorted({int(c) for c in counts})
        if not counts or counts[0] < 1:
            raise InputError("--counts", None, "message counts must be >= 1")
    else:
        counts = count_grid(int(p["n_min"]), int(p["n_max"]), int(p["per_decade"]))
    if counts[-1] > MAX_COUNT:
        raise InputError(count_opt, None, f"at most {MAX_COUNT} messages (got {counts[-1]})")
    if len(counts) > MAX_COUNTS:
        raise InputError(
            count_opt, None, f"at most {MAX_COUNTS} message counts (got {len(counts)})"
        )
    if total_bytes is not None:
        if total_bytes < counts[-1]:
            raise InputError(
                "--total-bytes",
                None,
                f"{total_bytes} bytes over {counts[-1]} messages leaves less than "
                "1 byte per message",
            )
        sizes = None
    else:
        sizes = sorted({int(s) for s in sizes})
        if not sizes or sizes[0] < 0:
            raise InputError("--sizes", None, "message sizes must be >= 0 bytes")
        if counts[-1] * sizes[-1] > (1 << 31):
            raise InputError(
                "--sizes",
                None,
                f"{counts[-1]} x {sizes[-1]} bytes exceeds 2 GiB "
                f"per direction: lower {count_opt} or --sizes",
            )
    if min_messages > MAX_COUNT:
        raise InputError("--min-messages", None, f"must be 0 .. {MAX_COUNT}, got {min_messages}")
    if contention:
        nodes, ppn = check_contention_layout(
            launch_kw.get("hosts"), launch_kw.get("ranks_per_node")
        )
        nranks = nodes * ppn
        launch_kw["ranks_per_node"] = ppn
    else:
        nranks = 2 * pairs
    params = dict(
        pairs=nranks // 2,
        counts=counts,
        sizes=sizes,
        total_bytes=total_bytes,
        orders=list(orders),
        iters=iters,
        warmup=warmup,
        min_messages=int(min_messages),
        contention=bool(contention),
        queues=bool(queues),
        layout=(
            "node i <-> node i + N/2 (Bienz et al. 2018, Fig. 6)"
            if contention
            else "rank i <-> rank i + P/2"
        ),
    )
    return run_benchmark(
        "hvpingpong",
        "hvpingpong",
        BENCHMARK.native_args(params),
        nranks=nranks,
        parameters=params,
        **launch_kw,
    )


# ------------------------------------------------------------------ analysis


def medians(samples):
    """Median one-way time per (n_messages, size_bytes, order, locality, pairs)."""
    keys = [k for k in ("n_messages", "size_bytes", "order", "locality", "pairs") if k in samples]
    g = samples.groupby(keys)["time_s"]
    return (
        g.median()
        .rename("median_s")
        .to_frame()
        .assign(q25_s=g.quantile(0.25), q75_s=g.quantile(0.75), reps=g.size())
        .reset_index()
    )


def model_table(samples, machine_model=None, gamma_s=None, reversed_search="upper"):
    """Measured medians next to the modelled times (Bienz et al. 2018, Figs. 4-5).

    Columns added: ``maxrate_s`` (node-aware max-rate model alone: n messages each
    paying latency and transport, parameters from ``machine_model``), ``queue_s`` (gamma n
    ordered, gamma n^2 reversed), ``model_s`` = maxrate_s + queue_s, and
    ``ordered_plus_queue_s``: the measured ordered median plus the extra search
    gamma (n^2 - n), a model of the reversed time that needs no machine model.
    ``gamma_s`` defaults to :func:`commscope.models.fitting.fit_gamma` on ``samples``
    (when both orders were measured), else the machine model's gamma.
    """
    from ..models.fitting import fit_gamma
    from ..models.message_time import message_seconds
    from ..models.p2p import queue_search_time

    med = medians(samples)
    if gamma_s is None and set(med["order"]) >= set(ORDERS) and med["n_messages"].max() >= 2:
        gamma_s = fit_gamma(samples, search=reversed_search).gamma_s
    if gamma_s is None and machine_model is not None:
        gamma_s = machine_model.gamma_s
    n = med["n_messages"].to_numpy(float)
    if gamma_s is not None:
        in_order = queue_search_time(gamma_s, n, "ordered")
        reversed_ = queue_search_time(gamma_s, n, reversed_search)
        med["queue_s"] = np.where(med["order"] == "ordered", in_order, reversed_)
        ordered = med[med["order"] == "ordered"].set_index(["n_messages", "size_bytes"])["median_s"]
        key = pd.MultiIndex.from_frame(med[["n_messages", "size_bytes"]])
        med["ordered_plus_queue_s"] = ordered.reindex(key).to_numpy() + (reversed_ - in_order)
    else:
        med["queue_s"] = np.nan
        med["ordered_plus_queue_s"] = np.nan
    med["maxrate_s"] = np.nan
    if machine_model is not None:
        for (loc, ppn), idx in med.groupby(["locality", "pairs"]).groups.items():
            sub = med.loc[idx]
            try:
                one = message_seconds(
                    machine_model, sub["size_bytes"].to_numpy(float), loc, ppn=int(ppn)
                )
            except InputError:  # the machine model lacks this locality
                continue
            med.loc[idx, "maxrate_s"] = sub["n_messages"].to_numpy(float) * np.asarray(one)
    med["model_s"] = med["maxrate_s"] + med["queue_s"].fillna(0)
    med.attrs["gamma_s"] = gamma_s
    return med
