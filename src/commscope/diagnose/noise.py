"""Is a finding more than the run's own noise?

Ranks that do the same work still reach a collective a little apart, instance by
instance, and the first wait for the last: a loss no fix wins.  The run's repetition
tells how large it is: per instance, each rank's entry less the instance's median entry;
less each rank's own median over the instances (what stays from one instance to the
next is an imbalance, not noise), the rest is jitter, of typical size sigma (the median
absolute deviation pooled over ranks and instances, as a standard deviation: large
lateness in a few instances, work that moves between ranks or a rank descheduled, is
not noise of the typical size; CPU contention is credited apart).  With P members arriving with that jitter, the mean rank loses
sigma x c_P per instance, c_P the expected maximum of P standard normal draws; over the
instances that is the loss noise alone explains.  A finding that loses no more than that
is *within noise*: listed with the figure, never the headline.  A load imbalance (the
waits of ranks that stand out in work) is not tested: its lateness persists from one
instance to the next by definition.

Point-to-point waits likewise (:func:`message_noise`): a message's partner is late by
d = its entry less the waiting call's; one place (sender, receiver, both call sites)
repeats over the iterations; less its median, d is jitter of typical size sigma (pooled
as above).  A call that waits for k messages (an MPI_Waitall of a halo) waits for the
latest: noise alone loses sigma x h_k there, h_k = E[max(0, max of k N(0, 1))]
(1 / sqrt(2 pi) for one message).
"""

from __future__ import annotations

import functools

from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: Fewest instances from which the jitter is estimated.
MIN_INSTANCES = 5


@functools.lru_cache(maxsize=64)
def expected_max_normal(p):
    """c_P: E[max of p iid N(0, 1)] minus their mean (0)."""
    from scipy import stats

    from ..stats.evt import expected_max_exact

    return float(expected_max_exact(stats.norm(), p)) if p > 1 else 0.0


def collective_noise(tl, calls, nranks, cpu_until=None):
    """{noise_s, jitter_s, instances}: the loss (rank-seconds over the run's ``nranks``
    ranks, as a finding's ``lost_s``) that arrival jitter alone explains at the
    collective instances the waiting ``calls`` belong to; None when they are not
    collectives or too few.  ``cpu_until``: per call, its thread's CPU wait since it last
    synchronised (contention.since_sync), taken off the entries: the scatter the
    machine caused is credited to CPU contention already."""
    col = tl.collectives
    if not len(col) or not len(calls):
        return None
    inst = col.loc[col["wait_call"].isin(list(calls)), "instance"].unique()
    if len(inst) < MIN_INSTANCES:
        return None
    members = col[col["instance"].isin(inst)]
    at = members["entry_call"].to_numpy()
    entry = tl.calls["start_s"].to_numpy()[at] - (cpu_until[at] if cpu_until is not None else 0.0)
    table = pd.DataFrame(
        {"instance": members["instance"].to_numpy(), "rank": members["rank"].to_numpy(), "t": entry}
    ).pivot_table(index="instance", columns="rank", values="t", aggfunc="first")
    table = table.dropna()  # instances every member of the group entered
    p = table.shape[1]
    if len(table) < MIN_INSTANCES or p < 2:
        return None
    offset = table.sub(table.median(axis=1), axis=0)
    jitter = (offset - offset.median(axis=0)).to_numpy()  # less each rank's steady lead or lag
    sigma = _robust_sd(jitter)
    n = len(inst)
    return {
        "noise_s": n * p * sigma * expected_max_normal(p) / nranks,
        "jitter_s": sigma,
        "instances": int(n),
    }


@functools.lru_cache(maxsize=64)
def expected_positive_max_normal(k):
    """h_k: E[max(0, max of k iid N(0, 1))] = the integral over x > 0 of 1 - Phi(x)^k."""
    from scipy import integrate, stats

    return float(integrate.quad(lambda x: 1.0 - stats.norm.cdf(x) ** k, 0.0, np.inf)[0])


def _robust_sd(jitter):
    """The median absolute deviation as a standard deviation: a rank that is late by much
    in some instances (work that moves between ranks, a descheduled rank) is not noise
    of the typical size."""
    return 1.4826 * float(np.median(np.abs(jitter - np.median(jitter))))


def message_noise(tl, calls, nranks, cpu_until=None):
    """{noise_s, jitter_s, instances}: the loss (as :func:`collective_noise`'s) that the
    jitter of the partners' lateness explains at the point-to-point places the waiting
    ``calls`` belong to (module docstring); None when they wait for no message or the
    places repeat too little."""
    links = tl.links
    links = links[links["src"] != links["dst"]]  # a rank's message to itself is never late
    if not len(links) or not len(calls):
        return None
    c = tl.calls
    site = c["callsite"].fillna(c["function"]).to_numpy()
    entry = c["start_s"].to_numpy() - (cpu_until if cpu_until is not None else 0.0)
    call, partner = links["call"].to_numpy(int), links["partner"].to_numpy(int)
    place = pd.MultiIndex.from_arrays(
        [links["src"].to_numpy(), links["dst"].to_numpy(), site[call], site[partner]]
    )
    late = pd.Series(entry[partner] - entry[call], index=place)
    sizes = late.groupby(level=[0, 1, 2, 3]).size()
    keep = place.isin(place[np.isin(call, list(calls))].unique()) & place.isin(
        sizes.index[sizes >= MIN_INSTANCES]
    )
    if not keep.any():
        return None
    late = late[keep]
    jitter = (late - late.groupby(level=[0, 1, 2, 3]).transform("median")).to_numpy()
    sigma = _robust_sd(jitter)
    k = pd.Series(call[keep]).value_counts()  # messages each waiting call waits for
    h = sum(n * expected_positive_max_normal(int(m)) for m, n in k.value_counts().items())
    return {"noise_s": sigma * h / nranks, "jitter_s": sigma, "instances": int(len(k))}
