"""Point-to-point communication models of Bienz, Gropp & Olson (EuroMPI'18, paper 004).

Pure functions, vectorised over numpy arrays where natural:

* :func:`postal_time`            eq. 1   T = alpha + beta s
* :func:`maxrate_time`           eq. 2   T = alpha + ppn s / min(R_N, ppn R_b)
* the node-aware time of one message (Sec. 3, eq. 2 with parameters by protocol and
  locality) is :func:`commscope.models.message_time.message_time`, used by everything here
* :func:`queue_search_time`      eq. 3   gamma n^2 (upper bound), n(n+1)/2, or n
* :func:`contention_link_bytes`  eq. 7   l = 2 h^3 b ppn
* :func:`contention_time`        eq. 5   T_c = delta l
* :func:`hvpingpong_time`        Algorithm 1 (HighVolumePingPong) modelled times, 004's
                                         form or the one fitted per MPI (queue_search.py)
* :func:`predict_pattern`        per-rank stacked terms of Figs. 10-11

beta is seconds per byte (as in 004); R_b = 1/beta is in bytes per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import InputError
from .machine_model import canonical_locality
from .message_time import message_time
from .required_terms import MissingTerm, require_params, require_term  # noqa: F401 (re-exported)
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


QUEUE_SEARCH_CASES = ("upper", "triangular", "ordered")


def postal_time(alpha_s, beta_s_per_byte, size_bytes):
    """Postal model, 004 eq. 1: ``alpha + beta * s`` (seconds)."""
    return np.asarray(alpha_s) + np.asarray(beta_s_per_byte) * np.asarray(size_bytes, dtype=float)


def maxrate_time(alpha_s, beta_s_per_byte, size_bytes, ppn=1, R_N_Bps=math.inf):
    """Max-rate model, 004 eq. 2: ``alpha + ppn s / min(R_N, ppn R_b)`` with R_b = 1/beta.

    ``ppn`` is the number of processes per node communicating at once. With R_N = inf
    (or ppn R_b <= R_N) this is the postal model.
    """
    s = np.asarray(size_bytes, dtype=float)
    ppn = np.asarray(ppn, dtype=float)
    beta = np.asarray(beta_s_per_byte, dtype=float)
    with np.errstate(divide="ignore"):
        rb = np.where(beta > 0, 1.0 / np.where(beta > 0, beta, 1.0), np.inf)
    rate = np.minimum(np.asarray(R_N_Bps, dtype=float), ppn * rb)
    return np.asarray(alpha_s) + ppn * s / rate


def queue_search_time(gamma_s, n_messages, case="upper"):
    """Queue-search time for ``n`` messages posted at once (004 Sec. 4.1).

    * ``"upper"``: gamma n^2, eq. 3 as printed (the bound used in the paper's figures).
    * ``"triangular"``: gamma n(n+1)/2, receives posted in reverse arrival order: the
      k-th arriving message searches n-k+1 entries. The paper's discussion (Sec. 5)
      says this is what the upper bound stands for.
    * ``"ordered"``: gamma n, every match is the first entry searched.
    """
    n = np.asarray(n_messages, dtype=float)
    if case == "upper":
        elements = n * n
    elif case == "triangular":
        elements = n * (n + 1) / 2
    elif case == "ordered":
        elements = n
    else:
        raise InputError(
            "queue search", "case", f"expected one of {QUEUE_SEARCH_CASES}, got {case!r}"
        )
    return gamma_s * elements


def fitted_gamma_per_entry(gamma_s):
    """Seconds per queue entry searched, from a gamma fitted in eq. 3's upper form.

    ``commscope fit`` (like 004) fits gamma to the reversed exchange as gamma n^2, but such
    a batch searches n(n+1)/2 entries, so one entry costs gamma n^2 / (n(n+1)/2), 2 gamma
    for large n. Used where the entries searched are counted (a trace replayed).
    """
    return 2 * gamma_s


def contention_link_bytes(hops, bytes_per_process, ppn):
    """Bytes crossing the busiest link, 004 eq. 7: ``l = 2 h^3 b ppn``.

    ``h`` is the average number of network hops per byte, ``b`` the average bytes sent
    by a process, ``ppn`` processes per node (the paper's cube-partition assumption).
    """
    h = np.asarray(hops, dtype=float)
    return 2.0 * h**3 * np.asarray(bytes_per_process, dtype=float) * np.asarray(ppn, dtype=float)


def contention_time(delta_s_per_byte, link_bytes):
    """Contention penalty, 004 eq. 5: ``T_c = delta * l``."""
    return delta_s_per_byte * np.asarray(link_bytes, dtype=float)


HVPP_MODELS = ("auto", "fitted", "paper")


def hvpingpong_time(
    machine_model,
    n_messages,
    size_bytes,
    locality,
    order="reversed",
    ppn=1,
    reversed_search="upper",
    model="auto",
):
    """Modelled one-way time of HighVolumePingPong (004 Algorithm 1).

    One direction of the exchange (half the round trip, as ping-pong times are
    reported), ``n`` messages of ``s`` bytes. Two models (``model``):

    * ``"paper"`` (Bienz et al. 2018): each message pays its own latency and transport
      under the node-aware max-rate model, plus the queue search gamma n (``order="ordered"``) or
      gamma n^2 (``"reversed"``, ``reversed_search="upper"``, eq. 3) or gamma n(n+1)/2
      (``"triangular"``). Needs the machine model's ``gamma_s``.
    * ``"fitted"``: the form :mod:`commscope.models.queue_search` chose for this order
      from HighVolumePingPong runs of the machine model's MPI (``queue_search``): its
      per-message part (the max-rate column) and its search part; for a size other
      than the fitted one, each message's node-aware time difference is added.
      Needs the machine model's ``queue_search``.
    * ``"auto"`` (default): ``"fitted"`` when the machine model has it for this
      locality, else ``"paper"``.

    A missing term raises :class:`MissingTerm` naming it and the benchmark that measures it.
    ``n_messages`` and ``size_bytes`` broadcast against each other. Returns a DataFrame
    with n_messages, size_bytes, order, protocol, maxrate_s, queue_s, total_s, model
    (the form used: "paper" or the fitted form's name).
    """
    if order not in ("ordered", "reversed"):
        raise InputError("order", None, f"expected 'ordered' or 'reversed', got {order!r}")
    if model not in HVPP_MODELS:
        raise InputError("model", None, f"expected one of {HVPP_MODELS}, got {model!r}")
    n, s = np.broadcast_arrays(
        np.asarray(n_messages, dtype=float), np.asarray(size_bytes, dtype=float)
    )
    n, s = n.ravel(), s.ravel()
    if np.any(n < 1):
        raise InputError("n_messages", None, "must be >= 1")
    qs = getattr(machine_model, "queue_search", None)
    locality = canonical_locality(locality)
    if model == "auto":
        model = "fitted" if qs is not None and qs.locality in (None, locality) else "paper"
    if model == "fitted" and qs is None:
        raise MissingTerm(
            getattr(machine_model, "source", "machine model"),
            "queue_search",
            "the queue-search model fitted per MPI (HighVolumePingPong)",
        )
    gamma = (
        require_term(machine_model, "gamma_s", "the queue-search term of HighVolumePingPong")
        if model == "paper"
        else None
    )
    one = message_time(machine_model, s, locality, ppn)
    if model == "fitted":
        base, queue = qs.terms(n, order)
        if np.any(s != qs.size_bytes):  # each message's transport differs from the fitted size's
            ref = message_time(machine_model, np.full_like(s, qs.size_bytes), locality, ppn)
            base = base + n * (one.time_s - ref.time_s)
        maxrate, used = base, qs.order_dict(order)["form"]
    else:
        maxrate = n * one.time_s
        case = "ordered" if order == "ordered" else reversed_search
        queue, used = queue_search_time(gamma, n, case), "paper"
    return pd.DataFrame(
        {
            "n_messages": n.astype(np.int64),
            "size_bytes": s.astype(np.int64),
            "order": order,
            "protocol": one.protocol,
            "maxrate_s": maxrate,
            "queue_s": queue,
            "total_s": maxrate + queue,
            "model": used,
        }
    )


# ------------------------------------------------------------- whole patterns

MESSAGE_COLUMNS = ("rank", "peer_locality", "size_bytes", "count")


def validate_messages(messages, source="messages"):
    """Check a communication pattern table and return a clean copy.

    Columns: ``rank``, ``peer_locality`` (intra-socket / cross-socket / inter-node, or
    the alias intra-node), ``size_bytes``, and optional ``count`` (default 1): the
    row stands for ``count`` messages of ``size_bytes`` that ``rank`` sends to peers
    at that locality.
    """
    df = pd.DataFrame(messages).reset_index(drop=True)
    if df.empty:
        raise InputError(source, None, "no messages")
    for col in ("rank", "peer_locality", "size_bytes"):
        if col not in df.columns:
            raise InputError(source, col, "required column is missing")
    if "count" not in df.columns:
        df["count"] = 1
    for col in ("rank", "size_bytes", "count"):
        vals = pd.to_numeric(df[col], errors="coerce")
        if vals.isna().any():
            bad = df.index[vals.isna()][0]
            raise InputError(source, col, f"row {bad}: not a number ({df[col].iloc[bad]!r})")
        if (vals < 0).any():
            raise InputError(source, col, "must not be negative")
        if (vals != np.floor(vals)).any():
            raise InputError(source, col, "must be whole numbers")
        df[col] = vals.astype(np.int64)
    if (df["count"] < 1).any():
        raise InputError(source, "count", "must be >= 1")
    df["peer_locality"] = [
        canonical_locality(v, source, "peer_locality") for v in df["peer_locality"]
    ]
    return df[list(MESSAGE_COLUMNS)]


def load_messages(path):
    """Read a communication pattern CSV (see :func:`validate_messages`)."""
    from ..tablefile import read_table

    return validate_messages(read_table(path), source=path)


@dataclass
class PatternPrediction:
    """Modelled cost of a communication pattern, per rank and overall."""

    per_rank: pd.DataFrame
    max_total_s: float
    max_rank: int
    term_max: dict  # each term's maximum over ranks
    notes: list = field(default_factory=list)

    def to_dict(self):
        return {
            "per_rank": self.per_rank.to_dict("records"),
            "max_total_s": self.max_total_s,
            "max_rank": self.max_rank,
            "term_max": self.term_max,
            "notes": self.notes,
        }


def predict_pattern(machine_model, messages, ppn=1, hops=None, queue_search="upper"):
    """Model a whole communication phase, rank by rank (the stacked view of 004 Figs. 10-11).

    ``messages``: see :func:`validate_messages`. Choices (the paper leaves them open):

    * max-rate term: a rank's messages are sent one after another, each paying its
      node-aware latency and transport (sum over the rank's messages; ``ppn`` active
      processes per node share the locality's injection limit R_N,
      :func:`~commscope.models.message_time.message_time`).
    * queue term: all of a rank's messages are in flight at once, so
      n = sum of ``count`` over the rank's rows, and the cost is
      :func:`queue_search_time` (gamma n^2 by default, eq. 3).
    * contention term (eqs. 5, 7): b = mean inter-node bytes sent per rank over all
      ranks of the table (the paper's "average bytes sent from any process"),
      l = 2 h^3 b ppn, charged to every rank that sends inter-node bytes. Needs
      ``hops`` (average hops per byte) and the machine model's delta.

    A term the machine model lacks is an error naming the term and the benchmark that
    measures it (:class:`MissingTerm`), never a silent 0: gamma for the queue term
    (``queue_search=None`` leaves that term out, with a note), delta when ``hops`` is given
    and the pattern sends inter-node bytes. Without ``hops`` the contention term is left
    out, with a note. The overall time is the maximum over ranks of the per-rank total.
    """
    df = validate_messages(messages)
    if ppn < 1:
        raise InputError("ppn", None, f"must be >= 1 (got {ppn})")
    if hops is not None and (not np.isfinite(hops) or hops < 0):
        raise InputError("hops", None, f"must be a finite number >= 0 (got {hops})")
    notes = []
    one = np.empty(len(df))
    for loc, idx in df.groupby("peer_locality").groups.items():
        one[df.index.get_indexer(idx)] = message_time(
            machine_model, df.loc[idx, "size_bytes"].to_numpy(), loc, ppn
        ).time_s
    df = df.assign(maxrate_s=one * df["count"], bytes=df["size_bytes"] * df["count"])
    df["inter_node_bytes"] = np.where(df["peer_locality"] == "inter-node", df["bytes"], 0)
    g = df.groupby("rank", sort=True)
    per = pd.DataFrame(
        {
            "n_messages": g["count"].sum(),
            "bytes": g["bytes"].sum(),
            "inter_node_bytes": g["inter_node_bytes"].sum(),
            "maxrate_s": g["maxrate_s"].sum(),
        }
    ).reset_index()
    if queue_search is None:
        notes.append("queue-search term left out, as asked (--queue none)")
        per["queue_s"] = 0.0
    else:
        gamma = require_term(
            machine_model, "gamma_s", "the queue-search term (--queue none leaves it out)"
        )
        per["queue_s"] = queue_search_time(gamma, per["n_messages"].to_numpy(), queue_search)
    if hops is None or not (per["inter_node_bytes"] > 0).any():
        notes.append(
            "contention term omitted: no --hops given"
            if hops is None
            else "contention term 0: no inter-node bytes"
        )
        per["contention_s"] = 0.0
    else:
        delta = require_term(machine_model, "delta_s_per_byte", "the contention term (eq. 5)")
        b_avg = per["inter_node_bytes"].mean()
        t_c = float(contention_time(delta, contention_link_bytes(hops, b_avg, ppn)))
        per["contention_s"] = np.where(per["inter_node_bytes"] > 0, t_c, 0.0)
    per["total_s"] = per["maxrate_s"] + per["queue_s"] + per["contention_s"]
    i = int(per["total_s"].to_numpy().argmax())
    return PatternPrediction(
        per_rank=per,
        max_total_s=float(per["total_s"].iloc[i]),
        max_rank=int(per["rank"].iloc[i]),
        term_max={c: float(per[c].max()) for c in ("maxrate_s", "queue_s", "contention_s")},
        notes=notes,
    )
