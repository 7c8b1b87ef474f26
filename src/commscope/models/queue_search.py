"""Queue-search model forms for HighVolumePingPong, fitted and chosen per MPI (004 Sec. 4.1).

004 models n messages in flight as n independent messages plus a queue search of
gamma per entry walked: none beyond the head when receives are posted in send
order, gamma n^2 (eq. 3) when they are reversed. Measured here that holds only over
part of the range: the cost per entry walked grows once the queue no longer fits a
cache, and the ordered exchange is not free either (its time per message grows with n).
So each order's median one-way time T(n) is fitted with the forms below, all linear
in their parameters for a given breakpoint depth D (tri(x) = x (x + 1) / 2, the
entries a reversed exchange of x messages walks; (x)+ = max(x, 0)):

* ``per-message``: T = a + m n                        (no search; 004's ordered case)
* ``linear``:      T = a + m n + g tri(n)             (004 eq. 3: constant gamma per entry)
* ``piecewise``:   T = a + m n + g1 tri(min(n, D)) + g2 (tri(n) - tri(D))+
                   (cache-aware: a walk of depth k costs g1 per entry while k <= D, g2
                   beyond, as a linear walk through a queue larger than the cache misses
                   on every entry)
* ``knee``:        T = a + m n + m2 (n - D)+ + g tri(n)
                   (each message beyond D costs m2 more: the transport's buffers are full
                   and the sender waits for the receiver to drain them)
* ``two-regime``:  a1 + m1 n + g1 tri(n) up to D, a2 + m2 n + g2 tri(n) beyond
                   (a jump at D, e.g. a protocol or flow-control switch)

Every fit minimises the relative error (rows scaled by 1/T, non-negative
parameters); D is searched on the measured depths and the geometric midpoints
between them. The form is chosen by BIC on the log ratios model/measured: the one
with the fewest parameters whose BIC is within :data:`BIC_MARGIN` of the lowest, a
searched breakpoint counting as two parameters (it overfits noise otherwise); AIC and
the leave-one-depth-out relative error are recorded beside it for every candidate.
Pure numbers in, numbers out: reading runs and the machine-model file are elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
optimize = lazy("scipy.optimize")


ORDERS = ("ordered", "reversed")
FORMS = ("per-message", "linear", "piecewise", "knee", "two-regime")
#: Parameter names of each form (the breakpoint D is ``breakpoint_messages``, not a parameter here).
PARAMS = {
    "per-message": ("a_s", "m_s"),
    "linear": ("a_s", "m_s", "gamma_s"),
    "piecewise": ("a_s", "m_s", "gamma1_s", "gamma2_s"),
    "knee": ("a_s", "m_s", "m2_s", "gamma_s"),
    "two-regime": ("a1_s", "m1_s", "gamma1_s", "a2_s", "m2_s", "gamma2_s"),
}
BREAKPOINT_FORMS = ("piecewise", "knee", "two-regime")
#: A form with more parameters is chosen only if its BIC is lower than every simpler
#: form's by more than this ("strong" evidence, Kass & Raftery 1995).
BIC_MARGIN = 6.0
#: A fit needs this many depths per order to say anything about the shape; fewer is flagged.
MIN_DEPTHS = 5
#: The accuracy target of issue 26: the chosen form within this at every measured depth.
MAX_REL_ERROR = 0.30
#: What measures the term: named by every error about a missing queue-search model.
MEASURE_COMMAND = "commscope bench hvpingpong --queues, then commscope fit"


def n_params(form):
    """Parameters a form is charged for in AIC/BIC: a breakpoint searched over the
    depths counts twice (a change point fits noise better than one parameter does;
    with it charged once, a form with a breakpoint beat the true linear one on noise)."""
    return len(PARAMS[form]) + (2 if form in BREAKPOINT_FORMS else 0)


def _tri(x):
    x = np.asarray(x, dtype=float)
    return x * (x + 1) / 2


def basis(form, n, breakpoint_messages=None):
    """Design matrix (one column per parameter of ``form``) at depths ``n``."""
    n = np.asarray(n, dtype=float)
    cols = [np.ones_like(n), n]
    if form == "two-regime":
        low = (n <= float(breakpoint_messages)).astype(float)
        one = [np.ones_like(n), n, _tri(n)]
        return np.column_stack([c * low for c in one] + [c * (1 - low) for c in one])
    if form == "linear":
        cols.append(_tri(n))
    elif form == "piecewise":
        d = float(breakpoint_messages)
        cols += [_tri(np.minimum(n, d)), np.maximum(_tri(n) - _tri(d), 0.0)]
    elif form == "knee":
        cols += [np.maximum(n - float(breakpoint_messages), 0.0), _tri(n)]
    elif form != "per-message":
        raise InputError("queue search", "form", f"expected one of {FORMS}, got {form!r}")
    return np.column_stack(cols)


@dataclass
class FormFit:
    """One candidate form fitted to one order's medians."""

    form: str
    params: dict
    breakpoint_messages: float | None
    k: int  # parameters charged (n_params: a breakpoint counts twice)
    rss_log: float  # sum of squared log(model / measured)
    aic: float
    bic: float
    cv_rel_error: float | None  # median |model/measured - 1| leaving each depth out in turn
    max_rel_error: float

    def predict(self, n):
        p = np.array([self.params[name] for name in PARAMS[self.form]])
        return basis(self.form, n, self.breakpoint_messages) @ p

    def scores(self):
        return {
            "k": self.k,
            "aic": _round(self.aic),
            "bic": _round(self.bic),
            "cv_rel_error": _round(self.cv_rel_error),
            "max_rel_error": _round(self.max_rel_error),
            "breakpoint_messages": self.breakpoint_messages,
        }


def _round(v):
    return None if v is None or not math.isfinite(v) else float(f"{v:.6g}")


def _nnls_rel(form, n, t, d):
    a = basis(form, n, d) / t[:, None]
    p, _ = optimize.nnls(a, np.ones_like(t))
    return p


#: Depths a breakpoint needs on each side, so no segment is fitted through its own
#: points alone (two-regime fits three parameters per side: one depth more than that).
MIN_DEPTHS_PER_SIDE = {"piecewise": 2, "knee": 2, "two-regime": 4}


def _breakpoints(n, form):
    u = np.unique(n)
    mids = np.sqrt(u[:-1] * u[1:])
    cands = np.concatenate([u, mids])
    side = MIN_DEPTHS_PER_SIDE[form]
    # a breakpoint at a measured depth puts it on the low side (n <= D)
    ok = [d for d in cands if (u <= d).sum() >= side and (u > d).sum() >= side]
    return sorted(set(np.round(ok, 1)))


def _fit_one(form, n, t, d=None):
    """(params, breakpoint) minimising the relative error; the best D when the form has one."""
    if form not in BREAKPOINT_FORMS:
        return _nnls_rel(form, n, t, None), None
    best = None
    cands = (d,) if d is not None else _breakpoints(n, form)
    if not cands:
        return None, None
    for cand in cands:
        p = _nnls_rel(form, n, t, cand)
        rss = float(np.sum(np.log(np.maximum(basis(form, n, cand) @ p, 1e-300) / t) ** 2))
        if best is None or rss < best[0]:
            best = (rss, p, float(cand))
    return best[1], best[2]


def fit_form(form, n, t):
    """Fit ``form`` to medians ``t`` at depths ``n``; scores for model selection.

    None for a breakpoint form without :data:`MIN_DEPTHS_PER_SIDE` depths on each side
    of any breakpoint."""
    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    p, d = _fit_one(form, n, t)
    if p is None:  # too few depths on either side of any breakpoint
        return None
    model = basis(form, n, d) @ p
    logr = np.log(np.maximum(model, 1e-300) / t)
    m = n.size
    k = n_params(form)
    rss = float(np.sum(logr**2))
    var = max(rss / m, 1e-12)  # a perfect fit would give -inf: floor at a 1e-6 ratio error
    aic = m * math.log(var) + 2 * k
    bic = m * math.log(var) + k * math.log(m)
    cv = None
    if m > k + 1:
        errs = []
        for i in range(m):
            keep = np.arange(m) != i
            pi, di = _fit_one(form, n[keep], t[keep])
            if pi is None:
                continue
            errs.append(abs(float((basis(form, n[i : i + 1], di) @ pi)[0]) / t[i] - 1))
        cv = float(np.median(errs)) if errs else None
    return FormFit(
        form,
        dict(zip(PARAMS[form], map(float, p))),
        d,
        k,
        rss,
        aic,
        bic,
        cv,
        float(np.max(np.abs(model / t - 1))),
    )


@dataclass
class OrderFit:
    """The chosen form for one order, the scores of every candidate, residuals per depth."""

    order: str
    chosen: FormFit
    candidates: dict  # form -> FormFit
    residuals: list  # {n_messages, measured_s, model_s, ratio}
    flags: list = field(default_factory=list)

    def to_dict(self):
        return {
            "form": self.chosen.form,
            "params": self.chosen.params,
            "breakpoint_messages": self.chosen.breakpoint_messages,
            "scores": {f: c.scores() for f, c in self.candidates.items()},
            "selected_by": f"fewest parameters within {BIC_MARGIN:g} of the lowest BIC",
            "residuals": self.residuals,
            "flags": list(self.flags),
        }


def select_form(n, t, order="reversed", forms=FORMS):
    """Fit every form in ``forms`` to (depth, median time) pairs; keep the simplest of
    those within :data:`BIC_MARGIN` of the lowest BIC.

    Forms with as many parameters as depths (nothing left to judge them by) are not
    candidates; a fit on fewer than :data:`MIN_DEPTHS` depths or missing the accuracy
    target at some depth says so in ``flags``.
    """
    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    if n.size == 0:
        raise InputError("hvpp samples", "n_messages", f"no {order} samples")
    cands = {}
    for form in forms:
        fit = (
            fit_form(form, n, t)
            if n.size > len(PARAMS[form]) + (form in BREAKPOINT_FORMS)
            else None
        )
        if fit is not None:
            cands[form] = fit
    if not cands:  # one depth: a constant per message is all it can say
        cands["per-message"] = fit_form("per-message", n, t)
    best = min(c.bic for c in cands.values())
    # parsimony: a form with more parameters must beat every simpler one by BIC_MARGIN
    chosen = min(
        (c for c in cands.values() if c.bic <= best + BIC_MARGIN), key=lambda c: (c.k, c.bic)
    )
    model = chosen.predict(n)
    residuals = [
        {
            "n_messages": int(a),
            "measured_s": float(b),
            "model_s": float(c),
            "ratio": float(b / c) if c > 0 else None,
        }
        for a, b, c in zip(n, t, model)
    ]
    flags = []
    if n.size < MIN_DEPTHS:
        flags.append(
            f"fitted on {n.size} depth{'s' if n.size != 1 else ''} (< {MIN_DEPTHS}): "
            "too few to choose a form; measure more message counts"
        )
    # relative error as everywhere in commscope: |model - measured| / measured
    worst = max(residuals, key=lambda r: abs(r["model_s"] / r["measured_s"] - 1))
    if chosen.max_rel_error > MAX_REL_ERROR:
        flags.append(
            f"model off by {chosen.max_rel_error:.1%} at n = {worst['n_messages']} "
            f"(> {MAX_REL_ERROR:.0%})"
        )
    return OrderFit(order, chosen, cands, residuals, flags)


@dataclass
class QueueSearchModel:
    """Fitted HighVolumePingPong time per order, for one MPI at one message size and locality."""

    orders: dict  # order -> OrderFit, or its dict form when loaded
    size_bytes: int
    locality: str | None = None
    mpi: str | None = None
    queues: list = field(default_factory=list)  # ob1 queue lengths per depth and order, if read
    source: str = "machine model"

    def order_dict(self, order):
        o = self.orders.get(order)
        if o is None:
            raise InputError(
                self.source,
                f"queue_search.orders.{order}",
                f"no fit for {order} receives: measure them with {MEASURE_COMMAND}",
            )
        return o.to_dict() if isinstance(o, OrderFit) else o

    def terms(self, n, order):
        """(per-message part a + m n [+ knee], search/growth part) of the fitted time at depths n."""
        o = self.order_dict(order)
        form, p, d = o["form"], o["params"], o.get("breakpoint_messages")
        n = np.asarray(n, dtype=float)
        cols = basis(form, n, d)
        coef = np.array([p[name] for name in PARAMS[form]])
        parts = cols * coef
        # which columns are search (tri) terms: the rest is the per-message part
        search = {
            "per-message": [],
            "linear": [2],
            "piecewise": [2, 3],
            "knee": [3],
            "two-regime": [2, 5],
        }[form]
        extra = parts[:, search].sum(axis=1)
        return parts.sum(axis=1) - extra, extra

    def time(self, n, order):
        base, extra = self.terms(n, order)
        return base + extra

    def flags(self):
        return {order: list(self.order_dict(order).get("flags", [])) for order in self.orders}

    def to_dict(self):
        return {
            "mpi": self.mpi,
            "size_bytes": int(self.size_bytes),
            "locality": self.locality,
            "orders": {o: self.order_dict(o) for o in self.orders},
            "queues": list(self.queues),
        }


def queue_search_model_from_dict(data, source="machine model"):
    """Check the ``queue_search`` field of a machine model and build the model."""
    pre = "queue_search"
    if not isinstance(data, dict):
        raise InputError(source, pre, "must be an object")
    orders = data.get("orders")
    if not isinstance(orders, dict) or not orders:
        raise InputError(source, f"{pre}.orders", "required: an object order -> fitted form")
    for order, o in orders.items():
        at = f"{pre}.orders.{order}"
        if order not in ORDERS:
            raise InputError(source, at, f"unknown order (expected {', '.join(ORDERS)})")
        if not isinstance(o, dict) or o.get("form") not in FORMS:
            raise InputError(source, f"{at}.form", f"expected one of {', '.join(FORMS)}")
        params = o.get("params")
        for name in PARAMS[o["form"]]:
            v = params.get(name) if isinstance(params, dict) else None
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise InputError(
                    source, f"{at}.params.{name}", f"expected a number >= 0, got {v!r}"
                )
        d = o.get("breakpoint_messages")
        if o["form"] in BREAKPOINT_FORMS and (not isinstance(d, (int, float)) or not d > 0):
            raise InputError(
                source, f"{at}.breakpoint_messages", f"expected a depth > 0, got {d!r}"
            )
    size = data.get("size_bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InputError(source, f"{pre}.size_bytes", f"expected whole bytes >= 0, got {size!r}")
    return QueueSearchModel(
        orders=dict(orders),
        size_bytes=size,
        locality=data.get("locality"),
        mpi=data.get("mpi"),
        queues=list(data.get("queues") or []),
        source=str(source),
    )
