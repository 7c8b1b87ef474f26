"""Ping-pong benchmark driver (004 Sec. 2): all it is, its descriptor says
(commscope/benchspec/pingpong.py)."""

from ..benchspec.pingpong import LARGE_MESSAGE, planned_sizes  # noqa: F401 (re-exported)
from .driver import run_described


def run_pingpong(**kw):
    """Run the ping-pong with ``pairs`` concurrent pairs (2*pairs ranks), sizes the powers
    of two from ``min_size`` to ``max_size``; every repetition's one-way time lands in the
    ``samples`` table.  Parameters as the descriptor names them (pairs, min_size,
    max_size, iters, warmup, large_iters, large_warmup, hugepages), the rest
    :func:`run_benchmark`'s launch options."""
    return run_described("pingpong", **kw)
