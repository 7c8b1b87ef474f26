"""Report sections, one module per kind of run.

Each module defines ``KINDS`` (the run kinds it renders, e.g. {"pingpong"}),
``TITLE`` and ``render(runs, context) -> str``: an HTML fragment (headings,
tables, figures via ``commscope.report.figures.figure_html``): the key figure first,
the rest behind :func:`more`.  ``runs`` are the
opened :class:`commscope.runs.Run` objects of those kinds; ``context`` is a dict
that may hold "machine_model" (the machine model given to the report) and "all_runs";
sections get the machine model they model with from :func:`report_machine_model`.
"""

import html
from pathlib import Path

from ...errors import InputError, warn


def more(summary, body, open_=False):
    """``body`` behind a disclosure whose one line is ``summary``: a section shows its key
    figure, the rest (tables, notes, further runs) one click away. "" when ``body`` is empty.
    """
    if not body or not body.strip():
        return ""
    return (
        f'<details class="more"{" open" if open_ else ""}><summary>'
        f"{html.escape(summary)}</summary>{body}</details>"
    )


def per_run(runs, render_run):
    """One fragment per run.  Every table was read before (report.build.open_runs: a
    damaged run never gets here); what a section still cannot show of a run (a stopped
    run without its derived columns, say) is a note in the report and a warning on
    stderr, never silent."""
    out = []
    for run in runs:
        try:
            out.append(render_run(run))
        except InputError as exc:
            warn(
                f"{run.path}: the report cannot show this run's {render_run.__module__.rsplit('.', 1)[-1]} "
                f"section: {exc}"
            )
            out.append(
                f'<p class="note">{html.escape(run.path.name)}: cannot show '
                f"({html.escape(str(exc))})</p>"
            )
    return "\n".join(out)


def report_machine_model(context):
    """``(machine_model, where)``: the machine model every section of one report models
    with, and where its parameters come from ("fitted from ..."); ``(None, why)`` when
    the report has none.

    The machine model given to the report, else one fitted (once) from the report's
    ping-pong runs, so no two sections model with different parameters or name their
    source differently.
    """
    if "resolved_machine_model" not in context:
        context["resolved_machine_model"] = _resolve_machine_model(context)
    return context["resolved_machine_model"]


def _resolve_machine_model(context):
    given = context.get("machine_model")
    if given is not None:
        if not hasattr(given, "params"):
            from ...models.machine_model import load_machine_model

            given = load_machine_model(given)
        m = given.machine
        if m.get("source_runs"):
            where = "fitted from " + ", ".join(Path(p).name for p in m["source_runs"])
        else:
            where = "; ".join(str(m[k]) for k in ("host", "source") if m.get(k)) or given.source
        return given, f"from the machine model given to the report ({where})"
    pingpong = [r for r in context.get("all_runs") or [] if r.kind == "pingpong"]
    if not pingpong:
        return None, "no machine model was given and no ping-pong run is in this report"
    from ...machine_fit import fit_runs

    try:
        return fit_runs([r.path for r in pingpong]), "fitted from the ping-pong runs in this report"
    except InputError as exc:
        pairs = sorted({int(r.meta.get("parameters", {}).get("pairs", 1)) for r in pingpong})
        if 1 not in pairs:
            return None, (
                "no machine model: the postal fit needs single-pair ping-pong data "
                f"(--pairs 1), and the ping-pong runs here have "
                f"{' and '.join(map(str, pairs))} pairs"
            )
        return None, f"no machine model could be fitted from the ping-pong runs: {exc}"
