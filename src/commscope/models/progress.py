"""Does this MPI move data while the ranks compute outside MPI calls? (docs/progress.md)

Numbers in, words out: the verdict of one measured overlap fraction (``bench progress``),
the machine model's ``progress`` section built from such rows, and the queries the
diagnosis and the early-bird advice ask of it.

The overlap fraction of a case is 1 - (wait after T) / (the transfer alone), over the
share of the data made ready before T, clipped to [0, 1]: 1 when the data moved while
both ranks computed, 0 when all of it moved in the wait.

Queries (``machine_model``: a :class:`~commscope.models.machine_model.MachineModel`, or
its JSON form as a dict)::

    overlaps(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None)
        -> float | None
    verdict(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None)
        -> str | None
    transfer(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None)
        -> (measured size, seconds) | (None, None)
    summary(machine_model, mpi=None) -> dict | None

``case`` is ``isend``, ``partitioned`` or ``early-pready``, or the three words in one
key, ``"isend/busy/idle"``. A size between measured ones takes the nearest measured
size (on a log scale; a tie takes the larger). ``None``: the machine model has no
progress section, or not that case.
"""

from __future__ import annotations

import math

from ..units import format_bytes, format_percent

CASES = ("isend", "partitioned", "early-pready")
SENDERS = ("busy", "blocked")
RECEIVERS = ("polling", "idle")

#: An overlap at or above this: the data moved while the ranks computed.
MOVES = 0.7
#: At or below this: it moved in the wait.
STALLS = 0.3

MOVES_AT = {
    "isend": "moves at Isend",
    "partitioned": "moves at Pready",
    "early-pready": "moves per partition at Pready",
}
INSIDE_MPI = "moves only inside MPI calls"
WHOLE_BUFFER = "whole buffer after the last Pready"
PARTLY = "partly before the wait"
UNSUPPORTED = "not supported by this MPI"
VERDICTS = (*dict.fromkeys(MOVES_AT.values()), INSIDE_MPI, WHOLE_BUFFER, PARTLY, UNSUPPORTED)


def case_key(case, sender, receiver):
    """``"isend/busy/idle"``: how the machine model names one case."""
    return f"{case}/{sender}/{receiver}"


def classify(case, overlap, partitioned_overlap=None, receiver="polling"):
    """The verdict of one case's overlap fraction (NaN or None: not supported).

    ``partitioned_overlap``: for ``early-pready`` with a polling receiver (which sees each
    partition arrive), the overlap of ``partitioned`` with the same sender: a send that
    moved once every partition was ready but not before the last one is "whole buffer
    after the last Pready".
    """
    if case not in CASES:
        raise ValueError(f"unknown case {case!r} ({', '.join(CASES)})")
    if overlap is None or not math.isfinite(overlap):
        return UNSUPPORTED
    if overlap >= MOVES:
        return MOVES_AT[case]
    if overlap <= STALLS:
        moved_when_all_ready = _finite(partitioned_overlap) >= MOVES
        if case == "early-pready" and receiver == "polling" and moved_when_all_ready:
            return WHOLE_BUFFER
        return INSIDE_MPI
    return PARTLY


def _finite(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else -1.0


def classify_rows(rows, supported=None):
    """``rows`` (dicts with size_bytes, case, sender, receiver, overlap_fraction) with a
    ``verdict`` each; ``supported``: {case: bool}, False gives "not supported by this MPI"."""
    supported = supported or {}
    part = {
        (r["size_bytes"], r["sender"], r["receiver"]): r["overlap_fraction"]
        for r in rows
        if r["case"] == "partitioned"
    }
    out = []
    for r in rows:
        if supported.get(r["case"], True):
            v = classify(
                r["case"],
                r["overlap_fraction"],
                part.get((r["size_bytes"], r["sender"], r["receiver"])),
                r["receiver"],
            )
        else:
            v = UNSUPPORTED
        out.append(dict(r, verdict=v))
    return out


def _yes_no(x):
    if not _finite(x) >= 0:
        return None
    return True if x >= MOVES else False if x <= STALLS else None


def summarize(by_size):
    """The answers the diagnosis asks, at the largest measured size (rendezvous under any
    MPI): {question: True/False/None (not measured, or in between), the overlap, size}.

    A rendezvous send completes while the receiver computes: ``isend`` with an idle
    receiver, the better of the two sender kinds (neither rank calls MPI during T, so a
    sender sitting in MPI_Wait does no worse). While it polls: the same with a polling
    receiver. A partitioned send moves per partition: ``early-pready`` with a polling
    receiver, the better sender kind.
    """
    if not by_size:
        return {}
    size = max(by_size, key=int)
    cases = by_size[size]["cases"]

    def best(case, receiver):
        vals = [
            c["overlap_fraction"]
            for s in SENDERS
            for c in [cases.get(case_key(case, s, receiver))]
            if c is not None and c.get("overlap_fraction") is not None
        ]
        return max(vals) if vals else None

    rdv_idle, rdv_poll = best("isend", "idle"), best("isend", "polling")
    early, part = best("early-pready", "polling"), best("partitioned", "polling")
    return {
        "size_bytes": int(size),
        "rendezvous_completes_while_receiver_computes": _yes_no(rdv_idle),
        "rendezvous_overlap_fraction": rdv_idle,
        "rendezvous_completes_while_receiver_polls": _yes_no(rdv_poll),
        "rendezvous_polling_overlap_fraction": rdv_poll,
        "partitioned_supported": any(
            c["verdict"] != UNSUPPORTED for k, c in cases.items() if not k.startswith("isend/")
        ),
        "moves_per_partition": _yes_no(early),
        "early_pready_overlap_fraction": early,
        "partitioned_overlap_fraction": part,
    }


def section_entry(rows, supported=None, *, mpi_library="", mpi_name=None, settings=None, **extra):
    """One MPI's entry of the machine model's ``progress`` section from the probe's
    per-size rows (:func:`commscope.bench.progress.overlap_rows` as dicts)."""
    by_size = {}
    for r in classify_rows(rows, supported):
        cases = by_size.setdefault(str(int(r["size_bytes"])), {"cases": {}})["cases"]
        o = r["overlap_fraction"]
        cases[case_key(r["case"], r["sender"], r["receiver"])] = {
            "overlap_fraction": float(o) if _finite(o) >= 0 else None,
            "verdict": r["verdict"],
            **{
                k: (float(r[k]) if _finite(r.get(k)) >= 0 else None)
                for k in ("compute_s", "transfer_s", "wait_after_s")
            },
            "reps": int(r.get("reps") or 0),
        }
    return {
        "mpi_library": mpi_library,
        "mpi_name": mpi_name,
        "settings": dict(settings or {}),
        **extra,
        "sizes": by_size,
        "summary": summarize(by_size),
    }


def library_of(run):
    """How the section names a run's MPI: the first line of its library string (else the
    MPI's name, else "")."""
    mpi = run.meta.get("mpi", {})
    lines = (mpi.get("library_version") or "").strip().splitlines()
    return lines[0].strip() if lines else str(mpi.get("name") or "")


def entry_key(mpi_library, settings=None):
    """The section's key of one MPI: its library string, with the settings that change its
    progress (e.g. ``MPIR_CVAR_ASYNC_PROGRESS=1``) in brackets."""
    base = (mpi_library or "unknown MPI").strip()
    if settings:
        base += " [" + ", ".join(f"{k}={v}" for k, v in sorted(settings.items())) + "]"
    return base


# -- queries ---------------------------------------------------------------------------


def _section(machine_model):
    if machine_model is None:
        return None
    if isinstance(machine_model, dict):
        return machine_model.get("progress")
    return getattr(machine_model, "progress", None)


def _own_library(machine_model):
    machine = (
        machine_model.get("machine")
        if isinstance(machine_model, dict)
        else getattr(machine_model, "machine", None)
    )
    return (machine or {}).get("mpi_library") or ""


def entry(machine_model, mpi=None):
    """One MPI's entry of the progress section, or None.

    ``mpi``: a key of the section, or an MPI name (``openmpi``, ``mpich``), or the start of
    a library string. Without it: the entry of the machine model's own MPI (its
    ``machine.mpi_library``, without settings), else the only one, else the first key.
    """
    section = _section(machine_model)
    if not section:
        return None
    if mpi is not None:
        if mpi in section:
            return section[mpi]
        for key in sorted(section):
            e = section[key]
            if e.get("mpi_name") == mpi or key.startswith(str(mpi)):
                return e
        return None
    own = _own_library(machine_model).strip()
    if own and own in section:
        return section[own]
    return section[sorted(section)[0]]


def _split_case(case, sender, receiver):
    if "/" in str(case):
        parts = str(case).split("/")
        if len(parts) != 3:
            raise ValueError(f"case {case!r}: expected CASE/SENDER/RECEIVER")
        case, sender, receiver = parts
    for value, known, what in (
        (case, CASES, "case"),
        (sender, SENDERS, "sender"),
        (receiver, RECEIVERS, "receiver"),
    ):
        if value not in known:
            raise ValueError(f"unknown {what} {value!r} ({', '.join(known)})")
    return case_key(case, sender, receiver)


def _bucket(sizes, size_bytes):
    """The nearest measured size on a log scale (a tie: the larger)."""
    if not sizes:
        return None
    s = max(float(size_bytes), 1.0)
    return min(sizes, key=lambda m: (abs(math.log2(int(m)) - math.log2(s)), -int(m)))


def _lookup(machine_model, size_bytes, case, sender, receiver, mpi):
    """(the measured size a query of ``size_bytes`` takes, its case), or (None, None)."""
    key = _split_case(case, sender, receiver)
    if not isinstance(size_bytes, (int, float)) or not size_bytes > 0:
        raise ValueError(f"size_bytes must be a positive number of bytes, got {size_bytes!r}")
    e = entry(machine_model, mpi)
    if e is None:
        return None, None
    sizes = [s for s, v in (e.get("sizes") or {}).items() if key in v.get("cases", {})]
    bucket = _bucket(sizes, size_bytes)
    return (None, None) if bucket is None else (int(bucket), e["sizes"][bucket]["cases"][key])


def _case(machine_model, size_bytes, case, sender, receiver, mpi):
    return _lookup(machine_model, size_bytes, case, sender, receiver, mpi)[1]


def overlaps(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None):
    """The measured share of a transfer of ``size_bytes`` that moved while both ranks
    computed (0 .. 1), or None (no progress section, that case not measured, or not
    supported by the MPI). Raises ValueError on an unknown case, sender or receiver."""
    c = _case(machine_model, size_bytes, case, sender, receiver, mpi)
    return None if c is None else c.get("overlap_fraction")


def verdict(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None):
    """The probe's verdict for that size and case (one of :data:`VERDICTS`), or None."""
    c = _case(machine_model, size_bytes, case, sender, receiver, mpi)
    return None if c is None else c.get("verdict")


def transfer(machine_model, size_bytes, case, sender="busy", receiver="idle", mpi=None):
    """(the measured size taken, the median time of that case's transfer alone, no
    compute), or (None, None)."""
    size, c = _lookup(machine_model, size_bytes, case, sender, receiver, mpi)
    return (None, None) if c is None else (size, c.get("transfer_s"))


def summary(machine_model, mpi=None):
    """The entry's summary (:func:`summarize`): ``rendezvous_completes_while_receiver_computes``,
    ``moves_per_partition``, ... (each True, False or None), or None without a section."""
    e = entry(machine_model, mpi)
    return None if e is None else dict(e.get("summary") or {})


def _answer(flag, fraction):
    said = {
        True: "yes",
        False: "no",
        None: "in between" if fraction is not None else "not measured",
    }
    shown = "" if fraction is None else f" ({format_percent(fraction)} overlapped)"
    return said[flag] + shown


def progress_lines(machine_model, mpi=None):
    """The summary in sentences for people: what ``commscope fit`` and the report print."""
    s = summary(machine_model, mpi)
    if not s:
        return []
    at = format_bytes(s["size_bytes"])
    lines = [
        f"{at}: a send completes while the receiver computes: "
        + _answer(
            s["rendezvous_completes_while_receiver_computes"], s["rendezvous_overlap_fraction"]
        ),
        f"{at}: a send completes while the receiver polls (MPI_Test): "
        + _answer(
            s["rendezvous_completes_while_receiver_polls"],
            s["rendezvous_polling_overlap_fraction"],
        ),
    ]
    if s["partitioned_supported"]:
        lines.append(
            f"{at}: a partitioned send moves partition by partition: "
            + _answer(s["moves_per_partition"], s["early_pready_overlap_fraction"])
        )
    else:
        lines.append(f"partitioned sends: {UNSUPPORTED}")
    return lines
