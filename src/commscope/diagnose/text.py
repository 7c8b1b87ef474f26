"""How a diagnosis reads in a terminal: the answer first, then the ranked findings, the
efficiency hierarchy and how far the replay can be trusted."""

from __future__ import annotations

from ..units import format_seconds
from . import damage
from .findings import MINOR_SHARE, replay_error_text


def percent(x):
    if x is None:
        return "n/a"
    return f"{100 * x:.1f} %" if 0 < abs(x) < 0.095 else f"{100 * x:.0f} %"


def _ranks(ranks):  # compact, for table cells
    ranks = list(ranks)
    if not ranks:
        return "-"
    if len(ranks) > 6:
        return f"{','.join(map(str, ranks[:3]))},..,{ranks[-1]} ({len(ranks)})"
    return ",".join(map(str, ranks))


def _who(ranks, word="rank"):
    ranks = list(ranks)
    if not ranks:
        return "no rank"
    if len(ranks) == 1:
        return f"{word} {ranks[0]}"
    if len(ranks) > 6:
        return f"{len(ranks)} {word}s ({ranks[0]}, {ranks[1]}, ... {ranks[-1]})"
    return f"{word}s {', '.join(map(str, ranks[:-1]))} and {ranks[-1]}"


def _lose(ranks):
    return "loses" if len(list(ranks)) == 1 else "lose"


def sentence(f, runtime_s):
    """What a finding costs, in one sentence naming the culprit and where the time goes."""
    at = (f" in {f.waiting_function}" if f.waiting_function else "") + (
        f" at {f.callsite}" if f.callsite else ""
    )
    w, c = _who(f.waiting_ranks), _who(f.culprit_ranks)
    cost = f"{format_seconds(f.lost_s)} ({percent(f.share_of_runtime)} of the run)"
    held = f.evidence.get("held_up_s") or 0.0
    if held > 0.1 * f.lost_s * max(len(f.waiting_ranks), 1):
        cost = (
            f"{format_seconds(f.lost_s)} ({percent(f.share_of_runtime)} of the run, counting the "
            "waits it held up elsewhere)"
        )
    lose = _lose(f.waiting_ranks)
    return {
        "load_imbalance": (
            f"{c.capitalize()} is the odd one out: {w} {lose} {cost} waiting for it{at}."
            if len(f.culprit_ranks) == 1
            else f"{c.capitalize()} have more work than the others: {w} {lose} {cost} "
            f"waiting for them{at}."
        ),
        "wait_at_collective": f"{w.capitalize()} {lose} {cost}{at} waiting for whichever rank is "
        "last (a different one each time).",
        "late_broadcast": f"The root, {c}, is late to the broadcast: {w} {lose} {cost}{at}.",
        "late_scatter": f"The root, {c}, is late to the scatter: {w} {lose} {cost}{at}.",
        "early_reduce": f"The root, {w}, {lose} {cost}{at} waiting for {c}.",
        "early_gather": f"The root, {w}, {lose} {cost}{at} waiting for {c}.",
        "late_sender": f"{w.capitalize()} {lose} {cost}{at} waiting for {c}'s late send.",
        "late_receiver": f"{w.capitalize()} {lose} {cost}{at} waiting for {c} to post the receive.",
        "wrong_order": f"{w.capitalize()} {lose} {cost}{at} waiting for {c} while another message "
        "is already there.",
        "small_messages": f"{c.capitalize()} sends many small messages to {w} one by one: {cost} "
        f"go to per-message costs{at}.",
        "thread_imbalance": f"The OpenMP threads of {w} reach the end of the region {f.region} at "
        f"different times: {cost} idle there.",
        "queue_search": f"{w.capitalize()} {lose} {cost}{at} searching long queues of posted "
        "receives.",
        "cpu_contention": f"{c.capitalize()} {_lose(f.culprit_ranks)} {cost} to CPU contention"
        + (f" on {f.region}" if f.region else "")
        + ": runnable but waiting for a core, and the others waiting for them.",
        "shared_communicator": f"The threads of {w} share one communicator: {cost}{at} go to "
        "matching their messages apart.",
    }.get(f.kind, f"{f.kind}: {w} {lose} {cost}{at}.")


#: How many groups of findings the text lists (``--all``: every finding).
SHOWN = 5

#: Why a large loss can save little when fixed, per kind (one line).
_WHY_LITTLE = {
    "wait_at_collective": "without it the ranks wait at their next synchronisation instead",
    "late_sender": "sent earlier, the message still waits for work the receiver does first",
    "late_receiver": "the send still needs its receive before it can complete",
    "wrong_order": "the messages arrive as late in any order",
    "load_imbalance": "the work per rank is balanced where the ranks wait; the loss comes "
    "from when it happens, not how much there is",
}


def headline(d):
    """One or two sentences: the finding whose fix saves most and its saving, or that
    nothing costs more than 5 %; when the largest loss saves little, why.  An incomplete
    trace says so first (diagnose.damage)."""
    return damage.headline_prefix(d) + _headline(d)


def _headline(d):
    major = d.major
    if not major:
        noisy = [g for g in d.groups if g.within_noise and g.share_of_runtime >= MINOR_SHARE]
        largest = max(d.groups, key=lambda g: g.lost_s, default=None)
        return (
            f"No problem costs more than {MINOR_SHARE:.0%} of the run "
            f"({format_seconds(d.runtime_s)} on {d.ranks} ranks)"
            + (
                f"; the largest, {largest.kind.replace('_', ' ')}, costs "
                f"{percent(largest.share_of_runtime)}"
                if largest is not None
                else ""
            )
            + (
                f"; {noisy[0].kind.replace('_', ' ')} ({percent(noisy[0].share_of_runtime)}) "
                "is within noise: the ranks' arrival jitter alone loses "
                f"{format_seconds(noisy[0].evidence['noise_s'])}."
                if noisy
                else "."
            )
        )
    f = major[0]
    if f.predicted_saving_s is not None and f.predicted_saving_s < MINOR_SHARE * d.runtime_s:
        largest = max(major, key=lambda g: g.lost_s)
        why = _WHY_LITTLE.get(largest.kind, "its fix, replayed, moves the waiting elsewhere")
        return (
            f"No fix saves more than {MINOR_SHARE:.0%} of the run "
            f"({format_seconds(d.runtime_s)} on {d.ranks} ranks): the largest loss, "
            f"{largest.kind.replace('_', ' ')} ({percent(largest.share_of_runtime)}), saves "
            f"{format_seconds(largest.predicted_saving_s or 0.0)} fixed: {why}."
        )
    text = sentence(f, d.runtime_s)
    if f.predicted_saving_s is not None:
        text += (
            f" Fixed, the run saves about {format_seconds(f.predicted_saving_s)} "
            f"({percent(f.predicted_saving_s / d.runtime_s)})."
        )
    largest = max(major, key=lambda g: g.lost_s)
    if largest is not f and (largest.predicted_saving_s or 0.0) < 0.5 * largest.lost_s:
        why = _WHY_LITTLE.get(largest.kind, "its fix, replayed, moves the waiting elsewhere")
        text += (
            f" The largest loss, {largest.kind.replace('_', ' ')} "
            f"({percent(largest.share_of_runtime)}), saves "
            f"{format_seconds(largest.predicted_saving_s or 0.0)} fixed: {why}."
        )
    return text


def _where(f):
    where = f.waiting_function or ""
    where += (" at " if where else "") + f.callsite if f.callsite else ""
    sites = f.evidence.get("callsites") or []
    if len(sites) > 1:
        where += f" (+{len(sites) - 1} call sites)"
    return where or "-"


def render(d, stream, every=False):
    """The diagnosis as text: the answer, then the groups of findings best saving first
    (the first SHOWN; ``every``: every finding, one per call site)."""
    p = lambda *a: print(*a, file=stream)  # noqa: E731
    p(f"# commscope diagnose {d.run}: {d.ranks} ranks, {format_seconds(d.runtime_s)}")
    p(headline(d))
    listed = d.findings if every else d.groups
    f = d.major[0] if d.major else None  # nothing major: no fix to urge
    if f is not None:
        p(f"  fix: {f.fix}")
        if f.region:
            p(f"  where: {f.region}")
        if f.predicted_saving_s is not None:
            p(
                f"  saving: {format_seconds(f.predicted_saving_s)} "
                f"({percent(f.predicted_saving_s / d.runtime_s)} of the run): {f.basis}"
            )
    if listed:
        p("")
        shown = listed if every else listed[:SHOWN]
        what = "findings, one per call site" if every else "findings"
        p(f"{what}, ranked by what their fix saves:")
        rows = [("#", "kind", "saving", "lost", "share", "culprits", "waiting", "where")]
        for i, g in enumerate(shown, 1):
            rows.append(
                (
                    str(i),
                    g.kind + damage.marked(g),
                    format_seconds(g.predicted_saving_s)
                    if g.predicted_saving_s is not None
                    else "-",
                    format_seconds(g.lost_s),
                    percent(g.share_of_runtime)
                    + (
                        f" (noise {format_seconds(g.evidence['noise_s'])})"
                        if g.within_noise
                        else ""
                    ),
                    _ranks(g.culprit_ranks),
                    _ranks(g.waiting_ranks),
                    _where(g),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            p("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        rest = listed[len(shown) :]
        if rest:
            share = sum(g.share_of_runtime for g in rest)
            p(
                f"  {len(rest)} more, together {percent(share)} of the run "
                "(--all lists every call site, --json has them all)"
            )
        for i, g in enumerate(shown, 1):
            if g is not f and g.share_of_runtime >= MINOR_SHARE:
                p(f"  {i}. {g.fix}")
    e = d.efficiency.get("mpi")
    if e:
        p("")
        split = ""
        if e.get("transfer_efficiency") is not None:
            split = (
                f" (serialisation {e['serialisation_efficiency']:.2f} x transfer "
                f"{e['transfer_efficiency']:.2f})"
            )
        p(
            f"efficiency (POP): parallel {e['parallel_efficiency']:.2f} = load balance "
            f"{e['load_balance_efficiency']:.2f} x communication {e['communication_efficiency']:.2f}"
            + split
        )
    for ph in d.efficiency.get("phases") or []:
        p(
            f"  phase {ph['phase']} ({ph['begin']} .. {ph['end']}, "
            f"{format_seconds(ph['runtime_s'])}): parallel {ph['parallel_efficiency']:.2f} = "
            f"load balance {ph['load_balance_efficiency']:.2f} x communication "
            f"{ph['communication_efficiency']:.2f}"
        )
    o = d.efficiency.get("openmp")
    if o:
        parts = []
        if o.get("thread_load_balance_efficiency") is not None:
            parts.append(f"thread load balance {o['thread_load_balance_efficiency']:.2f}")
        if o.get("outside_parallel_regions_share") is not None:
            parts.append(
                f"{percent(o['outside_parallel_regions_share'])} of the work outside "
                "parallel regions"
            )
        if parts:
            p("OpenMP: " + ", ".join(parts))
    check = replay_error_text(d.replay)
    if check:
        p(f"replay check: {check}")
    for note in d.notes:
        p(f"note: {note}")
