"""MPICH-style message matching queues, simulated (002 Sec. 2.1; 004 Sec. 4.1).

Two linked lists per process: the posted receive queue (PRQ) and the unexpected
message queue (UMQ). A message that arrives walks the PRQ from its head; if a
receive matches, it is removed, otherwise the message is appended to the UMQ. A
receive that is posted walks the UMQ from its head; if a message matches, it is
removed, otherwise the receive is appended to the PRQ. Heads first and tails last
is what keeps MPI's ordering rules (002 Sec. 2.1). Only one source and one
communicator are modelled and there are no wildcards, so a match is "same key"
(the tag); a key may repeat, and then the oldest entry matches first.

Counting conventions (both are reported):

* ``depth``: entries passed over before the match, so a match at the head has
  depth 0 and receives posted in arrival order give depth 0 throughout; on a miss,
  the whole queue (its length) was passed over.
* ``searched``: entries compared, ``depth + 1`` on a match (the matching entry
  is compared too), the queue length on a miss. This is 004's count: receives
  posted in arrival order search n entries in all, reversed order n(n+1)/2.

Depths are computed exactly in O(n log n) with Fenwick trees (a match's depth is
the number of entries still queued that were queued before it), so 10^5 messages
take well under a second.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


EVENT_KINDS = ("post", "arrive")


class _Fenwick:
    """Prefix counts over queue slots (1 = entry still queued)."""

    def __init__(self, n):
        self.n = n
        self.tree = [0] * (n + 1)
        self.total = 0

    def add(self, i, v):
        self.total += v
        i += 1
        while i <= self.n:
            self.tree[i] += v
            i += i & -i

    def before(self, i):
        """Entries queued in slots < i."""
        s = 0
        while i > 0:
            s += self.tree[i]
            i -= i & -i
        return s


def simulate(events, source="events"):
    """Replay ``events`` through a PRQ and a UMQ; one result row per event.

    ``events``: sequence of ``(kind, key)`` with kind "post" (a receive is posted)
    or "arrive" (a message arrives), in time order. Returns a DataFrame with columns
    event, kind, key, queue ("UMQ" searched by a post, "PRQ" by an arrival),
    queue_length (length of that queue before the search), matched (bool), depth,
    searched (see the module docstring).
    """
    events = list(events)
    n = len(events)
    prq, umq = _Fenwick(n), _Fenwick(n)
    prq_wait, umq_wait = defaultdict(deque), defaultdict(deque)  # key -> queued slots, oldest first
    rows = {
        "event": np.arange(n),
        "kind": [],
        "key": [],
        "queue": [],
        "queue_length": np.zeros(n, np.int64),
        "matched": np.zeros(n, bool),
        "depth": np.zeros(n, np.int64),
        "searched": np.zeros(n, np.int64),
    }
    for i, ev in enumerate(events):
        try:
            kind, key = ev
        except (TypeError, ValueError):
            raise InputError(source, f"event {i}", f"expected (kind, key), got {ev!r}") from None
        if kind not in EVENT_KINDS:
            raise InputError(source, f"event {i}", f"kind must be 'post' or 'arrive', got {kind!r}")
        # a post searches the UMQ and else joins the PRQ; an arrival the other way round
        search, search_wait, join, join_wait = (
            (umq, umq_wait, prq, prq_wait) if kind == "post" else (prq, prq_wait, umq, umq_wait)
        )
        rows["kind"].append(kind)
        rows["key"].append(key)
        rows["queue"].append("UMQ" if kind == "post" else "PRQ")
        rows["queue_length"][i] = search.total
        if search_wait[key]:
            slot = search_wait[key].popleft()
            depth = search.before(slot)
            search.add(slot, -1)
            rows["matched"][i] = True
            rows["depth"][i] = depth
            rows["searched"][i] = depth + 1
        else:
            rows["depth"][i] = rows["searched"][i] = search.total
            join_wait[key].append(i)
            join.add(i, 1)
    return pd.DataFrame(rows)


def _check_orders(post_order, arrival_order, source):
    post, arrive = list(post_order), list(arrival_order)
    if len(post) != len(arrive):
        raise InputError(
            source,
            None,
            f"{len(post)} receives posted but {len(arrive)} messages "
            "arrive: every message needs exactly one receive",
        )
    counts = defaultdict(int)
    for k in post:
        counts[k] += 1
    for k in arrive:
        counts[k] -= 1
    bad = [k for k, v in counts.items() if v]
    if bad:
        raise InputError(source, None, f"keys posted and arriving differ (e.g. {bad[0]!r})")
    return post, arrive


def prq_search(post_order, arrival_order, source="orders"):
    """All receives posted before any message arrives (the mtmatch benchmark, 002 Sec. 4.1).

    Returns a DataFrame in arrival order: key, depth, searched, queue_length (PRQ
    length when the message arrived). Every arrival matches.
    """
    post, arrive = _check_orders(post_order, arrival_order, source)
    df = simulate([("post", k) for k in post] + [("arrive", k) for k in arrive], source)
    out = df[df["kind"] == "arrive"].reset_index(drop=True)
    return out[["key", "depth", "searched", "queue_length"]]


def umq_search(arrival_order, post_order, source="orders"):
    """All messages arrive before any receive is posted: each post walks the UMQ.

    Returns a DataFrame in posting order: key, depth, searched, queue_length.
    """
    post, arrive = _check_orders(post_order, arrival_order, source)
    df = simulate([("arrive", k) for k in arrive] + [("post", k) for k in post], source)
    out = df[df["kind"] == "post"].reset_index(drop=True)
    return out[["key", "depth", "searched", "queue_length"]]


@dataclass
class SearchSummary:
    """Per-phase totals of a :func:`prq_search` / :func:`umq_search` result."""

    messages: int
    avg_depth: float
    max_depth: int
    total_depth: int
    avg_searched: float
    total_searched: int

    def to_dict(self):
        return dict(self.__dict__)


def summarize(result):
    """Average, maximum and total depth and entries searched."""
    d = result["depth"].to_numpy()
    s = result["searched"].to_numpy()
    if d.size == 0:
        return SearchSummary(0, float("nan"), 0, 0, float("nan"), 0)
    return SearchSummary(
        int(d.size), float(d.mean()), int(d.max()), int(d.sum()), float(s.mean()), int(s.sum())
    )


def orders_from_sequences(df, key="tag", post_seq="post_seq", send_seq="send_seq"):
    """(post order, arrival order) of keys from per-message sequence numbers."""
    post = df.sort_values(post_seq, kind="stable")[key].tolist()
    arrive = df.sort_values(send_seq, kind="stable")[key].tolist()
    return post, arrive
