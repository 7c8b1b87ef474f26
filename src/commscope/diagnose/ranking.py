"""The order of a diagnosis' findings, and one line per problem.

Findings are ranked by what the user can win, the predicted saving of their fix, with
the time they cost as the tie-break: a wait whose fix saves nothing does not come before
one whose fix pays.  Findings of one kind with the same culprits and waiting ranks at
several call sites are one problem: :func:`group` makes them one finding whose saving is
the replay of all their fixes at once (fixes at different sites do not add up).
"""

from __future__ import annotations

from dataclasses import replace

#: Kinds grouped by call site whoever sends: every pair that sends small messages from
#: one place of the code (an exchange both ranks make) is one problem with one fix.
BY_SITE = ("small_messages",)


def rank(findings):
    """``findings`` best saving first (an unknown saving counts as none), then by loss."""
    return sorted(findings, key=lambda f: (-(f.predicted_saving_s or 0.0), -f.lost_s))


def group(findings, saving=None):
    """One finding per (kind, culprits, waiting ranks), or per (kind, call site) for
    :data:`BY_SITE`: the member that loses most stands for the group (the culprits and
    waiting ranks of all), with the summed loss, the call sites in
    ``evidence["callsites"]`` and, where every member's saving comes from a replay
    change, ``saving(change)`` of the merged change (else the summed savings)."""
    by = {}
    for f in findings:
        if f.kind in BY_SITE:
            key = (f.kind, f.callsite or f.waiting_function)
        else:
            key = (f.kind, tuple(f.culprit_ranks), tuple(f.waiting_ranks))
        by.setdefault(key, []).append(f)
    out = []
    for members in by.values():
        if len(members) == 1:
            out.append(members[0])
            continue
        members = sorted(members, key=lambda f: -f.lost_s)
        top = members[0]
        lost = sum(f.lost_s for f in members)
        change = merge_changes([f.change for f in members])
        if change is not None and saving is not None:
            predicted = saving(change)
        elif any(f.predicted_saving_s is not None for f in members):
            predicted = min(sum(f.predicted_saving_s or 0.0 for f in members), lost)
        else:
            predicted = None
        sites = [f.callsite or f.waiting_function or "-" for f in members]
        out.append(
            replace(
                top,
                culprit_ranks=sorted({r for f in members for r in f.culprit_ranks}),
                waiting_ranks=sorted({r for f in members for r in f.waiting_ranks}),
                lost_s=lost,
                share_of_runtime=sum(f.share_of_runtime for f in members),
                predicted_saving_s=predicted,
                basis=top.basis + f", at all {len(members)} call sites at once",
                evidence={
                    **top.evidence,
                    "callsites": sites,
                    "findings": len(members),
                    "noise_s": sum(f.evidence.get("noise_s", 0.0) for f in members),
                    "within_noise": all(f.within_noise for f in members),
                },
                change=change,
            )
        )
    return rank(out)


def merge_changes(changes):
    """One replay change doing all of ``changes`` (None when one of them is unknown):
    ``no_wait`` sets joined, ``burst_scale``/``cost_scale`` factors multiplied,
    ``balance`` kept."""
    if any(c is None for c in changes):
        return None
    out = {}
    for c in changes:
        for key, value in c.items():
            if key == "no_wait":
                out[key] = set(out.get(key, set())) | set(value)
            elif key in ("burst_scale", "cost_scale"):
                merged = dict(out.get(key, {}))
                for call, factor in value.items():
                    merged[call] = merged.get(call, 1.0) * factor
                out[key] = merged
            elif key == "balance":
                out[key] = out.get(key, False) or value
            else:
                return None
    return out
