"""CPU contention in a diagnosis: the time ranks were runnable but waited for a core.

On a busy or oversubscribed node a rank that is descheduled while it computes arrives
late, and the others wait for it: a wait that is the machine's, not the program's.  The
profiler measures each thread's run-queue wait (:mod:`commscope.collect.cpu`); with a
trace, at the entry of every call after a burst of work, so the wait is known per
stretch of a stream.  Here that becomes:

* :func:`per_call`: per traced call, the CPU wait inside the burst before it (the part
  that made it longer), inside its own cost and while it waited for a partner (a
  stretch's wait shared out over these by length);
* :func:`explained`: per wait state, the part its culprit's lateness was CPU wait: the
  culprit's CPU wait since it last synchronised (its previous blocking call) up to the
  call it was late to, less the waiter's likewise (both were slowed alike when both
  waited), at most the wait.  :func:`commscope.diagnose.waits.find`
  credits that part to CPU contention instead of the wait's pattern;
* :func:`finding`: the ``cpu_contention`` finding: the node, its ranks x threads
  against its cores, the share of the run, what to do, and the saving of a replay with
  every measured CPU wait taken out (a core per thread, an idle machine);
* :func:`useful_without_waits`: each rank's useful time less its CPU wait, which the
  load-imbalance test uses (a rank slowed by the machine has no more work).
"""

from __future__ import annotations

from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: Where the profiler could not measure the wait (schedstat unreadable).
UNMEASURED = "CPU contention unmeasured"


def per_call(tl, samples, burst, cost):
    """(in burst, in cost, in wait): the CPU wait per call of ``tl`` in the burst before
    it, in its own cost and while it waited for a partner, from the trace's CPU
    ``samples`` (collect.cpu.cpu_samples): between two samples of a thread, the increase
    of its run-queue wait is shared over the bursts, costs and waits in between in
    proportion to their length, none above its length.  A wait's share delayed the
    thread only if its partner came meanwhile, so only :func:`explained` counts it."""
    n = len(tl.calls)
    in_burst, in_cost, in_wait = np.zeros(n), np.zeros(n), np.zeros(n)
    if samples is None or not len(samples) or not n:
        return in_burst, in_cost, in_wait
    calls = tl.calls
    start = calls["start_s"].to_numpy()
    waited = np.maximum(calls["end_s"].to_numpy() - start - cost, 0.0)
    streams = calls.groupby(["rank", "thread"]).indices
    for (rank, thread), s in samples.groupby(["rank", "thread"]):
        idx = streams.get((rank, thread))
        if idx is None:
            continue
        idx = idx[np.argsort(start[idx], kind="stable")]
        s = s.sort_values("time_s")
        pos = np.searchsorted(start[idx], s["time_s"].to_numpy() - 1e-9)
        wait = s["cpu_wait_s"].to_numpy()
        for k in range(1, len(s)):
            a, b = int(pos[k - 1]), int(pos[k])
            grown = wait[k] - wait[k - 1]
            if grown <= 0 or b <= a or b >= len(idx):
                continue
            bursts = idx[a + 1 : b + 1]  # the work before each call up to the sampled one
            costs = idx[a:b]  # and the calls from the previous sample's on
            spans = np.concatenate([burst[bursts], cost[costs], waited[costs]])
            total = spans.sum()
            if total <= 0:
                continue
            share = np.minimum(spans * (grown / total), spans)
            in_burst[bursts] += share[: len(bursts)]
            in_cost[costs] += share[len(bursts) : len(bursts) + len(costs)]
            in_wait[costs] += share[len(bursts) + len(costs) :]
    return _delaying(in_burst, burst, calls), _late_calls(in_cost, in_wait, cost, calls), in_wait


#: Bursts of one place (rank, thread, the call after them) needed to tell whether their
#: CPU wait made them longer.
MIN_BURSTS = 5


def _late_calls(in_cost, in_wait, cost, calls):
    """The CPU wait that made each call end late: its share of the stretch's wait in its
    cost, or, where the call took longer than the median at its place after its
    partner came, that excess up to all the call's CPU wait (a rank descheduled while it
    waited notices its partner late)."""
    out = in_cost.copy()
    site = calls["callsite"].fillna(calls["function"]).to_numpy()
    keys = pd.MultiIndex.from_arrays([calls["rank"], calls["thread"], site])
    for idx in pd.Series(np.arange(len(calls))).groupby(keys).indices.values():
        if len(idx) < MIN_BURSTS:
            continue
        excess = np.maximum(cost[idx] - np.median(cost[idx]), 0.0)
        out[idx] = np.maximum(out[idx], np.minimum(in_cost[idx] + in_wait[idx], excess))
    return out


def _delaying(in_burst, burst, calls):
    """The part of each burst's CPU wait that made it longer.  Computation takes as much
    longer as it waited for a core; work that runs to a deadline (a spin until a clock
    time, a fixed time quantum) does not, unless the deadline passed while it waited.
    Per place, the slope of the bursts' length on their CPU wait (least squares, clipped
    to [0, 1]) says which, about 1 or 0; a burst longer than the place's median by no
    more than its CPU wait was delayed by that much whatever the slope."""
    out = in_burst.copy()
    site = calls["callsite"].fillna(calls["function"]).to_numpy()
    keys = pd.MultiIndex.from_arrays([calls["rank"], calls["thread"], site])
    for idx in pd.Series(np.arange(len(calls))).groupby(keys).indices.values():
        w, b = in_burst[idx], burst[idx]
        if len(idx) < MIN_BURSTS or np.var(w) <= 0:
            continue
        slope = float(np.cov(w, b, bias=True)[0, 1] / np.var(w))
        late = np.minimum(w, np.maximum(b - np.median(b), 0.0))
        out[idx] = np.maximum(w * min(max(slope, 0.0), 1.0), late)
    return out


def explained(tl, waits, in_burst, in_cost, in_wait):
    """Per row of ``waits`` (waits.find's columns before passing on), the seconds of the
    wait that the culprits' CPU wait explains (module docstring)."""
    if not len(waits):
        return np.zeros(0)
    before = since_sync(tl, (in_burst, in_cost, in_wait))
    out = np.zeros(len(waits))
    for i, (call, calls, shares, lost) in enumerate(
        zip(waits["call"], waits["culprit_calls"], waits["culprit_shares"], waits["lost_s"])
    ):
        mine = before[int(call)]
        late = sum(f * max(before[int(c)] - mine, 0.0) for c, f in zip(calls, shares))
        out[i] = min(late, lost)
    return out


def since_sync(tl, cpu):
    """Per call, its thread's CPU wait since it last synchronised (``cpu``:
    :func:`per_call`'s arrays): how much later than on an idle machine it entered."""
    in_burst, in_cost, _in_wait = cpu  # descheduled while waiting for a partner: no later
    return _since_blocking(tl, in_burst, in_cost)


def _since_blocking(tl, in_burst, in_call):
    """Per call, the CPU wait of its thread since its previous blocking call (the last
    time it synchronised): the bursts after it up to this call's entry and the calls
    from it on, that one included (it may have left it late)."""
    calls = tl.calls
    fn = calls["function"].astype(str)
    blocking = ~fn.str.match(r"MPI_I[a-z]") | fn.isin(("MPI_Init", "MPI_Init_thread"))
    blocking = blocking.to_numpy()
    out = np.zeros(len(calls))
    for idx in calls.groupby("stream").indices.values():
        idx = idx[np.argsort(calls["start_s"].to_numpy()[idx], kind="stable")]
        b = np.cumsum(in_burst[idx])
        c = np.r_[0.0, np.cumsum(in_call[idx])]  # c[k]: calls before position k
        last = -1
        for k in range(len(idx)):
            s = max(last, 0)
            out[idx[k]] = (b[k] - b[s]) + (c[k] - c[s]) if last >= 0 else b[k] + c[k]
            if blocking[idx[k]]:
                last = k
    return out


def useful_without_waits(useful, rank_cpu, in_burst=None, tl=None):
    """``useful`` (rank, useful_s) less each rank's CPU wait outside MPI: from the
    trace's per-call waits (the mean over the rank's threads), else the rank's measured
    wait per thread in proportion to its time outside MPI.  ``useful`` unchanged where
    nothing was measured."""
    if useful is None:
        return None
    out = useful.copy()
    if tl is not None and in_burst is not None and in_burst.any():
        c = tl.calls
        per = pd.Series(in_burst).groupby([c["rank"].to_numpy(), c["thread"].to_numpy()]).sum()
        wait = per.groupby(level=0).mean()
    elif rank_cpu is not None and rank_cpu["measured"].any():
        r = rank_cpu.set_index("rank")
        u = useful.set_index("rank")["useful_s"]
        outside = (u / r["wall_s"].where(r["wall_s"] > 0)).clip(0, 1).fillna(0)
        wait = (r["cpu_wait_s"] / r["threads"].clip(lower=1)).fillna(0) * outside
    else:
        return out
    w = out["rank"].map(wait).fillna(0.0).to_numpy()
    out["useful_s"] = np.maximum(out["useful_s"].to_numpy() - w, 0.0)
    return out


def idle_change(in_burst, in_cost, _in_wait, burst, cost):
    """The replay change of an idle machine: every burst and call cost less its CPU wait."""

    def scale(wait, spans):
        keep = np.flatnonzero((wait > 0) & (spans > 0))
        return {int(c): float(max(spans[c] - wait[c], 0.0) / spans[c]) for c in keep}

    return {"burst_scale": scale(in_burst, burst), "cost_scale": scale(in_cost, cost)}


def where(nodes, rank_cpu):
    """(hosts that waited, text naming them with their threads and cores)."""
    r = rank_cpu[rank_cpu["measured"]]
    hosts = sorted(set(r.loc[r["cpu_wait_s"] > 0, "host"].astype(str)))
    parts = []
    for h in hosts:
        row = nodes[nodes["host"].astype(str) == h] if nodes is not None else None
        if row is not None and len(row) and pd.notna(row["cores"].iloc[0]):
            x = row.iloc[0]
            parts.append(
                f"{h} ({int(x['ranks'])} ranks, {int(x['threads'])} threads on "
                f"{int(x['cores'])} cores)"
            )
        else:
            parts.append(h)
    return hosts, ", ".join(parts)


def fix_text(nodes, hosts, share):
    """What to do: fewer threads than cores where the node is oversubscribed, else an
    idle machine (another process took the cores)."""
    over = (
        nodes[nodes["host"].astype(str).isin(hosts) & nodes["oversubscribed"]]
        if nodes is not None
        else None
    )
    if over is not None and len(over):
        x = over.iloc[0]
        return (
            f"The ranks wait for a core {share} of the run: {x['host']} runs "
            f"{int(x['threads'])} threads on {int(x['cores'])} cores. Run at most one "
            "thread per core: fewer ranks per node (spread them over more nodes), fewer "
            "threads per rank (OMP_NUM_THREADS), and pin them (--bind-to core); measure "
            "on an idle machine before tuning the program."
        )
    return (
        f"The ranks wait for a core {share} of the run although they have one each: "
        "other processes run on the same cores. Run on an idle machine or a dedicated "
        "allocation, and pin the ranks (--bind-to core), before tuning the program."
    )


def unmeasured_note(rank_cpu, nodes):
    """A note where the wait could not be measured (and the node is oversubscribed)."""
    if rank_cpu is None:
        return None
    if rank_cpu["measured"].all():
        return None
    over = nodes[nodes["oversubscribed"]] if nodes is not None else None
    tail = (
        f"; {over['host'].iloc[0]} runs {int(over['threads'].iloc[0])} threads on "
        f"{int(over['cores'].iloc[0])} cores, so some waits may be the CPU's"
        if over is not None and len(over)
        else ""
    )
    switches = int(rank_cpu["involuntary_switches"].sum())
    return (
        f"{UNMEASURED} (the run-queue wait could not be read; {switches:,} involuntary "
        f"context switches counted){tail}"
    )
