"""How a diagnosis reads in a terminal: the answer first, then the ranked findings, the
efficiency hierarchy and how far the replay can be trusted."""

from __future__ import annotations

from ..units import format_seconds
from .findings import MINOR_SHARE, replay_error_text


def _pct(x):
    return "n/a" if x is None else f"{100 * x:.0f} %"


def _ranks(ranks):
    ranks = list(ranks)
    if not ranks:
        return "-"
    if len(ranks) > 6:
        return f"{','.join(map(str, ranks[:3]))},..,{ranks[-1]} ({len(ranks)})"
    return ",".join(map(str, ranks))


def headline(d):
    """One or two sentences: the top finding, or that nothing costs more than 5 %."""
    major = d.major
    if not major:
        return (f"No problem costs more than {MINOR_SHARE:.0%} of the run "
                f"({format_seconds(d.runtime_s)} on {d.ranks} ranks)" +
                (f"; the largest, {d.findings[0].kind}, costs {_pct(d.findings[0].share_of_runtime)}."
                 if d.findings else "."))
    f = major[0]
    where = f" in {f.waiting_function}" if f.waiting_function else ""
    where += f" at {f.callsite}" if f.callsite and f.callsite != f.region else ""
    if f.kind == "thread_imbalance":
        where = f" at the end of the OpenMP region {f.region}"
    who = _who(f)
    text = (f"{f.kind.replace('_', ' ').capitalize()}: {who} lose {format_seconds(f.lost_s)} "
            f"({_pct(f.share_of_runtime)} of the run){where}.")
    if f.predicted_saving_s is not None:
        text += f" Fixed, the run saves about {format_seconds(f.predicted_saving_s)}."
    return text


def _who(f):
    waiting = f.waiting_ranks
    culprit = f.culprit_ranks
    w = "rank " + str(waiting[0]) if len(waiting) == 1 else f"ranks {_ranks(waiting)}"
    if f.kind == "thread_imbalance":
        return f"the threads of {w}"
    if culprit and set(culprit) != set(waiting):
        c = "rank " + str(culprit[0]) if len(culprit) == 1 else f"ranks {_ranks(culprit)}"
        return f"{w}, waiting for {c},"
    return w


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
            p(f"  saving: {format_seconds(f.predicted_saving_s)} "
              f"({_pct(f.predicted_saving_s / d.runtime_s)} of the run): {f.basis}")
        p("")
        p("findings, ranked by the time they cost:")
        rows = [("#", "kind", "lost", "share", "culprits", "waiting", "where", "saving")]
        for i, f in enumerate(d.findings, 1):
            where = f.waiting_function or ""
            where += (" at " if where else "") + f.callsite if f.callsite else ""
            rows.append((str(i), f.kind, format_seconds(f.lost_s), _pct(f.share_of_runtime),
                         _ranks(f.culprit_ranks), _ranks(f.waiting_ranks), where or "-",
                         format_seconds(f.predicted_saving_s) if f.predicted_saving_s is not None
                         else "-"))
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
            split = (f" (serialisation {e['serialisation_efficiency']:.2f} x transfer "
                     f"{e['transfer_efficiency']:.2f})")
        p(f"efficiency (POP): parallel {e['parallel_efficiency']:.2f} = load balance "
          f"{e['load_balance_efficiency']:.2f} x communication {e['communication_efficiency']:.2f}"
          + split)
    o = d.efficiency.get("openmp")
    if o:
        parts = []
        if o.get("thread_load_balance_efficiency") is not None:
            parts.append(f"thread load balance {o['thread_load_balance_efficiency']:.2f}")
        if o.get("outside_parallel_regions_share") is not None:
            parts.append(f"{_pct(o['outside_parallel_regions_share'])} of the work outside "
                         "parallel regions")
        if parts:
            p("OpenMP: " + ", ".join(parts))
    check = replay_error_text(d.replay)
    if check:
        p(f"replay check: {check}")
    for note in d.notes:
        p(f"note: {note}")
