"""Simulated ob1 queues beside the lengths Open MPI reports through MPI_T.

`commscope profile` samples every MPI_T pvar into node.<node>.snap; on Open
MPI with ob1 these include, per peer of MPI_COMM_WORLD, ``pml_ob1_posted_recvq_length``
(receives posted for that source, any-source receives not counted) and
``pml_ob1_unexpected_msgq_length``. Each snapshot has a CLOCK_MONOTONIC time, the
clock the trace's ticks are converted to, so the simulated ob1 queues can be read at
the same instant (:func:`commscope.matching.queue_replay.per_peer_lengths`).

A snapshot is *quiet* when no traced call of any rank began or ended within
``guard_s`` of it. Only there are the two comparable: around a call, the real
queue changes at an instant between the call's begin and end (and an eager message
enters the receiver's unexpected queue when the receiver next polls, not when it
was sent), which the replay cannot place exactly.
"""

from __future__ import annotations


from ..collect.node_files import load_node_meta, node_keys, read_snapshots
from .queue_replay import per_peer_lengths
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


PVARS = {"posted": "pml_ob1_posted_recvq_length", "unexpected": "pml_ob1_unexpected_msgq_length"}


def measured(raw_dir, rank, t0_ns, align=None):
    """The ob1 queue pvars of one rank: time_s (trace time), seq, queue, peer, length.

    ``align``: a function that puts the rank's node clock readings (ns) on the trace's
    clock (``Trace.align_ns`` of the rank); None: they are on it already.
    Empty when the MPI has no such pvars (MPICH) or the run had no snapshots.
    """
    empty = pd.DataFrame(columns=["time_s", "seq", "queue", "peer", "length"])
    for key in node_keys(raw_dir):
        meta = load_node_meta(f"{raw_dir}/node.{key}.json")
        snaps, _ = read_snapshots(raw_dir, meta)
        mine = snaps.rank == rank
        if not mine.any():
            continue
        want = {p["name"]: p for p in meta["pvars"] if p["name"] in PVARS.values()}
        if not want:
            return empty
        at = meta["canonical"]["pvars"]
        rows = []
        for queue, name in PVARS.items():
            p = want.get(name)
            if p is None:
                continue
            values = snaps.values([at + p["offset"] + k for k in range(p["count"])], bits=True)[
                mine
            ]
            ns = snaps.ns[mine] if align is None else align(snaps.ns[mine])
            time_s = (ns - t0_ns) / 1e9
            for peer in range(p["count"]):
                rows.append(
                    pd.DataFrame(
                        {
                            "time_s": time_s,
                            "seq": snaps.seq[mine],
                            "queue": queue,
                            "peer": peer,
                            "length": values[:, peer],
                        }
                    )
                )
        return pd.concat(rows, ignore_index=True) if rows else empty
    return empty


def compare(raw_dir, trace, ob1_result, rank, guard_s=0.01):
    """Measured and simulated ob1 lengths per snapshot and peer of ``rank``.

    ``ob1_result``: the rank's rows of an ob1 replay (:func:`commscope.matching.queue_replay.run`).
    Columns: rank, seq, time_s, queue, peer, measured_length, simulated_length, quiet, equal.
    """
    m = measured(raw_dir, rank, trace.t0_ns, align=lambda ns: trace.align_ns(rank, ns))
    cols = [
        "rank",
        "seq",
        "time_s",
        "queue",
        "peer",
        "measured_length",
        "simulated_length",
        "quiet",
        "equal",
    ]
    if m.empty:
        return pd.DataFrame(columns=cols)
    times = np.sort(m["time_s"].unique())
    sim = per_peer_lengths(ob1_result, times, comm=0)
    out = m.rename(columns={"length": "measured_length"}).merge(
        sim.rename(columns={"length": "simulated_length"}),
        on=["time_s", "queue", "peer"],
        how="left",
    )
    out["simulated_length"] = out["simulated_length"].fillna(0).astype(np.int64)
    ev = trace.events
    edges = np.sort(np.r_[ev["time_begin_s"].to_numpy(), ev["time_end_s"].to_numpy()])
    i = np.searchsorted(edges, out["time_s"].to_numpy())
    before = np.abs(out["time_s"].to_numpy() - edges[np.clip(i - 1, 0, len(edges) - 1)])
    after = np.abs(edges[np.clip(i, 0, len(edges) - 1)] - out["time_s"].to_numpy())
    out["quiet"] = np.minimum(before, after) > guard_s
    out["equal"] = out["measured_length"] == out["simulated_length"]
    out.insert(0, "rank", rank)
    return out[cols].sort_values(["seq", "queue", "peer"]).reset_index(drop=True)


def mtmatch_comparison(order, trials):
    """`bench mtmatch`: simulated ob1 queues at the point its rank 0 reads the pvars.

    Rank 0 has posted every receive (from rank 1, on MPI_COMM_WORLD, in the recorded
    post_seq order) and no message has been sent yet, so ob1 should hold M_t
    receives for peer 1 and no unexpected message. The simulation replays the
    recorded posts and then the sends in send_seq order through the ob1 engine and
    reads the lengths after the last post. Columns: config, trial, simulated_posted_length,
    measured_posted_length, simulated_unexpected_length, measured_unexpected_length,
    avg_depth (ob1, per arrival), equal.
    """
    from . import engines as eng

    rows = []
    for (cfg, trial), sub in order.groupby(["config", "trial"], sort=True):
        post = sub.sort_values("post_seq", kind="stable")["tag"].to_numpy()
        send = sub.sort_values("send_seq", kind="stable")["tag"].to_numpy()
        n = len(sub)
        is_arrival = np.r_[np.zeros(n, np.int8), np.ones(n, np.int8)]
        partner, searched, plen, ulen, _ = eng.run_engine(
            "ob1",
            is_arrival,
            np.zeros(2 * n, np.int64),
            np.ones(2 * n, np.int64),
            np.r_[post, send],
        )
        m = trials[(trials["config"] == cfg) & (trials["trial"] == trial)]
        mp = float(m["ob1_posted_recvq_length"].iloc[0]) if len(m) else float("nan")
        mu = float(m["ob1_unexpected_msgq_length"].iloc[0]) if len(m) else float("nan")
        depth = searched[n:].astype(np.int64) - (partner[n:] >= 0)
        rows.append(
            {
                "config": int(cfg),
                "trial": int(trial),
                "simulated_posted_length": int(plen[n - 1]),
                "measured_posted_length": mp,
                "simulated_unexpected_length": int(ulen[n - 1]),
                "measured_unexpected_length": mu,
                "avg_depth": float(depth.mean()),
                "equal": bool(plen[n - 1] == mp and ulen[n - 1] == mu),
            }
        )
    return pd.DataFrame(rows)
