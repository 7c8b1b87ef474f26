"""What if a traced halo exchange ran with T threads per rank? (002 Sec. 3-4 with 004's model)

The trace gives, per receiving rank, the halo messages of each timestep: how many,
from which neighbour ranks, how many bytes in all. Re-threading follows 002: the
process's sub-domain is split into the most cube-like L_1 x ... decomposition of T
threads; every boundary thread exchanges its own part of the halo, so a timestep has
M_t messages received by T_r threads and sent by T_s threads of the neighbours
(:func:`commscope.models.stencil.stencil_counts`; who sends which tag to whom is
:func:`commscope.models.stencil_plan.build_plan`). The timestep's bytes are split evenly
over the M_t messages. Each stencil direction is mapped to one traced neighbour
rank, in turn, so the ob1 engine sees the per-source lists it would have.

Each trial posts all receives (the T_r threads interleaved at random, each in its
own order, as in 002's benchmark), then the T_s sending threads' messages arrive,
interleaved at random; the engine gives every message's search depth. The drain
time of one timestep is 004's per-process sum, with the simulated number of queue
entries searched in place of eq. 3's bound:

    drain = sum over the timestep's messages of T_node-aware(size, locality) + gamma * searched

The same formula on the replayed trace (its messages, its searched entries) is the
baseline.
"""

from __future__ import annotations

from dataclasses import dataclass


from ..models.stencil_plan import balanced_decomposition, build_plan
from ..errors import InputError
from ..models import stencil
from ..models.message_time import message_seconds
from ..models.required_terms import require_term
from . import engines as eng
from .queue_replay import random_interleave
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


@dataclass
class Halo:
    """One receiving rank's traced halo exchange."""

    rank: int
    steps: int
    messages_per_step: float
    bytes_per_step: float
    neighbours: list


def traced_halo(rank_input):
    """Timesteps, messages and bytes per timestep, neighbour ranks of a traced rank."""
    arr = rank_input.events[rank_input.events["kind"] == "arrive"]
    if arr.empty:
        raise InputError(
            f"rank {rank_input.rank}", None, "received no messages: nothing to re-thread"
        )
    per_key = arr.groupby(["sender", "comm", "tag"]).size()
    steps = int(np.median(per_key.to_numpy()))
    return Halo(
        rank_input.rank,
        steps,
        len(arr) / steps,
        float(arr["bytes"].sum()) / steps,
        sorted(set(arr["sender"].tolist())),
    )


def stencil_plan(points, threads):
    """(counts, plan) for ``threads`` per rank: the decomposition, M_t, T_r, T_s and who
    sends which tag to whom, with each message's stencil direction."""
    key = str(points).lower().removesuffix("pt")
    if key not in stencil.STENCILS:
        raise InputError("--points", None, f"expected 5, 7, 9 or 27, got {points!r}")
    if int(threads) < 1:
        raise InputError("--threads-send", None, f"must be >= 1, got {threads}")
    dims = balanced_decomposition(int(threads), stencil.STENCILS[key][0])
    counts = stencil.stencil_counts(key, dims)
    plan = build_plan(key, dims)
    recv = np.array([list(map(int, p.split("x"))) for p in plan["recv_position"]])
    send = np.array([list(map(int, p.split("x"))) for p in plan["send_position"]])
    plan["direction"] = ["x".join(map(str, d)) for d in (send - recv)]
    return counts, plan


def _trial_events(plan, sources, rng):
    """Posts (receiving threads interleaved), then arrivals (sending threads interleaved)."""
    by_recv = plan.sort_values(["recv_thread"], kind="stable")  # a thread posts in plan order
    post_order = by_recv.index.to_numpy()[random_interleave(by_recv["recv_thread"].to_numpy(), rng)]
    by_send = plan.sort_values(["send_thread", "tag"], kind="stable")
    send_order = by_send.index.to_numpy()[random_interleave(by_send["send_thread"].to_numpy(), rng)]
    tags = plan["tag"].to_numpy()
    n = len(plan)
    is_arrival = np.r_[np.zeros(n, np.int8), np.ones(n, np.int8)]
    tag = np.r_[tags[post_order], tags[send_order]]
    src = np.r_[sources[post_order], sources[send_order]]
    return is_arrival, src, tag


def predict(
    halo,
    points,
    threads,
    machine_model,
    engines=("ob1",),
    trials=100,
    seed=0,
    bins=eng.DEFAULT_BINS,
    locality="intra-socket",
    baseline=None,
):
    """Depth and drain-time distribution of one rank re-threaded to ``threads``.

    ``baseline``: {engine: replay summary row of this rank} (traced threading) for
    the comparison rows. Returns (counts, rows, notes): one row per engine for the
    what-if ("threads" = T) and for the baseline ("threads" = "traced").
    """
    counts, plan = stencil_plan(points, threads)
    dirs = sorted(set(plan["direction"]))
    neighbour_of = {d: halo.neighbours[i % len(halo.neighbours)] for i, d in enumerate(dirs)}
    sources = np.array([neighbour_of[d] for d in plan["direction"]], dtype=np.int64)
    size = int(np.ceil(halo.bytes_per_step / counts.M_t))
    notes = []
    per_msg = float(message_seconds(machine_model, size, locality))
    # the drain time's search term: no silent 0 when the machine model lacks gamma
    gamma = require_term(machine_model, "gamma_s", "the what-if's queue-search time")
    rng = np.random.default_rng(seed)
    rows = []
    for engine in engines:
        stats = []
        for _ in range(int(trials)):
            is_arrival, src, tag = _trial_events(plan, sources, rng)
            partner, searched, plen, ulen, total = eng.run_engine(
                engine, is_arrival, np.zeros(len(tag), np.int64), src, tag, bins=bins
            )
            depth = searched.astype(np.int64) - (partner >= 0)
            d = depth[is_arrival == 1]
            stats.append((d.mean(), d.max(), total))
        s = np.array(stats, dtype=float)
        drain = counts.M_t * per_msg + gamma * s[:, 2]
        rows.append(
            {
                "rank": halo.rank,
                "engine": engine,
                "threads": str(threads),
                "decomposition": "x".join(map(str, counts.decomposition)),
                "M_t": counts.M_t,
                "T_r": counts.T_r,
                "T_s": counts.T_s,
                "message_bytes": size,
                "avg_depth": float(s[:, 0].mean()),
                "max_depth": int(s[:, 1].max()),
                "searched_per_step": float(s[:, 2].mean()),
                "searched_p95": float(np.percentile(s[:, 2], 95)),
                "drain_s": float(drain.mean()),
                "drain_p95_s": float(np.percentile(drain, 95)),
                "trials": int(trials),
            }
        )
        if baseline and engine in baseline:
            b = baseline[engine]
            traced_size = halo.bytes_per_step / halo.messages_per_step
            searched = b["searched"] / halo.steps
            rows.append(
                {
                    "rank": halo.rank,
                    "engine": engine,
                    "threads": "traced",
                    "decomposition": "-",
                    "M_t": halo.messages_per_step,
                    "T_r": None,
                    "T_s": None,
                    "message_bytes": int(round(traced_size)),
                    "avg_depth": b["prq_avg_depth"],
                    "max_depth": b["prq_max_depth"],
                    "searched_per_step": searched,
                    "searched_p95": None,
                    "drain_s": halo.messages_per_step
                    * float(message_seconds(machine_model, traced_size, locality))
                    + gamma * searched,
                    "drain_p95_s": None,
                    "trials": None,
                }
            )
    return counts, rows, notes
