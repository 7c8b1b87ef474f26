"""The diagnosis of a profile run, first in its report: what is wrong, who causes it,
where the others wait, the fix and the saving (commscope diagnose, docs/diagnose.md)."""

import html

from ...diagnose.findings import MINOR_SHARE, diagnose, replay_error_text
from ...diagnose.text import SHOWN, headline, percent
from ...profile.api import Profile
from ...units import format_seconds
from ..figures import figure_html, legend_below, new_figure
from ..tables import html_table
from . import per_run

KINDS = {"profile"}
TITLE = "Diagnosis: what is wrong, the fix, the saving"
ORDER = 1

#: Ranks drawn one bar each in the per-rank figure; beyond, the figure shows the
#: culprits, the waiting ranks that lose most and the median.
MAX_BARS = 64


def render(runs, context):
    return per_run(runs, lambda run: _render_run(run, context))


def _render_run(run, context):
    multirate = [r for r in context.get("all_runs") or [] if r.kind == "multirate"]
    d = diagnose(
        Profile(run), machine_model=_model(context), multirate=multirate[-1] if multirate else None
    )
    e = html.escape
    parts = [f'<div class="answer"><p class="headline">{e(headline(d))}</p>']
    if d.major:
        f = d.major[0]
        parts.append(f"<p><b>Fix:</b> {e(f.fix)}</p>")
        if f.region:
            parts.append(f"<p><b>Where:</b> {e(f.region)}</p>")
        if f.predicted_saving_s is not None:
            parts.append(
                f"<p><b>Predicted saving:</b> {e(format_seconds(f.predicted_saving_s))} "
                f"({e(percent(f.predicted_saving_s / d.runtime_s))} of the run), from a "
                f"{e(f.basis)}.</p>"
            )
    parts.append(
        f'<p class="note">{e(run.path.name)}: {d.ranks} ranks, '
        f"{e(format_seconds(d.runtime_s))}.</p></div>"
    )
    if d.groups:
        shown = d.groups[:SHOWN]
        rows = [
            {
                "kind": f.kind.replace("_", " ") + (" (within noise)" if f.within_noise else ""),
                "predicted_saving_s": f.predicted_saving_s,
                "lost_s": f.lost_s,
                "share_pct": 100 * f.share_of_runtime,
                "culprit ranks": _ranks(f.culprit_ranks),
                "waiting ranks": _ranks(f.waiting_ranks),
                "where": _where(f),
                "fix": f.fix,
            }
            for f in shown
        ]
        rest = d.groups[len(shown) :]
        more = (
            f"; {len(rest)} more, together {percent(sum(g.share_of_runtime for g in rest))} "
            "of the run (commscope diagnose --all lists every call site)"
            if rest
            else ""
        )
        parts.append(
            html_table(
                rows,
                caption="findings, ranked by what their fix saves "
                f"(below {MINOR_SHARE:.0%} of the run, or within noise: minor){more}",
            )
        )
    parts.append(_per_rank_figure(d))
    parts.append(_efficiency_html(d))
    notes = [replay_error_text(d.replay)] if d.replay else []
    notes += d.notes
    parts += [f'<p class="note">{e(n[0].upper() + n[1:])}.</p>' for n in notes if n]
    return "\n".join(parts)


def _model(context):
    mm = context.get("machine_model")
    if mm is not None and not hasattr(mm, "params"):
        from ...models.machine_model import load_machine_model

        mm = load_machine_model(mm)
    return mm


def _where(f):
    where = " at ".join(x for x in (f.waiting_function, f.callsite) if x) or "-"
    sites = f.evidence.get("callsites") or []
    return where + (f" (+{len(sites) - 1} call sites)" if len(sites) > 1 else "")


def _ranks(ranks):
    ranks = list(ranks)
    if len(ranks) > 8:
        return f"{', '.join(map(str, ranks[:4]))}, ... {ranks[-1]} ({len(ranks)} ranks)"
    return ", ".join(map(str, ranks)) or "-"


def _efficiency_html(d):
    m = d.efficiency.get("mpi")
    if not m:
        return ""
    pct = lambda x: "-" if x is None else f"{100 * x:.0f} %"  # noqa: E731
    rows = [
        {
            "level": "parallel efficiency",
            "value": pct(m["parallel_efficiency"]),
            "meaning": "mean useful time over the run time",
        },
        {
            "level": "  load balance",
            "value": pct(m["load_balance_efficiency"]),
            "meaning": "mean useful time over the busiest rank's",
        },
        {
            "level": "  communication efficiency",
            "value": pct(m["communication_efficiency"]),
            "meaning": "the busiest rank's useful time over the run time",
        },
        {
            "level": "    serialisation",
            "value": pct(m["serialisation_efficiency"]),
            "meaning": "lost to waiting even on an ideal network",
        },
        {
            "level": "    transfer",
            "value": pct(m["transfer_efficiency"]),
            "meaning": "the ideal-network replay's run time over the measured",
        },
    ]
    o = d.efficiency.get("openmp") or {}
    if o.get("thread_load_balance_efficiency") is not None:
        rows.append(
            {
                "level": "OpenMP thread load balance",
                "value": pct(o["thread_load_balance_efficiency"]),
                "meaning": "threads' mean busy time over the slowest thread's, per region",
            }
        )
    out = html_table(rows, caption="efficiency (POP metrics; docs/diagnose.md)")
    phases = d.efficiency.get("phases") or []
    if phases:
        out += html_table(
            [
                {
                    "phase": f"{ph['phase']}: {ph['begin']} .. {ph['end']}",
                    "time": format_seconds(ph["runtime_s"]),
                    "parallel efficiency": pct(ph["parallel_efficiency"]),
                    "load balance": pct(ph["load_balance_efficiency"]),
                    "communication efficiency": pct(ph["communication_efficiency"]),
                    "transfer": pct(ph["transfer_efficiency"]),
                }
                for ph in phases
            ],
            caption="efficiency per phase (between the program's MPI_Pcontrol calls)",
        )
    return out


def _per_rank_figure(d):
    """Per rank, the useful time and the time lost to each finding: the culprits are the
    bars without waiting."""
    by_rank = {}
    kinds = []
    for f in d.groups[:SHOWN]:
        lost = f.evidence.get("lost_s_by_rank")
        if not lost:
            continue
        kinds.append(f.kind)
        for r, v in lost.items():
            by_rank.setdefault(int(r), {})[f.kind] = by_rank.get(int(r), {}).get(f.kind, 0) + v
    if not by_rank:
        return ""
    ranks = sorted(set(by_rank) | set(range(d.ranks)))
    if len(ranks) > MAX_BARS:  # the ranks that lose most and least, and the culprits
        total = {r: sum(by_rank.get(r, {}).values()) for r in ranks}
        order = sorted(ranks, key=lambda r: total[r])
        keep = set(order[: MAX_BARS // 2]) | set(order[-MAX_BARS // 2 :])
        keep |= {r for f in d.groups[:1] for r in f.culprit_ranks}
        ranks = sorted(keep)
    fig, axes = new_figure(width=7.5, height=3.2)
    ax = axes[0][0]
    bottom = [0.0] * len(ranks)
    x = list(range(len(ranks)))
    for kind in dict.fromkeys(kinds):
        vals = [by_rank.get(r, {}).get(kind, 0.0) for r in ranks]
        ax.bar(x, vals, bottom=bottom, label=kind.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(x if len(x) <= 32 else x[:: max(len(x) // 16, 1)])
    ax.set_xticklabels([str(ranks[i]) for i in ax.get_xticks()], fontsize=8)
    ax.margins(y=0.12)  # the tallest bar clear of the frame
    ax.set_xlabel("rank")
    ax.set_ylabel("time lost (s)")
    legend_below(fig, fontsize=9, ncol=3)
    return figure_html(fig, "time each rank lost, by finding: the culprits lose none")
