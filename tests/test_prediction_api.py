"""One prediction: every view that models a message's time gets the answer of
models.message_time for the same inputs (issue 34, item 4).

The machine model has what a fit on a real machine gives and Table 1 lacks: an
injection limit on the node (concurrent pairs sharing the memory system) and a capacity
regime (buffers leaving the caches). Before the one API, the report, ``model holds`` and
``diagnose`` each chose their own model there and disagreed.
"""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from commscope.diagnose import replay
from commscope.diagnose.findings import _latency_s
from commscope.models import partitioned as pm
from commscope.models.machine_model import bluewaters_machine_model
from commscope.models.message_time import message_seconds, message_time
from commscope.predict import earlybird, holds
from commscope.report.sections import pingpong

EAGER, RENDEZVOUS, PAST_CAPACITY = 4000, 65536, 4 << 20
SIZES = np.array([EAGER, RENDEZVOUS, PAST_CAPACITY])


def fitted_like_model():
    """Blue Waters (004 Table 1) plus an intra-socket R_N below 4 R_b and a cache knee."""
    mm = bluewaters_machine_model()
    key = ("rendezvous", "intra-socket")
    p = mm.params[key]
    mm.params[key] = replace(
        p, R_N_Bps=8e9, capacity_bytes=1 << 20, beta_beyond_s_per_byte=2 * p.beta_s_per_byte
    )
    return mm


MM = fitted_like_model()

CASES = [  # (locality, ppn): on the node one and four pairs, across nodes one and sixteen
    ("intra-socket", 1),
    ("intra-socket", 4),
    ("inter-node", 1),
    ("inter-node", 16),
]


class PingPongRun:
    """What the report and `model holds` read of a ping-pong run: its samples and meta."""

    kind = "pingpong"

    def __init__(self, locality, pairs):
        self.path = Path(f"pingpong-{locality}-{pairs}")
        self.meta = {"parameters": {"pairs": pairs}, "launch": {}}
        self.samples = pd.DataFrame(
            {
                "size_bytes": np.repeat(SIZES, 3),
                "pair": 0,
                "rep": np.tile([0, 1, 2], len(SIZES)),
                "time_s": 1e-5,
                "locality": locality,
                "pairs": pairs,
            }
        )

    def table(self, name):
        assert name == "samples"
        return self.samples


def by_size(points):
    return {p.x: p.predicted for p in points}


def answers(locality, ppn):
    """The modelled time of SIZES at ``locality`` with ``ppn`` pairs, by each caller's path."""
    run = PingPongRun(locality, ppn)
    out = {}
    report = pingpong.measured_and_modelled([run], MM).set_index("size_bytes")
    out["report"] = report.loc[SIZES, "model_s"].to_numpy()
    (node_aware,) = holds.check_node_aware([run], MM)
    out["holds node-aware"] = [by_size(node_aware.points)[s] for s in SIZES]
    if ppn > 1:
        (maxrate,) = holds.check_maxrate([run], MM)
        out["holds max-rate"] = [by_size(maxrate.points)[s] for s in SIZES]
    hosts = {0: "a", 1: "a", 2: "b"}  # ranks 0, 1 share a host; rank 2 is on another
    transfer, _ = replay._model_times(MM, SimpleNamespace(host_of=hosts), ppn)
    peer = 1 if locality == "intra-socket" else 2
    out["diagnose replay"] = [transfer(0, peer, int(s)) for s in SIZES]
    link, _ = earlybird.link_for(None, machine_model=MM, locality=locality, ppn=ppn)
    out["advise single send"] = pm.model_single_send(link, SIZES)["single_elapsed_s"].to_numpy()
    return out


@pytest.mark.parametrize("locality,ppn", CASES)
def test_every_view_gives_the_models_answer(locality, ppn):
    expected = message_time(MM, SIZES, locality, ppn).time_s
    for view, got in answers(locality, ppn).items():
        assert np.asarray(got, float) == pytest.approx(expected, rel=1e-12), view


def test_the_cases_tell_the_models_apart():
    """The inputs reach every branch: eager and rendezvous, R_b- and R_N-limited, the
    capacity regime; a view with another model would fail above."""
    one = message_time(MM, SIZES, "intra-socket", 1)
    four = message_time(MM, SIZES, "intra-socket", 4)
    assert list(one.protocol) == ["eager", "rendezvous", "rendezvous"]
    assert list(one.limited_by) == ["R_b", "R_b", "R_b"]  # one pair: 8e9 > R_b = 6.2e9
    assert list(four.limited_by) == ["R_b", "R_N", "R_N"]  # four pairs: 4 x 6.2e9 > 8e9
    assert four.time_s[1] == pytest.approx(1.7e-6 + 4 * RENDEZVOUS / 8e9)
    # past the knee the pair transport costs twice per byte: 1 MiB at R_b, the rest at R_b / 2
    past = 1.7e-6 + (1 << 20) / 6.2e9 + 2 * (PAST_CAPACITY - (1 << 20)) / 6.2e9
    assert one.time_s[2] == pytest.approx(past) == one.postal_s[2]
    sixteen = message_time(MM, SIZES, "inter-node", 16)
    assert list(sixteen.limited_by) == ["R_b", "R_N", "R_N"]  # 004 Table 1: R_N = 6.6e9


@pytest.mark.parametrize("locality", ["intra-socket", "inter-node"])
def test_postal_row_and_small_message_latency_use_the_same_terms(locality):
    run = PingPongRun(locality, 1)
    points = {}
    for check in holds.check_postal([run], MM):
        points.update(by_size(check.points))
    model = message_time(MM, SIZES, locality, 1)
    assert [points[s] for s in SIZES] == pytest.approx(model.postal_s, rel=1e-12)
    assert model.postal_s == pytest.approx(model.time_s, rel=1e-12)  # one pair, below R_N
    peer = 1 if locality == "intra-socket" else 2
    ctx = SimpleNamespace(machine_model=MM, tl=SimpleNamespace(host_of={0: "a", 1: "a", 2: "b"}))
    assert _latency_s(ctx, 0, peer, EAGER) == model.alpha_s[0]


def test_scalar_and_array_answers_agree():
    assert message_seconds(MM, RENDEZVOUS, "intra-socket", 4) == pytest.approx(
        message_time(MM, [RENDEZVOUS], "intra-socket", 4).time_s[0], rel=1e-15
    )
