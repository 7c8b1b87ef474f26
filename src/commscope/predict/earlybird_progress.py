"""What an early-bird saving becomes on this MPI: the one place the progress probe
(``bench progress``, the machine model's ``progress`` section, docs/progress.md) turns a
modelled early-bird saving into the saving to expect, with the condition in words.

The partitioned models (``commscope.models.partitioned``) assume that each partition
leaves when its thread calls ``MPI_Pready``. The probe says whether it does, per
partition size and compute kind (``busy``: threads spinning on their cores; ``blocked``:
asleep, waiting for I/O or an accelerator, the core free), from its ``early-pready``
case: all partitions but the last made ready, then T of compute with no MPI call. A
partition of P bytes is looked up at the probe's buffer of the same partition size (P
times the probe's partitions, 4 by default): under Open MPI each partition is its own
message, whose size sets its protocol.

* The early partitions arrived during T while the receiver computed ("moves at
  Pready"), or some of them ("partly before the wait"): the model's saving, times the
  share that moved (with ``mpi_calls``, the larger share of the polling receiver's).
* They arrived only while the receiver polled ("moves only inside MPI calls", Open MPI
  5's rendezvous partitions): only what the program's own MPI calls during the region
  move (``mpi_calls``: e.g. a receiver that polls ``MPI_Parrived``, as
  ``bench partitioned``'s does); without them, nothing.
* Not even then ("whole buffer after the last Pready", MPICH 4 and 5, which have no
  per-partition path): no saving, with what would change it; and where the probe's
  partitioned transfer alone (no compute) took longer than one Isend of the same buffer
  by more than :data:`SLOWER` (MPICH's, here: 4.5 ms against 2.2 ms at 8 MiB), that
  difference, scaled to ``message_bytes``, as a cost: a negative saving.
* No probe of this MPI in the machine model: the model's saving, saying that it assumes
  progress and how to check it.

::

    expect(machine_model, partition_bytes, compute, model_saving_s, mpi=None,
           mpi_calls=False, message_bytes=None) -> Expectation
    compute_kind(compute_mode) -> "busy" | "blocked"
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..models import progress as pg
from ..units import format_bytes, format_seconds

AT_PREADY = "moves at Pready"
PARTLY = pg.PARTLY
INSIDE_MPI = pg.INSIDE_MPI
WHOLE_BUFFER = pg.WHOLE_BUFFER
UNSUPPORTED = pg.UNSUPPORTED
NOT_PROBED = "not probed"
REGIMES = (AT_PREADY, PARTLY, INSIDE_MPI, WHOLE_BUFFER, UNSUPPORTED, NOT_PROBED)

#: What would let a partition leave before the last MPI_Pready, for the text.
WHAT_WOULD_CHANGE_IT = (
    "an MPI release with a per-partition path (Open MPI 5's part/persist sends each "
    "partition at MPI_Pready; MPICH's per-partition rewrite, pmodels/mpich PR 6314, is "
    "unreleased), a progress thread (MPIR_CVAR_ASYNC_PROGRESS=1 under MPICH, which wants "
    "a free core), or partitions small enough to go eager"
)
CHECK = "`commscope bench progress` then `commscope fit` would measure it"
#: A partitioned transfer this much slower than one Isend of the buffer is a cost.
SLOWER = 1.1


@dataclass(frozen=True)
class Expectation:
    """``saving_s``: what to expect here; ``model_saving_s``: what the model predicts
    if every partition moved at its MPI_Pready; ``with_mpi_calls_s``: the saving were the
    program to call MPI during the region; ``regime``: one of :data:`REGIMES`;
    ``condition``: the sentence for people; ``verdict``: the probe's own words."""

    saving_s: float
    model_saving_s: float
    with_mpi_calls_s: float
    regime: str
    condition: str
    verdict: str | None = None

    def to_dict(self):
        return dict(self.__dict__)


def compute_kind(compute_mode):
    """The probe's compute kind of a ``bench partitioned --compute-mode``: ``spin`` is
    busy; ``sleep`` and ``hybrid`` (asleep to 200 us before the deadline) are blocked."""
    return "busy" if compute_mode == "spin" else "blocked"


def expect(
    machine_model,
    partition_bytes,
    compute,
    model_saving_s,
    mpi=None,
    mpi_calls=False,
    message_bytes=None,
):
    """The early-bird saving to expect for partitions of ``partition_bytes`` whose threads
    compute ``compute`` ("busy" or "blocked"), from the model's ``model_saving_s``;
    ``message_bytes``: the whole buffer (for the partitioned path's own cost).

    ``mpi``: the MPI library string (or name) of the program, for its entry of the
    progress section (default: the machine model's own MPI). ``mpi_calls``: the program
    calls MPI during the region (a polling receiver, threads testing their requests)."""
    if compute not in pg.SENDERS:
        raise ValueError(f"unknown compute kind {compute!r} ({', '.join(pg.SENDERS)})")
    model = float(model_saving_s)
    if not math.isfinite(model) or not partition_bytes or partition_bytes <= 0:
        return Expectation(model, model, model, NOT_PROBED, "no early-bird saving to judge")
    partition_bytes = float(partition_bytes)
    at = format_bytes(partition_bytes)

    entry = pg.entry(machine_model, mpi) or {}
    per = int(entry.get("partitions") or 1)

    def probe(receiver):
        args = (machine_model, partition_bytes * per, "early-pready", compute, receiver, mpi)
        return pg.verdict(*args), pg.overlaps(*args) or 0.0

    (idle_v, idle_o), (poll_v, poll_o) = probe("idle"), probe("polling")
    if idle_v is None or poll_v is None:
        whose = f" of {mpi}" if mpi and pg.entry(machine_model, None) is not None else ""
        return Expectation(
            model,
            model,
            model,
            NOT_PROBED,
            f"assumes each {at} partition moves at its MPI_Pready: the machine model has "
            f"no progress probe{whose}; {CHECK}",
        )
    if UNSUPPORTED in (idle_v, poll_v):
        return Expectation(
            0.0, model, 0.0, UNSUPPORTED, "this MPI has no partitioned communication", idle_v
        )
    with_calls = model * max(poll_o, idle_o)
    where = f"this machine's progress probe, {compute} threads" + "".join(
        said
        for flag, said in (
            (entry.get("oversubscribed"), ", run oversubscribed"),
            (entry.get("busy_machine"), ", on a busy machine"),
        )
        if flag
    )
    if idle_o >= pg.MOVES:
        return Expectation(
            model * idle_o,
            model,
            with_calls,
            AT_PREADY,
            f"{at} partitions move at MPI_Pready while the ranks compute ({where})",
            idle_v,
        )
    if idle_o > pg.STALLS:
        share = max(poll_o, idle_o) if mpi_calls else idle_o
        return Expectation(
            model * share,
            model,
            with_calls,
            PARTLY,
            f"{100 * share:.0f} % of the early {at} partitions move before the wait ({where})",
            idle_v,
        )
    if poll_o > pg.STALLS:
        saving = with_calls if mpi_calls else 0.0
        said = (
            "the program's MPI calls during the region move them"
            if mpi_calls
            else f"without MPI calls during the region nothing moves early; with them "
            f"(finished threads or the receiver polling MPI_Parrived, or a progress "
            f"thread) up to {format_seconds(with_calls)}"
        )
        return Expectation(
            saving,
            model,
            with_calls,
            INSIDE_MPI,
            f"{at} partitions move only inside MPI calls ({where}): {said}",
            poll_v,
        )
    eager = _moving_sizes(machine_model, compute, mpi)
    also = f"; here partitions of {eager} move early" if eager else ""
    cost, costs = _slower_path(machine_model, message_bytes, compute, mpi)
    return Expectation(
        -cost,
        model,
        -cost,
        WHOLE_BUFFER,
        f"{'slower, not faster' if cost else 'no saving'}: this MPI sends the whole buffer "
        f"after the last MPI_Pready (no {at} "
        f"partition arrived before it, even with the receiver polling: {where}){costs}. "
        f"What would change it: {WHAT_WOULD_CHANGE_IT}{also}",
        poll_v,
    )


def _slower_path(machine_model, message_bytes, compute, mpi):
    """(cost, words): how much longer the probe's partitioned transfer alone took than
    one Isend of the same buffer, scaled to ``message_bytes`` (0: not beyond SLOWER)."""
    if not message_bytes or message_bytes <= 0:
        return 0.0, ""
    message_bytes = float(message_bytes)
    args = (machine_model, message_bytes)
    probed, part = pg.transfer(*args, "partitioned", compute, "polling", mpi)
    same, one = pg.transfer(*args, "isend", compute, "polling", mpi)
    if not (part and one and probed == same) or part <= SLOWER * one:
        return 0.0, ""
    cost = (part - one) * message_bytes / probed
    return cost, (
        f"; and its partitioned path is slower than one send: {format_seconds(part)} "
        f"against {format_seconds(one)} for {format_bytes(probed)} in the probe, about "
        f"{format_seconds(cost)} more for {format_bytes(message_bytes)}"
    )


def _moving_sizes(machine_model, compute, mpi):
    """The probed sizes whose early partitions arrived before the last MPI_Pready."""
    e = pg.entry(machine_model, mpi) or {}
    key = pg.case_key("early-pready", compute, "polling")
    per = int(e.get("partitions") or 1)
    moving = [
        int(s) // per
        for s, v in (e.get("sizes") or {}).items()
        if (v.get("cases", {}).get(key) or {}).get("overlap_fraction") is not None
        and v["cases"][key]["overlap_fraction"] >= pg.MOVES
    ]
    return " and ".join(format_bytes(s) for s in sorted(moving))
