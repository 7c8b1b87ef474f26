"""Message-matching engines and their search costs (002 Sec. 2.1, 004 Sec. 4.1).

:mod:`commscope.matching.queue_sim` replays post and arrival orders through an
MPICH-style pair of linked lists (posted receives, unexpected messages) and returns
the search depth of every match.
"""

from .queue_sim import (
    SearchSummary,
    orders_from_sequences,
    prq_search,
    simulate,
    summarize,
    umq_search,
)

__all__ = [
    "SearchSummary",
    "orders_from_sequences",
    "prq_search",
    "simulate",
    "summarize",
    "umq_search",
]
