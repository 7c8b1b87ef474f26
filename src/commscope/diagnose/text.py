"""How a diagnosis reads in a terminal: the answer first, then the ranked findings, the
efficiency hierarchy and how far the replay can be trusted."""

from __future__ import annotations

from ..units import format_seconds
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
    }.get(f.kind, f"{f.kind}: {w} {lose} {cost}{at}.")


def headline(d):
    """One or two sentences: the top finding and its saving, or that nothing costs more
    than 5 %."""
    major = d.major
    if not major:
        return (
            f"No problem costs more than {MINOR_SHARE:.0%} of the run "
            f"({format_seconds(d.runtime_s)} on {d.ranks} ranks)"
            + (
                f"; the largest, {d.findings[0].kind.replace('_', ' ')}, costs "
                f"{percent(d.findings[0].share_of_runtime)}."
                if d.findings
                else "."
            )
        )
    f = major[0]
    text = sentence(f, d.runtime_s)
    if f.predicted_saving_s is not None:
        text += (
            f" Fixed, the run saves about {format_seconds(f.predicted_saving_s)} "
            f"({percent(f.predicted_saving_s / d.runtime_s)})."
        )
    return text


def render(d, stream):
    p = lambda *a: print(*a, file=stream)  # noqa: E731
    p(f"# commscope diagnose {d.run}: {d.ranks} ranks, {format_seconds(d.runtime_s)}")
    p(headline(d))
    if d.findings:
        f = d.findings[0]
        p(f"  fix: {f.fix}")
        if f.region:
            p(f"  where: {f.region}")
        if f.predicted_saving_s is not None:
            p(
                f"  saving: {format_seconds(f.predicted_saving_s)} "
                f"({percent(f.predicted_saving_s / d.runtime_s)} of the run): {f.basis}"
            )
        p("")
        p("findings, ranked by the time they cost:")
        rows = [("#", "kind", "lost", "share", "culprits", "waiting", "where", "saving")]
        for i, f in enumerate(d.findings, 1):
            where = f.waiting_function or ""
            where += (" at " if where else "") + f.callsite if f.callsite else ""
            rows.append(
                (
                    str(i),
                    f.kind,
                    format_seconds(f.lost_s),
                    percent(f.share_of_runtime),
                    _ranks(f.culprit_ranks),
                    _ranks(f.waiting_ranks),
                    where or "-",
                    format_seconds(f.predicted_saving_s)
                    if f.predicted_saving_s is not None
                    else "-",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            p("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        for i, f in enumerate(d.findings[1:], 2):
            p(f"  {i}. {f.fix}")
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
