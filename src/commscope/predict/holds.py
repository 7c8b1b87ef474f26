"""Do the models hold here? Each model's prediction of this machine's runs, judged.

For the runs of a study (or any run directories) and a machine model, one row per
model: what it predicted, what was measured, the ratio measured / predicted (median
and worst over the points compared) and a one-line verdict with its reason.

=====================  ===================================  ==========================
model                  measured (runs)                      predicted by
=====================  ===================================  ==========================
postal, per protocol   ping-pong, 1 pair                    ``alpha + beta s`` (004 eq. 1),
                                                            ``message_time(...).postal_s``
max-rate               ping-pong, 2+ concurrent pairs       004 eq. 2 with R_N, ``message_time``
node-aware             every ping-pong run, per locality    :func:`models.message_time.message_time`
queue search           HighVolumePingPong, per order        :func:`models.p2p.hvpingpong_time`
contention             HighVolumePingPong ``--contention``  + ``delta 2 h^3 b ppn`` (eqs. 5, 7)
stencil counts         mtmatch: messages matched, threads,  :func:`models.stencil.stencil_counts`
                       ob1's posted-receive queue (MPI_T)
partitioned            partitioned                          :func:`predict.partitioned.predict_partitioned`
variability, per kind  bsp at 2+ scales                     :func:`predict.variability.predict_variability`
=====================  ===================================  ==========================

The models are called only through those public functions, so a better model shows
here with no change to this module.

Verdicts (:func:`judge`; the thresholds are :data:`HOLDS_MEDIAN`, :data:`HOLDS_WORST`,
:data:`WITHIN_WORST`, documented in docs/holds.md). A point's factor is
max(ratio, 1/ratio):

* ``holds``: median factor <= 1.25 and every point's factor <= 1.5 (counts: equal);
* ``holds within X``: every point within X = the worst factor, X <= 4;
* ``does not hold``: some point more than 4x off (counts: any differs);
* ``not tested here``: nothing these runs can judge (no run of that kind, a term the
  machine model lacks, every run oversubscribed, one node for a multi-node model).

Points of oversubscribed runs (more ranks x threads than cores) are shown but never
judged: their times include time-slicing, which no model here describes. A point
measured by a run the machine model was fitted from is a fit residual, not a
prediction: its reason says "in-sample".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..models import p2p
from ..models.message_time import message_time
from ..models.machine_model import terms_fitted_from
from ..models.stencil import stencil_counts
from ..runs import Run, expand_run_paths, open_run
from .pingpong_medians import pingpong_medians
from ..units import format_bytes, format_number, format_seconds
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

#: "holds": the median point within this factor of the model ...
HOLDS_MEDIAN = 1.25
#: ... and every point within this factor (the partitioned goal of issue 26: 25 % / 50 %).
HOLDS_WORST = 1.5
#: "holds within X" up to this worst factor; beyond it "does not hold".
WITHIN_WORST = 4.0
#: Bootstrap / Monte-Carlo replicas of the predictions made here (seeded, quick).
REPLICAS = 2000
SEED = 0

NOT_TESTED = "not tested here"
MODELS = (
    "postal",
    "max-rate",
    "node-aware",
    "queue search",
    "contention",
    "stencil counts",
    "partitioned",
    "variability",
)


# --- verdicts -----------------------------------------------------------------------------


def factor(ratio):
    """How far a ratio is from 1, either way: max(r, 1/r)."""
    return max(ratio, 1.0 / ratio)


def judge(ratios, exact=False):
    """``(verdict, median ratio, worst ratio)`` of measured/predicted ratios.

    ``exact`` (counts): "holds" only when every ratio is 1, else "does not hold".
    No ratios: "not tested here" and None, None.
    """
    r = [float(x) for x in ratios if x is not None and math.isfinite(x) and x > 0]
    if not r:
        return NOT_TESTED, None, None
    med = float(np.median(r))
    worst = max(r, key=factor)
    if exact:
        return ("holds" if all(x == 1 for x in r) else "does not hold"), med, worst
    if factor(med) <= HOLDS_MEDIAN and factor(worst) <= HOLDS_WORST:
        return "holds", med, worst
    if factor(worst) <= WITHIN_WORST:
        return f"holds within {_x(factor(worst))}", med, worst
    return "does not hold", med, worst


@dataclass
class Point:
    """One compared point: where, the model's value and the measured one."""

    at: str  # "4 MiB", "n = 1,000", "2x2x2 M_t"
    x: float  # position along the sweep (for "beyond ..." reasons)
    predicted: float
    measured: float
    unit: str = "s"  # "s" or "messages"
    excluded: str | None = None  # why not judged (oversubscribed)

    @property
    def ratio(self):
        if self.predicted > 0 and self.measured > 0:
            return self.measured / self.predicted
        return 1.0 if self.predicted == self.measured else math.nan

    def to_dict(self):
        key = "_s" if self.unit == "s" else "_messages"
        return {
            "at": self.at,
            f"predicted{key}": self.predicted,
            f"measured{key}": self.measured,
            "ratio": self.ratio,
            "judged": self.excluded is None,
            "excluded": self.excluded,
        }


@dataclass
class Check:
    """One row of the table: a model, the points it was compared at, and why."""

    model: str
    paper: str
    runs: list = field(default_factory=list)
    points: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # clauses of the reason, in order
    untested: str | None = None  # why nothing could be compared
    exact: bool = False  # counts: equal or not
    extra_fail: str | None = None  # a failed check beside the ratios
    trend: bool = True  # points lie along a sweep (sizes, n)

    def row(self):
        judged = [p for p in self.points if p.excluded is None]
        verdict, med, worst = judge([p.ratio for p in judged], self.exact)
        reason = list(self.notes)
        if self.untested:
            verdict, reason = NOT_TESTED, [self.untested] + reason
        elif not judged and self.points:
            excl = list(dict.fromkeys(p.excluded for p in self.points))
            _, m_all, _ = judge([p.ratio for p in self.points])
            reason = (
                excl
                + ([f"measured/model median {format_number(m_all)} (not judged)"] if m_all else [])
                + reason
            )
        elif judged:
            if self.extra_fail and verdict == "holds":
                verdict = f"holds within {_x(factor(worst))}"
            where = _where_off(judged, self.exact) if self.trend else None
            reason = (
                ([self.extra_fail] if self.extra_fail else []) + ([where] if where else []) + reason
            )
            skipped = list(dict.fromkeys(p.excluded for p in self.points if p.excluded))
            reason += [f"not judged: {s}" for s in skipped]
        shown = _worst_point(judged or self.points)
        return {
            "model": self.model,
            "paper": self.paper,
            "runs": list(dict.fromkeys(self.runs)),
            "points": len(self.points),
            "judged": len(judged),
            "predicted": _text(shown, "predicted"),
            "measured": _text(shown, "measured"),
            "ratio_median": med,
            "ratio_worst": worst,
            "verdict": verdict,
            "reason": "; ".join(reason) if reason else "-",
            "compared": [p.to_dict() for p in self.points],
        }


def _worst_point(points):
    ok = [p for p in points if math.isfinite(p.ratio) and p.ratio > 0]
    return max(ok, key=lambda p: factor(p.ratio)) if ok else None


def _text(point, which):
    if point is None:
        return None
    v = getattr(point, which)
    value = format_seconds(v) if point.unit == "s" else format_number(v)
    return f"{value} at {point.at}" if which == "predicted" else value


def _where_off(points, exact):
    """Where the model misses: 'measured above the model from 1,000 messages up (22x at ...)'."""
    limit = 1.0 if exact else HOLDS_WORST
    pts = sorted(points, key=lambda p: p.x)
    off = [factor(p.ratio) > limit + 1e-12 for p in pts]
    if not any(off):
        n = len(pts)
        return (
            f"all {n} equal"
            if exact
            else f"all {n} point{'s' * (n != 1)} within {_x(max(factor(p.ratio) for p in pts))}"
        )
    bad = [p for p, o in zip(pts, off) if o]
    worst = max(bad, key=lambda p: factor(p.ratio))
    side = (
        "above"
        if all(p.ratio > 1 for p in bad)
        else "below"
        if all(p.ratio < 1 for p in bad)
        else "off"
    )
    tail = f"{_x(factor(worst.ratio))} {'above' if worst.ratio > 1 else 'below'} at {worst.at}"
    first, last = off.index(True), len(off) - 1 - off[::-1].index(True)
    if all(off[first : last + 1]):  # one stretch of the sweep: say where it starts or ends
        if first > 0 and last == len(off) - 1:
            return f"measured {side} the model from {bad[0].at} on ({tail})"
        if first == 0 and last < len(off) - 1:
            return f"measured {side} the model up to {bad[-1].at} ({tail})"
        if first == 0 and last == len(off) - 1:
            return f"measured {side} the model at every point ({tail})"
    return f"{len(bad)} of {len(pts)} points off by more than {_x(limit)} ({tail})"


def _x(f):
    """A factor for people: 1.03x, 22x, 1,200x (never e-notation)."""
    digits = 3 if f < 10 else 2
    return f"{format_number(float(f'{f:.{digits}g}'), digits)}x"


# --- runs -----------------------------------------------------------------------------------


def open_runs(runs):
    """Run directories (or folders of them, or opened runs), each table of each read
    (Run.check): a damaged, missing or empty table is one error naming the file, never a
    model "not tested here" for want of the data it holds."""
    out = []
    for r in runs:
        if isinstance(r, Run):
            out.append(r.check())
        else:
            out.extend(open_run(p).check() for p in expand_run_paths([r]))
    return out


def oversubscription(run):
    """'oversubscribed: 4 ranks on 2 cores', or None when the run had a core per thread."""
    launch = run.meta.get("launch") or {}
    if not launch.get("oversubscribed"):
        return None
    ranks, threads = launch.get("nranks"), launch.get("threads_per_rank") or 1
    cores = next(
        (
            m.group(1)
            for n in launch.get("notes") or []
            for m in [re.search(r"on (\d+) cores", n)]
            if m
        ),
        "?",
    )
    who = f"{ranks} ranks" + (f" x {threads} threads" if threads > 1 else "")
    return f"{run.path.name}: oversubscribed, {who} on {cores} cores"


def fitted_from(run, machine_model):
    """True when the machine model names ``run`` among the runs it was fitted from."""
    return bool(terms_fitted_from(run, machine_model))


def _sleeping_threads_fit(run):
    """Oversubscribed only by threads that sleep (``--compute-mode sleep``), one core per rank."""
    launch = run.meta.get("launch") or {}
    cores = next(
        (
            int(m.group(1))
            for n in launch.get("notes") or []
            for m in [re.search(r"on (\d+) cores", n)]
            if m
        ),
        0,
    )
    return (
        run.meta.get("parameters", {}).get("compute_mode") == "sleep"
        and 0 < int(launch.get("nranks") or 0) <= cores
    )


def _held_out(runs, machine_model):
    """Runs the machine model was not fitted from, else all of them; and whether in-sample."""
    out = [r for r in runs if not fitted_from(r, machine_model)]
    return (out, False) if out else (runs, bool(runs))


def _in_sample_note(runs, what="the machine model"):
    names = ", ".join(r.path.name for r in runs)
    return f"in-sample: {what} was fitted from {names}, so this is a fit residual, not a prediction"


def _pairs(run):
    return int(run.meta.get("parameters", {}).get("pairs", 1))


def _missing(exc):
    return str(exc) if isinstance(exc, p2p.MissingTerm) else f"cannot model: {exc}"


# --- one check per model ------------------------------------------------------------------


def check_postal(runs, mm):
    """Postal model per protocol against single-pair ping-pong (held-out runs first)."""
    singles = [r for r in runs if r.kind == "pingpong" and _pairs(r) == 1]
    checks = {
        proto: Check(f"postal ({proto})", "Bienz et al. 2018, eq. 1")
        for proto in ("short", "eager", "rendezvous")
    }
    if not singles:
        return [
            Check(
                "postal",
                "Bienz et al. 2018, eq. 1",
                untested="no single-pair ping-pong run (commscope bench pingpong)",
            )
        ]
    chosen, in_sample = _held_out(singles, mm)
    for run in chosen:
        over = oversubscription(run)
        for loc, sub in pingpong_medians([run]).groupby("locality"):
            sizes = sub["size_bytes"].to_numpy()
            try:
                model = message_time(mm, sizes, loc, ppn=1)
            except InputError as exc:
                for proto in dict.fromkeys(mm.protocols_of(sizes, loc)):
                    checks[proto].untested = _missing(exc)
                continue
            for proto in dict.fromkeys(model.protocol):
                c, m = checks[proto], model.protocol == proto
                c.runs.append(run.path.name)
                for s, p, t in zip(sizes[m], model.postal_s[m], sub["median_s"].to_numpy()[m]):
                    c.points.append(
                        Point(
                            f"{format_bytes(s)} {loc}", float(s), float(p), float(t), excluded=over
                        )
                    )
    out = [c for c in checks.values() if c.points or c.untested]
    for c in out:
        if in_sample:
            c.notes.append(_in_sample_note(chosen))
    return out


def check_maxrate(runs, mm):
    """Max-rate (eq. 2, R_N of the machine model) against concurrent-pair ping-pong."""
    c = Check("max-rate", "Bienz et al. 2018, eq. 2")
    multi = [r for r in runs if r.kind == "pingpong" and _pairs(r) > 1]
    if not multi:
        c.untested = (
            "no ping-pong run with 2 or more concurrent pairs (commscope bench pingpong --pairs 2)"
        )
        return [c]
    no_rn = set()
    for run in multi:
        over = oversubscription(run)
        for (loc, ppn), sub in pingpong_medians([run]).groupby(["locality", "pairs"]):
            c.runs.append(run.path.name)
            sizes = sub["size_bytes"].to_numpy()
            try:
                model = message_time(mm, sizes, loc, ppn=int(ppn))
            except InputError as exc:
                c.untested = _missing(exc)
                return [c]
            if np.any((model.protocol == "rendezvous") & np.isinf(model.R_N_Bps)):
                no_rn.add(loc)
            for s, m, t in zip(sizes, model.time_s, sub["median_s"]):
                c.points.append(
                    Point(
                        f"{format_bytes(s)}, {ppn} pairs",
                        float(s),
                        float(m),
                        float(t),
                        excluded=over,
                    )
                )
    if no_rn:
        c.notes.append(
            f"the machine model has no injection limit R_N at {', '.join(sorted(no_rn))}"
            " (none fitted): max-rate is the postal model there"
        )
    if any(fitted_from(r, mm) for r in multi):
        c.notes.append(
            _in_sample_note([r for r in multi if fitted_from(r, mm)], "R_N of the machine model")
        )
    return [c]


def check_node_aware(runs, mm):
    """Node-aware model (parameters per locality and protocol) against every ping-pong run."""
    c = Check("node-aware", "Bienz et al. 2018, Sec. 3")
    pp = [r for r in runs if r.kind == "pingpong"]
    if not pp:
        c.untested = "no ping-pong run (commscope bench pingpong)"
        return [c]
    singles, in_sample = _held_out([r for r in pp if _pairs(r) == 1], mm)
    chosen = singles + [r for r in pp if _pairs(r) > 1]
    localities = set()
    for run in chosen:
        over = oversubscription(run)
        for (loc, ppn), sub in pingpong_medians([run]).groupby(["locality", "pairs"]):
            try:
                model = message_time(mm, sub["size_bytes"].to_numpy(), loc, ppn=int(ppn)).time_s
            except InputError as exc:
                c.untested = _missing(exc)
                return [c]
            localities.add(loc)
            c.runs.append(run.path.name)
            for s, t, m in zip(sub["size_bytes"], sub["median_s"], model):
                c.points.append(
                    Point(
                        f"{format_bytes(s)} {loc}, {ppn} pair(s)",
                        float(s),
                        float(m),
                        float(t),
                        excluded=over,
                    )
                )
    if "inter-node" not in localities:
        c.notes.append(
            f"one node: only {', '.join(sorted(localities))} measured; the inter-node "
            "parameters and the network's injection limit R_N are not tested here"
        )
    if in_sample:
        c.notes.append(_in_sample_note(singles, "the postal part"))
    return [c]


def check_queue_search(runs, mm):
    """HighVolumePingPong against max-rate + queue search, one row per receive order."""
    hv = [
        r
        for r in runs
        if r.kind == "hvpingpong" and not r.meta.get("parameters", {}).get("contention")
    ]
    if not hv:
        return [
            Check(
                "queue search",
                "Bienz et al. 2018, eq. 3",
                untested="no HighVolumePingPong run (commscope bench hvpingpong)",
            )
        ]
    chosen, in_sample = _held_out(hv, mm)
    checks = {}
    for run in chosen:
        over = oversubscription(run)
        df = run.table("samples")
        med = (
            df.groupby(["order", "locality", "size_bytes", "n_messages"])["time_s"]
            .median()
            .reset_index()
        )
        for (order, loc, size), sub in med.groupby(["order", "locality", "size_bytes"]):
            c = checks.setdefault(
                order, Check(f"queue search, {order}", "Bienz et al. 2018, eq. 3, Algorithm 1")
            )
            try:
                model = p2p.hvpingpong_time(
                    mm, sub["n_messages"].to_numpy(), size, loc, order=order
                )["total_s"].to_numpy()
            except InputError as exc:
                c.untested = _missing(exc)
                continue
            c.runs.append(run.path.name)
            for n, t, m in zip(sub["n_messages"], sub["time_s"], model):
                c.points.append(
                    Point(
                        f"{format_number(n)} messages", float(n), float(m), float(t), excluded=over
                    )
                )
    for c in checks.values():
        if in_sample:
            c.notes.append(_in_sample_note(chosen, "gamma"))
    return list(checks.values())


def check_contention(runs, mm):
    """Contention-layout HighVolumePingPong against max-rate + queue search + delta l."""
    c = Check("contention", "Bienz et al. 2018, eqs. 5, 7")
    runs_c = [
        r for r in runs if r.kind == "hvpingpong" and r.meta.get("parameters", {}).get("contention")
    ]
    if not runs_c:
        hosts = {h for r in runs for h in r.meta.get("hosts", [])}
        c.untested = (
            "one node: contention is on network links between nodes, which these runs never cross"
            if len(hosts) <= 1
            else "no contention-layout run (commscope bench hvpingpong --contention)"
        )
        return [c]
    fit = mm.machine.get("delta_fit") or {}
    try:
        delta = p2p.require_term(mm, "delta_s_per_byte", "the contention term (eq. 5)")
        gamma = p2p.require_term(mm, "gamma_s", "the queue-search term")
    except InputError as exc:
        c.untested = _missing(exc)
        return [c]
    del gamma  # checked: hvpingpong_time needs it
    for run in runs_c:
        over = oversubscription(run)
        nodes = max(1, len(set(run.meta.get("hosts", []))))
        ppn = int(fit.get("ppn") or max(1, 2 * _pairs(run) // nodes))
        hops = float(fit.get("hops") or nodes / 2)
        med = (
            run.table("samples")
            .groupby(["order", "size_bytes", "n_messages"])["time_s"]
            .median()
            .reset_index()
        )
        c.runs.append(run.path.name)
        for (order, size), sub in med.groupby(["order", "size_bytes"]):
            n = sub["n_messages"].to_numpy(float)
            base = p2p.hvpingpong_time(mm, n, size, "inter-node", order=order, ppn=ppn)[
                "total_s"
            ].to_numpy()
            model = base + p2p.contention_time(
                delta, p2p.contention_link_bytes(hops, n * size, ppn)
            )
            for k, t, m in zip(n, sub["time_s"], model):
                c.points.append(
                    Point(
                        f"{format_number(k)} x {format_bytes(size)}, {order}",
                        float(k * size),
                        float(m),
                        float(t),
                        excluded=over,
                    )
                )
    if any(fitted_from(r, mm) for r in runs_c):
        c.notes.append(_in_sample_note(runs_c, "delta"))
    return [c]


def check_stencil(runs):
    """Closed-form M_t, T_r, T_s against what the mtmatch runs' MPI matched and queued."""
    c = Check("stencil counts", "Schonbein et al. 2018, eqs. 2-8", exact=True)
    mt = [r for r in runs if r.kind == "mtmatch"]
    if not mt:
        c.untested = "no multithreaded matching run (commscope bench mtmatch)"
        return [c]
    prq = False
    for run in mt:
        trials, order = run.table("trials"), run.table("order")
        for cfg, sub in trials.groupby("config"):
            first = sub.iloc[0]
            points, decomp = str(first.get("points")), str(first.get("decomposition"))
            if points == "custom":
                continue
            k = first.get("k")
            k = int(k) if points == "naive" and k == k and k is not None else None
            try:
                model = stencil_counts(points, tuple(int(d) for d in decomp.split("x")), k)
            except (InputError, ValueError) as exc:  # a configuration the closed forms lack
                c.notes.append(f"{run.path.name} config {cfg} not compared: {exc}")
                continue
            o = order[order["config"] == cfg]
            per_trial = o.groupby("trial")
            measured = {
                # every trial must match all M_t messages: the smallest count is the one judged
                "M_t": int(per_trial.size().min()) if len(o) else 0,
                "T_r": int(per_trial["recv_thread"].nunique().min()) if len(o) else 0,
                "T_s": int(per_trial["send_thread"].nunique().min()) if len(o) else 0,
            }
            c.runs.append(run.path.name)
            label = f"{points}-pt {decomp}" if points != "naive" else f"naive k={k} {decomp}"
            for name, value in measured.items():
                c.points.append(
                    Point(
                        f"{label} {name}",
                        float(model.threads),
                        float(getattr(model, name)),
                        float(value),
                        "messages",
                    )
                )
            q = sub.get("ob1_posted_recvq_length")
            if q is not None and q.notna().any():
                prq = True
                c.points.append(
                    Point(
                        f"{label} posted queue",
                        float(model.threads),
                        float(model.M_t),
                        float(q.min()),
                        "messages",
                    )
                )
    c.notes.append(
        "measured: messages each trial matched, threads that posted and sent them"
        + (
            ", and the posted-receive queue Open MPI reported (MPI_T) before the sends"
            if prq
            else ""
        )
    )
    return [c]


def check_partitioned(runs, mm):
    """Measured partitioned sends against the partitioned model (Algorithm 1) and its
    partitioned-vs-single verdict."""
    from .partitioned import comparison_table, predict_partitioned

    c = Check("partitioned", "Dominguez-Trujillo 2021, Ch. 4, Algorithm 1")
    part = [r for r in runs if r.kind == "partitioned"]
    if not part:
        c.untested = "no partitioned run (commscope bench partitioned)"
        return [c]
    disagree = []
    for run in part:
        if fitted_from(run, mm):  # the calibration run: its terms are in the machine model
            c.notes.append(f"{run.path.name} not compared: the machine model was fitted from it")
            continue
        over = oversubscription(run)
        if over and _sleeping_threads_fit(run):
            c.notes.append(
                f"{over}, judged all the same: its threads sleep through their "
                "compute, and its ranks have a core each"
            )
            over = None
        try:
            pred = predict_partitioned(run, machine_model=mm, replicas=REPLICAS, seed=SEED)
        except InputError as exc:
            if exc.field == "machine.term_sources":  # fitted from this very run: no prediction
                c.notes.append(
                    f"{run.path.name} not compared: the machine model's terms were fitted from it"
                )
                continue
            try:  # no partitioned terms: the thesis's Algorithm 1 on the postal link
                pred = predict_partitioned(
                    run, machine_model=mm, replicas=REPLICAS, seed=SEED, model="postal"
                )
                c.notes.append(f"postal Algorithm 1, not the calibrated model: {exc}")
            except (InputError, TypeError):
                c.untested = _missing(exc)
                return [c]
        tab = comparison_table(pred)
        c.runs.append(run.path.name)
        for r in tab.to_dict("records"):
            # the model the prediction stands by (calibrated where the machine model has the
            # terms, else Algorithm 1) and the measured early-bird method
            method = r.get("measured_method", "partitioned")
            m = r.get(f"measured_{method}_s")
            p = r.get("model_partitioned_s", r.get("analytic_partitioned_s"))
            if m is None or p is None or not (np.isfinite(m) and np.isfinite(p)):
                continue
            c.points.append(
                Point(
                    format_bytes(r["size_bytes"]),
                    float(r["size_bytes"]),
                    float(p),
                    float(m),
                    excluded=over,
                )
            )
            said = r.get("model_beats_single", r.get("analytic_beats_single"))
            if over is None and r.get("verdict_agrees") is False:  # a measured tie is no verdict
                disagree.append((r["size_bytes"], bool(said)))
        model = pred.attrs.get("model")
        if model and not any(n.startswith("model:") for n in c.notes):
            src = (pred.attrs.get("calibration") or {}).get("source_runs") or []
            names = [Path(str(x.get("path") if isinstance(x, dict) else x)).name for x in src]
            c.notes.append(
                f"model: {model}" + (f", terms from {', '.join(names)}" if names else "")
            )
    if disagree:
        c.extra_fail = (
            "partitioned vs single send: the model says "
            + ", ".join(f"{'faster' if s else 'slower'} at {format_bytes(b)}" for b, s in disagree)
            + ", the measurement the opposite"
        )
    return [c]


def check_variability(runs):
    """Bootstrap intervals from the smallest scale against the measured medians, per kind."""
    from .variability import KINDS, experiment_key, predict_variability, run_ranks

    bsp = [r for r in runs if r.kind == "bsp"]
    groups = {}
    for run in bsp:
        groups.setdefault(experiment_key(run), []).append(run)
    groups = {k: v for k, v in groups.items() if len({run_ranks(r) for r in v}) > 1}
    if not groups:
        return [
            Check(
                "variability",
                "Dominguez-Trujillo 2021, Ch. 3",
                untested="no bulk-synchronous experiment at 2 or more scales "
                "(commscope bench bsp -n 1, then -n 2)",
            )
        ]
    checks = {
        k: Check(f"variability ({k})", "Dominguez-Trujillo 2021, Sec. 3.2.2", trend=False)
        for k in KINDS
    }
    missed = {k: [] for k in KINDS}
    for key, members in groups.items():
        scales = sorted({run_ranks(r) for r in members})
        # as the report does: the first base-scale run calibrates, the others give the
        # run-to-run spread (repeats)
        base = sorted(
            (r for r in members if run_ranks(r) == scales[0]),
            key=lambda r: r.meta.get("start_time", ""),
        )
        cal = base[0]
        pred = predict_variability(
            cal,
            scales[1:],
            kind="all",
            replicas=REPLICAS,
            seed=SEED,
            compare=[r for r in members if run_ranks(r) != scales[0]],
            repeats=base[1:],
        )
        workload = dict(key).get("workload")
        over_at = {run_ranks(r): oversubscription(r) for r in members if oversubscription(r)}
        for row in pred.to_dict("records"):
            c = checks[row["kind"]]
            if row["note"] and not math.isfinite(row["median_s"]):
                c.notes.append(row["note"])
                continue
            if not row["measured_runs"]:
                continue
            c.runs += [cal.path.name]
            excluded = over_at.get(row["target_ranks"])
            stat = "interval max" if row["statistic"] == "interval_max_s" else "runtime"
            at = f"{workload} {stat}, {row['base_ranks']} -> {row['target_ranks']} ranks"
            c.points.append(
                Point(
                    at,
                    float(row["target_ranks"]),
                    float(row["median_s"]),
                    float(row["measured_median_s"]),
                    excluded=excluded,
                )
            )
            if excluded is None and row["inside"] is False:
                missed[row["kind"]].append(
                    f"{at}: measured {format_seconds(row['measured_median_s'])} outside "
                    f"[{format_seconds(row['ci_low_s'])}, {format_seconds(row['ci_high_s'])}]"
                )
    out = []
    for kind, c in checks.items():
        judged = sum(p.excluded is None for p in c.points)
        if judged and not missed[kind]:
            c.notes.insert(0, f"all {judged} intervals hold the measured median")
        if missed[kind]:
            c.extra_fail = (
                f"{len(missed[kind])} of {judged} intervals miss the measured "
                f"median ({missed[kind][0]})"
            )
        if c.points or c.notes:
            out.append(c)
    return out


# --- the table ----------------------------------------------------------------------------


def holds_table(runs, machine_model, where=None):
    """Every model's verdict on these runs: ``{"machine_model", "thresholds", "rows"}``.

    ``runs``: run directories, folders of them, or opened :class:`Run` objects.
    ``machine_model``: a :class:`~commscope.models.machine_model.MachineModel`, or None
    (then every model that needs one is "not tested here" with ``where`` as the reason).
    ``where``: where the machine model comes from, shown above the table.
    """
    runs = open_runs(runs)
    checks = []
    if machine_model is None:
        why = f"no machine model ({where})" if where else "no machine model"
        checks += [
            Check(m, "", untested=why)
            for m in (
                "postal",
                "max-rate",
                "node-aware",
                "queue search",
                "contention",
                "partitioned",
            )
        ]
    else:
        for fn in (
            check_postal,
            check_maxrate,
            check_node_aware,
            check_queue_search,
            check_contention,
        ):
            checks += fn(runs, machine_model)
    checks += check_stencil(runs)
    if machine_model is not None:
        checks += check_partitioned(runs, machine_model)
    checks += check_variability(runs)
    order = {m: i for i, m in enumerate(MODELS)}
    checks.sort(
        key=lambda c: order.get(
            next((m for m in MODELS if c.model.startswith(m)), c.model), len(MODELS)
        )
    )
    return {
        "machine_model": where,
        "thresholds": {
            "holds_median_ratio": HOLDS_MEDIAN,
            "holds_worst_ratio": HOLDS_WORST,
            "within_worst_ratio": WITHIN_WORST,
        },
        "rows": [c.row() for c in checks],
    }


#: The columns a person reads (the reason is printed below the table, one line each).
TABLE_COLUMNS = (
    "model",
    "points",
    "predicted",
    "measured",
    "ratio_median",
    "ratio_worst",
    "verdict",
)


def printable_rows(table):
    """Rows with the ratios as text ('1.08'), for the printed table and the report."""
    out = []
    for r in table["rows"]:
        row = {k: r[k] for k in TABLE_COLUMNS}
        row["points"] = f"{r['judged']}/{r['points']}" if r["points"] else None
        for k in ("ratio_median", "ratio_worst"):
            row[k] = None if r[k] is None else format_number(float(f"{r[k]:.3g}"))  # 1,230
        out.append(row)
    return out
