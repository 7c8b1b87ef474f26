"""Replay of a traced program through the matching engines (issue 12; 002 Sec. 4, 004 Sec. 4.1).

From a :class:`~commscope.collect.trace.Trace` this module rebuilds, per receiving
process, the order in which receives were posted and messages arrived, and runs it
through :mod:`commscope.matching.engines`:

* posts: every IRECV (and MPI_Start of a persistent receive) and blocking RECV at
  the time its call began. A blocking RECV's record holds the *matched* source and
  tag (the trace keeps the status, not the arguments), so a blocking wildcard
  receive replays as a specific one.
* arrivals, one of two sources (the result says which, per rank):
  - ``send``: the sender's SEND/ISEND start plus the machine model's modelled
    time of that message (node-aware model, 004; 0 without a machine model), when every
    rank that sent to this one was traced;
  - ``completion``: the receive's completion (end of RECV, or a receive-side
    COMPLETE), when a sender's trace is missing. A message then never waits in the
    unexpected queue, so unexpected lengths are a lower bound.

Communicators have a different id on each rank; they are paired by their members
and the order of creation among communicators with the same members.

Thread nondeterminism (002 measures it): :func:`permutation_trials` replays with the
receives of different threads re-interleaved at random between consecutive arrivals
(each thread keeps its own order), many seeded trials.
"""

from __future__ import annotations

from dataclasses import dataclass


from ..errors import InputError
from ..models.message_time import message_seconds
from . import engines as eng
from ..collect.trace import RECV_SIDE
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


ARRIVAL_MODES = ("auto", "send", "completion")


@dataclass
class RankEvents:
    """One receiving rank's replay input: events in time order and how arrivals were timed."""

    rank: int
    events: pd.DataFrame  # kind, time_s, comm, comm_key, source, tag, bytes, thread
    arrivals: str  # "send" or "completion"
    latency: str  # what was added to a send's start


def _posts(ev):
    is_post = ev["event"].isin(["IRECV", "RECV"])
    p = ev[is_post]
    return pd.DataFrame(
        {
            "kind": "post",
            "time_s": p["time_begin_s"],
            "comm_key": p["comm_key"],
            "source": p["peer"],
            "tag": p["tag"],
            "bytes": p["bytes"],
            "thread": p["thread"],
            "sender": -1,
        }
    )


def _receive_completions(ev):
    done = (ev["event"] == "RECV") | (
        (ev["event"] == "COMPLETE") & ((ev["flags"] & RECV_SIDE) != 0)
    )
    return ev[done]


def _latency(sizes, src, dst, machine_model, locality_of):
    if machine_model is None or not len(sizes):
        return np.zeros(len(sizes))
    out = np.empty(len(sizes))
    loc = np.array([locality_of(int(a), int(b)) for a, b in zip(src, dst)], dtype=object)
    for name in set(loc):
        m = loc == name
        out[m] = message_seconds(machine_model, np.asarray(sizes, float)[m], name)
    return out


class _Index:
    """What every receiving rank's input needs from the whole trace, worked out once:
    its records by rank, the sends by destination, each record's communicator as a code
    (collect.trace.comm_codes), each rank's local id of each code, and each sender's
    rank in its communicator.  Looking these up per rank in the whole trace (or per
    record by communicator key, which holds the members) costs the trace's length times
    the job's size."""

    def __init__(self, trace):
        from ..collect.trace import comm_codes

        ev = trace.events
        #: the columns the inputs take (taking rows of the whole frame, call sites and
        #: all, per rank costs more than the rest of the input)
        self.events = ev[
            [
                "rank",
                "thread",
                "event",
                "flags",
                "time_begin_s",
                "time_end_s",
                "comm_key",
                "peer",
                "peer_world",
                "tag",
                "bytes",
            ]
        ]
        self.codes, self.keys = comm_codes(ev)
        self.by_rank = ev.groupby("rank").indices
        sends = np.flatnonzero(ev["event"].isin(["SEND", "ISEND"]).to_numpy())
        dest = ev["peer_world"].to_numpy()[sends]
        self.sends_to = {int(d): sends[i] for d, i in pd.Series(dest).groupby(dest).indices.items()}
        code_of = {k: c for c, k in enumerate(self.keys) if k is not None}
        self.local = {}  # rank -> {code: the rank's comm id}
        for rank, key, cid in zip(trace.comms["rank"], trace.comms["key"], trace.comms["comm_id"]):
            c = code_of.get(key)
            if c is not None:
                self.local.setdefault(int(rank), {})[c] = int(cid)
        self._position = {}

    def rows(self, rank):
        return self.by_rank.get(rank, np.zeros(0, np.int64))

    def position(self, code, world_rank):
        """``world_rank``'s rank in communicator ``code``."""
        got = self._position.get((code, world_rank))
        if got is None:
            got = self._position[(code, world_rank)] = self.keys[code][0].index(world_rank)
        return got


def rank_events(trace, rank, mode="auto", machine_model=None, locality_of=None, index=None):
    """The replay input of one receiving rank (see the module docstring); ``index``: the
    trace's :class:`_Index` (made here when not given)."""
    if mode not in ARRIVAL_MODES:
        raise InputError(
            "--arrivals", None, f"expected one of {', '.join(ARRIVAL_MODES)}, got {mode!r}"
        )
    index = index if index is not None else _Index(trace)
    ev = index.events
    mine = ev.iloc[index.rows(rank)]
    posts = _posts(mine)
    posts["code"] = index.codes[posts.index.to_numpy()]
    traced = set(trace.clocks)
    recv_done = _receive_completions(mine)
    senders = set(recv_done["peer_world"].tolist())
    use_send = mode == "send" or (mode == "auto" and senders <= traced)
    if mode == "send" and not senders <= traced:
        missing = sorted(senders - traced)[0]
        raise InputError(
            "--arrivals",
            None,
            f"rank {rank} received from rank {missing}, which "
            "has no trace: use --arrivals completion",
        )
    if use_send:
        at = index.sends_to.get(rank, np.zeros(0, np.int64))
        s = ev.iloc[at]
        codes = index.codes[at]
        # the sender's rank in the communicator, as the receiver's engine sees it
        src_in_comm = [index.position(c, r) for c, r in zip(codes.tolist(), s["rank"].tolist())]
        lat = _latency(
            s["bytes"].to_numpy(),
            s["rank"].to_numpy(),
            np.full(len(s), rank),
            machine_model,
            locality_of or (lambda a, b: "intra-socket"),
        )
        arrive = pd.DataFrame(
            {
                "kind": "arrive",
                "time_s": s["time_begin_s"].to_numpy() + lat,
                "comm_key": s["comm_key"].to_numpy(),
                "source": src_in_comm,
                "tag": s["tag"].to_numpy(),
                "bytes": s["bytes"].to_numpy(),
                "thread": s["thread"].to_numpy(),
                "sender": s["rank"].to_numpy(),
                "code": codes,
            }
        )
        latency = (
            "node-aware model with the machine model's parameters"
            if machine_model is not None
            else "none (no machine model: arrival = send start)"
        )
    else:
        r = recv_done
        arrive = pd.DataFrame(
            {
                "kind": "arrive",
                "time_s": r["time_end_s"].to_numpy(),
                "comm_key": r["comm_key"].to_numpy(),
                "source": r["peer"].to_numpy(),
                "tag": r["tag"].to_numpy(),
                "bytes": r["bytes"].to_numpy(),
                "thread": -1,
                "sender": r["peer_world"].to_numpy(),
                "code": index.codes[r.index.to_numpy()],
            }
        )
        latency = "receive completion order (a sender has no trace)"
    events = pd.concat([posts, arrive], ignore_index=True)
    ids = index.local.get(int(rank), {})
    unknown = ~events["code"].isin(list(ids))
    if unknown.any():
        raise InputError(
            f"rank {rank}'s communicator list",
            None,
            "a message was sent to rank "
            f"{rank} on a communicator it never created ({events['comm_key'][unknown].iloc[0]})",
        )
    events["comm"] = events["code"].map(ids).astype(np.int64)
    events = events.drop(columns="code")
    events["order"] = np.where(events["kind"] == "post", 0, 1)  # a tie: the post first
    events = events.sort_values(["time_s", "order"], kind="stable").drop(columns="order")
    return RankEvents(
        rank, events.reset_index(drop=True), "send" if use_send else "completion", latency
    )


def receiving_ranks(trace):
    ev = trace.events
    return sorted(set(ev.loc[ev["event"].isin(["IRECV", "RECV"]), "rank"].tolist()))


def run(rank_input, engine="ob1", bins=eng.DEFAULT_BINS):
    """Simulate one rank's events through one engine (rows of :func:`engines.simulate`)."""
    out = eng.simulate(
        rank_input.events, engine=engine, bins=bins, source=f"rank {rank_input.rank} events"
    )
    out.insert(0, "engine", engine)
    out.insert(0, "rank", rank_input.rank)
    return out


def summarize(result):
    """Average and maximum depth per queue, entries compared, longest queues."""
    arr = result[result["kind"] == "arrive"]
    post = result[result["kind"] == "post"]

    def stats(d):
        return (float(d.mean()) if len(d) else float("nan"), int(d.max()) if len(d) else 0)

    prq_avg, prq_max = stats(arr["depth"])
    umq_avg, umq_max = stats(post["depth"])
    return {
        "messages": int(len(arr)),
        "receives": int(len(post)),
        "prq_avg_depth": prq_avg,
        "prq_max_depth": prq_max,
        "umq_avg_depth": umq_avg,
        "umq_max_depth": umq_max,
        "searched": int(result["searched"].sum()),
        "max_posted": int(result["posted_length"].to_numpy().max(initial=0)),
        "max_unexpected": int(result["unexpected_length"].to_numpy().max(initial=0)),
    }


def replay(
    trace,
    engines=("mpich", "ob1", "bins"),
    bins=eng.DEFAULT_BINS,
    mode="auto",
    machine_model=None,
    locality_of=None,
):
    """Every receiving rank through every engine: (results, summary, inputs).

    ``results``: one row per event per rank and engine (see :func:`run`);
    ``summary``: one row per rank and engine (:func:`summarize`, plus how arrivals were
    timed); ``inputs``: {rank: :class:`RankEvents`}.
    """
    index = _Index(trace)
    inputs = {
        r: rank_events(trace, r, mode, machine_model, locality_of, index)
        for r in receiving_ranks(trace)
    }
    results, rows = [], []
    for r, ri in inputs.items():
        for e in engines:
            res = run(ri, e, bins)
            results.append(res)
            rows.append(
                {
                    "rank": r,
                    "engine": e,
                    **summarize(res),
                    "arrivals": ri.arrivals,
                    "latency": ri.latency,
                }
            )
    results = pd.concat(results, ignore_index=True) if results else pd.DataFrame()
    return results, pd.DataFrame(rows), inputs


# ---- queue contents at given times (for the ob1 pvars) ----------------------


def live_entries(result):
    """Per queued entry: row position, queue, comm, source, and the row that removed it."""
    n = len(result)
    partner = result["partner"].to_numpy()
    removed = np.full(n, n, dtype=np.int64)
    hit = partner >= 0
    removed[partner[hit]] = np.nonzero(hit)[0]
    queued = ~result["matched"].to_numpy()
    pos = np.nonzero(queued)[0]
    kinds = result["kind"].to_numpy()[pos]
    return pd.DataFrame(
        {
            "pos": pos,
            "removed": removed[pos],
            "queue": np.where(kinds == "post", "posted", "unexpected"),
            "comm": result["comm"].to_numpy()[pos],
            "source": result["source"].to_numpy()[pos],
        }
    )


def per_peer_lengths(result, times_s, comm=0):
    """ob1's view at each time: specific receives and unexpected messages per source on ``comm``.

    Any-source receives are in neither count, as in ob1's pvars. Returns rows time_s,
    queue ("posted" or "unexpected"), peer, length (only non-zero lengths).
    """
    live = live_entries(result)
    live = live[(live["comm"] == comm) & (live["source"] >= 0)]
    t = result["time_s"].to_numpy()
    rows = []
    for T in np.atleast_1d(times_s):
        k = int(np.searchsorted(t, T, side="right"))  # events applied by time T
        now = live[(live["pos"] < k) & (live["removed"] >= k)]
        for (q, peer), g in now.groupby(["queue", "source"]):
            rows.append({"time_s": float(T), "queue": q, "peer": int(peer), "length": len(g)})
    return pd.DataFrame(rows, columns=["time_s", "queue", "peer", "length"])


# ---- thread nondeterminism ----------------------------------------------------


def random_interleave(labels, rng):
    """A random interleaving of groups that keeps each group's order.

    ``labels[i]`` is the group (thread) of element i. Returns positions ``p`` such
    that ``elements[p]`` is the interleaving: the slots are dealt to the groups at
    random (a shuffled copy of the labels), and each group fills its slots in order.
    """
    labels = np.asarray(labels)
    p = np.empty(len(labels), dtype=np.int64)
    p[np.argsort(rng.permutation(labels), kind="stable")] = np.argsort(labels, kind="stable")
    return p


def permute_thread_posts(events, rng):
    """``events`` with the posts of different threads re-interleaved at random between
    consecutive arrivals; each thread keeps the order of its own posts."""
    kinds = events["kind"].to_numpy()
    threads = events["thread"].to_numpy()
    window = np.cumsum(kinds == "arrive")
    order = np.arange(len(events))
    posts = np.nonzero(kinds == "post")[0]
    for w in np.unique(window[posts]):
        idx = posts[window[posts] == w]
        th = threads[idx]
        if len(idx) < 2 or (th == th[0]).all():
            continue
        order[idx] = idx[random_interleave(th, rng)]
    return events.iloc[order].reset_index(drop=True)


def permutation_trials(rank_input, engine="ob1", trials=100, seed=0, bins=eng.DEFAULT_BINS):
    """Depth statistics over ``trials`` random thread interleavings of the posts."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(int(trials)):
        ev = permute_thread_posts(rank_input.events, rng)
        res = eng.simulate(ev, engine=engine, bins=bins, source=f"rank {rank_input.rank} events")
        rows.append({"rank": rank_input.rank, "engine": engine, "trial": t, **summarize(res)})
    return pd.DataFrame(rows)
