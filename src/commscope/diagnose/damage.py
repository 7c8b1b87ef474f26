"""A diagnosis of an incomplete trace says so (docs/robustness.md, "A whole trace, or
a word").

:func:`check` runs at the entry of :func:`~commscope.diagnose.findings.diagnose`: the
completeness check of :mod:`commscope.collect.completeness` (a whole run with a gap is
an InputError naming the file and the rank).  :func:`mark` then puts what an unfinished
run's trace misses into the diagnosis: ``Diagnosis.incomplete`` (``--json``), a first
sentence of the headline, a note, and on every finding (and group) whose culprit or
waiting ranks the gap touches ``evidence["trace_gap"]``, shown as a mark in the table.
"""

from __future__ import annotations

#: The note a diagnosis without a trace gives; wrong for a traced run whose files are gone.
_NO_TRACE = "without an event trace (commscope profile --trace)"


def check(profile):
    """The completeness of ``profile``'s trace (refusing a whole run with a gap)."""
    from ..collect import completeness

    return completeness.check(profile.run)


def touched(f, ranks):
    return bool(set(f.culprit_ranks or []) & ranks or set(f.waiting_ranks or []) & ranks)


def mark(d, c):
    """Put the gaps of ``c`` (a :class:`~commscope.collect.completeness.Completeness`)
    into the diagnosis ``d``; returns ``d``."""
    if c is None:
        return d
    if c.traced:  # files gone: not "profiled without --trace"
        gone = "the run was traced (--trace), but its trace files are gone"
        d.notes = [n.replace(_NO_TRACE, gone) if n.startswith(_NO_TRACE) else n for n in d.notes]
    if not (c.damaged or c.not_finalized):
        return d
    ranks = set(c.ranks)
    text = c.summary()
    d.incomplete = c.to_dict()
    for f in list(d.findings) + list(d.groups or []):
        if touched(f, ranks):
            f.evidence["trace_gap"] = text
    d.notes.insert(0, f"{text}; findings of those ranks are marked (gap)")
    return d


def headline_prefix(d):
    """The first sentence of the headline of an incomplete trace, or ""."""
    inc = getattr(d, "incomplete", None)
    if not inc:
        return ""
    text = inc["headline"]
    return f"Incomplete: {text[0].lower()}{text[1:]}. What follows is what the rest shows. "


def marked(f):
    return " (gap)" if f.evidence.get("trace_gap") else ""
