"""Assemble the report: metadata of every run plus the sections that know its kind."""

import html
import importlib
import pkgutil

from .. import __version__
from ..errors import InputError, warn
from ..paths import prepare_output, write_text_atomic
from ..runs import expand_run_paths, open_run, utc_now
from ..topology import shared_hosts, shared_hosts_note
from . import sections
from .sections.summary import load_banner, load_text
from .tables import html_table


def _section_modules():
    mods = []
    for info in sorted(pkgutil.iter_modules(sections.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{sections.__name__}.{info.name}")
        if hasattr(mod, "render") and hasattr(mod, "KINDS"):
            mods.append(mod)
    return sorted(mods, key=lambda m: getattr(m, "ORDER", 50))


def host_warnings(runs):
    """One warning per host that held several nodes of some run, naming those runs."""
    by_host = {}
    for run in runs:
        for host, nodes in shared_hosts(run.meta.get("placement")).items():
            entry = by_host.setdefault(host, [set(), []])
            entry[0].update(nodes)
            entry[1].append(run.path.name)
    return [
        f"{shared_hosts_note({host: sorted(nodes)})} Runs: {', '.join(names)}."
        for host, (nodes, names) in by_host.items()
    ]


def open_runs(paths, keep_going=False):
    """``(runs, damaged)``: every run opened and each of its tables read (Run.check).

    One run that is damaged (a table truncated, missing, unreadable, with rows twice or
    columns that contradict each other) is the error, naming the file.  Of several, each
    damaged one is a warning on stderr; then the error (nothing written) unless
    ``keep_going``, when the report is written without them and lists them."""
    damaged, runs = [], []
    for path in paths:
        try:
            run = open_run(path).check()
            if run.kind == "profile":  # its trace against what the ranks counted
                from ..collect import completeness

                completeness.check(run)
            runs.append(run)
        except InputError as exc:
            damaged.append((path, exc))
    if damaged and len(paths) == 1:
        raise damaged[0][1]
    for path, exc in damaged:
        warn(f"{path}: damaged, {'left out of' if keep_going else 'stops'} the report: {exc}")
    if damaged and not keep_going:
        first = damaged[0][1]
        more = (
            f" (and {len(damaged) - 1} more damaged run{'s' if len(damaged) > 2 else ''}, "
            "see the warnings above)"
            if len(damaged) > 1
            else ""
        )
        raise InputError(
            first.source,
            first.field,
            f"{first.message}{more}; no report written: repair the run, leave "
            "it out, or pass --keep-going to write the report without it",
        )
    return runs, damaged


def build_report(run_paths, out_path, machine_model=None, overwrite=False, keep_going=False):
    """Write one static HTML report for the given runs; returns its path.

    ``machine_model``: a :class:`~commscope.models.machine_model.MachineModel` or its
    path; without one, the sections model with one fitted from the ping-pong runs.
    A damaged run stops the report, or (``keep_going``, several runs) is left out of it
    with a warning (:func:`open_runs`).
    """
    out_path = prepare_output(out_path)  # checked before the work, not after
    if out_path.exists() and not overwrite:
        raise InputError(
            out_path,
            None,
            "exists; not overwriting (choose another -o/--output or pass --overwrite)",
        )
    runs, damaged = open_runs(expand_run_paths(run_paths), keep_going)
    context = {"machine_model": machine_model, "all_runs": runs}
    rendered = []
    for mod in _section_modules():
        chosen = [r for r in runs if r.kind in mod.KINDS]
        if chosen:
            body = mod.render(chosen, context)
            if body:
                rendered.append(
                    {"title": mod.TITLE, "id": mod.__name__.rsplit(".", 1)[-1], "body": body}
                )
    return write_text_atomic(out_path, _page(rendered, runs, damaged))


def build_comparison_report(comparison, out_path, overwrite=False):
    """Write a comparison (:func:`commscope.compare.core.compare`) as one static HTML
    file: the comparison section, then the metadata of every run of both sides (a
    `make bench` comparison has no runs to list)."""
    from .sections import comparison as section

    out_path = prepare_output(out_path)
    if out_path.exists() and not overwrite:
        raise InputError(
            out_path,
            None,
            "exists; not overwriting (choose another -o/--output or pass --overwrite)",
        )
    runs = []
    if comparison.get("kind") != "bench":
        runs = [
            open_run(p, warn=False)
            for side in ("before", "after")
            for p in comparison[side]["runs"]
        ]
    body = section.render_comparison(comparison)
    sections_ = [{"title": section.TITLE, "id": "comparison", "body": body}]
    return write_text_atomic(out_path, _page(sections_, runs))


def _page(rendered, runs, damaged=()):
    """The whole HTML page: the run metadata around the rendered sections (and the runs
    left out as damaged)."""
    from jinja2 import Environment, PackageLoader, select_autoescape  # on first use: fast CLI

    env = Environment(
        loader=PackageLoader("commscope.report", "templates"),
        autoescape=select_autoescape(["html"]),
    )
    return env.get_template("report.html").render(
        sections=rendered,
        runs=runs,
        version=__version__,
        generated=utc_now(),
        damaged=[(str(p), str(exc)) for p, exc in damaged],
        esc=html.escape,
        host_warnings=host_warnings(runs),
        table=html_table,
        load_banner=load_banner(runs),
        load_text=load_text,
        shared_note=lambda run: shared_hosts_note(shared_hosts(run.meta.get("placement"))),
    )
