"""Message counts of thread-decomposed stencil halo exchanges (Schonbein et al. 2018, paper 002 Sec. 3).

An MPI process's sub-domain is split into L_x x L_y (x L_z) thread sub-domains. Every
thread sends and receives its own halo messages; only messages that cross the process
boundary go through MPI matching (on-node neighbours use shared memory). For a
process:

* ``M_t``: messages it receives per timestep (= messages it sends, by symmetry);
* ``T_r``: its threads that receive at least one message;
* ``T_s``: threads of the neighbouring processes that send to it (the ring of thread
  sub-domains just outside the process's boundary that touch it by the stencil).

Closed forms (paper eqs. 2-4 and 6-8; M_t and T_s hold for every L_d >= 1):

=========  =============================================  ================================
stencil    M_t                                            T_s
=========  =============================================  ================================
5 point    2 L_x + 2 L_y                                  same as M_t
9 point    6 L_x + 6 L_y - 4                    (eq. 2)   2 L_x + 2 L_y + 4          (eq. 4)
7 point    2 (L_x L_y + L_x L_z + L_y L_z)                same as M_t
27 point   18 sum L_m L_n - 12 sum L_m + 8      (eq. 6)   2 sum L_m L_n + 4 sum L_m + 8 (eq. 8)
naive      k prod L_d (k messages per thread)             prod L_d
=========  =============================================  ================================

Deviation from the printed text: the paper's T_r (eqs. 3, 7) assumes L_d >= 2. We use
T_r = prod L_d - prod max(L_d - 2, 0) (the threads on the boundary), which equals eqs.
3 and 7 for L_d >= 2 and is right for L_d = 1 too. The 5- and 7-point forms, which the
paper omits, follow from the same assumptions. The paper's "1x1x256, 7 pt, M_t = 576"
(Sec. 4.2) contradicts its own Fig. 4 caption (T_s = 514 at 1x1x128, i.e. 4N + 2);
the 7-point count at 1x1x256 is 4 * 256 + 2 = 1026.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")


# stencil name -> (dimensions, neighbourhood): "face" = von Neumann radius 1, "moore" = all 3^D - 1
STENCILS = {"5": (2, "face"), "9": (2, "moore"), "7": (3, "face"), "27": (3, "moore")}
NAIVE = "naive"


@dataclass(frozen=True)
class StencilCounts:
    """Counts for one stencil and thread decomposition (paper 002 Table 1 notation)."""

    stencil: str  # "5", "7", "9", "27" or "naive"
    decomposition: tuple  # (L_x, L_y[, L_z])
    threads: int  # prod L_d
    M_t: int  # messages per timestep (received by the process)
    T_r: int  # receiving threads
    T_s: int  # sending threads (in the neighbouring processes)
    k: int | None = None  # messages per thread, naive only

    def to_dict(self):
        return {
            "stencil": self.stencil,
            "decomposition": "x".join(map(str, self.decomposition)),
            "threads": self.threads,
            "M_t": self.M_t,
            "T_r": self.T_r,
            "T_s": self.T_s,
            "k": self.k,
        }


def parse_decomposition(text, source="--decomp"):
    """``"8x8x4"`` -> ``(8, 8, 4)``; every L_d must be a whole number >= 1."""
    parts = re.split(r"[xX*,]", str(text).strip())
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise InputError(
            source, None, f"expected a decomposition like 8x8x4, got {text!r}"
        ) from None
    return check_decomposition(dims, source)


def check_decomposition(dims, source="decomposition"):
    dims = tuple(dims)
    if not dims or len(dims) > 3:
        raise InputError(source, None, f"need 1 to 3 dimensions, got {len(dims)}")
    for d in dims:
        if isinstance(d, bool) or int(d) != d or d < 1:
            raise InputError(source, None, f"every L_d must be a whole number >= 1 (got {dims})")
    return tuple(int(d) for d in dims)


def linear_z(n):
    """The paper's linear 3-D decomposition (Fig. 4): 1 x 1 x n."""
    return check_decomposition((1, 1, n), "linear z")


def _stencil_key(points, dims, k, source="stencil"):
    key = str(points).strip().lower()
    key = key[:-2] if key.endswith("pt") else key
    if key == NAIVE:
        if k is None or isinstance(k, bool) or int(k) != k or k < 1:
            raise InputError(
                source, "k", "the naive decomposition needs k >= 1 messages per thread"
            )
        return key
    if key not in STENCILS:
        raise InputError(source, "points", f"expected 5, 7, 9, 27 or naive, got {points!r}")
    if k is not None:
        raise InputError(source, "k", "k (messages per thread) only applies to the naive case")
    want = STENCILS[key][0]
    if len(dims) != want:
        raise InputError(
            source,
            "decomposition",
            f"a {key}-point stencil needs a {want}-D decomposition, got {len(dims)}-D",
        )
    return key


def stencil_counts(points, decomposition, k=None):
    """M_t, T_r and T_s by the closed forms (see the module docstring)."""
    dims = check_decomposition(decomposition)
    key = _stencil_key(points, dims, k)
    threads = int(np.prod(dims))
    interior = int(np.prod([max(d - 2, 0) for d in dims]))
    if key == NAIVE:
        return StencilCounts(key, dims, threads, int(k) * threads, threads, threads, int(k))
    t_r = threads - interior
    if key == "5":
        lx, ly = dims
        m_t = t_s = 2 * lx + 2 * ly
    elif key == "9":
        lx, ly = dims
        m_t = 6 * lx + 6 * ly - 4  # eq. 2
        t_s = 2 * lx + 2 * ly + 4  # eq. 4
    else:
        pairs = sum(a * b for a, b in itertools.combinations(dims, 2))
        if key == "7":
            m_t = t_s = 2 * pairs
        else:
            m_t = 2 * 9 * pairs - 4 * 3 * sum(dims) + 8  # eq. 6
            t_s = 2 * pairs + 4 * sum(dims) + 8  # eq. 8
    return StencilCounts(key, dims, threads, m_t, t_r, t_s)


def messages_per_thread(points, decomposition, k=None):
    """Messages each thread receives per timestep, as an array of shape ``decomposition``.

    A thread receives one message per stencil direction that leaves the process's
    sub-domain. Per dimension a thread at index i has ``(i == 0) + (i == L - 1)``
    outward faces (both when L = 1); for the full (Moore) neighbourhood the directions
    staying inside number prod_d (1 + [i > 0] + [i < L-1]) - 1 of the 3^D - 1.
    """
    dims = check_decomposition(decomposition)
    key = _stencil_key(points, dims, k)
    if key == NAIVE:
        return np.full(dims, int(k), dtype=np.int64)
    idx = np.indices(dims)
    at_low = np.stack([i == 0 for i in idx])
    at_high = np.stack([i == d - 1 for i, d in zip(idx, dims)])
    if STENCILS[key][1] == "face":
        return (at_low.sum(axis=0) + at_high.sum(axis=0)).astype(np.int64)
    inside = np.prod(1 + (~at_low).astype(int) + (~at_high).astype(int), axis=0)
    return (3 ** len(dims) - inside).astype(np.int64)


def per_thread_table(points, decomposition, k=None):
    """Rows ``{"thread": (x, y[, z]), "messages": n}`` for every thread."""
    counts = messages_per_thread(points, decomposition, k)
    return [
        {"thread": tuple(int(c) for c in pos), "messages": int(counts[pos])}
        for pos in np.ndindex(counts.shape)
    ]
