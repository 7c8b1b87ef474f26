"""Wait states: the time a call lost waiting for a partner, after Scalasca's patterns
(Geimer et al. 2010; docs/diagnose.md), on a :class:`~.timeline.Timeline`.

* ``late_sender``: a receive (or the Wait/Test completing an Irecv) entered before
  the matched send; it loses send entry - its entry.  ``wrong_order`` is the part of
  such a wait after another message, received later by the same rank, had already
  been sent: that message could have been handled while waiting.
* ``late_receiver``: a synchronising send (``MPI_Ssend``, or above the eager limit)
  entered before its receive was posted; it loses post - its entry.
* ``wait_nxn``: a member of an N x N collective (Allreduce, Barrier, Alltoall ...)
  loses the latest member's entry - its entry.
* ``late_broadcast`` / ``late_scatter`` (1 x N): a non-root loses the root's entry -
  its entry; ``early_reduce`` / ``early_gather`` (N x 1): the root loses the latest
  non-root's entry - its entry (the data it reduces or gathers is not there before).

Every wait is cut at the call's exit.  The *culprits* of a point-to-point wait are the
partners that entered last (within 5 % of the wait), sharing it equally.  A collective
wait is shared by causation: while k of the members it waits for are still missing,
each of them causes 1/k of that stretch, so the last arriver causes the whole stretch
after the second-to-last came (the wait of a member is the last entry minus its own,
and a rank that is last in most instances carries most of every instance's waits).

**Passed-on waits** (Scalasca's delay analysis, simplified): a culprit may be late
because it was itself waiting.  The culprit's *interval* runs from its previous
synchronisation with the waiter (the end of its previous collective on the same
communicator; for a point-to-point wait, the later of its previous collective and the
start of its previous call with the waiter) to its entry.  The part of the wait
covered by waits of the culprit inside that interval is *passed on*: it is credited
to the causes of those waits, in proportion; the rest is *direct*, credited to the
wait's own pattern.  A rank that waits at an Allreduce for a rank that was stuck in a
late-sender receive loses its time to the late sender, not to the Allreduce.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

from ..lazy import lazy
from . import contention

np = lazy("numpy")
pd = lazy("pandas")

#: The smallest wait recorded (shorter ones are the cost of the call, not a wait).
MIN_WAIT_S = 1e-6
#: Point-to-point partners that entered within this share of the wait of the last are
#: culprits too.
CULPRIT_TOLERANCE = 0.05
#: A collective member causing less than this share of a wait is not named for it.
MIN_CAUSE_SHARE = 0.01

COLLECTIVE_KINDS = {
    ("1xn", "bcast"): "late_broadcast",
    ("1xn", "scatter"): "late_scatter",
    ("1xn", "scatterv"): "late_scatter",
    ("nx1", "reduce"): "early_reduce",
    ("nx1", "gather"): "early_gather",
    ("nx1", "gatherv"): "early_gather",
}


@dataclass
class WaitStates:
    """``waits``: one row per wait (call, rank, thread, function, callsite, kind,
    start_s, end_s, lost_s, culprits (tuple of ranks), culprit_calls (their calls the
    wait was for), culprit_shares (the share of the wait each culprit caused, summing
    to 1), key (index into ``keys``),
    direct_s, passed_on_s).  ``keys``: the causes, (kind, function, callsite) each.
    ``by_key_rank``: lost seconds per (key, rank) after passing on.  ``culprit_weight``:
    per key, {rank: seconds of direct waits it caused}."""

    waits: pd.DataFrame
    keys: list
    by_key_rank: dict = field(default_factory=dict)
    culprit_weight: dict = field(default_factory=dict)

    def total_by_key(self):
        out = defaultdict(float)
        for (k, _r), v in self.by_key_rank.items():
            out[k] += v
        return dict(out)


def _p2p_waits(tl):
    """Waits of point-to-point calls: per waiting call the latest partner entry (by
    link kind), the culprit ranks and, for receives, the wrong-order split."""
    links = tl.links
    if not len(links):
        return []
    start = tl.calls["start_s"].to_numpy()
    end = tl.calls["end_s"].to_numpy()
    rank = tl.calls["rank"].to_numpy()
    lk = links.assign(p_start=start[links["partner"].to_numpy()])
    best = lk.sort_values("p_start").groupby(["call", "kind"], sort=False).tail(1)
    best = best.sort_values("p_start").groupby("call", sort=False).tail(1)  # latest kind wins
    call = best["call"].to_numpy()
    ready = best["p_start"].to_numpy()
    lost = np.minimum(ready, end[call]) - start[call]
    keep = lost > MIN_WAIT_S
    best, call, ready, lost = best[keep], call[keep], ready[keep], lost[keep]
    # culprits: partners of the same call and kind entering within tolerance of the last
    lk = lk.merge(
        pd.DataFrame({"call": call, "kind": best["kind"].to_numpy(), "ready": ready, "lost": lost}),
        on=["call", "kind"],
    )
    late = lk[lk["p_start"] >= lk["ready"] - CULPRIT_TOLERANCE * lk["lost"]]
    culprits = late.groupby("call")["partner"].agg(lambda p: tuple(sorted(set(rank[p]))))
    culprit_calls = late.groupby("call")["partner"].agg(lambda p: tuple(sorted(set(p))))
    out = []
    wrong = _wrong_order_starts(tl)
    for c, kind, r, lo in zip(call.tolist(), best["kind"].tolist(), ready.tolist(), lost.tolist()):
        wait = {
            "call": c,
            "kind": "late_sender" if kind == "message" else "late_receiver",
            "start_s": start[c],
            "end_s": start[c] + lo,
            "lost_s": lo,
            "culprits": culprits.get(c, ()),
            "culprit_calls": culprit_calls.get(c, ()),
        }
        wait["culprit_shares"] = _equal(wait["culprits"])
        earlier = wrong.get(c)
        if kind == "message" and earlier is not None and earlier < r:
            # another message for this rank, received later, was sent before: from then
            # on the wait could have been spent on it
            split = max(earlier, start[c])
            ws = dict(wait, kind="wrong_order", start_s=split, lost_s=start[c] + lo - split)
            if ws["lost_s"] > MIN_WAIT_S:
                out.append(ws)
                wait["end_s"] = split
                wait["lost_s"] = split - start[c]
        if wait["lost_s"] > MIN_WAIT_S:
            out.append(wait)
    return out


def _wrong_order_starts(tl):
    """{receive call: the earliest entry of a send whose message the same rank received
    in a later call} (the suffix minimum over that rank's later receives)."""
    msg = tl.links[tl.links["kind"] == "message"]
    if not len(msg):
        return {}
    start = tl.calls["start_s"].to_numpy()
    out = {}
    for _dst, m in msg.groupby("dst"):
        order = np.argsort(start[m["call"].to_numpy()], kind="stable")
        calls = m["call"].to_numpy()[order]
        sent = start[m["partner"].to_numpy()[order]]
        # min over strictly later receive calls
        suffix = np.minimum.accumulate(sent[::-1])[::-1]
        later = np.r_[suffix[1:], np.inf]
        same = np.r_[calls[1:] == calls[:-1], False]  # records of one call: skip to the next call
        for i in range(len(calls) - 2, -1, -1):
            if same[i]:
                later[i] = later[i + 1]
        for c, v in zip(calls.tolist(), later.tolist()):
            out[c] = min(out.get(c, np.inf), v)
    return out


def _collective_waits(tl):
    col = tl.collectives
    col = col[col["wait_call"] >= 0]
    if not len(col):
        return []
    start = tl.calls["start_s"].to_numpy()
    end = tl.calls["end_s"].to_numpy()
    col = col.assign(entry_s=start[col["entry_call"].to_numpy()])
    nxn = col["pattern"] == "nxn"
    is_root = col["rank"] == col["root"]
    # per instance: the latest entry of all members (N x N), of the non-roots (N x 1),
    # and the root's entry (1 x N)
    last_all = col.groupby("instance")["entry_s"].transform("max")
    last_nonroot = col["entry_s"].where(~is_root).groupby(col["instance"]).transform("max")
    root_entry = col["entry_s"].where(is_root).groupby(col["instance"]).transform("max")
    ready = np.where(
        nxn,
        last_all,
        np.where(
            col["pattern"] == "nx1",
            np.where(is_root, last_nonroot, -np.inf),
            np.where(is_root, -np.inf, root_entry),
        ),
    )
    ready = np.nan_to_num(ready.astype(float), nan=-np.inf)
    wc = col["wait_call"].to_numpy()
    lost = np.minimum(ready, end[wc]) - start[wc]
    col = col.assign(ready=ready, lost=lost)
    # who each wait is for: every member (N x N), the non-roots (the root of N x 1), the
    # root (a non-root of 1 x N)
    cand = np.where(
        col["pattern"] == "nxn", True, np.where(col["pattern"] == "nx1", ~is_root, is_root)
    )
    members = {}
    for inst, rank, entry, call, c in zip(
        col["instance"], col["rank"], col["entry_s"], col["entry_call"], cand
    ):
        if c:
            members.setdefault(inst, []).append((float(entry), int(rank), int(call)))
    waiting = col[col["lost"] > MIN_WAIT_S]
    out = []
    for row in waiting.itertuples(index=False):
        ranks, calls, shares = _causes(
            members.get(row.instance, ()), start[row.wait_call], row.rank
        )
        out.append(
            {
                "call": int(row.wait_call),
                "kind": COLLECTIVE_KINDS.get((row.pattern, row.stem), "wait_nxn"),
                "start_s": start[row.wait_call],
                "end_s": start[row.wait_call] + row.lost,
                "lost_s": float(row.lost),
                "culprits": ranks,
                "culprit_calls": calls,
                "culprit_shares": shares,
                "comm": row.comm,
            }
        )
    return out


def _equal(culprits):
    return tuple(1.0 / len(culprits) for _ in culprits)


def _causes(members, entry, rank):
    """(ranks, calls, shares) of one collective wait of ``rank``, entered at ``entry``:
    the members entering after it, each with the share of the wait it caused (module
    docstring), those under MIN_CAUSE_SHARE dropped and the rest renormalised."""
    later = sorted((e, r, c) for e, r, c in members if r != rank and e > entry)
    if not later:
        return (), (), ()
    total = later[-1][0] - entry
    if total <= 0:
        return (), (), ()
    caused, acc, prev = [], 0.0, entry
    for k, (e, _r, _c) in enumerate(later):
        acc += (e - prev) / (len(later) - k)  # the stretch up to e, over those still missing
        caused.append(acc)
        prev = e
    keep = [i for i, v in enumerate(caused) if v >= MIN_CAUSE_SHARE * total]
    norm = sum(caused[i] for i in keep)
    return (
        tuple(later[i][1] for i in keep),
        tuple(later[i][2] for i in keep),
        tuple(caused[i] / norm for i in keep),
    )


#: The key of the waits CPU contention explains (diagnose.contention), when measured.
CPU_KEY = ("cpu_contention", None, None)


def find(tl, cpu=None):
    """The :class:`WaitStates` of a timeline: every wait, then passed-on waits credited
    to their causes (see the module docstring).  ``cpu``: (CPU wait in each call's
    burst, in its cost), from :func:`commscope.diagnose.contention.per_call`: the part of
    a wait its culprits' CPU wait explains is credited to :data:`CPU_KEY`."""
    rows = _p2p_waits(tl) + _collective_waits(tl)
    calls = tl.calls
    cols = [
        "call",
        "kind",
        "start_s",
        "end_s",
        "lost_s",
        "culprits",
        "culprit_calls",
        "culprit_shares",
        "comm",
    ]
    # comm apart, as objects: in a str column every wait would copy its communicator's
    # text (the world's members: kilobytes each at a thousand ranks)
    comm = np.empty(len(rows), dtype=object)
    comm[:] = [r.get("comm") for r in rows]
    w = pd.DataFrame([{k: v for k, v in r.items() if k != "comm"} for r in rows], columns=cols[:-1])
    w["comm"] = pd.Series(comm, index=w.index, dtype=object)
    for c in ("rank", "thread", "function", "callsite"):
        w[c] = calls[c].to_numpy()[w["call"].to_numpy().astype(np.int64)] if len(w) else []
    w["site"] = [s if isinstance(s, str) else f for s, f in zip(w["callsite"], w["function"])]
    keys = list(dict.fromkeys(zip(w["kind"], w["function"], w["site"])))
    index = {k: i for i, k in enumerate(keys)}
    w["key"] = [index[k] for k in zip(w["kind"], w["function"], w["site"])]
    w["cpu_s"] = contention.explained(tl, w, *cpu) if cpu is not None else 0.0
    if (w["cpu_s"] > 0).any():
        keys.append(CPU_KEY)
    w = w.sort_values(["end_s", "call"], kind="stable").reset_index(drop=True)
    states = WaitStates(waits=w, keys=keys)
    _pass_on(states, tl)
    return states


def _pass_on(states, tl):
    """Split every wait into direct and passed-on parts (module docstring), in order of
    the wait's end, so a culprit's own waits are credited before the waits they cause."""
    w = states.waits
    nkeys = len(states.keys)
    calls = tl.calls
    start = calls["start_s"].to_numpy()
    end = calls["end_s"].to_numpy()
    # the culprit's interval starts: its collectives per comm and its p2p calls per peer
    col = tl.collectives[tl.collectives["wait_call"] >= 0]
    coll_ends = defaultdict(list)  # (rank, comm) -> sorted end times
    coll_any = defaultdict(list)  # rank -> sorted end times of any collective
    for r, comm, c in zip(col["rank"], col["comm"], col["wait_call"]):
        coll_ends[(r, comm)].append(end[c])
        coll_any[r].append(end[c])
    pair_starts = defaultdict(list)  # (rank, peer rank) -> sorted starts of its calls with the peer
    lk = tl.links
    rank_of = calls["rank"].to_numpy()
    for a, b in zip(lk["call"].to_numpy(), lk["partner"].to_numpy()):
        pair_starts[(rank_of[a], rank_of[b])].append(start[a])
        pair_starts[(rank_of[b], rank_of[a])].append(start[b])
    for d in (coll_ends, coll_any, pair_starts):
        for k in d:
            d[k].sort()
    entry_of = _culprit_entries(tl)

    done = defaultdict(lambda: ([], []))  # rank -> (wait ends, (start, end, vector)) in end order
    vectors = np.zeros((len(w), nkeys))
    direct = np.zeros(len(w))
    for i, row in enumerate(w.itertuples(index=False)):
        vec = np.zeros(nkeys)
        passed = np.zeros(nkeys)
        for c, fraction in zip(row.culprits, row.culprit_shares):
            share = row.lost_s * fraction
            entry = entry_of(row.call, c)
            if entry is None:
                continue
            if isinstance(row.comm, str):
                begin = _before(coll_ends[(c, row.comm)], entry)
            else:
                begin = max(
                    _before(coll_any[c], entry),
                    _before(pair_starts[(c, row.rank)], entry, strict=True),
                )
            got = _waits_within(done[c], begin, entry)
            total = got.sum()
            if total > 0:
                passed += got * (min(share, total) / total)
        vec += passed
        left = max(row.lost_s - passed.sum(), 0.0)
        machine = min(row.cpu_s, left)  # the culprits were descheduled, not late
        if machine > 0:
            vec[nkeys - 1] += machine
        direct[i] = left - machine
        vec[row.key] += direct[i]
        vectors[i] = vec
        ends, items = done[row.rank]
        ends.append(row.end_s)
        items.append((row.start_s, row.end_s, vec))
    w["direct_s"] = direct
    w["passed_on_s"] = w["lost_s"] - direct
    by = defaultdict(float)
    for r, vec in zip(w["rank"].to_numpy(), vectors):
        for k in np.flatnonzero(vec):
            by[(int(k), int(r))] += float(vec[k])
    states.by_key_rank = dict(by)
    weight = defaultdict(lambda: defaultdict(float))
    for key, culprits, shares, d in zip(w["key"], w["culprits"], w["culprit_shares"], direct):
        for c, fraction in zip(culprits, shares):
            weight[int(key)][int(c)] += d * fraction
    states.culprit_weight = {k: dict(v) for k, v in weight.items()}


def _before(times, t, strict=False):
    """The latest of the sorted ``times`` before ``t`` (-inf when none)."""
    i = bisect.bisect_left(times, t) if strict else bisect.bisect_right(times, t)
    return times[i - 1] if i else -np.inf


def _waits_within(done, begin, until):
    """The rank's credited waits overlapping [begin, until], as one vector (each wait
    counted by the share of it inside the interval)."""
    ends, items = done
    total = 0
    i = len(items) - 1
    while i >= 0 and ends[i] > begin:
        s, e, vec = items[i]
        overlap = min(e, until) - max(s, begin)
        if overlap > 0 and e > s:
            total = total + vec * (overlap / (e - s))
        i -= 1
    return total if not np.isscalar(total) else np.zeros(0)


def _culprit_entries(tl):
    """A function (waiting call, culprit rank) -> the culprit's entry into the call the
    wait was for (its send, its receive's post, or its collective)."""
    start = tl.calls["start_s"].to_numpy()
    rank = tl.calls["rank"].to_numpy()
    p2p = defaultdict(dict)
    for c, p in zip(tl.links["call"].to_numpy(), tl.links["partner"].to_numpy()):
        prev = p2p[c].get(rank[p])
        p2p[c][rank[p]] = start[p] if prev is None else max(prev, start[p])
    col = tl.collectives
    by_inst = col.groupby("instance")
    inst_of = dict(zip(col["wait_call"], col["instance"]))
    entries = {i: dict(zip(g["rank"], start[g["entry_call"].to_numpy()])) for i, g in by_inst}

    def entry(call, culprit):
        if call in inst_of:
            return entries[inst_of[call]].get(culprit)
        return p2p.get(call, {}).get(culprit)

    return entry
