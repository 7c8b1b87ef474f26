"""A diagnosis of an incomplete trace says so (docs/robustness.md, "A whole trace, or
a word").

:func:`check` runs at the entry of :func:`~commscope.diagnose.findings.diagnose`: the
completeness check of :mod:`commscope.collect.completeness` (a whole run with a gap is
an InputError naming the file and the rank).  :func:`mark` then puts what an unfinished
run's trace misses into the diagnosis: ``Diagnosis.incomplete`` (``--json``), a first
sentence of the headline, a note, and on every finding (and group) whose culprit or
waiting ranks the gap touches ``evidence["trace_gap"]``, shown as a mark in the table.
A replay that cannot go on (:class:`~commscope.diagnose.replay.Stuck`) refuses a whole
run; an unfinished one is diagnosed without it (:func:`without_replay`): no saving
predicted, the headline says why.
"""

from __future__ import annotations

from ..errors import warn

#: The note a diagnosis without a trace gives; wrong for a traced run whose files are gone.
_NO_TRACE = "without an event trace (commscope profile --trace)"


def check(profile):
    """The completeness of ``profile``'s trace (refusing a whole run with a gap)."""
    from ..collect import completeness

    return completeness.check(profile.run)


def without_replay(exc, c, what_if=()):
    """The replay's refusal ``exc`` in an unfinished run: said once, and the words the
    headline gives (``Diagnosis.replay_refused``); in a whole run (``c``: its
    completeness), or with a what-if asked for, the refusal is the error."""
    if c.whole_run or what_if:
        raise exc
    warn(f"{exc}; the run did not end whole: diagnosed without the replay (no saving predicted)")
    return f"in {exc.source} ({exc.field}), {exc.why}"


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
    """The first sentences of the headline of an incomplete trace, or ""."""
    inc = getattr(d, "incomplete", None)
    refused = getattr(d, "replay_refused", None)
    out = ""
    if inc:
        text = inc["headline"]
        out = f"Incomplete: {text[0].lower()}{text[1:]}. "
    if refused:
        out += f"The replay was not possible: {refused}; no saving is predicted. "
    return out + "What follows is what the rest shows. " if out else ""


def marked(f):
    return " (gap)" if f.evidence.get("trace_gap") else ""
