"""Who posts and who sends which tag in a thread-decomposed stencil halo exchange (002 Sec. 4.1).

The plan that ``bench mtmatch`` runs and ``model matching``'s what-if replays: every
boundary thread p of the process receives one message per stencil direction d with
p + d outside the process, from the thread sub-domain p + d of the neighbouring
process (naive: each thread receives k messages from its own sending thread); tags
are strided across receiving threads.  The counts equal :mod:`stencil`'s closed
forms (checked).
"""

import itertools
import math

from ..errors import InputError
from . import stencil
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")


def _offsets(points, ndim):
    kind = stencil.STENCILS[points][1]
    for d in itertools.product((-1, 0, 1), repeat=ndim):
        if any(d) and (kind == "moore" or sum(map(abs, d)) == 1):
            yield d


def build_plan(points, decomposition, k=None):
    """Who posts and who sends which tag, for one stencil and decomposition.

    Returns a DataFrame sorted by tag: tag, recv_thread, send_thread,
    recv_position, send_position (thread sub-domain coordinates; a sender's are
    outside the process, e.g. -1 or L_d). The counts equal
    :func:`commscope.models.stencil.stencil_counts` (checked).
    """
    dims = stencil.check_decomposition(decomposition, "--decomp")
    counts = stencil.stencil_counts(points, dims, k)  # validates points, k, dimensions
    key = counts.stencil
    per_thread = {}  # receiver position -> [sender position]
    if key == stencil.NAIVE:
        for pos in np.ndindex(*dims):
            per_thread[pos] = [pos] * int(k)
    else:
        offs = list(_offsets(key, len(dims)))
        for pos in np.ndindex(*dims):
            out = []
            for d in offs:
                q = tuple(p + o for p, o in zip(pos, d))
                if any(c < 0 or c >= n for c, n in zip(q, dims)):
                    out.append(q)
            if out:
                per_thread[pos] = out
    receivers = sorted(per_thread)
    senders = sorted({q for qs in per_thread.values() for q in qs})
    rid = {p: i for i, p in enumerate(receivers)}
    sid = {q: i for i, q in enumerate(senders)}
    rows, tag = [], 0
    for j in range(max(len(v) for v in per_thread.values())):  # strided tags
        for p in receivers:
            if j < len(per_thread[p]):
                q = per_thread[p][j]
                rows.append((tag, rid[p], sid[q], "x".join(map(str, p)), "x".join(map(str, q))))
                tag += 1
    plan = pd.DataFrame(
        rows, columns=["tag", "recv_thread", "send_thread", "recv_position", "send_position"]
    )
    got = (len(plan), plan["recv_thread"].nunique(), plan["send_thread"].nunique())
    want = (counts.M_t, counts.T_r, counts.T_s)
    if got != want:  # the enumeration and the closed forms must agree
        raise AssertionError(f"plan for {key}-point {dims}: (M_t, T_r, T_s) = {got}, model {want}")
    return plan


def balanced_decomposition(threads, ndim):
    """The most cube-like L_1 >= L_2 >= ... with product ``threads`` (8 -> 2x2x2, 32 -> 4x4x2)."""
    threads = int(threads)
    if threads < 1:
        raise InputError("--sweep", None, f"thread counts must be >= 1, got {threads}")
    best = None
    for dims in itertools.product(range(1, threads + 1), repeat=ndim - 1):
        rest, r = divmod(threads, math.prod(dims)) if math.prod(dims) else (0, 1)
        if r or rest < 1:
            continue
        cand = tuple(sorted((*dims, rest), reverse=True))
        if best is None or (cand[0] - cand[-1], cand) < (best[0] - best[-1], best):
            best = cand
    return best
