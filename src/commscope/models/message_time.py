"""The time of one message here: the one answer the report, ``model holds``, ``diagnose``
and ``advise`` use (issue 34), with its terms.

Bienz, Gropp & Olson (EuroMPI'18, paper 004): parameters per protocol and locality
(Table 1), the protocol chosen by the machine model's breakpoints, and the max-rate model
(eq. 2, from Gropp, Olson & Samfass 2016) at every locality::

    T = alpha + ppn s / min(R_N, ppn R_b)  =  alpha + max(s / R_b, ppn s / R_N)

written as the larger of two terms: the *pair transport* ``s / R_b`` (one pair alone) and
the *injection term* ``ppn s / R_N`` (the node's limit shared by ``ppn`` pairs).

Why max-rate at every locality and not 004's "postal on the node, ppn ignored": 004's
on-node messages are not injected into the network, and its Table 1 has no R_N there
(inf), so eq. 2 is the postal model on the node and the answer here is the paper's. But
``commscope fit`` fits an R_N wherever concurrent pairs ran; on one node that is the
memory system the pairs share, and ignoring a measured limit would predict 4 pairs as
fast as one.

The pair transport is the machine model's postal transport, capacity regime included
(:meth:`ProtocolParams.postal_s`), so one pair without an injection limit gets exactly
the postal time (eq. 1) and :attr:`MessageTime.postal_s` is eq. 1 at any ``ppn``.

``ppn``: pairs communicating at once per node, as the fit counts them (ping-pong
``--pairs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..lazy import lazy
from .machine_model import PROTOCOLS, canonical_locality
from .required_terms import require_params

np = lazy("numpy")
pd = lazy("pandas")


@dataclass(frozen=True)
class MessageTime:
    """Modelled time of messages of ``size_bytes`` at one locality, term by term (arrays)."""

    locality: str
    ppn: int
    size_bytes: object
    protocol: object  # "short", "eager" or "rendezvous", by the machine model's breakpoints
    alpha_s: object  # latency term
    pair_transport_s: object  # s / R_b, with the capacity regime where the machine model has one
    injection_s: object  # ppn s / R_N (0 where the machine model has no R_N)
    Rb_Bps: object
    R_N_Bps: object

    @property
    def transport_s(self):
        return np.maximum(self.pair_transport_s, self.injection_s)

    @property
    def time_s(self):
        return self.alpha_s + self.transport_s

    @property
    def postal_s(self):
        """The postal model (eq. 1): latency and pair transport, no injection limit."""
        return self.alpha_s + self.pair_transport_s

    @property
    def rate_Bps(self):
        """Bytes per second one message moves at (size / transport; the limit at size 0)."""
        s = self.size_bytes
        with np.errstate(divide="ignore", invalid="ignore"):
            at_zero = np.minimum(self.Rb_Bps, self.R_N_Bps / self.ppn)
            return np.where(self.transport_s > 0, s / self.transport_s, at_zero)

    @property
    def limited_by(self):
        """Which limit sets the transport: R_N (the node's, shared) or R_b (the pair's)."""
        s = self.size_bytes
        with np.errstate(divide="ignore", invalid="ignore"):
            pair_rate = np.where(self.pair_transport_s > 0, s / self.pair_transport_s, self.Rb_Bps)
        return np.where(self.R_N_Bps < self.ppn * pair_rate, "R_N", "R_b").astype(object)

    def columns(self):
        """One column per term, as printed by ``commscope model p2p``."""
        return {
            "size_bytes": np.asarray(self.size_bytes).astype(np.int64),
            "protocol": self.protocol,
            "alpha_s": self.alpha_s,
            "pair_transport_s": self.pair_transport_s,
            "injection_s": self.injection_s,
            "limited_by": self.limited_by,
            "rate_Bps": self.rate_Bps,
            "transport_s": self.transport_s,
            "time_s": self.time_s,
        }

    def frame(self):
        return pd.DataFrame(self.columns())


def message_time(machine_model, size_bytes, locality, ppn=1):
    """:class:`MessageTime` of messages of ``size_bytes`` (a number or an array) at
    ``locality`` with ``ppn`` pairs per node communicating at once.

    A protocol the machine model has no parameters for at that locality raises
    :class:`~commscope.models.required_terms.MissingTerm` naming the benchmark that
    measures them.
    """
    locality = canonical_locality(locality)
    sizes = np.atleast_1d(np.asarray(size_bytes, dtype=float))
    if np.any(sizes < 0) or not np.all(np.isfinite(sizes)):
        raise InputError("size_bytes", None, "message sizes must be finite and >= 0")
    if not ppn >= 1:
        raise InputError("ppn", None, f"must be >= 1 (got {ppn})")
    protocol = machine_model.protocols_of(sizes, locality)
    alpha, pair, rb, rn = (np.empty_like(sizes) for _ in range(4))
    for proto in PROTOCOLS:
        m = protocol == proto
        if not m.any():
            continue
        p = require_params(machine_model, proto, locality)
        alpha[m] = p.alpha_s
        pair[m] = p.postal_s(sizes[m]) - p.alpha_s
        rb[m], rn[m] = p.Rb_Bps, p.R_N_Bps
    with np.errstate(divide="ignore", invalid="ignore"):
        injection = np.where(np.isinf(rn), 0.0, ppn * sizes / rn)
    return MessageTime(locality, ppn, sizes, protocol, alpha, pair, injection, rb, rn)


def message_seconds(machine_model, size_bytes, locality, ppn=1):
    """Just the time of :func:`message_time`: a float for a number, an array for an array."""
    t = message_time(machine_model, size_bytes, locality, ppn).time_s
    return t if np.ndim(size_bytes) else float(t[0])
