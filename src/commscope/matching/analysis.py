"""A profile run's trace through the matching engines: what `model matching` and the report show."""

from __future__ import annotations

from dataclasses import dataclass, field


from ..errors import InputError
from ..runs import open_run
from . import engines as eng
from .pvars import compare
from .queue_replay import permutation_trials, replay
from ..collect.trace import read_trace
from ..lazy import lazy

pd = lazy("pandas")


@dataclass
class MatchingAnalysis:
    run: object
    trace: object
    results: pd.DataFrame  # one row per event, rank and engine
    summary: pd.DataFrame  # one row per rank and engine
    inputs: dict  # rank -> RankEvents
    pvars: pd.DataFrame  # measured vs simulated ob1 lengths per snapshot and peer
    trials: pd.DataFrame = field(default_factory=pd.DataFrame)


def locality_from_run(run):
    """(src, dst) world ranks -> locality, from the hosts the profile recorded per rank."""
    host = {}
    if "ranks" in run.tables():
        ranks = run.table("ranks")
        host = dict(zip(ranks["rank"].tolist(), ranks["host"].tolist()))

    def locality_of(a, b):
        ha, hb = host.get(a), host.get(b)
        # one host (or unknown): on the node; the socket is not recorded
        return "inter-node" if ha and hb and ha != hb else "intra-socket"

    return locality_of


def analyze(
    run_dir,
    engines=("mpich", "ob1", "bins"),
    bins=eng.DEFAULT_BINS,
    arrivals="auto",
    machine_model=None,
    trials=0,
    seed=0,
    guard_s=0.01,
    progress=None,
):
    """Replay a profile run's trace; compare ob1 with the pvars; optional thread trials."""
    run = open_run(run_dir)
    if run.meta.get("kind") != "profile":
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"is {run.meta.get('kind')!r}: the matching "
            "replay needs a `commscope profile --trace` run",
        )
    for e in engines:
        eng.engine_code(e)
    from ..collect import completeness

    completeness.check(run)  # a whole run with a gap: refused, naming the file
    trace = read_trace(run.raw_dir)
    locality_of = locality_from_run(run)
    results, summary, inputs = replay(trace, engines, bins, arrivals, machine_model, locality_of)
    cmp_rows = []
    for rank in inputs:
        ob1 = eng.simulate(inputs[rank].events, "ob1", bins, source=f"rank {rank} events")
        cmp_rows.append(compare(run.raw_dir, trace, ob1, rank, guard_s))
    pv = pd.concat(cmp_rows, ignore_index=True) if cmp_rows else pd.DataFrame()
    trial_rows = []
    if trials:
        for rank, ri in inputs.items():
            if ri.events.loc[ri.events["kind"] == "post", "thread"].nunique() < 2:
                continue  # one posting thread: nothing to permute
            for e in engines:
                if progress:
                    progress(f"rank {rank}, {e}: {trials} thread interleavings")
                trial_rows.append(permutation_trials(ri, e, trials, seed, bins))
    tr = pd.concat(trial_rows, ignore_index=True) if trial_rows else pd.DataFrame()
    return MatchingAnalysis(run, trace, results, summary, inputs, pv, tr)


def pvar_agreement(pv):
    """Quiet snapshots where simulated ob1 lengths equal the pvars, and all quiet ones."""
    if pv.empty:
        return 0, 0
    q = pv[pv["quiet"]]
    return int(q["equal"].sum()), int(len(q))


def trial_summary(trials):
    """Distribution of the average and maximum PRQ depth over thread interleavings."""
    if trials.empty:
        return trials
    g = trials.groupby(["rank", "engine"])
    return g.agg(
        trials=("trial", "size"),
        prq_avg_depth_mean=("prq_avg_depth", "mean"),
        prq_avg_depth_min=("prq_avg_depth", "min"),
        prq_avg_depth_max=("prq_avg_depth", "max"),
        prq_max_depth_mean=("prq_max_depth", "mean"),
        prq_max_depth_max=("prq_max_depth", "max"),
        searched_mean=("searched", "mean"),
    ).reset_index()
