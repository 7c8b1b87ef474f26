"""How a comparison reads in a terminal: what was compared, the run time, then each
finer level's changes ranked by size (the first ``top`` of each), then what could not
be compared and why."""

from __future__ import annotations

from ..output import format_table
from . import noise
from .core import KEY_FIELD, records, suffix_of
from .gate import describe

#: Level -> its title in the text and the report.
TITLES = {
    "runtime": "run time",
    "mpi_time": "time in MPI (mean over ranks)",
    "ranks": "time in MPI per rank",
    "functions": "time per MPI function (per rank)",
    "callsites": "time per call site (per rank)",
    "counters": "counters (summed over ranks)",
    "findings": "diagnosis findings (time lost)",
    "points": "per point",
    "figures": "benchmark figures",
}
ORDER = ("ranks", "functions", "callsites", "counters", "findings", "points", "figures")


def _side(d):
    runs = d.get("runs") or []
    what = d.get("program") or d.get("kind") or ""
    bits = [f"{len(runs)} run{'s' if len(runs) != 1 else ''}"]
    if d.get("ranks") is not None:
        bits.append(f"{d['ranks']} ranks")
    if d.get("mpi"):
        bits.append(d["mpi"])
    shown = ", ".join(runs[:3]) + (f", ... ({len(runs)})" if len(runs) > 3 else "")
    return f"{what} ({'; '.join(bits)}): {shown}"


def table_rows(comparison, level, top=None, changed_only=True):
    """Rows of a level's table (key, before, after, difference, ratio, noise, status)."""
    suffix = suffix_of(comparison, level)
    field = KEY_FIELD[level]
    rows = []
    for r in records(comparison, level):
        d = r.get(f"difference{suffix}")
        if changed_only and (d is None or d == 0) and r.get("status") == "both":
            continue
        row = {field: r[field]}
        if level in ("counters", "figures") and r.get("unit"):
            row["unit"] = r["unit"]
        if level == "findings" and r.get("predicted_saving_before_s") is not None:
            row["predicted_saving_before_s"] = r["predicted_saving_before_s"]
        row.update(
            {
                f"before{suffix}": r.get(f"before{suffix}"),
                f"after{suffix}": r.get(f"after{suffix}"),
                f"difference{suffix}": d,
                "ratio": r.get("ratio"),
                "noise": noise.verdict(r),
            }
        )
        if r.get("status") not in (None, "both"):
            row["noise"] += f" ({r['status']})"
        rows.append(row)
    return rows[:top] if top else rows


def render(comparison, stream, top=10):
    c = comparison
    w = stream.write
    kind = c["kind"]
    w("# compare two `make bench` passes\n" if kind == "bench" else f"# compare {kind} runs\n")
    w(f"# before: {_side(c['before'])}\n# after:  {_side(c['after'])}\n")
    if c.get("figure"):
        w(f"# figure: the {c['figure']} per point\n")
    for d in c["differs"]:
        w(f"# differs: {d['what']}: {d['before']} before, {d['after']} after\n")
    n = c["noise"]
    w(f"# noise: {n['method']} ({n['runs_before']} + {n['runs_after']} runs)\n")
    for level in ("runtime", "mpi_time"):
        rec = c.get(level)
        if rec and rec.get("before_s") is not None:
            w(f"{TITLES[level]}: {describe(rec, '_s')}\n")
    for level in ORDER:
        if level not in c or isinstance(c[level], dict):
            continue
        rows = table_rows(c, level)
        total = len(rows)
        if not total:
            if records(c, level):
                w(f"\n# {TITLES[level]}: no change\n")
            continue
        shown = rows[:top]
        more = f"; the {top} largest of {total}" if total > top else ""
        w(
            "\n"
            + format_table(shown, title=f"{TITLES[level]}, ranked by the size of the change{more}")
            + "\n"
        )
    for level, why in c.get("not_compared", {}).items():
        w(f"# not compared: {TITLES.get(level, level)}: {why}\n")
    for note in c.get("notes", []):
        w(f"# note: {note}\n")
    gate = c.get("gate")
    if gate:
        w("\n")
        for rule in gate["rules"]:
            states = [f["state"] for f in rule["figures"]]
            w(
                f"fail-if {rule['rule']}: {'FAILED' if rule['failed'] else 'passed'} "
                f"({len(states)} figure{'s' if len(states) != 1 else ''} judged"
                + (
                    f", {states.count('within noise')} over the bound within noise"
                    if "within noise" in states
                    else ""
                )
                + ")\n"
            )
            for f in rule["figures"]:
                if f["failed"]:
                    w(f"  {f['line']}\n")
