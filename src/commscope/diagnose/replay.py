"""Replay a traced run with a change and predict its run time (what-if analysis).

Every stream (the calls of one thread) is replayed in order.  A call begins when the
previous one ended plus the burst (the work outside MPI) measured between them, and
ends at

    end' = max(start', ready') + cost

where ``ready'`` is the replayed entry of the partners it waited for (its
:class:`~.timeline.Timeline` links and collective instance; a message adds its
transfer time) and ``cost`` is the call's own time, measured as
``end - max(start, ready)``: what it took once nothing held it up.  The run time is
the last rank's MPI_Finalize, each rank keeping the time it measured after its last
call.  Unchanged, the replay reproduces the measured run (its error is shown with
every prediction); the changes:

* ``balance``: every burst of a stream becomes the mean of the bursts at the same
  place of every rank's stream of that thread (when the ranks made the same calls),
  else, between each two collectives the ranks all make, each rank's bursts are scaled
  to the mean work of that stretch (else of the whole run);
* ``network="ideal"``: zero latency, infinite bandwidth: every MPI call costs nothing
  and messages arrive as they are sent (POP's transfer efficiency, as Dimemas does);
* ``machine_model``: as ideal, plus each message's time from the machine model
  (:func:`commscope.models.message_time.message_time`) and each collective's from
  ceil(log2 P) such steps;
* ``no_wait``: the given calls wait for nobody (their partners are on time);
* ``burst_scale``: {call: factor} multiplies the burst before a call (work removed
  from before it: a rebalanced region); ``cost_scale`` likewise a call's own cost (a
  message merged into another).

Findings use the difference of two replays (unchanged and changed) as their predicted
saving, so what the replay does not model cancels out.
"""

from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


@dataclass
class Replay:
    """The result of one replay: ``runtime_s``; ``end_s`` per rank (its MPI_Finalize);
    ``call_end_s``: every call's replayed end (indexed as the timeline's calls)."""

    runtime_s: float
    end_s: dict
    change: str
    call_end_s: object = None


class Stuck(InputError):
    """The replay's refusal: calls wait for partners the trace never shows; ``why`` says
    which, in the program's terms (the trace file and the rank are its source and field)."""

    def __init__(self, source, field, why):
        self.why = why
        super().__init__(source, field, f"the replay cannot go on: {why}")


class Replayer:
    """Replays of one timeline; the measured costs and bursts are computed once."""

    def __init__(self, tl, costs="call"):
        self.tl = tl
        calls = tl.calls
        self.n = len(calls)
        self.start = calls["start_s"].to_numpy(float)
        self.end = calls["end_s"].to_numpy(float)
        self.stream = calls["stream"].to_numpy()
        self.rank = calls["rank"].to_numpy()
        self.thread = calls["thread"].to_numpy()
        self.streams = (
            [np.flatnonzero(self.stream == s) for s in range(int(self.stream.max()) + 1)]
            if self.n
            else []
        )
        # partners by call: point-to-point (partner call, bytes, kind) and collective
        self.p2p = [[] for _ in range(self.n)]
        lk = tl.links
        for c, p, k, b in zip(
            lk["call"].to_numpy(),
            lk["partner"].to_numpy(),
            lk["kind"].to_numpy(),
            lk["bytes"].to_numpy(),
        ):
            self.p2p[c].append((int(p), k == "message", float(b)))
        self.coll = {}  # waiting call -> (instance, pattern, is_root)
        self.instance_entries = {}  # instance -> [(rank, entry call, is_root)]
        self.instance_size = {}
        col = tl.collectives
        for inst, rank, wait, entry, pattern, root, nbytes in zip(
            col["instance"].to_numpy(),
            col["rank"].to_numpy(),
            col["wait_call"].to_numpy(),
            col["entry_call"].to_numpy(),
            col["pattern"].to_numpy(),
            col["root"].to_numpy(),
            self._coll_bytes(col),
        ):
            is_root = rank == root
            self.instance_entries.setdefault(int(inst), []).append(
                (int(rank), int(entry), bool(is_root))
            )
            if wait >= 0:
                self.coll[int(wait)] = (int(inst), pattern, bool(is_root), float(nbytes))
        self.entry_of = {}  # entry call -> the instances it begins
        for inst, members in self.instance_entries.items():
            self.instance_size[inst] = len(members)
            for _, e, _ in members:
                self.entry_of.setdefault(e, []).append(inst)
        self.burst = self._bursts()
        self.tail = self._tails()
        #: each call's own cost as measured (end - max(start, ready))
        self.measured_cost = np.maximum(
            self.end - np.maximum(self.start, self._ready(self.start)), 0.0
        )
        self.cost = typical_costs(self.measured_cost, calls, costs)

    def _stream_lists(self):
        """The streams' calls as lists of ints (for the replay's loop)."""
        if getattr(self, "_streams_l", None) is None:
            self._streams_l = [i.tolist() for i in self.streams]
        return self._streams_l

    def _coll_bytes(self, col):
        b = self.tl.calls["bytes"].to_numpy()
        return b[col["entry_call"].to_numpy()]

    def _bursts(self):
        """Work before each call: from the previous call's end (the rank's MPI_Init for
        its first call)."""
        burst = np.zeros(self.n)
        init = dict(zip(self.tl.window["rank"], self.tl.window["init_s"]))
        for idx in self.streams:
            if not len(idx):
                continue
            first = idx[0]
            burst[first] = max(
                self.start[first] - init.get(self.rank[first], self.start[first]), 0.0
            )
            burst[idx[1:]] = np.maximum(self.start[idx[1:]] - self.end[idx[:-1]], 0.0)
        return burst

    def _tails(self):
        """Per stream: the time from its last call to its rank's MPI_Finalize (the main
        thread's; other threads end with their last call)."""
        fin = dict(zip(self.tl.window["rank"], self.tl.window["fin_s"]))
        tails = {}
        for s, idx in enumerate(self.streams):
            if len(idx):
                last = idx[-1]
                main = self.thread[last] == min(self.thread[self.rank == self.rank[last]])
                tails[s] = (
                    max(fin.get(self.rank[last], self.end[last]) - self.end[last], 0.0)
                    if main
                    else 0.0
                )
        return tails

    def _ready(self, start, transfer=None, coll_cost=None, no_wait=frozenset()):
        """Each call's ready time from the partners' entries ``start`` (-inf: none)."""
        ready = np.full(self.n, -np.inf)
        latest = {}
        for c in range(self.n):
            if c in no_wait:
                continue
            ready[c] = self._ready_of(c, start, transfer, coll_cost, latest)
        return ready

    def _ready_of(self, c, start, transfer, coll_cost, latest=None):
        """``latest``: {(instance, is_root): the latest entry a member of that side
        waits for}, filled as the members ask (an instance's entries are all known when
        its first member asks, and fixed within one replay): without it every member
        of an N x N collective takes the maximum over all N, N^2 per instance."""
        r = -math.inf
        for p, is_msg, nbytes in self.p2p[c]:
            t = start[p] + (
                transfer(self.rank[p], self.rank[c], nbytes) if is_msg and transfer else 0.0
            )
            if t > r:
                r = t
        got = self.coll.get(c)
        if got is not None:
            inst, pattern, is_root, nbytes = got
            members = self.instance_entries[inst]
            t = latest.get((inst, is_root)) if latest is not None else None
            if t is None:
                if pattern == "nxn":
                    t = max(start[e] for _, e, _ in members)
                elif pattern == "nx1":
                    t = (
                        max((start[e] for _, e, root in members if not root), default=-math.inf)
                        if is_root
                        else -math.inf
                    )
                else:
                    t = (
                        max((start[e] for _, e, root in members if root), default=-math.inf)
                        if not is_root
                        else -math.inf
                    )
                if latest is not None:
                    latest[(inst, is_root)] = t
            if coll_cost is not None and t > -math.inf:
                t += coll_cost(len(members), nbytes)
            if t > r:
                r = t
        return r

    # -- the changes ----------------------------------------------------------------
    def balanced_bursts(self, bursts=None):
        """Bursts with the work spread evenly over ranks (module docstring)."""
        bursts = self.burst if bursts is None else bursts
        out = bursts.copy()
        fn = self.tl.calls["function"].to_numpy()
        by_thread = {}
        for s, idx in enumerate(self.streams):
            if len(idx):
                by_thread.setdefault(self.thread[idx[0]], []).append(idx)
        for streams in by_thread.values():
            same = len({len(i) for i in streams}) == 1 and all(
                (fn[i] == fn[streams[0]]).all() for i in streams[1:]
            )
            if same and len(streams) > 1:
                mean = np.mean([bursts[i] for i in streams], axis=0)
                for i in streams:
                    out[i] = mean
            elif len(streams) > 1:
                for segments in self._between_collectives(streams):
                    work = np.array([bursts[i].sum() + 0.0 for i in segments])
                    target = work.mean()
                    for i, w in zip(segments, work):
                        if w > 0:
                            out[i] = bursts[i] * (target / w)
        return out

    def _between_collectives(self, streams):
        """The streams cut at their collectives: for each stretch between the k-th and
        the (k+1)-th collective, every stream's calls in it (ranks that make the same
        collectives but different point-to-point calls balance per stretch, as a time
        step's work is balanced); one stretch, the whole stream, when their numbers of
        collectives differ."""
        cuts = [np.flatnonzero([c in self.entry_of for c in i]) for i in streams]
        if len({len(c) for c in cuts}) != 1 or not len(cuts[0]):
            return [streams]
        out = []
        for k in range(len(cuts[0]) + 1):
            seg = []
            for i, c in zip(streams, cuts):
                lo = c[k - 1] + 1 if k else 0
                hi = c[k] + 1 if k < len(c) else len(i)
                seg.append(i[lo:hi])
            out.append(seg)
        return out

    def run(
        self,
        change="unchanged",
        *,
        balance=False,
        network=None,
        machine_model=None,
        no_wait=frozenset(),
        burst_scale=None,
        cost_scale=None,
        ppn=1,
    ):
        """One replay (module docstring); returns a :class:`Replay`."""
        bursts = self.burst.copy()
        if burst_scale:
            for c, f in burst_scale.items():
                bursts[c] *= f
        if balance:
            bursts = self.balanced_bursts(bursts)
        cost = self.cost
        transfer = coll_cost = None
        if network == "ideal" or machine_model is not None:
            cost = np.zeros(self.n)
        if cost_scale:
            cost = cost.copy()
            for c, f in cost_scale.items():
                cost[c] *= f
        if machine_model is not None:
            transfer, coll_cost = _model_times(machine_model, self.tl, ppn)
        no_wait = frozenset(int(c) for c in no_wait)
        # plain lists and floats in the loop: numpy's scalar indexing costs several
        # times a list's, once per call and partner
        start = [math.nan] * self.n
        end = [math.nan] * self.n
        first = (self.start - self.burst).tolist()
        bursts, cost = bursts.tolist(), np.asarray(cost, float).tolist()
        streams = self._stream_lists()
        pointer = [0] * len(streams)
        known = dict.fromkeys(self.instance_entries, 0)  # entries begun, per instance
        remaining = sum(len(i) for i in streams)
        latest = {}  # _ready_of's, for this replay's starts
        entry_of = self.entry_of
        # a call's start is known once its predecessor ended; it can end once every
        # partner's start is known
        while remaining:
            progressed = False
            for s, idx in enumerate(streams):
                at, n = pointer[s], len(idx)
                while at < n:
                    c = idx[at]
                    t = start[c]
                    if t != t:  # not started yet
                        t = start[c] = (end[idx[at - 1]] if at else first[c]) + bursts[c]
                        for inst in entry_of.get(c, ()):
                            known[inst] += 1
                    if c in no_wait:
                        ready = -math.inf
                    elif not self._partners_known(c, start, known):
                        break
                    else:
                        ready = self._ready_of(c, start, transfer, coll_cost, latest)
                    end[c] = (t if t > ready else ready) + cost[c]
                    at += 1
                    remaining -= 1
                    progressed = True
                pointer[s] = at
            if not progressed:
                stuck = [
                    int(idx[pointer[s]]) for s, idx in enumerate(streams) if pointer[s] < len(idx)
                ]
                raise self._stuck_error(stuck, start)
        end = np.asarray(end, float)
        ends = {}
        for s, idx in enumerate(self.streams):
            if len(idx):
                r = int(self.rank[idx[0]])
                ends[r] = max(ends.get(r, -math.inf), end[idx[-1]] + self.tail[s])
        init = self.tl.window["init_s"].min()
        for r, fin in zip(self.tl.window["rank"], self.tl.window["fin_s"]):
            ends.setdefault(int(r), float(fin))  # a rank that made no traced call
        return Replay(
            runtime_s=float(max(ends.values()) - init), end_s=ends, change=change, call_end_s=end
        )

    def _call_text(self, c):
        """``MPI_Recv at halo.c:69 (call 12 of rank 1, thread 0)``: a call in the
        program's terms (its index among its rank's traced calls)."""
        calls = self.tl.calls
        row = calls.iloc[int(c)]
        rank, thread = int(row["rank"]), int(row["thread"])
        index = int((calls["rank"].to_numpy()[: int(c)] == rank).sum())
        site = f" at {row['callsite']}" if isinstance(row["callsite"], str) else ""
        return f"{row['function']}{site} (call {index} of rank {rank}, thread {thread})"

    def _stuck_error(self, stuck, start):
        """The replay's refusal: the run's trace file, the rank, and the first stuck
        call and the partner it waits for, in the program's terms."""
        c = int(stuck[0])
        calls = self.tl.calls
        rank, thread = int(calls["rank"].iloc[c]), int(calls["thread"].iloc[c])
        waits = [int(self.rank[p]) for p, _, _ in self.p2p[c] if np.isnan(start[p])]
        whom = (
            f"a message from rank {waits[0]} that rank's trace never sends"
            if waits
            else "the other members of its collective, whose traces never enter it"
        )
        more = (
            "; also stuck: " + ", ".join(self._call_text(x) for x in stuck[1:4])
            if len(stuck) > 1
            else ""
        )
        raw = getattr(self.tl, "raw_dir", None)
        where = Path(raw) / f"trace.{rank}.{thread}.bin" if raw else f"trace.{rank}.{thread}.bin"
        return Stuck(
            where,
            f"rank {rank}",
            f"{self._call_text(c)} waits for {whom}{more} (records missing or damaged)",
        )

    def _partners_known(self, c, start, known):
        for p, _, _ in self.p2p[c]:
            if start[p] != start[p]:  # NaN: not started
                return False
        got = self.coll.get(c)
        return got is None or known[got[0]] == self.instance_size[got[0]]


COSTS = ("call", "site")


def typical_costs(measured, calls, how="site"):
    """The cost each call is replayed with: ``call`` its own measured cost (the default:
    costs that vary systematically within a call site, a send blocked by flow control
    every few messages, stay where they were); ``site`` the median over the calls of its
    function and call site, which drops what befell single calls (the process descheduled
    inside one) along with such systematic variation."""
    if how == "call":
        return measured
    if how != "site":
        raise ValueError(f"costs: one of {COSTS}")
    keys = [calls["function"].to_numpy(), calls["callsite"].fillna("").to_numpy()]
    return pd.Series(measured).groupby(keys).transform("median").to_numpy()


def pair_locality(host_of, src, dst):
    """Where a message between two ranks goes: the trace knows hosts, not sockets, so
    a message within a host is taken as intra-socket."""
    return "inter-node" if host_of.get(src, 0) != host_of.get(dst, 0) else "intra-socket"


def _model_times(machine_model, tl, ppn):
    """(transfer(src, dst, bytes), collective(P, bytes)) from a machine model: the
    time of one message (models.message_time), ceil(log2 P) of them per collective."""
    from ..models.message_time import message_seconds

    host_of = tl.host_of
    cache = {}

    def transfer(src, dst, nbytes):
        key = (pair_locality(host_of, src, dst), nbytes)
        if key not in cache:
            cache[key] = message_seconds(machine_model, nbytes, key[0], ppn)
        return cache[key]

    def collective(p, nbytes):
        steps = math.ceil(math.log2(p)) if p > 1 else 0
        hosts = set(host_of.values())
        one = next(iter(host_of), 0)
        other = (
            next((r for r, h in host_of.items() if h != host_of.get(one)), one)
            if len(hosts) > 1
            else one
        )
        return steps * transfer(one, other, nbytes)

    return transfer, collective
