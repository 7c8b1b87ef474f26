"""The findings of a diagnosis: what is wrong, who causes it, where the time is lost,
the fix and what it saves (docs/diagnose.md).

Each finding is one :class:`Finding`; the text, the report section and ``--json`` are
views of the same records.  Findings are ranked by what their fix saves, then by the
run time they cost (``lost_s``: the rank-seconds lost, divided by the ranks, so a loss
every rank shares counts once; :mod:`.ranking`).  Where the run has an event trace, a
finding's predicted saving is the difference of two replays of it (:mod:`.replay`):
unchanged, and with the fix.

Kinds, and where they come from:

* ``load_imbalance``: some ranks work more than the others (POP's load balance below
  1), and the others wait for them, at collectives or for their messages;
* ``wait_at_collective``: waits at an N x N collective with no fixed culprit (the
  last rank changes): the synchronisation itself costs;
* ``late_broadcast``, ``late_scatter`` (the root is late), ``early_reduce``,
  ``early_gather`` (the root is early);
* ``late_sender``, ``late_receiver``, ``wrong_order``: point-to-point wait states
  without a load imbalance behind them;
* ``small_messages``: runs of small messages between one pair that could be one;
* ``thread_imbalance``: OpenMP threads reaching a region's end at different times;
* ``queue_search``: receives posted in another order than the messages arrive, so
  every arrival searches a long posted-receive queue;
* ``shared_communicator``: threads of a rank sending and receiving on one communicator
  at once, where this machine's multirate measurement says a communicator per thread
  is faster;
* ``cpu_contention``: ranks runnable but waiting for a core (an oversubscribed or busy
  node), and the waits of the others that this explains (:mod:`.contention`).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

from ..errors import InputError
from ..lazy import lazy
from ..units import format_bytes, format_seconds
from . import contention as cnt
from . import efficiency as eff
from . import noise as ns
from . import ranking as rk
from . import replay as rpl
from . import timeline as tlm
from . import waits as wst

np = lazy("numpy")
pd = lazy("pandas")

#: A finding below this share of the run time is minor: listed, never the headline.
MINOR_SHARE = 0.05
#: A finding that loses less than this is none (what is left of a wait others explain).
MIN_LOST_S = 1e-7
#: A rank is overloaded when its useful time exceeds the mean by half the max - mean gap,
#: and the gap is at least this share of the run.
IMBALANCE_SHARE = 0.05
#: Messages up to this size count as small, runs of at least SMALL_RUN of them to one
#: peer with nothing else done in between (gaps under SMALL_GAP_S) as one message's worth.
SMALL_BYTES = 4096
SMALL_RUN = 8
SMALL_GAP_S = 2e-6

KINDS = (
    "load_imbalance",
    "wait_at_collective",
    "late_broadcast",
    "late_scatter",
    "early_reduce",
    "early_gather",
    "late_sender",
    "late_receiver",
    "wrong_order",
    "small_messages",
    "thread_imbalance",
    "queue_search",
    "shared_communicator",
    "cpu_contention",
)
NEEDS_TRACE = (
    "wait_at_collective",
    "late_broadcast",
    "late_scatter",
    "early_reduce",
    "early_gather",
    "late_sender",
    "late_receiver",
    "wrong_order",
    "small_messages",
    "queue_search",
    "shared_communicator",
)
NEEDS_OMPT = ("thread_imbalance",)
#: Kinds whose fix moves work between ranks (predicted by the balance replay).
BALANCE_KINDS = ("load_imbalance", "late_broadcast", "late_scatter", "early_reduce", "early_gather")


@dataclass
class Finding:
    """One problem of the run (module docstring); ``evidence`` holds the numbers behind it."""

    kind: str
    culprit_ranks: list
    waiting_ranks: list
    waiting_function: str | None
    callsite: str | None
    region: str | None
    lost_s: float
    share_of_runtime: float
    fix: str
    predicted_saving_s: float | None
    basis: str
    evidence: dict = field(default_factory=dict)
    #: the replay change its saving comes from (Replayer.run's keywords), for grouping
    change: dict | None = field(default=None, repr=False, compare=False)

    def to_dict(self):
        out = asdict(self)
        out.pop("change")
        return out

    @property
    def within_noise(self):
        """No larger than the run's own repetition says noise alone would lose."""
        return bool(self.evidence.get("within_noise"))


@dataclass
class Diagnosis:
    run: str
    ranks: int
    runtime_s: float
    efficiency: dict
    findings: list
    notes: list
    replay: dict | None = None
    #: the findings of one kind, culprits and waiting ranks made one (ranking.group),
    #: ranked: what a person reads; ``findings`` keeps every call site
    groups: list | None = None
    #: what the trace misses (an unfinished run: diagnose.damage), None when whole
    incomplete: dict | None = None
    #: why the trace of an unfinished run could not be replayed (no saving predicted)
    replay_refused: str | None = None

    def __post_init__(self):
        if self.groups is None:
            self.groups = list(self.findings)

    def to_dict(self):
        return {
            "run": self.run,
            "ranks": self.ranks,
            "runtime_s": self.runtime_s,
            "efficiency": self.efficiency,
            "findings": [f.to_dict() for f in self.findings],
            "groups": [f.to_dict() for f in self.groups],
            "replay": self.replay,
            "notes": self.notes,
            "incomplete": self.incomplete,
            "replay_refused": self.replay_refused,
        }

    @property
    def major(self):
        """The groups that cost at least MINOR_SHARE of the run and more than noise,
        best saving first."""
        return [f for f in self.groups if f.share_of_runtime >= MINOR_SHARE and not f.within_noise]


# ---- entry ------------------------------------------------------------------------------


def diagnose(profile, machine_model=None, what_if=(), multirate=None, what_if_models=None):
    """The :class:`Diagnosis` of an open profile run (``commscope.open``); ``multirate``:
    an open ``bench multirate`` run of this machine (whether threads do better with a
    communicator each); ``what_if_models``: {``machine-model=FILE`` change: its loaded
    model}, used by that what-if's replay only (never by the diagnosis)."""
    from ..profile.export import load_trace
    from . import damage

    gaps = damage.check(profile)  # a whole run with a gap: refused (naming the file)
    ranks = profile.ranks
    if ranks is None or not len(ranks):
        raise InputError(
            profile.path / "ranks.parquet",
            None,
            "missing or empty: the profile was not converted (is it still running?)",
        )
    trace = load_trace(profile.run)
    tl = tlm.build(trace, ranks, machine_model) if trace is not None else None
    useful, useful_basis = eff.useful_times(profile, tl)
    nranks = int(len(ranks))
    runtime = tl.runtime_s if tl is not None else float(ranks["wall_s"].max())
    notes = trace.callsite_notes() if trace is not None else []
    rp = base = ideal = refused = None
    if tl is not None and len(tl.calls):
        rp = rpl.Replayer(tl)
        try:
            base = rp.run()
            ideal = rp.run("network=ideal", network="ideal")
        except rpl.Stuck as exc:  # an unfinished run goes on without it (diagnose.damage)
            refused = damage.without_replay(exc, gaps, what_if)
    efficiency = {
        "mpi": eff.mpi_level(useful, runtime, ideal.runtime_s if ideal else None)
        if useful is not None
        else None,
        "openmp": eff.openmp_level(profile.threads, useful),
        "useful_basis": useful_basis,
        "phases": [],
    }
    if tl is not None and len(tl.calls):
        try:
            efficiency["phases"] = eff.phase_levels(tl, ideal)
        except ValueError as exc:
            notes.append(f"no efficiency per phase: {exc}")
    rank_cpu, nodes = _cpu_record(profile)
    cpu = None
    if rp is not None and getattr(trace, "cpu", None) is not None and len(trace.cpu):
        cpu = cnt.per_call(tl, trace.cpu, rp.burst, rp.cost)
    # a rank slowed by the machine has no more work: imbalance is judged without CPU waits
    work = cnt.useful_without_waits(useful, rank_cpu, cpu[0] if cpu else None, tl)
    ctx = _Context(profile, tl, rp, base, useful, runtime, nranks, machine_model, work=work)
    ctx.cpu, ctx.rank_cpu, ctx.nodes = cpu, rank_cpu, nodes
    if base is not None and cpu is not None and (cpu[0].any() or cpu[1].any()):
        ctx.idle = cnt.idle_change(*cpu, rp.burst, rp.cost)
        ctx.idle_runtime_s = rp.run("idle machine", **ctx.idle).runtime_s
    findings = []
    if tl is not None:
        findings += _wait_findings(ctx)
        findings += _small_message_findings(ctx)
        for found, note in (_queue_findings(ctx, trace), _shared_comm_findings(ctx, multirate)):
            findings += found
            notes += [note] if note else []
    if tl is None and useful is not None:  # with a trace, the waits tell what the imbalance costs
        findings += _imbalance_without_trace(ctx)
    if profile.threads is not None and len(profile.threads):
        findings += _thread_findings(ctx)
    findings += _contention_findings(ctx)
    note = cnt.unmeasured_note(rank_cpu, nodes)
    notes += [note] if note else []
    findings = rk.rank(_absorb_search_waits([f for f in findings if f.lost_s >= MIN_LOST_S]))
    groups = rk.group(findings, (lambda change: ctx.saving(**change)) if base else None)
    if tl is None:
        notes.append(
            "without an event trace (commscope profile --trace): no wait states, no "
            "replay; " + ", ".join(NEEDS_TRACE) + " need it"
        )
    if profile.threads is None:
        notes.append(
            "without OpenMP thread timings (commscope profile --ompt): "
            + ", ".join(NEEDS_OMPT)
            + " needs them"
        )
    if useful is None:
        notes.append(useful_basis)
    replay = None
    if what_if and base is None:
        raise InputError(
            profile.path,
            "--what-if",
            "a what-if replays the event trace, and this run has none: profile with --trace",
        )
    if base is not None:
        replay = {
            "measured_s": runtime,
            "unchanged_s": base.runtime_s,
            "error_pct": 100 * (base.runtime_s - runtime) / runtime if runtime > 0 else None,
            "ideal_network_s": ideal.runtime_s,
            "what_if": [],
            "eager_max_bytes": tl.eager_max_bytes,
            "eager_basis": tl.eager_basis,
        }
        for change in what_if:
            r = run_what_if(rp, change, (what_if_models or {}).get(change, machine_model))
            replay["what_if"].append(
                {
                    "change": change,
                    "runtime_s": r.runtime_s,
                    "saving_s": base.runtime_s - r.runtime_s,
                }
            )
        if replay["eager_max_bytes"] == float("inf"):
            replay["eager_max_bytes"] = None
    d = Diagnosis(
        run=str(profile.path),
        ranks=nranks,
        runtime_s=runtime,
        efficiency=efficiency,
        findings=findings,
        notes=notes,
        replay=replay,
        groups=groups,
        replay_refused=refused,
    )
    return damage.mark(d, getattr(trace, "completeness", None) or gaps)


WHAT_IFS = ("balance", "network=ideal", "machine-model=FILE")


def run_what_if(rp, change, machine_model=None):
    """One named replay: ``balance``, ``network=ideal`` or ``machine-model=FILE`` (the
    model already loaded: ``machine_model``)."""
    if change == "balance":
        return rp.run(change, balance=True)
    if change == "network=ideal":
        return rp.run(change, network="ideal")
    if change.startswith("machine-model="):
        if machine_model is None:
            raise InputError("--what-if", None, f"{change}: the machine model could not be loaded")
        return rp.run(change, machine_model=machine_model)
    raise InputError("--what-if", None, f"unknown change {change!r} (one of {', '.join(WHAT_IFS)})")


@dataclass
class _Context:
    profile: object
    tl: object
    rp: object
    base: object
    useful: object
    runtime: float
    nranks: int
    machine_model: object
    #: the useful time less the CPU wait (the work the ranks had), for the imbalance test
    work: object = None
    _balance: float | None = None
    #: CPU contention (diagnose.contention): per call the CPU wait in its burst and its
    #: cost (with a trace); per rank and per node as measured; the waits it explained
    cpu: tuple | None = None
    rank_cpu: object = None
    nodes: object = None
    absorbed_s_by_rank: dict = field(default_factory=dict)
    #: the replay change of an idle machine (every measured CPU wait taken out), its run time
    idle: dict | None = None
    idle_runtime_s: float | None = None
    cpu_until: object = None  # per call, its thread's CPU wait since it last synchronised

    def saving(self, **change):
        """Predicted saving of a change on this machine as it ran: unchanged replay -
        changed replay (never below 0); None when the trace could not be replayed."""
        if self.base is None:
            return None
        return max(self.base.runtime_s - self.rp.run(**change).runtime_s, 0.0)

    def balance_saving(self):
        """The saving of balancing the work over ranks: one replay, whichever findings
        an imbalance makes."""
        if self._balance is None:
            self._balance = self.saving(balance=True)
        return self._balance

    def overloaded(self):
        """Ranks whose useful time stands out (module constants), and max - mean, where
        the work less the CPU wait (``work``) stands out too: a balanced program whose
        ranks were descheduled unevenly looks imbalanced only as measured.  The ranks
        are those measured (work that spins to a deadline takes no longer descheduled,
        so its CPU wait is no measure of it)."""
        ranks, gap = _stand_out(self.useful, self.runtime)
        if self.work is not None and self.work is not self.useful:
            fewer, gap_work = _stand_out(self.work, self.runtime)
            if not fewer:
                return [], gap_work
            ranks = ranks or fewer
        return ranks, gap


def _stand_out(useful, runtime):
    if useful is None or len(useful) < 2:
        return [], 0.0
    u = useful.set_index("rank")["useful_s"]
    gap = float(u.max() - u.mean())
    if gap < IMBALANCE_SHARE * runtime:
        return [], gap
    return sorted(int(r) for r in u.index[u - u.mean() > gap / 2]), gap


def _predict(ctx, f, **change):
    """A finding's predicted saving: the replay of ``change`` (kept for grouping)."""
    f.change = change
    f.predicted_saving_s = (
        ctx.balance_saving() if change == {"balance": True} else ctx.saving(**change)
    )


def _predict_no_wait(ctx, f, calls):
    """The saving of ``calls`` waiting for nobody, counted from this finding's own
    waits: at most its lost rank-seconds over P - 1 (all ranks but the last waiting
    that long).  A replay without a wait also cuts what the wait passed on, whose
    loss (and saving) belongs to the finding that caused it."""
    _predict(ctx, f, no_wait=calls)
    cap = f.lost_s * ctx.nranks / max(ctx.nranks - 1, 1)
    if f.predicted_saving_s is not None and f.predicted_saving_s > cap:
        f.evidence["replayed_saving_s"] = f.predicted_saving_s
        f.predicted_saving_s = cap


# ---- from the wait states -------------------------------------------------------------------


def _top_ranks(weights, share=0.2):
    if not weights:
        return []
    top = max(weights.values())
    return sorted(int(r) for r, w in weights.items() if w >= share * top and w > 0)


#: Waits an overloaded culprit explains: wherever they show, they are one load imbalance,
#: with one balancing saving.
_IMBALANCE_WAITS = (
    "wait_nxn",
    "late_sender",
    "late_broadcast",
    "late_scatter",
    "early_reduce",
    "early_gather",
)
#: A wait-state kind as a finding's kind once it belongs to a load imbalance.
_AS_IMBALANCE = {"wait_nxn": "load_imbalance", "late_sender": "load_imbalance"}


def _wait_findings(ctx):
    ws = wst.find(ctx.tl, ctx.cpu)
    if not len(ws.waits):
        return []
    overloaded, _gap = ctx.overloaded()
    groups = {}
    for k, (kind, fn, site) in enumerate(ws.keys):
        if (kind, fn, site) == wst.CPU_KEY:  # the machine's: the cpu_contention finding's
            ctx.absorbed_s_by_rank = {r: v for (kk, r), v in ws.by_key_rank.items() if kk == k}
            continue
        weight = ws.culprit_weight.get(k, {})
        total = sum(weight.values())
        mostly_overloaded = total > 0 and sum(weight.get(r, 0.0) for r in overloaded) >= 0.5 * total
        if kind in _IMBALANCE_WAITS and mostly_overloaded:
            fk = ("imbalance",)
        elif kind == "wait_nxn":
            fk = ("wait_at_collective", fn, site)
        else:
            fk = (kind, fn, site)
        groups.setdefault(fk, []).append(k)
    _split_late_sends(ctx, ws, groups)
    out = []
    for fk, keys in groups.items():
        f = _wait_finding(ctx, ws, fk, keys, overloaded)
        if f is not None:
            _predict_wait_fix(ctx, f, ws, keys, imbalance=fk == ("imbalance",))
            if fk != ("imbalance",):  # an overloaded rank's lateness persists: never noise
                _mark_noise(ctx, f, ws, keys)
            out.append(f)
    return out


def _mark_noise(ctx, f, ws, keys):
    """The loss the arrival jitter alone explains at the collectives or the messages the
    finding waits at (noise.py), and whether the finding is within it."""
    calls = set(ws.waits.loc[ws.waits["key"].isin(keys), "call"].astype(int))
    if ctx.cpu is not None and ctx.cpu_until is None:
        ctx.cpu_until = cnt.since_sync(ctx.tl, ctx.cpu)
    got = ns.collective_noise(ctx.tl, calls, ctx.nranks, ctx.cpu_until)
    if got is None:
        got = ns.message_noise(ctx.tl, calls, ctx.nranks, ctx.cpu_until)
    if got is not None:
        f.evidence.update(got)
        f.evidence["within_noise"] = bool(f.lost_s <= got["noise_s"])


def _split_late_sends(ctx, ws, groups):
    """Late sends by an overloaded rank are part of its imbalance, unless sending
    first (the late-sender fix) saves more than balancing the work: then they are a
    late-sender finding of their own, ranked by that saving."""
    keys = groups.get(("imbalance",))
    if not keys or ctx.base is None:  # without a replay, no saving to weigh
        return
    late = {}
    for k in keys:
        kind, fn, site = ws.keys[k]
        if kind == "late_sender":
            late.setdefault((fn, site), []).append(k)
    for (fn, site), ks in late.items():
        calls = _calls_at(ctx, fn, site if site != fn else None)
        if ctx.saving(no_wait=calls) > ctx.balance_saving():
            groups[("late_sender", fn, site)] = ks
            keys[:] = [k for k in keys if k not in ks]
    if not keys:
        del groups[("imbalance",)]


def _imbalance_kind(ws, keys):
    """The kind of the finding a load imbalance makes: the wait kind it loses most
    direct time to (waits at N x N collectives and for messages read as
    ``load_imbalance``; a late root or an early one as its own kind)."""
    w = ws.waits[ws.waits["key"].isin(keys)]
    by = w.groupby("kind")["direct_s"].sum()
    by.index = [_AS_IMBALANCE.get(k, k) for k in by.index]
    by = by.groupby(level=0).sum()
    return str(by.idxmax()) if len(by) else "load_imbalance"


def _wait_finding(ctx, ws, fk, keys, overloaded):
    """One finding from the waits of ``keys`` (one group of :func:`_wait_findings`)."""
    by_rank = {}
    for (k, r), v in ws.by_key_rank.items():
        if k in keys:
            by_rank[r] = by_rank.get(r, 0.0) + v
    total = sum(by_rank.values())
    if total <= 0:
        return None
    weights = {}
    for k in keys:
        for r, w in ws.culprit_weight.get(k, {}).items():
            weights[r] = weights.get(r, 0.0) + w
    key_total = {k: sum(v for (kk, _), v in ws.by_key_rank.items() if kk == k) for k in keys}
    mine = ws.waits[ws.waits["key"].isin(keys)]
    direct = mine.groupby("rank")["direct_s"].sum()
    direct = direct[direct > 0]
    main = max(keys, key=lambda k: key_total[k])
    _kind, fn, site = ws.keys[main]
    kind = _imbalance_kind(ws, keys) if fk == ("imbalance",) else fk[0]
    top = max(by_rank.values())
    # culprits by the waits they caused; of an imbalance (whose waits they mostly
    # caused) the overloaded ranks: on a shared core the same work ends in a steady
    # order, so the last of equally loaded ranks would stand out by causation alone
    culprits = overloaded if fk == ("imbalance",) else _top_ranks(weights)
    sites = mine.groupby("site")["direct_s"].sum().sort_values(ascending=False)
    return Finding(
        kind=kind,
        culprit_ranks=culprits,
        waiting_ranks=sorted(int(r) for r, v in direct.items() if v >= 0.25 * direct.max())
        if len(direct)
        else sorted(int(r) for r, v in by_rank.items() if v >= 0.25 * top),
        waiting_function=fn,
        callsite=site if site != fn else None,
        region=None,
        lost_s=total / ctx.nranks,
        share_of_runtime=total / ctx.nranks / ctx.runtime,
        fix="",
        predicted_saving_s=None,
        basis="",
        evidence={
            "lost_s_by_rank": {str(r): v for r, v in sorted(by_rank.items())},
            "direct_s": float(mine["direct_s"].sum()),
            # credited to this finding from waits it held up on other calls
            "held_up_s": max(total - float(mine["direct_s"].sum()), 0.0),
            "waits": int(len(mine)),
            # the waits it caused, per culprit (rank-seconds of direct waits)
            "caused_s_by_rank": {str(r): float(v) for r, v in sorted(weights.items())},
            "direct_by_site": [
                {"callsite": str(k), "direct_s": float(v)} for k, v in sites.items()
            ],
        },
    )


def _calls_at(ctx, function, callsite):
    c = ctx.tl.calls
    sel = c["function"] == function
    if callsite is not None:
        sel &= c["callsite"] == callsite
    return set(c.index[sel].tolist())


def _region_of_culprit(ctx, f, ws, keys):
    """Where the culprit's extra work is: the OpenMP region whose time on the culprits
    exceeds the others' most (with OMPT data), else the longest work on the culprit's
    way to the call the others waited for, named by the calls around it."""
    threads = ctx.profile.threads
    if threads is not None and len(threads) and f.culprit_ranks:
        # the busy time of each instance's slowest thread (the region's wall time also
        # holds the threads' wake-up at its end, the same on every rank)
        inst = eff.region_instances(threads)
        per = inst.groupby(["region", "rank"])["max_busy_s"].sum().unstack(fill_value=0.0)
        mine = per.reindex(columns=f.culprit_ranks).mean(axis=1)
        others = per.drop(columns=f.culprit_ranks, errors="ignore")
        if len(others.columns):
            extra = mine - others.mean(axis=1)
            if len(extra) and extra.max() > 0:
                return f"OpenMP region {extra.idxmax()}"
    w = ws.waits[ws.waits["key"].isin(keys) & (ws.waits["direct_s"] > 0)]
    if not len(w):
        return None
    c = ctx.tl.calls
    burst = ctx.rp.burst
    function = c["function"].to_numpy()
    stream = c["stream"].to_numpy()
    site = [x if isinstance(x, str) else fn for x, fn in zip(c["callsite"], function)]
    is_mark = function == eff.MARK_FUNCTION
    phase = pd.Series(is_mark.astype(int)).groupby(stream).cumsum().to_numpy()  # marks before
    votes = {}
    for calls, lost in zip(w["culprit_calls"], w["direct_s"]):
        for j in calls:
            # back along the culprit's stream, up to where it had synchronised
            best = j
            k = j
            while k > 0 and stream[k - 1] == stream[j] and j - k < 64:
                if burst[k] > burst[best]:
                    best = k
                if function[k - 1] in _SYNC_POINTS:
                    break
                k -= 1
            if burst[k] > burst[best]:
                best = k
            before = site[best - 1] if best > 0 and stream[best - 1] == stream[best] else "MPI_Init"
            key = (before, site[best], int(phase[best]))
            votes[key] = votes.get(key, 0.0) + lost / len(calls)
    if not votes:
        return None
    before, after, k = max(votes, key=votes.get)
    where = (
        f"the work before each {after} (from the previous one)"
        if before == after
        else f"the work between {before} and {after}"
    )
    if is_mark.any():  # the program marked phases (MPI_Pcontrol): name the culprit's
        marker = stream[np.flatnonzero(is_mark)[0]]  # the first thread that marked
        bounds = ["MPI_Init"] + [site[i] for i in np.flatnonzero(is_mark & (stream == marker))]
        bounds.append("MPI_Finalize")
        if k + 1 < len(bounds):
            where += f", in phase {k} ({bounds[k]} .. {bounds[k + 1]})"
    return where


#: Calls that end a culprit's way back: it had synchronised there.
_SYNC_POINTS = frozenset(
    {
        "MPI_Barrier",
        "MPI_Allreduce",
        "MPI_Waitall",
        "MPI_Wait",
        "MPI_Recv",
        "MPI_Sendrecv",
        "MPI_Bcast",
        "MPI_Reduce",
        "MPI_Allgather",
        "MPI_Alltoall",
        "MPI_Gather",
        "MPI_Scatter",
    }
)


def _ranks_text(ranks, word="rank"):
    ranks = list(ranks)
    if not ranks:
        return "no rank"
    if len(ranks) > 6:
        return f"{len(ranks)} {word}s ({', '.join(map(str, ranks[:3]))}, ... {ranks[-1]})"
    if len(ranks) == 1:
        return f"{word} {ranks[0]}"
    return f"{word}s {', '.join(map(str, ranks[:-1]))} and {ranks[-1]}"


def _verb(verb, ranks):
    return verb + "s" if len(list(ranks)) == 1 else verb


def _at(f):
    return f"{f.waiting_function}" + (f" at {f.callsite}" if f.callsite else "")


def _predict_wait_fix(ctx, f, ws, keys, imbalance):
    """Fill the finding's fix, region and predicted saving (a replay with the fix):
    an imbalance (``imbalance``) by balancing all work, a late or early root of a rank
    that is not overloaded by balancing the work before those collectives only."""
    culprits = _ranks_text(f.culprit_ranks)
    if f.kind in BALANCE_KINDS:
        f.region = _region_of_culprit(ctx, f, ws, keys)
        if imbalance:
            _predict(ctx, f, balance=True)
            _overloaded, gap = ctx.overloaded()
            f.evidence["work_over_mean_s"] = gap
            f.basis = (
                "replay of the trace with every rank's work between its MPI calls set to "
                "the mean over ranks (step by step: between collectives where the ranks' "
                f"calls differ); the most loaded rank works {format_seconds(gap)} more "
                "than the mean over the whole run, which is what balancing saves where "
                "every step is alike (and what is predicted without a trace)"
            )
        else:
            waiting = ws.waits.loc[ws.waits["key"].isin(keys), "call"]
            _predict(ctx, f, burst_scale=_local_balance(ctx, waiting))
            f.basis = (
                "replay of the trace with the work just before each of these collectives "
                "set to its members' mean"
            )
        work = _work_ratio(ctx, f.culprit_ranks)
        if f.kind == "load_imbalance":
            f.fix = (
                f"Move work from {culprits} to the others ({work}): with the work "
                f"balanced the others stop waiting in {_at(f)}."
            )
        elif f.kind in ("late_broadcast", "late_scatter"):
            op = "MPI_Ibcast" if f.kind == "late_broadcast" else "MPI_Iscatter"
            f.fix = (
                f"The root ({culprits}) enters {_at(f)} late after work the others do not "
                f"share ({work}): split that preparation among the ranks, or overlap it with {op}."
            )
        else:
            op = "MPI_Ireduce" if f.kind == "early_reduce" else "MPI_Igather"
            f.fix = (
                f"The root ({_ranks_text(f.waiting_ranks)}) enters {_at(f)} early and waits "
                f"for {culprits}: give it a share of their work, or let it work on with {op}."
            )
        return
    calls = _waiting_calls(ws, keys)
    if f.kind == "wait_at_collective":
        _predict_no_wait(ctx, f, calls)
        f.basis = (
            "replay of the trace with this collective no longer waiting for the last "
            "rank (every call of it returns after its own cost)"
        )
        f.fix = (
            f"The ranks reach {_at(f)} at different times and a different rank is last "
            f"each time ({culprits} in turn): there is no one culprit to balance. If this "
            "synchronisation is not needed, remove it; else synchronise less often or use "
            "the nonblocking form and wait later."
        )
    elif f.kind == "late_sender":
        _predict_no_wait(ctx, f, calls)
        f.basis = "replay of the trace with these receives finding their messages already sent"
        partner = _partner_site(ctx, calls)
        f.fix = (
            f"{_ranks_text(f.waiting_ranks).capitalize()} {_verb('wait', f.waiting_ranks)} in {_at(f)} for {culprits}, "
            f"whose send{' at ' + partner if partner else ''} comes after work that does "
            "not produce the message: send as soon as the data is ready (before the "
            "independent work)."
        )
    elif f.kind == "late_receiver":
        _predict_no_wait(ctx, f, calls)
        f.basis = "replay of the trace with these sends no longer waiting for their receives"
        f.fix = (
            f"{_ranks_text(f.waiting_ranks).capitalize()}'s {_at(f)} waits until {culprits} "
            "posts the receive: complete the send later (MPI_Issend/MPI_Isend, then "
            "MPI_Wait after the independent work), or post the receive earlier (MPI_Irecv)."
        )
        _without_progress(ctx, f, calls)
    elif f.kind == "wrong_order":
        scale = _wrong_order_scale(ctx, ws, keys)
        _predict(ctx, f, burst_scale=scale)
        f.basis = (
            "replay of the trace with the work after each such receive done during the "
            "wait instead (up to the time the earlier message waited)"
        )
        f.fix = (
            f"{_ranks_text(f.waiting_ranks).capitalize()} {_verb('wait', f.waiting_ranks)} in {_at(f)} for {culprits} "
            "while another message is already there: receive in arrival order "
            "(MPI_ANY_SOURCE, or MPI_Irecv for all and MPI_Waitany) and handle each as it comes."
        )


def _waiting_calls(ws, keys):
    """The calls that waited in ``keys``' waits, less those whose wait is partly of
    another kind (a late-sender receive that is also in the wrong order): not waiting
    at all would remove that part too."""
    w = ws.waits
    mine = set(w.loc[w["key"].isin(keys), "call"].astype(int))
    others = set(w.loc[~w["key"].isin(keys), "call"].astype(int))
    return mine - others


def _local_balance(ctx, waiting_calls):
    """{entry call: factor}: the members' work just before each collective instance
    the waiting calls belong to becomes the instance's mean."""
    rp = ctx.rp
    scale = {}
    for c in set(int(x) for x in waiting_calls):
        got = rp.coll.get(c)
        if got is None:
            continue
        entries = [e for _r, e, _root in rp.instance_entries[got[0]]]
        mean = float(np.mean(rp.burst[entries]))
        for e in entries:
            if rp.burst[e] > 0:
                scale[e] = mean / rp.burst[e]
    return scale


def _without_progress(ctx, f, calls):
    """The late-receiver fixes this MPI's progress makes work, from its progress probe
    (``bench progress`` in the machine model): MPI_Isend and waiting later helps where a
    message moves while its receiver is inside MPI and the sender computes (the probe's
    polling receiver); posting the receive earlier where it moves while the receiver
    computes (its idle receiver).  Neither: the replay's saving cannot be had."""
    from ..models import progress

    if ctx.machine_model is None or not calls:
        return
    size = max(float(np.median(ctx.tl.calls.loc[sorted(calls), "bytes"])), 1.0)
    try:
        polling = progress.overlaps(ctx.machine_model, size, "isend", receiver="polling")
        idle = progress.overlaps(ctx.machine_model, size, "isend", receiver="idle")
    except ValueError:
        return
    if polling is None or idle is None:
        return
    f.evidence["progress_overlap"] = {"receiver_in_mpi": polling, "receiver_computing": idle}
    who = f"{_ranks_text(f.waiting_ranks).capitalize()}'s {_at(f)} waits until "
    who += f"{_ranks_text(f.culprit_ranks)} posts the receive"
    size_text = format_bytes(size)
    if polling > progress.STALLS and idle <= progress.STALLS:
        f.fix = (
            f"{who}: complete the send later (MPI_Issend/MPI_Isend, then MPI_Wait after the "
            "independent work). Posting the receive earlier alone saves nothing here: this "
            f"MPI moves a {size_text} message only while the receiver is inside an MPI call "
            f"({100 * idle:.0f} % of it while it computes, this machine's progress probe)."
        )
    elif polling <= progress.STALLS and idle <= progress.STALLS:
        f.evidence["replayed_saving_s"] = f.predicted_saving_s
        f.predicted_saving_s = 0.0
        f.basis = (
            f"this MPI's progress probe: a {size_text} message moves only while both ranks "
            "are inside MPI calls, so the send waits for the receiver however it is written"
        )
        f.fix = (
            f"{who}, and this MPI moves such a message only while both ranks are inside MPI "
            "calls: MPI_Isend or an earlier receive saves nothing here. Let the ranks call "
            "MPI_Test during their work, or run MPI with a progress thread (MPICH: "
            "MPIR_CVAR_ASYNC_PROGRESS=1, given a free core)."
        )


def _work_ratio(ctx, culprits):
    if ctx.useful is None or not culprits:
        return "its share of the work is unknown"
    u = ctx.useful.set_index("rank")["useful_s"]
    mine = u.reindex(culprits).mean()
    others = u.drop(index=culprits, errors="ignore")
    if not len(others) or others.mean() <= 0:
        return f"{format_seconds(mine)} of work each"
    return f"{mine / others.mean():.1f}x the others' work: {format_seconds(mine)} against {format_seconds(others.mean())}"


def _partner_site(ctx, calls):
    lk = ctx.tl.links
    p = lk.loc[lk["call"].isin(calls), "partner"]
    sites = ctx.tl.calls.loc[p, "callsite"].dropna()
    return sites.mode().iloc[0] if len(sites) else None


def _wrong_order_scale(ctx, ws, keys):
    """{next call: factor}: the work after each wrong-order receive shrinks by the part
    of the wait that an already-sent message could have used."""
    w = ws.waits[ws.waits["key"].isin(keys)]
    c = ctx.tl.calls
    burst = ctx.rp.burst
    scale = {}
    for call, lost in zip(w["call"].to_numpy(), w["lost_s"].to_numpy()):
        nxt = call + 1
        if nxt < len(c) and c["stream"].iat[nxt] == c["stream"].iat[call] and burst[nxt] > 0:
            scale[int(nxt)] = max(burst[nxt] - lost, 0.0) / burst[nxt]
    return scale


# ---- CPU contention ------------------------------------------------------------------------


def _cpu_record(profile):
    """(per rank, per node) CPU contention as the profiler measured it, or (None, None)
    for a run recorded without it."""
    from ..collect import cpu

    ranks = cpu.rank_cpu(profile)
    return ranks, (cpu.node_load(profile) if ranks is not None else None)


def _contention_findings(ctx):
    """Time the ranks waited for a core, and the waits that explains (contention.py)."""
    r = ctx.rank_cpu
    if r is None or not r["measured"].any():
        return []
    own = (r["cpu_wait_s"] / r["threads"].clip(lower=1)).fillna(0.0)
    own.index = r["rank"].to_numpy()
    if ctx.cpu is not None:  # the waits inside the traced window, per call
        c = ctx.tl.calls
        waited = pd.Series(ctx.cpu[0] + ctx.cpu[1]).groupby([c["rank"], c["thread"]]).sum()
        own = waited.groupby(level=0).mean().reindex(own.index, fill_value=0.0)
    absorbed = ctx.absorbed_s_by_rank
    lost = (float(own.sum()) + sum(absorbed.values())) / ctx.nranks
    if lost <= 0:
        return []
    hosts, where = cnt.where(ctx.nodes, r)
    culprits = sorted(int(k) for k, v in own.items() if v >= 0.25 * own.max() and v > 0)
    waiting = sorted(int(k) for k, v in absorbed.items() if v > 0) or culprits
    f = Finding(
        kind="cpu_contention",
        culprit_ranks=culprits,
        waiting_ranks=waiting,
        waiting_function=None,
        callsite=None,
        region=where or None,
        lost_s=lost,
        share_of_runtime=lost / ctx.runtime,
        fix=cnt.fix_text(ctx.nodes, hosts, f"{100 * lost / ctx.runtime:.0f} %"),
        predicted_saving_s=float(own.mean()),
        basis="the CPU wait the profiler measured per rank (runnable, no core free), "
        "the mean over ranks, taken as time the work was delayed; no trace, so neither "
        "a replay nor a check that the work really took longer (work that spins to a "
        "deadline does not)",
        evidence={
            "lost_s_by_rank": {
                str(k): float(v) + absorbed.get(int(k), 0.0) for k, v in own.items()
            },
            "cpu_wait_s_by_rank": {str(k): float(v) for k, v in own.items()},
            "waits_explained_s_by_rank": {str(k): float(v) for k, v in sorted(absorbed.items())},
            "nodes": ctx.nodes.to_dict("records") if ctx.nodes is not None else [],
        },
    )
    if ctx.idle is not None:
        f.predicted_saving_s = max(ctx.base.runtime_s - ctx.idle_runtime_s, 0.0)
        f.basis = (
            "replay of the trace with every burst of work and every call less the CPU "
            "wait measured in it (a core for every thread)"
        )
    return [f]


# ---- without a trace: load imbalance from the useful times -----------------------------


def _imbalance_without_trace(ctx):
    culprits, gap = ctx.overloaded()
    if not culprits:
        return []
    u = ctx.useful.set_index("rank")["useful_s"]
    waiting = sorted(int(r) for r in u.index if r not in culprits)
    fn, site = _where_others_wait(ctx.profile, culprits, waiting)
    f = Finding(
        kind="load_imbalance",
        culprit_ranks=culprits,
        waiting_ranks=waiting,
        waiting_function=fn,
        callsite=site,
        region=None,
        lost_s=gap,
        share_of_runtime=gap / ctx.runtime,
        fix="",
        predicted_saving_s=gap,
        basis="measured work per rank (time outside MPI): the slowest rank's minus the "
        "mean; no trace, so no replay",
        evidence={"useful_s_by_rank": {str(int(r)): float(v) for r, v in u.items()}},
    )
    f.fix = (
        f"Move work from {_ranks_text(culprits)} to the others ({_work_ratio(ctx, culprits)}): "
        f"balanced, the others stop waiting" + (f" in {_at(f)}." if fn else ".")
    )
    return [f]


def _where_others_wait(profile, culprits, waiting):
    """The function (and call site) where the waiting ranks spend the most time more
    than the culprits do."""
    fun = profile.functions
    if fun is None or not len(fun) or fun["time_s"].isna().all():
        return None, None
    t = fun.groupby(["rank", "function"])["time_s"].sum().unstack(fill_value=0.0)
    diff = t.reindex(waiting).mean() - t.reindex(culprits).mean()
    fn = str(diff.idxmax()) if len(diff) and diff.max() > 0 else None
    site = None
    cs = profile.callsites
    if fn and cs is not None and len(cs) and cs["time_s"].notna().any():
        c = cs[cs["function"] == fn].copy()
        c["site"] = [
            f"{os.path.basename(f)}:{int(n)}" if isinstance(f, str) and f and n == n else None
            for f, n in zip(c["file"], c["line"])
        ]
        c = c.dropna(subset=["site"])
        if len(c):
            per = c.groupby(["rank", "site"])["time_s"].sum().unstack(fill_value=0.0)
            d = per.reindex(waiting).mean() - per.reindex(culprits).mean()
            site = str(d.idxmax()) if len(d) and d.notna().any() else None
    return fn, site


# ---- small messages ------------------------------------------------------------------------


def _small_message_findings(ctx):
    """Runs of small sends to one peer, one after another, at one call site."""
    tl = ctx.tl
    c = tl.calls
    lk = tl.links[tl.links["kind"] == "message"]
    if not len(lk):
        return []
    sends = pd.DataFrame(
        {
            "send": lk["partner"].to_numpy(),
            "recv": lk["call"].to_numpy(),
            "dst": lk["dst"].to_numpy(),
            "bytes": lk["bytes"].to_numpy(),
        }
    )
    sends = sends[sends["bytes"] <= SMALL_BYTES].sort_values("send")
    if not len(sends):
        return []
    s = sends["send"].to_numpy()
    stream = c["stream"].to_numpy()[s]
    burst = ctx.rp.burst[s]
    site = c["callsite"].to_numpy()[s]
    fn = c["function"].to_numpy()[s]
    # a run continues while the next send is the next call of the same stream, to the
    # same peer, from the same place, after no work
    same = np.r_[
        False,
        (stream[1:] == stream[:-1])
        & (s[1:] == s[:-1] + 1)
        & (sends["dst"].to_numpy()[1:] == sends["dst"].to_numpy()[:-1])
        & (fn[1:] == fn[:-1])
        & (burst[1:] <= SMALL_GAP_S)
        & np.array([a == b for a, b in zip(site[1:], site[:-1])], bool),
    ]
    run_id = np.cumsum(~same)
    sends["run"] = run_id
    sizes = sends.groupby("run")["send"].transform("size").to_numpy()
    runs = sends[sizes >= SMALL_RUN]
    if not len(runs):
        return []
    runs = runs.assign(
        src=c["rank"].to_numpy()[runs["send"].to_numpy()],
        site=c["callsite"].to_numpy()[runs["send"].to_numpy()],
        function=c["function"].to_numpy()[runs["send"].to_numpy()],
    )
    out = []
    keyed = runs.assign(site=runs["site"].fillna(runs["function"]))
    for (src, dst, site_key, fn_), g in keyed.groupby(["src", "dst", "site", "function"]):
        # the merged replay: every message of a run but the last costs nothing, the work
        # between them (loop overhead) goes, and the last costs what such a call needs
        cost_scale, burst_scale, spared = {}, {}, set()
        measured = ctx.rp.cost
        for _, r in g.groupby("run"):
            sc = r["send"].to_numpy()
            rc = pd.unique(r["recv"].to_numpy())  # a Waitall may complete many
            for seq in (sc, rc):
                for x in seq[:-1].tolist():
                    cost_scale[int(x)] = 0.0
                    spared.add(int(x))
                for x in seq[1:].tolist():
                    burst_scale[int(x)] = 0.0
                last = int(seq[-1])
                typical = float(np.median(measured[seq]))
                cost_scale[last] = typical / measured[last] if measured[last] > 0 else 1.0
        spared = sorted(spared)
        spent = float((c["end_s"].to_numpy()[spared] - c["start_s"].to_numpy()[spared]).sum())
        n, nruns = len(g), g["run"].nunique()
        recv_fn = c["function"].to_numpy()[g["recv"].to_numpy()]
        alpha = _latency_s(ctx, src, dst, float(g["bytes"].mean()))
        model = (
            f"; the postal model's latency says {format_seconds((n - nruns) * alpha)}"
            if alpha
            else ""
        )
        f = Finding(
            kind="small_messages",
            culprit_ranks=[int(src)],
            waiting_ranks=[int(dst)],
            waiting_function=str(pd.Series(recv_fn).mode().iloc[0]),
            callsite=site_key if site_key != fn_ else None,
            region=None,
            lost_s=spent / ctx.nranks,
            share_of_runtime=spent / ctx.nranks / ctx.runtime,
            fix=(
                f"Rank {src} sends {n:,} messages of {format_bytes(float(g['bytes'].mean()))} "
                f"to rank {dst} in {nruns:,} runs of {n / nruns:.0f} back to back"
                f"{' at ' + site_key if site_key != fn_ else ''}: pack each run into one "
                "message (one MPI_Send of the whole buffer, or a derived datatype)."
            ),
            predicted_saving_s=None,
            basis=(
                "replay of the trace with each run sent as one message (the runs' "
                "other messages cost nothing)" + model
            ),
            evidence={
                "messages": n,
                "runs": int(nruns),
                "bytes_per_message": float(g["bytes"].mean()),
                "time_in_spared_calls_s": spent,
                "send_function": str(fn_),
            },
        )
        _predict(ctx, f, cost_scale=cost_scale, burst_scale=burst_scale)
        out.append(f)
    return out


def _latency_s(ctx, src, dst, nbytes):
    """The latency term of one such message (models.message_time), which merging spares;
    None without a machine model or its parameters for that locality."""
    if ctx.machine_model is None:
        return None
    from ..models.message_time import message_time

    where = rpl.pair_locality(ctx.tl.host_of or {}, src, dst)
    try:
        return float(message_time(ctx.machine_model, nbytes, where).alpha_s[0])
    except InputError:
        return None


# ---- OpenMP threads -----------------------------------------------------------------------


def _thread_findings(ctx):
    inst = eff.region_instances(ctx.profile.threads)
    inst = inst[inst["threads"] > 1]
    if not len(inst):
        return []
    inst = inst.assign(idle_s=inst["max_busy_s"] - inst["mean_busy_s"])
    out = []
    for region, g in inst.groupby("region"):
        per_rank = g.groupby("rank")["idle_s"].sum()
        lost = float(per_rank.sum() / ctx.nranks)
        if lost <= 0:
            continue
        slow = g["slowest_thread"].mode().iloc[0]
        culprits = sorted(int(r) for r, v in per_rank.items() if v >= 0.5 * per_rank.max())
        f = Finding(
            kind="thread_imbalance",
            culprit_ranks=culprits,
            waiting_ranks=culprits,
            waiting_function=None,
            callsite=str(region),
            region=str(region),
            lost_s=lost,
            share_of_runtime=lost / ctx.runtime,
            fix="",
            predicted_saving_s=None,
            basis="",
            evidence={
                "instances": int(len(g)),
                "slowest_thread": int(slow),
                "mean_busy_s": float(g["mean_busy_s"].mean()),
                "max_busy_s": float(g["max_busy_s"].mean()),
            },
        )
        f.fix = (
            f"The threads of the OpenMP region at {region} finish up to "
            f"{format_seconds(float(g['idle_s'].mean()))} apart per instance (thread {slow} "
            f"last; busy {format_seconds(float(g['max_busy_s'].mean()))} against a mean of "
            f"{format_seconds(float(g['mean_busy_s'].mean()))}): balance the loop "
            "(schedule(dynamic) or an even split of the work)."
        )
        if ctx.tl is not None:
            _predict(ctx, f, burst_scale=_thread_scale(ctx, g))
            f.basis = (
                "replay of the trace with each instance's work cut from its slowest "
                "thread's to its threads' mean"
            )
        else:
            f.predicted_saving_s = float(per_rank.max())
            f.basis = (
                "measured thread busy times: the slowest thread's minus the mean, "
                "summed over instances (no trace, so no replay)"
            )
        _early_bird(ctx, f, region)
        out.append(f)
    return out


def _thread_scale(ctx, g):
    """{call: factor}: the burst holding each region instance (on its rank's first
    stream) shrinks by the instance's slowest-minus-mean busy time."""
    threads = ctx.profile.threads
    t0 = threads.groupby("rank")["rank_t0_ns"].first()
    c = ctx.tl.calls
    burst = ctx.rp.burst
    trace_t0 = getattr(ctx.tl, "t0_ns", None)
    if trace_t0 is None:
        return {}
    cut = {}
    for rank, gi in g.groupby("rank"):
        mine = c[(c["rank"] == rank) & (c["thread"] == c.loc[c["rank"] == rank, "thread"].min())]
        if not len(mine):
            continue
        starts = mine["start_s"].to_numpy()
        ends = (gi["end_s"].to_numpy() * 1e9 + t0[rank] - trace_t0) / 1e9
        k = np.searchsorted(starts, ends, side="left")
        ok = k < len(mine)
        for call, idle in zip(mine.index.to_numpy()[k[ok]], gi["idle_s"].to_numpy()[ok]):
            cut[int(call)] = cut.get(int(call), 0.0) + float(idle)
    return {c_: max(burst[c_] - v, 0.0) / burst[c_] for c_, v in cut.items() if burst[c_] > 0}


def _early_bird(ctx, f, region):
    """Where partitioned sends after the region would pay off, the advisor's prediction
    becomes the finding's alternative fix."""
    try:
        from ..predict import earlybird as eb

        link, _ = eb.link_for(ctx.profile.run, machine_model=ctx.machine_model or "bluewaters")
        table = eb.advise(ctx.profile.run, link, replicas=500)
    except (InputError, ValueError, KeyError):
        return
    row = table[table["region"] == region]
    if len(row) and bool(row["worth_changing"].iloc[0]):
        r = row.iloc[0]
        f.fix += (
            f" Or send each thread's part as it finishes (MPI_Psend_init/MPI_Pready): "
            f"the early-bird advisor predicts {format_seconds(float(r['saving_s']))} per "
            f"instance over {int(r['instances'])} instances"
            + (f" ({r['progress_note']})." if r["progress_note"] else ".")
        )
        f.evidence["early_bird_saving_per_instance_s"] = float(r["saving_s"])
    elif len(row) and row["saving_s"].iloc[0] <= 0 < row["saving_mc_s"].iloc[0]:
        f.evidence["early_bird"] = row["progress_note"].iloc[0]


# ---- matching queues -------------------------------------------------------------------------


def _queue_findings(ctx, trace):
    """Receives searched deep into the posted queue (or messages deep into the
    unexpected queue): the trace replayed through the MPI's matching engine
    (:mod:`commscope.matching.queue_replay`), each entry searched beyond the first costing the
    machine model's queue-search time."""
    from ..matching.queue_replay import replay as queue_replay

    engine = (
        "mpich"
        if "mpich" in str(ctx.profile.meta.get("mpi", {}).get("library_version", "")).lower()
        else "ob1"
    )
    try:
        results, summary, _ = queue_replay(trace, engines=(engine,))
    except InputError:
        return [], None
    if not len(summary):
        return [], None
    summary = summary.assign(excess=summary["searched"] - summary["messages"] - summary["receives"])
    deep = summary[summary["excess"] > 0]
    if not len(deep):
        return [], None
    gamma = getattr(ctx.machine_model, "gamma_s", None) if ctx.machine_model is not None else None
    if gamma is None:
        worst = deep.sort_values("excess").iloc[-1]
        return [], (
            f"queue search not costed: rank {int(worst['rank'])} searched "
            f"{int(worst['excess']):,} queue entries beyond the first per match; a machine "
            "model with the queue-search cost (--machine-model; commscope bench hvpingpong, "
            "then fit) turns that into time"
        )
    from ..models.p2p import fitted_gamma_per_entry

    per_entry = fitted_gamma_per_entry(gamma)
    out = []
    c = ctx.tl.calls
    for row in deep.itertuples(index=False):
        lost_rank = float(row.excess * per_entry)
        if lost_rank <= 0:
            continue
        # the search happens in the calls that complete this rank's receives
        lk = ctx.tl.links
        done = lk.loc[(lk["kind"] == "message") & (lk["dst"] == row.rank), "call"].unique()
        fn = c.loc[done, "function"].mode()
        site = c.loc[done, "callsite"].dropna().mode()
        senders = sorted(
            set(lk.loc[(lk["kind"] == "message") & (lk["dst"] == row.rank), "src"].astype(int))
        )
        f = Finding(
            kind="queue_search",
            # the order of the sends and that of the posted receives differ: either side fixes it
            culprit_ranks=sorted(set(senders) | {int(row.rank)}),
            waiting_ranks=[int(row.rank)],
            waiting_function=str(fn.iloc[0]) if len(fn) else None,
            callsite=str(site.iloc[0]) if len(site) else None,
            region=None,
            lost_s=lost_rank / ctx.nranks,
            share_of_runtime=lost_rank / ctx.nranks / ctx.runtime,
            fix=(
                f"Rank {int(row.rank)}'s messages arrive in another order than its receives "
                f"were posted (mean search depth {row.prq_avg_depth:.0f}, up to "
                f"{int(row.prq_max_depth):,} entries): rank {int(row.rank)} posts the "
                f"receives in the order {_ranks_text(senders)} {_verb('send', senders)} "
                "(or the senders send in the posted order), or tells them apart by "
                "communicator or source rather than by tag alone."
            ),
            predicted_saving_s=lost_rank,
            basis=(
                f"the trace's receives replayed through the {engine} matching engine: "
                f"{int(row.excess):,} entries searched beyond the first, at 2 x gamma = "
                f"{format_seconds(per_entry)} each (the machine model's queue-search "
                "cost): the receiver's search time, which the run saves where the "
                "receiver is the slower side"
            ),
            evidence={
                "messages": int(row.messages),
                "searched_entries": int(row.searched),
                "mean_depth": float(row.prq_avg_depth),
                "max_depth": int(row.prq_max_depth),
                "engine": engine,
            },
        )
        out.append(f)
    return out, None


def _absorb_search_waits(findings):
    """A receiver that searches long queues also waits for messages its slow matching
    held up at the sender (flow control): the late-sender waits in the calls where it
    searches are the queue search's, and go with its finding."""
    searches = [f for f in findings if f.kind == "queue_search"]
    out = []
    for f in findings:
        host = next(
            (
                q
                for q in searches
                if f.kind in ("late_sender", "wrong_order")
                and f.waiting_function == q.waiting_function
                and f.callsite == q.callsite
                and set(f.waiting_ranks) <= set(q.waiting_ranks)
            ),
            None,
        )
        if host is None:
            out.append(f)
            continue
        host.lost_s += f.lost_s
        host.share_of_runtime += f.share_of_runtime
        host.evidence["waits_held_up_by_the_search_s"] = host.evidence.get(
            "waits_held_up_by_the_search_s", 0.0
        ) + f.lost_s * len(host.waiting_ranks)
    return out


# ---- threads sharing a communicator -----------------------------------------------------------


def _shared_comm_findings(ctx, multirate):
    """Threads of one rank making point-to-point calls on one communicator at the same
    time; costed with this machine's multirate ratio (rate per thread with one shared
    communicator over one per thread) at that thread count."""
    c = ctx.tl.calls
    p2p = c[c["function"].isin(_P2P) & c["comm"].notna()]
    if not len(p2p):
        return [], None
    per = p2p.groupby(["rank", "comm"]).agg(
        threads=("thread", "nunique"), first=("start_s", "min"), last=("end_s", "max")
    )
    shared = per[per["threads"] > 1]
    if not len(shared):
        return [], None
    threads = int(shared["threads"].max())
    ratio = _multirate_ratio(multirate, threads)
    ranks = sorted({int(r) for r, _ in shared.index})
    if ratio is None:
        return [], (
            f"{_ranks_text(ranks).capitalize()} {_verb('make', ranks)} point-to-point calls "
            f"from {threads} threads on one communicator; whether a communicator per "
            "thread is faster here is measured by `commscope bench multirate` (give the "
            "run with --multirate)"
        )
    if ratio >= 0.95:
        return [], (
            f"threads share a communicator on {_ranks_text(ranks)}, but this machine's "
            f"multirate run measured no gain from one per thread at {threads} threads "
            f"(shared / per-thread rate {ratio:.2f})"
        )
    mine = p2p[p2p["rank"].isin(ranks)]
    spent = float((mine["end_s"] - mine["start_s"]).sum())
    per_rank = (mine["end_s"] - mine["start_s"]).groupby(mine["rank"]).sum() / threads
    lost = float(per_rank.sum() * (1 - ratio))
    f = Finding(
        kind="shared_communicator",
        culprit_ranks=ranks,
        waiting_ranks=ranks,
        waiting_function=str(mine["function"].mode().iloc[0]),
        callsite=(
            str(mine["callsite"].dropna().mode().iloc[0])
            if mine["callsite"].notna().any()
            else None
        ),
        region=None,
        lost_s=lost / ctx.nranks,
        share_of_runtime=lost / ctx.nranks / ctx.runtime,
        fix=(
            f"{threads} threads per rank send and receive on one communicator: give "
            "each thread its own (MPI_Comm_dup once per thread) so their messages are "
            f"matched apart; this machine's multirate run measured {1 / ratio:.2f}x the "
            f"rate per thread that way at {threads} threads."
        ),
        predicted_saving_s=None,
        basis=(
            f"replay of the trace with the threads' point-to-point calls taking "
            f"{ratio:.2f} of their time (the multirate ratio at {threads} threads)"
        ),
        evidence={"threads": threads, "shared_over_per_thread": ratio, "time_in_calls_s": spent},
    )
    _predict(ctx, f, cost_scale={int(x): ratio for x in mine.index})
    return [f], None


_P2P = frozenset(
    {
        "MPI_Send",
        "MPI_Isend",
        "MPI_Recv",
        "MPI_Irecv",
        "MPI_Wait",
        "MPI_Waitall",
        "MPI_Waitany",
        "MPI_Waitsome",
        "MPI_Test",
        "MPI_Testall",
        "MPI_Ssend",
        "MPI_Sendrecv",
        "MPI_Issend",
        "MPI_Rsend",
        "MPI_Irsend",
        "MPI_Bsend",
    }
)


def _multirate_ratio(run, threads):
    """The multirate run's paired shared / per-thread ratio at ``threads`` (the nearest
    thread count it measured at or below), or None."""
    if run is None:
        return None
    from ..bench.multirate import mode_ratio

    table = mode_ratio(run.table("reps"))
    table = table[table["threads"] <= threads].dropna(subset=["shared_over_per_thread"])
    if not len(table):
        return None
    return float(table.sort_values("threads")["shared_over_per_thread"].iloc[-1])


def replay_error_text(replay):
    if not replay or replay.get("error_pct") is None or not math.isfinite(replay["error_pct"]):
        return None
    return (
        f"the unchanged replay gives {format_seconds(replay['unchanged_s'])} for a measured "
        f"{format_seconds(replay['measured_s'])} ({replay['error_pct']:+.1f} %)"
    )
