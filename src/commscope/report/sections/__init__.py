"""Report sections, one module per kind of run.

Each module defines ``KINDS`` (the run kinds it renders, e.g. {"pingpong"}),
``TITLE`` and ``render(runs, context) -> str``: an HTML fragment (headings,
tables, figures via ``commscope.report.figures.figure_html``).  ``runs`` are the
opened :class:`commscope.runs.Run` objects of those kinds; ``context`` is a dict
that may hold "profile" (a fitted machine profile) and "all_runs".
"""
