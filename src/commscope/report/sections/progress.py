"""Progress probe runs: does data move while the ranks compute outside MPI calls?

Per run, one table: a row per size and case, a column per sender x receiver kind, each
cell the verdict and the overlap fraction (docs/progress.md); every repetition's medians
folded below.
"""

import html

from ...bench.progress import RECEIVERS, SENDERS, case_notes, verdict_table
from ...units import format_percent
from ..tables import html_table
from . import more, per_run

KINDS = {"progress"}
TITLE = "Progress: does data move while the ranks compute? (the progress probe)"
ORDER = 62


def matrix(table):
    """Rows (size_bytes, case, one text column per sender x receiver): 'verdict (overlap)'."""
    out = {}
    for r in table.to_dict("records"):
        row = out.setdefault(
            (r["size_bytes"], r["case"]), {"size_bytes": r["size_bytes"], "case": r["case"]}
        )
        o = r["overlap_fraction"]
        shown = "" if o != o else f" ({format_percent(o)})"
        row[f"{r['sender']} sender, {r['receiver']} receiver"] = r["verdict"] + shown
    return list(out.values())


def _render_run(run):
    table = verdict_table(run)
    p = run.meta["parameters"]
    mpi = run.meta.get("mpi", {})
    library = (mpi.get("library_version") or mpi.get("name") or "?").strip().splitlines()[0]
    skipped = [f"{c}: {n}" for c, (s, n) in case_notes(run).items() if s == "skipped"]
    env = run.meta.get("progress_env") or {}
    head = (
        f"<h3>{html.escape(run.path.name)}</h3><p>{html.escape(library)}"
        + (
            " with " + html.escape(", ".join(f"{k}={v}" for k, v in sorted(env.items())))
            if env
            else ""
        )
        + f"; {p['partitions']} partitions, T = {p['compute_factor']:g} x the transfer alone, "
        f"{p['reps']} repetitions (medians). Overlap: the share of the transfer that moved "
        "while both ranks computed, with no MPI call (1 - wait after T / transfer alone); "
        "early-pready with a polling receiver: the share of the early partitions that "
        "arrived before the last MPI_Pready.</p>"
        + (f"<p class='note'>{html.escape('; '.join(skipped))}</p>" if skipped else "")
    )
    columns = ["size_bytes", "case"] + [
        f"{s} sender, {r} receiver" for s in SENDERS for r in RECEIVERS
    ]
    return (
        head
        + html_table(matrix(table), columns=columns, caption="verdict (overlap) per size and case")
        + more("the medians of every case", html_table(table))
    )


def render(runs, context):
    return per_run(runs, _render_run)
