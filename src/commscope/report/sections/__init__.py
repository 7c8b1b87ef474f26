"""Report sections, one module per kind of run.

Each module defines ``KINDS`` (the run kinds it renders, e.g. {"pingpong"}),
``TITLE`` and ``render(runs, context) -> str``: an HTML fragment (headings,
tables, figures via ``commscope.report.figures.figure_html``).  ``runs`` are the
opened :class:`commscope.runs.Run` objects of those kinds; ``context`` is a dict
that may hold "profile" (a fitted machine profile) and "all_runs".
"""

import html

from ...errors import InputError


def per_run(runs, render_run):
    """One fragment per run; a run whose tables cannot be read gets a note, not a failed report."""
    out = []
    for run in runs:
        try:
            out.append(render_run(run))
        except InputError as exc:
            out.append(f'<p class="note">{html.escape(run.path.name)}: cannot show '
                       f'({html.escape(str(exc))})</p>')
    return "\n".join(out)
