"""MPICH-style PRQ/UMQ simulation: known totals and a brute-force linked list."""

import random

import pytest

from commscope.errors import InputError
from commscope.models.queue_sim import (
    orders_from_sequences,
    prq_search,
    simulate,
    summarize,
    umq_search,
)


def brute_force(events):
    """Literal linked lists: search from the head, append at the tail."""
    prq, umq, out = [], [], []
    for kind, key in events:
        search, join = (umq, prq) if kind == "post" else (prq, umq)
        for i, k in enumerate(search):
            if k == key:
                del search[i]
                out.append((True, i, i + 1))
                break
        else:
            out.append((False, len(search), len(search)))
            join.append(key)
    return out


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_ordered_posts_have_depth_zero(n):
    res = prq_search(range(n), range(n))
    assert (res["depth"] == 0).all()
    assert res["searched"].sum() == n  # 004: n elements searched in order
    assert summarize(res).max_depth == 0


@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_reversed_posts_search_triangular_total(n):
    res = prq_search(range(n - 1, -1, -1), range(n))
    assert res["searched"].sum() == n * (n + 1) // 2  # 004 Sec. 5: n(n+1)/2
    assert res["depth"].sum() == n * (n - 1) // 2
    assert res["depth"].tolist() == list(range(n - 1, -1, -1))
    # the same when all messages are unexpected and receives come reversed
    umq = umq_search(range(n), range(n - 1, -1, -1))
    assert umq["searched"].sum() == n * (n + 1) // 2


def test_queue_length_seen_by_each_arrival():
    res = prq_search([3, 1, 2, 0], [0, 1, 2, 3])
    assert res["queue_length"].tolist() == [4, 3, 2, 1]
    assert res["depth"].tolist() == [3, 1, 1, 0]


def test_matches_brute_force_on_random_interleavings():
    rng = random.Random(7)
    for _ in range(50):
        keys = [rng.randrange(6) for _ in range(rng.randrange(1, 40))]  # repeated keys too
        posts = [("post", k) for k in keys]
        arrivals = [("arrive", k) for k in rng.sample(keys, len(keys))]
        events = []
        while posts or arrivals:
            src = posts if (posts and (not arrivals or rng.random() < 0.5)) else arrivals
            events.append(src.pop(0))
        got = simulate(events)
        want = brute_force(events)
        assert list(zip(got["matched"], got["depth"], got["searched"])) == want
        # every message matched exactly once by the end
        assert got["matched"].sum() == len(keys)


def test_orders_from_sequences():
    import pandas as pd

    df = pd.DataFrame({"tag": [0, 1, 2], "post_seq": [2, 0, 1], "send_seq": [0, 2, 1]})
    assert orders_from_sequences(df) == ([1, 2, 0], [0, 2, 1])


def test_mismatched_orders_are_input_errors():
    with pytest.raises(InputError, match="every message needs exactly one receive"):
        prq_search([0, 1], [0])
    with pytest.raises(InputError, match="differ"):
        prq_search([0, 1], [0, 2])
    with pytest.raises(InputError, match="kind"):
        simulate([("probe", 1)])
