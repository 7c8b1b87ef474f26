"""The early-bird saving this MPI's progress allows (commscope.predict.earlybird_progress):
the probe's verdict for the partition size and compute kind decides it."""

import math

import pytest

from commscope.predict import earlybird_progress as ebp
from progress_models import progress_model

KIB, MIB = 1 << 10, 1 << 20


def _early(per_size):
    """{size: (busy idle, busy polling, blocked idle, blocked polling)} of early-pready,
    partitioned moving whenever all partitions are ready (as under both wheels)."""
    cases = {}
    for size, (bi, bp, ki, kp) in per_size.items():
        for sender, idle, polling in (("busy", bi, bp), ("blocked", ki, kp)):
            cases[(size, "early-pready", sender, "idle")] = idle
            cases[(size, "early-pready", sender, "polling")] = polling
            cases[(size, "partitioned", sender, "polling")] = 1.0
            cases[(size, "partitioned", sender, "idle")] = 0.0
    return progress_model(cases)


#: MPICH: no early partition arrives, polling or not, at any size
MPICH = _early({KIB: (0, 0, 0, 0), MIB: (0, 0, 0, 0)})
#: Open MPI: each partition arrives at once while the receiver polls, never while it computes
OPENMPI = _early({KIB: (0, 1, 0, 1), MIB: (0, 1, 0, 1)})


def test_whole_buffer_saves_nothing_and_says_what_would_change_it():
    e = ebp.expect(MPICH, MIB, "busy", 2e-3, mpi_calls=True)
    assert (e.saving_s, e.with_mpi_calls_s, e.model_saving_s) == (0.0, 0.0, 2e-3)
    assert e.regime == ebp.WHOLE_BUFFER
    for words in (
        "whole buffer after the last MPI_Pready",
        "MPIR_CVAR_ASYNC_PROGRESS=1",
        "PR 6314",
        "eager",
        "busy threads",
    ):
        assert words in e.condition


def test_inside_mpi_calls_only_what_the_programs_calls_move():
    none = ebp.expect(OPENMPI, 256 * KIB, "busy", 1e-3)
    assert none.regime == ebp.INSIDE_MPI and none.saving_s == 0.0
    assert none.with_mpi_calls_s == pytest.approx(1e-3)
    assert "up to 1 ms" in none.condition and "MPI_Parrived" in none.condition
    polled = ebp.expect(OPENMPI, 256 * KIB, "busy", 1e-3, mpi_calls=True)
    assert polled.saving_s == pytest.approx(1e-3)


def test_moves_at_pready_is_the_model_times_the_share_that_moved():
    mm = _early({MIB: (1.0, 1.0, 0.8, 1.0)})
    assert ebp.expect(mm, MIB, "busy", 1e-3).saving_s == pytest.approx(1e-3)
    blocked = ebp.expect(mm, MIB, "blocked", 1e-3)
    assert blocked.regime == ebp.AT_PREADY and blocked.saving_s == pytest.approx(8e-4)


def test_the_compute_kind_and_the_size_at_hand_choose_the_verdict():
    # blocked threads leave the cores to progress, busy ones do not; 1 KiB goes eager
    mm = _early({KIB: (1, 1, 1, 1), MIB: (0, 0, 1, 1)})
    assert ebp.expect(mm, MIB, "blocked", 1e-3).saving_s == pytest.approx(1e-3)
    busy = ebp.expect(mm, MIB, "busy", 1e-3)
    assert busy.saving_s == 0.0 and "here partitions of 1 KiB move early" in busy.condition
    assert ebp.expect(mm, 2 * KIB, "busy", 1e-3).regime == ebp.AT_PREADY  # nearest: 1 KiB


def test_without_a_probe_the_saving_assumes_progress_and_says_how_to_check():
    for mm in (None, progress_model({})):
        e = ebp.expect(mm, MIB, "busy", 1e-3)
        assert e.regime == ebp.NOT_PROBED and e.saving_s == 1e-3
        assert "assumes" in e.condition and "commscope bench progress" in e.condition
    other = ebp.expect(MPICH, MIB, "busy", 1e-3, mpi="Open MPI v5.0.11")
    assert other.regime == ebp.NOT_PROBED and "of Open MPI v5.0.11" in other.condition


def test_an_mpi_without_partitioned_communication_saves_nothing():
    mm = _early({MIB: (math.nan, math.nan, math.nan, math.nan)})
    e = ebp.expect(mm, MIB, "blocked", 1e-3)
    assert e.regime == ebp.UNSUPPORTED and e.saving_s == 0.0


def test_compute_modes_of_bench_partitioned_and_bad_kinds():
    assert [ebp.compute_kind(m) for m in ("spin", "sleep", "hybrid")] == [
        "busy",
        "blocked",
        "blocked",
    ]
    with pytest.raises(ValueError, match="compute kind"):
        ebp.expect(MPICH, MIB, "spinning", 1e-3)


def test_partly_before_the_wait_is_the_share_that_moved():
    mm = _early({MIB: (0.5, 1.0, 0.5, 1.0)})
    e = ebp.expect(mm, MIB, "busy", 1e-3)
    assert e.regime == ebp.PARTLY and e.saving_s == pytest.approx(5e-4)
    assert "50 % of the early 1 MiB partitions" in e.condition
    assert ebp.expect(mm, MIB, "busy", 1e-3, mpi_calls=True).saving_s == pytest.approx(1e-3)


def test_a_partition_is_looked_up_at_the_probes_buffer_of_that_partition_size():
    # the probe sent 4 partitions: its 4 MiB buffer is made of 1 MiB partitions
    mm = _early({KIB: (1, 1, 1, 1), 4 * MIB: (0, 0, 0, 0)})
    next(iter(mm.progress.values()))["partitions"] = 4
    e = ebp.expect(mm, MIB, "busy", 1e-3)
    assert e.regime == ebp.WHOLE_BUFFER and "partitions of 256 B move early" in e.condition


def test_a_probe_made_oversubscribed_or_on_a_busy_machine_says_so():
    mm = _early({MIB: (0, 1, 0, 1)})
    next(iter(mm.progress.values())).update(oversubscribed=True, busy_machine=["progress: 60 %"])
    e = ebp.expect(mm, MIB, "busy", 1e-3)
    assert "busy threads, run oversubscribed, on a busy machine)" in e.condition


def test_a_partitioned_path_slower_than_one_send_is_a_cost():
    """MPICH here: the whole buffer after the last MPI_Pready, and the probe's partitioned
    transfer alone of 8 MiB took 4.5 ms where one Isend took 2.2 ms."""
    cases = {}
    for sender in ("busy", "blocked"):
        for receiver in ("polling", "idle"):
            cases[(8 * MIB, "early-pready", sender, receiver)] = 0.0
        cases[(8 * MIB, "partitioned", sender, "polling")] = dict(
            overlap_fraction=0.0, transfer_s=4.5e-3
        )
        cases[(8 * MIB, "isend", sender, "polling")] = dict(overlap_fraction=1.0, transfer_s=2.2e-3)
    mm = progress_model(cases)
    e = ebp.expect(mm, 2 * MIB, "busy", 1e-3, message_bytes=4 * MIB)
    assert e.regime == ebp.WHOLE_BUFFER and e.saving_s == pytest.approx(-1.15e-3)
    assert "partitioned path is slower than one send: 4.5 ms against 2.2 ms" in e.condition
    assert ebp.expect(mm, 2 * MIB, "busy", 1e-3).saving_s == 0  # no buffer size: no cost
    # within SLOWER of one send: no cost
    for sender in ("busy", "blocked"):
        cases[(8 * MIB, "partitioned", sender, "polling")]["transfer_s"] = 2.3e-3
    assert (
        ebp.expect(progress_model(cases), 2 * MIB, "busy", 1e-3, message_bytes=4 * MIB).saving_s
        == 0
    )
